"""The tier contract of tests/conftest.py: a test with a tf/cgroup/container/tools marker lives in
tests/system/, and every test there has one; tests/e2e/ holds exactly the e2e-marked tests.

The check runs on stand-in items, then the real hook runs in a pytest session of its own
(pytester) over a small tree with one test in the wrong tier each way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import conftest
from tests.support.tiers import tier_problems

ROOT = Path("/repo/tests")


@dataclass
class FakeMark:
    name: str


@dataclass
class FakeItem:
    nodeid: str
    path: Path
    marks: tuple[str, ...] = ()

    def iter_markers(self) -> list[FakeMark]:
        return [FakeMark(name) for name in self.marks]


def item(relative: str, *marks: str) -> FakeItem:
    return FakeItem(f"tests/{relative}::test_x", ROOT / relative, marks)


@pytest.mark.parametrize(
    "placed",
    [
        item("system/test_a.py", "tf"),
        item("system/test_a.py", "cgroup", "tf"),
        item("system/test_a.py", "tools", "parametrize"),
        item("e2e/test_a.py", "e2e"),
        item("e2e/test_a.py", "e2e", "parametrize"),
        item("unit/probe/test_a.py"),
        item("unit/probe/test_a.py", "parametrize", "usefixtures"),
        FakeItem("elsewhere/test_a.py::test_x", Path("/elsewhere/test_a.py"), ("tf",)),
    ],
    ids=lambda i: f"{i.path.parent.name}-{'+'.join(i.marks) or 'none'}",
)
def test_a_test_in_its_tier_passes(placed: FakeItem) -> None:
    assert tier_problems([placed], ROOT) == []


@pytest.mark.parametrize(
    ("placed", "says"),
    [
        (item("system/test_a.py"), "in tests/system/ without a cgroup/container/tf/tools marker"),
        (item("system/test_a.py", "parametrize"), "in tests/system/ without"),
        (item("unit/trials/test_a.py", "cgroup"), "marked cgroup outside tests/system/"),
        (item("integration/test_a.py", "tools", "tf"), "marked tf, tools outside tests/system/"),
        (item("test_a.py", "container"), "marked container outside tests/system/"),
        (item("system/test_a.py", "e2e"), "marked e2e outside tests/e2e/"),
        (item("integration/test_a.py", "e2e"), "marked e2e outside tests/e2e/"),
        (item("e2e/test_a.py"), "in tests/e2e/ without the e2e marker"),
        (item("e2e/test_a.py", "e2e", "tf"), "marked tf in tests/e2e/"),
    ],
    ids=[
        "system-unmarked",
        "system-other-mark",
        "unit-cgroup",
        "integration-two",
        "top-level",
        "system-e2e",
        "integration-e2e",
        "e2e-unmarked",
        "e2e-tf",
    ],
)
def test_a_test_in_the_wrong_tier_is_named(placed: FakeItem, says: str) -> None:
    (problem,) = tier_problems([placed], ROOT)
    assert problem.startswith(f"{placed.nodeid}: {says}")


@pytest.fixture
def tree(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    """A pytest project whose conftest is the real hook, pointed at its own tests/ folder;
    returns a writer of test files into it."""
    monkeypatch.setattr(conftest, "TESTS", pytester.path / "tests")
    pytester.makeini("[pytest]\nmarkers =\n    tf: x\n    cgroup: x\n")
    pytester.makeconftest("from tests.conftest import pytest_collection_modifyitems  # noqa: F401")

    def write(relative: str, text: str) -> None:
        path = pytester.path / "tests" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    return write


def test_the_hook_stops_the_session_naming_each_misplaced_test(
    pytester: pytest.Pytester, tree: Callable[[str, str], None]
) -> None:
    tree(
        "system/test_real.py",
        "import pytest\n\n@pytest.mark.tf\ndef test_marked():\n    pass\n\n"
        "def test_unmarked():\n    pass\n",
    )
    tree(
        "unit/probe/test_pure.py",
        "import pytest\n\ndef test_pure():\n    pass\n\n"
        "@pytest.mark.parametrize('n', [1, pytest.param(2, marks=pytest.mark.cgroup)])\n"
        "def test_cases(n):\n    pass\n",
    )
    # -m deselects the misplaced cgroup case: the check runs before, on everything collected
    result = pytester.runpytest("-m", "not cgroup")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: tests in the wrong tier (tests/README.md):",
            "tests/system/test_real.py::test_unmarked: in tests/system/ without a *",
            "tests/unit/probe/test_pure.py::test_cases[[]2[]]: marked cgroup outside *",
        ]
    )
    named = [line for line in result.stderr.lines if "::" in line]
    assert len(named) == 2, result.stderr.str()


def test_the_hook_lets_a_well_placed_tree_run(
    pytester: pytest.Pytester, tree: Callable[[str, str], None]
) -> None:
    tree("system/test_real.py", "import pytest\n\n@pytest.mark.tf\ndef test_marked():\n    pass\n")
    tree("test_pure.py", "def test_pure():\n    pass\n")
    pytester.runpytest().assert_outcomes(passed=2)
