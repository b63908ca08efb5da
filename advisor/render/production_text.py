"""Production's figures and evidence as every output words them (``status``, ``plan``, the
revert Event): one wording, so the table, the plan and the Event cannot say it differently."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from advisor.models import Production
from advisor.models.production import REVERT_WINDOWS


def share(value: float | None) -> str:
    return "?" if value is None else f"{value:.0%}"


def rate(value: float | None) -> str:
    """Requests per second: whole numbers from 10 up, two significant figures below."""
    if value is None:
        return "?"
    return f"{value:.0f}" if abs(value) >= 10 else f"{value:.2g}"


def known(value: float | None, digits: int = 0) -> str:
    """A figure that may not be known: ``?`` then."""
    return "?" if value is None else f"{value:.{digits}f}"


def changes(production: Production, also: Literal["load", "cpu"]) -> list[str]:
    """``throttled 41% -> 3%``, ``p99 122 -> 58 ms`` and ``also`` (``load 40 -> 41 req/s`` in
    ``status``, ``CPU 0.50 -> 0.40 cores per pod`` in the revert Event), each where before or
    after is known."""
    p = production
    figures: list[tuple[str, float | None, float | None, Callable[[float | None], str], str]] = [
        ("throttled", p.throttled_before, p.throttled_after, share, ""),
        ("p99", p.p99_before_ms, p.p99_after_ms, known, " ms"),
        ("load", p.load_before, p.load_after, rate, " req/s")
        if also == "load"
        else ("CPU", p.cpu_before, p.cpu_after, _cores, " cores per pod"),
    ]
    return [
        f"{what} {worded(before)} -> {worded(after)}{unit}"
        for what, before, after, worded, unit in figures
        if before is not None or after is not None
    ]


def _cores(value: float | None) -> str:
    return known(value, 2)


def evidence(production: Production) -> str:
    """``day t-test, 9 days: p 0.003 at level 0.05, 2/2 windows regressed``: the test, the
    earlier days it compared with, its p-value and level, and for a regression how many of the
    full windows in a row a revert needs; "" where no test ran. Short: a plan's reason holds it
    for every consumer of an advice."""
    p = production
    if p.test is None or p.p_value is None or p.alpha is None:
        return ""
    shown = "p<0.001" if p.p_value < 0.001 else f"p {p.p_value:.2g}"
    said = f"day t-test, {p.days} days: {shown} at level {p.alpha:g}"
    if p.regressed_windows:
        said += f", {p.regressed_windows}/{REVERT_WINDOWS} windows regressed"
    return said
