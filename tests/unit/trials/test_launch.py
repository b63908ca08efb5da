"""The launcher owns its processes: left by an exception, it kills the children it started and
nothing else. Real child processes (the fake trial program that hangs), no TensorFlow."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from advisor.calibrate.spec import SubjectSpec, TrialSpec
from advisor.models import ThreadSetting, TrialResult
from advisor.trials.launch import Launcher, TrialPrograms
from tests.support import FAKE_TRIALS
from tests.unit.trials.test_runner import alive, wait_gone

SPEC = TrialSpec(ThreadSetting(2, 1), warmup_s=0.1, measure_s=0.2, round=1)


def hanging(pidfile: Path) -> Launcher:
    """A launcher whose every trial is the fake that hangs, writing its and its grandchild's pid."""
    fake = [sys.executable, str(FAKE_TRIALS / "fake_trial.py"), "hang", str(pidfile)]
    return Launcher(SubjectSpec(model_path=None), "spawn", programs=TrialPrograms.spawned(fake))


def started(launcher: Launcher, pidfile: Path, results: list[TrialResult]) -> threading.Thread:
    """A trial of ``launcher`` running in a thread, once both its processes are up."""
    worker = threading.Thread(target=lambda: results.append(launcher(SPEC, 120.0)))
    worker.start()
    end = time.monotonic() + 30
    while not (pidfile.exists() and len(pidfile.read_text().split()) == 2):
        assert time.monotonic() < end, "the fake trial never started"
        time.sleep(0.05)
    return worker


def test_left_by_an_exception_it_kills_its_own_children_and_no_other_launchers(
    tmp_path: Path,
) -> None:
    mine_pids, theirs_pids = tmp_path / "mine", tmp_path / "theirs"
    mine, theirs = hanging(mine_pids), hanging(theirs_pids)
    mine_results: list[TrialResult] = []
    theirs_results: list[TrialResult] = []
    mine_worker = started(mine, mine_pids, mine_results)
    theirs_worker = started(theirs, theirs_pids, theirs_results)
    try:
        with pytest.raises(RuntimeError), mine:
            raise RuntimeError("interrupted")
        mine_worker.join(timeout=60)
        assert not mine_worker.is_alive()
        assert mine_results[0].status == "failed"
        assert mine_results[0].reason == "stopped: the run is being interrupted"
        assert wait_gone([int(p) for p in mine_pids.read_text().split()]) == []
        # the other launcher's trial still runs: it is that launcher's to end
        assert theirs_worker.is_alive()
        assert all(alive(int(p)) for p in theirs_pids.read_text().split())
    finally:
        theirs.terminate()
        theirs_worker.join(timeout=60)
    assert theirs_results[0].reason == "stopped: the run is being interrupted"
    assert wait_gone([int(p) for p in theirs_pids.read_text().split()]) == []


def test_left_normally_it_kills_nothing(tmp_path: Path) -> None:
    """A block that ends without an error only closes the launcher: a trial another thread still
    runs goes on to its own end."""
    pidfile = tmp_path / "pids"
    launcher = hanging(pidfile)
    results: list[TrialResult] = []
    worker = started(launcher, pidfile, results)
    try:
        with launcher:
            pass
        time.sleep(0.2)
        assert worker.is_alive()
        assert all(alive(int(p)) for p in pidfile.read_text().split())
    finally:
        launcher.terminate()
        worker.join(timeout=60)
    assert results[0].reason == "stopped: the run is being interrupted"
