"""The trial server's client waits for ``forked`` as long as the server may spend reading a
request file to replay (it reads it before it forks). A fake server in a real process, no
TensorFlow."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from advisor.trials import forkclient
from advisor.trials.forkclient import ServerError, TrialServer

#: a server that is ready at once and answers each fork only after 0.6 s (as reading a large
#: request file makes it), with a child that has already exited
SLOW_SERVER = """
import json, os, socket, sys, time
channel = socket.socket(fileno=int(sys.argv[-1]))
def send(message):
    channel.sendall((json.dumps(message) + "\\n").encode())
send({"event": "ready", "pid": os.getpid(), "import_s": 0.0, "tf_initialized": False})
for line in channel.makefile("r"):
    time.sleep(0.6)
    send({"event": "forked", "pid": 4242})
    send({"event": "exit", "pid": 4242, "returncode": 0})
"""


def _server(tmp_path: Path) -> TrialServer:
    program = tmp_path / "server.py"
    program.write_text(SLOW_SERVER)
    server = TrialServer({}, tmp_path / "server.log", program=(sys.executable, str(program)))
    server.launch()
    server.wait_ready(10.0)
    return server


def _fork(server: TrialServer, tmp_path: Path, request: dict[str, object]) -> int:
    request_file = tmp_path / "request.json"
    request_file.write_text(json.dumps(request))
    return server.fork(
        request_file=request_file,
        result_file=tmp_path / "result.json",
        output_file=tmp_path / "out.log",
        env={},
        preload_timeout_s=5.0,
    )


def test_a_trial_replaying_requests_waits_for_forked_as_long_as_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forkclient, "FORK_TIMEOUT_S", 0.2)
    server = _server(tmp_path)
    try:
        assert _fork(server, tmp_path, {"requests": str(tmp_path / "r.json")}) == 4242
    finally:
        server.close()


def test_a_trial_without_requests_keeps_the_short_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forkclient, "FORK_TIMEOUT_S", 0.2)
    server = _server(tmp_path)
    try:
        with pytest.raises(ServerError, match=r"no .forked. within 0\.2 s"):
            _fork(server, tmp_path, {"mode": "trial"})
    finally:
        server.close()
