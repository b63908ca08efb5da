"""/proc/PID/status: the kernel's ``Key:<tab>value`` summary of one process.

Three figures come from it: the affinity a fixture tree gives (``Cpus_allowed_list``), a trial's
thread count (``Threads``) and its peak resident memory (``VmHWM``).

The peak is VmHWM, not getrusage's ``ru_maxrss``: Linux carries that across ``execve``, so a
child spawned from a parent holding 600 MiB reports at least 600 MiB whatever it touched itself
(seen in CI, where the test runner had imported TensorFlow). VmHWM belongs to the address space,
which exec replaces, so it counts the program that runs, from its start.
"""

from __future__ import annotations

from pathlib import Path

#: the calling process's own /proc directory
SELF = Path("/proc/self")


def status_field(status: str, key: str) -> str | None:
    """The value of the first ``key:`` line of a status text, stripped; None without one."""
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == key:
            return value.strip()
    return None


def read_status_field(key: str, proc: Path = SELF) -> str | None:
    """``status_field`` of the process whose /proc directory is ``proc``; None when unreadable.

    Never raises: the figures read this way explain a trial and must not fail it.
    """
    try:
        return status_field((proc / "status").read_text(encoding="utf-8"), key)
    except (OSError, UnicodeDecodeError):
        return None


def parse_peak_rss_mib(status: str) -> float | None:
    """VmHWM of a status text in MiB; None when the line is absent or not a number of kB."""
    return _kib_as_mib(status_field(status, "VmHWM"))


def read_peak_rss_mib(proc: Path = SELF) -> float | None:
    """The peak RSS of the process whose /proc directory is ``proc``; None when unreadable."""
    return _kib_as_mib(read_status_field("VmHWM", proc))


def read_thread_count(proc: Path = SELF) -> int | None:
    """The process's thread count; None when unreadable."""
    text = read_status_field("Threads", proc)
    return int(text) if text is not None and text.isdigit() else None


def _kib_as_mib(value: str | None) -> float | None:
    fields = (value or "").split()
    if len(fields) == 2 and fields[1] == "kB" and fields[0].isdigit():
        return int(fields[0]) / 1024
    return None
