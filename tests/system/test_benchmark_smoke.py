"""One real ``--smoke`` run of the benchmark: real TF children, a real calibrate, a real quota.

Checks the plumbing, never the numbers (this machine is shared and noisy): the report has every
figure (the machine it ran on and the advice's A/A noise among them), the advice it measured is the
one calibrate printed, and no cgroup is left behind.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import scaling
from testkit.realcgroup import CPU_ROOT, cgroup_unavailable
from tests.support import REPO
from tests.support.real_parts import need_module


def run_benchmark(argv: list[str], timeout_s: float) -> tuple[int, str, str]:
    """``python -m benchmarks ARGV`` from the checkout: (exit code, stdout, stderr), after
    checking that it left no quota cgroup of its own behind."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks", *argv],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = proc.communicate(timeout=timeout_s)
    assert not list(CPU_ROOT.glob(f"tfta-{proc.pid}-*")), "a cgroup was left behind"
    return proc.returncode, stdout, stderr


@pytest.mark.tf
def test_smoke_run_reports_every_figure_and_cleans_up(tmp_path: Path) -> None:
    need_module("tensorflow")
    out = tmp_path / "smoke.json"
    code, stdout, stderr = run_benchmark(["quality", "--smoke", "--json", str(out)], 300)
    assert code == 0, stderr[-2000:]

    report = json.loads(out.read_text())
    assert report["mode"] == "smoke"
    # the run names its machine, in the JSON and in the printed summary
    machine = report["host"]["machine"]
    assert machine["kernel"] == platform.release()
    assert machine["python"] == platform.python_version()
    assert machine["cgroup_version"] in {1, 2}
    assert machine["tensorflow"] and machine["logical_cpus"] >= machine["affinity_cpus"] >= 1
    assert f"kernel {machine['kernel']}, cgroup v{machine['cgroup_version']}" in stdout
    (scenario,) = report["scenarios"]
    expected_quota = 1.0 if cgroup_unavailable() is None else None
    assert scenario["quota_cpus"] == expected_quota
    calibrate = scenario["calibrate"]
    assert calibrate["exit_code"] == 0
    assert calibrate["trials"] >= 2  # the baseline and at least one setting
    # every trial kept for an offline replay of the choice: setting, round, status, figures
    assert len(calibrate["windows"]) == calibrate["trials"]
    assert calibrate["windows"][0][:4] == [None, None, 0, "ok"]  # the baseline screens first
    assert 0 < calibrate["wall_s"] < 120
    assert calibrate["peak_tree_rss_mib"] > 100  # TF was really loaded in the tree
    settings = scenario["settings"]
    assert scenario["advice"]["setting"] in settings
    assert {"default", "1/1", "2/1"} <= set(settings)
    # TF's default spelled out (a kept default's advice) is measured by the default's process
    shared = scenario["shared_windows"]
    assert set(shared.items()) <= {("2/2", "default")}
    for key, owner in shared.items():
        assert settings[key] == settings[owner]
    advice = shared.get(scenario["advice"]["setting"], scenario["advice"]["setting"])
    # the advice measured as two arms, in the same rounds: the judge's own noise beside it
    aa = scenario["aa"]
    assert aa["arms"] == [advice, f"{advice}#2"]
    assert aa["rounds"] == [3, 3]
    assert aa["noise"] >= 0
    assert aa["beyond_tolerance"] == (aa["noise"] > 0.05)
    assert "| A/A" in stdout
    # the judge's second look: one more round of the advice (both arms) and the grid's two
    second = scenario["second_look"]
    assert second["rounds"] == 1
    assert {advice, f"{advice}#2", "1/1", "2/1"} == set(second["settings"])
    assert scenario["first_look"]["rounds"] == 2
    # the held-out look: the second look's one round alone, the advice measured in it
    held = scenario["held_out"]
    assert held["rounds"] == 1
    assert held["advice_value"] is not None and held["grid_best"]["setting"] in {"1/1", "2/1"}
    for key, stats in settings.items():
        assert stats["rounds"] == (3 if shared.get(key, key) in second["settings"] else 2)
        assert stats["p99_ms"] >= stats["p50_ms"] > 0
        assert stats["throughput_rps"] > 0
    assert scenario["grid_best"]["setting"] in {"1/1", "2/1"}
    assert set(scenario["targets"].values()) <= {"PASS", "MISS", "n/a"}
    # calibrated again with its own advice as the incumbent (what the next scheduled run does)
    repeat = scenario["repeat"]
    assert repeat["exit_code"] == 0
    assert repeat["advice"] in settings  # the grid measured it too
    assert repeat["same_data"] == (repeat["advice"] == scenario["advice"]["setting"])
    assert isinstance(repeat["incumbent_kept"], bool)
    assert "| again" in stdout
    assert [row["cpus"] for row in report["scaling"]] == [2, 64, 64] * len(scaling.LAUNCHERS)
    assert "### Targets" in stdout
    assert scenario["scenario"] in stdout


@pytest.mark.tf
def test_serving_smoke_judges_a_tf_serving_model_on_its_warmup_requests(tmp_path: Path) -> None:
    """``--family serving --smoke``: the recommender built in TF Serving's layout, the judge's
    children replaying its warmup file, a real calibrate on its version directory, and the replay's
    cost against synthesis. A calibration the advisor refuses (no ``--requests`` flag yet) is a
    row that says so, not a crash."""
    need_module("tensorflow_serving.apis", "tensorflow-serving-api is not installed")
    out = tmp_path / "serving.json"
    argv = ["quality", "--family", "serving", "--smoke", "--json", str(out)]
    code, stdout, stderr = run_benchmark(argv, timeout_s=420)
    report = json.loads(out.read_text())
    assert (report["mode"], report["family"]) == ("smoke", "serving")
    assert "## Advice quality (smoke, serving family" in stdout
    assert "scaling" not in report
    (scenario,) = report["scenarios"]
    assert scenario["workload"] == "serving_recommender"
    calibrate = scenario["calibrate"]
    assert "--batch-size" not in calibrate["argv"]
    model = Path(calibrate["argv"][calibrate["argv"].index("--model") + 1])
    assert model.name == "1" and model.parent.name == "recommender"  # the version directory
    failed = []
    if calibrate["exit_code"] == 0:
        assert scenario["advice"]["setting"] in scenario["settings"]
    else:
        assert calibrate["error"] and f"calibrate failed in {scenario['scenario']}" in stdout
        failed.append(scenario["scenario"])
    # the judge's children replayed the warmup file: 32 requests of batches 1..8
    children = report["children"]["serving_recommender"]
    for child in children.values():
        assert child["requests"]["count"] == 32
        assert set(child["requests"]["batch_sizes"]) <= set(range(1, 9))
    assert {"default", "1/1", "2/1"} <= set(scenario["settings"])
    for stats in scenario["settings"].values():
        assert stats["p99_ms"] >= stats["p50_ms"] > 0
    # the replay's cost: the same model with one batch size, calibrated twice
    cost = report["replay_cost"]
    assert cost["workload"] == "serving_recommender"
    assert (cost["batch_size"], cost["requests"]) == (4, 32)
    assert cost["replay"]["argv"][-2:] == ["--budget", "30"]
    assert cost["synthesised"]["argv"][-4:] == ["--requests", "none", "--batch-size", "4"]
    assert cost["target"] in {"PASS", "MISS", "n/a"}
    for run in (cost["replay"], cost["synthesised"]):
        if run["exit_code"] != 0:
            assert cost["target"] == "n/a" and run["error"]
            failed.append("replay cost")
    assert "### Replaying warmup requests against synthesised inputs" in stdout
    assert code == (1 if failed else 0), stderr[-2000:]


@pytest.mark.tf
def test_networks_smoke_builds_a_keras_application_and_judges_the_advice_on_it(
    tmp_path: Path,
) -> None:
    """``--family networks --smoke``: Keras' MobileNetV2 (random weights) built as a SavedModel,
    a real calibrate on it under the quota where one can be made, and the judge's children
    loading the same model."""
    need_module("tensorflow")
    out = tmp_path / "networks.json"
    argv = ["quality", "--family", "networks", "--smoke", "--json", str(out)]
    code, stdout, stderr = run_benchmark(argv, timeout_s=420)
    assert code == 0, stderr[-2000:]
    report = json.loads(out.read_text())
    assert (report["mode"], report["family"]) == ("smoke", "networks")
    assert "## Advice quality (smoke, networks family" in stdout
    (scenario,) = report["scenarios"]
    assert scenario["workload"] == "mobilenet_v2"
    calibrate = scenario["calibrate"]
    assert calibrate["exit_code"] == 0, calibrate["error"]
    model = Path(calibrate["argv"][calibrate["argv"].index("--model") + 1])
    assert model.name == "mobilenet_v2"  # built in the run's temporary directory, gone now
    # the advisor measured the network's own 224x224x3 image input
    inputs = calibrate["its_own_workload"]["inputs"]
    assert list(inputs.values()) == ["float32[1,224,224,3]"]
    assert scenario["advice"]["setting"] in scenario["settings"]
    assert {"default", "1/1", "2/1"} <= set(scenario["settings"])
    for stats in scenario["settings"].values():
        assert stats["p99_ms"] >= stats["p50_ms"] > 0


@pytest.mark.tf
def test_process_offset_measures_one_setting_in_each_process_every_round(tmp_path: Path) -> None:
    need_module("tensorflow")
    out = tmp_path / "offset.json"
    argv = ["process-offset", "--processes", "3", "--rounds", "2", "--window", "0.3"]
    argv += ["--warmup", "0.1", "--out", str(out)]
    if cgroup_unavailable() is None:
        argv += ["--quota", "1"]
    code, stdout, stderr = run_benchmark(argv, 300)
    assert code == 0, stderr[-2000:]
    record = json.loads(out.read_text())
    for figure in ("p99_ms", "p50_ms"):
        rows = record["windows"][figure]
        assert len(rows) == 3 and all(len(row) == 2 for row in rows)
        assert all(value > 0 for row in rows for value in row)
        analysis = record["anova"][figure]
        assert (analysis["processes"], analysis["rounds"]) == (3, 2)
        assert 0 < analysis["p"] <= 1 and analysis["offset_sd"] >= 0
    # every window is a p99 of its own requests, the p50 never above it
    windows = record["windows"]
    pairs = zip(windows["p50_ms"], windows["p99_ms"], strict=True)
    assert all(
        p50 <= p99 for p50_row, p99_row in pairs for p50, p99 in zip(p50_row, p99_row, strict=True)
    )
    assert stdout.startswith("p99: 3 processes x 2 rounds")
    assert record["options"]["quota"] == (1.0 if cgroup_unavailable() is None else None)
