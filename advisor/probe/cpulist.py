"""The kernel's CPU list format ("0-3,8-11"), used by cpuset, sysfs and /proc/<pid>/status.

One parser for every place the format appears, so a cpuset, an online list and an affinity list
from a fixture tree can never disagree about what "0-3" means. Writing the compact form is for
people, and lives with the text it appears in (``advisor.render.node``).
"""

from __future__ import annotations

#: no kernel supports more CPUs than this (CONFIG_NR_CPUS max); a larger number is garbage and
#: must not make the parser build a huge list.
MAX_CPU_ID = 8191


def parse_cpulist(text: str) -> list[int]:
    """Sorted CPU ids from "0-3,8-11" (also "0-7:2" strides). Empty text is an empty list.

    Raises ValueError naming the bad element: callers turn it into a warning about their file.
    """
    cpus: set[int] = set()
    text = text.strip()
    if not text:
        return []
    for part in text.split(","):
        element = part.strip()
        if not element:
            raise ValueError(f"empty element in CPU list {text!r}")
        range_part, _, stride_part = element.partition(":")
        first_text, dash, last_text = range_part.partition("-")
        first = _cpu_id(first_text, text)
        last = _cpu_id(last_text, text) if dash else first
        stride = 1
        if stride_part:
            stride = _cpu_id(stride_part, text)
            if stride < 1:
                raise ValueError(f"stride below 1 in CPU list {text!r}")
        if last < first:
            raise ValueError(f"descending range {element!r} in CPU list {text!r}")
        cpus.update(range(first, last + 1, stride))
    return sorted(cpus)


def _cpu_id(token: str, whole: str) -> int:
    token = token.strip()
    if not token.isdigit():
        raise ValueError(f"not a CPU number: {token!r} in CPU list {whole!r}")
    value = int(token)
    if value > MAX_CPU_ID:
        raise ValueError(f"CPU number {value} out of range in CPU list {whole!r}")
    return value
