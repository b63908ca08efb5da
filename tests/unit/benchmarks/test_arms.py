"""benchmarks/arms.py: TF's default and its spelled-out twin share one process; the advice is
also measured as a second arm (A/A), and the pair is judged as one setting measured twice."""

from __future__ import annotations

from typing import Any

from benchmarks import arms
from benchmarks.pool import DEFAULT, Arm
from benchmarks.results import Pick, Pooled
from benchmarks.scenario_result import aa_of
from tests.unit.benchmarks import factory


def test_the_twin_of_tfs_default_shares_its_process_and_the_advice_gets_a_second_arm() -> None:
    grid = [Arm.of(i, j) for i in (1, 2) for j in (1, 2)]
    planned = arms.plan_arms([DEFAULT, Arm.of(1, 1), *grid], 2, [Arm.of(1, 2)])
    assert planned.shared == {"2/2": "default"}
    assert planned.second == {"1/2": "1/2#2"}
    measured = [s.key for s in planned.measured]
    assert measured == ["default", "1/1", "1/2", "2/1", "1/2#2"]  # no 2/2 process of its own
    assert planned.measured[-1] == Arm.of(1, 2).second_arm()
    assert planned.resolve("2/2") == "default" and planned.resolve("2/1") == "2/1"
    assert planned.pair("1/2") == ("1/2", "1/2#2")
    assert planned.pair("2/1") is None


def test_a_kept_default_advice_is_measured_as_the_default_twice() -> None:
    # calibrate spells a kept default out (2/2 on two CPUs): its arms are TF's default's
    planned = arms.plan_arms([DEFAULT, Arm.of(2, 2), Arm.of(1, 1)], 2, [Arm.of(2, 2)])
    assert planned.second == {"default": "default#2"}
    assert [s.key for s in planned.measured] == ["default", "1/1", "default#2"]
    assert planned.measured[-1].env({}) == DEFAULT.env({})  # no thread variable in either arm
    assert planned.pair("2/2") == ("default", "default#2")


def test_without_the_spelled_out_setting_nothing_is_shared() -> None:
    planned = arms.plan_arms([DEFAULT, Arm.of(1, 1), Arm.of(2, 1)], 2, [])
    assert planned.shared == {} and planned.second == {}
    assert [s.key for s in planned.measured] == ["default", "1/1", "2/1"]


def test_contenders_are_resolved_and_bring_their_second_arm_once() -> None:
    planned = arms.plan_arms([DEFAULT, Arm.of(1, 1), Arm.of(2, 2)], 2, [Arm.of(1, 1)])
    assert planned.contenders(["2/2", "1/1", "default", "1/1"]) == ["default", "1/1", "1/1#2"]


def test_shared_keys_carry_the_very_same_figures() -> None:
    planned = arms.plan_arms([DEFAULT, Arm.of(2, 2)], 2, [])
    stats: dict[str, Any] = {"default": {"p99_ms": 5.0}}
    planned.share(stats)
    assert stats["2/2"] is stats["default"]
    empty: dict[str, Any] = {}
    planned.share(empty)  # a look that did not measure the owner adds nothing
    assert empty == {}


def _stats(p99: float, rps: float, rounds: int = 5) -> Pooled:
    return factory.pooled({"p99_ms": p99, "throughput_rps": rps, "rounds": rounds})


def test_the_aa_figure_is_how_far_two_arms_of_one_setting_are_apart_either_way() -> None:
    stats = {"1/1": _stats(10.0, 100.0), "1/1#2": _stats(12.0, 90.0, rounds=13)}
    latency = arms.aa_figures(stats, ("1/1", "1/1#2"), "latency")
    assert latency == {
        "arms": ["1/1", "1/1#2"],
        "values": [10.0, 12.0],
        "rounds": [5, 13],
        "noise": 0.2,
    }
    assert arms.aa_figures(stats, ("1/1", "1/1#2"), "throughput")["noise"] == 0.111


def test_a_scenario_reports_its_aa_beside_the_verdict_and_whether_it_exceeds_the_tolerance() -> (
    None
):
    planned = arms.plan_arms([DEFAULT, Arm.of(1, 1), Arm.of(2, 2)], 2, [Arm.of(1, 1)])
    stats = {
        "default": _stats(20.0, 50.0),
        "1/1": _stats(10.0, 100.0),
        "1/1#2": _stats(10.3, 97.0),
    }
    planned.share(stats)
    advice = Pick(setting="1/1", value=10.0)
    close = aa_of(stats, planned, advice, "latency")
    assert close is not None
    assert close.setting == "1/1" and close.noise == 0.03
    assert close.beyond_tolerance is False
    stats["1/1#2"] = _stats(12.0, 80.0)
    far = aa_of(stats, planned, advice, "latency")
    assert far is not None and far.beyond_tolerance is True
    # no advice, or one without a second arm: nothing to report
    assert aa_of(stats, planned, None, "latency") is None
    assert aa_of(stats, planned, Pick(setting="2/2", value=20.0), "latency") is None
