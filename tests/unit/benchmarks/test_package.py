"""benchmarks/ is a package run as ``python -m benchmarks``: it imports nothing from tests/ (what
it shares with them is in testkit/) and no entry point patches ``sys.path``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from benchmarks.__main__ import COMMANDS
from tests.support import REPO

BENCHMARKS = REPO / "benchmarks"


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function, by its full name."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_no_benchmark_module_imports_the_tests() -> None:
    sources = sorted(BENCHMARKS.glob("*.py"))
    assert len(sources) >= 10  # the glob found the package
    offenders = {
        f"{path.name}: {name}"
        for path in sources
        for name in imported_modules(path)
        if name == "tests" or name.startswith("tests.")
    }
    assert not offenders, sorted(offenders)


def test_the_check_sees_an_import_of_the_tests(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from tests.support import REPO\n    import tests\n")
    assert imported_modules(module) == {"tests.support", "tests"}


def test_no_benchmark_module_patches_the_import_path() -> None:
    patched = [p.name for p in sorted(BENCHMARKS.glob("*.py")) if "sys.path" in p.read_text()]
    assert patched == []


def test_importing_every_command_loads_no_test_module() -> None:
    """What the static check cannot see: a module the benchmark's imports pull in themselves."""
    modules = [f"benchmarks.{module}" for module, _ in COMMANDS.values()]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m == 'tests' or m.startswith('tests.')))\n"
        "print('testkit.fakeapi.server' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    # no test module, and the shared fake API server came from testkit (stability imports it)
    assert done.stdout.split() == ["[]", "True"]


def test_python_m_benchmarks_lists_the_commands_and_refuses_an_unknown_one() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "benchmarks", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    listed = run("--help")
    assert listed.returncode == 0
    assert all(f"  {name}" in listed.stdout for name in COMMANDS)
    unknown = run("qualty")
    assert unknown.returncode == 2
    assert "unknown command 'qualty'" in unknown.stderr
    replay_help = run("replay", "--help")
    assert replay_help.returncode == 0
    assert replay_help.stdout.startswith("usage: python -m benchmarks replay")
