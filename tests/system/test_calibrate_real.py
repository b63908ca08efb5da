"""The real command end to end: TensorFlow trial children, and inside a real 1-CPU cgroup quota.

These check what must always hold (finishes within its budget, measures the baseline, produces
successful trials and a valid JSON contract). They never assert that the advice beats the
baseline: on a shared 2-core machine that is noise; the benchmark measures it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.models import CalibrationResult
from testkit.realcgroup import cgroup_unavailable, real_cgroup
from tests.support import REPO
from tests.support.real_parts import missing_real_part, need_module

BUDGET_S = 30
#: python start-up, the probe, printing, and killing a trial cut at the budget
SLACK_S = 8.0


def _need_tensorflow() -> None:
    need_module("tensorflow")


def _command(report: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "advisor",
        "calibrate",
        "--budget",
        str(BUDGET_S),
        "--format",
        "json",
        "--report",
        str(report),
        *extra,
    ]


def _run(argv: list[str]) -> tuple[dict[str, Any], float, str]:
    started = time.monotonic()
    done = subprocess.run(
        argv, cwd=REPO, capture_output=True, text=True, timeout=BUDGET_S + 60, check=False
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout), took, done.stderr


def _check_contract(
    data: dict[str, Any], took: float, stderr: str, report: Path, kind: str = "builtin"
) -> None:
    result = CalibrationResult.model_validate(data)
    assert took <= BUDGET_S + SLACK_S, f"took {took:.1f} s for a {BUDGET_S} s budget"
    assert result.elapsed_s <= BUDGET_S
    baselines = [t for t in result.trials if t.is_baseline]
    assert baselines
    assert baselines[0].status == "ok", baselines[0].reason
    ok = [t for t in result.trials if t.status == "ok" and not t.is_baseline]
    assert ok, [(t.setting.intra, t.setting.inter, t.status, t.reason) for t in result.trials]
    advice = result.counts
    if result.kept_default:  # TF's default measured best: spelled out from the affinity mask
        cpus = len(result.node.affinity_cpus)
        assert advice == (cpus, cpus)
    else:
        assert advice in {(t.setting.intra, t.setting.inter) for t in ok}
    for trial in ok + baselines[:1]:
        assert trial.p50_ms is not None
        assert trial.p99_ms is not None
        assert trial.p99_ms >= trial.p50_ms
        assert trial.throughput_rps is not None
        assert trial.throughput_rps > 0
    assert result.baseline.p99_ms is not None
    assert result.subject.model_format == kind
    assert data["trials"][0].keys() >= {"intra_op_threads", "inter_op_threads", "status"}
    # progress was visible as plain log lines (stderr is not a TTY here)
    assert "round 0 trial 1/" in stderr
    assert "<svg" in report.read_text()


@pytest.mark.tf
def test_calibrate_builtin_model_within_budget(tmp_path: Path) -> None:
    _need_tensorflow()
    report = tmp_path / "report.html"
    data, took, stderr = _run(_command(report))
    _check_contract(data, took, stderr, report)


@pytest.mark.tf
@pytest.mark.cgroup
def test_calibrate_inside_a_real_one_cpu_quota(tmp_path: Path) -> None:
    _need_tensorflow()
    reason = cgroup_unavailable()
    if reason is not None:
        missing_real_part(reason)
    report = tmp_path / "report.svg"
    with real_cgroup(1.0) as group:
        data, took, stderr = _run(group.command(_command(report)))
        stat = group.cpu_stat()
    _check_contract(data, took, stderr, report)
    node = data["node"]
    assert node["quota_cpus"] == 1.0
    assert node["effective_cpus"] == 1.0
    # the trials ran in the group: it saw CPU periods (throttling itself is load-dependent)
    assert stat["nr_periods"] > 0
    assert all("nr_throttled" in t for t in data["trials"])


@pytest.mark.tf
def test_calibrate_a_user_savedmodel_for_throughput(
    tmp_path: Path, test_models: Callable[[], Path]
) -> None:
    """A SavedModel the test builds (in a child: no TF in pytest), two requests in flight."""
    _need_tensorflow()
    model = test_models() / "sm_good"
    report = tmp_path / "report.html"
    argv = _command(
        report, "--model", str(model), "--objective", "throughput", "--concurrency", "2"
    )
    data, took, stderr = _run(argv)
    _check_contract(data, took, stderr, report, kind="savedmodel")
    assert data["objective"] == "throughput"
    assert data["workload"]["path"] == str(model)
    assert data["workload"]["concurrency"] == 2
    assert data["workload"]["inputs"]  # described from the signature by the inspection child
