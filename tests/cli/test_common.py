"""The tools' parsers answer an unknown flag with their own nearest flag, or name the tools that
take it (tati/cli/common.py Parser)."""

import pytest

from tati.cli import analyse, dataset_writer, lossfunction
from tati.cli.common import TOOL_GROUPS, make_parser


def tool(name):
    return make_parser(name, "", TOOL_GROUPS[name])


@pytest.mark.parametrize("parser, argv, hint", [
    (lambda: tool("tati-sample"), ["--setp_width", "1"], "(did you mean --step_width?)"),
    (lambda: tool("tati-optimize"), ["--step_width", "0.1"], "(--step_width is an option of tati-sample)"),
    (lambda: tool("tati-predictive"), ["--learning_rate", "1"], "(--learning_rate is an option of tati-optimize)"),
    (lossfunction.make_parser, ["grid", "--parameter", "weight0"], "(did you mean --parameters?)"),
    (lossfunction.make_parser, ["grid", "--max_steps", "10"],
     "(--max_steps is an option of tati-sample and tati-optimize)"),
    (dataset_writer.make_parser, ["--train_file", "a.csv", "--size", "3"], "(did you mean --dataset_size?)"),
    (dataset_writer.make_parser, ["--train_file", "a.csv", "--max_steps", "3"],
     "(--max_steps is an option of tati-sample and tati-optimize)"),
    (analyse.make_parser, ["covariance", "--trajectroy_file", "t.csv"], "(did you mean --trajectory_file?)"),
    (analyse.make_parser, ["moments", "--bins", "3"],
     "(--bins is an option of another analysis: tati-analyse ANALYSIS --help lists each one's)"),
    (analyse.make_parser, ["inference_data", "--plot", "trace.png"], "(--plot is an option of another analysis"),
    (lambda: tool("tati-sample"), ["--frobnicate", "1"], "unrecognized arguments: --frobnicate 1\n"),
])
def test_unknown_flag_gets_its_hint(parser, argv, hint, capsys):
    with pytest.raises(SystemExit) as exit:
        parser().parse_args(argv)
    error = capsys.readouterr().err
    assert exit.value.code == 2
    assert hint in error and error.count("\n") == 1, error


def every_parser():
    """(name, parser) of every tool and tati-analyse subcommand."""
    from tati.cli import predictive
    parsers = [(name, tool(name)) for name in ("tati-sample", "tati-optimize")]
    parsers += [("tati-lossfunction-sampler", lossfunction.make_parser()),
                ("tati-dataset-writer", dataset_writer.make_parser()),
                ("tati-predictive", predictive.make_tool_parser())]
    commands = next(a for a in analyse.make_parser()._actions if a.choices and not a.option_strings)
    parsers += [(f"tati-analyse {name}", sub) for name, sub in commands.choices.items() if name in analyse.COMMANDS]
    return parsers


def flags(parser, habit):
    """The flags of the parser's options whose kind has the habit ('bare' or 'separator')."""
    return [a.option_strings[0] for a in parser._actions if getattr(getattr(a, "kind", None), habit, None)]


def parsed(parser, argv):
    return vars(parser.parse_args(argv))


@pytest.mark.parametrize("name, parser", every_parser(), ids=lambda p: p if isinstance(p, str) else "")
def test_every_option_comes_with_its_kind(name, parser):
    # an option added around add_option would miss the habits below
    plain = [a.dest for a in parser._actions if a.option_strings and a.dest != "help" and not hasattr(a, "kind")]
    assert plain == []


@pytest.mark.parametrize("name, parser", every_parser(), ids=lambda p: p if isinstance(p, str) else "")
def test_a_boolean_flag_alone_means_true(name, parser):
    lead = ["grid"] if name == "tati-lossfunction-sampler" else []
    booleans = flags(parser, "bare")
    assert "--overwrite" in booleans
    for flag in booleans:
        dest = parser._option_string_actions[flag].dest
        assert parsed(parser, lead + [flag])[dest] == "true"
        assert parsed(parser, lead + [flag, "false"])[dest] == "false"
        following = parsed(parser, lead + [flag, "--burn_in_steps" if "analyse" in name else "--dataset_size", "5"])
        assert following[dest] == "true" and "5" in following.values()
        if lead:  # followed by the positional mode
            assert parsed(parser, [flag] + lead)[dest] == "true"


def test_the_booleans_of_sample_are_all_bare():
    assert set(flags(tool("tati-sample"), "bare")) == {
        "--collapse_walkers", "--adapt_step_width", "--adapt_mass", "--adapt_trajectory_length", "--warm_start",
        "--jit_compile", "--record_momenta", "--overwrite", "--progress", "--measure_step_width"}


@pytest.mark.parametrize("name, parser", every_parser(), ids=lambda p: p if isinstance(p, str) else "")
def test_a_list_takes_separate_words(name, parser):
    lead = ["grid"] if name == "tati-lossfunction-sampler" else []
    for flag in flags(parser, "separator"):
        action = parser._option_string_actions[flag]
        joined = action.kind.separator.join(["1", "-2"])
        assert parsed(parser, lead + [flag, "1", "-2"])[action.dest] == joined
        assert parsed(parser, lead + [flag, "1,-2"])[action.dest] == "1,-2"
        if lead:  # the mode ends the list
            values = parsed(parser, [flag, "1", "-2"] + lead)
            assert values[action.dest] == joined and values["mode"] == "grid"


def test_hidden_dimension_in_separate_words_runs_the_same_network():
    from tati.config.options import check
    values = parsed(tool("tati-sample"), ["--hidden_dimension", "8", "8", "--seed", "2"])
    assert check("hidden_dimension", values["hidden_dimension"]) == [8, 8] and values["seed"] == "2"
    values = parsed(tool("tati-sample"), ["--input_columns", "x1", "x2^2", "sin(x1)"])
    assert check("input_columns", values["input_columns"]) == ["x1", "x2^2", "sin(x1)"]


def test_every_unknown_flag_gets_its_own_hint(capsys):
    with pytest.raises(SystemExit) as exit:
        tool("tati-sample").parse_args(["--setp_width", "1", "--frobnicate", "--max_stesp", "3", "--do_hessians"])
    error = capsys.readouterr().err
    assert exit.value.code == 2 and error.count("\n") == 1, error
    assert ("(--setp_width: did you mean --step_width?; --max_stesp: did you mean --max_steps?; "
            "--do_hessians: an option of the original TATi: tati builds no Hessians") in error


@pytest.mark.parametrize("runner", ["run_command", "run_tool"])
def test_a_reader_that_closes_stdout_early_gets_no_traceback(runner):
    """tati-analyse ... | head: the reader closes the pipe before the tool's output is flushed. No
    BrokenPipeError traceback (there was one, at the print of the summary), status 141
    (128 + SIGPIPE, as a shell reports a program the pipe stopped); what ran before is done."""
    import subprocess
    import sys
    work = "lambda: print('row\\n' * 100000)"
    call = (f"common.run_command('tool', {work})" if runner == "run_command"
            else f"common.run_tool('tool', {{}}, 'sample', {work})")
    child = subprocess.Popen([sys.executable, "-c", f"from tati.cli import common; {call}"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()  # the reader gone before a line is read
    error = child.stderr.read().decode()
    assert child.wait() == 141 and "Traceback" not in error and "BrokenPipe" not in error, error
