"""How good is the advice, and what does it cost? Defaults vs the static rule vs the advisor vs
the exhaustive grid, under real cgroup v1 quotas, measured by the benchmark's own harness.

    python -m benchmarks quality --quick --json out.json   # < 10 min on a 2-core box
    python -m benchmarks quality --smoke                   # seconds: checks the plumbing
    python -m benchmarks quality --json full.json          # every scenario (about an hour)
    python -m benchmarks quality --family serving          # TF Serving models (about 20 min)
    python -m benchmarks quality --family networks --quick # MobileNetV2, ResNet50 (~30 min)

Per subject, one measuring child per setting is started once (benchmarks/pool.py). Per quota,
a fresh cgroup is made; the real ``tf-thread-advisor calibrate`` runs inside it with the default
budget (timed, its process tree's RSS polled); then every child moves into the group and the
settings are measured in seeded, reshuffled rounds so drift hits all alike. Needs root for the
quotas; without it only the no-quota scenarios run, and the report says so. ``--family serving``
runs the TF Serving models of benchmarks/serving.py instead, each judged on its own warmup
requests; ``--family networks`` two real architectures (benchmarks/shapes.py). How to read
the output: docs/benchmark.md.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.recommend import configmap_yaml
from benchmarks import REPO, arms, cgroups, figures, machine, plan, report, serving
from benchmarks.calibrate_run import CalibrateRun, run_calibrate
from benchmarks.measure import first_look, log, measure_rounds, refine
from benchmarks.plan import Effort, Plan, Scenario
from benchmarks.pool import CHILD, DEFAULT, Arm, Pool
from benchmarks.quality_args import parse_args, plan_of
from benchmarks.results import (
    GridTime,
    Host,
    Pooled,
    ReplayCost,
    Run,
    ScalingRow,
    ScenarioResult,
)
from benchmarks.scenario_result import Calibrations, Looks, kill_after, scenario_figures

BUILD_TIMEOUT_S = 300.0


def sockets() -> int:
    """Distinct physical packages among the CPUs this process may run on (for the static rule)."""
    ids = set()
    for cpu in os.sched_getaffinity(0):
        path = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id")
        with contextlib.suppress(OSError, ValueError):
            ids.add(int(path.read_text()))
    return max(1, len(ids))


def build_shape(shape: str, out_dir: Path) -> Path:
    """Build one of benchmarks/shapes.py in a child (TF stays out of this process)."""
    argv = [sys.executable, "-m", CHILD, "build", "--shape", shape, "--out", str(out_dir)]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False, cwd=REPO
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError(f"building shape {shape} failed: {tail[0]}")
    return Path(json.loads(done.stdout.splitlines()[-1])["built"])


@contextlib.contextmanager
def maybe_group(quota: float | None, can_quota: bool) -> Iterator[cgroups.RealCgroup | None]:
    if not can_quota:
        yield None
        return
    with cgroups.real_cgroup(quota) as group:
        yield group


def run_quota(
    the_plan: Plan,
    scenarios: list[Scenario],
    *,
    pool: Pool,
    model_path: Path | None,
    can_quota: bool,
    host: Host,
    seed: int,
) -> list[ScenarioResult]:
    """All scenarios of one subject and one quota: calibrate each, then measure per concurrency."""
    effort = the_plan.effort
    quota = scenarios[0].quota_cpus
    grid = [Arm.of(i, j) for i, j in plan.grid(host.affinity, effort.grid_limit)]
    rule = Arm.of(*plan.static_rule(host.affinity, quota, host.sockets))
    results: list[ScenarioResult] = []
    with maybe_group(quota, can_quota) as group:
        calibrations = {
            s: calibrate(s, effort, first=s == scenarios[0], model_path=model_path, group=group)
            for s in scenarios
        }
        the_arms = plan_arms(rule, grid, host.affinity, calibrations.values())
        settings = the_arms.measured
        missing = [x for x in settings if x.key not in pool.children]
        if missing:
            log(f"start {len(missing)} measuring processes (two at a time, no quota)")
        pool.ensure(settings)
        try:
            if group is not None:
                pool.move_all(group)
            for concurrency in dict.fromkeys(s.concurrency for s in scenarios):
                here = {s: c for s, c in calibrations.items() if s.concurrency == concurrency}
                results += judge(
                    here,
                    pool=pool,
                    the_arms=the_arms,
                    rule=rule,
                    grid=grid,
                    effort=effort,
                    concurrency=concurrency,
                    group=group,
                    seed=seed + len(results),
                )
        finally:
            if group is not None:  # out before the group goes: leaving it kills what is inside
                home = cgroups.home_group()
                for child in pool.children.values():
                    with contextlib.suppress(OSError):
                        cgroups.move(home, child.proc.pid)
    return results


def calibrate(
    scenario: Scenario,
    effort: Effort,
    *,
    first: bool,
    model_path: Path | None,
    group: cgroups.RealCgroup | None,
) -> Calibrations:
    """The scenario's calibrate run, and each other way the plan calibrates it again (``first``:
    the first scenario of its subject and quota, which ``compare_spawn="first"`` asks for)."""
    log(f"calibrate {scenario.name} (in the scenario's cgroup)")
    budget = effort.calibrate_budget_s
    timeout = kill_after(budget)
    spend = effort.spend_budget
    run = run_calibrate(scenario, model_path, group, budget, timeout, spend_budget=spend)
    ended = None if run.result is None else run.result.get("stopped")
    log(
        f"  -> advice {run.advice}, {run.wall_s:.1f} s ({ended or 'ended'}), "
        f"{run.trial_count} trials, "
        f"peak RSS {run.peak_tree_rss_mib:.0f} MiB{'; ' + run.error if run.error else ''}"
    )
    repeated = None
    if effort.repeat_with_incumbent:
        repeated = repeat_with_incumbent(
            scenario,
            run,
            model_path=model_path,
            group=group,
            budget=budget,
            timeout=timeout,
            spend_budget=spend,
        )
    spawned = None
    if effort.compare_spawn == "all" or (effort.compare_spawn == "first" and first):
        log(f"calibrate {scenario.name} again, every trial spawned")
        spawned = run_calibrate(
            scenario, model_path, group, budget, timeout, trial_mode="spawn", spend_budget=spend
        )
        log(f"  -> advice {spawned.advice}, {spawned.wall_s:.1f} s, {spawned.ok_trials} ok")
    short = None
    short_budget = effort.short_budget_for(scenario)
    if short_budget:
        log(f"calibrate {scenario.name} again with --budget {short_budget:g}")
        short = run_calibrate(
            scenario, model_path, group, short_budget, kill_after(short_budget), spend_budget=spend
        )
        log(f"  -> advice {short.advice}, {short.wall_s:.1f} s, {short.ok_trials} ok")
    return Calibrations(run, spawned=spawned, short=short, repeat=repeated)


def plan_arms(
    rule: Arm, grid: list[Arm], affinity: int, calibrations: Iterable[Calibrations]
) -> arms.Arms:
    """The processes the judge measures: TF's default, the rule, the grid and every advice any
    calibration gave, with a second arm for each first calibration's advice."""
    calibrations = list(calibrations)
    # by kind, then by scenario: this order is the processes' and seeds the rounds' shuffle
    every_run = [
        *(c.first for c in calibrations),
        *(c.spawned for c in calibrations),
        *(c.short for c in calibrations),
        *(c.repeat for c in calibrations),
    ]
    advice = [Arm.of(*r.advice) for r in every_run if r is not None and r.advice is not None]
    firsts = [c.first.advice for c in calibrations if c.first.advice is not None]
    return arms.plan_arms([DEFAULT, rule, *grid, *advice], affinity, [Arm.of(*a) for a in firsts])


def judge(
    calibrations: dict[Scenario, Calibrations],
    *,
    pool: Pool,
    the_arms: arms.Arms,
    rule: Arm,
    grid: list[Arm],
    effort: Effort,
    concurrency: int,
    group: cgroups.RealCgroup | None,
    seed: int,
) -> list[ScenarioResult]:
    """The scenarios sharing one concurrency (one measurement; only their advice differs): every
    setting measured in rounds, a second look at the contenders, then each scenario's figures."""
    settings = the_arms.measured
    log(f"measure {len(settings)} settings, concurrency {concurrency}")
    samples, spent = measure_rounds(
        pool, settings, effort=effort, concurrency=concurrency, group=group, seed=seed
    )
    stats = {key: figures.pool_rounds(rounds) for key, rounds in samples.items()}
    the_arms.share(stats)
    grid_keys = [s.key for s in grid]
    firsts = {
        s: first_look(stats, grid_keys, s.objective, c.first.advice)
        for s, c in calibrations.items()
    }
    held: dict[str, Pooled] = {}
    second = refine(
        pool,
        settings,
        samples,
        [
            the_arms.contenders(
                figures.contenders(
                    stats, grid_keys, s.objective, effort.refine_top, c.advice_keys()
                )
            )
            for s, c in calibrations.items()
        ],
        effort=effort,
        concurrency=concurrency,
        group=group,
        seed=seed + 500,
        held_out=held,
    )
    stats.update({k: figures.pool_rounds(samples[k]) for k in second.settings})
    the_arms.share(stats)
    the_arms.share(held)
    start_s = sum(pool.children[the_arms.resolve(k)].ready_s or 0.0 for k in grid_keys)
    measure_s = sum(spent[the_arms.resolve(k)] for k in grid_keys)
    grid_time = GridTime(start_s=start_s, measure_s=measure_s, total_s=start_s + measure_s)
    return [
        scenario_figures(
            scenario,
            stats,
            rule=rule,
            calibrations=c,
            grid_keys=grid_keys,
            grid_time=grid_time,
            the_arms=the_arms,
            looks=Looks(
                first=firsts[scenario],
                second=second,
                held_out=first_look(held, grid_keys, scenario.objective, c.first.advice)
                if held
                else None,
            ),
        )
        for scenario, c in calibrations.items()
    ]


def repeat_with_incumbent(
    scenario: Scenario,
    first: CalibrateRun,
    *,
    model_path: Path | None,
    group: cgroups.RealCgroup | None,
    budget: float | None,
    timeout: float,
    spend_budget: bool = False,
) -> CalibrateRun | None:
    """The scenario calibrated again with the first run's advice as the incumbent, as the next
    scheduled Job would race the ConfigMap the first one wrote; None when the first gave none."""
    configmap = first.configmap()
    if configmap is None:
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="tfta-incumbent-") as handle:
        handle.write(configmap_yaml(configmap))
        handle.flush()
        log(f"calibrate {scenario.name} again, its advice {first.advice} as the incumbent")
        again = run_calibrate(
            scenario,
            model_path,
            group,
            budget,
            timeout,
            incumbent=Path(handle.name),
            spend_budget=spend_budget,
        )
    same = again.data == first.data
    log(
        f"  -> advice {again.advice}, {again.wall_s:.1f} s, incumbent "
        f"{'kept' if again.kept_incumbent else 'replaced'}; data {'same' if same else 'changed'}"
    )
    return again


@dataclass
class Outcome:
    """What running a plan's scenarios gave: their results, what failed, each subject's
    measuring children (setting key -> start-up seconds and what the child said)."""

    scenarios: list[ScenarioResult] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    children: dict[str, dict[str, Any]] = field(default_factory=dict)
    replay_cost: ReplayCost | None = None


def subject_model(subject: str, tmp: Path, serving_path: str) -> tuple[Path | None, list[str]]:
    """What calibrate is given for ``subject`` (None: the built-in) and how the measuring
    children load it; builds the model in a child first where the benchmark makes it."""
    if subject == "builtin":
        return None, ["--builtin"]
    kind = plan.serving_kind(subject)
    if kind is not None:
        model = serving.build_serving(kind, tmp)
        return model.path_for_advisor(serving_path), ["--serving", str(model.version_dir)]
    path = build_shape(subject, tmp)
    return path, ["--model", str(path)]


def run_plan(
    the_plan: Plan, can_quota: bool, host: Host, seed: int, serving_path: str = "version"
) -> Outcome:
    out = Outcome()
    with tempfile.TemporaryDirectory(prefix="tfta-bench-") as tmp_name:
        tmp = Path(tmp_name)
        for subject in dict.fromkeys(s.subject for s in the_plan.scenarios):
            of_subject = [s for s in the_plan.scenarios if s.subject == subject]
            try:
                model_path, args = subject_model(subject, tmp, serving_path)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                out.failures.append(f"{subject}: {exc}")
                continue
            with Pool(args, tmp) as pool:
                log(f"subject {subject}")
                for quota in dict.fromkeys(s.quota_cpus for s in of_subject):
                    scenarios = [s for s in of_subject if s.quota_cpus == quota]
                    try:
                        out.scenarios += run_quota(
                            the_plan,
                            scenarios,
                            pool=pool,
                            model_path=model_path,
                            can_quota=can_quota,
                            host=host,
                            seed=seed,
                        )
                    except (RuntimeError, OSError, KeyError, ValueError) as exc:
                        names = ", ".join(s.name for s in scenarios)
                        out.failures.append(f"{names}: {type(exc).__name__}: {exc}")
                        log(f"FAILED {names}: {exc}")
                out.children[subject] = {
                    k: {"ready_s": round(c.ready_s or 0.0, 2), **c.info}
                    for k, c in pool.children.items()
                }
        if the_plan.effort.replay_cost:
            try:
                out.replay_cost = replay_cost(the_plan, can_quota, tmp, serving_path)
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
                out.failures.append(f"replay cost: {type(exc).__name__}: {exc}")
                log(f"FAILED replay cost: {exc}")
    return out


def replay_cost(the_plan: Plan, can_quota: bool, tmp: Path, serving_path: str) -> ReplayCost:
    """The recommender with every warmup request of one batch size, calibrated replaying them
    and on synthesised inputs of those shapes, under the 1-CPU quota where one can be made."""
    model = serving.build_serving(
        plan.REPLAY_COST_KIND, tmp / "replay-cost", batch_size=plan.REPLAY_COST_BATCH
    )
    quota = 1.0 if can_quota else None
    log(f"replay cost: calibrate {model.kind} replaying its warmup file, then synthesised")
    with maybe_group(quota, can_quota) as group:
        cost = serving.measure_replay_cost(
            model,
            which_path=serving_path,
            quota_cpus=quota,
            group=group,
            budget_s=the_plan.effort.calibrate_budget_s,
        )
    log(
        f"  -> {cost.replay_per_60s} vs {cost.synthesised_per_60s} ok trials per 60 s "
        f"({cost.target})"
    )
    return cost


def _terminate(signum: int, _frame: object) -> None:
    # SIGTERM unwinds like Ctrl-C, so every ``finally`` (children, cgroups) runs.
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    signal.signal(signal.SIGTERM, _terminate)
    why_not = cgroups.cgroup_unavailable()
    the_plan = plan_of(args, mode, why_not)
    host = Host(
        affinity=len(os.sched_getaffinity(0)),
        logical_cpus=os.cpu_count(),
        sockets=sockets(),
        loadavg_start=os.getloadavg(),
        machine=machine.describe(),
    )
    started = time.monotonic()
    command = " ".join(["python -m benchmarks quality", *(sys.argv[1:] if argv is None else argv)])
    started_utc = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    for note in the_plan.notes:
        log(note)
    scaled: dict[str, list[ScalingRow]] = {}
    try:
        outcome = run_plan(the_plan, why_not is None, host, args.seed, args.serving_path)
        if not args.no_scaling and the_plan.effort.scaling_sizes:
            from benchmarks import scaling

            log("simulated scaling")
            scaled["scaling"] = scaling.simulate(the_plan.effort.scaling_sizes)
    except KeyboardInterrupt:
        log("interrupted: children stopped, cgroups removed")
        return 130
    loadavg_end = os.getloadavg()
    full = Run(
        mode=mode,
        family=args.family,
        command=command,
        started_utc=started_utc,
        host=Host.model_validate({**host.dump(), "loadavg_end": loadavg_end}),
        effort=vars(the_plan.effort),
        notes=list(the_plan.notes),
        targets=figures.TARGETS,
        scenarios=outcome.scenarios,
        failures=outcome.failures,
        children=outcome.children,
        **scaled,  # left out of the JSON when not simulated
        **({} if outcome.replay_cost is None else {"replay_cost": outcome.replay_cost}),
        wall_s=round(time.monotonic() - started, 1),
    )
    text = report.render(full)
    print(text)
    print(
        f"\n(total wall {full.wall_s:.0f} s; load average {host.loadavg_start[0]:.2f} at "
        f"start, {loadavg_end[0]:.2f} at end)"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(full.dump(), indent=2, default=str) + "\n")
    if args.write_docs is not None:
        doc = args.write_docs.read_text()
        args.write_docs.write_text(report.replace_latest(doc, report.latest_block(full, text)))
    failed_calibrations = [s.scenario for s in full.scenarios if s.calibrate.error]
    cost = full.replay_cost
    if cost is not None and (cost.replay.error or cost.synthesised.error):
        failed_calibrations.append("replay cost")
    return 1 if full.failures or failed_calibrations else 0


if __name__ == "__main__":
    raise SystemExit(main())
