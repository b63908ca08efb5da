"""A process's own peak resident memory, from VmHWM in /proc/PID/status.

Not getrusage's ``ru_maxrss``: Linux carries that across ``execve``, so a child spawned from a
parent holding 600 MiB reports at least 600 MiB whatever it touched itself (seen in CI, where the
test runner had imported TensorFlow). VmHWM belongs to the address space, which exec replaces, so
it counts the program that runs, from its start.
"""

from __future__ import annotations

from pathlib import Path

#: the calling process's own /proc directory
SELF = Path("/proc/self")


def parse_peak_rss_mib(status: str) -> float | None:
    """VmHWM of a /proc/PID/status text in MiB; None when the line is absent or not a number."""
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key == "VmHWM":
            fields = value.split()
            if len(fields) == 2 and fields[1] == "kB" and fields[0].isdigit():
                return int(fields[0]) / 1024
            return None
    return None


def read_peak_rss_mib(proc: Path = SELF) -> float | None:
    """The peak RSS of the process whose /proc directory is ``proc``; None when unreadable.

    Never raises: a trial must not fail because a figure that explains it is missing.
    """
    try:
        return parse_peak_rss_mib((proc / "status").read_text())
    except (OSError, UnicodeDecodeError):
        return None
