"""Four checks of a network's data against what the defaults and the likelihood assume, each one line
with its cure.

Found on UCI's concrete data (1,030 points, 8 features, a 50-unit relu network, batch_size 32,
4 walkers, nothing tuned; doc/benchmarks.md): every such run blew up, with a non-finite loss
within 60 steps or a walker at 1e7 times equipartition.

* **Network inputs far from unit scale** (concrete's columns have means up to 973 and standard
  deviations up to 104): a network's initial weights assume inputs of order one (the built-in
  network's, and a Keras model's whose first layer is a Dense one), so the loss is badly
  conditioned, the warm start's L-BFGS ends far from a mode, and the measured step width does
  not hold where the walkers go (with likelihood heteroscedastic_gaussian BAOAB's
  kinetic energy reached 1e19 within 12 steps; with the same features standardised it read
  245-253 over those steps, equipartition 250.5). The cure is the field's standard one:
  standardise each column.
* **A Gaussian likelihood whose noise is far below the residuals** (noise_standard_deviation's
  default 1 on concrete's target in its own units, where the residuals' rms at the warm start's
  end was 4.25 with the features standardised): the posterior claims a precision the data do not
  have, and the noise mass (samplers/mass.py), measured from the gradient noise, which the misfit
  inflates, sets a step width that a relu unit dead at the start cannot take once it revives (its
  mass sits at the floor). With noise_standard_deviation 5, or likelihood heteroscedastic_gaussian,
  or tanh units, the same run held its temperature over the 12 steps in which it had blown up.
  At a mode a network's training residuals have an rms of at most about the noise's sigma
  (fitting lowers it), so NOISE_MISFIT times sigma is misfit, not chance.
* **Counts that vary more than Poisson's** (overdispersion, the rule in count data: statsmodels' RAND
  health insurance visits, 16,000 points, vary 5.9 times as much about a Poisson regression's rates):
  likelihood poisson then gives a posterior too narrow by about the square root (NUTS's sds equal
  the Poisson fit's standard errors there, sd / SE 0.99-1.03, where a negative binomial's are wider),
  and the summary has no other sign of it. Pearson's chi^2 / N, mean (y - rate)^2 / rate at the warm
  start's end (at the run's end where none started it), is 1 for Poisson counts, each term of variance
  2 + 1 / rate: above OVERDISPERSED with a z-score above OVERDISPERSED_Z it is not chance (a fitted
  network lowers it).
* **Residuals with heavy tails** (outliers: a few points far from the bulk of the fit): a Gaussian
  likelihood lets each pull the fit by its squared distance, and prices it at exp(-z^2 / 2), so the
  test log-likelihood suffers where a held-out point lies out (UCI's concrete, HMC2 over 20 splits:
  likelihood student_t +0.20 +- 0.07 nats a point above heteroscedastic_gaussian; doc/benchmarks.md).
  Scaled by each point's own sd and then by 1.4826 times their median absolute deviation (the sd of a
  Gaussian bulk, which the outliers do not inflate), a Gaussian's residuals lie beyond TAIL_SD of it
  with probability 6.3e-5: more than TAIL_FRACTION of them, and at least TAIL_MIN, is not chance (none
  of 2,000 Gaussian samples of 1,000 points, 3 of 20,000 of 100). A heteroscedastic network fits an
  outlier's variance up instead, so its outliers show on held-out data (bayes/predictive.py).
"""

import numpy as np

INPUT_SCALE = 10.0  # a column's |mean| or standard deviation above this is not of order one
NOISE_MISFIT = 3.0  # the residuals' rms above this many noise_standard_deviation
OVERDISPERSED, OVERDISPERSED_Z = 2.0, 5.0  # Pearson's chi^2 / N above this, and this many sd above 1
TAIL_SD, TAIL_FRACTION, TAIL_MIN = 4.0, 0.01, 3  # residuals beyond this many robust sd: this share, this many
GAUSSIAN_TAIL = 6.334e-5  # 2 Phi(-4): a Gaussian's share beyond TAIL_SD


def input_scale_line(inputs):
    """One line naming the network's input columns far from unit scale (counted from 1), or None."""
    inputs = np.asarray(inputs, dtype=np.float64)
    means, sds = np.abs(inputs.mean(axis=0)), inputs.std(axis=0)
    far = np.flatnonzero(np.maximum(means, sds) > INPUT_SCALE)
    if not len(far):
        return None
    shown = ", ".join(str(k + 1) for k in far[:8]) + (", ..." if len(far) > 8 else "")
    return (f"network inputs {shown} (of {inputs.shape[1]}, counted from 1) are far from unit scale (|mean| up to "
            f"{means[far].max():.3g}, sd up to {sds[far].max():.3g}), which the network's initial weights assume: "
            "standardise each column (subtract its mean, divide by its sd) or the samplers may blow up")


def noise_misfit_line(residual_rms, noise, where="at the warm start's end"):
    """One line where the residuals' rms (of the best walker `where` it stands: at the warm start's end,
    or at a run's end where none started it) exceeds NOISE_MISFIT times likelihood gaussian's
    noise_standard_deviation, or None."""
    if not (residual_rms > NOISE_MISFIT * noise and np.isfinite(residual_rms)):  # a walker gone far: its own lines
        return None
    return (f"likelihood gaussian: the residuals' rms {where} is {residual_rms:.3g}, "
            f"{residual_rms / noise:.2g} times noise_standard_deviation {noise:g}, so the posterior is far too narrow "
            f"(and a relu network may blow up): set noise_standard_deviation near {residual_rms:.3g} or use "
            "likelihood heteroscedastic_gaussian")


def overdispersion_line(counts, rate, where="at the warm start's end"):
    """One line where likelihood poisson's counts vary OVERDISPERSED times as much about the fitted
    `rate` (of the best walker `where` it stands) as Poisson's, beyond chance, or None."""
    counts, rate = np.asarray(counts, dtype=np.float64), np.asarray(rate, dtype=np.float64)
    terms = _pearson_terms(counts, rate)
    dispersion = float(np.mean(terms))
    z = np.sum(terms - 1.0) / np.sqrt(np.sum(2.0 + 1.0 / rate))
    if not (dispersion > OVERDISPERSED and z > OVERDISPERSED_Z and np.isfinite(dispersion)):
        return None
    return (f"likelihood poisson: the counts vary {dispersion:.3g} times as much about the fitted rates {where} as "
            f"Poisson's (Pearson's chi^2 / N), so the posterior is about {np.sqrt(dispersion):.2g} times too narrow: "
            "use likelihood negative_binomial")


def heavy_tail_line(likelihood, scaled, where="at the warm start's end"):
    """One line where more than TAIL_FRACTION of the `scaled` residuals ((y - mu) / sd per point, of the
    best walker `where` it stands), and at least TAIL_MIN, lie beyond TAIL_SD robust sd, or None."""
    scaled = np.ravel(scaled)
    centre = np.median(scaled)
    spread = 1.4826 * np.median(np.abs(scaled - centre))
    far = int(np.sum(np.abs(scaled - centre) > TAIL_SD * spread))
    if not (far >= TAIL_MIN and far > TAIL_FRACTION * scaled.size and spread > 0):
        return None
    return (f"likelihood {likelihood}: {far} of {scaled.size} residuals {where} lie beyond {TAIL_SD:g} sd of the "
            f"bulk (1.4826 times their median absolute deviation), where a Gaussian puts "
            f"{GAUSSIAN_TAIL * scaled.size:.2g}: outliers, which pull a Gaussian fit: use likelihood student_t")


def misfit_lines(likelihood, labels, outputs, walker, noise, where):
    """likelihood gaussian's noise_misfit_line, the Gaussian likelihoods' heavy_tail_line, or poisson's
    overdispersion_line, for the network `outputs` [walkers, points, outputs] of `walker` (None: the walker
    that fits best): the lines that apply."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # a walker gone far reads inf or nan
        if likelihood == "poisson":
            rates = np.exp(outputs)
            spread = np.mean(_pearson_terms(labels, rates), axis=(1, 2))  # Pearson's chi^2 / N per walker
            best = _best(spread) if walker is None else walker
            lines = [overdispersion_line(labels, rates[best], where)]
        else:
            mean, sd = outputs, noise
            if likelihood == "heteroscedastic_gaussian":  # a mean and a raw variance per label column
                columns = outputs.shape[-1] // 2
                mean, sd = outputs[..., :columns], np.sqrt(np.logaddexp(0.0, outputs[..., columns:]) + 1e-6)
            rms = np.sqrt(np.mean(np.square(labels - mean), axis=(1, 2)))
            best = _best(rms) if walker is None else walker
            lines = [noise_misfit_line(float(rms[best]), noise, where) if likelihood == "gaussian" else None]
            if np.isfinite(rms[best]):
                lines.append(heavy_tail_line(likelihood, (labels - mean[best]) / (sd if np.isscalar(sd) else sd[best]),
                                             where))
    return [line for line in lines if line]


def _pearson_terms(counts, rate):
    """(y - rate)^2 / rate per point: each 1 on average, of variance 2 + 1 / rate, for Poisson counts."""
    return np.square(counts - rate) / rate


def _best(misfits):
    """The walker of the least finite misfit (numpy's argmin would pick a nan)."""
    return int(np.argmin(np.where(np.isfinite(misfits), misfits, np.inf)))


NOTE_ABOVE = "see the note on the data above"


def measured_cure(options, *more):
    """What to do where a measured width did not hold: with mini-batches raise batch_size (less
    gradient noise, a milder largest batch curvature: of 5 wine-quality-red splits, seed 2, whose
    walkers ran hot or far out at batch 32, none was flagged at 128, one at 64, two with three
    times the burn-in), not a smaller step_width, which turns the run's self-tuning (warm start,
    noise mass, measured friction) off with it: at half the measured width the two tried blew up.
    Without mini-batches, a smaller step_width. Then `more` (None left out), joined by ", or "."""
    first = "raise batch_size" if options.get("batch_size") is not None else "give a smaller step_width"
    return ", or ".join((first,) + tuple(cure for cure in more if cure))


def did_not_hold(cure, see=None, width=None):
    """The line where a measured width (the user gave none) did not hold: `see` (NOTE_ABOVE), where a
    note on the data names why, else `cure`; the width where it is shown."""
    shown = "" if width is None else f" {width}"
    return f"the measured step_width{shown} did not hold here: {see or cure}"


def noted(simulation):
    """Whether a line of these heads the simulation's summary (Simulation.notes): the hints of a
    measured width that did not hold then point to it."""
    return bool(getattr(simulation, "notes", ()))
