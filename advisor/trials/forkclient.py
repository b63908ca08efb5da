"""The parent's handle on a trial server (``advisor.trials.child.forkserver``), without TensorFlow.

The server is started like any trial child (its own session, its output in a file, dying with
this process) and spoken to over a socketpair in JSON lines. Everything that can go wrong with
it (it does not start, it does not answer in time, it exits) is a ``ServerError`` naming what
happened, which the launcher (``advisor.trials.launch.Launcher``) turns into a fallback to spawned
trials.
"""

from __future__ import annotations

import json
import select
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from advisor.errors import one_line
from advisor.trials.supervise import SERVERS, PopenChild, kill_and_reap, last_line


def server_program() -> tuple[str, ...]:
    """The real trial server's command, run by the same interpreter; ``--fd N`` is added."""
    return (sys.executable, "-m", "advisor.trials.child.forkserver")


#: seconds the server may take to answer ``fork`` when it has no request file to read first
FORK_TIMEOUT_S = 10.0


def _replays(request_file: Path) -> bool:
    """Whether the trial in ``request_file`` replays a request file (the server reads it first)."""
    try:
        return isinstance(json.loads(request_file.read_text(encoding="utf-8")).get("requests"), str)
    except (OSError, ValueError, AttributeError):
        return False


class ServerError(Exception):
    """The trial server could not be started, stopped answering, or exited."""


class TrialServer:
    """One ``forkserver`` process and its protocol socket; one trial at a time.

    ``program`` is the server's command (the real one by default; the tests pass faulty ones).
    """

    def __init__(
        self, env: dict[str, str], log_file: Path, program: Sequence[str] | None = None
    ) -> None:
        self._program = tuple(program) if program is not None else server_program()
        self._env = env
        self._log_file = log_file
        self._process: subprocess.Popen[bytes] | None = None
        self._socket: socket.socket | None = None
        self._buffer = b""
        self._pending: list[dict[str, Any]] = []
        #: seconds the server took to import TensorFlow, from its ready message
        self.import_s: float | None = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def launch(self) -> None:
        """Start the server process; it imports TensorFlow while the caller does other things."""
        ours, theirs = socket.socketpair()
        argv = [*self._program, "--fd", str(theirs.fileno())]
        try:
            with self._log_file.open("ab") as log:
                self._process = subprocess.Popen(
                    argv,
                    env=self._env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    pass_fds=(theirs.fileno(),),
                    start_new_session=True,
                )
        except OSError as exc:
            ours.close()
            raise ServerError(f"cannot start the trial server: {exc.strerror or exc}") from None
        finally:
            theirs.close()
        SERVERS.add(self._process.pid)
        self._socket = ours

    def wait_ready(self, timeout_s: float) -> None:
        """Until the launched server says it is ready; ServerError if it does not in time."""
        ready = self._expect("ready", timeout_s)
        self.import_s = float(ready.get("import_s") or 0.0)
        if ready.get("tf_initialized"):
            raise ServerError("the trial server initialised TensorFlow's runtime before forking")

    def fork(
        self,
        *,
        request_file: Path,
        result_file: Path,
        output_file: Path,
        env: dict[str, str],
        preload_timeout_s: float = FORK_TIMEOUT_S,
    ) -> int:
        """Fork a child for the trial in ``request_file``; its pid.

        Before it answers ``forked`` the server reads the trial's request file to replay, if
        any (once per file), which for a large file takes as long as loading: that wait gets
        ``preload_timeout_s`` (the caller's load timeout) instead of ``FORK_TIMEOUT_S``.
        """
        timeout_s = FORK_TIMEOUT_S
        if preload_timeout_s > FORK_TIMEOUT_S and _replays(request_file):
            timeout_s = preload_timeout_s
        self._send(
            {
                "op": "fork",
                "request": str(request_file),
                "result": str(result_file),
                "output": str(output_file),
                "env": env,
            }
        )
        return int(self._expect("forked", timeout_s)["pid"])

    def wait_exit(self, pid: int, timeout_s: float) -> int | None:
        """The exit code of forked child ``pid`` (negative: killed by that signal), or None if it
        has not ended within ``timeout_s``."""
        try:
            message = self._expect("exit", timeout_s, pid=pid)
        except TimeoutError:
            return None
        return int(message["returncode"])

    def state(self) -> dict[str, Any]:
        """The server's thread count and whether TF's runtime is initialised in it."""
        self._send({"op": "state"})
        return self._expect("state", 10.0)

    def close(self) -> None:
        """Stop the server and whatever it is running; safe to call twice."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        if self._process is not None:
            kill_and_reap(PopenChild(self._process))
            SERVERS.discard(self._process.pid)

    # ---------------------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        if self._socket is None:
            raise ServerError("the trial server is closed")
        try:
            self._socket.sendall((json.dumps(message) + "\n").encode("utf-8"))
        except OSError as exc:
            raise ServerError(self._gone(f"cannot reach it ({exc.strerror or exc})")) from None

    def _expect(self, event: str, timeout_s: float, *, pid: int | None = None) -> dict[str, Any]:
        """The next message of kind ``event`` (for ``pid``); TimeoutError for an exit that has
        not come yet, ServerError for anything else that fails."""
        deadline = time.monotonic() + timeout_s
        while True:
            for index, message in enumerate(self._pending):
                if message.get("event") == event and (pid is None or message.get("pid") == pid):
                    return self._pending.pop(index)
                if message.get("event") == "error":
                    self._pending.pop(index)
                    raise ServerError(f"the trial server refused: {message.get('reason')}")
            left = deadline - time.monotonic()
            if left <= 0:
                if event == "exit":
                    raise TimeoutError
                raise ServerError(f"the trial server sent no {event!r} within {timeout_s:g} s")
            self._read(left)

    def _read(self, timeout_s: float) -> None:
        if self._socket is None:
            raise ServerError("the trial server is closed")
        readable, _, _ = select.select([self._socket], [], [], timeout_s)
        if not readable:
            return
        try:
            chunk = self._socket.recv(65536)
        except OSError as exc:
            raise ServerError(self._gone(f"lost it ({exc.strerror or exc})")) from None
        if not chunk:
            raise ServerError(self._gone("it exited"))
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            if line.strip():
                try:
                    self._pending.append(json.loads(line))
                except json.JSONDecodeError:
                    raise ServerError(f"the trial server said garbage: {line[:80]!r}") from None

    def _gone(self, what: str) -> str:
        code = None if self._process is None else self._process.poll()
        detail = "" if code is None else f" (exit code {code})"
        tail = last_line(self._log_file)
        return one_line(f"the trial server: {what}{detail}" + (f": {tail}" if tail else ""))
