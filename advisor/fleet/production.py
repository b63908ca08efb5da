"""What ``plan`` does with production verdicts: undo an advice that made its serving pods worse
(``revert``), and name the containers that are not opted in but throttled (``suggested``).

A revert needs evidence and something to go back to: a ``regressed`` verdict over a full
after-window (never ``unknown``: missing data, an unreachable Prometheus or a failed query never
undo anything; never ``provisional``: a short after-window is shown, not acted on) and the previous
advice the ConfigMap keeps. After a revert the ConfigMap keeps no previous advice, so the same
advice is never reverted twice in a row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from advisor.fleet.decide import Planned
from advisor.models import Production, WorkloadRef
from advisor.models.plan import NotReverted, PlanReason, Reverted, Suggested
from advisor.recommend.previous import Previous

#: kube-prometheus' CPUThrottlingHigh level: the share of CFS periods throttled worth a look
DEFAULT_SUGGEST_THROTTLED = 0.25


def revert(production: Production, previous: Previous | None) -> Reverted | NotReverted | None:
    """What production makes of a fitting advice: ``Reverted`` (the decision becomes ``revert``)
    for a regressed advice with a previous one kept, ``NotReverted`` (added to the decision's
    reason) for a regression that cannot be undone; None: nothing."""
    if production.verdict != "regressed" or production.provisional:
        return None
    if previous is None:
        return NotReverted(production.reason)
    return Reverted(production.reason, previous.summary)


@dataclass(frozen=True)
class Throttled:
    """One container's throttled share of CFS periods over the window, all its pods together."""

    workload: WorkloadRef
    container: str
    throttled: float


def suggestions(
    found: Iterable[Throttled], *, threshold: float, window: str, namespace: str | None = None
) -> list[Planned]:
    """A ``suggested`` decision for each container above ``threshold``, most throttled first."""
    above = sorted(
        (t for t in found if t.throttled > threshold),
        key=lambda t: (-t.throttled, str(t.workload), t.container),
    )
    return [
        Planned(
            t.workload,
            "suggested",
            PlanReason(Suggested(t.throttled, window, threshold)),
            container=t.container,
            namespace=namespace,
        )
        for t in above
    ]
