"""cgroup v1 cpu controller files: cpu.cfs_quota_us / cpu.cfs_period_us, cpu.shares, cpuset.cpus."""

from __future__ import annotations

from pathlib import Path

from advisor.models import CgroupLevel
from advisor.probe.files import HostFiles, excerpt
from advisor.probe.quota import MAX_US, limited

QUOTA_FILE = "cpu.cfs_quota_us"
PERIOD_FILE = "cpu.cfs_period_us"
WEIGHT_FILE = "cpu.shares"
CPUSET_FILE = "cpuset.cpus"
STAT_FILE = "cpu.stat"
#: the kernel's spelling of "no quota"
UNLIMITED = -1


class _Unusable(Exception):
    """A file that makes the level unknown (already warned about)."""


def read_level(files: HostFiles, name: str, directory: Path) -> CgroupLevel:
    """The quota of one group; unusable files make the level unknown with a warning."""
    try:
        quota = _read_number(files, directory / QUOTA_FILE, allow_unlimited=True)
        if quota == UNLIMITED:
            return CgroupLevel(path=name, state="unlimited")
        period = _read_number(files, directory / PERIOD_FILE, allow_unlimited=False)
    except _Unusable:
        return CgroupLevel(path=name, state="unknown")
    return limited(name, quota, period)


def _read_number(files: HostFiles, path: Path, *, allow_unlimited: bool) -> int:
    """A positive integer (or -1 where allowed); anything else is warned about and unusable."""
    text = files.read(path)
    if text is None:
        raise _Unusable
    try:
        value = int(text)
    except ValueError:
        files.warn(path, f"not an integer: {excerpt(text)}; quota unknown")
        raise _Unusable from None
    if value > MAX_US:
        files.warn(path, f"{excerpt(text)} is out of range; quota unknown")
        raise _Unusable
    if value > 0 or (allow_unlimited and value == UNLIMITED):
        return value
    files.warn(path, f"{value} is not positive; quota unknown")
    raise _Unusable
