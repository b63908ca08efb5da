"""``run --for-workload ... --for-container ...``: the serving container an advice is measured for
lands in its provenance, through the real CLI with the real search over the cost model of
search_fakes (no TensorFlow); the flags that do not go together stop the run before the probe
with one line; what the probe can check of ``--cpu-from`` is a warning, never a failure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor import errors
from advisor.cli import main
from advisor.cli._args import flag
from advisor.keys import PROVENANCE_ANNOTATION
from advisor.models import (
    CalibrationOptions,
    CalibrationResult,
    DownwardAPI,
    NodeProfile,
    ServingTarget,
)
from advisor.pipeline import Instruments, RunRequest, check_run_request, serving_target
from advisor.pipeline.sweep import sweep
from advisor.recommend import load_configmap_yaml, parse_configmap
from tests.support.search_fakes import FakeClock, FakeTrials, tripwire
from tests.support.search_fakes import node as simulated_node

#: what a calibration Job for a container requesting 2 CPUs runs under: limits.cpu = 2
JOB_NODE = simulated_node(4, quota=2.0)
NO_MEASURING = Instruments(
    probe=tripwire("run went on to probe"), sweep=tripwire("run went on to measure")
)
FULL = (
    "--for-workload",
    "deploy/web",
    "--for-container",
    "server",
    "--serving-image",
    "registry.example.com/web:1.2",
    "--serving-model-path",
    "/models/resnet",
    "--cpu-from",
    "request",
    "--spec-hash",
    "3f9a1c0e",
    "--spec-field",
    "limits.memory=2Gi",
    "--spec-field",
    "node-selector=pool=a,zone=b",
    "--spec-field",
    "tolerations=#0a1b2c3d4e",
)


def on(node: NodeProfile, seen: list[dict[str, Any]] | None = None) -> Instruments:
    """``node`` as the probe's answer and the real sweep over the cost model; ``seen`` gets each
    sweep's keywords (the incumbent among them)."""

    def simulated_sweep(
        options: CalibrationOptions, probed: NodeProfile, **kwargs: Any
    ) -> CalibrationResult:
        if seen is not None:
            seen.append(kwargs)
        clock = FakeClock()
        trials = FakeTrials(
            clock=clock, usable=probed.effective_cpus, affinity=len(probed.affinity_cpus)
        )
        return sweep(options, probed, trial_fn=trials, clock=clock, **kwargs)

    return Instruments(probe=lambda _root: node, sweep=simulated_sweep)


def with_downward(node: NodeProfile, **values: float) -> NodeProfile:
    return node.model_copy(update={"downward_api": DownwardAPI(**values)})


def run_to_stdout(
    capsys: pytest.CaptureFixture[str], *flags: str, node: NodeProfile = JOB_NODE
) -> tuple[ServingTarget | None, dict[str, Any], str]:
    """(the target read back, the provenance as stored, stderr) of ``run --output -``."""
    code = main(["run", "--output", "-", *flags], instruments=on(node))
    out, err = capsys.readouterr()
    assert code == 0, err
    cm = load_configmap_yaml(out, "stdout")
    stored = json.loads(cm["metadata"]["annotations"][PROVENANCE_ANNOTATION])
    return parse_configmap(cm, "stdout").recommendation.provenance.target, stored, err


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if " WARNING " in line]


# --------------------------------------------------------------------------------------------------
# recorded


def test_every_flag_lands_in_the_provenance_the_workload_as_kubectl_names_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    target, stored, err = run_to_stdout(capsys, *FULL)
    assert target == ServingTarget(
        workload="deployment/web",  # given as deploy/web
        container="server",
        image="registry.example.com/web:1.2",
        model_path="/models/resnet",
        cpu_from="request",
        spec_hash="3f9a1c0e",
        spec={
            "limits.memory": "2Gi",
            "node-selector": "pool=a,zone=b",
            "tolerations": "#0a1b2c3d4e",
        },
    )
    assert stored["target"]["workload"] == "deployment/web"
    assert stored["quota_cpus"] == 2.0  # the quota the request stands for
    assert warnings(err) == []  # a quota was there: nothing to warn about


def test_the_two_that_name_the_container_are_enough_and_cpu_from_defaults_to_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    target, stored, _ = run_to_stdout(capsys, "--for-workload", "sts/db", "--for-container", "db")
    assert target == ServingTarget(workload="statefulset/db", container="db", cpu_from="limit")
    assert stored["target"] == {
        "workload": "statefulset/db",
        "container": "db",
        "cpu_from": "limit",
    }


def test_without_the_flags_the_provenance_names_no_target(
    capsys: pytest.CaptureFixture[str],
) -> None:
    target, stored, _ = run_to_stdout(capsys)
    assert target is None and "target" not in stored


def test_a_recorded_target_leaves_the_incumbent_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "advice.yaml"
    seen: list[dict[str, Any]] = []
    argv = ["run", "--output", str(out), *FULL]
    assert main(argv, instruments=on(JOB_NODE, seen)) == 0
    first = parse_configmap(load_configmap_yaml(out.read_text(), "first")).recommendation
    assert main(argv, instruments=on(JOB_NODE, seen)) == 0
    held = seen[1]["incumbent"]
    assert held is not None and held.source == f"--output {out}"
    assert held.counts == (
        first.intra_op_threads,
        first.inter_op_threads,
    )
    capsys.readouterr()


# --------------------------------------------------------------------------------------------------
# refused: one line, exit 2, before the probe


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--for-workload", "deploy/web"], "--for-workload needs --for-container"),
        (["--for-container", "server"], "--for-container needs --for-workload"),
        (["--serving-image", "web:1"], "--serving-image needs --for-workload and --for-container"),
        (["--serving-model-path", "/m"], "--serving-model-path needs --for-workload and"),
        (["--cpu-from", "request"], "--cpu-from needs --for-workload and --for-container"),
        (["--spec-hash", "abc"], "--spec-hash needs --for-workload and --for-container"),
        (["--spec-field", "budget=300"], "--spec-field needs --for-workload and --for-container"),
        (
            ["--for-workload", "deploy/web", "--for-container", "s", "--spec-field", "budget"],
            "--spec-field 'budget': must be KEY=VALUE",
        ),
        (
            ["--for-workload", "deploy/web", "--for-container", "s", "--spec-field", "a b=1"],
            "--spec-field 'a b' is not a spec field's name",
        ),
        (
            ["--for-workload", "deploy/web", "--for-container", "s", "--spec-field", "budget="],
            "--spec-field budget: the value must hold 1 to 64 characters",
        ),
        (
            ["--for-workload", "daemonset/agent", "--for-container", "a"],
            "--for-workload 'daemonset/agent' must be deployment/NAME or statefulset/NAME",
        ),
        (
            ["--for-workload", "deployment/Web", "--for-container", "a"],
            "--for-workload 'deployment/Web' name 'Web'",
        ),
        (["--for-workload", "deploy/web", "--for-container", "Server_1"], "--for-container"),
        (
            ["--for-workload", "deploy/web", "--for-container", "s", "--serving-image", "a b"],
            "--serving-image 'a b' is not an image reference",
        ),
        (
            ["--for-workload", "deploy/web", "--for-container", "s", "--serving-model-path", " "],
            "--serving-model-path must not be empty",
        ),
        (
            ["--for-workload", "deploy/web", "--for-container", "s", "--spec-hash", "a/b"],
            "--spec-hash: label value 'a/b' is not a valid label value",
        ),
        (
            ["--for-workload", "deploy/web", "--for-container", "s", "--cpu-from", "quota"],
            "--cpu-from: invalid choice: 'quota'",
        ),
    ],
)
def test_flags_that_do_not_go_together_are_one_usage_line(
    flags: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--output", "-", *flags], instruments=NO_MEASURING)
    out, err = capsys.readouterr()
    assert (code, out) == (errors.UsageError.exit_code, "")
    (line,) = err.splitlines()
    assert line.startswith("tf-thread-advisor: error: ") and says in line, line


def test_a_python_caller_meets_the_same_rules_named_by_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(errors.UsageError) as caught:
        serving_target(serving_image="web:1")
    message = str(caught.value)
    assert message.startswith("serving_image needs for_workload and for_container")
    assert "--" not in message
    code = main(["run", "--serving-image", "web:1"], instruments=NO_MEASURING)
    (line,) = capsys.readouterr().err.splitlines()
    assert code == errors.UsageError.exit_code
    assert line == f"tf-thread-advisor: error: {caught.value.spelled(flag)}"
    assert serving_target() is None
    built = serving_target(for_workload="deployments/web", for_container="s")
    assert built == ServingTarget(workload="deployment/web", container="s")


def test_a_target_built_by_hand_is_checked_before_the_sweep() -> None:
    check_run_request(RunRequest(target=ServingTarget(workload="deployment/web", container="s")))
    # kubectl's other names read as the one the advice records: nothing compares them as text
    by_hand = ServingTarget(workload="deploy/web", container="s")
    check_run_request(RunRequest(target=by_hand))
    assert by_hand.model_dump(mode="json")["workload"] == "deployment/web"
    for target, says in [
        (ServingTarget(workload="pod/web", container="s"), "target.workload 'pod/web' must be"),
        (ServingTarget(workload="deployment/web", container="S"), "target.container 'S'"),
    ]:
        with pytest.raises(errors.UsageError, match=says):
            check_run_request(RunRequest(target=target))


# --------------------------------------------------------------------------------------------------
# what the probe can check: warnings


def test_a_request_basis_without_a_quota_warns_and_still_publishes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    unlimited = simulated_node(4)
    target, stored, err = run_to_stdout(capsys, *FULL, node=unlimited)
    assert target is not None and target.cpu_from == "request"
    assert "quota_cpus" not in stored  # measured on the whole node, as the probe saw it
    (line,) = warnings(err)
    assert "the CPU request of deployment/web (--cpu-from request)" in line
    assert "no CPU quota was found here" in line and "4 unlimited CPUs" in line


def test_a_limit_basis_without_a_quota_warns_too(capsys: pytest.CaptureFixture[str]) -> None:
    flags = ("--for-workload", "deploy/web", "--for-container", "server")
    _, _, err = run_to_stdout(capsys, *flags, node=simulated_node(4))
    (line,) = warnings(err)
    assert "the CPU limit of deployment/web (--cpu-from limit)" in line


def test_a_pod_request_other_than_the_quota_warns_for_a_request_basis_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    asked_less = with_downward(JOB_NODE, cpu_request_cpus=1.0, cpu_limit_cpus=2.0)
    _, _, err = run_to_stdout(capsys, *FULL, node=asked_less)
    (line,) = warnings(err)
    assert "measured under a quota of 2 CPUs, but this pod requests 1" in line
    # as the Job sets it (limits.cpu = the request, so requests.cpu = the same): quiet
    as_derived = with_downward(JOB_NODE, cpu_request_cpus=2.0, cpu_limit_cpus=2.0)
    assert warnings(run_to_stdout(capsys, *FULL, node=as_derived)[2]) == []
    # a limit basis does not care what the Job requested
    limit_flags = ("--for-workload", "deploy/web", "--for-container", "server")
    assert warnings(run_to_stdout(capsys, *limit_flags, node=asked_less)[2]) == []


def test_a_setting_undone_in_production_for_this_target_is_not_advised_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """plan's revert records the undone setting in the ConfigMap; the next run for the same
    target leaves it out, and keeps the record for the run after."""
    from datetime import datetime, timezone

    from advisor.recommend import configmap_yaml
    from advisor.recommend.previous import (
        Previous,
        rejected_settings,
        reverted_configmap,
    )

    out = tmp_path / "advice.yaml"
    # a budget whose race holds the rounds that replace TF's default (45 s of the fakes' 3 s
    # windows do not): the first advice is a setting production can undo
    argv = ["run", "--output", str(out), "--budget", "200", *FULL]
    assert main(argv, instruments=on(JOB_NODE)) == 0
    first = load_configmap_yaml(out.read_text(), "first")
    notes = first["metadata"]["annotations"]
    # as a revert leaves it: the first advice undone (written back to itself, for the test)
    kept = Previous(first["data"], notes[PROVENANCE_ANNOTATION], "v1", None, "first")
    now = datetime.now(timezone.utc)
    out.write_text(configmap_yaml(reverted_configmap(first, kept, now=now, reason="regressed")))
    seen: list[dict[str, Any]] = []
    assert main(argv, instruments=on(JOB_NODE, seen)) == 0
    second = load_configmap_yaml(out.read_text(), "second")
    assert second["data"] != first["data"]
    assert seen[0]["incumbent"] is None  # the stored advice was the undone one
    assert [r["env"] for r in rejected_settings(second)] == [first["data"]]
    capsys.readouterr()
