"""How a sweep's trials start: forked from a trial server, or spawned, with a fallback.

A spawned trial pays TensorFlow's import (2.5-4 s here) before it measures; a forked one is ready
in a few tenths of a second, so the same budget buys several times the measurements. Forking
after ``import tensorflow`` is safe only while TF's runtime is uninitialised, and a platform may
still break it (a TF build that starts its runtime at import, a seccomp profile, a model whose
loader misbehaves after fork), so ``auto`` treats the fork path as an optimisation: the first
time the server fails to start, dies, or a forked child dies or hangs before it has loaded the
model, the trial is run again as a spawned process, every later trial is spawned, and the
note says so once. ``fork`` makes that an error instead; ``spawn`` never starts a server.

Only the real trial child can be forked (the server forks itself into it), so whoever builds the
Launcher decides whether forking is possible by the programs it gives (``TrialPrograms``): a
program of the caller's own (the tests' fake trials) is spawned, with no server.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Literal

from advisor.calibrate.spec import SubjectSpec, TrialSpec
from advisor.errors import CalibrationError, Opt
from advisor.models import SubjectInfo, ThreadSetting, TrialMode, TrialResult
from advisor.trials import runner, supervise
from advisor.trials.environment import trial_env, trial_program
from advisor.trials.forkclient import ServerError, TrialServer, server_program
from advisor.trials.modelfile import check_subject
from advisor.trials.requestfile import requests_source
from advisor.trials.spawn import SpawnStarter
from advisor.trials.supervise import Child, LaunchFailure, Starter

log = logging.getLogger(__name__)

#: a forked child that has not loaded the model after this long (or 4x what inspection took,
#: if more) is taken to hang, and the sweep falls back to spawned trials
MIN_LOAD_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class TrialPrograms:
    """What trials run: ``child`` spawned for a trial, and ``server``, the trial server forked
    trials come from (None: there is none, every trial is spawned).

    The default is the real pair. A caller's own child program gets no server
    (``TrialPrograms.spawned``): the server would fork the real child, not that program.
    """

    child: tuple[str, ...] = field(default_factory=trial_program)
    server: tuple[str, ...] | None = field(default_factory=server_program)

    @classmethod
    def spawned(cls, child: Sequence[str]) -> TrialPrograms:
        """``child`` for every trial, each a new process: no trial server."""
        return cls(child=tuple(child), server=None)


class _ForkChild:
    def __init__(self, server: TrialServer, pid: int) -> None:
        self._server = server
        self.pid = pid
        self._code: int | None = None

    def wait(self, timeout_s: float) -> int | None:
        if self._code is None:
            try:
                self._code = self._server.wait_exit(self.pid, max(timeout_s, 0.0))
            except ServerError as exc:
                raise LaunchFailure(str(exc)) from None
        return self._code


@dataclass
class ForkStarter:
    """Children forked by ``server``; a server that fails is a LaunchFailure."""

    server: TrialServer
    forked: bool = True
    #: how long the server may take to read a trial's request file before it forks (the load
    #: timeout: a large file takes as long to read as the model takes to load)
    preload_timeout_s: float = 0.0

    def start(
        self, *, request_file: Path, result_file: Path, output_file: Path, env: dict[str, str]
    ) -> Child:
        try:
            pid = self.server.fork(
                request_file=request_file,
                result_file=result_file,
                output_file=output_file,
                env=env,
                preload_timeout_s=self.preload_timeout_s,
            )
        except ServerError as exc:
            raise LaunchFailure(str(exc)) from None
        return _ForkChild(self.server, pid)


@dataclass
class _Owned:
    """``starter``, noting the process group of every child it starts in ``started``."""

    starter: Starter
    started: set[int]

    @property
    def forked(self) -> bool:
        return self.starter.forked

    def start(
        self, *, request_file: Path, result_file: Path, output_file: Path, env: dict[str, str]
    ) -> Child:
        child = self.starter.start(
            request_file=request_file, result_file=result_file, output_file=output_file, env=env
        )
        self.started.add(child.pid)  # each child leads its own group
        return child


class Launcher:
    """The sweep's TrialFn: runs each trial forked while that works, spawned otherwise.

    ``inspect`` comes first (it starts the server and loads the model once in a forked child);
    ``close`` stops the server. ``notes`` holds the one line a fallback adds to the result.
    ``programs`` are what runs (the real child and server by default).

    Used as a context manager it owns its processes: leaving the block closes it, and leaving it
    by an exception (SIGTERM, Ctrl-C, a failure) first kills every child it started that still
    runs and its server, so none outlives the sweep. It kills only its own: another launcher's
    trials (a oneDNN server beside the sweep's) are that launcher's to end.
    """

    def __init__(
        self,
        subject: SubjectSpec,
        mode: TrialMode,
        *,
        programs: TrialPrograms | None = None,
        server_env: dict[str, str] | None = None,
    ) -> None:
        self.subject = subject
        self.mode = mode
        self.programs = programs or TrialPrograms()
        self._spawn = SpawnStarter(self.programs.child)
        self.notes: list[str] = []
        self.fell_back = False
        self._server_env = server_env
        self._server: TrialServer | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._load_timeout_s = MIN_LOAD_TIMEOUT_S
        #: seconds the server took to import TensorFlow (None: no server ran)
        self.import_s: float | None = None
        #: seconds inspection took (a forked child's, when forking works: start-up per trial)
        self.inspect_s: float | None = None
        #: seconds from starting the trial server until it was ready (None: none was started)
        self.startup_s: float | None = None
        #: the process group of every child it started (``terminate`` kills those still running)
        self._started: set[int] = set()

    def __enter__(self) -> Launcher:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if error is not None:
            self.terminate()
        self.close()

    def terminate(self) -> None:
        """Kill its children that still run and its server, now (interrupted: nothing of it may
        outlive the run); ``close`` then cleans up."""
        own = set(self._started)
        if self._server is not None and self._server.pid is not None:
            own.add(self._server.pid)
        supervise.terminate(own)

    @property
    def used(self) -> Literal["fork", "spawn"]:
        """How trials start now: "fork" or "spawn"."""
        return "fork" if self._server is not None else "spawn"

    @property
    def used_overall(self) -> Literal["fork", "spawn"]:
        """How the trials started in the end: "spawn" once a fallback happened (or no server)."""
        return "spawn" if self.fell_back or self.import_s is None else "fork"

    def inspect(self, timeout_s: float) -> SubjectInfo:
        """Describe the subject (ModelError if it is unusable), starting the server first."""
        began = time.monotonic()
        # a bad path or request file fails now, not after a TF import
        requests_source(self.subject, check_subject(self.subject))
        if self.mode != "spawn":
            self._start_server(timeout_s)
        info: SubjectInfo | None = None
        if self._server is not None:
            try:
                left = max(1.0, timeout_s - (time.monotonic() - began))
                started = time.monotonic()
                starter = ForkStarter(self._server, preload_timeout_s=left)
                info = runner.inspect_subject(
                    self.subject, timeout_s=left, starter=self._owned(starter)
                )
                self.inspect_s = time.monotonic() - started
            except LaunchFailure as exc:
                self._fall_back(str(exc))
        if info is None:
            started = time.monotonic()
            left = max(1.0, timeout_s - (started - began))
            info = runner.inspect_subject(
                self.subject, timeout_s=left, starter=self._owned(self._spawn)
            )
            self.inspect_s = time.monotonic() - started
        self._load_timeout_s = max(MIN_LOAD_TIMEOUT_S, 4 * (self.inspect_s or 0.0))
        return info

    def launch(self, load_timeout_s: float) -> None:
        """Start the server without inspecting the subject (another import-time setting of a
        subject an earlier Launcher inspected) and without waiting for it: ``ready`` does."""
        self._load_timeout_s = load_timeout_s
        if self.mode != "spawn":
            self._launch_server()

    def ready(self, timeout_s: float) -> None:
        """Until the launched server is ready (or the fallback has happened)."""
        if self._server is None:
            return
        try:
            self._server.wait_ready(timeout_s)
        except ServerError as exc:
            self._fall_back(str(exc))
            return
        self.import_s = self._server.import_s

    @property
    def load_timeout_s(self) -> float:
        return self._load_timeout_s

    def __call__(self, spec: TrialSpec, deadline_s: float) -> TrialResult:
        began = time.monotonic()
        if self._server is not None:
            try:
                return runner.run_trial(
                    spec,
                    self.subject,
                    deadline_s=deadline_s,
                    starter=self._owned(
                        ForkStarter(self._server, preload_timeout_s=self._load_timeout_s)
                    ),
                    load_timeout_s=self._load_timeout_s,
                )
            except LaunchFailure as exc:
                self._fall_back(str(exc))
        left = deadline_s - (time.monotonic() - began)
        return runner.run_trial(
            spec, self.subject, deadline_s=max(left, 0.0), starter=self._owned(self._spawn)
        )

    def state(self) -> dict[str, object] | None:
        """The server's own report (threads, tf_initialized), or None without a server."""
        return None if self._server is None else self._server.state()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def _owned(self, starter: Starter) -> Starter:
        return _Owned(starter, self._started)

    def _start_server(self, timeout_s: float) -> None:
        began = time.monotonic()
        self._launch_server()
        self.ready(timeout_s)
        self.startup_s = time.monotonic() - began
        if self._server is not None:
            log.debug("trial server ready (TF imported in %.1f s)", self.import_s or 0.0)

    def _launch_server(self) -> None:
        if self.programs.server is None:
            if self.mode == "fork":
                raise CalibrationError(
                    Opt("trial_mode"), " fork: the trial program cannot be forked"
                )
            return
        self._scratch = tempfile.TemporaryDirectory(prefix="tfta-server-")
        env = self._server_env or trial_env(ThreadSetting.TF_DEFAULT)
        server = TrialServer(env, Path(self._scratch.name) / "server.log", self.programs.server)
        self._server = server
        try:
            server.launch()
        except ServerError as exc:
            self._fall_back(str(exc))

    def _fall_back(self, reason: str) -> None:
        if self.mode == "fork":
            self.close()
            raise CalibrationError(Opt("trial_mode"), f" fork: {reason}")
        self.close()
        self.fell_back = True
        line = f"trials ran as one new process each (slower): {reason}"
        self.notes.append(line)
        log.warning("%s", line)
