"""Shared machinery of the command-line tools.

The parser is generated from `tati.options.OPTIONS`, so `--help` shows each option's true
default and help text. Only options given on the command line reach the Simulation; the rest
keep the table's defaults. Every input error is one line on stderr and exit status 2.
"""

import argparse
import difflib
import os
import sys
import warnings

from tati.errors import InputError, Interrupted, SamplingError
from tati.names import canonical_sampler
from tati.options import OPTIONS


# The option groups each tool takes from the option table, so that a flag of another tool
# can be named as such.
TOOL_GROUPS = {
    "tati-sample": ("data", "network", "prior", "sampler", "walkers", "run", "output"),
    "tati-optimize": ("data", "network", "prior", "optimizer", "walkers", "run", "output"),
    "tati-lossfunction-sampler": ("data", "network", "prior"),
    "tati-predictive": ("data", "network"),
}


class Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line, and which answers an unknown flag with the
    nearest of its own flags, or with the tools that take it."""

    def error(self, message):
        if message.startswith("unrecognized arguments:"):
            flags = [a[2:].split("=")[0] for a in message.split(":", 1)[1].split() if a.startswith("--")]
            message += next(filter(None, (self._hint(flag) for flag in flags)), "")
        fail(self.prog, message)

    def _hint(self, flag):
        parsers = [self] + [parser for action in self._actions
                            if isinstance(action, argparse._SubParsersAction) for parser in action.choices.values()]
        known = sorted({o[2:] for parser in parsers for a in parser._actions for o in a.option_strings
                        if o.startswith("--") and a.help != argparse.SUPPRESS and o != "--help"})
        parts = [k for k in known if flag in k.split("_")]  # --seed for --dataset_seed
        part = f"did you mean --{parts[0]}?" if len(parts) == 1 else ""
        group = next((o.group for o in OPTIONS if o.name == flag and o.on_command_line), None)
        tools = [tool for tool, groups in TOOL_GROUPS.items() if group in groups and tool != self.prog]
        if tools:  # another tool's option: not a typo of one of ours
            return f" ({part + ' ' if part else ''}--{flag} is an option of {' and '.join(tools)})"
        close = difflib.get_close_matches(flag, known, n=1)
        return f" (did you mean --{close[0]}?)" if close else f" ({part})" if part else ""


def fail(prog, message):
    print(f"{prog}: error: {' '.join(str(message).split())}", file=sys.stderr)
    sys.exit(2)


def make_parser(prog, description, groups, argv=()):
    """The parser of a tool's options. With `--sampler NAME` among `argv`, --help shows that
    sampler's options only (the others are still parsed, and refused by the preflight)."""
    sampler = _sampler_in(argv)
    parser = Parser(prog=prog, description=description, allow_abbrev=False,
                     argument_default=argparse.SUPPRESS)
    sections = {}
    for option in OPTIONS:
        if not option.on_command_line or option.group not in groups:
            continue
        if sampler is not None and not option.takes(sampler):
            parser.add_argument(f"--{option.name}", dest=option.name, help=argparse.SUPPRESS)
            continue
        if option.group not in sections:
            sections[option.group] = parser.add_argument_group(option.group)
        default = "none" if option.default is None else option.default
        if isinstance(default, bool):  # as the command line takes it
            default = str(default).lower()
        if isinstance(default, list):
            default = ",".join(map(str, default)) or "empty"
        sections[option.group].add_argument(
            f"--{option.name}", metavar=option.kind.metavar, dest=option.name,
            help=f"{option.help} (default: {default})".replace("%", "%%"))
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
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        import tensorflow as tf
        tf.constant(0.0) + 0.0
    finally:
        os.dup2(saved, 2)
        os.close(devnull)
        os.close(saved)


def _show_warning(prog):
    def show(message, category, filename, lineno, file=None, line=None):
        print(f"{prog}: warning: {' '.join(str(message).split())}", file=sys.stderr)
    return show


def run_command(prog, work):
    """work() for a tool that needs no Simulation (tati-analyse, tati-lossfunction-sampler):
    warnings one line each, InputError one line and exit status 2, SIGINT status 130."""
    shown, warnings.showwarning = warnings.showwarning, _show_warning(prog)
    try:
        work()
    except InputError as error:
        fail(prog, error)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        sys.exit(130)
    finally:
        warnings.showwarning = shown


def run_tool(prog, options, method, body):
    """Check the options and files (tati/preflight.py) before TensorFlow is imported, then run
    body(). InputError becomes one line and exit status 2, a failed sampling (non-finite values)
    status 1, SIGINT or SIGTERM (stopped at a row boundary, files flushed) 128 + the signal's
    number. Warnings are one line each."""
    shown, warnings.showwarning = warnings.showwarning, _show_warning(prog)
    try:
        from tati.preflight import check
        check(options, method)
        if options.get("xla_cache_directory") is not None:  # before TensorFlow's runtime starts
            from tati import xla_cache
            xla_cache.use(options["xla_cache_directory"])
            # TensorFlow logs an "Error parsing text-format" line at every program it loads from
            # the cache (it tries the binary file as text first); the tool's stderr stays its own.
            if os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2") == "2":  # tati's own level: errors too
                os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        import_tensorflow_quietly()
        body()
    except InputError as error:
        fail(prog, error)
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
