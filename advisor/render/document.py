"""A command's result as every output format sees it: a ``View``.

A view holds one typed result and offers it three ways: its data (what JSON and YAML dump), a
document for people (tables, sentences and preformatted text, which the plain text, Markdown and
HTML formats lay out each their own way) and, where a spreadsheet has a use for it, records (one
flat table of raw values, for CSV). The formats in ``advisor.render.formats`` know views only, so
each command's view is written once and gets every format that fits it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel

#: what a view can offer beyond its data and document, for ``Format.needs``: ``tables`` (its
#: document is tables, so the plain format is called ``table``), ``prose`` (its document is
#: text, so it is called ``text``) and ``records`` (CSV)
Capability = str
TABLES: Capability = "tables"
PROSE: Capability = "prose"
RECORDS: Capability = "records"


@dataclass(frozen=True)
class Grid:
    """A table: a header and rows of cells, already in words (``-`` for nothing)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    #: a heading, for the formats that have headings (plain text shows none)
    title: str | None = None

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"a row of {len(row)} cells under {len(self.columns)} columns")


@dataclass(frozen=True)
class Lines:
    """Sentences, one a line: reasons, problems, a note."""

    lines: tuple[str, ...]
    #: a heading, for the formats that have headings (plain text shows none)
    title: str | None = None


@dataclass(frozen=True)
class Preformatted:
    """Text laid out already (a fixed-width summary): shown as it is."""

    text: str


Block = Grid | Lines | Preformatted


@dataclass(frozen=True)
class Document:
    """What a person reads, in order."""

    title: str
    blocks: tuple[Block, ...]


class View(ABC):
    """One command's typed result, as the formats need it."""

    #: beyond data and document: see ``Capability``
    provides: ClassVar[frozenset[Capability]] = frozenset()

    @abstractmethod
    def data(self) -> Any:
        """The result as JSON-compatible data (``model_dump(mode="json")``)."""

    @abstractmethod
    def document(self) -> Document:
        """The result for people."""

    def records(self) -> Grid:
        """One flat table of raw values (views that provide ``records``)."""
        raise NotImplementedError(f"{type(self).__name__} has no records")


class ModelView(View):
    """A view of a pydantic model whose JSON is its dump and whose document is a text summary."""

    provides: ClassVar[frozenset[Capability]] = frozenset({PROSE})
    title: ClassVar[str] = "tf-thread-advisor"

    def __init__(self, model: BaseModel) -> None:
        self.model = model

    def data(self) -> Any:
        return self.model.model_dump(mode="json")

    def document(self) -> Document:
        return Document(self.title, (Preformatted(self.summary()),))

    @abstractmethod
    def summary(self) -> str:
        """The text people read."""


def grid(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str | None = None) -> Grid:
    """A Grid from lists."""
    return Grid(tuple(columns), tuple(tuple(row) for row in rows), title)
