"""What render's tests share: status rows built directly (a valid advice, a consumer with its
problems, a hostile string from the cluster) and readers of what a format printed (Markdown
tables, an HTML page's tags and text)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from advisor import __version__
from advisor.models import AdviceStatus, Consumer, Problem

#: what a name, reason or message from the cluster may hold: markup, Markdown and table syntax
HOSTILE = '<img src=x onerror="alert(1)"> | *bold* _it_ `code` [l](j:x) &amp; #h ~s~ \\'


def advice(name: str, **extra: Any) -> AdviceStatus:
    """A valid advice measured under 4 CPUs a day ago, twice as fast as TF's default."""
    values: dict[str, Any] = {
        "name": name,
        "namespace": "ml",
        "intra_op_threads": 2,
        "inter_op_threads": 1,
        "node": "node-a",
        "node_labels": {"pool": "cpu-a"},
        "cpu_model": "Test CPU @ 2.0GHz",
        "effective_cpus": 4.0,
        "quota_cpus": 4.0,
        "objective": "latency",
        "gain": 2.0,
        "gain_within_noise": False,
        "trials": 12,
        "budget_s": 60.0,
        "tf_version": "2.21.0",
        "advisor_version": __version__,
        "created_at": "2026-01-01T00:00:00Z",
        "age": "1d",
        "age_s": 86400,
    }
    return AdviceStatus(**(values | extra))


def reader(name: str, cpu: float | None, *problems: tuple[str, str]) -> Consumer:
    return Consumer(
        kind="Deployment",
        name=name,
        container="server",
        cpu_limit=cpu,
        problems=[Problem.model_validate({"code": c, "message": m}) for c, m in problems],
    )


def markdown_tables(text: str) -> list[list[list[str]]]:
    """The GitHub tables of ``text``: cells split on unescaped pipes, escapes undone."""
    tables: list[list[list[str]]] = []
    previous = ""
    for line in text.splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            cells = re.split(r"(?<!\\)\|", line)[1:-1]
            tables[-1].append([re.sub(r"\\(.)", r"\1", cell.strip()) for cell in cells])
        previous = line
    return tables


class Tags(HTMLParser):
    """The tags of a page and the text of its cells, items and headings."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.cells: list[list[str]] = []
        self.items: list[str] = []
        self.headings: list[str] = []
        self._text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "tr":
            self.cells.append([])
        if tag in ("td", "th", "li", "h1", "h2", "pre"):
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if self._text is None:
            return
        text = "".join(self._text)
        if tag in ("td", "th"):
            self.cells[-1].append(text)
        elif tag == "li":
            self.items.append(text)
        elif tag in ("h1", "h2"):
            self.headings.append(text)
        self._text = None if tag in ("td", "th", "li", "h1", "h2", "pre") else self._text

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)
