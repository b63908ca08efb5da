"""The ``serving`` family's parts: its TF Serving models, built in a child, and the replay's cost.

The models are testkit/serving_models.py's five signature kinds (serialized tf.Examples, raw
text, BERT-style ids of unknown length, JPEG bytes, a recommender's large id tables), each a
TF Serving base path with version 1 and a warmup file written through TF Serving's protos. The
judge (benchmarks/harness_child.py ``--serving``) replays that file itself; the advisor is given
the version directory (or, with ``--serving-path base``, the base path TF Serving is given) and
reads the file its own way.

The replay's cost: the recommender (numeric inputs, so the advisor can also synthesise them) is
built once more with every warmup request of one batch size, and calibrated twice in the same
quota, replaying its warmup file and with ``--requests none --batch-size`` that size (inputs of
the same shapes, synthesised): their measured (ok) trials per 60 s are the target's figures.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import REPO, figures
from benchmarks.calibrate_run import CalibrateRun, run_calibrate
from benchmarks.cgroups import RealCgroup
from benchmarks.plan import REPLAY_COST_BATCH, REPLAY_COST_KIND, Scenario, serving_subject
from benchmarks.results import ReplayCost
from benchmarks.scenario_result import calibration_of, kill_after

BUILD_TIMEOUT_S = 300.0
#: which path the advisor is given: the version directory, or the base path holding it
SERVING_PATHS = ("version", "base")


@dataclass(frozen=True)
class ServingModel:
    """One built TF Serving model: its base path, its version directory, its warmup batches."""

    kind: str
    base: Path
    version_dir: Path
    batch_sizes: tuple[int, ...]

    def path_for_advisor(self, which: str) -> Path:
        return self.base if which == "base" else self.version_dir


def build_serving(kind: str, out_dir: Path, batch_size: int | None = None) -> ServingModel:
    """Build ``kind`` as ``out_dir/kind/1`` in a child (TF stays out of this process)."""
    argv = [sys.executable, "-m", "testkit.serving_models", "build", kind, str(out_dir / kind)]
    if batch_size is not None:
        argv += ["--batch-size", str(batch_size)]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False, cwd=REPO
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError(f"building serving model {kind} failed: {tail[0]}")
    built = json.loads(done.stdout.splitlines()[-1])
    return ServingModel(
        kind=kind,
        base=Path(built["base"]),
        version_dir=Path(built["version_dir"]),
        batch_sizes=tuple(built["batch_sizes"]),
    )


def replay_cost_scenario(quota_cpus: float | None) -> Scenario:
    return Scenario(
        serving_subject(REPLAY_COST_KIND), quota_cpus, "latency", 1, batch_size=REPLAY_COST_BATCH
    )


def synthesised_args() -> list[str]:
    """What makes calibrate synthesise inputs of the warmup requests' shapes instead."""
    return ["--requests", "none", "--batch-size", str(REPLAY_COST_BATCH)]


def measure_replay_cost(
    model: ServingModel,
    *,
    which_path: str,
    quota_cpus: float | None,
    group: RealCgroup | None,
    budget_s: float | None,
) -> ReplayCost:
    """Both calibrations of ``model`` in ``group``, replay first, and their figures."""
    scenario = replay_cost_scenario(quota_cpus)
    path = model.path_for_advisor(which_path)
    timeout = kill_after(budget_s)
    # both spend the whole budget: trials per minute compares the rate, not when each settled
    replay = run_calibrate(scenario, path, group, budget_s, timeout, spend_budget=True)
    synthesised = run_calibrate(
        scenario, path, group, budget_s, timeout, spend_budget=True, extra=synthesised_args()
    )
    return replay_cost_of(scenario, len(model.batch_sizes), replay, synthesised)


def replay_cost_of(
    scenario: Scenario, requests: int, replay: CalibrateRun, synthesised: CalibrateRun
) -> ReplayCost:
    """The two runs' rates, their ratio and the target's verdict (n/a where one failed)."""
    rates = [
        figures.per_60s(run.ok_trials, run.wall_s if run.exit_code == 0 else None)
        for run in (replay, synthesised)
    ]
    replay_rate, synthesised_rate = rates
    # compared only when each run fed what it is named for (an advisor that does not read
    # warmup files synthesises in both)
    replayed = figures.inputs_kind(_subject(replay)) == "warmup"
    synthesised_kind = figures.inputs_kind(_subject(synthesised))
    comparable = replayed and synthesised_kind in {None, "synthesised"}
    ratio = None
    if replay_rate is not None and synthesised_rate:
        ratio = round(replay_rate / synthesised_rate, 3)
    return ReplayCost(
        subject=scenario.subject,
        quota_cpus=scenario.quota_cpus,
        batch_size=scenario.batch_size,
        requests=requests,
        replay=calibration_of(replay),
        synthesised=calibration_of(synthesised),
        replay_per_60s=None if replay_rate is None else round(replay_rate, 2),
        synthesised_per_60s=None if synthesised_rate is None else round(synthesised_rate, 2),
        ratio=ratio,
        target=figures.replay_cost_verdict(replay_rate, synthesised_rate, comparable),
    )


def _subject(run: CalibrateRun) -> dict[str, Any] | None:
    return None if run.result is None else run.result.get("workload")
