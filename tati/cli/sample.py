"""tati-sample: sample a network's loss manifold (or posterior) and write the three tables."""

import sys

from tati.cli.common import make_parser, parse, run_tool

GROUPS = ("data", "network", "prior", "sampler", "walkers", "run", "output")


def main(argv=None):
    parser = make_parser(
        "tati-sample", "Sample exp(-beta U) of a network's loss with a Langevin sampler. With no "
        "data option it samples a small network on the built-in two_clusters dataset.", GROUPS)
    options = parse(parser, sys.argv[1:] if argv is None else argv)

    def body():
        from tati.cli.summary import summarise
        from tati.simulation import Simulation
        simulation = Simulation(**options)
        result = simulation.sample()
        print(summarise("tati-sample", simulation, result, sampler=True))

    run_tool("tati-sample", body)


if __name__ == "__main__":
    main()
