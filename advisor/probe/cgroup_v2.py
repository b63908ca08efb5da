"""cgroup v2 cpu controller files: cpu.max (incl. "max" and the one-field form), cpu.weight,
cpuset.cpus.effective.

In v2 a group without cpu.max simply has no cpu controller enabled (or is the root), which
means no quota there: that is not worth a warning, unlike a cpu.max that cannot be parsed.
"""

from __future__ import annotations

from pathlib import Path

from advisor.models import CgroupLevel
from advisor.probe.files import HostFiles, excerpt
from advisor.probe.quota import DEFAULT_PERIOD_US, MAX_US, limited

QUOTA_FILE = "cpu.max"
WEIGHT_FILE = "cpu.weight"
CPUSET_FILE = "cpuset.cpus.effective"
STAT_FILE = "cpu.stat"


def parse_cpu_max(text: str) -> tuple[int | None, int]:
    """(quota_us or None for "max", period_us). Raises ValueError saying what is wrong."""
    fields = text.split()
    if not fields or len(fields) > 2:
        raise ValueError(f"expected '<quota|max> [period]', got {excerpt(text)}")
    period = DEFAULT_PERIOD_US
    if len(fields) == 2:
        period = _positive(fields[1], "period", text)
    if fields[0] == "max":
        return None, period
    return _positive(fields[0], "quota", text), period


def read_level(files: HostFiles, name: str, directory: Path) -> CgroupLevel:
    """The quota of one group; an unparsable cpu.max makes the level unknown with a warning."""
    path = directory / QUOTA_FILE
    text = files.read(path, required=False)
    if text is None:
        # absent: no cpu controller in this group; present but unreadable: already warned
        return CgroupLevel(path=name, state="unknown" if path.exists() else "unlimited")
    try:
        quota, period = parse_cpu_max(text)
    except ValueError as exc:
        files.warn(path, f"{exc}; quota unknown")
        return CgroupLevel(path=name, state="unknown")
    if quota is None:
        return CgroupLevel(path=name, state="unlimited")
    return limited(name, quota, period)


def _positive(token: str, what: str, whole: str) -> int:
    try:
        value = int(token)
    except ValueError:
        raise ValueError(f"{what} is not an integer in {excerpt(whole)}") from None
    if value <= 0:
        raise ValueError(f"{what} {value} is not positive in {excerpt(whole)}")
    if value > MAX_US:
        raise ValueError(f"{what} {excerpt(token)} is out of range in {excerpt(whole)}")
    return value
