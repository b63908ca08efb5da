"""A trial's preemptions per request and peak memory: where the child reads them, that results
without them (older children, stored results) still load, and where the table and report show them.
"""

from __future__ import annotations

import json
import sys

import pytest

from advisor.calibrate.spec import SubjectSpec, TrialSpec
from advisor.calibrate.statistics import aggregate
from advisor.models import CalibrationOptions, CalibrationResult, ThreadSetting, TrialResult
from advisor.pipeline.sweep import sweep
from advisor.render.report import report_html
from advisor.render.table import text_summary
from advisor.trials.runner import run_trial
from tests.support import FAKE_TRIALS, run_python
from tests.support.search_fakes import FakeClock, FakeTrials, node

#: generous: a TF child needs ~3 s of CPU to import and build; the machine may be busy
DEADLINE_S = 180.0

#: The child's measuring loop on requests that, like TF's, compute on threads other than the
#: main one: two hashing threads (hashlib lets go of the GIL) pinned to one CPU preempt each other
#: while the main thread only waits. 300 MiB are touched and freed before the window.
_POOL_LIKE = """
import hashlib, json, os, threading
from pathlib import Path
from advisor.trials.child.trial import _measure

os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
data = b"x" * (16 << 20)

def request():
    workers = [threading.Thread(target=lambda: hashlib.sha256(data).digest()) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return 1

ballast = bytearray(300 << 20)
for i in range(0, len(ballast), 4096):
    ballast[i] = 1
del ballast

def status(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])

main_before = status("nonvoluntary_ctxt_switches")
answer = _measure(request, concurrency=1, warmup_s=0.05, measure_s=0.3)
answer["main_thread_switches"] = status("nonvoluntary_ctxt_switches") - main_before
answer["vmhwm_kib"] = status("VmHWM")
import resource
answer["ru_maxrss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(answer))
"""

#: A parent holding 600 MiB that spawns the child, as the test runner does in CI once it has
#: imported TensorFlow: Linux carries ru_maxrss across exec, so the child's own peak must not be
#: read from it.
_BIG_PARENT = """
import subprocess, sys
ballast = bytearray(600 << 20)
for i in range(0, len(ballast), 4096):
    ballast[i] = 1
done = subprocess.run([sys.executable, "-c", sys.argv[1]], capture_output=True, text=True)
sys.stderr.write(done.stderr)
print(done.stdout)
sys.exit(done.returncode)
"""


def test_the_child_counts_every_threads_preemptions_and_the_peak_memory() -> None:
    answer = json.loads(run_python(_BIG_PARENT, _POOL_LIKE))
    per_request = answer["involuntary_switches_per_request"]
    # /proc/self/status (what psutil reads) sees the main thread's few; the workers' are many
    main = answer["main_thread_switches"] / answer["requests"]
    assert per_request >= 1
    assert per_request > 5 * main
    assert answer["peak_rss_mib"] >= 300  # the freed ballast still counts: a peak, not current
    assert answer["peak_rss_mib"] == pytest.approx(answer["vmhwm_kib"] / 1024, abs=2)
    # the parent's 600 MiB are in ru_maxrss (the trap is set) and not in the child's figure
    assert answer["ru_maxrss_kib"] / 1024 >= 600
    assert answer["peak_rss_mib"] < 500


def test_an_answer_from_an_older_child_still_makes_a_result() -> None:
    # the fake's answer has every field but the two new ones
    fake = FAKE_TRIALS / "fake_trial.py"
    result = run_trial(
        TrialSpec(ThreadSetting(2, 1), warmup_s=0.1, measure_s=0.2),
        SubjectSpec(model_path=None),
        deadline_s=30.0,
        program=[sys.executable, str(fake), "ok"],
    )
    assert result.status == "ok", result.reason
    assert result.p99_ms == 4.0
    assert result.involuntary_switches_per_request is None
    assert result.peak_rss_mib is None


def _switches(trial: TrialResult) -> float:
    """A made-up figure per setting and round: settings differ, windows of one setting too."""
    intra = trial.setting.intra or 8
    return 10.0 * intra + trial.round


def _calibrated(metrics: bool = False) -> CalibrationResult:
    """A sweep over the cost model; with ``metrics`` every trial reports the two figures, as a
    child that reads them does."""
    clock = FakeClock()
    fake = FakeTrials(clock=clock, usable=4.0, affinity=8, noise=0.03)

    def trial_fn(spec: TrialSpec, deadline_s: float) -> TrialResult:
        t = fake(spec, deadline_s)
        if not metrics or t.status != "ok":
            return t
        update = {
            "involuntary_switches_per_request": _switches(t),
            "peak_rss_mib": 500.0 + (t.setting.intra or 8),
        }
        return t.model_copy(update=update)

    # 200 s: room for the paired rounds that replace TF's default (calibrate/statistics)
    options = CalibrationOptions(budget_s=200.0)
    return sweep(options, node(8, quota=4.0), trial_fn=trial_fn, clock=clock)


def test_a_stored_result_without_the_fields_still_loads_and_renders() -> None:
    data = json.loads(_calibrated().model_dump_json())
    for trial in data["trials"]:
        del trial["involuntary_switches_per_request"], trial["peak_rss_mib"]
    for setting in data["settings"]:
        del setting["switches_per_request"]
    old = CalibrationResult.model_validate(data)
    assert all(t.involuntary_switches_per_request is None for t in old.trials)
    lines = text_summary(old).splitlines()
    column = lines[0].index("preempt/req")
    chosen = lines[1]
    assert chosen[column : column + len("preempt/req")].strip() == "-"


def test_a_stored_result_without_per_setting_statistics_still_loads_and_renders() -> None:
    data = json.loads(_calibrated().model_dump_json())
    del data["settings"]
    old = CalibrationResult.model_validate(data)
    assert old.settings == []
    lines = text_summary(old).splitlines()
    assert lines[1] == "(a result of an older version: no per-setting statistics recorded)"
    assert any(line.startswith("advice: ") for line in lines)


def test_the_text_table_shows_the_median_preemptions_beside_throttled() -> None:
    result = _calibrated(metrics=True)
    lines = text_summary(result).splitlines()
    header = lines[0].split()
    assert header.index("preempt/req") == header.index("throttled") + 1
    chosen = [
        t
        for t in result.trials
        if (t.setting.intra, t.setting.inter) == result.counts and t.status == "ok"
    ]
    trusted = [t for t in chosen if t.round > 0] or chosen
    values = sorted(_switches(t) for t in trusted)
    assert len(set(values)) > 1  # a median, not just any window's figure
    middle = len(values) // 2
    median = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
    cells = lines[1].split()
    assert cells[0] == f"{result.setting.intra}/{result.setting.inter}"
    assert cells[5] == f"{median:.1f}"


def test_the_median_skips_windows_that_did_not_record_it() -> None:
    def trial(switches: float | None, round_: int = 1) -> TrialResult:
        return TrialResult(
            intra_op_threads=2,
            inter_op_threads=1,
            round=round_,
            status="ok",
            p50_ms=1.0,
            p99_ms=2.0,
            throughput_rps=100.0,
            involuntary_switches_per_request=switches,
        )

    (stats,) = aggregate([trial(1.0), trial(None), trial(5.0), trial(100.0), trial(0.5, 0)])
    assert stats.switches_per_request == 5.0  # the race's windows with a figure, the screen's not
    (unknown,) = aggregate([trial(None), trial(None)])
    assert unknown.switches_per_request is None


def test_the_report_lists_both_for_every_trial() -> None:
    result = _calibrated(metrics=True)
    page = report_html(result)
    head = page[page.index("<h2>Every trial</h2>") :]
    header_cells = head[: head.index("</tr>")].split("<th>")[1:]
    names = [cell.split("</th>")[0] for cell in header_cells]
    assert names.index("preempt/req") == names.index("throttled ms") + 1
    assert names.index("peak RSS MiB") == names.index("preempt/req") + 1
    for trial in result.trials:
        if trial.status == "ok":
            assert (f"<td>{_switches(trial):.2f}</td><td>{trial.peak_rss_mib:.2f}</td>") in page
