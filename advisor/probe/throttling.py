"""cpu.stat: how often and how long CFS throttled the group (v1 and v2 spellings)."""

from __future__ import annotations

from typing import NamedTuple


class Throttling(NamedTuple):
    """Cumulative counters of one cgroup's cpu.stat; subtract two readings with ``since``."""

    nr_periods: int
    nr_throttled: int
    throttled_time_ms: float

    def since(self, earlier: Throttling) -> Throttling:
        """What happened between ``earlier`` and this reading (never negative)."""
        return Throttling(
            nr_periods=max(0, self.nr_periods - earlier.nr_periods),
            nr_throttled=max(0, self.nr_throttled - earlier.nr_throttled),
            throttled_time_ms=max(0.0, self.throttled_time_ms - earlier.throttled_time_ms),
        )


#: cpu.stat counters are u64: a bigger number is a damaged file (and overflows the ms float)
_MAX_COUNTER = 2**64 - 1


def parse_flat_keyed(text: str) -> dict[str, int]:
    """``key value`` lines (cpu.stat); lines that are not a name and a u64 counter are skipped."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2:
            try:
                value = int(fields[1])
            except ValueError:
                continue
            if 0 <= value <= _MAX_COUNTER:
                values[fields[0]] = value
    return values


def throttling_from_stat(stat: dict[str, int]) -> Throttling | None:
    """v1 reports throttled_time in ns, v2 throttled_usec; None when the counters are absent."""
    if "nr_periods" not in stat or "nr_throttled" not in stat:
        return None
    if "throttled_usec" in stat:
        time_ms = stat["throttled_usec"] / 1e3
    elif "throttled_time" in stat:
        time_ms = stat["throttled_time"] / 1e6
    else:
        return None
    return Throttling(stat["nr_periods"], stat["nr_throttled"], round(time_ms, 3))
