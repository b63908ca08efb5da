"""The stability benchmark's parts that need no TensorFlow: what each run's calibration took, read
back from the stored advice, and the bursty neighbour it can run beside."""

from __future__ import annotations

import time

import psutil

from advisor.recommend import build_recommendation, render_configmap
from benchmarks import stability
from testkit.fakeapi.samples import calibration_result


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
