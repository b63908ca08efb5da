"""The supervision helpers the trial runner and the trial-server client share: the last line of a
log, and killing a child's whole process group and reaping it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from advisor.trials.supervise import PopenChild, kill_and_reap, last_line


def test_the_last_non_empty_line_of_a_log(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_bytes(b"W0000 noise\nTraceback (most recent call last):\n  ValueError: bad\n\n  \n")
    assert last_line(log) == "ValueError: bad"


def test_only_the_end_of_a_long_log_is_read(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_bytes(b"the first line\n" + b"x" * 10_000 + b"\n\xff broken utf-8 at the end\n")
    assert last_line(log) == "\ufffd broken utf-8 at the end"
    log.write_bytes(b"only line\n" + b" " * 10_000)
    assert last_line(log) == ""  # the line is further back than the tail that is read


def test_an_empty_or_missing_log_has_no_last_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.touch()
    assert last_line(empty) == ""
    assert last_line(tmp_path / "never-written.log") == ""


def alive(pid: int) -> bool:
    """Running: a zombie counts as dead (whether init reaps it is the container's business)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_kill_and_reap_takes_the_grandchildren_and_leaves_no_zombie(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = (
        "import subprocess, sys, time\n"
        "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pids)!r}, 'w').write(str(g.pid))\n"
        "time.sleep(60)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    try:
        for _ in range(200):
            if pids.exists() and pids.read_text():
                break
            time.sleep(0.05)
        grandchild = int(pids.read_text())
        child = PopenChild(process)
        began = time.monotonic()
        kill_and_reap(child)
        assert time.monotonic() - began < 5
        assert process.returncode == -9  # reaped: Popen has its status
        for _ in range(100):
            if not alive(grandchild):
                break
            time.sleep(0.05)
        assert not alive(grandchild)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_kill_and_reap_of_a_child_already_gone_is_quiet() -> None:
    process = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    process.wait()
    kill_and_reap(PopenChild(process))
    assert process.returncode == 0
