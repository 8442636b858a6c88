"""Warm-up adaptation, one implementation of each algorithm, shared by every sampler that adapts.

    dual_averaging  the step width towards a target acceptance (Hoffman & Gelman 2014, Alg. 5)
    width_search    the initial step width (Hoffman & Gelman 2014, Alg. 4)
    windows         Stan's windowed schedule of the metric, and HMC's windows counted in legs
    metric          Welford's running moments (diagonal, dense), Stan's shrinkage, the Fisher
                    scale, the growths a restart divides by
    chees           HMC's leg length (Hoffman, Radul & Sountsov 2021)
    states          what the states share: field-by-field selection, stacking into a vector
    measured_width  the SG samplers' step width, once, from the start's curvature and gradient
                    noise (not a warm-up: no state, measured before the first step)
    width_rules     its rules' numbers (stability, heat allowed), read without TensorFlow

Each algorithm has a typed state (a NamedTuple of float64 tensors with named fields), `init`,
`update` and its read-outs, all pure functions of tensors, usable inside tf.function and XLA.
The users keep the states in variables (the checkpoint's, by name, as one float64 vector each
where they always were) and convert at the boundary with the module's `pack` / `unpack`:
NUTS and RWMH (samplers/proposal_kernel.py, samplers/proposal.py), HMC1/HMC2 (samplers/hmc_adaptation.py)
and the Langevin samplers' adapt_mass (samplers/mass.py).
"""
