"""The stability benchmark's parts that need no TensorFlow: what each run's calibration took, read
back from the stored advice, the bursty neighbour it can run beside, which changes its judge
measures, and the judge's verdict on a change from given figures."""

from __future__ import annotations

import time
from typing import Any

import psutil
import pytest

from advisor.models import TENSORFLOW, ThreadSetting
from advisor.recommend import build_recommendation, render_configmap
from benchmarks import figures, stability
from benchmarks.pool import Arm
from testkit.fakeapi.samples import calibration_result
from tests.unit.benchmarks import factory


def test_what_a_run_took_is_read_from_the_stored_provenance() -> None:
    result = calibration_result(1, 1).model_copy(update={"stopped": "settled", "elapsed_s": 41.26})
    stored = render_configmap(build_recommendation(result, advisor_version="t"), "advice")
    assert stability.calibration_took(stored) == (41.3, "settled")
    older = render_configmap(
        build_recommendation(calibration_result(1, 1), advisor_version="t"), "advice"
    )
    assert stability.calibration_took(older) == (round(calibration_result(1, 1).elapsed_s, 1), None)
    assert stability.calibration_took({}) == (None, None)
    assert stability.calibration_took({"apiVersion": "v1", "kind": "ConfigMap"}) == (None, None)


def test_the_neighbour_burns_cpu_while_the_runs_run_and_is_gone_after() -> None:
    me = psutil.Process()
    with stability.neighbour(None):
        assert me.children() == []
    with stability.neighbour(0.5):
        (child,) = me.children()
        time.sleep(2.5)
        burnt = sum(child.cpu_times()[:2])
    assert burnt > 0.3  # half of 2.5 s, give or take a burst and a loaded machine
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert me.children() == []


@pytest.mark.parametrize(
    ("ratio", "noise", "objective", "expected"),
    [
        (0.80, 0.10, "latency", ("confirmed", "better beyond noise")),
        (1.08, 0.10, "latency", ("confirmed", "within noise")),
        (0.95, 0.10, "latency", ("confirmed", "within noise")),
        (1.10, 0.10, "latency", ("confirmed", "within noise")),  # the band's edge holds
        (1.15, 0.10, "latency", ("refuted", "worse beyond noise")),
        (1.15, 0.20, "latency", ("confirmed", "within noise")),
        (0.85, 0.10, "throughput", ("refuted", "worse beyond noise")),
        (1.15, 0.10, "throughput", ("confirmed", "better beyond noise")),
        (1.15, None, "latency", ("n/a", "no noise figure")),
    ],
)
def test_a_change_is_confirmed_unless_the_new_setting_is_worse_beyond_noise(
    ratio: float, noise: float | None, objective: str, expected: tuple[str, str]
) -> None:
    assert figures.change_verdict(ratio, noise, objective) == expected


def test_the_noise_of_a_change_is_the_larger_of_grid_and_aa() -> None:
    assert figures.change_noise(0.12, 0.05) == 0.12
    assert figures.change_noise(0.03, 0.09) == 0.09
    assert figures.change_noise(None, 0.09) == 0.09
    assert figures.change_noise(None, None) is None


def _run(number: int, data: dict[str, str] | None, changed: bool) -> dict[str, Any]:
    return {"run": number, "data": data, "data_changed": changed}


def test_the_judged_changes_are_the_counted_ones_from_the_data_in_force_before() -> None:
    spelled = TENSORFLOW.setting_env(ThreadSetting(2, 2))
    one_two = TENSORFLOW.setting_env(ThreadSetting(1, 2))
    # an empty ConfigMap first: the first write is not a change, so it is not judged
    runs = [_run(1, spelled, False), _run(2, spelled, False), _run(3, one_two, True)]
    assert stability.changes_of(runs, None) == [
        stability.Change(3, ThreadSetting(2, 2), ThreadSetting(1, 2))
    ]
    # a seeded advice: the first run's change counts, from the seeded setting
    seeded = TENSORFLOW.setting_env(ThreadSetting(4, 2))
    runs = [_run(1, one_two, True), _run(2, one_two, False)]
    assert stability.changes_of(runs, seeded) == [
        stability.Change(1, ThreadSetting(4, 2), ThreadSetting(1, 2))
    ]
    # nothing stored (a failed first run) reads as TF's default, as a consumer runs
    runs = [_run(1, None, False), _run(2, one_two, True)]
    assert stability.changes_of(runs, None) == [
        stability.Change(2, ThreadSetting.TF_DEFAULT, ThreadSetting(1, 2))
    ]


def test_judge_only_names_default_or_a_pair_of_counts() -> None:
    assert stability.parse_setting("default") == ThreadSetting.TF_DEFAULT
    assert stability.parse_setting("1/2") == ThreadSetting(1, 2)
    with pytest.raises(Exception, match="expected default or I/J"):
        stability.parse_setting("fast")
    args = stability.parse_args(["--judge-only", "default", "1/2", "--judge-rounds", "2"])
    assert args.judge_only == [ThreadSetting.TF_DEFAULT, ThreadSetting(1, 2)]


def _pooled(p99: float, rounds: list[float]) -> Any:
    return factory.pooled({"p99_ms": p99, "round_p99_ms": rounds, "rounds": len(rounds)})


def test_a_change_is_judged_on_its_ratio_grid_noise_and_the_new_settings_aa() -> None:
    change = stability.Change(3, ThreadSetting.TF_DEFAULT, ThreadSetting(1, 3))
    the_arms = stability.judge_plan([change], 2)
    assert [a.key for a in the_arms.measured] == ["default", "1/3", "1/3#2"]
    steady = [10.0, 10.0, 10.0, 10.0]
    stats = {
        "default": _pooled(10.0, steady),
        "1/3": _pooled(9.7, steady),
        "1/3#2": _pooled(10.2, steady),
    }
    judged = stability.verdict_of(change, stats, the_arms, "latency")
    assert judged["old"] == "default" and judged["new"] == "1/3"
    assert judged["ratio"] == 0.97 and judged["grid_noise"] == 0.0
    assert judged["aa"]["noise"] == pytest.approx(0.052, abs=1e-3)
    assert judged["noise"] == judged["aa"]["noise"]
    assert (judged["verdict"], judged["how"]) == ("confirmed", "within noise")
    # the claimed gain the other way round: the new setting 20% worse, beyond a 5% noise
    stats["1/3"] = _pooled(12.0, steady)
    stats["1/3#2"] = _pooled(12.5, steady)
    judged = stability.verdict_of(change, stats, the_arms, "latency")
    assert (judged["verdict"], judged["how"]) == ("refuted", "worse beyond noise")
    assert "run 3: default -> 1/3 new/old 1.20" in stability.judged_line([judged])


def test_a_kept_default_spelled_out_is_judged_as_the_setting_its_consumers_run() -> None:
    # 2/2 is TF's default spelled out on two CPUs, as a kept default is stored: its consumers
    # get the variables, so the judge measures the variables (no process of TF's default here)
    change = stability.Change(1, ThreadSetting(2, 2), ThreadSetting(1, 2))
    the_arms = stability.judge_plan([change], 2)
    assert [a.key for a in the_arms.measured] == ["2/2", "1/2", "1/2#2"]
    assert Arm(change.old).env({})["TF_NUM_INTRAOP_THREADS"] == "2"
