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
    (lambda: tool("tati-sample"), ["--frobnicate", "1"], "unrecognized arguments: --frobnicate 1\n"),
])
def test_unknown_flag_gets_its_hint(parser, argv, hint, capsys):
    with pytest.raises(SystemExit) as exit:
        parser().parse_args(argv)
    error = capsys.readouterr().err
    assert exit.value.code == 2
    assert hint in error and error.count("\n") == 1, error
