"""Fixtures shared by every test folder. Plain helpers shared across folders are in tests/support/.

Real parts (root cgroups, TensorFlow, podman, helm) are used wherever they exist; a test that
cannot find its real part skips locally and fails on CI (tests/support/real_parts.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import FAKE_TRIALS
from tests.support.real_parts import need_module
from tests.support.tiers import tier_problems

#: pytester runs the tier contract's own test (tests/unit/support/test_tiers.py)
pytest_plugins = ("pytester",)

TESTS = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tiers are a contract (tests/README.md): every collected test, before ``-m`` or ``-k``
    deselects any, is checked; one in the wrong tier stops the session."""
    problems = tier_problems(items, TESTS)
    if problems:
        raise pytest.UsageError(
            "tests in the wrong tier (tests/README.md):\n" + "\n".join(problems)
        )


@pytest.fixture(scope="session")
def test_models(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Path]:
    """The small real models of tests/support/fake_trials/build_models.py, built once per session
    and only when a test first asks (building starts TensorFlow in a child: seconds, not free)."""
    built: list[Path] = []

    def get() -> Path:
        if not built:
            need_module("tensorflow")
            out = tmp_path_factory.mktemp("models")
            proc = subprocess.run(
                [
                    sys.executable,
                    str(FAKE_TRIALS / "build_models.py"),
                    str(out),
                ],
                capture_output=True,
                text=True,
                timeout=300,
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
                check=False,
            )
            assert proc.returncode == 0, proc.stderr[-2000:]
            built.append(out)
        return built[0]

    return get
