"""Real signals to a real ``python -m advisor run`` with real TensorFlow trial children.

A Job hitting ``activeDeadlineSeconds`` or a node drain sends SIGTERM; a person sends SIGINT. Mid
sweep, either must end the run within 5 s with the interrupted exit code and one error line,
leave no process behind (every descendant seen before the signal is gone), and publish nothing:
the ``--output`` file keeps its bytes and the stored ConfigMap stays as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from advisor.errors import InterruptedRunError
from advisor.recommend import render_configmap
from testkit.fakeapi.samples import recommendation
from testkit.fakeapi.server import FakeApiServer
from tests.support import REPO
from tests.support.real_parts import need_module

pytestmark = pytest.mark.tf

NAME, NS = "tf-advice", "ml"
OLD_OUTPUT = b"# the previous advice: a signal must not touch it\n"
#: the bound from the signal to the exit (a drained pod's grace period is far longer)
EXIT_WITHIN_S = 5.0
#: how long a run may take to reach the phase a test interrupts (TF start-up on a busy machine)
REACH_PHASE_S = 120.0
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d (DEBUG|INFO|WARNING) ")


@dataclass
class Run:
    """One advisor process in its own session, and every descendant it was seen with."""

    process: subprocess.Popen[str]
    descendants: set[int] = field(default_factory=set)

    def look(self) -> list[psutil.Process]:
        try:
            children = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        self.descendants |= {child.pid for child in children}
        return children

    def wait_for_child(self, mode: str) -> None:
        """Until a trial child is running with a request of ``mode`` (inspect or trial)."""
        deadline = time.monotonic() + REACH_PHASE_S
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.process.communicate()[1][-3000:]
            for child in self.look():
                if _request_mode(child) == mode:
                    return
            time.sleep(0.05)
        raise AssertionError(f"no {mode} child within {REACH_PHASE_S:g} s")

    def interrupt(self, *signals: signal.Signals, gap_s: float = 0.05) -> tuple[int, str, float]:
        """Send ``signals`` ``gap_s`` apart; the exit code, stderr and seconds to the exit."""
        self.look()
        assert self.descendants, "the run had no child process to leave behind"
        started = time.monotonic()
        for index, sig in enumerate(signals):
            if index:
                time.sleep(gap_s)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, sig)
        try:
            _, err = self.process.communicate(timeout=EXIT_WITHIN_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running {EXIT_WITHIN_S:g} s after {signals}") from None
        return self.process.returncode, err, time.monotonic() - started

    def assert_nothing_left(self) -> None:
        alive = []
        for pid in self.descendants:
            with contextlib.suppress(psutil.NoSuchProcess):
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
        assert alive == [], f"descendants still running: {alive}"


def _request_mode(child: psutil.Process) -> str | None:
    """The mode of the request a trial child works on: from its command line when spawned; a
    forked child has its server's command line, so from the scratch folder of its open output."""
    try:
        argv = child.cmdline()
        if "--request" in argv:
            request = Path(argv[argv.index("--request") + 1])
        else:
            outputs = [Path(f.path) for f in child.open_files() if f.path.endswith("output.log")]
            if not outputs:
                return None
            request = outputs[0].with_name("request.json")
        loaded: dict[str, Any] = json.loads(request.read_text())
        return str(loaded.get("mode"))
    except (psutil.Error, ValueError, IndexError, OSError):
        return None  # not a trial child, or its request is not written yet


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Any]:
    need_module("tensorflow")
    runs: list[Run] = []

    def start_run(*argv: str) -> Run:
        process = subprocess.Popen(
            [sys.executable, "-m", "advisor", *argv],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        run = Run(process)
        runs.append(run)
        return run

    yield start_run
    for run in runs:  # a failed test must not leave its run behind either
        if run.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.process.pid, signal.SIGKILL)
            run.process.wait(timeout=30)
        for pid in run.descendants:
            with contextlib.suppress(psutil.NoSuchProcess):
                psutil.Process(pid).kill()


@pytest.fixture
def output(tmp_path: Path) -> Path:
    path = tmp_path / "advice.yaml"
    path.write_bytes(OLD_OUTPUT)
    return path


def error_line(err: str, sig: signal.Signals) -> str:
    """The one error line; every other stderr line is a plain log line."""
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if not LOG_LINE.match(line)]
    assert len(errors) == 1, err
    assert errors[0] == err.splitlines()[-1]
    assert errors[0].startswith("tf-thread-advisor: error: ")
    assert f"interrupted by {sig.name}" in errors[0]
    assert "nothing was published" in errors[0]
    return errors[0]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_mid_sweep_ends_the_run_and_its_children(
    sig: signal.Signals, start: Any, output: Path
) -> None:
    run = start("run", "--budget", "60", "--output", str(output))
    run.wait_for_child("trial")
    code, err, _ = run.interrupt(sig)
    assert code == InterruptedRunError.exit_code, err
    error_line(err, sig)
    assert output.read_bytes() == OLD_OUTPUT
    assert [p.name for p in output.parent.iterdir() if p.name.endswith(".tmp")] == []
    run.assert_nothing_left()


def test_sigterm_mid_sweep_leaves_the_stored_configmap_as_it_was(
    start: Any, output: Path, tmp_path: Path
) -> None:
    with FakeApiServer(tmp_path, configmap_name=NAME) as api:
        before = api.put(render_configmap(recommendation(3, 2, budget_s=30.0), NAME, NS))
        run = start(
            *("run", "--budget", "60", "--output", str(output)),
            *("--configmap", NAME, "--namespace", NS, "--kubeconfig", str(api.kubeconfig)),
        )
        run.wait_for_child("trial")
        code, err, _ = run.interrupt(signal.SIGTERM)
        assert code == InterruptedRunError.exit_code, err
        error_line(err, signal.SIGTERM)
        assert api.get(NS, NAME) == before
        # the pre-sweep check was a dry run; nothing else was written
        assert [r.query.get("dryRun") for r in api.writes()] == ["All"]
    assert output.read_bytes() == OLD_OUTPUT
    run.assert_nothing_left()


def test_a_burst_of_signals_during_inspection_still_ends_cleanly(start: Any, output: Path) -> None:
    # kubelet's SIGTERM, then repeats and Ctrl-Cs while the model loads, 2 ms apart until the
    # process is gone: the first one wins, its cleanup is not cut short, and no late repeat
    # turns the exit into a death by signal
    run = start("run", "--budget", "60", "--output", str(output))
    run.wait_for_child("inspect")
    burst = [signal.SIGTERM, *[signal.SIGTERM, signal.SIGINT] * 100]
    code, err, _ = run.interrupt(*burst, gap_s=0.002)
    assert code == InterruptedRunError.exit_code, err
    error_line(err, signal.SIGTERM)
    assert output.read_bytes() == OLD_OUTPUT
    run.assert_nothing_left()


def test_under_json_logs_every_stderr_line_of_an_interrupted_run_is_json(
    start: Any, output: Path
) -> None:
    run = start("--log-format", "json", "run", "--budget", "60", "--output", str(output))
    run.wait_for_child("trial")
    code, err, _ = run.interrupt(signal.SIGTERM)
    assert code == InterruptedRunError.exit_code, err
    entries = [json.loads(line) for line in err.splitlines()]
    assert len(entries) >= 2, err  # at least one log line, then the error
    for entry in entries[:-1]:
        assert {"time", "level", "logger", "message"} <= set(entry)
        assert entry["level"] in {"debug", "info", "warning"}
    last = entries[-1]
    assert last["level"] == "error"
    assert last["exit_code"] == InterruptedRunError.exit_code
    assert "interrupted by SIGTERM" in last["message"]
    assert output.read_bytes() == OLD_OUTPUT
    run.assert_nothing_left()
