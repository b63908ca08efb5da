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
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from advisor import __version__
from advisor.errors import AdvisorError
from advisor.keys import HASH_ANNOTATION
from advisor.models import (
    CalibrationResult,
    Measurement,
    NodeProfile,
    SubjectInfo,
    ThreadSetting,
)
from advisor.pipeline.drift import installed_tf_version
from advisor.recommend import build_recommendation, parse_configmap, render_configmap
from benchmarks import REPO, cgroups
from testkit.fakeapi.server import FakeApiServer

NAME, NS = "tf-thread-advice", "ml"


def log(line: str) -> None:
    print(f"[stability] {line}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def maybe_quota(quota: float | None) -> Iterator[cgroups.RealCgroup | None]:
    if quota is None:
        yield None
        return
    with cgroups.real_cgroup(quota) as group:
        yield group


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
        subject=SubjectInfo(kind="builtin"),
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


def main(argv: list[str] | None = None) -> int:
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
    args = parser.parse_args(argv)
    load_start = os.getloadavg()
    log(f"load average at start: {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}")
    runs: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeApiServer(Path(tmp), configmap_name=NAME) as api,
        maybe_quota(args.quota) as group,
        neighbour(args.neighbour),
    ):
        if args.seed_advice:
            seed(api, args.seed_advice, probed_node(group))
            log(f"stored {args.seed_advice} as the advice in force")
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
    load_end = os.getloadavg()
    changes = (
        sum(r["data_changed"] for r in runs[1:])
        if not args.seed_advice
        else sum(r["data_changed"] for r in runs)
    )
    log(f"load average at end: {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}")
    tooks = sorted(r["elapsed_s"] for r in runs if r["elapsed_s"] is not None)
    settled = sum(r["stopped"] == "settled" for r in runs)
    median = f"{tooks[len(tooks) // 2]:.0f} s" if tooks else "-"
    what = "after the first write" if not args.seed_advice else "counting the first run"
    print(
        f"{args.runs} runs, budget {args.budget:g} s, quota {args.quota or 'none'}"
        f"{f', neighbour {args.neighbour:g}' if args.neighbour else ''}: data "
        f"changed {changes} time(s) {what}; calibrations took {median} (median), {settled} of "
        f"{len(runs)} settled; load {load_start[0]:.2f} -> {load_end[0]:.2f}"
    )
    if args.json:
        args.json.write_text(
            json.dumps({"load_start": load_start, "load_end": load_end, "runs": runs}, indent=1)
        )
    return 0 if all(r["exit_code"] == 0 for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
