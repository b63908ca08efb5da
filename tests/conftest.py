"""Shared test helpers.

Real parts (root cgroups, TensorFlow, podman, helm) are used wherever they exist. A test that cannot
find its real part skips with the reason on a developer's machine, but fails on CI (``CI`` set):
CI installs everything, so a skip there would hide a missing install step.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def on_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def missing_real_part(reason: str) -> None:
    """Skip with ``reason`` locally; fail on CI, where every real part must be present."""
    if on_ci():
        pytest.fail(f"real part missing on CI: {reason}")
    pytest.skip(reason)


def run_python(code: str, *args: str, timeout: float = 120.0) -> str:
    """stdout of ``python -c code args`` run with this repository importable; it must exit 0."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="session")
def test_models(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Path]:
    """The small real models of tests/fake_trials/build_models.py, built once per session and
    only when a test first asks (building starts TensorFlow in a child: seconds, not free)."""
    built: list[Path] = []

    def get() -> Path:
        if not built:
            if importlib.util.find_spec("tensorflow") is None:
                missing_real_part("tensorflow is not installed")
            out = tmp_path_factory.mktemp("models")
            proc = subprocess.run(
                [
                    sys.executable,
                    str(FIXTURES.parent / "fake_trials" / "build_models.py"),
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
