"""Is the advice boring when nothing changed? N real ``run``s in a row against one ConfigMap.

Each run is the real CLI (real TensorFlow trials, optionally under a real CFS quota) writing to
the strict fake API server of testkit/fakeapi over loopback, exactly as the scheduled Job
writes to a cluster. After each run the stored ``data`` and content hash are read back: a change of
``data`` is a roll-out of every consumer (Reloader, ``--restart``), so the figure that matters
is how many times it changed after the first write.

``--seed-advice 4/2`` first stores a valid advice of ours for this very node (probed inside the
same quota), to see whether the first run replaces it and what the log says about it.

    python -m benchmarks stability --runs 5 --budget 30                  # ~3 min
    python -m benchmarks stability --runs 1 --quota 1 --seed-advice 4/2  # as root
    python -m benchmarks stability --runs 5 --quota 1 --neighbour 0.5    # beside a bursty neighbour

``--neighbour 0.5`` runs a process beside the runs (outside their quota, as another pod on the
node) that burns a CPU in bursts half of the time: busy for a random 0.2-2 s, then idle as long.

Then the quality benchmark's judge checks every change: the stored advice's old and new thread
settings (a ConfigMap holding none: TF's default), and the new one a second time (its A/A arm),
are measured by the long-lived children of benchmarks/pool.py in interleaved, reshuffled rounds
(benchmarks/measure.py, the full run's window), inside the same quota with the neighbour still
running, on what ``run`` measures when given nothing (the built-in network, the option table's
default objective and concurrency). A change is ``confirmed`` when the new setting is no worse than
the old beyond the judge's noise, ``refuted`` when it is (benchmarks/figures.py's
``change_verdict``). What counts as a change is what the count above counts: without
``--seed-advice`` the first write (onto an empty ConfigMap) is not one, so it is not judged;
``--judge-only default 1/2`` judges a pair without any run.

    python -m benchmarks stability --runs 5 --quota 1 --neighbour 0.5 --judge-rounds 8
    python -m benchmarks stability --judge-only default 1/2 --neighbour 0.5   # no runs
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor import __version__
from advisor.errors import AdvisorError
from advisor.keys import HASH_ANNOTATION
from advisor.models import (
    TENSORFLOW,
    CalibrationResult,
    Measurement,
    NodeProfile,
    SubjectInfo,
    ThreadSetting,
)
from advisor.models.option_table import OPTION
from advisor.pipeline.drift import installed_tf_version
from advisor.recommend import build_recommendation, parse_configmap, render_configmap
from benchmarks import REPO, arms, cgroups, figures, plan
from benchmarks.measure import measure_rounds
from benchmarks.pool import Arm, HarnessError, Pool
from benchmarks.results import Pooled
from testkit.fakeapi.server import FakeApiServer

NAME, NS = "tf-thread-advice", "ml"


def log(line: str) -> None:
    print(f"[stability] {line}", file=sys.stderr, flush=True)


#: the neighbour: burns a CPU for a random 0.2-2 s, then sleeps for as long as its share says
NEIGHBOUR = """
import random, sys, time
share = float(sys.argv[1])
rng = random.Random(0)
while True:
    busy = rng.uniform(0.2, 2.0)
    end = time.monotonic() + busy
    while time.monotonic() < end:
        pass
    time.sleep(busy * (1 - share) / share)
"""


@contextlib.contextmanager
def neighbour(share: float | None) -> Iterator[None]:
    """A process burning ``share`` of a CPU in bursts while the block runs (None: none)."""
    if not share:
        yield
        return
    proc = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, str(share)])
    try:
        yield
    finally:
        proc.kill()
        proc.wait()


def advisor_argv(*argv: str) -> list[str]:
    return [sys.executable, "-m", "advisor", *argv]


def probed_node(group: cgroups.RealCgroup | None) -> NodeProfile:
    """This node as a run inside ``group`` sees it (the quota included)."""
    argv = advisor_argv("probe", "--format", "json")
    command = group.command(argv) if group is not None else argv
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=True)
    return NodeProfile.model_validate_json(done.stdout)


def seed(api: FakeApiServer, setting: str, node: NodeProfile) -> None:
    """Store a valid advice of ours for this node, measured as ``run`` with no model would be."""
    intra, inter = (int(x) for x in setting.split("/"))
    result = CalibrationResult(
        setting=ThreadSetting(intra, inter),
        objective="latency",
        baseline=Measurement(p50_ms=10.0, p99_ms=20.0, throughput_rps=100.0),
        chosen=Measurement(p50_ms=10.0, p99_ms=20.0, throughput_rps=100.0),
        trials=[],
        subject=SubjectInfo(model_format="builtin"),
        budget_s=30.0,
        elapsed_s=30.0,
        tf_version=installed_tf_version(),
        node=node,
    )
    rec = build_recommendation(result, advisor_version=__version__)
    api.put(render_configmap(rec, NAME, NS), manager="tf-thread-advisor")


def run_once(
    api: FakeApiServer, group: cgroups.RealCgroup | None, budget: float, spend: bool = False
) -> tuple[int, list[str], float]:
    argv = advisor_argv(
        "run",
        *("--budget", f"{budget:g}", "--configmap", NAME, "--namespace", NS),
        *("--kubeconfig", str(api.kubeconfig)),
        *(("--spend-budget",) if spend else ()),
    )
    command = group.command(argv) if group is not None else argv
    started = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, check=False)
    return done.returncode, done.stderr.splitlines(), time.monotonic() - started


def calibration_took(stored: dict[str, Any]) -> tuple[float | None, str | None]:
    """What the stored advice's calibration took and why it ended, from its provenance (None,
    None: nothing stored, or not ours)."""
    if not stored:
        return None, None
    try:
        prov = parse_configmap(stored).recommendation.provenance
    except AdvisorError:
        return None, None
    return prov.elapsed_s, prov.stopped


#: what ``run`` measures when given nothing, as the runs call it: the built-in network, and the
#: option table's defaults for the objective and the requests in flight
RUN_WORKLOAD = ("--builtin",)
RUN_OBJECTIVE: str = OPTION["objective"].default
RUN_CONCURRENCY: int = OPTION["concurrency"].default
#: the judge's window and warmup are the full quality run's; only its rounds are ``--judge-rounds``
JUDGE_EFFORT = plan.EFFORT["full"]
JUDGE_SEED = 6


@dataclass(frozen=True)
class Change:
    """One change of the stored advice's threads: the run that made it (0: none, a pair given
    with ``--judge-only``), the setting in force before and the one written."""

    run: int
    old: ThreadSetting
    new: ThreadSetting


def stored_setting(data: Mapping[str, str] | None) -> ThreadSetting:
    """The threads a consumer runs with under ``data``: TF's default where it sets none (an empty
    or missing ConfigMap)."""
    if not data or not {TENSORFLOW.intra_op, TENSORFLOW.inter_op} & set(data):
        return ThreadSetting.TF_DEFAULT
    return TENSORFLOW.env_setting(data)


def changes_of(runs: Sequence[Mapping[str, Any]], before: Mapping[str, str] | None) -> list[Change]:
    """Every run whose ``data`` changed, as the count counts them, with the data in force before
    it (``before``: what was stored before the first run)."""
    out = []
    for run in runs:
        if run["data_changed"]:
            out.append(Change(run["run"], stored_setting(before), stored_setting(run["data"])))
        before = run["data"]
    return out


def parse_setting(text: str) -> ThreadSetting:
    """``default`` (TF's default) or ``I/J``, for ``--judge-only``."""
    try:
        return ThreadSetting.from_label("TF default" if text == "default" else text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: expected default or I/J") from exc


def judge_plan(changes: Sequence[Change], affinity: int) -> arms.Arms:
    """Every old and new setting once (TF's default and its spelled-out twin one process, as in
    the quality benchmark), each new one with its second arm."""
    news = [Arm(c.new) for c in changes]
    return arms.plan_arms([*(Arm(c.old) for c in changes), *news], affinity, news)


def verdict_of(
    change: Change, stats: Mapping[str, Pooled], the_arms: arms.Arms, objective: str
) -> dict[str, Any]:
    """One change judged from the rounds' pooled figures: ratio new/old, the grid noise of the
    two, the new setting's A/A, and the verdict on the larger of the two noises."""
    old, new = Arm(change.old).key, Arm(change.new).key
    old_value = figures.objective_value(stats[old], objective)
    new_value = figures.objective_value(stats[new], objective)
    ratio = new_value / old_value
    grid = figures.grid_noise(stats[new], stats[old], objective)
    pair = the_arms.pair(new)
    aa = None if pair is None else arms.aa_figures(stats, pair, objective)
    noise = figures.change_noise(grid, None if aa is None else aa["noise"])
    verdict, how = figures.change_verdict(ratio, noise, objective)
    return {
        "run": change.run,
        "old": old,
        "new": new,
        "same_process": the_arms.resolve(old) == the_arms.resolve(new),
        "objective": objective,
        "old_value": old_value,
        "new_value": new_value,
        "ratio": round(ratio, 3),
        "grid_noise": None if grid is None else round(grid, 3),
        "aa": aa,
        "noise": None if noise is None else round(noise, 3),
        "verdict": verdict,
        "how": how,
    }


def judge(
    changes: Sequence[Change], group: cgroups.RealCgroup | None, rounds: int, log_dir: Path
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every change measured in one set of interleaved rounds, inside ``group`` (the runs' quota;
    the caller keeps the neighbour running): each change's verdict, and every arm's pooled
    figures."""
    if not changes:
        return [], {}
    the_arms = judge_plan(changes, len(os.sched_getaffinity(0)))
    settings = the_arms.measured
    effort = dataclasses.replace(JUDGE_EFFORT, rounds=rounds)
    keys = ", ".join(s.key for s in settings)
    log(f"judge: {len(settings)} arms ({keys}), {rounds} rounds of {effort.window_s:g} s")
    with Pool(list(RUN_WORKLOAD), log_dir) as pool:
        pool.ensure(settings)  # started outside the quota: start-up is not what is measured
        if group is not None:
            pool.move_all(group)
        samples, _ = measure_rounds(
            pool,
            settings,
            effort=effort,
            concurrency=RUN_CONCURRENCY,
            group=group,
            seed=JUDGE_SEED,
        )
    stats = {key: figures.pool_rounds(taken) for key, taken in samples.items()}
    the_arms.share(stats)
    judged = [verdict_of(c, stats, the_arms, RUN_OBJECTIVE) for c in changes]
    return judged, {key: value.dump() for key, value in stats.items()}


def judged_line(judged: Sequence[Mapping[str, Any]]) -> str:
    """The verdicts as the summary line gives them."""
    parts = []
    for j in judged:
        where = f"run {j['run']}: " if j["run"] else ""
        noise = "-" if j["noise"] is None else f"±{j['noise']:.0%}"
        parts.append(
            f"{where}{j['old']} -> {j['new']} new/old {j['ratio']:.2f} (noise {noise}, "
            f"{j['how']}): {j['verdict']}"
        )
    return "; ".join(parts)


def run_all(
    api: FakeApiServer, group: cgroups.RealCgroup | None, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """``args.runs`` runs in a row against the one ConfigMap, each as its record."""
    runs: list[dict[str, Any]] = []
    before = api.get(NS, NAME)
    for index in range(args.runs):
        code, lines, wall = run_once(api, group, args.budget, args.spend_budget)
        stored = api.get(NS, NAME) or {}
        took, stopped = calibration_took(stored)
        data = stored.get("data")
        changed = before is not None and data != before.get("data")
        messages = [line.split(" INFO ", 1)[1] for line in lines if " INFO " in line]
        story = [
            m
            for m in messages
            if m.startswith(
                ("advice: TF_", "advice: keep", "in force before", "against TF", "within noise")
            )
        ]
        runs.append(
            {
                "run": index + 1,
                "exit_code": code,
                "wall_s": round(wall, 1),
                "data": data,
                "content_hash": (stored.get("metadata", {}).get("annotations") or {}).get(
                    HASH_ANNOTATION
                ),
                "data_changed": changed,
                "elapsed_s": took,
                "stopped": stopped,
                "summary": story,
                "error": None if code == 0 else (lines[-1] if lines else "no output"),
            }
        )
        ended = "" if took is None else f" (calibration {took:.0f} s, {stopped or 'ended'})"
        log(
            f"run {index + 1}: exit {code}, {wall:.0f} s{ended}, data {data}"
            f"{' (CHANGED)' if changed else ''}"
        )
        for line in story:
            log(f"    {line}")
        before = stored
    return runs


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks stability", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--budget", type=float, default=30.0)
    parser.add_argument("--quota", type=float, default=None, help="CPUs (needs root, cgroup v1)")
    parser.add_argument("--seed-advice", metavar="I/J", help="store this advice first")
    parser.add_argument("--json", type=Path, help="also write the runs as JSON here")
    parser.add_argument(
        "--neighbour",
        type=float,
        metavar="SHARE",
        help="beside a process burning SHARE of a CPU in bursts (0.5: half of the time)",
    )
    parser.add_argument(
        "--spend-budget",
        action="store_true",
        help="run with --spend-budget: race until the budget is spent (before the stopping rule)",
    )
    parser.add_argument(
        "--judge-rounds",
        type=int,
        default=8,
        metavar="N",
        help="interleaved rounds the judge measures each change's settings in (0: no judge; "
        "default %(default)s)",
    )
    parser.add_argument(
        "--judge-only",
        nargs=2,
        type=parse_setting,
        metavar=("OLD", "NEW"),
        help="no runs: judge the change OLD -> NEW (default or I/J) under --quota and --neighbour",
    )
    args = parser.parse_args(argv)
    if args.judge_only and args.judge_rounds < 1:
        parser.error("--judge-only needs --judge-rounds of at least 1")
    return args


def summary(
    args: argparse.Namespace, runs: Sequence[Mapping[str, Any]], load: tuple[float, float]
) -> str:
    """The runs' line: how often ``data`` changed and what the calibrations took."""
    changes = (
        sum(r["data_changed"] for r in runs[1:])
        if not args.seed_advice
        else sum(r["data_changed"] for r in runs)
    )
    tooks = sorted(r["elapsed_s"] for r in runs if r["elapsed_s"] is not None)
    settled = sum(r["stopped"] == "settled" for r in runs)
    median = f"{tooks[len(tooks) // 2]:.0f} s" if tooks else "-"
    what = "after the first write" if not args.seed_advice else "counting the first run"
    return (
        f"{args.runs} runs, budget {args.budget:g} s, quota {args.quota or 'none'}"
        f"{f', neighbour {args.neighbour:g}' if args.neighbour else ''}: data "
        f"changed {changes} time(s) {what}; calibrations took {median} (median), {settled} of "
        f"{len(runs)} settled; load {load[0]:.2f} -> {load[1]:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    load_start = os.getloadavg()
    log(f"load average at start: {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}")
    runs: list[dict[str, Any]] = []
    judged: list[dict[str, Any]] = []
    arms_figures: dict[str, Any] = {}
    judge_error: str | None = None
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeApiServer(Path(tmp), configmap_name=NAME) as api,
        cgroups.maybe_quota(args.quota) as group,
        neighbour(args.neighbour),
    ):
        if args.judge_only:
            changes = [Change(0, *args.judge_only)]
        else:
            if args.seed_advice:
                seed(api, args.seed_advice, probed_node(group))
                log(f"stored {args.seed_advice} as the advice in force")
            first = (api.get(NS, NAME) or {}).get("data")
            runs = run_all(api, group, args)
            changes = changes_of(runs, first)
        if changes and args.judge_rounds > 0:
            try:
                judged, arms_figures = judge(changes, group, args.judge_rounds, Path(tmp))
            except (HarnessError, OSError) as exc:
                judge_error = f"{type(exc).__name__}: {exc}"
                log(f"judge FAILED: {judge_error}")
    load_end = os.getloadavg()
    log(f"load average at end: {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}")
    where = (
        f"quota {args.quota or 'none'}{f', neighbour {args.neighbour:g}' if args.neighbour else ''}"
    )
    if args.judge_only:
        line = f"judge only, {where}, {args.judge_rounds} rounds: "
    else:
        line = summary(args, runs, (load_start[0], load_end[0])) + "; judged: "
    if judge_error:
        line += f"FAILED ({judge_error})"
    elif judged:
        line += judged_line(judged)
    elif changes:
        line += "not judged (--judge-rounds 0)"
    else:
        line += "no change to judge"
    print(line)
    if args.json:
        judge_conditions = {
            "rounds": args.judge_rounds,
            "window_s": JUDGE_EFFORT.window_s,
            "warmup_s": JUDGE_EFFORT.warmup_s,
            "workload": "builtin",
            "objective": RUN_OBJECTIVE,
            "concurrency": RUN_CONCURRENCY,
            "quota": args.quota,
            "neighbour": args.neighbour,
        }
        args.json.write_text(
            json.dumps(
                {
                    "load_start": load_start,
                    "load_end": load_end,
                    "runs": runs,
                    "judge": judge_conditions,
                    "judged": judged,
                    "judge_error": judge_error,
                    "arms": arms_figures,
                },
                indent=1,
            )
        )
    ok = all(r["exit_code"] == 0 for r in runs) and judge_error is None
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
