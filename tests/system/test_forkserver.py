"""The trial server with real TensorFlow: forked children, the runtime never started in the
server, and the fallback to spawned trials when forking fails in any of the ways it can."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import psutil
import pytest

from advisor.calibrate.spec import SubjectSpec, TrialSpec
from advisor.errors import CalibrationError
from advisor.models import (
    CalibrationOptions,
    CalibrationResult,
    NodeProfile,
    Progress,
    ThreadSetting,
)
from advisor.pipeline.sweep import sweep
from advisor.probe import probe_node
from advisor.trials import forkclient, launch, runner, supervise
from advisor.trials.launch import TrialPrograms
from tests.support import FAKE_TRIALS
from tests.support.real_parts import need_module

pytestmark = pytest.mark.tf

FAULTY = FAKE_TRIALS / "faulty_forkserver.py"
FALLBACK_NOTE = "trials ran as one new process each"


@pytest.fixture(autouse=True)
def _need_tensorflow() -> None:
    need_module("tensorflow")


@pytest.fixture
def trials() -> Iterator[launch.Launcher]:
    made = launch.Launcher(SubjectSpec(model_path=None), "fork")
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def faulty(monkeypatch: pytest.MonkeyPatch) -> Iterator[TrialPrograms]:
    """The real trial child, forked from a faulty trial server."""
    monkeypatch.setattr(launch, "MIN_LOAD_TIMEOUT_S", 3.0)
    yield TrialPrograms(server=(sys.executable, str(FAULTY)))


def _node() -> NodeProfile:
    return probe_node()


def _no_leftovers() -> None:
    """No server and no trial child of this test process is left running."""
    left = [
        p
        for p in psutil.Process().children(recursive=True)
        if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    ]
    assert not left, [p.cmdline() for p in left]
    assert not supervise.SERVERS


def test_a_forked_child_takes_its_thread_setting_from_its_environment(
    trials: launch.Launcher,
) -> None:
    trials.inspect(120)
    assert trials.used == "fork"
    small = trials(TrialSpec(ThreadSetting(1, 1), warmup_s=0.1, measure_s=0.3), 60)
    large = trials(TrialSpec(ThreadSetting(4, 4), warmup_s=0.1, measure_s=0.3), 60)
    assert small.status == "ok", small.reason
    assert large.status == "ok", large.reason
    assert small.threads is not None and large.threads is not None
    # 3 more threads in each pool: the child's own count (kernel's, /proc/self/status) follows
    assert large.threads - small.threads >= 4, (small.threads, large.threads)
    assert trials.used == "fork" and not trials.notes


def test_the_server_never_starts_tensorflows_runtime(trials: launch.Launcher) -> None:
    trials.inspect(120)
    before = trials.state()
    assert before is not None and before["tf_initialized"] is False
    for intra in (1, 2):
        assert (
            trials(TrialSpec(ThreadSetting(intra, 1), warmup_s=0.1, measure_s=0.2), 60).status
            == "ok"
        )
    after = trials.state()
    assert after is not None
    # the model was loaded and run in the children only: the server still has no runtime and
    # no pool threads (import tensorflow leaves one extra thread, nothing more)
    assert after["tf_initialized"] is False
    assert after["threads"] == before["threads"]
    assert isinstance(after["threads"], int) and after["threads"] <= 4


def test_a_forked_trial_starts_far_faster_than_a_spawned_one(trials: launch.Launcher) -> None:
    trials.inspect(120)
    spec = TrialSpec(ThreadSetting(1, 1), warmup_s=0.0, measure_s=0.05)
    import time

    began = time.monotonic()
    forked = trials(spec, 60)
    fork_s = time.monotonic() - began
    began = time.monotonic()
    spawned = runner.run_trial(spec, SubjectSpec(model_path=None), deadline_s=120)
    spawn_s = time.monotonic() - began
    assert forked.status == spawned.status == "ok"
    # not a timing target (those are the benchmark's): a sanity check that forking skipped the
    # TF import a spawned child pays, with a wide margin for a loaded machine
    assert fork_s < spawn_s, (fork_s, spawn_s)


def _sweep(
    node: NodeProfile, mode: str = "auto", budget: float = 40, **kw: object
) -> CalibrationResult:
    options = CalibrationOptions(budget_s=budget, trial_mode=mode)  # type: ignore[arg-type]
    return sweep(options, node, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("fault", ["hang", "crash"])
def test_a_child_failing_before_it_loads_switches_the_sweep_to_spawn(
    faulty: TrialPrograms, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    monkeypatch.setenv("TFTA_FAULT", fault)
    events: list[Progress] = []
    result = _sweep(_node(), progress=events.append, programs=faulty)
    assert result.trial_mode == "spawn"
    assert sum(FALLBACK_NOTE in note for note in result.notes) == 1, result.notes
    # the trial that hit the fault was run again as a spawned process: no fault is recorded
    assert all(t.status == "ok" for t in result.trials), [t.reason for t in result.trials]
    assert len(result.trials) >= 3
    _no_leftovers()


def test_a_server_killed_mid_sweep_switches_the_sweep_to_spawn() -> None:
    killed: list[int] = []

    def kill_the_server(event: Progress) -> None:
        if "trial" in event.text and not killed and supervise.SERVERS:
            pid = next(iter(supervise.SERVERS))
            psutil.Process(pid).kill()
            killed.append(pid)

    result = _sweep(_node(), progress=kill_the_server)
    assert killed
    assert result.trial_mode == "spawn"
    assert any(FALLBACK_NOTE in note and "trial server" in note for note in result.notes)
    assert all(t.status == "ok" for t in result.trials), [t.reason for t in result.trials]
    _no_leftovers()


def test_forced_fork_mode_fails_when_the_server_cannot_start(
    faulty: TrialPrograms, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TFTA_FAULT", "no-start")
    with pytest.raises(CalibrationError, match=r"^trial_mode fork: the trial server"):
        _sweep(_node(), mode="fork", budget=30, programs=faulty)
    _no_leftovers()


def test_auto_mode_falls_back_when_the_server_cannot_start(
    faulty: TrialPrograms, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TFTA_FAULT", "no-start")
    result = _sweep(_node(), budget=35, programs=faulty)
    assert result.trial_mode == "spawn"
    assert any("exited" in note or "refusing" in note for note in result.notes), result.notes
    _no_leftovers()


def test_spawn_mode_starts_no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_server(*args: object, **kwargs: object) -> None:
        raise AssertionError("a trial server was started in spawn mode")

    monkeypatch.setattr(forkclient.TrialServer, "launch", no_server)
    result = _sweep(_node(), mode="spawn", budget=30)
    assert result.trial_mode == "spawn" and not any(FALLBACK_NOTE in n for n in result.notes)


def test_sweep_onednn_runs_each_value_in_a_server_of_its_own() -> None:
    options = CalibrationOptions(budget_s=50, sweep_onednn=True)
    result = sweep(options, _node())
    assert result.onednn is not None
    values = [t.onednn for t in result.onednn_trials]
    assert set(values) == {"0", "1"}, values
    assert all(t.status == "ok" for t in result.onednn_trials), [
        t.reason for t in result.onednn_trials
    ]
    assert result.trial_mode == "fork"
    # the verdict names both medians, whatever it decided
    assert set(result.onednn.medians) == {"0", "1"}
    _no_leftovers()
