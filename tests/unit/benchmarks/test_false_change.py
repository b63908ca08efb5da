"""The false-change benchmark: its synthetic trial function (shared drift, bursts, a setting truly
better), its arithmetic, and a few of its rows run for real (fake clock, seeded)."""

from __future__ import annotations

import dataclasses

import pytest

from advisor.calibrate.spec import TrialSpec
from advisor.models import ThreadSetting
from benchmarks import false_change as fc
from benchmarks.scaling import FakeClock

SPEC = TrialSpec(setting=ThreadSetting(1, 1), warmup_s=0.3, measure_s=0.6, round=1)


def measured(shape: fc.Landscape, setting: ThreadSetting, at: float, seed: int = 3) -> float:
    clock = FakeClock()
    clock.now = at
    trials = fc.SyntheticTrials(shape, clock, seed)
    p99 = trials(dataclasses.replace(SPEC, setting=setting), 10.0).p99_ms
    assert p99 is not None
    return p99


def test_the_drift_is_shared_by_every_setting_and_moves_with_the_clock() -> None:
    shape = fc.Landscape(window_cv=0.0, walk=0.0, drift=0.2)
    a = measured(shape, ThreadSetting(1, 1), 30.0)
    b = measured(shape, ThreadSetting(2, 1), 30.0)
    assert a == pytest.approx(b)  # the same moment: the same machine
    later = measured(shape, ThreadSetting(1, 1), 60.0)
    assert abs(later / a - 1) > 0.05  # a quarter period on: the machine moved


def test_a_burst_slows_every_setting_in_its_slot_and_the_better_one_is_better() -> None:
    quiet = fc.Landscape(window_cv=0.0, walk=0.0, drift=0.0)
    bursty = fc.Landscape(window_cv=0.0, walk=0.0, drift=0.0, bursts=True)
    ratios = {
        round(measured(bursty, SPEC.setting, t) / measured(quiet, SPEC.setting, t), 6)
        for t in range(0, 600, 6)
    }
    assert ratios == {1.0, fc.BURST_FACTOR}
    gain = fc.Landscape(window_cv=0.0, walk=0.0, drift=0.0, better=ThreadSetting(1, 1), gain=0.3)
    assert measured(gain, ThreadSetting(1, 1), 0.0) == pytest.approx(0.7 * gain.p99_ms)
    assert measured(gain, ThreadSetting.TF_DEFAULT, 0.0) == pytest.approx(gain.p99_ms)


def test_the_rate_and_its_interval() -> None:
    row = fc.Row(case="x", budget_s=45.0, runs=200, changed=10, right=0, median_s=40.0, settled=5)
    assert row.rate == 0.05
    low, high = row.interval()
    assert low < 0.05 < high
    assert high - low == pytest.approx(0.0628, abs=0.002)  # Wilson, n = 200
    none = fc.Row(case="x", budget_s=45.0, runs=200, changed=0, right=0, median_s=1.0, settled=0)
    assert none.interval()[0] == 0.0 and none.interval()[1] == pytest.approx(0.0188, abs=0.001)


def test_on_a_flat_landscape_nothing_changes_and_a_real_gain_is_found() -> None:
    flat = fc.Case("flat, bursts", fc.FLAT_BURSTS, incumbent=ThreadSetting(1, 2), budget_s=45.0)
    row = fc.measure(flat, seeds=12)
    assert row.runs == 12 and row.changed == 0
    gain = fc.Case("30% gain", fc.GAIN, budget_s=300.0)
    found = fc.measure(gain, seeds=4)
    assert found.changed == found.right == 4  # every run found 1/1, and only 1/1
    assert found.settled == 4 and found.median_s < 100


def test_the_command_prints_the_rows_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    assert fc.main(["--seeds", "2", "--budget", "45", "--only", "flat, 2 CPUs, TF"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| landscape, node, incumbent")
    assert [line.split("|")[1].strip() for line in out[2:]] == ["flat, 2 CPUs, TF's default"]


def test_a_kept_process_keeps_its_offset_and_a_fresh_one_draws_anew() -> None:
    still = {"window_cv": 0.0, "walk": 0.0, "drift": 0.0, "process_cv": 0.1}
    clock = FakeClock()
    kept = fc.SyntheticTrials(fc.Landscape(**still, kept=True), clock, 5)
    fresh = fc.SyntheticTrials(fc.Landscape(**still), clock, 5)
    screen = dataclasses.replace(SPEC, round=0)
    race = [kept(SPEC, 10.0).p99_ms for _ in range(4)]
    assert len(set(race)) == 1  # one process, one offset, in every race window
    assert kept(screen, 10.0).p99_ms != race[0]  # a screen window is a fresh process
    other = kept(dataclasses.replace(SPEC, setting=ThreadSetting(2, 1)), 10.0).p99_ms
    assert other != race[0]  # another setting, another process
    assert len({fresh(SPEC, 10.0).p99_ms for _ in range(4)}) == 4
    assert fc.Landscape(**still).true_p99(SPEC.setting) == 5.0
