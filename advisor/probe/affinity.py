"""The affinity mask: the CPUs the process may run on, which is what TensorFlow sizes pools from.

On the live system it is ``os.sched_getaffinity(0)`` (cpuset is already applied to it by the
kernel). A fixture tree (any host root other than "/") gives it as ``Cpus_allowed_list`` in
``<root>/proc/self/status``, the same list the kernel prints for the live process.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

from advisor.errors import ProbeError
from advisor.probe.cpulist import parse_cpulist
from advisor.probe.files import HostFiles
from advisor.probe.proc_status import status_field

STATUS_FIELD = "Cpus_allowed_list"


def read_affinity(files: HostFiles, given: Collection[int] | None) -> tuple[list[int], str]:
    """(sorted CPUs, their source). ProbeError when none can be had: nothing to advise on."""
    if given is not None:
        cpus = sorted(set(given))
        if not cpus or any(cpu < 0 for cpu in cpus):
            raise ProbeError(f"affinity given by the caller is unusable: {cpus!r}")
        return cpus, "caller"
    if is_live_root(files.root):
        try:
            return sorted(os.sched_getaffinity(0)), "sched_getaffinity"
        except (AttributeError, OSError) as exc:
            raise ProbeError(f"sched_getaffinity failed: {exc}") from None
    return _from_status(files), "/proc/self/status"


def is_live_root(root: Path) -> bool:
    """True when ``root`` is this system's own "/" (live values such as the affinity apply)."""
    try:
        return root.resolve() == Path("/")
    except OSError:
        return False


def _from_status(files: HostFiles) -> list[int]:
    path = files.path("/proc/self/status")
    shown = files.show(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problem = getattr(exc, "strerror", None) or type(exc).__name__
        raise ProbeError(f"{shown}: unreadable ({problem}); the affinity is unknown") from None
    value = status_field(text, STATUS_FIELD)
    if value is None:
        raise ProbeError(f"{shown}: no {STATUS_FIELD} line; the affinity is unknown")
    try:
        cpus = parse_cpulist(value)
    except ValueError as exc:
        raise ProbeError(f"{shown}: {exc}") from None
    if not cpus:
        raise ProbeError(f"{shown}: {STATUS_FIELD} is empty; the affinity is unknown")
    return cpus
