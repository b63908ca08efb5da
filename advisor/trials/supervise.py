"""Supervising one trial child: its scratch files, its deadline, killing its whole group, reading
its one answer.

Every child runs in its own session, so a deadline or a signal kills its whole process group,
grandchildren included. How a child ends becomes an outcome (an answer, or a status and a
one-line reason); nothing a child does raises, except a forked child that dies or hangs before
it has loaded the model: that is ``LaunchFailure``, the way it was started failing, not the
setting.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from advisor.errors import one_line
from advisor.models import TrialStatus
from advisor.probe.oom import oom_kills
from advisor.trials.environment import PARENT_PID_ENV
from advisor.trials.wire import TrialRequest

#: how much of a child's output tail is kept to explain a crash
_TAIL_BYTES = 4096


#: after SIGKILL, how long to wait for the process to be reaped
REAP_TIMEOUT_S = 10.0


#: live children by process-group id (== pid: each child leads its own session)
_LIVE: dict[int, Child] = {}


#: trial servers' process groups: killed with the children by terminate (a launcher's own) or
#: terminate_all_trials
SERVERS: set[int] = set()


#: groups killed by terminate or terminate_all_trials: their SIGKILL is ours, not the OOM killer's
_TERMINATED: set[int] = set()


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


class PopenChild:
    """A child started with ``subprocess.Popen``: a spawned trial, or a trial server."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.pid = process.pid

    def wait(self, timeout_s: float) -> int | None:
        try:
            return self.process.wait(timeout=max(timeout_s, 0.0))
        except subprocess.TimeoutExpired:
            return None


class Starter(Protocol):
    """Starts trial children; ``forked`` says whether a failure to load is the starter's."""

    @property
    def forked(self) -> bool: ...

    def start(
        self, *, request_file: Path, result_file: Path, output_file: Path, env: dict[str, str]
    ) -> Child: ...


class LaunchFailure(Exception):
    """A forked child died or hung before it had loaded the model, or its server is gone."""


def terminate_all_trials() -> None:
    """Kill every live child's process group, and every trial server's, now; safe to call from a
    signal handler."""
    terminate(set(_LIVE) | SERVERS)


def terminate(pgids: Collection[int]) -> None:
    """Kill those of ``pgids`` that are a live child's or a trial server's process group, now. A
    group that already ended is left alone: its number may be reused by a stranger's process."""
    for pgid in list(_LIVE):
        if pgid in pgids:
            _TERMINATED.add(pgid)
            kill_group(pgid)
    for pgid in list(SERVERS):
        if pgid in pgids:
            kill_group(pgid)


def run_child(
    request: TrialRequest,
    *,
    env: dict[str, str],
    timeout_s: float,
    starter: Starter,
    load_timeout_s: float | None,
) -> _Outcome:
    try:
        with tempfile.TemporaryDirectory(prefix="tfta-trial-") as scratch:
            request_file = Path(scratch) / "request.json"
            result_file = Path(scratch) / "result.json"
            output_file = Path(scratch) / "output.log"
            marker = Path(scratch) / "loaded"
            if starter.forked and request.mode == "trial":
                request = request.model_copy(update={"loaded_marker": str(marker)})
            request_file.write_text(request.model_dump_json(), encoding="utf-8")
            output_file.touch()  # there to read even if the child dies before it writes a byte
            oom_before = oom_kills()
            try:
                child = starter.start(
                    request_file=request_file,
                    result_file=result_file,
                    output_file=output_file,
                    env={**env, PARENT_PID_ENV: str(os.getpid())},
                )
            except OSError as exc:
                return _Outcome(None, "failed", one_line(str(exc)))
            forked_marker = marker if starter.forked else None
            struck = _supervise(child, timeout_s, forked_marker, load_timeout_s)
            tail = last_line(output_file)
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
            if starter.forked and outcome.answer is None and not marker.exists():
                raise LaunchFailure(f"a forked trial child {outcome.reason}")
            return outcome
    except OSError as exc:  # no scratch space (a full or read-only TMPDIR), or no program
        return _Outcome(None, "failed", one_line(f"cannot prepare the trial: {exc}"))


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
            None, "timeout", f"had not loaded the model after {load_timeout_s:g} s; killed"
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
    """Wait for the child; kill its group at the deadline, or when it has not loaded the model
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
                kill_and_reap(child)
                return "load"
            if now >= deadline:
                kill_and_reap(child)
                return "deadline"
            step = deadline - now if loading_until is None else min(deadline - now, 0.05)
            if child.wait(step) is not None:
                return None
    finally:
        # Whatever the child left behind (a stray grandchild) goes with it.
        with contextlib.suppress(LaunchFailure):  # a lost server: its children died with it
            kill_and_reap(child)
        _LIVE.pop(child.pid, None)


def kill_and_reap(child: Child) -> None:
    """SIGKILL the child's whole process group, then wait for the child (at most
    ``REAP_TIMEOUT_S``), so that no zombie and no stray grandchild outlives it."""
    kill_group(child.pid)
    child.wait(REAP_TIMEOUT_S)


def kill_group(pgid: int) -> None:
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
        oom_after = oom_kills()
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


def last_line(path: Path) -> str:
    """The last non-empty line a process wrote to its log (a traceback's last line says the
    most), or "" when there is none or the log cannot be read."""
    try:
        with path.open("rb") as log:
            log.seek(max(log.seek(0, os.SEEK_END) - _TAIL_BYTES, 0))
            lines = log.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return next((line.strip() for line in reversed(lines) if line.strip()), "")


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
