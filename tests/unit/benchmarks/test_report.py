"""The benchmark's tables and summary lines, from a run's typed results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import figures, report
from benchmarks.results import Host, Run, ScenarioResult
from tests.support import REPO
from tests.unit.benchmarks import factory


def _result() -> dict[str, Any]:
    return {
        "scenario": "builtin/1cpu/latency/c1",
        "objective": "latency",
        "quota_cpus": 1.0,
        "default": {"setting": "default", "value": 21.9},
        "rule": {"setting": "1/1", "value": 11.3},
        "advice": {"setting": "1/1", "value": 11.3},
        "grid_best": {"setting": "1/2", "value": 11.0},
        "ratios": {"advice_vs_default": 0.516, "advice_vs_grid_best": 1.027},
        "calibrate": {"wall_s": 58.2, "trials": 40, "ok_trials": 38, "peak_tree_rss_mib": 812.0},
        "spawn": {"ok_trials": 9, "advice_vs_grid_best": 1.18},
        "short": {
            "ok_trials": 17,
            "wall_s": 29.5,
            "advice_vs_grid_best": 1.07,
            "advice_value": 11.8,
        },
        "grid_time": {"total_s": 180.0},
        "calibrate_vs_grid": 0.323,
        "targets": {
            "1cpu_p99": "PASS",
            "near_best": "PASS",
            "cal_60s": "PASS",
            "cal_25pct": "MISS",
            "rss": "PASS",
            "trials_60s": "PASS",
            "near_best_30s": "MISS",
        },
    }


def _report(*results: dict[str, Any]) -> Run:
    return factory.run(
        {"mode": "full", "started_utc": "x", "notes": [], "scenarios": list(results)}
    )


def _typed(*results: dict[str, Any]) -> list[ScenarioResult]:
    return [factory.scenario(r) for r in results]


def test_render_shows_values_directions_ratios_and_verdicts() -> None:
    text = report.render(
        factory.run(
            {
                "mode": "quick",
                "started_utc": "2026-11-21 09:00 UTC",
                "notes": ["a note"],
                "scenarios": [_result()],
                "failures": ["x: broke"],
            }
        )
    )
    assert "21.90 ms" in text
    assert "11.00 ms (1/2)" in text
    assert "| lower " in text
    assert "0.52" in text
    assert "1.03" in text
    assert "39.2" in text  # 38 ok trials in 58.2 s: per 60 s
    assert "| 9 " in text and "1.18" in text  # the spawned calibration beside it
    assert "| 1.07 " in text  # the short sweep's advice against the grid's best
    assert "58.2" in text
    assert "0.32" in text
    assert "MISS" in text
    assert "note: a note" in text
    assert "FAILED: x: broke" in text
    header, rule_line = text.split("### Objective per setting\n")[1].splitlines()[:2]
    assert len(header) == len(rule_line)


def test_the_objective_table_shows_the_grid_noise_between_advice_and_best() -> None:
    result = _result()
    result["settings"] = {
        "1/1": {"round_p99_ms": [11.0, 11.6, 11.3]},
        "1/2": {"round_p99_ms": [10.0, 12.0, 11.0]},
    }
    row = next(line for line in report.quality_table(_typed(result)).splitlines() if "1cpu" in line)
    settings = factory.scenario(result).settings
    expected = figures.grid_noise(settings["1/1"], settings["1/2"], "latency")
    assert expected is not None and f"±{expected:.0%} " in row
    # a run without the rounds (or an advice the grid did not measure) shows a dash
    measured = dict(result["settings"])
    result["settings"] = {"1/2": measured["1/2"]}
    assert _cell(result, "grid noise") == "-"
    # and so does an advice that is the grid's best: there is nothing to tell apart
    result["settings"] = measured
    result["advice"] = {"setting": "1/2", "value": 11.0}
    assert _cell(result, "grid noise") == "-"


def _cell(result: dict[str, Any], column: str) -> str:
    header, _, row = report.quality_table(_typed(result)).splitlines()
    names = [c.strip() for c in header.strip("|").split("|")]
    return [c.strip() for c in row.strip("|").split("|")][names.index(column)]


def test_the_objective_table_shows_the_first_looks_ratio_and_its_best_if_it_was_another() -> None:
    result = _result()
    assert _cell(result, "first look") == "-"  # a run from before the second look
    result["first_look"] = {
        "grid_best": {"setting": "1/2", "value": 11.0},
        "advice_vs_grid_best": 1.142,
    }
    assert _cell(result, "first look") == "1.14"
    result["first_look"]["grid_best"] = {"setting": "2/3", "value": 11.0}
    assert _cell(result, "first look") == "1.14 (2/3)"
    result["first_look"]["advice_vs_grid_best"] = None  # calibrate gave no advice
    assert _cell(result, "first look") == "-"
    assert _cell(result, "adv/best") == "1.03"  # the final figure is its own column


def test_the_objective_table_shows_the_held_out_ratio_and_the_count_beside_the_target() -> None:
    result = _result()
    assert _cell(result, "held out") == "-"  # a run from before the held-out look
    assert "held out: the advice" not in report.render(_report(result))
    result["held_out"] = {
        "grid_best": {"setting": "1/2", "value": 10.0},
        "advice_vs_grid_best": 1.08,
        "advice_value": 10.8,
    }
    assert _cell(result, "held out") == "1.08"
    result["held_out"]["grid_best"]["setting"] = "2/3"
    assert _cell(result, "held out") == "1.08 (2/3)"
    near = _result()
    near["held_out"] = {
        "grid_best": {"setting": "1/2", "value": 10.0},
        "advice_vs_grid_best": 1.02,
        "advice_value": 10.2,
    }
    assert report.held_out_count(_typed(result, near, _result())) == (1, 2)
    text = report.render(_report(result, near))
    assert "held out: the advice within 5% of the best in 1 of 2 scenarios" in text


def test_latest_section_is_replaced_with_command_load_and_tables() -> None:
    run = {
        "command": "python -m benchmarks quality --quick",
        "started_utc": "2026-11-21 09:00 UTC",
        "wall_s": 512.3,
        "host": {"affinity": 2, "loadavg_start": [0.12, 0, 0], "loadavg_end": [1.5, 0, 0]},
    }
    doc = "# Bench\n\n<!-- LATEST -->\nold table\n<!-- /LATEST -->\nfooter\n"
    new = report.replace_latest(doc, report.latest_block(factory.run(run), "| new | table |"))
    assert "old table" not in new
    assert new.startswith("# Bench\n\n<!-- LATEST -->\n")
    assert new.endswith("<!-- /LATEST -->\nfooter\n")
    assert "`python -m benchmarks quality --quick`" in new
    assert "0.12 at start and 1.50 at end" in new
    assert "| new | table |" in new
    with pytest.raises(ValueError, match="LATEST"):
        report.replace_latest("no markers", "x")


def _paired(
    quota: float | None, objective: str, advice: float, short: float | None
) -> dict[str, Any]:
    """A scenario calibrated with the default budget and with 30 s, judged by one grid (best 10)."""
    return {
        "scenario": f"x/{quota}/{objective}",
        "quota_cpus": quota,
        "objective": objective,
        "advice": {"setting": "1/1", "value": advice},
        "grid_best": {"setting": "1/2", "value": 10.0},
        "calibrate": {"wall_s": 58.0, "ok_trials": 29},
        "calibrate_vs_grid": 0.24,
        "grid_time": {"total_s": 240.0},
        "short": {"wall_s": 29.0, "ok_trials": 12, "advice_value": short},
    }


def test_budget_table_counts_near_best_per_quota_for_both_budgets_on_the_same_grid() -> None:
    results = [
        _paired(None, "latency", 10.2, 10.9),  # default near, 30 s not (1.09x)
        _paired(None, "latency", 11.0, 10.0),  # the other way round
        _paired(None, "throughput", 9.8, None),  # 30 s gave no advice: not near
        _paired(1.0, "latency", 10.0, 10.4),  # both near
        {**_paired(1.5, "latency", 10.0, 10.0), "short": None},  # no short sweep: not counted
    ]
    table = report.budget_table(_typed(*results))
    assert table is not None
    lines = table.splitlines()
    assert lines[0].split("|")[1:-1] == [
        " quota ",
        " scenarios ",
        " default budget: near best ",
        " 30 s: near best ",
        " default budget: cal/grid ",
        " 30 s: cal/grid ",
        " default budget: ok per 60 s ",
        " 30 s: ok per 60 s ",
    ]
    none = [c.strip() for c in lines[2].split("|")[1:-1]]
    assert none == ["none", "3", "2 of 3", "1 of 3", "0.24", "0.12", "30.0", "24.8"]
    one = [c.strip() for c in lines[3].split("|")[1:-1]]
    assert one[:4] == ["1 CPU", "1", "1 of 1", "1 of 1"]
    total = [c.strip() for c in lines[4].split("|")[1:-1]]
    assert total[:4] == ["all", "4", "3 of 4", "2 of 4"]
    assert len(lines) == 5  # 1.5 CPUs had no short sweep


def test_budget_table_is_left_out_without_a_short_sweep() -> None:
    result = _result()
    result["short"] = None
    assert report.budget_table(_typed(result)) is None
    text = report.render(_report(result))
    assert "The default budget against" not in text
    short = _paired(None, "latency", 11.3, 11.3)
    paired = {**_result(), **short, "calibrate": {**_result()["calibrate"], **short["calibrate"]}}
    text = report.render(_report(paired))
    assert "### The default budget against 30 s" in text


def test_the_objective_table_says_what_a_second_calibration_with_the_incumbent_wrote() -> None:
    result = _result()
    assert _cell(result, "again") == "-"  # a run from before the incumbent
    result["repeat"] = {"advice": "1/1", "same_data": True, "incumbent_kept": True}
    assert _cell(result, "again") == "same"
    moved = _result()
    moved["repeat"] = {"advice": "1/2", "same_data": False, "incumbent_kept": False}
    assert _cell(moved, "again") == "moved (1/2)"
    assert report.repeat_count(_typed(result, moved, _result())) == (1, 2)
    text = report.render(_report(result, moved))
    assert "wrote the same data in 1 of 2." in text


def test_an_advice_worse_than_the_default_beyond_the_grids_noise_is_marked_and_counted() -> None:
    result = _result()
    steady = [21.0, 22.0, 22.7]
    result["settings"] = {"default": {"round_p99_ms": steady}, "1/1": {"round_p99_ms": steady}}
    assert report.worse_than_default(factory.scenario(result)) is False  # 11.3 against 21.9
    worse = _result()
    worse["advice"] = {"setting": "2/2", "value": 25.0}
    worse["ratios"]["advice_vs_default"] = 25.0 / 21.9
    worse["settings"] = {"default": {"round_p99_ms": steady}, "2/2": {"round_p99_ms": steady}}
    assert report.worse_than_default(factory.scenario(worse)) is True
    assert _cell(worse, "adv/def") == "1.14 (worse)"
    # inside the noise of the two it is not called worse
    noisy = [15.0, 25.0, 30.0]
    worse["settings"] = {"default": {"round_p99_ms": noisy}, "2/2": {"round_p99_ms": noisy}}
    assert report.worse_than_default(factory.scenario(worse)) is False
    worse["settings"] = {"default": {"round_p99_ms": steady}, "2/2": {"round_p99_ms": steady}}
    text = report.render(_report(result, worse))
    assert "beyond the grid's noise of the two (adv/def marked 'worse'): 1 of 2 (" in text


def _with_aa(noise: float, name: str = "builtin/1cpu/latency/c1") -> dict[str, Any]:
    result = _result()
    result["scenario"] = name
    result["aa"] = {
        "setting": "1/1",
        "arms": ["1/1", "1/1#2"],
        "values": [11.3, round(11.3 * (1 + noise), 3)],
        "rounds": [13, 13],
        "noise": noise,
        "beyond_tolerance": noise > figures.GRID_BEST_TOLERANCE,
    }
    return result


def test_each_scenario_shows_its_aa_noise_beside_the_verdict_and_says_where_it_exceeds() -> None:
    quiet, loud = _with_aa(0.02), _with_aa(0.2, name="wide_mlp/noquota/latency/c1")
    text = report.render(_report(quiet, loud))
    table = text.split("### Objective per setting\n")[1].split("\n\n")[0]
    header = [cell.strip() for cell in table.splitlines()[0].strip("|").split("|")]
    assert header.index("A/A") == header.index("adv/best") + 1
    rows = {line.split("|")[1].strip(): line for line in table.splitlines()[2:]}
    assert "| 2%  " in rows[quiet["scenario"]]
    assert "| 20% (> 5%) |" in rows[loud["scenario"]]
    assert "differed by 11% (median), 20% at most" in text
    assert "A/A noise exceeds the 5% tolerance in 1 of 2 (wide_mlp/noquota/latency/c1)" in text
    targets = text.split("### Targets\n")[1]
    assert "| PASS *" in targets.split(loud["scenario"])[1].splitlines()[0]
    assert "*" not in targets.split(quiet["scenario"])[1].splitlines()[0]
    assert "- *: the advice's A/A noise exceeds the 5% tolerance" in targets
    # every verdict kept its value: the mark is the table's, not the target's
    assert loud["targets"]["near_best"] == "PASS"


def test_aa_within_the_tolerance_everywhere_is_said_once_and_marks_nothing() -> None:
    text = report.render(_report(_with_aa(0.01), _with_aa(0.04, name="other")))
    assert "within the 5% tolerance in all 2." in text
    assert " *" not in text.split("### Targets\n")[1]


def test_the_summary_names_the_machine_and_a_run_from_before_says_it_did_not() -> None:
    host = {
        "affinity": 2,
        "loadavg_start": [1.32, 0, 0],
        "machine": {
            "cpu_model": "AMD EPYC",
            "logical_cpus": 2,
            "affinity_cpus": 2,
            "physical_cores": 2,
            "sockets": 1,
            "kernel": "6.1.0",
            "cgroup_version": 1,
            "python": "3.11.7",
            "tensorflow": "2.21.0",
            "commit": "a38a39fa158f",
        },
    }
    line = report.machine_line(Host.model_validate(host))
    assert line == (
        "machine: AMD EPYC, 2 logical CPUs, 2 in the affinity mask (2 cores), kernel 6.1.0, "
        "cgroup v1, Python 3.11.7, TensorFlow 2.21.0, advisor at a38a39fa158f; "
        "1-min load average 1.32 at start"
    )
    assert line in report.render(factory.run({"scenarios": [_result()], "host": host}))
    older = {"affinity": 2, "loadavg_start": [0.5, 0, 0]}
    assert report.machine_line(Host.model_validate(older)) == (
        "machine: not recorded in this run (2 CPUs in the affinity mask); "
        "1-min load average 0.50 at start"
    )


@pytest.mark.parametrize("path", sorted((REPO / "benchmarks" / "runs").glob("full-*.json")))
def test_every_recorded_run_still_renders(path: Path) -> None:
    run = Run.model_validate(json.loads(path.read_text()))
    text = report.render(run)
    assert "machine: not recorded in this run" in text  # recorded before machines were named
    assert all(r.scenario in text for r in run.scenarios)
    assert "A/A" in text  # the column, empty: these runs measured no second arm
    assert report.aa_summary(run.scenarios) is None
