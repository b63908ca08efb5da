"""probe_node on the machine the tests run on, and read_throttling where there is nothing to read.

Split from tests/system/test_probe_realcgroup.py: these need no root and no cgroup of their own.
"""

from __future__ import annotations

import os
from typing import Any

from advisor.probe import probe_node, read_throttling


def test_live_probe_matches_the_process() -> None:
    profile = probe_node(env={})
    assert profile.affinity_cpus == sorted(os.sched_getaffinity(0))
    assert profile.affinity_source == "sched_getaffinity"
    assert profile.logical_cpus >= len(profile.affinity_cpus)
    assert profile.effective_cpus <= len(profile.affinity_cpus)
    if profile.quota_cpus is not None:
        assert profile.effective_cpus <= profile.quota_cpus


def test_read_throttling_never_raises_on_a_broken_root(tmp_path: Any) -> None:
    assert read_throttling(tmp_path) is None
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountinfo").write_bytes(b"\xff\x00garbage")
    (tmp_path / "proc/self/cgroup").write_text("0::/../../x\n")
    assert read_throttling(tmp_path) is None
