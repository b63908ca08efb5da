"""How good is the advice, and what does it cost? Defaults vs the static rule vs the advisor vs
the exhaustive grid, under real cgroup v1 quotas, measured by the benchmark's own harness.

    python -m benchmarks quality --quick --json out.json   # < 10 min on a 2-core box
    python -m benchmarks quality --smoke                   # seconds: checks the plumbing
    python -m benchmarks quality --json full.json          # every scenario (about an hour)

Per workload, one measuring child per setting is started once (benchmarks/pool.py). Per quota,
a fresh cgroup is made; the real ``tf-thread-advisor calibrate`` runs inside it with the default
budget (timed, its process tree's RSS polled); then every child moves into the group and the
settings are measured in seeded, reshuffled rounds so drift hits all alike. Needs root for the
quotas; without it only the no-quota scenarios run, and the report says so. How to read the
output: docs/benchmark.md.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from advisor.models import DEFAULT_BUDGET_S
from advisor.recommend import configmap_yaml
from benchmarks import REPO, arms, cgroups, machine, plan, report
from benchmarks.calibrate_run import CalibrateRun, run_calibrate
from benchmarks.plan import Effort, Plan, Scenario
from benchmarks.pool import CHILD, DEFAULT, Arm, Pool

BUILD_TIMEOUT_S = 300.0


def log(line: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


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


def measure_rounds(
    pool: Pool,
    settings: list[Arm],
    *,
    effort: Effort,
    concurrency: int,
    group: cgroups.RealCgroup | None,
    seed: int,
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, float]]:
    """Every setting once per round, in a fresh seeded order each round; returns raw samples per
    setting key and the wall seconds spent measuring each key."""
    samples: dict[str, list[dict[str, Any]]] = {s.key: [] for s in settings}
    spent: dict[str, float] = dict.fromkeys(samples, 0.0)
    by_key = {s.key: s for s in settings}
    for number, order in enumerate(plan.round_orders(list(by_key), effort.rounds, seed)):
        for key in order:
            before = group.cpu_stat() if group is not None else {}
            began = time.monotonic()
            sample = pool.measure(by_key[key], effort.window_s, effort.warmup_s, concurrency)
            spent[key] += time.monotonic() - began
            if group is not None:
                after = group.cpu_stat()
                sample["nr_throttled"] = after["nr_throttled"] - before["nr_throttled"]
            samples[key].append(sample)
        log(f"  round {number + 1}/{effort.rounds} done ({len(order)} settings)")
    return samples, spent


def first_look(
    stats: dict[str, dict[str, Any]],
    grid_keys: list[str],
    objective: str,
    advice: tuple[int, int] | None,
) -> dict[str, Any]:
    """The grid's best and adv/best from the first rounds alone, kept beside the final figures
    so the report shows what the second look changed.

    Also the held-out figure, given only the second look's rounds (the settings they measured):
    there, neither the best nor the advice's figure comes from the rounds that picked the
    contenders, so the best is not the luckiest of many noisy figures (the winner's curse that
    pooling every round keeps in part)."""
    grid_keys = [k for k in grid_keys if k in stats]
    best_key, best = report.best_of(stats, grid_keys, objective)
    key = None if advice is None else Arm.of(*advice).key
    value = None if key not in stats else report.objective_value(stats[key], objective)
    return {
        "grid_best": {"setting": best_key, "value": best},
        "advice_vs_grid_best": None if value is None else round(value / best, 3),
        "advice_value": value,
        "rounds": stats[best_key]["rounds"],
    }


def refine(
    pool: Pool,
    settings: list[Arm],
    samples: dict[str, list[dict[str, Any]]],
    contenders: list[list[str]],
    *,
    effort: Effort,
    concurrency: int,
    group: cgroups.RealCgroup | None,
    seed: int,
    held_out: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The judge's second look: ``effort.refine_rounds`` more interleaved rounds of the
    contenders (the advice and the top grid settings of every scenario measured here), added to
    their samples in place. Every other setting keeps its first rounds: it was already further
    from the best than the contenders, and its figure cannot decide a near-best verdict.
    ``held_out`` receives the new rounds' figures alone, per setting."""
    held_out = {} if held_out is None else held_out
    keys = list(dict.fromkeys(k for of_scenario in contenders for k in of_scenario))
    if effort.refine_rounds <= 0 or not keys:
        return {"rounds": 0, "settings": [], "measure_s": 0.0}
    by_key = {s.key: s for s in settings}
    log(f"second look: {len(keys)} settings ({', '.join(keys)}), {effort.refine_rounds} rounds")
    more, spent = measure_rounds(
        pool,
        [by_key[k] for k in keys],
        effort=dataclasses.replace(effort, rounds=effort.refine_rounds),
        concurrency=concurrency,
        group=group,
        seed=seed,
    )
    held_out.update({key: report.pool_rounds(rounds) for key, rounds in more.items()})
    for key, rounds in more.items():
        samples[key].extend(rounds)
    return {
        "rounds": effort.refine_rounds,
        "settings": keys,
        "measure_s": round(sum(spent.values()), 2),
    }


def scenario_figures(
    scenario: Scenario,
    stats: dict[str, dict[str, Any]],
    *,
    rule: Arm,
    run: CalibrateRun,
    grid_keys: list[str],
    grid_time: dict[str, float],
    spawn_run: CalibrateRun | None = None,
    short_run: CalibrateRun | None = None,
    repeat_run: CalibrateRun | None = None,
    the_arms: arms.Arms | None = None,
    first_look: dict[str, Any] | None = None,
    second_look: dict[str, Any] | None = None,
    held_out: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One scenario's row: values, ratios (advice / other, in objective units), targets."""
    objective = scenario.objective
    value = report.objective_value
    default = value(stats[DEFAULT.key], objective)
    best_key, best = report.best_of(stats, grid_keys, objective)
    advice = run.advice
    advice_entry = None
    advice_value = None
    if advice is not None:
        key = Arm.of(*advice).key
        advice_value = value(stats[key], objective)
        advice_entry = {"setting": key, "value": advice_value}
    wall = run.wall_s if run.exit_code == 0 else None
    data: dict[str, Any] = {
        "scenario": scenario.name,
        "workload": scenario.workload,
        "quota_cpus": scenario.quota_cpus,
        "objective": objective,
        "concurrency": scenario.concurrency,
        "batch_size": scenario.batch_size,
        "direction": "lower is better" if report.lower_is_better(objective) else "higher is better",
        "default": {"setting": DEFAULT.key, "value": default},
        "rule": {"setting": rule.key, "value": value(stats[rule.key], objective)},
        "advice": advice_entry,
        "grid_best": {"setting": best_key, "value": best},
        "ratios": {
            "advice_vs_default": None if advice_value is None else round(advice_value / default, 3),
            "advice_vs_grid_best": None if advice_value is None else round(advice_value / best, 3),
        },
        "calibrate": {
            "argv": run.argv[1:],
            "exit_code": run.exit_code,
            "error": run.error,
            "wall_s": round(run.wall_s, 2),
            "reported_elapsed_s": None if run.result is None else run.result.get("elapsed_s"),
            "trials": run.trial_count,
            "ok_trials": run.ok_trials,
            "trial_mode": None if run.result is None else run.result.get("trial_mode"),
            "peak_tree_rss_mib": round(run.peak_tree_rss_mib, 1),
            "max_process_rss_mib": None
            if run.max_process_rss_mib is None
            else round(run.max_process_rss_mib, 1),
            "its_own_baseline": None if run.result is None else run.result.get("baseline"),
            "its_own_chosen": None if run.result is None else run.result.get("chosen"),
            "windows": _windows(run),
        },
        "grid_time": {k: round(v, 2) for k, v in grid_time.items()},
        "calibrate_vs_grid": None if wall is None else round(wall / grid_time["total_s"], 3),
        "settings": stats,
        "spawn": None if spawn_run is None else _rerun_figures(spawn_run, stats, objective, best),
        "short": None if short_run is None else _rerun_figures(short_run, stats, objective, best),
        "repeat": None
        if repeat_run is None
        else {
            **_rerun_figures(repeat_run, stats, objective, best),
            "incumbent_kept": repeat_run.kept_incumbent,
            "same_data": repeat_run.data is not None and repeat_run.data == run.data,
        },
        "first_look": first_look,
        "second_look": second_look,
        "held_out": held_out,
        "shared_windows": {} if the_arms is None else dict(the_arms.shared),
        "aa": _aa(stats, the_arms, advice_entry, objective),
    }
    data["targets"] = report.targets(
        data,
        advice=advice_value,
        default=default,
        best=best,
        calibrate_wall_s=wall,
        grid_s=grid_time["total_s"],
        peak_rss_mib=run.peak_tree_rss_mib if run.exit_code == 0 else None,
        ok_trials_per_60s=report.per_60s(run.ok_trials, wall),
        short_advice=None if short_run is None else data["short"]["advice_value"],
        short_ran=short_run is not None,
    )
    return data


def _aa(
    stats: dict[str, dict[str, Any]],
    the_arms: arms.Arms | None,
    advice: dict[str, Any] | None,
    objective: str,
) -> dict[str, Any] | None:
    """The advice measured as two arms (benchmarks/arms.py), beside its near-best verdict."""
    pair = None if the_arms is None or advice is None else the_arms.pair(advice["setting"])
    if pair is None or not set(pair) <= set(stats):
        return None
    figures = arms.aa_figures(stats, pair, objective)
    noise = figures["noise"]
    return {
        "setting": advice["setting"],
        **figures,
        "beyond_tolerance": None if noise is None else noise > report.GRID_BEST_TOLERANCE,
    }


def _windows(run: CalibrateRun) -> list[list[Any]] | None:
    """Every trial of the sweep as [intra, inter, round, status, p99 ms, req/s] (the baseline's
    threads as null): enough to replay the choice offline with another rule."""
    if run.result is None:
        return None
    return [
        [
            t.get("intra_op_threads"),
            t.get("inter_op_threads"),
            t.get("round"),
            t.get("status"),
            t.get("p99_ms"),
            t.get("throughput_rps"),
        ]
        for t in run.result.get("trials", [])
    ]


def kill_after(budget_s: float | None) -> float:
    """How long a calibrate run with ``budget_s`` (None: the advisor's default) may take before
    the benchmark kills it: twice the budget and two minutes, room for a loaded machine."""
    return 2 * (budget_s or DEFAULT_BUDGET_S) + 120


def _rerun_figures(
    run: CalibrateRun, stats: dict[str, dict[str, Any]], objective: str, best: float
) -> dict[str, Any]:
    """The same calibration run again another way (every trial spawned: what the fork server
    saves; a shorter budget: what a short sweep is worth), judged by the same grid."""
    value = (
        None
        if run.advice is None
        else report.objective_value(stats[Arm.of(*run.advice).key], objective)
    )
    return {
        "exit_code": run.exit_code,
        "error": run.error,
        "wall_s": round(run.wall_s, 2),
        "trials": run.trial_count,
        "ok_trials": run.ok_trials,
        "advice": None if run.advice is None else Arm.of(*run.advice).key,
        "advice_value": value,
        "advice_vs_grid_best": None if value is None else round(value / best, 3),
        "peak_tree_rss_mib": round(run.peak_tree_rss_mib, 1),
        "budget_s": None if run.result is None else run.result.get("budget_s"),
    }


def run_quota(
    the_plan: Plan,
    scenarios: list[Scenario],
    *,
    pool: Pool,
    model_path: Path | None,
    can_quota: bool,
    info: dict[str, Any],
    seed: int,
) -> list[dict[str, Any]]:
    """All scenarios of one workload and one quota: calibrate each, then measure per concurrency."""
    effort = the_plan.effort
    quota = scenarios[0].quota_cpus
    grid_settings = [Arm.of(i, j) for i, j in plan.grid(info["affinity"], effort.grid_limit)]
    rule = Arm.of(*plan.static_rule(info["affinity"], quota, info["sockets"]))
    results: list[dict[str, Any]] = []
    with maybe_group(quota, can_quota) as group:
        runs: dict[Scenario, CalibrateRun] = {}
        spawned: dict[Scenario, CalibrateRun] = {}
        shorts: dict[Scenario, CalibrateRun] = {}
        repeats: dict[Scenario, CalibrateRun] = {}
        for scenario in scenarios:
            log(f"calibrate {scenario.name} (in the scenario's cgroup)")
            budget = effort.calibrate_budget_s
            timeout = kill_after(budget)
            runs[scenario] = run_calibrate(scenario, model_path, group, budget, timeout)
            run = runs[scenario]
            log(
                f"  -> advice {run.advice}, {run.wall_s:.1f} s, {run.trial_count} trials, "
                f"peak RSS {run.peak_tree_rss_mib:.0f} MiB{'; ' + run.error if run.error else ''}"
            )
            if effort.repeat_with_incumbent:
                repeated = repeat_with_incumbent(
                    scenario,
                    run,
                    model_path=model_path,
                    group=group,
                    budget=budget,
                    timeout=timeout,
                )
                if repeated is not None:
                    repeats[scenario] = repeated
            if effort.compare_spawn == "all" or (
                effort.compare_spawn == "first" and scenario == scenarios[0]
            ):
                log(f"calibrate {scenario.name} again, every trial spawned")
                spawned[scenario] = run_calibrate(
                    scenario, model_path, group, budget, timeout, trial_mode="spawn"
                )
                again = spawned[scenario]
                log(f"  -> advice {again.advice}, {again.wall_s:.1f} s, {again.ok_trials} ok")
            short_budget = effort.short_budget_for(scenario)
            if short_budget:
                log(f"calibrate {scenario.name} again with --budget {short_budget:g}")
                shorts[scenario] = run_calibrate(
                    scenario, model_path, group, short_budget, kill_after(short_budget)
                )
                brief = shorts[scenario]
                log(f"  -> advice {brief.advice}, {brief.wall_s:.1f} s, {brief.ok_trials} ok")
        every_run = [*runs.values(), *spawned.values(), *shorts.values(), *repeats.values()]
        advice = [Arm.of(*r.advice) for r in every_run if r.advice is not None]
        the_arms = arms.plan_arms(
            [DEFAULT, rule, *grid_settings, *advice],
            info["affinity"],
            [Arm.of(*r.advice) for r in runs.values() if r.advice is not None],
        )
        settings = the_arms.measured
        missing = [x for x in settings if x.key not in pool.children]
        if missing:
            log(f"start {len(missing)} measuring processes (two at a time, no quota)")
        pool.ensure(settings)
        try:
            if group is not None:
                pool.move_all(group)
            for concurrency in dict.fromkeys(s.concurrency for s in scenarios):
                log(f"measure {len(settings)} settings, concurrency {concurrency}")
                samples, spent = measure_rounds(
                    pool,
                    settings,
                    effort=effort,
                    concurrency=concurrency,
                    group=group,
                    seed=seed + len(results),
                )
                stats = {key: report.pool_rounds(rounds) for key, rounds in samples.items()}
                the_arms.share(stats)
                grid_keys = [s.key for s in grid_settings]
                here = [s for s in scenarios if s.concurrency == concurrency]
                advice_of = {
                    s: [
                        Arm.of(*r.advice).key
                        for r in (runs[s], spawned.get(s), shorts.get(s))
                        if r is not None and r.advice is not None
                    ]
                    for s in here
                }
                first = {s: first_look(stats, grid_keys, s.objective, runs[s].advice) for s in here}
                held: dict[str, dict[str, Any]] = {}
                second = refine(
                    pool,
                    settings,
                    samples,
                    [
                        the_arms.contenders(
                            report.contenders(
                                stats, grid_keys, s.objective, effort.refine_top, advice_of[s]
                            )
                        )
                        for s in here
                    ],
                    effort=effort,
                    concurrency=concurrency,
                    group=group,
                    seed=seed + len(results) + 500,
                    held_out=held,
                )
                stats.update({k: report.pool_rounds(samples[k]) for k in second["settings"]})
                the_arms.share(stats)
                the_arms.share(held)
                start_s = sum(pool.children[the_arms.resolve(k)].ready_s or 0.0 for k in grid_keys)
                measure_s = sum(spent[the_arms.resolve(k)] for k in grid_keys)
                grid_time = {
                    "start_s": start_s,
                    "measure_s": measure_s,
                    "total_s": start_s + measure_s,
                }
                for scenario in here:
                    results.append(
                        scenario_figures(
                            scenario,
                            stats,
                            rule=rule,
                            run=runs[scenario],
                            grid_keys=grid_keys,
                            grid_time=grid_time,
                            spawn_run=spawned.get(scenario),
                            short_run=shorts.get(scenario),
                            repeat_run=repeats.get(scenario),
                            the_arms=the_arms,
                            first_look=first[scenario],
                            second_look=second,
                            held_out=first_look(
                                held, grid_keys, scenario.objective, runs[scenario].advice
                            )
                            if held
                            else None,
                        )
                    )
        finally:
            if group is not None:  # out before the group goes: leaving it kills what is inside
                home = cgroups.home_group()
                for child in pool.children.values():
                    with contextlib.suppress(OSError):
                        cgroups.move(home, child.proc.pid)
    return results


def repeat_with_incumbent(
    scenario: Scenario,
    first: CalibrateRun,
    *,
    model_path: Path | None,
    group: cgroups.RealCgroup | None,
    budget: float | None,
    timeout: float,
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
            scenario, model_path, group, budget, timeout, incumbent=Path(handle.name)
        )
    same = again.data == first.data
    log(
        f"  -> advice {again.advice}, {again.wall_s:.1f} s, incumbent "
        f"{'kept' if again.kept_incumbent else 'replaced'}; data {'same' if same else 'changed'}"
    )
    return again


def run_plan(the_plan: Plan, can_quota: bool, info: dict[str, Any], seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {"scenarios": [], "failures": [], "children": {}}
    with tempfile.TemporaryDirectory(prefix="tfta-bench-") as tmp_name:
        tmp = Path(tmp_name)
        for workload in dict.fromkeys(s.workload for s in the_plan.scenarios):
            of_workload = [s for s in the_plan.scenarios if s.workload == workload]
            try:
                model_path = None if workload == "builtin" else build_shape(workload, tmp)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                out["failures"].append(f"{workload}: {exc}")
                continue
            args = ["--builtin"] if model_path is None else ["--model", str(model_path)]
            with Pool(args, tmp) as pool:
                log(f"workload {workload}")
                for quota in dict.fromkeys(s.quota_cpus for s in of_workload):
                    scenarios = [s for s in of_workload if s.quota_cpus == quota]
                    try:
                        out["scenarios"] += run_quota(
                            the_plan,
                            scenarios,
                            pool=pool,
                            model_path=model_path,
                            can_quota=can_quota,
                            info=info,
                            seed=seed,
                        )
                    except (RuntimeError, OSError, KeyError, ValueError) as exc:
                        names = ", ".join(s.name for s in scenarios)
                        out["failures"].append(f"{names}: {type(exc).__name__}: {exc}")
                        log(f"FAILED {names}: {exc}")
                out["children"][workload] = {
                    k: {"ready_s": round(c.ready_s or 0.0, 2), **c.info}
                    for k, c in pool.children.items()
                }
    return out


def _terminate(signum: int, _frame: object) -> None:
    # SIGTERM unwinds like Ctrl-C, so every ``finally`` (children, cgroups) runs.
    raise KeyboardInterrupt(signal.Signals(signum).name)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks quality", description=(__doc__ or "").splitlines()[0]
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="reduced set, under 10 min here")
    mode.add_argument("--smoke", action="store_true", help="one tiny scenario: plumbing only")
    parser.add_argument("--json", type=Path, help="also write the full report as JSON here")
    parser.add_argument("--seed", type=int, default=6, help="seed of the round orders")
    parser.add_argument("--no-scaling", action="store_true", help="skip the simulated scaling")
    parser.add_argument(
        "--budget",
        type=float,
        metavar="S",
        help="calibrate with --budget S instead of the advisor's default (to find the smallest "
        "budget that meets the targets)",
    )
    parser.add_argument(
        "--short-everywhere",
        action="store_true",
        help="calibrate every scenario a second time with the short budget, not only the no-quota"
        " latency ones: the default budget against a short one, side by side",
    )
    parser.add_argument(
        "--write-docs",
        type=Path,
        metavar="MD",
        help="also put the tables into MD's LATEST section (e.g. docs/benchmark.md)",
    )
    return parser.parse_args(argv)


def plan_of(args: argparse.Namespace, mode: str, why_not: str | None) -> Plan:
    """The mode's plan, with ``--budget`` in place of the advisor's default when given, and the
    short sweep on every scenario with ``--short-everywhere``."""
    the_plan = plan.make_plan(mode, why_not is None, why_not)
    effort = the_plan.effort
    if args.budget is not None:
        effort = dataclasses.replace(effort, calibrate_budget_s=args.budget)
    if args.short_everywhere:
        effort = dataclasses.replace(effort, short_everywhere=True)
    return dataclasses.replace(the_plan, effort=effort)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    signal.signal(signal.SIGTERM, _terminate)
    why_not = cgroups.cgroup_unavailable()
    the_plan = plan_of(args, mode, why_not)
    info = {
        "affinity": len(os.sched_getaffinity(0)),
        "logical_cpus": os.cpu_count(),
        "sockets": sockets(),
        "loadavg_start": os.getloadavg(),
        "machine": machine.describe(),
    }
    started = time.monotonic()
    full: dict[str, Any] = {
        "mode": mode,
        "command": " ".join(
            ["python -m benchmarks quality", *(sys.argv[1:] if argv is None else argv)]
        ),
        "started_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "host": info,
        "effort": vars(the_plan.effort),
        "notes": list(the_plan.notes),
        "targets": report.TARGETS,
    }
    for note in the_plan.notes:
        log(note)
    try:
        full.update(run_plan(the_plan, why_not is None, info, args.seed))
        if not args.no_scaling:
            from benchmarks import scaling

            log("simulated scaling")
            full["scaling"] = scaling.simulate(the_plan.effort.scaling_sizes)
    except KeyboardInterrupt:
        log("interrupted: children stopped, cgroups removed")
        return 130
    info["loadavg_end"] = os.getloadavg()
    full["wall_s"] = round(time.monotonic() - started, 1)
    text = report.render(full)
    print(text)
    print(
        f"\n(total wall {full['wall_s']:.0f} s; load average {info['loadavg_start'][0]:.2f} at "
        f"start, {info['loadavg_end'][0]:.2f} at end)"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(full, indent=2, default=str) + "\n")
    if args.write_docs is not None:
        doc = args.write_docs.read_text()
        args.write_docs.write_text(report.replace_latest(doc, report.latest_block(full, text)))
    failed_calibrations = [s for s in full["scenarios"] if s["calibrate"]["error"]]
    return 1 if full["failures"] or failed_calibrations else 0


if __name__ == "__main__":
    raise SystemExit(main())
