"""tati-sample: sample a network's loss manifold (or posterior) and write the three tables."""

import sys
import time
import warnings

from tati.cli.common import TOOL_GROUPS, make_parser, parse, run_tool

GROUPS = TOOL_GROUPS["tati-sample"]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = make_parser(
        "tati-sample", "Sample exp(-beta U) of a network's loss (or, with priors, its posterior) "
        "with a Langevin or Hamiltonian Monte Carlo sampler and write the run-info, trajectory and "
        "averages tables. With no data option it samples the built-in network (by default a "
        "linear classifier of 3 parameters; give --hidden_dimension for hidden layers) on the "
        "built-in two_clusters dataset. With --sampler NAME, --help shows that sampler's options.",
        GROUPS, argv)
    options = parse(parser, argv)

    def body():
        from tati.diagnostics.summary import summarise
        from tati.errors import RunWarning
        from tati.simulation import Simulation
        simulation = Simulation(**options)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RunWarning)  # the summary below names the walkers
            result = simulation.sample()
        print(summarise("tati-sample", simulation, result, sampler=True,
                        seconds=time.perf_counter() - start))

    run_tool("tati-sample", options, "sample", body)


if __name__ == "__main__":
    main()
