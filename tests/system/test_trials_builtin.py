"""Real TensorFlow trials on the built-in model, each in its own child process.

Windows are short (tenths of a second): these tests prove that settings reach TF and that the
numbers are well-formed, never how fast anything is (the machine is shared and noisy).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor.calibrate.spec import SubjectSpec, TrialSpec
from advisor.errors import ModelError
from advisor.models import ThreadSetting, TrialResult
from advisor.trials.environment import trial_program
from advisor.trials.runner import inspect_subject, run_trial
from testkit.realcgroup import cgroup_unavailable, real_cgroup
from tests.support import REPO
from tests.support.real_parts import missing_real_part, need_module

pytestmark = pytest.mark.tf

#: generous: a TF child needs ~3 s of CPU to import and build; the machine may be busy
DEADLINE_S = 180.0


@pytest.fixture(autouse=True)
def _tensorflow_installed() -> None:
    need_module("tensorflow")


def assert_well_formed(result: TrialResult, measure_s: float) -> None:
    assert result.status == "ok", result.reason
    assert result.requests is not None
    assert result.requests >= 1
    assert result.measure_s is not None
    assert result.measure_s >= measure_s  # every loop runs until the window has passed
    assert result.p50_ms is not None
    assert result.p90_ms is not None
    assert result.p99_ms is not None
    assert result.max_ms is not None
    assert 0 < result.p50_ms <= result.p90_ms <= result.p99_ms <= result.max_ms
    assert result.throughput_rps == pytest.approx(result.requests / result.measure_s)
    assert result.cpu_time_s is not None
    assert result.cpu_time_s > 0
    assert result.threads is not None


def test_thread_settings_reach_tensorflow_through_the_environment() -> None:
    subject = SubjectSpec(model_path=None)
    small = run_trial(
        TrialSpec(ThreadSetting(1, 1), warmup_s=0.2, measure_s=0.4), subject, deadline_s=DEADLINE_S
    )
    large = run_trial(
        TrialSpec(ThreadSetting(4, 4), warmup_s=0.2, measure_s=0.4), subject, deadline_s=DEADLINE_S
    )
    assert_well_formed(small, 0.4)
    assert_well_formed(large, 0.4)
    assert (small.setting.intra, small.setting.inter) == (1, 1)
    # TF sizes its pools from the variables: 4+4 pools hold more threads than 1+1.
    assert large.threads is not None
    assert small.threads is not None
    assert large.threads > small.threads


def test_the_baseline_runs_with_concurrent_requests_and_a_batch() -> None:
    subject = SubjectSpec(model_path=None, batch_size=2, concurrency=2)
    result = run_trial(
        TrialSpec(ThreadSetting.TF_DEFAULT, warmup_s=0.2, measure_s=0.4, round=2),
        subject,
        deadline_s=DEADLINE_S,
    )
    assert_well_formed(result, 0.4)
    assert result.is_baseline
    assert result.round == 2
    assert result.requests is not None
    assert result.requests >= 2  # each of the two request loops completes at least one


def test_inspect_describes_the_builtin_model() -> None:
    info = inspect_subject(SubjectSpec(model_path=None, batch_size=3, concurrency=2))
    assert info.model_format == "builtin"
    assert info.path is None
    assert info.model_dump()["inputs"] == {"image": "float32[3,112,112,3]"}
    assert (info.batch_size, info.concurrency) == (3, 2)
    assert re.fullmatch(r"[0-9a-f]{64}", info.signature_digest or "")
    assert re.fullmatch(r"2\.\d+\.\d+.*", info.tf_version or "")


def test_a_batch_too_large_to_synthesise_is_a_model_error() -> None:
    with pytest.raises(ModelError) as caught:
        inspect_subject(SubjectSpec(model_path=None, batch_size=100_000))
    assert str(caught.value) == (
        "built-in model: batch size 100000 makes the inputs 14.0 GiB; limit 1 GiB"
    )


def test_a_trial_that_outlives_its_deadline_is_a_timeout() -> None:
    # TF alone needs seconds to import: a 0.5 s deadline cannot be met.
    result = run_trial(
        TrialSpec(ThreadSetting(1, 1), warmup_s=0.1, measure_s=0.1),
        SubjectSpec(None),
        deadline_s=0.5,
    )
    assert (result.status, result.reason) == (
        "timeout",
        "no answer within its 0.5 s deadline; killed",
    )


@pytest.mark.cgroup
def test_throttling_counters_move_under_a_real_quota() -> None:
    reason = cgroup_unavailable()
    if reason is not None:
        missing_real_part(reason)
    # Two request loops on two TF threads want ~2 CPUs; the quota gives half of one.
    with real_cgroup(0.5) as group:
        result = run_trial(
            TrialSpec(ThreadSetting(2, 2), warmup_s=0.2, measure_s=1.0),
            SubjectSpec(model_path=None, concurrency=2),
            deadline_s=DEADLINE_S,
            program=group.command(trial_program()),
        )
        group_total = group.cpu_stat()["nr_throttled"]
    assert_well_formed(result, 1.0)
    assert result.nr_throttled is not None
    assert result.throttled_time_ms is not None
    assert result.nr_throttled > 0
    assert result.throttled_time_ms > 0
    # The child read a window of the group's own counter, not some other group's.
    assert result.nr_throttled <= group_total


def test_a_trial_child_started_through_a_forking_wrapper_still_measures() -> None:
    # the child's parent is then the wrapper, not the runner: that is not being orphaned
    wrapper = ["sh", "-c", '"$@"; exit $?', "sh", *trial_program()]
    result = run_trial(
        TrialSpec(ThreadSetting(1, 1), warmup_s=0.1, measure_s=0.2),
        SubjectSpec(None),
        deadline_s=DEADLINE_S,
        program=wrapper,
    )
    assert_well_formed(result, 0.2)


#: a parent that starts one long real trial and then waits for it
_PARENT = """
from advisor.calibrate.spec import TrialSpec, SubjectSpec
from advisor.models import ThreadSetting
from advisor.trials.runner import run_trial
spec = TrialSpec(ThreadSetting(1, 1), warmup_s=0.1, measure_s=600)
run_trial(spec, SubjectSpec(None), deadline_s=900)
"""


def _children_of(pid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        if f"\nPPid:\t{pid}\n" in text and "\nState:\tZ" not in text:
            found.append(int(status.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


def test_a_trial_child_does_not_outlive_a_parent_killed_by_sigkill() -> None:
    # SIGKILL (the OOM killer, kill -9) runs no handler and no finally: the child, in its own
    # session so that a deadline can kill its group, must notice the parent's death by itself.
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT], env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    children: list[int] = []
    try:
        end = time.monotonic() + 60
        while not children:
            assert time.monotonic() < end, "the trial child never started"
            time.sleep(0.05)
            children = _children_of(parent.pid)
        time.sleep(0.5)  # the child is past its start-up and importing TensorFlow
        parent.kill()
        parent.wait(timeout=30)
        end = time.monotonic() + 15
        while any(_alive(pid) for pid in children) and time.monotonic() < end:
            time.sleep(0.05)
        assert [pid for pid in children if _alive(pid)] == []
    finally:
        parent.kill()
        parent.wait(timeout=30)
        for pid in children:
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)
