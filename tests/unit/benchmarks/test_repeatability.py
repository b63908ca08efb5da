"""benchmarks/repeatability.py: how far two runs of the grid disagree about the same setting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import repeatability
from benchmarks.results import Run
from tests.support import REPO
from tests.unit.benchmarks import factory


def _run(p99: dict[str, float], rps: dict[str, float], quota: float | None = None) -> Run:
    return factory.run(_fields(p99, rps, quota))


def _fields(
    p99: dict[str, float], rps: dict[str, float], quota: float | None = None
) -> dict[str, Any]:
    where = "noquota" if quota is None else f"{quota:g}cpu"

    def scenario(objective: str, values: dict[str, float]) -> dict[str, Any]:
        key = "p99_ms" if objective == "latency" else "throughput_rps"
        pick = min if objective == "latency" else max
        best = pick(values, key=lambda k: values[k])
        return {
            "scenario": f"builtin/{where}/{objective}/c1",
            "quota_cpus": quota,
            "objective": objective,
            "grid_best": {"setting": best, "value": values[best]},
            "settings": {k: {key: v} for k, v in values.items()},
        }

    return {"scenarios": [scenario("latency", p99), scenario("throughput", rps)]}


def test_the_same_setting_measured_apart_by_runs_is_the_judges_noise() -> None:
    one = _run({"1/1": 10.0, "1/2": 8.0}, {"1/1": 100.0, "1/2": 200.0})
    two = _run({"1/1": 11.0, "1/2": 8.0, "1/3": 7.0}, {"1/1": 150.0, "1/2": 200.0})
    groups = repeatability.spreads([one, two])
    # 1/3 was not measured in both runs, so it is left out
    assert sorted(groups["no quota, latency"]) == pytest.approx([1.0, 1.1])
    # throughput: higher is better, the ratio is still max/min
    assert sorted(groups["no quota, throughput"]) == pytest.approx([1.0, 1.5])


def test_the_grid_best_per_run_and_whether_it_moved() -> None:
    one = _run({"1/1": 10.0, "1/2": 8.0}, {"1/1": 100.0, "1/2": 200.0})
    two = _run({"1/1": 7.0, "1/2": 8.0}, {"1/1": 100.0, "1/2": 210.0})
    assert repeatability.bests([one, two]) == [
        ("builtin/noquota/latency/c1", ["1/2", "1/1"]),
        ("builtin/noquota/throughput/c1", ["1/2", "1/2"]),
    ]
    text = repeatability.summary([one, two])
    assert "| builtin/noquota/latency/c1    | 1/2 1/1" in text and "| no " in text
    # 1/1 moved 10 -> 7 (43%), 1/2 not at all: half the latency settings differ by more than 5%
    line = next(row for row in text.splitlines() if row.startswith("| no quota, latency"))
    assert "50%" in line and "1.214" in line  # median of 1.0 and 1.4286


def test_quota_groups_apart_and_scenarios_missing_from_a_run_skipped() -> None:
    quota = _run({"1/1": 10.0}, {"1/1": 100.0}, quota=1.5)
    free = _run({"1/1": 10.0}, {"1/1": 100.0})
    both = quota.model_copy(update={"scenarios": quota.scenarios + free.scenarios})
    groups = repeatability.spreads([both, quota])
    assert set(groups) == {"1.5 CPU, latency", "1.5 CPU, throughput"}


def test_one_run_or_a_broken_file_is_a_one_line_error(tmp_path: Path, capsys: Any) -> None:
    run = tmp_path / "run.json"
    run.write_text(json.dumps(_run({"1/1": 10.0}, {"1/1": 100.0}).dump()))
    assert repeatability.main([str(run)]) == 2
    assert "at least two runs" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert repeatability.main([str(run), str(bad)]) == 2
    assert capsys.readouterr().err.startswith("repeatability: ")
    assert repeatability.main([str(run), str(run)]) == 0
    assert "| no quota, latency" in capsys.readouterr().out


def test_the_recorded_runs_load_and_cover_every_group(capsys: Any) -> None:
    runs = sorted((REPO / "benchmarks" / "runs").glob("*.json"))
    assert len(runs) >= 2
    assert repeatability.main([str(p) for p in runs]) == 0
    out = capsys.readouterr().out
    for group in ("no quota", "1.5 CPU", "1 CPU"):
        assert f"| {group}, latency" in out and f"| {group}, throughput" in out
