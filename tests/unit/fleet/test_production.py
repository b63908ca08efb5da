"""plan's production decisions: what a regressed advice becomes (revert, or left as it is and
why, in that precedence), one advice judged once from all its consumers, the reverts a plan may
make, and suggestions above the threshold, most throttled first."""

from __future__ import annotations

import pytest

from advisor.fleet.decide import Planned
from advisor.fleet.production import (
    DEFAULT_MAX_REVERTS,
    RevertBudget,
    Throttled,
    revert,
    revert_limited,
    suggestions,
)
from advisor.models import Production, WorkloadRef
from advisor.models.plan import (
    Calibrate,
    Confounded,
    ConsumerVerdict,
    Corrected,
    Fits,
    HandWritten,
    Helped,
    NoPrevious,
    NotReverted,
    NotYet,
    OptedOut,
    PlanReason,
    Reverted,
    RevertLimit,
    SpecChanged,
    Unreadable,
)
from advisor.pipeline.production import judged_decision
from advisor.recommend.previous import Previous
from advisor.render.plan_reasons import plan_reason_text, revert_event_text

WEB, API = WorkloadRef.parse("deployment/web"), WorkloadRef.parse("deployment/api")
FITS = Planned(
    WEB,
    PlanReason(Fits(4, 2, "advice", "limit", 2.0, False, "any pool", "latency")),
    container="server", configmap="advice",
)  # fmt: skip
HAND_WRITTEN = "the advice in advice was measured by a hand-written target, not for this workload"
CPU_CHANGED = SpecChanged("limits.cpu", "CPU limit", "2", "4")
CALIBRATE = Planned(
    WEB, PlanReason(Calibrate((HandWritten("advice"),))), container="server",
    configmap="advice", job_name="tfta-web-1",
)  # fmt: skip
KEPT = Previous({"TF_NUM_INTRAOP_THREADS": "4"}, "{}", "v1", None, "intra=4 inter=2")


def judged(
    workload: WorkloadRef, verdict: str, reason: str = "x", *, p: float = 0.001, windows: int = 2
) -> ConsumerVerdict:
    """A verdict as the day test gives it: a regression on ``windows`` full windows in a row."""
    tested = verdict != "unknown"
    return ConsumerVerdict(
        workload,
        "server",
        Production(
            verdict=verdict,  # type: ignore[arg-type]
            reason=reason,
            cause="throttling" if tested else "too-little-data",
            p_value=p if tested else None,
            regressed_windows=(windows if verdict == "regressed" else 0) if tested else None,
        ),
    )


WORSE = judged(WEB, "regressed", "throttling 5% -> 40%: rose")


def test_a_regression_with_a_previous_advice_is_a_revert_naming_the_figures() -> None:
    found = judged_decision(FITS, revert([WORSE], KEPT))
    assert found.verdict == "revert"
    assert plan_reason_text(found.reason) == (
        "production regressed on this advice: throttling 5% -> 40%: rose; back to the previous "
        "advice (intra=4 inter=2)"
    )
    assert (str(found.workload), found.configmap) == ("deployment/web", "advice")


@pytest.mark.parametrize("verdict", ["unknown", "unchanged", "improved"])
def test_anything_but_a_regression_changes_nothing(verdict: str) -> None:
    assert revert([judged(WEB, verdict)], KEPT) is None
    assert judged_decision(FITS, revert([judged(WEB, verdict)], KEPT)) == FITS


def test_a_provisional_regression_is_never_reverted() -> None:
    short = Production(verdict="regressed", provisional=True, reason="provisional (3.0 h): x")
    assert revert([ConsumerVerdict(WEB, "server", short)], KEPT) is None
    assert revert([ConsumerVerdict(WEB, "server", short), WORSE], KEPT) is not None


def test_a_regression_on_one_full_window_is_said_and_not_reverted_yet() -> None:
    once = judged(WEB, "regressed", "throttling 5% -> 40%: rose", windows=1)
    outcome = revert([once], KEPT)
    assert outcome == NotReverted((once,), NotYet(1, 2))
    assert plan_reason_text(judged_decision(FITS, outcome).reason).endswith(
        "not reverted yet: regressed in 1 full after-window(s) in a row, a revert needs 2"
    )
    # one consumer regressed twice is enough, though another regressed once
    assert isinstance(revert([once, judged(API, "regressed")], KEPT), Reverted)
    # a reason that holds whatever the next window says is the one said
    assert revert([once], KEPT, opted_out=[WEB]) == NotReverted((once,), OptedOut((WEB,)))
    assert revert([once], None) == NotReverted((once,), NoPrevious())


def test_a_shared_advice_is_corrected_for_its_consumers_with_holm() -> None:
    """p 0.03 is a regression for one consumer alone; among three tested consumers Holm asks
    the smallest p for 0.05/3, so it does not stand, and the advice is kept."""
    weak = judged(WEB, "regressed", "p99 up", p=0.03)
    same = [
        judged(API, "unchanged", p=0.4),
        judged(WorkloadRef.parse("deployment/c"), "unchanged", p=0.5),
    ]
    assert isinstance(revert([weak], KEPT), Reverted)
    outcome = revert([weak, *same], KEPT)
    assert outcome == NotReverted((weak, *same), Corrected(3, 0.05))
    assert plan_reason_text(judged_decision(FITS, outcome).reason).endswith(
        "not reverted: corrected for judging 3 consumers (Holm, level 0.05) no regression stays "
        "significant"
    )
    # an unknown verdict is no test: it does not count among them
    unknown = judged(API, "unknown")
    assert isinstance(revert([weak, unknown], KEPT), Reverted)
    strong = judged(WEB, "regressed", "p99 up", p=0.01)
    assert isinstance(revert([strong, *same], KEPT), Reverted)


def test_the_evidence_is_named_in_the_plan_and_the_event() -> None:
    found = Production(
        verdict="regressed", reason="p99 190 ms vs 110 ms before: +73%", cause="p99",
        p_value=0.004, test="day-t", alpha=0.05, days=9, window=2, regressed_windows=2,
    )  # fmt: skip
    decided = judged_decision(FITS, revert([ConsumerVerdict(WEB, "server", found)], KEPT))
    evidence = "day t-test, 9 days: p 0.004 at level 0.05, 2/2 windows regressed"
    assert plan_reason_text(decided.reason) == (
        f"production regressed on this advice: p99 190 ms vs 110 ms before: +73%; {evidence}; "
        "back to the previous advice (intra=4 inter=2)"
    )
    assert evidence in revert_event_text(decided.reason)


def test_a_regression_with_nothing_to_go_back_to_is_named() -> None:
    found = judged_decision(FITS, revert([judged(WEB, "regressed", "p99 up")], None))
    assert found.verdict == "fits"
    assert plan_reason_text(found.reason).endswith(
        "production regressed on this advice: p99 up, but no previous advice is kept"
    )


def test_a_regressed_advice_plan_would_calibrate_is_reverted_first() -> None:
    """A hand-written target's advice (every advice before fleet mode): reverted now, its Job
    left to the next plan (which finds the previous advice, and calibrates)."""
    found = judged_decision(CALIBRATE, revert([WORSE], KEPT))
    assert (found.verdict, found.job_name) == ("revert", None)
    assert plan_reason_text(found.reason).endswith(
        f"back to the previous advice (intra=4 inter=2); calibrated by the next plan "
        f"({HAND_WRITTEN})"
    )


def test_a_changed_spec_confounds_the_comparison_so_it_is_calibrated() -> None:
    outcome = revert([WORSE], KEPT, confounded=[CPU_CHANGED])
    assert outcome == NotReverted((WORSE,), Confounded((CPU_CHANGED,)))
    found = judged_decision(CALIBRATE, outcome)
    assert (found.verdict, found.job_name) == ("calibrate", "tfta-web-1")
    assert "so before and after are not comparable: it is calibrated instead" in (
        plan_reason_text(found.reason)
    )


def test_a_shared_advice_is_reverted_only_when_none_improved() -> None:
    """One ConfigMap, three consumers: reverting changes them all."""
    same, better = judged(API, "unchanged"), judged(API, "improved", "p99 down")
    unknown = judged(API, "unknown", "too little data")
    assert isinstance(revert([WORSE, same], KEPT), Reverted)
    assert isinstance(revert([same, WORSE, unknown], KEPT), Reverted)
    assert revert([WORSE, better], KEPT) == NotReverted((WORSE, better), Helped())
    assert revert([same, unknown], KEPT) is None
    text = plan_reason_text(judged_decision(FITS, revert([WORSE, better], KEPT)).reason)
    assert "for deployment/web (server) of its 2 consumers" in text
    assert text.endswith("kept: it improved for deployment/api (server)")


def test_an_opted_out_consumer_keeps_the_advice_and_the_verdict_is_shown() -> None:
    outcome = revert([WORSE], KEPT, opted_out=[WEB])
    assert outcome == NotReverted((WORSE,), OptedOut((WEB,)))
    text = plan_reason_text(judged_decision(FITS, outcome).reason)
    assert "throttling 5% -> 40%: rose" in text
    assert text.endswith(
        'deployment/web opts out with annotation tf-thread-advisor.io/revert: "false"'
    )
    unreadable = Unreadable(API, "annotation ... must be")
    bad = revert([WORSE], KEPT, opt_out_problem=unreadable)
    assert bad == NotReverted((WORSE,), OptedOut((), unreadable))


def test_precedence_of_the_reasons_to_keep_a_regressed_advice() -> None:
    """Helped, opted out, confounded, nothing kept, the limit: the first that holds is said, and
    the limit is spent on real reverts only."""
    better = judged(API, "improved")
    budget = RevertBudget(limit=1)

    def why(verdicts: list[ConsumerVerdict], **left: object) -> object:
        given = {"opted_out": [WEB], "confounded": [CPU_CHANGED], **left}
        outcome = revert(
            verdicts, None, opted_out=given["opted_out"],  # type: ignore[arg-type]
            confounded=given["confounded"], budget=budget,  # type: ignore[arg-type]
        )  # fmt: skip
        assert isinstance(outcome, NotReverted)
        return outcome.why

    assert why([WORSE, better]) == Helped()
    assert why([WORSE]) == OptedOut((WEB,))
    assert why([WORSE], opted_out=[]) == Confounded((CPU_CHANGED,))
    assert why([WORSE], opted_out=[], confounded=[]) == NoPrevious()
    assert budget.used == 0


def test_the_budget_bounds_reverts_per_plan_and_counts_the_rest() -> None:
    budget = RevertBudget(limit=2)
    outcomes = [revert([WORSE], KEPT, budget=budget) for _ in range(4)]
    assert [type(o) for o in outcomes] == [Reverted, Reverted, NotReverted, NotReverted]
    assert outcomes[3] == NotReverted((WORSE,), RevertLimit(2))
    assert budget.used == 2
    budget.give_back()  # a revert not written back: its slot is free again
    assert isinstance(revert([WORSE], KEPT, budget=budget), Reverted)
    limited = judged_decision(FITS, outcomes[3])
    assert revert_limited(limited) and not revert_limited(FITS)
    assert plan_reason_text(limited.reason).endswith("not reverted: --max-reverts 2 reached")
    assert revert([WORSE], KEPT, budget=RevertBudget(limit=0)) == NotReverted(
        (WORSE,), RevertLimit(0)
    )
    assert DEFAULT_MAX_REVERTS == 1


def test_suggestions_above_the_threshold_most_throttled_first() -> None:
    found = suggestions(
        [
            Throttled(WorkloadRef.parse("deployment/a"), "server", 0.30),
            Throttled(WorkloadRef.parse("deployment/b"), "server", 0.25),  # at the threshold
            Throttled(WorkloadRef.parse("statefulset/c"), "main", 0.90),
        ],
        threshold=0.25,
        window="24h",
    )
    assert [(str(d.workload), d.verdict) for d in found] == [
        ("statefulset/c", "suggested"),
        ("deployment/a", "suggested"),
    ]
    assert plan_reason_text(found[0].reason).startswith(
        "throttled in 90% of its CFS periods over the last 24h"
    )
