"""benchmarks/advice_quality.py's run_quota: the calibrations, the arms, the judge's two looks and
each scenario's typed row, with the calibrate runs and the measuring children replaced by fakes
(the real ones run in the smoke test)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import advice_quality, cgroups, plan
from benchmarks.calibrate_run import CalibrateRun
from benchmarks.plan import Plan, Scenario
from benchmarks.pool import Arm
from benchmarks.results import Host, ScenarioResult


class FakeRun(CalibrateRun):
    """A calibrate run whose published data is its advice (no ConfigMap rendering)."""

    @property
    def data(self) -> dict[str, str] | None:
        return None if self.advice is None else {"advice": f"{self.advice}"}

    @property
    def kept_incumbent(self) -> bool | None:
        return None if self.result is None else True


def _run(advice: tuple[int, int], trial_mode: str = "fork", budget: float | None = None) -> FakeRun:
    trials = [
        {"intra_op_threads": None, "inter_op_threads": None, "round": 0, "status": "ok"},
        {"intra_op_threads": advice[0], "inter_op_threads": advice[1], "round": 0, "status": "ok"},
    ]
    result = {
        "intra_op_threads": advice[0],
        "inter_op_threads": advice[1],
        "trials": trials,
        "trial_mode": trial_mode,
        "elapsed_s": 40.0,
        "budget_s": budget,
    }
    return FakeRun(argv=["tfta", "calibrate"], exit_code=0, wall_s=41.0, result=result)


class Child:
    ready_s = 1.005


class FakePool:
    """Every arm's child answers with latencies set by its threads: 1/2 is the fastest."""

    def __init__(self) -> None:
        self.children: dict[str, Child] = {}
        self.measured: list[str] = []

    def ensure(self, settings: list[Arm]) -> None:
        for arm in settings:
            self.children.setdefault(arm.key, Child())

    def measure(self, arm: Arm, window_s: float, warmup_s: float, concurrency: int) -> Any:
        self.measured.append(arm.key)
        ms = {"1/2": 8.0, "1/1": 9.0}.get(arm.key.split("#")[0], 12.0) * concurrency
        return {"latencies_ms": [ms] * 10, "completed": 10, "window_s": window_s, "cpu_s": 0.1}


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(scenario, way) of every calibrate run, in order; each advises 1/1, spawned ones 1/2."""
    calls: list[tuple[str, str]] = []

    def run_calibrate(
        scenario: Scenario,
        _model: Path | None,
        _group: cgroups.RealCgroup | None,
        budget: float | None,
        _timeout: float,
        trial_mode: str = "fork",
        incumbent: Path | None = None,
        spend_budget: bool = False,
    ) -> FakeRun:
        assert not spend_budget  # the quick plan races as the advisor does by default
        calls.append((scenario.name, "incumbent" if incumbent else trial_mode))
        return _run((1, 2) if trial_mode == "spawn" else (1, 1), trial_mode, budget)

    def repeat(scenario: Scenario, first: CalibrateRun, **kw: Any) -> CalibrateRun:
        return run_calibrate(scenario, None, None, kw["budget"], 0.0, incumbent=Path("cm"))

    monkeypatch.setattr(advice_quality, "run_calibrate", run_calibrate)
    monkeypatch.setattr(advice_quality, "repeat_with_incumbent", repeat)
    return calls


def _quota(scenarios: list[Scenario], pool: FakePool) -> list[ScenarioResult]:
    the_plan = plan.make_plan("quick", can_quota=False)
    effort = dataclasses.replace(the_plan.effort, compare_spawn="first", short_everywhere=True)
    return advice_quality.run_quota(
        Plan("quick", tuple(scenarios), effort, ()),
        scenarios,
        pool=pool,  # type: ignore[arg-type]
        model_path=None,
        can_quota=False,
        host=Host(affinity=2, sockets=1, loadavg_start=(0.0, 0.0, 0.0)),
        seed=6,
    )


def test_every_way_of_calibrating_is_judged_by_the_same_rounds(runs: list[Any]) -> None:
    scenarios = [
        Scenario("builtin", None, "latency", 1),
        Scenario("builtin", None, "throughput", 1),
        Scenario("builtin", None, "latency", 2),
    ]
    pool = FakePool()
    results = _quota(scenarios, pool)
    first = scenarios[0].name
    # the first scenario also spawned, every one repeated with its incumbent and a short sweep
    assert runs[:4] == [(first, "fork"), (first, "incumbent"), (first, "spawn"), (first, "fork")]
    assert len(runs) == 4 + 3 + 3
    assert [r.scenario for r in results] == [s.name for s in scenarios]
    latency = results[0]
    assert latency.advice is not None and latency.advice.setting == "1/1"
    assert latency.spawn is not None and latency.spawn.advice == "1/2"
    assert results[1].spawn is None  # spawned for the first scenario only
    assert latency.short is not None and latency.repeat is not None
    assert latency.repeat.same_data is True and latency.repeat.incumbent_kept is True
    # 1/2 (a spawned run's advice) is the grid's best; the advice has a second arm
    assert latency.grid_best.setting == "1/2"
    assert latency.aa is not None and latency.aa.arms == ["1/1", "1/1#2"]
    assert latency.shared_windows == {"2/2": "default"}
    assert latency.settings["2/2"] == latency.settings["default"]
    # the looks: the first rounds, then the contenders again, held out on their own
    assert latency.first_look is not None and latency.first_look.rounds == 3
    assert latency.second_look is not None and "1/1#2" in latency.second_look.settings
    assert latency.held_out is not None and latency.held_out.rounds == 4
    assert latency.settings["1/1"].rounds == 7
    # the grid's time: start-up and measuring of the grid's own processes, to 10 ms
    assert latency.grid_time.start_s == round(1.005 * len(plan.grid(2, None)), 2)
    assert latency.targets["near_best"] == "MISS"  # 9 ms against 8 ms
    # concurrency 2 is measured apart (its own rounds), with the same processes
    assert results[2].default.value == 2 * results[0].default.value
    assert set(pool.children) == set(latency.settings) - {"2/2"}


def test_a_scenario_row_writes_out_as_the_json_it_reads_back(runs: list[Any]) -> None:
    (result,) = _quota([Scenario("builtin", None, "latency", 1)], FakePool())
    written = json.dumps(result.dump())
    assert ScenarioResult.model_validate_json(written) == result
    assert list(json.loads(written))[-1] == "targets"  # the order a recorded run has
    assert runs
