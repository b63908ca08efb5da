"""A real trial's preemptions per request and peak memory (TensorFlow; under a real quota):
the numbers are the whole process's, read by the child (unit tests: unit/trials/test_metrics.py).
"""

from __future__ import annotations

import pytest

from advisor.calibrate.spec import SubjectSpec, TrialSpec
from advisor.models import ThreadSetting
from advisor.trials.environment import trial_program
from advisor.trials.runner import run_trial
from testkit.realcgroup import cgroup_unavailable, real_cgroup
from tests.support.real_parts import missing_real_part, need_module

#: generous: a TF child needs ~3 s of CPU to import and build; the machine may be busy
DEADLINE_S = 180.0


def _tensorflow() -> None:
    need_module("tensorflow")


@pytest.mark.tf
def test_a_real_trial_records_both() -> None:
    _tensorflow()
    result = run_trial(
        TrialSpec(ThreadSetting(2, 2), warmup_s=0.2, measure_s=0.4),
        SubjectSpec(None),
        deadline_s=DEADLINE_S,
    )
    assert result.status == "ok", result.reason
    assert result.involuntary_switches_per_request is not None
    assert result.involuntary_switches_per_request >= 0
    # TensorFlow and the model alone take far more than 100 MiB; KiB taken for MiB would be GiBs
    assert result.peak_rss_mib is not None
    assert 100 < result.peak_rss_mib < 8192


@pytest.mark.tf
@pytest.mark.cgroup
def test_under_a_one_cpu_quota_tf_default_is_preempted_far_more_than_1_1() -> None:
    # Measured here, 3 s windows: 37-47 per request for the default, 0.05-1.2 for 1/1. The count
    # follows the intra-op pool more than the quota (without one the gap is as wide), so this
    # checks the number is the whole process's, not that the quota causes it.
    _tensorflow()
    reason = cgroup_unavailable()
    if reason is not None:
        missing_real_part(reason)
    figures = {}
    for intra, inter in ((None, None), (1, 1)):
        with real_cgroup(1.0) as group:
            result = run_trial(
                TrialSpec(ThreadSetting(intra, inter), warmup_s=0.5, measure_s=1.0),
                SubjectSpec(None),
                deadline_s=DEADLINE_S,
                program=group.command(trial_program()),
            )
        assert result.status == "ok", result.reason
        figures[intra] = result.involuntary_switches_per_request
    default, single = figures[None], figures[1]
    assert default is not None and single is not None
    assert default > 3 * single
