"""The trial runner under a real memory cgroup: a child the kernel's OOM killer ends is named so.

Split from tests/unit/trials/test_runner.py (root and a cgroup v1 memory controller).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from advisor.models import TrialResult
from tests.support import FAKE_TRIALS, REPO
from tests.support.real_parts import missing_real_part

OOM_SUPERVISOR = FAKE_TRIALS / "oom_supervisor.py"
MEMORY_ROOT = Path("/sys/fs/cgroup/memory")


@pytest.mark.cgroup
def test_a_kill_by_the_memory_cgroup_oom_killer_is_named_as_such() -> None:
    if os.geteuid() != 0 or not (MEMORY_ROOT / "memory.limit_in_bytes").is_file():
        missing_real_part(f"needs root and a cgroup v1 memory controller at {MEMORY_ROOT}")
    group = MEMORY_ROOT / f"tfta-oom-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
    except OSError as exc:
        missing_real_part(f"cannot create a memory cgroup under {MEMORY_ROOT}: {exc}")
    try:
        (group / "memory.limit_in_bytes").write_text(f"{256 << 20}\n")
        done = subprocess.run(
            [sys.executable, str(OOM_SUPERVISOR), str(group)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            check=False,
        )
    finally:
        _remove_group(group)
    assert done.returncode == 0, done.stderr[-2000:]
    result = TrialResult.model_validate_json(done.stdout.strip().splitlines()[-1])
    assert (result.status, result.reason) == (
        "oom",
        "killed by SIGKILL: out of memory (memory cgroup oom_kill)",
    )


def _remove_group(group: Path) -> None:
    end = time.monotonic() + 10
    while True:
        try:
            group.rmdir()
            return
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)
