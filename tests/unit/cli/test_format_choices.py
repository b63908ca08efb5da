"""``--format``: every command takes its choices from the one registry of output formats."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from advisor.cli import build_parser
from advisor.errors import UsageError
from advisor.render import formats
from advisor.render.document import RECORDS, View

#: each command that prints a result, its default format and the choices it has always had
COMMANDS = {
    "status": ("table", ("table", "json", "yaml", "csv")),
    "plan": ("table", ("table", "json", "yaml")),
    "calibrate": ("text", ("text", "json", "yaml")),
    "probe": ("text", ("text", "json", "yaml")),
}


def chosen(command: str, *argv: str) -> str:
    return str(build_parser().parse_args([command, *argv]).format)


@pytest.mark.parametrize("command", COMMANDS)
def test_the_old_choices_and_the_default_stay(command: str) -> None:
    default, choices = COMMANDS[command]
    assert chosen(command) == default
    for name in choices:
        assert chosen(command, "--format", name) == name
    with pytest.raises(UsageError, match="invalid choice: 'xml'"):
        chosen(command, "--format", "xml")


@pytest.mark.parametrize("command", COMMANDS)
def test_markdown_and_html_reach_every_command(command: str) -> None:
    assert chosen(command, "--format", "markdown") == "markdown"
    assert chosen(command, "--format=html") == "html"


@pytest.fixture
def registered() -> Iterator[tuple[str, str]]:
    """Two formats registered once: one any result fits, one that needs records."""

    def dump(view: View) -> str:
        return repr(view.data()) + "\n"

    formats.register("repr", "Python's repr of the data")(dump)
    formats.register("tsv", "tab-separated records", needs=[RECORDS])(dump)
    try:
        yield "repr", "tsv"
    finally:
        formats.unregister("repr")
        formats.unregister("tsv")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_format_registered_once_appears_in_each_command_it_fits(
    command: str, registered: tuple[str, str]
) -> None:
    anything, records = registered
    assert chosen(command, "--format", anything) == anything
    if command == "probe":  # a node profile has no records
        with pytest.raises(UsageError, match="invalid choice: 'tsv'"):
            chosen(command, "--format", records)
    else:
        assert chosen(command, "--format", records) == records
