"""Kubernetes resource quantities as numbers of CPUs: what ``limits.cpu`` means to a quota.

The advice records its quota as a float (``0.5``); the API server writes a CPU limit as a
quantity in its canonical form (``500m``, ``4``, ``1500m``). They are compared as numbers, never
as text.
"""

from __future__ import annotations

import functools
import re
from typing import Any

_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<suffix>[numkMGTPE]|[KMGTPE]i)|[eE](?P<exponent>[+-]?\d+))?$"
)
_SUFFIX = {
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    **{f"{p}i": float(1024**n) for n, p in enumerate("KMGTPE", start=1)},
}


def cpu_quantity(value: Any) -> float | None:
    """CPUs in ``value`` (a quantity string, or a number as YAML gives it); None when it is not a
    quantity or is negative, neither of which the API server accepts as a limit."""
    # text first: the API server sends every quantity as text (``plan`` reads some 14 a workload)
    if isinstance(value, str):
        return _text_quantity(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        cpus = float(value)
        return cpus if cpus >= 0 else None
    return None


@functools.lru_cache(maxsize=4096)
def _text_quantity(value: str) -> float | None:
    """A quantity string's CPUs: a fleet writes a handful of distinct ones thousands of times, so
    each is parsed once."""
    match = _QUANTITY.match(value.strip())
    if match is None:
        return None
    number = float(match["number"])
    if match["exponent"] is not None:
        cpus = number * 10.0 ** int(match["exponent"])
    else:
        cpus = number * _SUFFIX.get(match["suffix"] or "", 1.0)
    return cpus if cpus >= 0 else None
