"""Benchmark results built from the few fields a test is about: every other required field gets
a neutral value, so a test states only what it checks."""

from __future__ import annotations

from typing import Any

from benchmarks.results import Pooled, Run, ScenarioResult

_SCENARIO: dict[str, Any] = {
    "scenario": "builtin/1cpu/latency/c1",
    "workload": "builtin",
    "quota_cpus": 1.0,
    "objective": "latency",
    "concurrency": 1,
    "batch_size": 1,
    "direction": "lower is better",
    "default": {"setting": "default", "value": 20.0},
    "rule": {"setting": "1/1", "value": 10.0},
    "advice": None,
    "grid_best": {"setting": "1/1", "value": 10.0},
    "ratios": {"advice_vs_default": None, "advice_vs_grid_best": None},
    "calibrate": {},
    "grid_time": {"total_s": 100.0},
    "calibrate_vs_grid": None,
    "settings": {},
    "targets": {},
}


def scenario(fields: dict[str, Any]) -> ScenarioResult:
    """A scenario's result with ``fields``; a partial ``ratios`` keeps the other ratio unset."""
    merged = {**_SCENARIO, **fields}
    merged["ratios"] = {**_SCENARIO["ratios"], **fields.get("ratios", {})}
    return ScenarioResult.model_validate(merged)


def run(fields: dict[str, Any]) -> Run:
    """A run with ``fields``, its scenarios given as partial dicts (``scenario``)."""
    scenarios = [scenario(s) for s in fields.get("scenarios", [])]
    return Run.model_validate(
        {"mode": "full", "started_utc": "x", **fields, "scenarios": scenarios}
    )


def pooled(fields: dict[str, Any]) -> Pooled:
    return Pooled.model_validate(fields)
