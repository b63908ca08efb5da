"""What ``plan`` does with production verdicts: undo an advice that made its serving pods worse
(``revert``), and name the containers that are not opted in but throttled (``suggested``).

A revert needs evidence and something to go back to: a ``regressed`` verdict (never ``unknown``:
missing data, an unreachable Prometheus or a failed query never undo anything) and the previous
advice the ConfigMap keeps. After a revert the ConfigMap keeps no previous advice, so the same
advice is never reverted twice in a row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from advisor.models import PlanDecision, Production, WorkloadRef
from advisor.recommend.previous import Previous

#: kube-prometheus' CPUThrottlingHigh level: the share of CFS periods throttled worth a look
DEFAULT_SUGGEST_THROTTLED = 0.25
OPT_IN_HINT = "label it tf-thread-advisor.io/calibrate=true to calibrate it"


def revert(
    decision: PlanDecision, production: Production, previous: Previous | None
) -> PlanDecision:
    """``decision`` as production makes it: ``revert`` for a regressed advice with a previous
    one kept, else the same decision (its reason naming a regression that cannot be undone)."""
    if production.verdict != "regressed":
        return decision
    evidence = f"production regressed on this advice: {production.reason}"
    if previous is None:
        return decision.model_copy(
            update={"reason": f"{decision.reason}; {evidence}, but no previous advice is kept"}
        )
    return decision.model_copy(
        update={
            "decision": "revert",
            "reason": f"{evidence}; back to the previous advice ({previous.summary})",
            "job": None,
        }
    )


@dataclass(frozen=True)
class Throttled:
    """One container's throttled share of CFS periods over the window, all its pods together."""

    workload: WorkloadRef
    container: str
    throttled: float


def suggestions(
    found: Iterable[Throttled], *, threshold: float, window: str, namespace: str | None = None
) -> list[PlanDecision]:
    """A ``suggested`` decision for each container above ``threshold``, most throttled first."""
    above = sorted(
        (t for t in found if t.throttled > threshold),
        key=lambda t: (-t.throttled, str(t.workload), t.container),
    )
    return [
        PlanDecision(
            workload=t.workload,
            container=t.container,
            decision="suggested",
            namespace=namespace,
            reason=f"throttled in {t.throttled:.0%} of its CFS periods over the last {window} "
            f"(above {threshold:.0%}); {OPT_IN_HINT}",
        )
        for t in above
    ]
