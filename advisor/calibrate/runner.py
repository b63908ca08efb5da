"""The parent side of a trial: start one child per setting, supervise it, read its one answer.

TensorFlow reads its thread settings once, at start-up, so every setting needs a fresh process;
and this module must never import tensorflow (an import-linter contract checks it). A child gets
the setting the way a consumer will, through TF_NUM_INTRAOP_THREADS, TF_NUM_INTEROP_THREADS and
OMP_NUM_THREADS in its environment (all three removed for the TF-default baseline). It answers
with one JSON object in a result file (protocol in ``advisor.calibrate.trial``), never on
stdout, because TF and oneDNN write what they like there.

Every child runs in its own session, so a deadline or a signal kills its whole process group,
grandchildren included. Trial faults never raise: they become a TrialResult with a status
(failed, crashed, oom, timeout) and a one-line reason, and the sweep goes on.

How a child comes to exist is a ``Launcher``'s business: ``SpawnLauncher`` starts a fresh
interpreter (the program above); the fork launcher in ``advisor.calibrate.launch`` asks a trial
server that has TensorFlow imported already. A forked child that dies or hangs before it has
loaded the workload raises ``LaunchFailure``: that is the way it was started failing, not the
setting, and the caller runs the trial again as a spawned process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, Protocol

from pydantic import ValidationError

from advisor.errors import ModelError
from advisor.models import ENV_ONEDNN, OnednnValue, TrialResult, TrialStatus, WorkloadInfo
from advisor.probe.cgroup_path import locate
from advisor.probe.files import HostFiles
from advisor.probe.mountinfo import read_mountinfo
from advisor.probe.proc_cgroup import read_proc_cgroup

log = logging.getLogger(__name__)

#: the environment variables a trial sets (and the baseline removes): what a consumer's pod gets.
THREAD_ENV = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS")

#: the parent's pid, for the child to check that it was not orphaned before it asked to die with it
PARENT_PID_ENV = "TFTA_TRIAL_PARENT_PID"

#: TF's C++ logging at WARNING and above only; its INFO lines (oneDNN banners) are noise here.
QUIET_TF_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "KERAS_BACKEND": "tensorflow"}

#: how much of a child's output tail is kept to explain a crash
_TAIL_BYTES = 4096

#: after SIGKILL, how long to wait for the process to be reaped
_REAP_TIMEOUT_S = 10.0

#: what a model path may end with when it is a file (Keras 3 loads both), and how each begins:
#: checked in the parent, since Keras answers garbage with a misleading "File not found"
_KERAS_SUFFIXES = (".keras", ".h5")
_KERAS_MAGIC = {".keras": b"PK\x03\x04", ".h5": b"\x89HDF\r\n\x1a\n"}
_KERAS_FORMAT = {".keras": "a zip archive", ".h5": "HDF5"}

#: live children by process-group id (== pid: each child leads its own session)
_LIVE: dict[int, Child] = {}

#: trial servers' process groups: killed with the children by terminate_all_trials
SERVERS: set[int] = set()

#: groups killed by terminate_all_trials: their SIGKILL is ours, not the OOM killer's
_TERMINATED: set[int] = set()

WorkloadKind = Literal["builtin", "savedmodel", "keras"]


@dataclass(frozen=True)
class WorkloadSpec:
    """What to load in the child."""

    model_path: str | None  # None = built-in workload
    signature: str = "serving_default"
    batch_size: int = 1
    concurrency: int = 1


@dataclass(frozen=True)
class TrialSpec:
    """One setting to measure; both thread counts None = TF default, the baseline."""

    intra_op_threads: int | None
    inter_op_threads: int | None
    warmup_s: float
    measure_s: float
    round: int = 0
    #: the window also lasts until this many requests have completed (a p99 needs a few hundred
    #: samples: a 1 s window of a 20 ms model has 50, and its "p99" is its maximum) ...
    min_requests: int = 0
    #: ... but never longer than this (None: ``measure_s`` alone decides)
    max_measure_s: float | None = None
    #: TF_ENABLE_ONEDNN_OPTS for this trial (None: left as the environment has it)
    onednn: OnednnValue | None = None

    @property
    def longest_s(self) -> float:
        """The longest this trial may measure, for its deadline."""
        return max(self.measure_s, self.max_measure_s or 0.0)


@dataclass(frozen=True)
class _Outcome:
    """How a child ended: its answer if it gave a readable one, else a status and reason."""

    answer: dict[str, Any] | None
    status: TrialStatus
    reason: str | None


class Child(Protocol):
    """A started trial child, however it was started."""

    pid: int

    def wait(self, timeout_s: float) -> int | None:
        """Its exit code (negative: the signal that killed it) or None if still running."""
        ...


class Launcher(Protocol):
    """Starts trial children; ``forked`` says whether a failure to load is the launcher's."""

    @property
    def forked(self) -> bool: ...

    def start(
        self, *, request_file: Path, result_file: Path, output_file: Path, env: dict[str, str]
    ) -> Child: ...


class LaunchFailure(Exception):
    """A forked child died or hung before it had loaded the workload, or its server is gone."""


class _PopenChild:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.pid = process.pid

    def wait(self, timeout_s: float) -> int | None:
        try:
            return self.process.wait(timeout=max(timeout_s, 0.0))
        except subprocess.TimeoutExpired:
            return None


@dataclass(frozen=True)
class SpawnLauncher:
    """A fresh interpreter per trial: ``program`` (default: the real trial child) plus
    ``--request FILE --result FILE``."""

    program: Sequence[str] | None = None
    forked: bool = False

    def start(
        self, *, request_file: Path, result_file: Path, output_file: Path, env: dict[str, str]
    ) -> Child:
        argv = [
            *(default_program() if self.program is None else self.program),
            "--request",
            str(request_file),
            "--result",
            str(result_file),
        ]
        with output_file.open("ab") as output:
            try:
                process = subprocess.Popen(
                    argv,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as exc:
                raise OSError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
        return _PopenChild(process)


def real_program() -> list[str]:
    """The real trial child, run by the same interpreter as the parent."""
    return [sys.executable, "-m", "advisor.calibrate.trial"]


def default_program() -> list[str]:
    """The trial child spawned by default (tests swap in fake programs here)."""
    return real_program()


def forkable() -> bool:
    """Whether trials may be forked from a trial server: only the real trial program can be
    (a fake program from the tests is a different program, not a different way to start one)."""
    return default_program() == real_program()


def trial_env(
    intra_op_threads: int | None,
    inter_op_threads: int | None,
    base: Mapping[str, str] | None = None,
    onednn: OnednnValue | None = None,
) -> dict[str, str]:
    """The child's environment: ``base`` without any inherited thread setting, plus this one.

    Inherited values are removed first: the advisor may itself run in a pod that already mounts
    an earlier advice, and the baseline must be TF's own default.
    """
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in THREAD_ENV}
    if intra_op_threads is not None:
        env["TF_NUM_INTRAOP_THREADS"] = str(intra_op_threads)
        env["OMP_NUM_THREADS"] = str(intra_op_threads)
    if inter_op_threads is not None:
        env["TF_NUM_INTEROP_THREADS"] = str(inter_op_threads)
    if onednn is not None:
        env[ENV_ONEDNN] = onednn
    for key, value in QUIET_TF_ENV.items():
        env.setdefault(key, value)
    # The child must run this very package, installed or not.
    package_root = str(Path(__file__).resolve().parents[2])
    paths = [package_root, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def is_keras_file(path: str) -> bool:
    """A model path Keras loads as one file (.keras, .h5), by its name alone."""
    return Path(path).suffix.lower() in _KERAS_SUFFIXES


def workload_kind(workload: WorkloadSpec) -> WorkloadKind:
    """Which loader a path needs; a path that cannot be a model is a ModelError, in the parent."""
    if workload.model_path is None:
        return "builtin"
    path = Path(workload.model_path)
    if not path.exists():
        raise ModelError(f"{path}: no such file or directory")
    if path.is_dir():
        if not any(path.iterdir()):
            raise ModelError(f"{path}: the directory is empty (expected a SavedModel)")
        if not (path / "saved_model.pb").is_file() and not (path / "saved_model.pbtxt").is_file():
            raise ModelError(f"{path}: not a SavedModel directory (no saved_model.pb in it)")
        return "savedmodel"
    if not path.is_file():
        # a FIFO or a device: opening it to check its first bytes could block forever
        raise ModelError(f"{path}: not a regular file or a directory")
    suffix = path.suffix.lower()
    if is_keras_file(workload.model_path):
        if not _starts_with(path, _KERAS_MAGIC[suffix]):
            raise ModelError(
                f"{path}: not a Keras {suffix} file (its content is not {_KERAS_FORMAT[suffix]})"
            )
        return "keras"
    raise ModelError(f"{path}: expected a SavedModel directory or a .keras file")


def _starts_with(path: Path, magic: bytes) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(magic)) == magic
    except OSError as exc:
        raise ModelError(f"{path}: cannot read it: {exc.strerror or exc}") from None


def run_trial(
    spec: TrialSpec,
    workload: WorkloadSpec,
    *,
    deadline_s: float,
    program: Sequence[str] | None = None,
    launcher: Launcher | None = None,
    load_timeout_s: float | None = None,
) -> TrialResult:
    """Measure one setting in a fresh child; never raises for anything the trial does.

    ``deadline_s`` is the wall-clock time the child may take from its start (TF import and model
    load included); past it the whole process group is killed and the result is a timeout.
    ``program`` replaces the child command (tests use fake trial programs); the runner appends
    ``--request FILE --result FILE``. With a forking ``launcher``, a child that has not loaded the
    workload within ``load_timeout_s`` (or dies before) raises LaunchFailure.
    """
    identity: dict[str, Any] = {
        "intra_op_threads": spec.intra_op_threads,
        "inter_op_threads": spec.inter_op_threads,
        "round": spec.round,
        "onednn": spec.onednn,
    }
    try:
        kind = workload_kind(workload)
    except ModelError as exc:
        return TrialResult(**identity, status="failed", reason=str(exc))
    request = {
        "mode": "trial",
        "kind": kind,
        "path": workload.model_path,
        "signature": workload.signature,
        "batch_size": workload.batch_size,
        "concurrency": workload.concurrency,
        "warmup_s": spec.warmup_s,
        "measure_s": spec.measure_s,
        "min_requests": spec.min_requests,
        "max_measure_s": spec.max_measure_s,
    }
    env = trial_env(spec.intra_op_threads, spec.inter_op_threads, onednn=spec.onednn)
    outcome = _run_child(
        request,
        env=env,
        timeout_s=deadline_s,
        launcher=launcher or SpawnLauncher(program),
        load_timeout_s=load_timeout_s,
    )
    label = _label(spec)
    if outcome.answer is None:
        log.info("trial %s: %s (%s)", label, outcome.status, outcome.reason)
        return TrialResult(**identity, status=outcome.status, reason=outcome.reason)
    answer = dict(outcome.answer)
    status = answer.pop("status", None)
    if status == "failed":
        reason = one_line(str(answer.get("reason") or "the trial reported a failure"))
        log.info("trial %s: failed (%s)", label, reason)
        return TrialResult(**identity, status="failed", reason=reason)
    if status != "ok":
        return TrialResult(**identity, status="failed", reason=f"unknown status {status!r}")
    try:
        result = TrialResult(**identity, status="ok", **answer)
    except (ValidationError, TypeError) as exc:
        reason = one_line(f"the trial's answer does not validate: {_first_error(exc)}")
        return TrialResult(**identity, status="failed", reason=reason)
    log.info(
        "trial %s: p50 %.2f ms, p99 %.2f ms, %.1f req/s, %s threads",
        label,
        result.p50_ms or 0.0,
        result.p99_ms or 0.0,
        result.throughput_rps or 0.0,
        result.threads,
    )
    return result


def check_workload(workload: WorkloadSpec) -> WorkloadKind:
    """What can be checked without TensorFlow (sizes, the path); ModelError (one line) if wrong.

    Cheap, so it runs before anything that starts TensorFlow: a typo in --model is reported in
    milliseconds, not after a trial server has imported TF.
    """
    where = workload.model_path or "built-in workload"
    if workload.batch_size < 1:
        raise ModelError(f"{where}: batch size {workload.batch_size}: must be at least 1")
    if workload.concurrency < 1:
        raise ModelError(f"{where}: concurrency {workload.concurrency}: must be at least 1")
    return workload_kind(workload)


def inspect_workload(
    workload: WorkloadSpec, *, timeout_s: float = 120, launcher: Launcher | None = None
) -> WorkloadInfo:
    """Load the model once in a child and describe it; anything wrong is a one-line ModelError.

    The child also runs one request on the synthesised inputs, so a model that cannot run on
    them fails here, before any budget is spent on a sweep.
    """
    where = workload.model_path or "built-in workload"
    kind = check_workload(workload)
    request = {
        "mode": "inspect",
        "kind": kind,
        "path": workload.model_path,
        "signature": workload.signature,
        "batch_size": workload.batch_size,
        "concurrency": workload.concurrency,
    }
    outcome = _run_child(
        request,
        env=trial_env(None, None),
        timeout_s=timeout_s,
        launcher=launcher or SpawnLauncher(),
        load_timeout_s=None,
    )
    if outcome.answer is None:
        if outcome.status == "timeout":
            raise ModelError(f"{where}: loading the model took longer than {timeout_s:g} s")
        raise ModelError(f"{where}: loading the model failed: {outcome.reason}")
    status = outcome.answer.get("status")
    if status == "model_error":
        raise ModelError(one_line(str(outcome.answer.get("reason") or f"{where}: unusable model")))
    try:
        return WorkloadInfo.model_validate(outcome.answer.get("info"))
    except ValidationError as exc:
        raise ModelError(
            f"{where}: the model's description does not validate: {_first_error(exc)}"
        ) from None


def terminate_all_trials() -> None:
    """Kill every live child's process group, and every trial server's, now; safe to call from a
    signal handler."""
    for pgid in list(_LIVE):
        _TERMINATED.add(pgid)
        _kill_group(pgid)
    for pgid in list(SERVERS):
        _kill_group(pgid)


# --------------------------------------------------------------------------------------------------
# Child supervision
# --------------------------------------------------------------------------------------------------


def _run_child(
    request: dict[str, Any],
    *,
    env: dict[str, str],
    timeout_s: float,
    launcher: Launcher,
    load_timeout_s: float | None,
) -> _Outcome:
    try:
        return _run_child_in_scratch(
            request, env=env, timeout_s=timeout_s, launcher=launcher, load_timeout_s=load_timeout_s
        )
    except OSError as exc:  # no scratch space (a full or read-only TMPDIR), or no program
        return _Outcome(None, "failed", one_line(f"cannot prepare the trial: {exc}"))


def _run_child_in_scratch(
    request: dict[str, Any],
    *,
    env: dict[str, str],
    timeout_s: float,
    launcher: Launcher,
    load_timeout_s: float | None,
) -> _Outcome:
    with tempfile.TemporaryDirectory(prefix="tfta-trial-") as scratch:
        request_file = Path(scratch) / "request.json"
        result_file = Path(scratch) / "result.json"
        output_file = Path(scratch) / "output.log"
        marker = Path(scratch) / "loaded"
        if launcher.forked and request.get("mode") == "trial":
            request = {**request, "loaded_marker": str(marker)}
        request_file.write_text(json.dumps(request), encoding="utf-8")
        output_file.touch()  # there to read even if the child dies before it writes a byte
        oom_before = _oom_kills()
        try:
            child = launcher.start(
                request_file=request_file,
                result_file=result_file,
                output_file=output_file,
                env={**env, PARENT_PID_ENV: str(os.getpid())},
            )
        except OSError as exc:
            return _Outcome(None, "failed", one_line(str(exc)))
        struck = _supervise(child, timeout_s, marker if launcher.forked else None, load_timeout_s)
        with output_file.open("rb") as output:
            tail = _tail(output)
        if child.pid in _TERMINATED:
            _TERMINATED.discard(child.pid)
            return _Outcome(None, "failed", "stopped: the run is being interrupted")
        outcome = _ended(
            child,
            struck=struck,
            timeout_s=timeout_s,
            load_timeout_s=load_timeout_s,
            oom_before=oom_before,
            result_file=result_file,
            tail=tail,
        )
        if launcher.forked and outcome.answer is None and not marker.exists():
            raise LaunchFailure(f"a forked trial child {outcome.reason}")
        return outcome


def _ended(
    child: Child,
    *,
    struck: str | None,
    timeout_s: float,
    load_timeout_s: float | None,
    oom_before: tuple[int, ...] | None,
    result_file: Path,
    tail: str,
) -> _Outcome:
    if struck == "load":
        return _Outcome(
            None, "timeout", f"had not loaded the workload after {load_timeout_s:g} s; killed"
        )
    if struck == "deadline":
        return _Outcome(None, "timeout", f"no answer within its {timeout_s:g} s deadline; killed")
    returncode = child.wait(0) or 0
    if returncode < 0:
        return _signal_death(-returncode, oom_before, tail)
    if returncode != 0:
        detail = f": {tail}" if tail else ""
        return _Outcome(None, "crashed", one_line(f"exited with code {returncode}{detail}"))
    return _read_answer(result_file, tail)


def _supervise(
    child: Child, timeout_s: float, marker: Path | None, load_timeout_s: float | None
) -> str | None:
    """Wait for the child; kill its group at the deadline, or when it has not loaded the workload
    (``marker`` missing) within ``load_timeout_s``. Returns "deadline", "load" or None."""
    _LIVE[child.pid] = child
    started = time.monotonic()
    deadline = started + max(timeout_s, 0.0)
    loading_until = None if marker is None or load_timeout_s is None else started + load_timeout_s
    try:
        while True:
            now = time.monotonic()
            if loading_until is not None and marker is not None and marker.exists():
                loading_until = None
            if loading_until is not None and now >= loading_until:
                _stop(child)
                return "load"
            if now >= deadline:
                _stop(child)
                return "deadline"
            step = deadline - now if loading_until is None else min(deadline - now, 0.05)
            if child.wait(step) is not None:
                return None
    finally:
        # Whatever the child left behind (a stray grandchild) goes with it.
        _kill_group(child.pid)
        with contextlib.suppress(LaunchFailure):  # a lost server: its children died with it
            if child.wait(0) is None:
                child.wait(_REAP_TIMEOUT_S)
        _LIVE.pop(child.pid, None)


def _stop(child: Child) -> None:
    _kill_group(child.pid)
    child.wait(_REAP_TIMEOUT_S)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        # No such group: a forked child killed before its setsid() still runs in its server's
        # group; the process itself must go all the same.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pgid, signal.SIGKILL)
    except PermissionError:
        pass


def _signal_death(signum: int, oom_before: tuple[int, ...] | None, tail: str) -> _Outcome:
    name = _signal_name(signum)
    if signum == signal.SIGKILL:
        oom_after = _oom_kills()
        if oom_before is not None and oom_after is not None and oom_after != oom_before:
            return _Outcome(
                None, "oom", "killed by SIGKILL: out of memory (memory cgroup oom_kill)"
            )
        return _Outcome(None, "oom", "killed by SIGKILL (out of memory?)")
    detail = f": {tail}" if tail else ""
    return _Outcome(None, "crashed", one_line(f"killed by {name}{detail}"))


def _read_answer(result_file: Path, tail: str) -> _Outcome:
    try:
        text = result_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        detail = f"; last output: {tail}" if tail else ""
        return _Outcome(None, "failed", one_line(f"exited without an answer{detail}"))
    except (OSError, UnicodeDecodeError) as exc:
        return _Outcome(None, "failed", one_line(f"unreadable answer: {exc}"))
    try:
        answer = json.loads(text)
    except json.JSONDecodeError:
        return _Outcome(None, "failed", one_line(f"garbled answer (not JSON): {text[:80]!r}"))
    if not isinstance(answer, dict):
        return _Outcome(None, "failed", one_line(f"garbled answer (not an object): {text[:80]!r}"))
    return _Outcome(answer, "ok", None)


def _tail(output: IO[bytes]) -> str:
    """The last non-empty line the child printed (a traceback's last line says the most)."""
    output.flush()
    size = output.seek(0, os.SEEK_END)
    output.seek(max(size - _TAIL_BYTES, 0))
    lines = output.read().decode("utf-8", errors="replace").splitlines()
    for line in reversed(lines):
        if line.strip():
            return line.strip()
    return ""


def _oom_kills() -> tuple[int, ...] | None:
    """oom_kill counters of this process's memory cgroup and its ancestors (children share it)."""
    try:
        files = HostFiles(Path("/"))
        location = locate(files, "memory", read_mountinfo(files.root), read_proc_cgroup(files.root))
        if location is None:
            return None
        name = "memory.oom_control" if location.version == 1 else "memory.events"
        counts = []
        for level in location.levels:
            text = files.read(level.directory / name, required=False) or ""
            for line in text.splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip().isdigit():
                    counts.append(int(value))
        return tuple(counts)
    except Exception:  # only a hint for the reason: never let it fail a trial
        return None


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _label(spec: TrialSpec) -> str:
    if spec.intra_op_threads is None and spec.inter_op_threads is None:
        return "baseline (TF default)"
    return f"intra={spec.intra_op_threads} inter={spec.inter_op_threads} round={spec.round}"


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        return f"{where}: {first.get('msg', '')}"
    return str(exc)


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line, clipped: reasons end up in tables, logs and ConfigMap annotations."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
