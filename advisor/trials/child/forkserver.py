"""The trial server: ``python -m advisor.trials.child.forkserver --fd N``.

Why it exists: a fresh trial process spends 2.5-4 s importing TensorFlow before it measures
anything, which is most of a sweep's budget. This process imports TensorFlow once, runs no op
(so TF's runtime, its thread pools and gRPC are never initialised here), and forks one child per
trial. Each child puts its setting in ``os.environ`` before its first op, exactly where a fresh
process would have found it, then runs the ordinary trial program (``advisor.trials.child.trial``)
with the same request and result files. TF reads the thread variables when its runtime starts,
which in the child is after the fork; ``TF_ENABLE_ONEDNN_OPTS`` is read at import, so a server
serves one value of it only.

Forking is safe only while the runtime is uninitialised (tensorflow#2448, #8220, #51832): the
server therefore never loads a model or runs an op, and the ``state`` request lets the parent
(and the tests) check that it still has not. It does read a trial's request file to replay
(``advisor.trials.child.requests.preload``: protobuf, JSON and numpy, no op) before its first
fork, so each child finds the records parsed.

Protocol: JSON lines on the inherited socket ``--fd``. The server says
``{"event": "ready", "pid", "import_s", "threads", "tf_initialized"}`` once, then answers
``{"op": "fork", "request", "result", "output", "env"}`` with ``{"event": "forked", "pid"}`` and,
when that child ends, ``{"event": "exit", "pid", "returncode"}`` (negative: killed by that
signal, as ``subprocess`` reports it); ``{"op": "state"}`` with ``{"event": "state", ...}``.
It serves one trial at a time, as the sweep runs them, and exits when the socket closes or its
parent dies.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import time
import warnings
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m advisor.trials.child.forkserver")
    parser.add_argument("--fd", required=True, type=int, help="the protocol socket's descriptor")
    args = parser.parse_args(argv)
    from advisor.trials.child.trial import die_with_parent

    die_with_parent()
    # Python 3.12+ warns that forking a multi-threaded process may deadlock: `import tensorflow`
    # leaves one idle thread, and no lock it could hold is touched by a child that only reads
    # its environment and starts TF's runtime afresh. The warning would land in the user's log.
    warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*fork.*")
    channel = socket.socket(fileno=args.fd)
    began = time.monotonic()
    import tensorflow  # noqa: F401  (the point of this process)

    import_s = time.monotonic() - began
    reader = channel.makefile("r", encoding="utf-8")
    _send(channel, {"event": "ready", "pid": os.getpid(), "import_s": import_s, **_state()})
    for line in reader:
        message = json.loads(line)
        op = message.get("op")
        if op == "state":
            _send(channel, {"event": "state", **_state()})
        elif op == "fork":
            _preload(message)
            pid = _fork_trial(channel, message)
            _send(channel, {"event": "forked", "pid": pid})
            _send(channel, {"event": "exit", "pid": pid, "returncode": _wait(pid)})
        else:
            _send(channel, {"event": "error", "reason": f"unknown op {op!r}"})
    return 0


def _state() -> dict[str, Any]:
    """Thread count and whether TF's eager runtime was initialised in this process (it must not
    be: a fork after that inherits locks held by threads that do not exist in the child)."""
    from tensorflow.python.eager import context

    from advisor.probe.proc_status import read_thread_count

    handle = getattr(context.context(), "_context_handle", None)
    return {"threads": read_thread_count(), "tf_initialized": handle is not None}


def _preload(message: dict[str, Any]) -> None:
    """Read the trial's requests to replay, once: anything wrong is the child's to report."""
    try:
        path = json.loads(Path(message["request"]).read_text(encoding="utf-8")).get("requests")
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return
    if isinstance(path, str):
        from advisor.trials.child.requests import preload

        preload(path)


def _fork_trial(channel: socket.socket, message: dict[str, Any]) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 70  # EX_SOFTWARE: the child failed before the trial program ran
    try:
        # The protocol socket is the server's: close the child's copy for real (close() would
        # leave it open behind the reader's reference), so a dead server reads as EOF at once.
        os.close(channel.detach())
        code = _child(message)
    finally:
        os._exit(code)


def _child(message: dict[str, Any]) -> int:
    """In the forked child: become what a spawned trial is, then run the trial program."""
    os.setsid()  # its own process group, so a deadline kills everything it starts
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    output = os.open(message["output"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(output, 1)
    os.dup2(output, 2)
    # The setting, exactly as a spawned child gets it: the whole environment replaced, before
    # the first op starts TF's runtime (which is when it reads the thread variables).
    os.environ.clear()
    os.environ.update(message["env"])
    from advisor.trials.child import trial

    code = trial.main(["--request", message["request"], "--result", message["result"]])
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def _wait(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _send(channel: socket.socket, message: dict[str, Any]) -> None:
    channel.sendall((json.dumps(message) + "\n").encode("utf-8"))


if __name__ == "__main__":
    try:
        code = main()
    except (BrokenPipeError, ConnectionResetError, KeyboardInterrupt):
        code = 1
    os._exit(code)  # no interpreter teardown: TF's atexit hooks would take a second
