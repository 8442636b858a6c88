"""tati-optimize: train a network by gradient descent (or a Keras optimizer)."""

import sys
import time

from tati.cli.common import TOOL_GROUPS, make_parser, parse, run_tool

GROUPS = TOOL_GROUPS["tati-optimize"]


def main(argv=None):
    parser = make_parser(
        "tati-optimize", "Minimise a network's loss. With no data option it trains the built-in "
        "network (by default a linear classifier of 3 parameters; give --hidden_dimension for "
        "hidden layers) on the built-in two_clusters dataset.", GROUPS)
    options = parse(parser, sys.argv[1:] if argv is None else argv)

    def body():
        from tati.diagnostics.summary import summarise
        from tati.simulation import Simulation
        simulation = Simulation(**options)
        start = time.perf_counter()
        result = simulation.fit()
        print(summarise("tati-optimize", simulation, result, sampler=False,
                        seconds=time.perf_counter() - start))

    run_tool("tati-optimize", options, "fit", body)


if __name__ == "__main__":
    main()
