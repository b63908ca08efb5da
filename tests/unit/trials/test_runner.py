"""The trial runner's supervision, with fake trial programs (no TensorFlow: fast).

Each fake is a real child process that misbehaves one way; the runner must turn each into the
right status and a one-line reason, and leave no process behind.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from advisor.calibrate.spec import SubjectSpec, TrialSpec
from advisor.errors import ModelError, RequestsError
from advisor.models import TENSORFLOW, ThreadSetting, TrialResult
from advisor.trials.environment import trial_env
from advisor.trials.modelfile import subject_format
from advisor.trials.runner import inspect_subject, run_trial
from advisor.trials.spawn import SpawnStarter
from advisor.trials.supervise import terminate_all_trials
from tests.support import FAKE_TRIALS

FAKE = FAKE_TRIALS / "fake_trial.py"
BUILTIN = SubjectSpec(model_path=None)
SETTING = TrialSpec(ThreadSetting(2, 1), warmup_s=0.1, measure_s=0.2, round=1)


def fake(mode: str, *extra: str) -> list[str]:
    return [sys.executable, str(FAKE), mode, *extra]


def run_fake(mode: str, *extra: str, deadline_s: float = 30.0) -> TrialResult:
    return run_trial(SETTING, BUILTIN, deadline_s=deadline_s, program=fake(mode, *extra))


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def wait_gone(pids: list[int], within_s: float = 10.0) -> list[int]:
    """The pids still alive after ``within_s`` (reaping by init may take a moment)."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        left = [pid for pid in pids if alive(pid)]
        if not left:
            return []
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


def test_a_good_answer_is_read_from_the_result_file_not_stdout() -> None:
    result = run_fake("ok")
    assert result.status == "ok", result.reason
    assert (result.setting.intra, result.setting.inter, result.round) == (2, 1, 1)
    assert result.p99_ms == 4.0
    assert result.requests == 100
    assert result.nr_throttled == 3
    assert result.threads == 7


def test_a_setting_reaches_the_child_as_all_three_variables() -> None:
    result = run_fake("env")
    assert json.loads(result.reason or "") == {
        "TF_NUM_INTRAOP_THREADS": "2",
        "TF_NUM_INTEROP_THREADS": "1",
        "OMP_NUM_THREADS": "2",
    }


def test_the_baseline_child_gets_no_thread_variable_even_if_the_parent_has_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The advisor may run in a pod that already mounts an earlier advice.
    for key in TENSORFLOW.thread_names:
        monkeypatch.setenv(key, "7")
    baseline = TrialSpec(ThreadSetting.TF_DEFAULT, warmup_s=0.1, measure_s=0.1)
    result = run_trial(baseline, BUILTIN, deadline_s=30, program=fake("env"))
    assert json.loads(result.reason or "") == dict.fromkeys(TENSORFLOW.thread_names)
    assert result.is_baseline


def test_the_baseline_child_does_not_inherit_the_parents_onednn_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An advisor pod that mounts an advice which set oneDNN: its "TF default" baseline must be
    # TF's default in that too, not the mounted value.
    names = (*TENSORFLOW.thread_names, "TF_ENABLE_ONEDNN_OPTS")
    for key in names:
        monkeypatch.setenv(key, "0" if key == "TF_ENABLE_ONEDNN_OPTS" else "7")
    baseline = TrialSpec(ThreadSetting.TF_DEFAULT, warmup_s=0.1, measure_s=0.1)
    result = run_trial(baseline, BUILTIN, deadline_s=30, program=fake("env", ",".join(names)))
    assert json.loads(result.reason or "") == dict.fromkeys(names)


def test_a_trial_gets_the_onednn_value_it_measures_whatever_the_parent_has() -> None:
    env = trial_env(ThreadSetting(2, 1), base={"TF_ENABLE_ONEDNN_OPTS": "0"}, onednn="1")
    assert env["TF_ENABLE_ONEDNN_OPTS"] == "1"
    assert "TF_ENABLE_ONEDNN_OPTS" not in trial_env(
        ThreadSetting(2, 1), base={"TF_ENABLE_ONEDNN_OPTS": "0"}
    )


def test_trial_env_quiets_tf_and_keeps_a_user_log_level() -> None:
    env = trial_env(
        ThreadSetting(3, 1), base={"TF_CPP_MIN_LOG_LEVEL": "3", "OMP_NUM_THREADS": "9", "A": "b"}
    )
    assert env["TF_CPP_MIN_LOG_LEVEL"] == "3"
    assert env["TF_NUM_INTRAOP_THREADS"] == env["OMP_NUM_THREADS"] == "3"
    assert env["TF_NUM_INTEROP_THREADS"] == "1"
    assert env["A"] == "b"
    default = trial_env(ThreadSetting.TF_DEFAULT, base={"TF_NUM_INTEROP_THREADS": "4"})
    assert default["TF_CPP_MIN_LOG_LEVEL"] == "2"
    assert "TF_NUM_INTEROP_THREADS" not in default  # TF's default: inherited values removed


def test_a_hung_trial_is_killed_at_its_deadline_with_its_whole_process_group(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "pids"
    started = time.monotonic()
    result = run_fake("hang", str(pidfile), deadline_s=2.0)
    elapsed = time.monotonic() - started
    assert result.status == "timeout"
    assert result.reason == "no answer within its 2 s deadline; killed"
    assert elapsed < 60  # the fake sleeps an hour: returning at all proves the kill
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 2
    assert wait_gone(pids) == []


def test_terminate_all_trials_kills_a_running_trial_and_says_so(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    results: list[TrialResult] = []
    worker = threading.Thread(
        target=lambda: results.append(run_fake("hang", str(pidfile), deadline_s=120))
    )
    worker.start()
    end = time.monotonic() + 30
    while not (pidfile.exists() and len(pidfile.read_text().split()) == 2):
        assert time.monotonic() < end, "the fake trial never started"
        time.sleep(0.05)
    terminate_all_trials()
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert results[0].status == "failed"
    assert results[0].reason == "stopped: the run is being interrupted"
    assert wait_gone([int(p) for p in pidfile.read_text().split()]) == []


@pytest.mark.parametrize(
    ("mode", "status", "reason"),
    [
        ("crash", "crashed", "exited with code 3: RuntimeError: the model exploded"),
        ("sigkill", "oom", "killed by SIGKILL (out of memory?)"),
        ("sigsegv", "crashed", "killed by SIGSEGV"),
        ("garbage", "failed", "garbled answer (not JSON): 'this is {not json'"),
        ("not_object", "failed", "garbled answer (not an object): '[1, 2, 3]'"),
        (
            "silent",
            "failed",
            "exited without an answer; last output: loaded the model, then forgot to answer",
        ),
        (
            "invalid",
            "failed",
            "the trial's answer does not validate: p99_ms: Input should be greater than or "
            "equal to 0",
        ),
    ],
)
def test_a_faulty_trial_becomes_a_status_and_a_one_line_reason(
    mode: str, status: str, reason: str
) -> None:
    result = run_fake(mode)
    assert (result.status, result.reason) == (status, reason)
    assert (result.setting.intra, result.setting.inter, result.round) == (2, 1, 1)
    assert result.p99_ms is None


def test_a_program_that_cannot_start_is_a_failed_trial(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-program")
    result = run_trial(SETTING, BUILTIN, deadline_s=5, program=[missing])
    assert result.status == "failed"
    assert result.reason is not None
    assert result.reason.startswith(f"cannot start {missing}:")


def test_no_scratch_space_is_a_failed_trial_not_an_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-tmpdir"))
    result = run_fake("ok")
    assert result.status == "failed"
    assert (result.reason or "").startswith("cannot prepare the trial: [Errno 2] No such file")


def test_no_child_is_left_after_trials() -> None:
    before = set(_children())
    for mode in ("ok", "crash", "sigkill"):
        run_fake(mode)
    assert set(_children()) - before == set()


def _children() -> list[int]:
    me = str(os.getpid())
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(
                line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line
            )
        except OSError:
            continue
        if fields.get("PPid", "").strip() == me and not fields.get("State", "").startswith("Z"):
            found.append(int(status.parent.name))
    return found


# --------------------------------------------------------------------------------------------------
# Paths that cannot be models are refused in the parent, before any child starts
# --------------------------------------------------------------------------------------------------


def test_subject_formats_by_path(tmp_path: Path) -> None:
    saved = tmp_path / "sm"
    saved.mkdir()
    (saved / "saved_model.pb").write_bytes(b"")
    keras_file = tmp_path / "m.keras"
    keras_file.write_bytes(b"PK\x03\x04 rest of a zip archive")
    h5_file = tmp_path / "m.h5"
    h5_file.write_bytes(b"\x89HDF\r\n\x1a\n rest of an HDF5 file")
    assert subject_format(BUILTIN) == "builtin"
    assert subject_format(SubjectSpec(str(saved))) == "savedmodel"
    assert subject_format(SubjectSpec(str(keras_file))) == "keras"
    assert subject_format(SubjectSpec(str(h5_file))) == "keras"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing", "{p}/missing: no such file or directory"),
        (
            lambda p: _mkdir(p / "empty"),
            "{p}/empty: the directory is empty (expected a SavedModel)",
        ),
        (
            lambda p: _write(_mkdir(p / "notsm") / "variables.txt").parent,
            "{p}/notsm: not a SavedModel directory (no saved_model.pb in it) nor a TF Serving "
            "base path (no numbered version directory in it)",
        ),
        (
            lambda p: _write(p / "model.h5"),
            "{p}/model.h5: not a Keras .h5 file (its content is not HDF5)",
        ),
        (
            lambda p: _write(p / "model.onnx"),
            "{p}/model.onnx: expected a SavedModel directory or a .keras file",
        ),
    ],
)
def test_unusable_paths_are_model_errors_before_any_child(
    tmp_path: Path, make: Callable[[Path], Path], message: str
) -> None:
    path = make(tmp_path)
    with pytest.raises(ModelError) as caught:
        inspect_subject(SubjectSpec(str(path)), timeout_s=0.001)
    assert str(caught.value) == message.format(p=tmp_path)
    result = run_trial(SETTING, SubjectSpec(str(path)), deadline_s=0.001)
    assert (result.status, result.reason) == ("failed", message.format(p=tmp_path))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (SubjectSpec(None, batch_size=0), "built-in model: batch size 0: must be at least 1"),
        (SubjectSpec(None, concurrency=0), "built-in model: concurrency 0: must be at least 1"),
    ],
)
def test_bad_sizes_are_model_errors_before_any_child(spec: SubjectSpec, message: str) -> None:
    with pytest.raises(ModelError, match=f"^{message}$"):
        inspect_subject(spec, timeout_s=0.001)


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def _write(path: Path) -> Path:
    path.write_text("x")
    return path


def test_requests_the_child_cannot_replay_are_one_requests_error_line(tmp_path: Path) -> None:
    """The child's answer crosses to the parent as ModelError's does: the line, its own code."""
    model = _mkdir(tmp_path / "m")
    (model / "saved_model.pb").write_bytes(b"pb")
    requests = tmp_path / "r.json"
    requests.write_text('{"instances": [1]}')
    program = [sys.executable, str(FAKE_TRIALS / "fake_trial.py"), "requests_error"]
    with pytest.raises(RequestsError) as caught:
        inspect_subject(
            SubjectSpec(str(model), requests=str(requests)),
            timeout_s=60,
            starter=SpawnStarter(program),
        )
    assert str(caught.value) == f"{requests}: record 2: bad"
