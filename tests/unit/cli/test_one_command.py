"""A command line that starts with a command is parsed by that command's parser alone
(``advisor.cli._parse``): what it reads, its help, and every refusal are the whole parser's."""

from __future__ import annotations

import contextlib
import io

import pytest

from advisor.cli import COMMANDS, _parse, build_parser
from advisor.errors import UsageError

READ = [
    ["plan", "-A", "--image", "x:1", "--max-age", "12h", "--log-format", "json"],
    ["plan", "--namespace", "ml", "--debug", "--apply", "--max-running", "3"],
    ["status", "--namespace", "web", "--format", "json", "--max-age", "30d"],
    ["run", "--budget", "30", "--configmap", "tf-advice", "--namespace", "ml"],
    ["calibrate", "--objective", "throughput", "--log-level", "debug"],
    ["probe", "--format", "json"],
    ["cleanup", "--namespace", "ml", "--configmap", "old"],
]
REFUSED = [
    ["plan", "--budjet", "30"],
    ["plan", "--workers", "2"],  # a flag of another command
    ["plan", "--namespace", "ml", "-A"],
    ["status", "--format", "yml"],
    ["run", "--max-age", "30d"],
    ["plan", "--max-age", "soon"],
    ["plan", "--version"],
]


def test_each_command_is_registered_by_its_module_in_the_help_order() -> None:
    assert list(build_parser().commands) == list(COMMANDS)
    for name in COMMANDS:
        assert list(build_parser(name).commands) == [name]


@pytest.mark.parametrize("words", READ, ids=" ".join)
def test_one_commands_parser_reads_the_words_as_the_whole_one(words: list[str]) -> None:
    whole = vars(build_parser().parse_args(words))
    assert vars(_parse(words)) == whole


def _refusal(parse: object, words: list[str]) -> str:
    with pytest.raises(UsageError) as refused:
        parse(words)  # type: ignore[operator]
    return str(refused.value)


@pytest.mark.parametrize("words", REFUSED, ids=" ".join)
def test_a_refusal_is_the_whole_parsers(words: list[str]) -> None:
    assert _refusal(_parse, words) == _refusal(build_parser().parse_args, words)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_commands_help_is_the_whole_parsers(name: str) -> None:
    def printed(parse: object) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
            parse([name, "--help"])  # type: ignore[operator]
        return out.getvalue()

    assert printed(_parse) == printed(build_parser().parse_args)
