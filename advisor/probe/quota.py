"""CFS quota arithmetic shared by both cgroup versions: CPUs from quota/period, tightest level."""

from __future__ import annotations

from collections.abc import Sequence

from advisor.models import CPU_DECIMALS, CgroupLevel

#: the CFS period the kernel uses when cpu.max gives only the quota (and kubelet always uses)
DEFAULT_PERIOD_US = 100_000

#: no kernel writes a quota or period above this (it keeps them as u64 nanoseconds); a bigger
#: number is a damaged file, and quota / period in CPUs could not even be held in a float
MAX_US = 2**63 - 1


def quota_to_cpus(quota_us: int, period_us: int) -> float:
    """quota/period in CPUs, rounded like every CPU figure, and never rounded down to zero."""
    return max(round(quota_us / period_us, CPU_DECIMALS), 10.0**-CPU_DECIMALS)


def limited(name: str, quota_us: int, period_us: int) -> CgroupLevel:
    return CgroupLevel(
        path=name,
        state="limited",
        quota_us=quota_us,
        period_us=period_us,
        quota_cpus=quota_to_cpus(quota_us, period_us),
    )


def tightest(levels: Sequence[CgroupLevel]) -> CgroupLevel | None:
    """The limited level with the smallest quota/period (the nearest to the leaf on a tie).

    Unknown levels cannot be proven to bind, so they are skipped (the probe warned about them).
    """
    best: CgroupLevel | None = None
    for level in levels:
        if level.state != "limited" or level.quota_us is None or level.period_us is None:
            continue
        if best is None or _ratio(level) < _ratio(best):
            best = level
    return best


def _ratio(level: CgroupLevel) -> float:
    assert level.quota_us is not None and level.period_us is not None  # only called on limited
    return level.quota_us / level.period_us
