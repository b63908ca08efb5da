"""What the sweep optimises: each objective is one class here, found by its name in a registry.

An objective says which measure ranks the settings (p99 ms, requests/s), which way is better, and
whether a setting must first meet a bound (the SLO objective's p99 bound, ``--p99-ms``): settings
that meet it rank ahead of those that miss it, and when none does the settings are ranked by the
bound's own measure instead (the nearest to meeting it wins). The search, the oneDNN verdict, the
report's words and the CLI's choices all ask the objective, so adding one is one registered class
and its tests: the models accept its name, ``--objective`` offers it, and every sentence speaks
its measure.

Pure (no advisor imports): the models validate objective names against the registry, so it sits
below them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar, Protocol, TypeVar


class Figures(Protocol):
    """What a measure is read from: a trial, a setting's medians, or one Measurement."""

    @property
    def p50_ms(self) -> float | None: ...

    @property
    def p99_ms(self) -> float | None: ...

    @property
    def throughput_rps(self) -> float | None: ...


class Costed(Figures, Protocol):
    """A setting's figures and its thread cost, the ranking's tie-break."""

    @property
    def threads(self) -> int: ...


S = TypeVar("S", bound=Costed)
Kind = TypeVar("Kind", bound="type[Objective]")


@dataclass(frozen=True)
class Measure:
    """One number a setting can be judged by, and the words it is written with."""

    #: names it before a figure: ``p99 3.34 ms``, ``throughput 283 req/s``
    what: str
    #: a chart's heading for it
    title: str
    #: its shortest name, where a column says by how much it changed (``p99 27% lower``)
    short: str
    unit: str
    #: decimals a figure is written with
    digits: int
    lower_is_better: bool
    #: the figure itself, None when it was not measured
    read: Callable[[Figures], float | None]

    def value(self, figures: Figures) -> float:
        """The figure, or the worst possible one when it is missing (it must not win)."""
        found = self.read(figures)
        if found is not None:
            return found
        return math.inf if self.lower_is_better else 0.0

    def key(self, item: Costed) -> tuple[float, int]:
        """Best first, fewer threads first on equal values."""
        found = self.value(item)
        return (found if self.lower_is_better else -found, item.threads)

    def within(self, figures: Figures, bound: float, slack: float = 0.0) -> bool:
        """The figure is on the good side of ``bound``, loosened by ``slack`` (relative)."""
        if self.lower_is_better:
            return self.value(figures) <= bound * (1 + slack)
        return self.value(figures) >= bound * (1 - slack)

    @property
    def named_unit(self) -> str:
        """``ms p99``, ``req/s``: the unit after bare figures, with the short name when the unit
        alone does not say what was measured."""
        return self.unit if self.short == self.unit else f"{self.unit} {self.short}"

    @property
    def best(self) -> str:
        """``lowest``, ``highest``."""
        return "lowest" if self.lower_is_better else "highest"

    def limit(self, bound: float) -> str:
        """``p99 <= 40 ms``: a bound on this measure, met."""
        return f"{self.what} {'<=' if self.lower_is_better else '>='} {bound:g} {self.unit}"

    def beyond(self, bound: float) -> str:
        """``p99 over 40 ms``: a bound on this measure, missed."""
        return f"{self.what} {'over' if self.lower_is_better else 'under'} {bound:g} {self.unit}"


P99 = Measure(
    what="p99",
    title="p99 latency",
    short="p99",
    unit="ms",
    digits=2,
    lower_is_better=True,
    read=lambda f: f.p99_ms,
)

THROUGHPUT = Measure(
    what="throughput",
    title="throughput",
    short="req/s",
    unit="req/s",
    digits=0,
    lower_is_better=False,
    read=lambda f: f.throughput_rps,
)


class Objective:
    """What "best" means: ``ranks_by`` among the settings that meet ``bounded_by``'s bound.

    A subclass declares the class variables; the behaviour follows from them. Instances hold no
    state: the registry keeps one of each, and any two of a class are equal.
    """

    #: as the CLI, the models and the ConfigMap's provenance spell it
    name: ClassVar[str]
    #: what it picks, for ``--objective``'s help
    help: ClassVar[str]
    ranks_by: ClassVar[Measure]
    #: the measure a setting must keep within the bound (``p99_slo_ms``) to be admissible; None:
    #: every setting is, and the objective takes no bound
    bounded_by: ClassVar[Measure | None] = None

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"<objective {self.name}>"

    def measure(self, met: bool = True) -> Measure:
        """What settings are ranked by: ``ranks_by``, or the bound's measure when no setting met
        the bound (the nearest to meeting it wins then)."""
        if met or self.bounded_by is None:
            return self.ranks_by
        return self.bounded_by

    def value(self, figures: Figures, met: bool = True) -> float:
        return self.measure(met).value(figures)

    def lower_is_better(self, met: bool = True) -> bool:
        return self.measure(met).lower_is_better

    def admits(self, figures: Figures, bound: float | None, slack: float = 0.0) -> bool:
        """Whether a setting meets the bound (loosened by ``slack``, relative); every setting
        does when the objective has none. Without a bound to meet, none does."""
        if self.bounded_by is None:
            return True
        return bound is not None and self.bounded_by.within(figures, bound, slack)

    def met(self, field: Iterable[Figures], bound: float | None) -> bool:
        """Whether any of ``field`` meets the bound: then the settings are ranked by
        ``ranks_by``, else by the bound's measure."""
        return self.bounded_by is None or any(self.admits(s, bound) for s in field)

    def rank(self, stats: Iterable[S], bound: float | None = None) -> list[S]:
        """Best first by the objective alone (no noise band), fewer threads first on equal
        values: the admissible settings by ``ranks_by``, then the rest by the bound's measure."""
        items = list(stats)
        meeting = [s for s in items if self.admits(s, bound)]
        missing = [s for s in items if not self.admits(s, bound)]
        return sorted(meeting, key=self.measure(True).key) + sorted(
            missing, key=self.measure(False).key
        )


_REGISTRY: dict[str, Objective] = {}

#: name -> objective, in the order they are offered
OBJECTIVES: Mapping[str, Objective] = MappingProxyType(_REGISTRY)


def register(cls: Kind) -> Kind:
    """Class decorator: offers the objective under its name everywhere."""
    if cls.name in _REGISTRY:
        raise ValueError(f"objective {cls.name!r} is registered twice")
    _REGISTRY[cls.name] = cls()
    return cls


def named(name: str) -> Objective:
    """The objective called ``name``; ValueError naming the known ones otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown objective {name!r} (one of {', '.join(_REGISTRY)})") from None


def bounded_names() -> str:
    """The objectives that take a bound (``--p99-ms``), as a sentence names them: ``slo``, or
    ``a or b``; the help and the refusal of a bound for another objective say the same."""
    return " or ".join(
        name for name, objective in _REGISTRY.items() if objective.bounded_by is not None
    )


@register
class Latency(Objective):
    name = "latency"
    help = "lowest p99"
    ranks_by = P99


@register
class Throughput(Objective):
    name = "throughput"
    help = "most requests/s"
    ranks_by = THROUGHPUT


@register
class Slo(Objective):
    """Throughput under a p99 bound; when no setting meets it, the lowest p99."""

    name = "slo"
    help = "most requests/s with p99 <= --p99-ms"
    ranks_by = THROUGHPUT
    bounded_by = P99


#: what the sweep optimises when nobody says
DEFAULT_OBJECTIVE = Latency.name
