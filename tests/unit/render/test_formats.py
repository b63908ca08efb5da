"""The output formats and their registry: Markdown and HTML are the same document, escaped; a view
gets the formats whose needs it provides."""

from __future__ import annotations

import re
from typing import Any, ClassVar

import pytest

from advisor.models import (
    StatusResult,
)
from advisor.render import formats
from advisor.render.document import RECORDS, Capability, Document, Grid, Lines, View
from advisor.render.status import StatusView
from advisor.render.summaries import NodeView
from tests.unit.render.samples import HOSTILE, Tags, markdown_tables

# --------------------------------------------------------------------------------------------------
# Markdown and HTML: the same document, escaped


def grids(document: Document) -> list[Grid]:
    return [block for block in document.blocks if isinstance(block, Grid)]


def test_markdown_is_github_tables_of_the_same_cells_with_nothing_live(
    result: StatusResult,
) -> None:
    view = StatusView(result)
    text = formats.render(view, "markdown")
    assert text.startswith("# tf-thread-advisor status: ml\n\n## advice\n\n| NAMESPACE | NAME |")
    tables = markdown_tables(text)
    expected = grids(view.document())
    assert len(tables) == len(expected) == 2
    for table, grid in zip(tables, expected, strict=True):
        header, separator, *rows = table
        assert header == list(grid.columns)
        assert set(separator) == {"---"}
        assert rows == [list(row) for row in grid.rows]
    items = [line[2:] for line in text.splitlines() if line.startswith("- ")]
    assert len(items) == 4
    assert re.sub(r"\\(.)", r"\1", items[-1]).endswith(HOSTILE)
    # the text from the cluster is inert: no tag, link, emphasis or code span survives
    for live in ("<img", "*bold", "_it", "`code", "[l]", "&amp;"):
        assert not re.search(r"(?<!\\)" + re.escape(live), text), live


def test_html_is_a_standalone_page_with_every_value_escaped(result: StatusResult) -> None:
    view = StatusView(result)
    page = formats.render(view, "html")
    assert page.startswith("<!DOCTYPE html>\n")
    parsed = Tags()
    parsed.feed(page)
    # only the page's own tags: nothing from the cluster became one
    assert set(parsed.tags) == {
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "h1",
        "h2",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "ul",
        "li",
    }
    assert "script-src" not in page and "default-src 'none'" in page
    assert parsed.headings == ["tf-thread-advisor status: ml", "advice", "consumers", "problems"]
    expected = [[*g.columns] for g in grids(view.document())]
    rows = [list(row) for g in grids(view.document()) for row in [g.columns, *g.rows]]
    assert parsed.cells == rows and expected[0] == parsed.cells[0]
    assert parsed.items[-1].endswith(HOSTILE)  # the reason as the cluster said it, as text


# --------------------------------------------------------------------------------------------------
# the registry


class Bare(View):
    """A result with data and a document only."""

    def data(self) -> Any:
        return {"x": 1}

    def document(self) -> Document:
        return Document("bare", (Lines(("one",)),))


class WithRecords(Bare):
    provides: ClassVar[frozenset[Capability]] = frozenset({RECORDS})

    def records(self) -> Grid:
        return Grid(("x",), (("1",),))


def test_a_view_gets_the_formats_whose_needs_it_provides() -> None:
    assert formats.names(Bare) == ("json", "yaml", "markdown", "html")
    assert formats.names(WithRecords) == ("json", "yaml", "csv", "markdown", "html")
    assert formats.names(StatusView) == ("table", "json", "yaml", "csv", "markdown", "html")
    assert formats.names(NodeView) == ("text", "json", "yaml", "markdown", "html")
    with pytest.raises(ValueError, match="cannot be shown as 'csv'"):
        formats.render(Bare(), "csv")
    with pytest.raises(ValueError, match="cannot be shown as 'xml'"):
        formats.render(Bare(), "xml")


def test_a_format_is_registered_once_under_one_name() -> None:
    @formats.register("shout", "the document in capitals")
    def shout(view: View) -> str:
        return formats.plain(view).upper()

    try:
        assert formats.names(Bare)[-1] == "shout"
        assert formats.render(Bare(), "shout") == "ONE\n"
        with pytest.raises(ValueError, match="registered already"):
            formats.register("shout", "again")(shout)
    finally:
        formats.unregister("shout")
    assert "shout" not in formats.names(Bare)


def test_a_grid_row_must_fit_its_columns() -> None:
    with pytest.raises(ValueError, match="a row of 1 cells under 2 columns"):
        Grid(("a", "b"), (("1",),))


def test_a_markdown_list_item_starts_no_nested_list_or_heading() -> None:
    class Said(Bare):
        def document(self) -> Document:
            return Document("said", (Lines(("- a", "12. b", "# c", "plain - d")),))

    text = formats.render(Said(), "markdown")
    assert text.splitlines()[2:] == ["- \\- a", "- 12\\. b", "- \\# c", "- plain - d"]
