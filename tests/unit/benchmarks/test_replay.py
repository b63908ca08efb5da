"""benchmarks/replay.py: the current choice on a run's recorded trials, judged by its grid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import replay
from benchmarks.results import ScenarioResult
from tests.unit.benchmarks import factory


def _scenario(windows: list[list[Any]] | None) -> dict[str, Any]:
    return {
        "scenario": "builtin/noquota/latency/c1",
        "objective": "latency",
        "advice": {"setting": "1/1", "value": 12.0},
        "grid_best": {"setting": "2/2", "value": 10.0},
        "ratios": {"advice_vs_grid_best": 1.2},
        "calibrate": {"windows": windows},
        "settings": {
            "default": {"p99_ms": 11.0, "throughput_rps": 100.0},
            "1/1": {"p99_ms": 12.0, "throughput_rps": 90.0},
            "2/1": {"p99_ms": 10.3, "throughput_rps": 95.0},
            "2/2": {"p99_ms": 10.0, "throughput_rps": 99.0},
        },
    }


def _result(windows: list[list[Any]] | None) -> ScenarioResult:
    return factory.scenario(_scenario(windows))


def _run_file(path: Path, windows: list[list[Any]] | None) -> None:
    host = {"affinity": 2, "loadavg_start": [0.0, 0.0, 0.0]}
    path.write_text(
        json.dumps(factory.run({"host": host, "scenarios": [_scenario(windows)]}).dump())
    )


#: the baseline and three settings over a screen and eight race rounds (the seven in a row a
#: replacement of TF's default needs against two challengers, and one more); 2/1 is steadily best,
#: 1/1 steadily 20% behind it, 1/2 timed out once and was never measured by the grid
WINDOWS = [
    [None, None, 0, "ok", 11.0, 100.0],
    [1, 1, 0, "ok", 12.0, 90.0],
    [2, 1, 0, "ok", 10.0, 95.0],
    [1, 2, 0, "timeout", None, None],
    *[
        row
        for round_ in range(1, 9)
        for row in (
            [None, None, round_, "ok", 11.0, 100.0],
            [1, 1, round_, "ok", 12.0, 90.0],
            [2, 1, round_, "ok", 10.0, 95.0],
        )
    ],
]


def test_the_replayed_advice_is_judged_by_the_grid_of_the_same_run() -> None:
    row = replay.replay(_result(WINDOWS), affinity=2)
    assert row is not None
    assert (row.ran, row.ran_vs_best) == ("1/1", 1.2)
    assert row.replayed == "2/1"
    assert row.replayed_vs_best == pytest.approx(1.03)
    assert row.within is True


def test_a_replayed_setting_the_grid_did_not_measure_is_not_judged() -> None:
    steady_12 = [[1, 2, r, "ok", 9.0, 120.0] for r in range(9)]
    row = replay.replay(_result([*WINDOWS, *steady_12]), affinity=2)
    assert row is not None
    assert row.replayed == "1/2"
    assert row.replayed_vs_best is None and row.within is None


def test_a_kept_default_is_judged_spelled_out_as_the_run_measured_it() -> None:
    default_best = [[None, None, r, "ok", 9.0, 120.0] for r in (0, 1, 2)]
    scenario = _scenario([*default_best, *WINDOWS[1:3]])
    scenario["settings"]["2/2"] = {"p99_ms": 10.4, "throughput_rps": 99.0}
    row = replay.replay(factory.scenario(scenario), affinity=2)
    assert row is not None
    assert row.replayed == "2/2"
    assert row.replayed_vs_best == pytest.approx(1.04)


def test_a_run_without_recorded_trials_has_nothing_to_replay(tmp_path: Path) -> None:
    assert replay.replay(_result(None), affinity=2) is None
    path = tmp_path / "old.json"
    _run_file(path, None)
    assert replay.main([str(path)]) == 1


def test_main_prints_the_table_and_the_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.json"
    _run_file(path, WINDOWS)
    assert replay.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "| builtin/noquota/latency/c1 | 1/1 " in out
    assert "within 5% of the grid's best: 1 of 1" in out
