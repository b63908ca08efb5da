"""Every output format, registered once: what ``--format`` offers in every command.

A format is a function from a ``View`` (``advisor.render.document``) to the text on stdout,
ending in a newline. Each command offers the formats whose ``needs`` its view provides
(``names``), so a new format is one decorated function here and reaches every command it fits:

    @register("toml", "TOML of the same data")
    def _toml(view: View) -> str: ...

The plain text of a document is one function under two names: ``table`` for results made of
tables (``status``, ``plan``), ``text`` for results that are a summary (``calibrate``, ``probe``).
Markdown and HTML are reports a team mails or pins: everything from the cluster in them is
escaped, since names, reasons and messages are whatever the cluster holds.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import yaml

from advisor.render.document import (
    PROSE,
    RECORDS,
    TABLES,
    Block,
    Capability,
    Grid,
    Lines,
    Preformatted,
    View,
)

Renderer = Callable[[View], str]


@dataclass(frozen=True)
class Format:
    """One ``--format`` choice."""

    name: str
    help: str
    render: Renderer
    #: what a view must provide to be shown this way
    needs: frozenset[Capability] = frozenset()

    def fits(self, view: type[View]) -> bool:
        return self.needs <= view.provides


_REGISTRY: dict[str, Format] = {}


def register(
    name: str, help: str, *, needs: Iterable[Capability] = ()
) -> Callable[[Renderer], Renderer]:
    """Registers the decorated function as the format ``name``."""

    def add(render: Renderer) -> Renderer:
        if name in _REGISTRY:
            raise ValueError(f"output format {name!r} is registered already")
        _REGISTRY[name] = Format(name, help, render, frozenset(needs))
        return render

    return add


def unregister(name: str) -> None:
    """Removes the format ``name`` (a format registered for a while, as tests do)."""
    del _REGISTRY[name]


def names(view: type[View]) -> tuple[str, ...]:
    """The formats a command showing ``view`` offers, in the order they were registered."""
    return tuple(f.name for f in _REGISTRY.values() if f.fits(view))


def describe(view: type[View]) -> str:
    """``table (aligned columns), json (...), ...``: for a ``--format`` help text."""
    return ", ".join(f"{f.name} ({f.help})" for f in _REGISTRY.values() if f.fits(view))


def render(view: View, name: str) -> str:
    """``view`` as the format ``name`` shows it, ending in a newline."""
    found = _REGISTRY.get(name)
    if found is None or not found.fits(type(view)):
        raise ValueError(f"{type(view).__name__} cannot be shown as {name!r}")
    return found.render(view)


# --------------------------------------------------------------------------------------------------
# Plain text: aligned columns, sentences, summaries as they are
# --------------------------------------------------------------------------------------------------


def plain(view: View) -> str:
    """The document as text: its blocks one after another, a blank line between them."""
    return "\n".join(_plain_block(block) for block in view.document().blocks)


register("table", "aligned columns", needs=[TABLES])(plain)
register("text", "a summary for people", needs=[PROSE])(plain)


def _plain_block(block: Block) -> str:
    if isinstance(block, Grid):
        lines = [block.columns, *block.rows]
        widths = [max(len(line[i]) for line in lines) for i in range(len(block.columns))]
        return "".join(
            "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() + "\n"
            for line in lines
        )
    if isinstance(block, Lines):
        return "".join(line + "\n" for line in block.lines)
    return block.text.rstrip("\n") + "\n"


# --------------------------------------------------------------------------------------------------
# Data: JSON, YAML and CSV
# --------------------------------------------------------------------------------------------------


@register("json", "the result's data")
def _json(view: View) -> str:
    return json.dumps(view.data(), indent=2) + "\n"


@register("yaml", "the same data as YAML")
def _yaml(view: View) -> str:
    return yaml.safe_dump(view.data(), sort_keys=False)


@register("csv", "one record a line, raw values, for spreadsheets", needs=[RECORDS])
def _csv(view: View) -> str:
    records = view.records()
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(records.columns)
    writer.writerows(records.rows)
    return out.getvalue()


# --------------------------------------------------------------------------------------------------
# Reports: Markdown (a GitHub table) and a standalone HTML page
# --------------------------------------------------------------------------------------------------

#: what Markdown would read as markup or HTML inside a cell or a list item
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&#])")
#: what would start a nested list at the beginning of a list item
_MD_LEADING = re.compile(r"^(\d*)([-+.)])")


def _md(text: str) -> str:
    """``text`` on one line, as text: in a table cell, a heading or (``_md_item``) a list."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split("\n")))


def _md_item(text: str) -> str:
    return _MD_LEADING.sub(r"\1\\\2", _md(text))


@register("markdown", "a GitHub-flavoured Markdown report")
def markdown(view: View) -> str:
    document = view.document()
    parts = [f"# {_md(document.title)}\n"]
    for block in document.blocks:
        if isinstance(block, Grid):
            head = f"## {_md(block.title)}\n\n" if block.title else ""
            rows = [block.columns, *block.rows]
            lines = ["| " + " | ".join(_md(cell) for cell in row) + " |" for row in rows]
            lines.insert(1, "|" + "|".join(" --- " for _ in block.columns) + "|")
            parts.append(head + "\n".join(lines) + "\n")
        elif isinstance(block, Lines):
            head = f"## {_md(block.title)}\n\n" if block.title else ""
            parts.append(head + "".join(f"- {_md_item(line)}\n" for line in block.lines))
        else:
            parts.append(_fenced(block))
    return "\n".join(parts)


def _fenced(block: Preformatted) -> str:
    """A code block whose fence no backtick run in the text can close."""
    longest = max((len(run) for run in re.findall(r"`+", block.text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{block.text.rstrip(chr(10))}\n{fence}\n"


_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#222}"
    "table{border-collapse:collapse;margin:0 0 1.5rem}"
    "th,td{border:1px solid #ccc;padding:.25rem .6rem;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3}tbody tr:nth-child(even){background:#fafafa}"
    "pre{background:#f6f6f6;padding:1rem;overflow-x:auto}"
)


@register("html", "a standalone HTML page")
def html_page(view: View) -> str:
    document = view.document()
    title = html.escape(document.title)
    body = "".join(_html_block(block) for block in document.blocks)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        # a page that runs nothing and loads nothing, whatever a name from the cluster says
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"<h1>{title}</h1>\n{body}</body>\n</html>\n"
    )


def _html_block(block: Block) -> str:
    if isinstance(block, Grid):
        head = f"<h2>{html.escape(block.title)}</h2>\n" if block.title else ""
        header = "".join(f"<th>{html.escape(c)}</th>" for c in block.columns)
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>\n"
            for row in block.rows
        )
        return (
            f"{head}<table>\n<thead><tr>{header}</tr></thead>\n<tbody>\n{rows}</tbody>\n</table>\n"
        )
    if isinstance(block, Lines):
        head = f"<h2>{html.escape(block.title)}</h2>\n" if block.title else ""
        items = "".join(f"<li>{html.escape(line)}</li>\n" for line in block.lines)
        return f"{head}<ul>\n{items}</ul>\n"
    return f"<pre>{html.escape(block.text.rstrip(chr(10)))}</pre>\n"
