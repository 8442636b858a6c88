"""The kernel contract: what the engine knows of a sampler or optimizer, declared next to it.

A kernel is a class (a Keras 3 optimizer, or a kernel that evaluates the target itself) plus
its `Spec`: the facts that code outside the kernel would otherwise branch on, by name or by
type. The engine, the option checks, the summary and the tests read them from the kernel's
spec (tati/engine/registry.py holds one per kernel) and nowhere else. This module imports no
TensorFlow, so options are checked before TensorFlow is imported.

A kernel is of one of four kinds, each stepped by the one compiled driver (engine/driver.py)
through the driver kernel that its spec names (`driver`, "module:Class", loaded on demand):

    GRADIENT     one gradient per step, computed by the loop and given to `apply(grads,
                 variables)`: the Langevin samplers (samplers/base.py SamplerBase) and every
                 optimizer, Keras' own or tati's; all are Keras 3 optimizers that also work in
                 `model.fit` (engine/gradient.py)
    LEGS         HMC1/HMC2 (samplers/hmc.py): where a walker's leg ends, `apply(grads,
                 variables, loss=...)` decides and starts the next leg; between, `integrate`
                 kicks and drifts with gradients at loop tensors (samplers/hmc_kernel.py)
    PROPOSAL     NUTS and RWMH (samplers/proposal.py): TFP's kernels, which evaluate the target
                 as often as they need through the model (samplers/proposal_kernel.py)
    FULL_BATCH   L-BFGS for fit() (optimizers/lbfgs.py): TFP's minimiser on the whole dataset

A kernel's *state* is its variables (checkpointed by name, checkpoint.py); its *info*, what its
rows report, is its class's `info`, a recording/columns.Info (TF-free): the run-info and
averages columns follow from it alone, and the compiled loops deliver them under their names.
"""

import importlib
from dataclasses import dataclass

GRADIENT, LEGS, PROPOSAL, FULL_BATCH = "gradient", "legs", "proposal", "full_batch"
KINDS = (GRADIENT, LEGS, PROPOSAL, FULL_BATCH)
# The driver kernel of one gradient per step: every optimizer's, Keras' own included.
GRADIENT_DRIVER = "tati.engine.gradient:GradientKernel"


@dataclass(frozen=True)
class Spec:
    """One sampler's or optimizer's declaration.

    name: the short, canonical name (tables, summaries, checkpoints, options);
    full_name: the original TATi's name; aliases: its other spellings (doc/migration.md); every
        one is accepted in any case;
    kernel: "module:Class", loaded on demand (`load_kernel`), so that naming needs no TensorFlow;
    kind: how the engine drives it (above);
    driver: the driver kernel (engine/driver.py Kernel) that steps it, "module:Class", made as
        driver(loop) (engine/loop.py); one gradient per step unless it says;
    samples: a sampler (step_width, inverse temperature), else an optimizer of fit();
    options: the options of tati/config/options.py that it alone (with others of its kind) takes, by
        name, or new `option_kinds.Option`s that it declares (merged into the option table); the
        options of every sampler (step_width, inverse_temperature, seed) are not listed;
    persistent_momenta: its momenta carry over from step to step (record_momenta, the summary's
        equipartition verdicts, the kinetic outliers);
    redraws_momenta: it draws fresh momenta at every leg or transition (HMC, NUTS): they are
        equipartitioned by construction, so the summary does not judge them;
    metropolis: it accepts or rejects; such samplers adapt during burn-in (its default is half
        of max_steps), start warm and pool their walkers in burn-in;
    evaluates_target: it evaluates the model itself (built on the model, not on its variables);
    full_batch: it needs the whole dataset (batch_size is refused, saying `why_full_batch`);
    target_acceptance: the acceptance rate its step width adapts to unless the option says;
    infos: the recording.columns.Info its rows may have (its class's `info`, one per variant),
        so that the readers of tables know every column without TensorFlow;
    walker_steps: an optimizer with a step width per walker (needs the model's walker axis); its
        rows' scaled_gradient is its own, from `scaled_gradients(gradients)`;
    takes_learning_rate: an optimizer that steps by learning_rate (L-BFGS chooses its steps);
    xla_steps: (on a potential, on the built-in network, on a Keras model) the steps of a sample()
        call from which jit_compile auto compiles with XLA, where they differ from its kind's
        (tati/config/compilation.py: measured where XLA's cold compile is repaid);
    summary_header: an optimizer's summary line, a format of steps, name (its short name),
        optimizer (as given), learning_rate (with its schedule), first_learning_rate (the number)
        and stopped (" (converged or stopped early)" where it stopped before max_steps).
    """
    name: str
    full_name: str
    kernel: str
    kind: str = GRADIENT
    driver: str = GRADIENT_DRIVER
    samples: bool = True
    options: tuple = ()
    aliases: tuple = ()
    persistent_momenta: bool = False
    redraws_momenta: bool = False
    metropolis: bool = False
    evaluates_target: bool = False
    full_batch: bool = False
    why_full_batch: str = ""
    target_acceptance: float = None
    infos: tuple = ()
    walker_steps: bool = False
    takes_learning_rate: bool = True
    summary_header: str = "{steps} steps of {optimizer} (learning_rate {learning_rate})"
    xla_steps: tuple = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Spec {self.name}: kind '{self.kind}' is not one of {', '.join(KINDS)}")
        for field in ("kernel", "driver"):
            if ":" not in getattr(self, field):
                raise ValueError(f"Spec {self.name}: {field} '{getattr(self, field)}' is not 'module:Class'")

    @property
    def option_names(self):
        """The names of the options it takes (declared by name or as its own Option)."""
        return tuple(option if isinstance(option, str) else option.name for option in self.options)

    @property
    def declared_options(self):
        """Its own Option objects, which tati/config/options.py adds to the table."""
        return tuple(option for option in self.options if not isinstance(option, str))

    @property
    def spellings(self):
        """Every name it is accepted by (any case)."""
        return (self.name, self.full_name) + tuple(self.aliases)


def load_class(path):
    """The class that "module:Class" names (imports its module: TensorFlow, usually)."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def load_kernel(spec):
    """The kernel class that `spec.kernel` names."""
    return load_class(spec.kernel)


def load_driver(spec):
    """The driver kernel class that steps the spec's kernel (`spec.driver`; spec None: a Keras
    optimizer, one gradient per step)."""
    return load_class(GRADIENT_DRIVER if spec is None else spec.driver)


def kernel_path(cls):
    """The "module:Class" that names a class in a spec."""
    return f"{cls.__module__}:{cls.__qualname__}"
