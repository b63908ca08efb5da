"""Settings production undid (plan's revert) are never candidates, so never advised again; the
baseline stays measured."""

from __future__ import annotations

from advisor.models import CalibrationOptions, ThreadSetting
from advisor.pipeline.sweep import sweep
from tests.support.search_fakes import FakeClock, FakeTrials, node


def advised(rejected: tuple[ThreadSetting, ...]) -> tuple[tuple[int, int], set[object]]:
    profile = node(2, quota=1.0)
    clock = FakeClock()
    trials = FakeTrials(clock=clock, usable=profile.effective_cpus, affinity=2, overhead_s=0.3)
    # long enough for the race to replace TF's default (60 s hold too few rounds)
    options = CalibrationOptions(budget_s=200.0, rejected=rejected)
    result = sweep(options, profile, trial_fn=trials, clock=clock)
    measured = {(c[0].setting.intra, c[0].setting.inter) for c in trials.calls}
    return result.counts, measured


def test_the_best_setting_once_rejected_is_neither_measured_nor_advised() -> None:
    best, measured = advised(())
    assert best in measured
    again, measured_again = advised((ThreadSetting(*best),))
    assert again != best
    assert best not in measured_again
    assert (None, None) in measured_again  # TF's default: the baseline, still measured
