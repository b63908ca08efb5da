"""Why a calibration ended and what it took, said where people look: the result's summary line
and table, the ConfigMap's provenance, ``status``'s TOOK and ``plan``'s fits line; older results
and advice without it stay readable."""

from __future__ import annotations

from advisor.models import CalibrationResult, TimeSplit
from advisor.models.plan import Fits, PlanReason
from advisor.recommend import build_recommendation, parse_configmap, render_configmap
from advisor.render.plan_reasons import plan_reason_text
from advisor.render.status import status_table
from advisor.render.table import text_summary
from advisor.render.words import stop_text, sweep_done_line, time_split_line, took_text
from testkit.fakeapi.samples import calibration_result
from tests.unit.render.samples import advice


def ended(**fields: object) -> CalibrationResult:
    return calibration_result(1, 1).model_copy(update=fields)


def test_a_settled_calibration_says_so_with_its_trials_and_seconds() -> None:
    result = ended(stopped="settled", elapsed_s=38.24)
    n = len(result.trials)
    assert stop_text(result) == f"settled after {n} trials in 38.2 s"
    assert sweep_done_line(result).endswith(f", settled after {n} trials in 38.2 s")
    assert f"ended: settled after {n} trials in 38.2 s" in text_summary(result)


def test_a_budget_ended_calibration_names_what_kept_it_open() -> None:
    result = ended(
        stopped="budget",
        elapsed_s=45.0,
        unsettled={"1/2": "noise", "2/1": "noise", "2/2": "unstable", "1/1": "incumbent"},
    )
    n = len(result.trials)
    assert stop_text(result) == (
        f"budget spent after {n} trials in 45.0 s, 1/2 and 2/1 still within noise; 2/2 unstable; "
        "1/1 ahead of the advice in force, not yet in enough paired rounds"
    )
    assert stop_text(ended(stopped="budget", elapsed_s=45.0)) == (
        f"budget spent after {n} trials in 45.0 s"
    )


def test_an_older_result_reads_as_before() -> None:
    result = calibration_result(1, 1)
    assert result.stopped is None and result.time_split is None
    assert stop_text(result) == f"after {len(result.trials)} trials in {result.elapsed_s:.1f} s"
    assert "ended:" not in text_summary(result)
    assert time_split_line(result) is None


def test_the_time_split_names_each_phase_it_has() -> None:
    split = TimeSplit(startup_s=2.94, inspect_s=1.1, screen_s=11.8, race_s=20.4, other_s=0.6)
    result = ended(stopped="settled", time_split=split)
    line = "time: 2.9 s TF start, 1.1 s model load, 11.8 s screen, 20.4 s race, 0.6 s other"
    assert time_split_line(result) == line
    assert line in text_summary(result)
    faked = TimeSplit(screen_s=11.8, race_s=20.4)  # no trial server, no inspection
    assert (
        time_split_line(ended(time_split=faked)) == "time: 11.8 s screen, 20.4 s race, 0.0 s other"
    )


def test_the_provenance_records_why_it_ended_and_old_advice_reads_without() -> None:
    result = ended(stopped="settled", elapsed_s=38.24)
    configmap = render_configmap(build_recommendation(result, advisor_version="t"), "advice")
    prov = parse_configmap(configmap).recommendation.provenance
    assert (prov.stopped, prov.elapsed_s) == ("settled", 38.2)
    older = render_configmap(
        build_recommendation(calibration_result(1, 1), advisor_version="t"), "advice"
    )
    assert parse_configmap(older).recommendation.provenance.stopped is None


def test_status_and_plan_say_what_the_last_calibration_took() -> None:
    assert took_text(38.2, "settled") == "38 s, settled"
    assert took_text(300.0, None) == "300 s"
    table = status_table([advice("a", took="38 s, settled")])
    assert "TOOK" in table and "38 s, settled" in table
    fits = Fits(1, 1, "advice", "limit", 1.0, False, "pool-a", "latency", 38.2, "settled")
    assert plan_reason_text_of(fits).endswith("latency; took 38 s, settled")
    older = Fits(1, 1, "advice", "limit", 1.0, False, "pool-a", "latency")
    assert plan_reason_text_of(older).endswith("pool-a, latency")


def plan_reason_text_of(cause: Fits) -> str:
    return plan_reason_text(PlanReason(cause))
