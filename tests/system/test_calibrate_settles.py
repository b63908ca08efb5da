"""The stopping rule on real trials: forked TensorFlow children on the built-in model inside a
real 1-CPU cgroup quota, where TF's default (2/2 on two CPUs) is far behind one intra-op thread.
The race settles before the budget and the result says so; the budget stays the ceiling.

Under a 1-CPU quota the difference is large (a p99 about twice TF's default's, README), so even a
loaded machine settles it; a race that never stops fails here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from advisor.models import CalibrationResult
from testkit.realcgroup import cgroup_unavailable, real_cgroup
from tests.support import REPO
from tests.support.real_parts import missing_real_part, need_module

#: the ceiling: generous, so that only a race that never settles reaches it
BUDGET_S = 120
#: python start-up, the probe, printing
SLACK_S = 8.0


@pytest.mark.tf
@pytest.mark.cgroup
def test_real_forked_trials_under_a_one_cpu_quota_end_settled_before_the_budget() -> None:
    need_module("tensorflow")
    reason = cgroup_unavailable()
    if reason is not None:
        missing_real_part(reason)
    argv = [
        sys.executable,
        "-m",
        "advisor",
        "calibrate",
        "--budget",
        str(BUDGET_S),
        "--trial-mode",
        "fork",
        "--format",
        "json",
    ]
    with real_cgroup(1.0) as group:
        started = time.monotonic()
        done = subprocess.run(
            group.command(argv),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=BUDGET_S + 60,
            check=False,
        )
        took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    result = CalibrationResult.model_validate(json.loads(done.stdout))
    assert result.node.quota_cpus == 1.0
    assert result.trial_mode == "fork"
    assert result.stopped == "settled", (result.unsettled, done.stderr[-3000:])
    assert result.unsettled == {}
    assert result.elapsed_s < BUDGET_S - 10
    assert took <= result.elapsed_s + SLACK_S
    # the summary line says why it ended, and the split of the time adds up
    assert f"settled after {len(result.trials)} trials in" in done.stderr
    split = result.time_split
    assert split is not None and split.startup_s is not None and split.inspect_s is not None
    assert split.race_s > 0 and split.screen_s > 0
    parts = [split.startup_s, split.inspect_s, split.screen_s, split.race_s, split.other_s]
    assert sum(parts) == pytest.approx(result.elapsed_s, abs=0.5)
    # the advice is one intra-op thread: what a 1-CPU quota is measured to want
    assert result.setting.intra == 1
