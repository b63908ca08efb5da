"""One real ``tf-thread-advisor calibrate`` run inside a quota group, timed and RSS-watched.

Why it is measured from outside: what a user pays is the whole Job (the CLI plus its trial
children), so wall time is taken around the process and the peak RSS is the largest *sum* over
the process tree seen by polling every 50 ms. ``ru_maxrss`` from wait4 is kept as a cross-check,
but it is the largest single process, not the tree at one moment.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from benchmarks import REPO
from benchmarks.cgroups import RealCgroup
from benchmarks.plan import Scenario

POLL_S = 0.05


@dataclass
class CalibrateRun:
    argv: list[str]
    exit_code: int | None = None
    wall_s: float = 0.0
    peak_tree_rss_mib: float = 0.0
    max_process_rss_mib: float | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    stderr_tail: list[str] = field(default_factory=list)

    @property
    def advice(self) -> tuple[int, int] | None:
        if self.result is None:
            return None
        return int(self.result["intra_op_threads"]), int(self.result["inter_op_threads"])

    @property
    def data(self) -> dict[str, str] | None:
        """The ConfigMap ``data`` ``run`` would publish for this result (the env values)."""
        configmap = self.configmap()
        return None if configmap is None else dict(configmap["data"])

    def configmap(self) -> dict[str, Any] | None:
        """This result as the ConfigMap ``run`` writes (for the next run's ``--incumbent``)."""
        if self.result is None:
            return None
        from advisor import __version__
        from advisor.models import CalibrationResult
        from advisor.recommend import build_recommendation, render_configmap

        result = CalibrationResult.model_validate(self.result)
        rec = build_recommendation(result, advisor_version=__version__)
        return render_configmap(rec, "tf-thread-advice", "bench")

    @property
    def kept_incumbent(self) -> bool | None:
        """The sweep kept the incumbent it was given (None: no result)."""
        if self.result is None:
            return None
        return bool((self.result.get("incumbent") or {}).get("kept"))

    @property
    def trial_count(self) -> int | None:
        return None if self.result is None else len(self.result.get("trials", []))

    @property
    def ok_trials(self) -> int | None:
        if self.result is None:
            return None
        return sum(1 for t in self.result.get("trials", []) if t.get("status") == "ok")


def calibrate_argv(
    scenario: Scenario,
    model_path: Path | None,
    budget_s: float | None,
    trial_mode: str | None = None,
    incumbent: Path | None = None,
    *,
    spend_budget: bool = False,
) -> list[str]:
    argv = [sys.executable, "-m", "advisor", "calibrate", "--format", "json"]
    if spend_budget:
        argv += ["--spend-budget"]
    if trial_mode is not None:
        argv += ["--trial-mode", trial_mode]
    if incumbent is not None:
        argv += ["--incumbent", str(incumbent)]
    argv += ["--objective", scenario.objective, "--concurrency", str(scenario.concurrency)]
    argv += ["--batch-size", str(scenario.batch_size)]
    if model_path is not None:
        argv += ["--model", str(model_path)]
    if budget_s is not None:
        argv += ["--budget", f"{budget_s:g}"]
    return argv


def _tree_rss(root: psutil.Process) -> int:
    total = 0
    with contextlib.suppress(psutil.Error):
        for proc in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                total += proc.memory_info().rss
    return total


def run_calibrate(
    scenario: Scenario,
    model_path: Path | None,
    group: RealCgroup | None,
    budget_s: float | None,
    timeout_s: float,
    *,
    trial_mode: str | None = None,
    incumbent: Path | None = None,
    spend_budget: bool = False,
) -> CalibrateRun:
    """Run calibrate to the end (or kill it after ``timeout_s``); never raises for its failure."""
    argv = calibrate_argv(
        scenario, model_path, budget_s, trial_mode, incumbent, spend_budget=spend_budget
    )
    run = CalibrateRun(argv=argv)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    command = group.command(argv) if group is not None else argv
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=REPO)
        root = psutil.Process(proc.pid)
        status = None
        try:
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid == proc.pid:
                    run.wall_s = time.monotonic() - started
                    run.max_process_rss_mib = usage.ru_maxrss / 1024
                    break
                run.peak_tree_rss_mib = max(run.peak_tree_rss_mib, _tree_rss(root) / 2**20)
                if time.monotonic() - started > timeout_s:
                    run.error = f"killed after {timeout_s:.0f} s"
                    _kill_tree(root)
                time.sleep(POLL_S)
        finally:
            if status is None:  # interrupted: leave no calibrate behind
                _kill_tree(root)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        run.exit_code = proc.returncode
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    run.stderr_tail = stderr.strip().splitlines()[-5:]
    if run.exit_code == 0:
        try:
            run.result = json.loads(stdout)
        except json.JSONDecodeError as exc:
            run.error = f"calibrate printed no JSON ({exc})"
    elif run.error is None:
        last = run.stderr_tail[-1] if run.stderr_tail else "no message"
        run.error = f"exit {run.exit_code}: {last}"
    return run


def _kill_tree(root: psutil.Process) -> None:
    with contextlib.suppress(psutil.Error):
        for proc in [*root.children(recursive=True), root]:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGKILL)
