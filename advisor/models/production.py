"""What the serving pods' own metrics said about an advice: before and after, and a verdict
(filled by ``advisor.pipeline`` from Prometheus for ``status`` and ``plan``; the rule is
``advisor.consumers.production``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from advisor.models.base import StrictModel

#: full after-windows in a row that must each be ``regressed`` before ``plan`` reverts (a
#: Flagger-style failure limit: one bad day is not enough)
REVERT_WINDOWS = 2
#: the test that decides (``advisor.consumers.daytest``): the after-window's figure against the
#: same figure on each of the earlier days at the same hours, a t-test with the days as samples
DayTestName = Literal["day-t"]

#: improved/unchanged/regressed by the rule in docs/deploy.md; unknown: the reason says why
ProductionVerdict = Literal["improved", "unchanged", "regressed", "unknown"]
#: what decided the verdict (p99, throttling) or, for unknown, what was missing or different
VerdictCause = Literal[
    "p99",
    "throttling",
    "load-changed",
    "load-missing",
    "latency-missing",
    "too-little-data",
    "no-after-window",
    "too-little-history",
    "not-previous",
    "partial-answer",
    "query-failed",
    "unavailable",
    "no-data-changed",
    "invalid-advice",
]


class Production(StrictModel):
    """One consuming container's production figures over a window before the advice's data
    changed and one after its pods started with it, at the same hours (null where not known)."""

    verdict: ProductionVerdict
    throttled_before: float | None = Field(
        default=None, ge=0, le=1, description="share of CFS periods throttled, before"
    )
    throttled_after: float | None = Field(default=None, ge=0, le=1)
    cpu_before: float | None = Field(
        default=None, ge=0, description="cores one pod used on average, before"
    )
    cpu_after: float | None = Field(default=None, ge=0)
    p99_before_ms: float | None = Field(
        default=None, ge=0, description="the workload's latency query, median over the window"
    )
    p99_after_ms: float | None = Field(default=None, ge=0)
    reason: str | None = Field(
        default=None, description="why the verdict: the figures that decided, or what was missing"
    )
    load_before: float | None = Field(
        default=None, ge=0, description="the workload's load query (req/s), mean over the window"
    )
    load_after: float | None = Field(default=None, ge=0)
    provisional: bool = Field(
        default=False,
        description="the after-window is shorter than a full window: shown, never acted on",
    )
    cause: VerdictCause | None = Field(
        default=None, description="what decided the verdict, or what made it unknown"
    )
    p_value: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="the test's one-sided p-value in the verdict's direction (unchanged: the "
        "smaller of the two), where it ran",
    )
    test: DayTestName | None = Field(
        default=None, description="the test that decided (null: none ran)"
    )
    alpha: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="its level for each direction: the false-alarm "
        "bound of one regressed (or improved) verdict when nothing changed",
    )
    days: int | None = Field(
        default=None, ge=0, description="the earlier days at the same hours it compared with"
    )
    window: int | None = Field(
        default=None,
        ge=1,
        description="which after-window since the rollout was judged (1: "
        "the first); each is judged on its own data, so pods turning over start no new one",
    )
    regressed_windows: int | None = Field(
        default=None,
        ge=0,
        description="full after-windows in a row, up to this one, judged regressed; a revert "
        "needs REVERT_WINDOWS",
    )
