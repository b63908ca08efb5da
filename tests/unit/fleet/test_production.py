"""plan's production decisions: a revert only on a regression with a previous advice kept, and
suggestions above the threshold, most throttled first."""

from __future__ import annotations

import pytest

from advisor.fleet.decide import Planned
from advisor.fleet.production import Throttled, suggestions
from advisor.models import Production, WorkloadRef
from advisor.models.plan import Fits, PlanReason
from advisor.pipeline.production import judged_decision
from advisor.recommend.previous import Previous
from advisor.render.plan import plan_reason_text

FITS = Planned(
    WorkloadRef.parse("deployment/web"), "fits",
    PlanReason(Fits(4, 2, "advice", "limit", 2.0, False, "any pool", "latency")),
    container="server", configmap="advice",
)  # fmt: skip
KEPT = Previous({"TF_NUM_INTRAOP_THREADS": "4"}, "{}", "v1", None, "intra=4 inter=2")


def test_a_regression_with_a_previous_advice_is_a_revert_naming_the_figures() -> None:
    regressed = Production(verdict="regressed", reason="throttling 5% -> 40%: rose")
    found = judged_decision(FITS, regressed, KEPT)
    assert found.verdict == "revert"
    assert plan_reason_text(found.reason) == (
        "production regressed on this advice: throttling 5% -> 40%: rose; back to the previous "
        "advice (intra=4 inter=2)"
    )
    assert (str(found.workload), found.configmap) == ("deployment/web", "advice")


@pytest.mark.parametrize("verdict", ["unknown", "unchanged", "improved"])
def test_anything_but_a_regression_changes_nothing(verdict: str) -> None:
    assert judged_decision(FITS, Production(verdict=verdict, reason="x"), KEPT) == FITS


def test_a_provisional_regression_is_never_reverted() -> None:
    short = Production(verdict="regressed", provisional=True, reason="provisional (3.0 h): x")
    assert judged_decision(FITS, short, KEPT) == FITS
    assert judged_decision(FITS, short, None) == FITS


def test_a_regression_with_nothing_to_go_back_to_is_named() -> None:
    found = judged_decision(FITS, Production(verdict="regressed", reason="p99 up"), None)
    assert found.verdict == "fits"
    assert plan_reason_text(found.reason).endswith(
        "production regressed on this advice: p99 up, but no previous advice is kept"
    )


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
