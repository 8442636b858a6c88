"""The original TATi's tools that tati has no counterpart for, installed under their old names
so that a script calling one gets one line saying what to do instead (exit status 2). Those with
a counterpart are installed as aliases of it (setup.py; tati/config/original.py's TOOLS)."""

from tati.cli.common import fail
from tati.config.original import RETIRED_TOOLS


def retired(name):
    """The main() of the original's tool `name`: one line and exit status 2."""
    def main(argv=None):
        fail(name, f"{name} is the original TATi's tool and not part of tati: {RETIRED_TOOLS[name]} "
                   "(doc/migration.md)")
    return main


explorer = retired("TATiExplorer")
input_space_sampler = retired("TATiInputSpaceSampler")
dataset_parser = retired("TATiDatasetParser")
numerical_diff = retired("NumericalDiff")
