"""The split of the suite by tier, as a check: tests/system/ holds exactly the tests that need a
real part (a ``tf``, ``cgroup``, ``container`` or ``tools`` marker), and nothing outside it does;
tests/e2e/ holds exactly the tests marked ``e2e`` (they run against the real cluster of
testkit/realcluster).

tests/conftest.py runs the check on every collection; a test in the wrong place stops the session
before anything runs, with one line per test naming its file and what to do.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

#: markers that put a test in tests/system/ (README "Markers")
SYSTEM_MARKERS = frozenset({"tf", "cgroup", "container", "tools"})
#: the marker of the tests that run against the real cluster, and their folder
E2E_MARKER = "e2e"
SYSTEM_DIR = "system"
E2E_DIR = "e2e"


class Mark(Protocol):
    @property
    def name(self) -> str: ...


class Item(Protocol):
    """What the check reads of a collected ``pytest.Item``."""

    @property
    def nodeid(self) -> str: ...

    @property
    def path(self) -> Path: ...

    def iter_markers(self) -> Iterable[Mark]: ...


def tier_problems(items: Iterable[Item], tests_root: Path) -> list[str]:
    """One line per test under ``tests_root`` in the wrong tier; items elsewhere are not ours."""
    problems = []
    for item in items:
        try:
            relative = item.path.resolve().relative_to(tests_root.resolve())
        except ValueError:
            continue
        names = {mark.name for mark in item.iter_markers()}
        system = sorted(names & SYSTEM_MARKERS)
        in_system = relative.parts[0] == SYSTEM_DIR
        in_e2e = relative.parts[0] == E2E_DIR
        e2e = E2E_MARKER in names
        if in_e2e != e2e:
            problems.append(
                f"{item.nodeid}: in tests/e2e/ without the e2e marker (mark the module: "
                "pytestmark = pytest.mark.e2e)"
                if in_e2e
                else f"{item.nodeid}: marked e2e outside tests/e2e/ (move it to tests/e2e/)"
            )
        elif in_e2e and system:
            problems.append(
                f"{item.nodeid}: marked {', '.join(system)} in tests/e2e/ "
                "(the e2e tier needs no other marker)"
            )
        elif in_system and not system:
            wanted = "/".join(sorted(SYSTEM_MARKERS))
            problems.append(
                f"{item.nodeid}: in tests/system/ without a {wanted} marker "
                "(mark it, or move it to tests/unit/ or tests/integration/)"
            )
        elif system and not in_system:
            problems.append(
                f"{item.nodeid}: marked {', '.join(system)} outside tests/system/ "
                "(move it to tests/system/)"
            )
    return problems
