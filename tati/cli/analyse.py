"""tati-analyse: read a run's CSV files back and write one analysis as a CSV file, and with
--plot a PNG figure. One subcommand per analysis (tati/analysis/, doc/analysis.md), and
inference_data, the run as ArviZ's InferenceData in a NetCDF file:

    tati-analyse autocorrelation --trajectory_file trajectory.csv --burn_in_steps 1000 --plot acf.png

Options and files are checked before anything is computed: every bad input (option, value,
missing file or column, an output that exists without --overwrite true, --plot without
matplotlib) is one line `tati-analyse: error: ...` on stderr and exit status 2. TensorFlow is
imported only by the autocorrelation subcommand (for tfp.mcmc), after those checks.
"""

import importlib
import sys

from tati.cli.common import EPILOG, Parser, add_option, run_command
from tati.errors import InputError
from tati.config.options import Boolean, ListOf, Number, Optional, Text
from tati.config.original import aliases_of, analysis
from tati.analysis.select import shown_burn_in

PROG = "tati-analyse"
NONNEGATIVE_INT = Number(integer=True, minimum=0)
POSITIVE_INT = Number(integer=True, minimum=1)
POSITIVE = Number(minimum=0, strict=True)
NAMES = ListOf(Text())

# (name, kind, default, help[, default as --help shows it]) of the options every subcommand has
COMMON = [
    ("run_file", Optional(Text()), None, "the run-info CSV file of the run (tati-sample --run_file)"),
    ("trajectory_file", Optional(Text()), None, "the trajectory CSV file of the run"),
    ("averages_file", Optional(Text()), None, "the averages CSV file of the run"),
    ("directory", Optional(Text()), None, "a directory holding the run's CSV files: run.csv, "
     "trajectory.csv, averages.csv, or files recognised by their headers"),
    ("burn_in_steps", Optional(NONNEGATIVE_INT), None, "leave out the rows with step <= this",
     "the run's where its averages file shows it (that table starts after burn-in), else 0"),
    ("output", Text(), None, "the CSV file to write"),
    ("plot", Optional(Text()), None, "also draw the analysis into this PNG file (.pdf, .svg: that format; "
     "needs matplotlib: pip install tati[plots])"),
    ("overwrite", Boolean(), False, "replace output files that exist"),
]
BETA = ("inverse_temperature", POSITIVE, 1.0, "beta of the run (the sampler's inverse_temperature)")
PER_WALKER = ("per_walker", Boolean(), False, "one block of rows per walker (column id) instead of "
              "all walkers' rows pooled")
PARAMETERS = ("parameters", Optional(NAMES), None, "comma-separated parameter columns", "all")

COMMANDS = {
    "traces": ("traces and running means of the loss (the potential energy U), kinetic and total "
               "energy and chosen parameters, per walker, with burn-in", ("run_info", "trajectory"), [
        ("quantities", Optional(NAMES), None, "comma-separated columns of the run-info, trajectory or "
         "averages table", "those of loss, kinetic_energy, total_energy the tables have"),
        ("parameters", Optional(NAMES), None, "comma-separated parameter columns to trace too"),
    ]),
    "moments": ("parameter means (with batch-means standard errors) and variances, and reweighted to "
                "another temperature where asked", ("trajectory",), [
        ("inverse_temperature", Optional(POSITIVE), None, "beta to reweight the rows to, with weights "
         "exp(-(beta - run_inverse_temperature) loss)", "the run's: not reweighted"),
        ("run_inverse_temperature", Optional(Number(minimum=0)), None, "beta the rows were sampled at (the "
         "tables do not record it; 0 for rows drawn uniformly), needed to reweight", "unknown"),
        PER_WALKER, PARAMETERS]),
    "covariance": ("covariance matrix of the parameters, its eigenvalues (with standard errors) and "
                   "eigenvectors, pooled or per walker", ("trajectory",), [
        PER_WALKER, PARAMETERS,
        ("components", Optional(POSITIVE_INT), None, "how many leading eigenvalues to write", "all"),
        ("eigen_output", Text(), "eigenvectors.csv", "the CSV file of the eigenvalues and eigenvectors"),
    ]),
    "autocorrelation": ("integrated autocorrelation time and effective sample size per parameter and "
                        "along the leading eigenvectors, R-hat across walkers (tfp.mcmc), verdict",
                        ("trajectory",), [
        PARAMETERS,
        ("components", NONNEGATIVE_INT, 2, "how many leading covariance eigenvectors to add"),
    ]),
    "temperature": ("kinetic (2K/d) and configurational (q . grad U / d) temperature with intervals, "
                    "against 1/beta", ("run_info",), [
        BETA,
        ("dof", Optional(POSITIVE_INT), None, "degrees of freedom d", "the trajectory's parameter count"),
        ("estimators", Optional(ListOf(Text(("kinetic", "configurational")))), None,
         "comma-separated estimators", "those the run info has: kinetic and configurational (SGLD and pSGLD, "
         "without momenta: configurational)"),
        ("level", Number(minimum=0, strict=True), 0.99, "probability of the intervals, below 1"),
    ]),
    "free_energy": ("free energy -log(p)/beta with standard errors along the leading eigenvectors or "
                    "chosen parameters, from a histogram", ("trajectory",), [
        BETA,
        ("parameters", Optional(NAMES), None, "comma-separated parameters to use as coordinates "
         "instead of the leading eigenvectors", "none"),
        ("components", POSITIVE_INT, 2, "how many leading eigenvectors, without --parameters"),
        ("bins", Number(integer=True, minimum=2), 40, "histogram bins per coordinate"),
    ]),
    "diffusion_map": ("diffusion map of the parameters (vanilla or reweighted to the target measure "
                      "exp(-beta loss)): the leading diffusion coordinates of each point and the "
                      "eigenvalues", ("trajectory",), [
        ("method", Text(("vanilla", "target_measure")), "vanilla", "vanilla (Coifman-Lafon with alpha) "
         "or target_measure (reweighted to exp(-beta loss), Banisch et al. 2020)"),
        ("components", POSITIVE_INT, 2, "how many diffusion coordinates to write"),
        ("epsilon", Optional(POSITIVE), None, "kernel width: K = exp(-|x - y|^2 / (2 epsilon))",
         "the squared longest edge of the points' minimum spanning tree, or where P is nearly rank one "
         "there the width at which the median point's kernel counts sqrt(points); printed"),
        ("alpha", Number(minimum=0), 0.5, "the vanilla method's normalisation, 0 to 1: 0.5 for the "
         "sampled dynamics, 1 for the geometry alone"),
        ("inverse_temperature", POSITIVE, 1.0, "beta of the target measure exp(-beta loss) "
         "(method target_measure)"),
        ("max_points", Number(integer=True, minimum=2), 2000, "at most this many points, evenly spaced "
         "over the rows (the kernel has points^2 entries)"),
        ("thin", POSITIVE_INT, 1, "keep every thin-th row of each walker after burn-in"),
        PARAMETERS,
        ("eigen_output", Text(), "diffusion_eigenvalues.csv", "the CSV file of the eigenvalues"),
    ]),
    "inference_data": ("the run as ArviZ's InferenceData (posterior, sample_stats) in a NetCDF file, for "
                       "arviz.from_netcdf (needs arviz: pip install tati[arviz]); with the log-likelihood "
                       "for az.loo: tati-predictive --inference_data", ("trajectory",), [
        ("inverse_temperature", Optional(POSITIVE), None, "beta of the run, for ArviZ's log density lp = "
         "-beta loss and NUTS's energy", "none: no lp"),
    ]),
}
# The output's suffix and help where it is not a CSV file; such a command draws no figure (no --plot).
NOT_CSV = {"inference_data": (".nc", "the NetCDF file to write")}


def _options(command):
    if command in NOT_CSV:
        return [(option, kind, default, NOT_CSV[command][1] if option == "output" else text, *shown)
                for option, kind, default, text, *shown in COMMON if option != "plot"] + COMMANDS[command][2]
    return COMMON + COMMANDS[command][2]


def make_parser():
    parser = Parser(prog=PROG, allow_abbrev=False, epilog=EPILOG, description=
                     "Read a run's CSV files (tati-sample --run_file, --trajectory_file, --averages_file) "
                     "and write one analysis as a CSV file, with --plot also as a PNG figure. The original "
                     "TATiAnalyser's subcommands are aliases (doc/migration.md).")
    commands = parser.add_subparsers(dest="command", metavar="ANALYSIS", required=True, parser_class=Parser)
    for name, (text, _, _) in COMMANDS.items():
        sub = commands.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".",
                                  allow_abbrev=False, aliases=aliases_of(name), epilog=EPILOG)
        for option, kind, default, help_text, *shown in _options(name):
            shown = shown[0] if shown else _output(name) if option == "output" else default
            shown = "none" if shown is None else str(shown).lower() if isinstance(shown, bool) else shown
            add_option(sub, option, kind, f"{help_text} (default: {shown})".replace("%", "%%"), default=default)
    return parser


def convert(command, values):
    """The options' values, converted and checked by the option kinds of tati/config/options.py."""
    options = {}
    for option, kind, default, *_ in _options(command):
        value = values.get(option, default)
        options[option] = value if value is default and not isinstance(value, str) else kind(option, value)
    if options["output"] is None:
        options["output"] = _output(command)
    if command == "temperature" and not options["level"] < 1:
        raise InputError(f"level must be below 1, got {options['level']:g}")
    return options


def _output(command):
    return command + NOT_CSV.get(command, (".csv",))[0]


def _default(command, name):
    return next(default for option, _, default, *_ in _options(command) if option == name)


def main(argv=None):
    args = vars(make_parser().parse_args(sys.argv[1:] if argv is None else argv))
    command, implied = analysis(args.pop("command"))  # the original's subcommand names
    for option, value in implied.items():
        if args.get(option) is _default(command, option):  # not given
            args[option] = value
    run_command(PROG, lambda: print("\n".join(run(command, convert(command, args)))))


def run(command, o):
    """Check the files, read the tables, analyse, write; the lines to print."""
    from tati.analysis import figures
    from tati.analysis.output import check_inputs_not_outputs, check_outputs, write_csv
    from tati.analysis.runs import read_paths, run_paths
    if command == "inference_data":
        from tati.export.arviz import import_arviz
        import_arviz(f"{PROG} inference_data")
    o.setdefault("plot", None)
    if o["plot"] is not None:
        figures.check("--plot", o["plot"])
    outputs = {"output": o["output"], "plot": o["plot"]}
    if "eigen_output" in o:
        outputs["eigen_output"] = o["eigen_output"]
    inputs = {name: o[name] for name in ("run_file", "trajectory_file", "averages_file")}
    if all(path is None for path in inputs.values()) and o["directory"] is None:
        needed = " or ".join(t.replace("_", "-") for t in COMMANDS[command][1])
        raise InputError(f"{command} needs the run's {needed} table: give --run_file, --trajectory_file, "
                         "--averages_file or --directory")
    paths = run_paths(o["directory"], **inputs)
    check_outputs(outputs, o["overwrite"])
    check_inputs_not_outputs(paths, outputs)
    tables = read_paths(paths)
    module = importlib.import_module(f"tati.analysis.{command}")
    defaulted = o["burn_in_steps"] is None  # then the run's, where its averages table shows it (select.run_burn_in)
    shown = shown_burn_in(tables) if defaulted else None
    burn_in = o["burn_in_steps"] if not defaulted else 0 if shown is None else shown
    frames, draw, found = ANALYSES[command](module, tables, o, burn_in)
    written = []
    for option, frame in frames.items():
        getattr(module, "write", write_csv)(frame, o[option])
        written.append(o[option])
    if o["plot"] is not None:
        draw(o["plot"])
        written.append(o["plot"])
    return [_header(command, tables, burn_in, defaulted, shown is not None), *module.summary(found),
            "  wrote " + ", ".join(written)]


# Each analysis: (module, tables, options, burn_in) -> ({output option: DataFrame}, draw(path), what
# its summary() reads).
def _traces(module, tables, o, burn_in):
    table = module.traces(tables, o["quantities"], o["parameters"], burn_in)
    return {"output": table}, lambda path: module.plot(table, path, burn_in), table


def _moments(module, tables, o, burn_in):
    table = module.moments(tables, burn_in, o["inverse_temperature"], o["per_walker"], o["parameters"],
                           o["run_inverse_temperature"])
    return {"output": table}, lambda path: module.plot(table, path), table


def _covariance(module, tables, o, burn_in):
    found = module.covariance(tables, burn_in, o["per_walker"], o["components"], o["parameters"])
    return {"output": found.matrix, "eigen_output": found.eigen}, lambda path: module.plot(found, path), found


def _autocorrelation(module, tables, o, burn_in):
    module.coordinates(tables, burn_in, o["parameters"], o["components"])  # the input checks, before TensorFlow
    from tati.cli.common import import_tensorflow_quietly
    import_tensorflow_quietly()
    table = module.autocorrelation(tables, burn_in, o["parameters"], o["components"])
    return {"output": table}, lambda path: module.plot(tables, table, path, burn_in, o["parameters"],
                                                       o["components"]), table


def _temperature(module, tables, o, burn_in):
    table = module.temperature(tables, burn_in, o["inverse_temperature"], o["dof"], o["estimators"], o["level"])
    return {"output": table}, lambda path: module.plot(tables, table, path, burn_in, o["dof"]), table


def _free_energy(module, tables, o, burn_in):
    beta = o["inverse_temperature"]
    table = module.free_energy(tables, burn_in, beta, o["parameters"], o["components"], o["bins"])
    harmonic = module.harmonic(tables, burn_in, beta, o["parameters"], o["components"])
    return {"output": table}, lambda path: module.plot(table, path, approximations=harmonic), table


def _diffusion_map(module, tables, o, burn_in):
    found = module.diffusion_map(tables, burn_in, o["method"], o["components"], o["epsilon"], o["alpha"],
                                 o["inverse_temperature"], o["max_points"], o["thin"], o["parameters"])
    return ({"output": found.coordinates, "eigen_output": found.eigen}, lambda path: module.plot(found, path),
            found)


def _inference_data(module, tables, o, burn_in):
    idata = module.inference_data(tables, burn_in, o["inverse_temperature"])
    return {"output": idata}, None, idata


ANALYSES = {"traces": _traces, "moments": _moments, "covariance": _covariance,
            "autocorrelation": _autocorrelation, "temperature": _temperature, "free_energy": _free_energy,
            "diffusion_map": _diffusion_map, "inference_data": _inference_data}


def _header(command, tables, burn_in, defaulted, shown):
    """What was read; a burn-in not given says where it came from: the averages table, which starts
    after the run's (a first analysis of a run counted its warm-up rows: 7.7 standard errors hot)."""
    frame = next((getattr(tables, name) for name in ("trajectory", "run_info", "averages")
                  if len(getattr(tables, name).columns)), None)
    kept = frame[frame["step"] > burn_in]
    walkers = kept["id"].nunique()
    after, source, hint = f"burn-in {burn_in}", "", ""
    if shown:
        after, source = f"the run's burn-in {burn_in}", ", where its averages begin"
    elif defaulted and not len(tables.averages.columns):
        hint = "; the run's burn-in is not in these files: give --burn_in_steps or --averages_file"
    if kept.empty:
        return f"{PROG} {command}: no rows after {after}{hint}"
    return (f"{PROG} {command}: {len(kept)} rows of {walkers} walker{'s' if walkers != 1 else ''} after "
            f"{after} (steps {int(kept['step'].min())} to {int(kept['step'].max())}{source}){hint}")


if __name__ == "__main__":
    main()
