"""Does a process carry its own offset? One setting in K processes, measured window after window.

    python -m benchmarks process-offset                                  # built-in, no quota
    python -m benchmarks process-offset --workload mobilenet_v2 --quota 1

Why it is asked: every trial of a calibration is a fresh process, and on a real network half of
each trial is the model's load (docs/benchmark.md, "Where the 300 s go"). Keeping one process per
raced setting and measuring it window after window would halve a race round, but the paired test
(``advisor.calibrate.statistics``) then sees each setting through one process for every round. If
a process is slower or faster than another of the same setting for reasons of its own (where its
threads and pages landed), that offset is the same in every round, pairing cannot cancel it, and
two equal settings look different round after round: a false change the test's level does not
bound. With a fresh process per window the offset is drawn anew each time and is window noise.

The design: K processes of one setting (the benchmark's own harness child, as the judge's arms),
M rounds, every process measured once per round in a shuffled order, so the machine's drift is
shared within a round. A two-way analysis of the log p99 (process x round, one window per cell)
splits the process effect from the round effect; its F is tested by permuting the processes'
labels within each round (no distribution assumed), and the per-process offset's spread is the
usual estimate ``sqrt((MS_process - MS_residual) / M)``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import statistics
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from advisor.calibrate.percentile import percentile
from advisor.models import ThreadSetting
from benchmarks import REPO, cgroups, machine
from benchmarks.advice_quality import build_shape
from benchmarks.pool import Arm, Pool
from benchmarks.shapes import SHAPES

RUNS = REPO / "benchmarks" / "runs" / "process-offset"


@dataclass(frozen=True)
class Anova:
    """The process x round analysis of one figure's logs (rows: processes, columns: rounds)."""

    processes: int
    rounds: int
    #: the spread left once process and round are taken out (log units: ~ a CV)
    residual_sd: float
    #: the per-process offset's spread, estimated (0 when the processes differ no more than noise)
    offset_sd: float
    f: float
    #: the share of within-round permutations of the process labels with an F at least this big
    p: float


def anova(logs: Sequence[Sequence[float]], permutations: int = 2000, seed: int = 0) -> Anova:
    """Two-way analysis without interaction of ``logs[process][round]``; at least 2 x 2."""
    k, m = len(logs), len(logs[0])
    if k < 2 or m < 2 or any(len(row) != m for row in logs):
        raise ValueError("need at least 2 processes x 2 rounds, every process in every round")
    observed, residual, between = _f(logs)
    rng = random.Random(seed)
    columns = [[row[j] for row in logs] for j in range(m)]
    at_least = 0
    for _ in range(permutations):
        for column in columns:
            rng.shuffle(column)
        shuffled = [[columns[j][i] for j in range(m)] for i in range(k)]
        at_least += _f(shuffled)[0] >= observed - 1e-12
    return Anova(
        processes=k,
        rounds=m,
        residual_sd=math.sqrt(residual),
        offset_sd=math.sqrt(max(0.0, (between - residual) / m)),
        f=observed,
        p=(at_least + 1) / (permutations + 1),
    )


def _f(logs: Sequence[Sequence[float]]) -> tuple[float, float, float]:
    """F, the residual mean square and the processes' mean square."""
    k, m = len(logs), len(logs[0])
    rows = [statistics.fmean(row) for row in logs]
    cols = [statistics.fmean(logs[i][j] for i in range(k)) for j in range(m)]
    grand = statistics.fmean(rows)
    ss_res = sum((logs[i][j] - rows[i] - cols[j] + grand) ** 2 for i in range(k) for j in range(m))
    ms_res = ss_res / ((k - 1) * (m - 1))
    ms_proc = m * sum((r - grand) ** 2 for r in rows) / (k - 1)
    return (ms_proc / ms_res if ms_res > 0 else math.inf), ms_res, ms_proc


def log(line: str) -> None:
    print(f"[process-offset] {line}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _subject(workload: str) -> Iterator[list[str]]:
    if workload == "builtin":
        yield ["--builtin"]
        return
    with tempfile.TemporaryDirectory(prefix="tfta-offset-") as scratch:
        yield ["--model", str(build_shape(workload, Path(scratch)))]


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The table of windows: p99 and p50 per process and round."""
    base = ThreadSetting.from_label("TF default" if args.setting == "default" else args.setting)
    arms = [Arm(base, number) for number in range(1, args.processes + 1)]
    p99: list[list[float]] = [[] for _ in arms]
    p50: list[list[float]] = [[] for _ in arms]
    requests: list[int] = []
    rng = random.Random(args.seed)
    with (
        _subject(args.workload) as subject,
        tempfile.TemporaryDirectory(prefix="tfta-offset-logs-") as logs,
        cgroups.maybe_quota(args.quota) as group,
        Pool(subject, Path(logs)) as pool,
    ):
        pool.ensure(arms)
        if group is not None:
            pool.move_all(group)
        try:
            for number in range(args.rounds):
                order = list(range(len(arms)))
                rng.shuffle(order)
                for index in order:
                    answer = pool.measure(arms[index], args.window, args.warmup, 1)
                    ordered = sorted(answer["latencies_ms"])
                    p99[index].append(percentile(ordered, 99))
                    p50[index].append(percentile(ordered, 50))
                    requests.append(len(ordered))
                log(f"round {number + 1}/{args.rounds}: " + " ".join(f"{r[-1]:.1f}" for r in p99))
        finally:
            if group is not None:
                pool.move_all(cgroups.home_group())
    return {"p99_ms": p99, "p50_ms": p50, "requests": requests}


def summary(name: str, result: Anova) -> str:
    verdict = "a process offset beyond noise" if result.p < 0.05 else "no offset beyond noise"
    return (
        f"{name}: {result.processes} processes x {result.rounds} rounds, residual CV "
        f"{result.residual_sd:.1%}, per-process offset sd {result.offset_sd:.1%} "
        f"(two kept processes of one setting ~{math.sqrt(2) * result.offset_sd:.1%} apart), "
        f"F {result.f:.2f}, permutation p {result.p:.3f}: {verdict}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks process-offset", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--workload", default="builtin", choices=["builtin", *SHAPES])
    parser.add_argument("--quota", type=float, default=None, help="CPUs (default: no quota)")
    parser.add_argument("--setting", default="1/1", help="intra/inter, or default (1/1)")
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--window", type=float, default=3.0, help="s (the race window's cap)")
    parser.add_argument("--warmup", type=float, default=0.3, help="s before each window")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="the run's JSON (default: benchmarks/runs/...)")
    args = parser.parse_args(argv)
    if args.processes < 2 or args.rounds < 2:
        parser.error("--processes and --rounds must be at least 2")
    if args.quota is not None and (problem := cgroups.cgroup_unavailable()):
        parser.error(f"--quota needs a real cgroup: {problem}")
    load_start = os.getloadavg()
    host = machine.describe()
    log(f"load average at start: {load_start[0]:.2f}; {host.cpu_model}, {host.logical_cpus} CPUs")
    table = measure(args)
    load_end = os.getloadavg()
    log(f"load average at end: {load_end[0]:.2f}")
    figures = {
        key: anova([[math.log(v) for v in row] for row in table[key]])
        for key in ("p99_ms", "p50_ms")
    }
    for key, result in figures.items():
        print(summary(key.removesuffix("_ms"), result))
    print(f"requests per window: {min(table['requests'])}-{max(table['requests'])}")
    started = datetime.now(timezone.utc)
    quota = "noquota" if args.quota is None else f"{args.quota:g}cpu"
    out = args.out or RUNS / f"{args.workload}-{quota}-{started:%Y-%m-%d-%H%M}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "command": ["python", "-m", "benchmarks", "process-offset", *(argv or sys.argv[1:])],
        "host": host.model_dump(mode="json"),
        "load": [load_start[0], load_end[0]],
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "windows": table,
        "anova": {key: asdict(result) for key, result in figures.items()},
    }
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    log(f"wrote {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
