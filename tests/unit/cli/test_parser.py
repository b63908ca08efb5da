"""The parser's own rules on a small command line of the tests' own: a guess for a typo, the
subcommand found where argparse finds it, global options on either side, and only argparse's
public API in advisor/ (its private names change between Python releases)."""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import re
from pathlib import Path

import pytest

from advisor.cli import build_parser
from advisor.cli._parser import Parser
from advisor.errors import UsageError
from tests.support import REPO


def small() -> Parser:
    """Two commands, a global option and a choice, each flag added the ways modules add them."""
    parser = Parser(prog="tool")
    parser.add_argument("--version", action="version", version="tool 1")
    parser.add_global_argument("--level", choices=["low", "high"], default="low", help="level")
    parser.add_global_argument("--loud", action="store_true", default=False, help="loud")
    commands = parser.add_commands(dest="command", metavar="COMMAND")
    fetch = commands.add_parser("fetch", help="fetch")
    fetch.add_argument("--colour", choices=["red", "green"], default="red", help="colour")
    limits = fetch.add_argument_group("limits")
    limits.add_argument("--timeout", type=float, help="timeout")
    one = fetch.add_mutually_exclusive_group()
    one.add_argument("--quiet", action="store_true", help="quiet")
    one.add_argument("--verbose", action="store_true", help="verbose")
    push = commands.add_parser("push", help="push")
    push.add_argument("--force", action="store_true", help="force")
    parser.add_global_options_to_commands("global options")
    return parser


def refused(argv: list[str], parser: Parser | None = None) -> str:
    with pytest.raises(UsageError) as caught:
        (parser or small()).parse_args(argv)
    return str(caught.value)


# --------------------------------------------------------------------------------------------------
# guesses


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["fetch", "--colour", "gren"], "invalid choice: 'gren'; did you mean 'green'?"),
        (["--level", "hgh", "fetch"], "argument --level: invalid choice: 'hgh'; did you mean"),
        (["fetch", "--level", "hihg"], "did you mean 'high'? (choose from 'low', 'high')"),
        (["fecth"], "unknown command 'fecth'; did you mean 'fetch'? (commands: 'fetch', 'push')"),
        (["fetch", "--timout", "3"], "unrecognized arguments: --timout 3; did you mean --timeout?"),
        (["fetch", "--verbse"], "did you mean --verbose?"),  # a mutually exclusive group's
        (["push", "--luod"], "did you mean --loud?"),  # a global option after the command
        (["--force", "x"], "--force is an option of push: it goes after the command"),
        (["--forse", "x"], "--forse; did you mean --force? (an option of push: it goes after"),
        # argparse takes the command and leaves the flag before it over
        (["--force", "push"], "--force; --force is an option of push: it goes after the command"),
        (["push", "--version"], "--version; --version goes before the command"),
    ],
)
def test_a_typo_gets_the_closest_known_word(argv: list[str], says: str) -> None:
    assert says in refused(argv)


def test_the_message_points_at_the_help_of_the_parser_that_failed() -> None:
    assert refused(["fetch", "--colour", "blue"]).endswith("(see tool fetch --help)")
    assert refused(["fetch", "--colour", "blue"]).count("did you mean") == 0
    assert refused(["fecth"]).endswith("(see tool --help)")


def test_a_choice_keeps_its_choices_for_the_help_and_its_default_unchecked() -> None:
    parser = Parser(prog="tool")
    parser.add_argument("--mode", choices=["a", "b"], default="neither")
    assert parser.parse_args([]).mode == "neither"  # as argparse: a default is not a choice
    assert parser.parse_args(["--mode", "b"]).mode == "b"
    assert "{a,b}" in parser.format_help()
    assert "did you mean 'a'?" not in refused(["--mode", "zzz"], parser)


# --------------------------------------------------------------------------------------------------
# which word is the command


@pytest.mark.parametrize(
    "argv",
    [
        ["--level", "high", "fecth"],
        ["--level=high", "fecth"],
        ["--lev", "high", "fecth"],  # an abbreviation argparse accepts
        ["--loud", "fecth", "--level", "nonsense"],  # the command comes before the bad value
    ],
)
def test_the_command_is_found_after_the_option_values(argv: list[str]) -> None:
    assert "unknown command 'fecth'" in refused(argv)


def test_an_option_wrong_before_the_command_is_reported_first() -> None:
    assert refused(["--level", "nonsense", "fecth"]).startswith("argument --level: invalid")
    assert refused(["--level", "--loud", "fecth"]) == (
        "argument --level: expected one argument (see tool --help)"
    )


def test_help_and_version_before_a_wrong_command_still_print_and_exit() -> None:
    for argv, prints in ((["--version", "fecth"], "tool 1"), (["-h", "fecth"], "usage: tool")):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
            small().parse_args(argv)
        assert (exited.value.code, prints in out.getvalue()) == (0, True)


def test_an_unknown_flag_before_the_command_is_the_error_not_its_value() -> None:
    assert refused(["--retries", "3", "fetch"]).startswith("unrecognized arguments: --retries")


# --------------------------------------------------------------------------------------------------
# global options


@pytest.mark.parametrize(
    ("argv", "level", "loud"),
    [
        (["fetch"], "low", False),
        (["--level", "high", "fetch"], "high", False),
        (["fetch", "--level", "high", "--loud"], "high", True),
        (["--level", "high", "--loud", "push"], "high", True),  # not reset by push's parse
        (["--level", "low", "push", "--level", "high"], "high", False),  # after wins
    ],
)
def test_a_global_option_counts_on_either_side_of_the_command(
    argv: list[str], level: str, loud: bool
) -> None:
    parsed = small().parse_args(argv)
    assert (parsed.level, parsed.loud) == (level, loud)
    assert [name for name in vars(parsed) if "after" in name] == []


def test_each_command_lists_the_global_options_in_its_help() -> None:
    parser = small()
    for name, command in parser.commands.items():
        text = command.format_help()
        assert "global options:" in text and "--level {low,high}" in text, name


def test_every_flag_in_the_real_help_is_known_to_the_guesses() -> None:
    # a module that added options some other way would leave them out of every did-you-mean
    parser = build_parser()
    assert parser.commands
    for command in (parser, *parser.commands.values()):
        shown = set(re.findall(r"--[a-z][a-z0-9-]*", command.format_usage()))
        assert len(shown) > 2, command.prog
        assert shown <= set(command.flags), command.prog


# --------------------------------------------------------------------------------------------------
# no private argparse API


def private_argparse_names() -> set[str]:
    """Every ``_name`` of argparse: its module's, its classes', their instances' attributes."""
    parser = argparse.ArgumentParser()
    group = parser.add_argument_group("group")
    exclusive = parser.add_mutually_exclusive_group()
    subparsers = parser.add_subparsers()
    sub = subparsers.add_parser("sub")
    action = parser.add_argument("--flag")
    objects: list[object] = [argparse, parser, group, exclusive, subparsers, sub, action]
    objects += [value for value in vars(argparse).values() if isinstance(value, type)]
    names = {name for obj in objects for name in dir(obj)}
    names |= {name for obj in objects for name in getattr(obj, "__dict__", {})}
    return {name for name in names if name.startswith("_") and not name.endswith("__")}


def uses_of_private_argparse(source: str) -> list[str]:
    private = private_argparse_names()
    aliases = {"argparse"}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == "argparse"}
        elif isinstance(node, ast.ImportFrom) and node.module == "argparse":
            found += [f"from argparse import {a.name}" for a in node.names if a.name[0] == "_"]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            on_module = isinstance(node.value, ast.Name) and node.value.id in aliases
            if on_module or node.attr in private:
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in private:
            found.append(f"line {node.lineno}: def {node.name} (overrides argparse's)")
    return found


@pytest.mark.parametrize(
    "source",
    [
        "import argparse\nx: argparse._ArgumentGroup",
        "import argparse as ap\nap._SubParsersAction",
        "from argparse import _SubParsersAction",
        "def flags(parser):\n    return parser._option_string_actions",
        "import argparse\nclass P(argparse.ArgumentParser):\n    def _check_value(self, a, v): ...",
    ],
)
def test_the_check_finds_private_argparse(source: str) -> None:
    assert uses_of_private_argparse(source) != []


def test_advisor_uses_no_private_argparse_name() -> None:
    found = {
        f"{path.relative_to(REPO)} {use}"
        for path in sorted((REPO / "advisor").rglob("*.py"))
        for use in uses_of_private_argparse(path.read_text())
    }
    assert found == set()


def test_the_check_reads_the_cli() -> None:
    cli = Path(REPO / "advisor" / "cli" / "_parser.py").read_text()
    assert "argparse" in cli and uses_of_private_argparse(cli) == []
