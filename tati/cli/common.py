"""Shared machinery of the command-line tools.

The parser is generated from `tati.config.options.OPTIONS`, so `--help` shows each option's true
default and help text. Only options given on the command line reach the Simulation; the rest
keep the table's defaults. Every input error is one line on stderr and exit status 2.
"""

import argparse
import difflib
import os
import re
import sys
import warnings

from tati.errors import InputError, Interrupted, SamplingError
from tati.engine.registry import canonical_sampler
from tati.config.options import OPTIONS, takes


# The option groups each tool takes from the option table, so that a flag of another tool
# can be named as such.
TOOL_GROUPS = {
    "tati-sample": ("data", "network", "prior", "sampler", "walkers", "run", "output"),
    "tati-optimize": ("data", "network", "prior", "optimizer", "walkers", "run", "output"),
    "tati-lossfunction-sampler": ("data", "network", "prior"),
    "tati-predictive": ("data", "network", "prior"),  # the run's, so that its command line serves
}


# How the tools read their command line (Parser.normalise), at the end of each one's --help.
EPILOG = ("A boolean option alone means true (--overwrite as --overwrite true); a list takes its "
          "items comma- or space-separated (--hidden_dimension 8,8 or 8 8). The original TATi's "
          "option, sampler and dataset names are understood where tati has a counterpart: see "
          "doc/migration.md.")


class Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line, and which answers each unknown flag with the
    nearest of its own flags, the tools that take it, or what tati does instead of the original
    TATi's option.

    Its options added by `add_option` take the command line's habits (`normalise`): a boolean flag
    alone means true, and a list's items may be separate words."""

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(self.normalise(args), namespace)

    def normalise(self, argv):
        """argv with each bare boolean flag written --flag=true and each list given as separate
        words joined into one --flag=a,b. A word ends a list (and is no boolean's value) if it is
        a flag or one of the parser's positional choices (a mode, a subcommand)."""
        kinds = {o: a.kind for a in self._actions if hasattr(a, "kind") for o in a.option_strings}
        ends = {choice for a in self._actions if not a.option_strings for choice in (a.choices or ())}
        out, i = [], 0
        while i < len(argv):
            word, i = argv[i], i + 1
            if word == "--":
                return out + argv[i - 1:]
            kind = kinds.get(word)
            if kind is None or (kind.bare is None and kind.separator is None):
                out.append(word)
                continue
            values = []
            while i < len(argv) and _is_value(argv[i], ends) and (kind.separator or not values):
                values.append(argv[i])
                i += 1
            if kind.separator is None and not values:  # a boolean flag alone
                values = [kind.bare]
            out.append(f"{word}={kind.separator.join(values) if kind.separator else values[0]}" if values else word)
        return out

    def error(self, message):
        if message.startswith("unrecognized arguments:"):
            flags = [_flag_name(a) for a in message.split(":", 1)[1].split() if _is_flag(a)]
            hints = [(flag, self._hint(flag)) for flag in dict.fromkeys(flags)]
            hints = [(flag, hint) for flag, hint in hints if hint]
            if len(hints) == 1 and len(set(flags)) == 1:
                message += f" ({hints[0][1]})"
            elif hints:  # one hint per flag, each naming its flag
                message += " (" + "; ".join(f"--{flag}: {hint}" for flag, hint in hints) + ")"
        fail(self.prog, message)

    def _hint(self, flag):
        from tati.config.original import RETIRED_OPTIONS
        if flag in RETIRED_OPTIONS:
            return f"an option of the original TATi: {RETIRED_OPTIONS[flag]}"
        parsers = [self] + [parser for action in self._actions
                            if isinstance(action, argparse._SubParsersAction) for parser in action.choices.values()]
        known = sorted({o[2:] for parser in parsers for a in parser._actions for o in a.option_strings
                        if o.startswith("--") and a.help != argparse.SUPPRESS and o != "--help"})
        if flag in known:  # a subcommand's option given to another (tati-analyse moments --bins)
            metavar = next((action.metavar for action in self._actions
                            if isinstance(action, argparse._SubParsersAction)), None) or "COMMAND"
            return f"--{flag} is an option of another {metavar.lower()}: {self.prog} {metavar} --help lists each one's"
        parts = [k for k in known if flag in k.split("_")]  # --seed for --dataset_seed
        part = f"did you mean --{parts[0]}?" if len(parts) == 1 else ""
        group = next((o.group for o in OPTIONS if o.name == flag and o.on_command_line), None)
        tools = [tool for tool, groups in TOOL_GROUPS.items() if group in groups and tool != self.prog]
        if tools:  # another tool's option: not a typo of one of ours
            return f"{part + ' ' if part else ''}--{flag} is an option of {' and '.join(tools)}"
        close = difflib.get_close_matches(flag, known, n=1)
        return f"did you mean --{close[0]}?" if close else part


def _is_flag(word):
    """Whether a word of argv is a flag: a dash, then not a digit (-1 and -.5 are values)."""
    return re.match(r"-+[^\d.\-]", word) is not None


def _is_value(word, ends):
    return not _is_flag(word) and word != "--" and word not in ends


def _flag_name(word):
    """The option a flag names: --name=value -> name; the original's -v, -vv -> verbose, -V -> version."""
    name = word.lstrip("-").split("=")[0]
    if not word.startswith("--"):
        return "verbose" if set(name) == {"v"} else "version" if name == "V" else name
    return name


def add_option(container, name, kind, help, **extra):
    """--name taking a value of `kind` (tati/config/options.py), which converts it later; a kind's habits
    (a boolean flag alone, a list in separate words) are read by Parser.normalise. Its help shows
    [VALUE] for a flag that may stand alone."""
    alone = {"nargs": "?", "const": kind.bare} if kind.bare is not None else {}
    action = container.add_argument(f"--{name}", metavar=kind.metavar, help=help,
                                    **{"dest": name, **alone, **extra})
    action.kind = kind
    return action


def add_renamed(parser, prog):
    """The original TATi's names of this tool's options (tati/config/original.py), hidden from --help."""
    from tati.config.original import RENAMED_OPTIONS
    kinds = {a.dest: a.kind for a in parser._actions if hasattr(a, "kind")}
    for old, new in RENAMED_OPTIONS.get(prog, {}).items():
        add_option(parser, old, kinds[new], argparse.SUPPRESS, dest=new)


def fail(prog, message):
    print(f"{prog}: error: {' '.join(str(message).split())}", file=sys.stderr)
    sys.exit(2)


def make_parser(prog, description, groups, argv=()):
    """The parser of a tool's options. With `--sampler NAME` among `argv`, --help shows that
    sampler's options only (the others are still parsed, and refused by the preflight)."""
    sampler = _sampler_in(argv)
    parser = Parser(prog=prog, description=description, allow_abbrev=False,
                    argument_default=argparse.SUPPRESS, epilog=EPILOG)
    sections = {}
    for option in OPTIONS:
        if not option.on_command_line or option.group not in groups:
            continue
        if sampler is not None and not takes(option.name, sampler):
            add_option(parser, option.name, option.kind, argparse.SUPPRESS)
            continue
        if option.group not in sections:
            sections[option.group] = parser.add_argument_group(option.group)
        default = "none" if option.default is None else option.default
        if isinstance(default, bool):  # as the command line takes it
            default = str(default).lower()
        if isinstance(default, list):
            default = ",".join(map(str, default)) or "empty"
        add_option(sections[option.group], option.name, option.kind,
                   f"{option.help} (default: {default})".replace("%", "%%"))
    return parser


def _sampler_in(argv):
    """The short name of the sampler given by --sampler in argv, or None (none or unknown)."""
    argv = list(argv)
    for i, argument in enumerate(argv):
        value = argument.split("=", 1)[1] if argument.startswith("--sampler=") else (
            argv[i + 1] if argument == "--sampler" and i + 1 < len(argv) else None)
        if value is not None:
            try:
                return canonical_sampler(value)
            except InputError:
                return None
    return None


def parse(parser, argv):
    """The options given on the command line, as strings for the option kinds to convert."""
    return vars(parser.parse_args(argv))


def import_tensorflow_quietly():
    """Import TensorFlow and start its runtime with stderr muted at the file-descriptor level.

    Its C++ start-up lines (CPU features, CUDA probing) are written before any log setting
    applies; a tool's stderr should carry only what the tool has to say. Python exceptions
    are unaffected and still reported.
    """
    from tati import muted_stderr
    with muted_stderr():
        import tensorflow as tf
        tf.constant(0.0) + 0.0


def _show_warning(prog):
    def show(message, category, filename, lineno, file=None, line=None):
        print(f"{prog}: warning: {' '.join(str(message).split())}", file=sys.stderr)
    return show


CLOSED_PIPE_STATUS = 141  # 128 + SIGPIPE, the status of a program the shell's pipe stopped


def _reader_gone():
    """stdout's reader closed it (tati-analyse ... | head): no traceback, the files already written
    kept, status CLOSED_PIPE_STATUS; stdout goes to the null device so that the exit's flush is quiet."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(CLOSED_PIPE_STATUS)


def run_command(prog, work):
    """work() for a tool that needs no Simulation (tati-analyse, tati-lossfunction-sampler):
    warnings one line each, InputError one line and exit status 2, SIGINT status 130, a reader that
    closed stdout early 141."""
    shown, warnings.showwarning = warnings.showwarning, _show_warning(prog)
    try:
        work()
        sys.stdout.flush()  # here, where a closed pipe is caught, not at the exit
    except InputError as error:
        fail(prog, error)
    except BrokenPipeError:
        _reader_gone()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        sys.exit(130)
    finally:
        warnings.showwarning = shown


def run_tool(prog, options, method, body):
    """Check the options and files (tati/config/preflight.py) before TensorFlow is imported, then run
    body(). InputError becomes one line and exit status 2, a failed sampling (non-finite values)
    status 1, SIGINT or SIGTERM (stopped at a row boundary, files flushed) 128 + the signal's
    number, a reader that closed stdout early 141. Warnings are one line each."""
    shown, warnings.showwarning = warnings.showwarning, _show_warning(prog)
    try:
        from tati.config.preflight import check
        cache = check(options, method)[0]["xla_cache_directory"]
        from tati.engine import xla_cache
        xla_cache.apply(cache)  # before TensorFlow's runtime starts (default: the user's cache directory)
        if cache is not None:
            # TensorFlow logs an "Error parsing text-format" line at every program it loads from
            # the cache (it tries the binary file as text first); the tool's stderr stays its own.
            if os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2") == "2":  # those lines are errors: level 3 hides them
                os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        import_tensorflow_quietly()
        body()
        sys.stdout.flush()
    except InputError as error:
        fail(prog, error)
    except BrokenPipeError:
        _reader_gone()
    except SamplingError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        sys.exit(1)
    except Interrupted as interruption:
        print(f"{prog}: {interruption}", file=sys.stderr)
        sys.exit(128 + interruption.signal)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        sys.exit(130)
    finally:
        warnings.showwarning = shown
