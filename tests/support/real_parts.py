"""Real parts (root cgroups, TensorFlow, podman, helm) are used wherever they exist. A test that
cannot find its real part skips with the reason on a developer's machine, but fails on CI (``CI``
set): CI installs everything, so a skip there would hide a missing install step.
"""

from __future__ import annotations

import importlib.util
import os

import pytest


def on_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def missing_real_part(reason: str) -> None:
    """Skip with ``reason`` locally; fail on CI, where every real part must be present."""
    if on_ci():
        pytest.fail(f"real part missing on CI: {reason}")
    pytest.skip(reason)


def need_module(name: str, reason: str | None = None) -> None:
    """``missing_real_part`` unless ``name`` can be imported (found, not imported here: importing
    TensorFlow into the test process would cost seconds and memory)."""
    try:
        found = importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        found = False
    if not found:
        missing_real_part(reason or f"{name} is not installed")
