"""What ``plan`` does with production verdicts: undo an advice that made its serving pods worse
(``revert``), and name the containers that are not opted in but throttled (``suggested``).

A revert needs evidence and something to go back to, and is bounded:

- evidence: a ``regressed`` verdict on ``REVERT_WINDOWS`` full after-windows in a row (a
  Flagger-style failure limit: one bad day is said, not acted on); any other (``unknown``:
  missing data, too little history, an unreachable Prometheus, a failed query; ``unchanged``;
  ``improved``; a provisional verdict from a short after-window) never undoes anything;
- one advice (ConfigMap) read by several containers is judged once, from all of them: reverted
  only when none improved and at least one regression stays significant once corrected for the
  number of consumers tested (Holm's procedure at the test's level: each consumer tested at the
  full level would make a shared advice the likelier to be reverted the more read it), since
  writing it back changes every consumer;
- something to go back to: the previous advice the ConfigMap keeps. After a revert it keeps
  none, so the same advice is never reverted twice in a row;
- a workload annotated ``tf-thread-advisor.io/revert: "false"`` opts its advice out (the verdict
  is still shown);
- precedence over calibrating: an advice ``plan`` would calibrate again (one measured by a
  hand-written target, one older than ``--max-age``) is reverted now and calibrated by the next
  plan, since a Job may take hours and may well advise the same; but where the workload's own
  calibration spec changed since the advice, before and after differ by more than the advice, and
  it is calibrated, not reverted;
- at most ``--max-reverts`` advice per plan (``RevertBudget``): many regressions at once are more
  likely a change under every workload (a node-pool upgrade, a new kernel) than many bad advice.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from advisor.consumers.daytest import holm
from advisor.consumers.production import ALPHA, JUDGED
from advisor.fleet.decide import Planned
from advisor.models import Production, WorkloadRef
from advisor.models.plan import (
    Confounded,
    ConsumerVerdict,
    Corrected,
    Helped,
    NoPrevious,
    NotReverted,
    NotRevertedWhy,
    NotYet,
    OptedOut,
    PlanReason,
    Reverted,
    RevertLimit,
    SpecDifference,
    Suggested,
    Unreadable,
)
from advisor.models.production import REVERT_WINDOWS
from advisor.recommend.previous import Previous

#: kube-prometheus' CPUThrottlingHigh level: the share of CFS periods throttled worth a look
DEFAULT_SUGGEST_THROTTLED = 0.25
#: reverts per plan unless told: a nightly plan undoes one regressed advice a night. One new
#: advice per node pool lands between two plans at the default --max-running 1; a revert needs
#: ``REVERT_WINDOWS`` full after-windows regressed in a row, and an after-window within
#: ``advisor.consumers.production_windows.FULL_SLACK`` (warm-up plus an hour) of its end is a
#: full one, so a real regression is undone by the second nightly plan after it landed where its
#: calibration and rollout took less than that slack (else the night after). Several at once look
#: like a change under every workload (a node-pool upgrade), which a person should see (plan
#: exits 19) before more are undone
DEFAULT_MAX_REVERTS = 1


def regressed(production: Production) -> bool:
    """A regression to say in the plan: ``regressed``, and not provisional (a verdict from an
    after-window shorter than a full one says so and never reverts)."""
    return production.verdict == "regressed" and not production.provisional


def persistent(production: Production) -> bool:
    """The verdict that may undo an advice: regressed on ``REVERT_WINDOWS`` full windows in a
    row."""
    return regressed(production) and (production.regressed_windows or 0) >= REVERT_WINDOWS


def significant(verdicts: Sequence[ConsumerVerdict]) -> list[bool]:
    """Which consumers' persistent regressions stay significant under Holm's procedure over
    every consumer a test judged (one that is not a persistent regression counts as p 1: it
    never supports a revert)."""
    tested = [v for v in verdicts if v.production.cause in JUDGED]
    ps = [
        v.production.p_value
        if persistent(v.production) and v.production.p_value is not None
        else 1.0
        for v in tested
    ]
    kept = dict(zip((id(v) for v in tested), holm(ps, ALPHA), strict=True))
    return [kept.get(id(v), False) for v in verdicts]


@dataclass
class RevertBudget:
    """The reverts one plan may still decide (``--max-reverts``), across its namespaces."""

    limit: int = DEFAULT_MAX_REVERTS
    used: int = 0

    def take(self) -> bool:
        if self.used >= self.limit:
            return False
        self.used += 1
        return True

    def give_back(self) -> None:
        """A revert taken but not written (the ConfigMap changed since, or the API server
        refused the write): nothing was undone, so it does not count against the limit."""
        self.used = max(0, self.used - 1)


def revert(
    verdicts: Sequence[ConsumerVerdict],
    previous: Previous | None,
    *,
    opted_out: Sequence[WorkloadRef] = (),
    opt_out_problem: Unreadable | None = None,
    confounded: Sequence[SpecDifference] = (),
    budget: RevertBudget | None = None,
) -> Reverted | NotReverted | None:
    """What production makes of one advice, judged on each of its consumers (``verdicts``):
    ``Reverted`` (its decisions become ``revert``), ``NotReverted`` (added to their reasons: a
    regression left as it is, and why); None: nothing regressed."""
    if not any(regressed(v.production) for v in verdicts):
        return None
    judged = tuple(verdicts)
    why: NotRevertedWhy | None = None
    # a provisional improvement counts too, deliberately: a revert changes every consumer, and
    # a short window's improvement is reason enough not to undo the advice for it yet
    # the reasons that hold whatever the next windows say come before those that may pass
    if any(v.production.verdict == "improved" for v in verdicts):
        why = Helped()
    elif opted_out or opt_out_problem:
        why = OptedOut(tuple(opted_out), opt_out_problem)
    elif confounded:
        why = Confounded(tuple(confounded))
    elif previous is None:
        why = NoPrevious()
    elif not any(persistent(v.production) for v in verdicts):
        most = max((v.production.regressed_windows or 0) for v in verdicts)
        why = NotYet(most, REVERT_WINDOWS)
    elif not any(significant(verdicts)):
        why = Corrected(sum(v.production.cause in JUDGED for v in verdicts), ALPHA)
    elif budget is not None and not budget.take():
        why = RevertLimit(budget.limit)
    if why is not None or previous is None:
        return NotReverted(judged, why or NoPrevious())
    return Reverted(judged, previous.summary)


def revert_limited(decision: Planned) -> bool:
    """Whether ``decision``'s regressed advice was left as it is for ``--max-reverts``."""
    return any(
        isinstance(part, NotReverted) and isinstance(part.why, RevertLimit)
        for part in decision.reason.added
    )


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
            PlanReason(Suggested(t.throttled, window, threshold)),
            container=t.container,
            namespace=namespace,
        )
        for t in above
    ]
