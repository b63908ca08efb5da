"""Real cgroup v1 CPU quotas for tests and the benchmark (root only; no pytest in here).

    with real_cgroup(1.5) as group:
        subprocess.run(group.command(["python", "-m", "advisor", "probe"]))
        group.cpu_stat()["nr_throttled"]

Groups are named ``tfta-<pid>-<random>`` directly under the v1 cpu mount (or under a parent
group); leaving the context kills whatever still runs in them and removes them, children first.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

CPU_ROOT = Path("/sys/fs/cgroup/cpu")
PREFIX = "tfta-"
PERIOD_US = 100_000
#: how long cleanup waits for killed tasks to leave before giving up on rmdir
_CLEANUP_TIMEOUT_S = 5.0


class RealCgroup:
    """One v1 cpu cgroup created by ``real_cgroup``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def tasks_file(self) -> Path:
        return self.path / "tasks"

    def cpu_stat(self) -> dict[str, int]:
        """cpu.stat as integers: nr_periods, nr_throttled, throttled_time (ns), ..."""
        stat: dict[str, int] = {}
        for line in (self.path / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if value.strip().lstrip("-").isdigit():
                stat[key] = int(value)
        return stat

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` wrapped so that it execs inside this group (the shell joins it first)."""
        return ["sh", "-c", f'echo $$ > "{self.tasks_file}"; exec "$@"', "sh", *argv]

    def tasks(self) -> list[int]:
        try:
            return [int(t) for t in self.tasks_file.read_text().split()]
        except FileNotFoundError:
            return []


def cgroup_unavailable() -> str | None:
    """Why real quotas cannot be used here, or None when they can (root, writable v1 cpu)."""
    if os.geteuid() != 0:
        return "real cgroup quotas need root"
    if not (CPU_ROOT / "cpu.cfs_quota_us").is_file():
        return f"no cgroup v1 cpu controller mounted at {CPU_ROOT}"
    probe_dir = CPU_ROOT / f"{PREFIX}check-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    try:
        probe_dir.mkdir()
        probe_dir.rmdir()
    except OSError as exc:
        return f"cannot create a cgroup under {CPU_ROOT}: {exc.strerror or exc}"
    return None


@contextlib.contextmanager
def real_cgroup(quota_cpus: float | None, parent: RealCgroup | None = None) -> Iterator[RealCgroup]:
    """A fresh group with ``quota_cpus`` CPUs of quota (None: unlimited), removed on exit."""
    base = parent.path if parent is not None else CPU_ROOT
    path = base / f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    group = RealCgroup(path)
    try:
        if quota_cpus is not None:
            (path / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
            (path / "cpu.cfs_quota_us").write_text(f"{round(quota_cpus * PERIOD_US)}\n")
        yield group
    finally:
        _remove(path)


def _remove(path: Path) -> None:
    """Kill every task in ``path`` and below, then rmdir deepest first."""
    if not path.is_dir():
        return
    for child in [p for p in path.iterdir() if p.is_dir()]:
        _remove(child)
    deadline = time.monotonic() + _CLEANUP_TIMEOUT_S
    group = RealCgroup(path)
    while True:
        pids = group.tasks()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            path.rmdir()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
