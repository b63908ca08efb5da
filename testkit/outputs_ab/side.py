"""One side of the comparison: ``python -m advisor ARGS`` of one checkout, as a child process, with
the wall clock frozen.

The child is started as ``python -c BOOT ARGS``: BOOT freezes ``datetime.now`` (and ``utcnow``,
``today``, ``date.today``) at the scene's ``NOW`` and then runs the ``advisor`` package as ``-m``
does (``runpy``, ``sys.argv[0]`` its ``__main__.py``). Only the wall clock the advisor reads
through ``datetime`` is frozen: ``time.time`` and ``time.monotonic`` run on (the log's timestamps,
retry deadlines and client timeouts), so a change that starts reading "now" from ``time.time``
shows as a difference. The checkout is the first entry of ``PYTHONPATH``, and the child runs in
an empty folder, which ``-c`` puts first on ``sys.path`` (``python -m`` run from a checkout would
put that checkout before ``PYTHONPATH``, and both sides would run the same code).

The environment is the same on both sides: this process's, without what changes the advisor's
behaviour (``KUBECONFIG``, ``TFTA_*``, the advice env, ``PROMETHEUS_*``), with ``TZ=UTC``,
``LC_ALL=C.UTF-8``, ``COLUMNS=120`` and ``PYTHONHASHSEED=0``; compiled modules are cached in
``PYCACHE``, outside both checkouts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from testkit.outputs_ab.compare import Outcome

#: run in the child before the advisor: freeze ``datetime``'s "now" at $TFTA_AB_NOW (an ISO
#: time with its offset). The built-in types cannot be given attributes; their dict can be
#: reached through the garbage collector and written, and PyType_Modified drops the cached
#: lookups (the way ``forbiddenfruit`` patches built-ins).
BOOT = r"""
import ctypes, datetime as _dt, gc, os, runpy, sys
_frozen = _dt.datetime.fromisoformat(os.environ["TFTA_AB_NOW"])
def _now(cls, tz=None):
    return _frozen.astimezone(tz) if tz is not None else _frozen.astimezone().replace(tzinfo=None)
def _utcnow(cls):
    return _frozen.astimezone(_dt.timezone.utc).replace(tzinfo=None)
def _today(cls):
    return _now(_dt.datetime).date() if cls is _dt.date else _now(cls)
for _type, _names in ((_dt.datetime, ("now", "utcnow", "today")), (_dt.date, ("today",))):
    _slots = gc.get_referents(_type.__dict__)[0]
    for _name in _names:
        _slots[_name] = classmethod({"now": _now, "utcnow": _utcnow, "today": _today}[_name])
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(_type))
del _type, _names, _slots, _name
runpy.run_module("advisor", run_name="__main__", alter_sys=True)
"""

#: variables that change what the advisor does or prints: never passed on
_DROPPED_PREFIXES = ("TFTA_", "TF_", "PROMETHEUS", "KUBE")
_DROPPED = {"OMP_NUM_THREADS", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME"}
PYCACHE = Path("/tmp/tfta-outputs-ab-pycache")


def environment(checkout: Path, now: datetime) -> dict[str, str]:
    """The child's environment for ``checkout``'s advisor."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in _DROPPED and not key.startswith(_DROPPED_PREFIXES)
    }
    env.update(
        PYTHONPATH=str(checkout),
        TFTA_AB_NOW=now.isoformat(),
        TZ="UTC",
        LC_ALL="C.UTF-8",
        LANG="C.UTF-8",
        COLUMNS="120",
        LINES="40",
        PYTHONHASHSEED="0",
        # compiled modules of both checkouts go here, not into the checkouts
        PYTHONPYCACHEPREFIX=str(PYCACHE),
    )
    return env


def run(
    checkout: Path,
    argv: Sequence[str],
    *,
    now: datetime,
    cwd: Path,
    stdin: str | None = None,
    timeout_s: float = 120.0,
) -> Outcome:
    """``python -m advisor ARGV`` of ``checkout`` at ``now``; its exit code, stdout and stderr."""
    done = subprocess.run(
        [sys.executable, "-c", BOOT, *argv],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        env=environment(checkout, now),
        cwd=cwd,
        timeout=timeout_s,
        check=False,
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


def advisor_file(checkout: Path, *, now: datetime, cwd: Path) -> Path:
    """Where the child of ``checkout`` imports ``advisor`` from (a check that each side runs its
    own code)."""
    code = "import advisor; print(advisor.__file__)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=environment(checkout, now),
        cwd=cwd,
        check=True,
    )
    return Path(done.stdout.strip())
