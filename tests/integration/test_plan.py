"""``plan`` through the real CLI against the strict fake API server, each step authorized by the
Role of the ServiceAccount that runs it in the shipped kustomize component (deploy/components/
fleet): the planner lists and creates Jobs, the calibration Job's advisor writes the advice.

The scene is the fleet issue's: in namespace ``ml``, opted-in Deployments ``a`` (limit 1,
nodeSelector pool=a, model under a PVC mount), ``b`` (limit 1500m, a toleration, model baked into
its image), ``c`` (mounting advice that fits it) and ``d`` (not opted in).
"""

from __future__ import annotations

import argparse
import copy
import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor import __version__
from advisor.cli import main
from advisor.fleet.derive import JobSettings, derive_job
from advisor.fleet.optin import Defaults, read_ask
from advisor.models import CalibrationOptions, CalibrationResult, NodeProfile
from advisor.pipeline import Instruments
from advisor.pipeline.sweep import sweep
from advisor.recommend import build_recommendation, parse_configmap, render_configmap
from testkit.fakeapi.apps import workload
from testkit.fakeapi.claims import claim
from testkit.fakeapi.rbac import Rule, fleet_rules
from testkit.fakeapi.samples import calibration_result, node_profile
from testkit.fakeapi.server import FakeApiServer
from tests.support.fleet_workloads import view
from tests.support.search_fakes import FakeClock, FakeTrials, node, tripwire

NS = "ml"
IMAGE = "registry.example.com/tf-thread-advisor:1"
NO_MEASURING = Instruments(
    probe=tripwire("plan must not probe"), sweep=tripwire("plan must not measure")
)


PLANNER = fleet_rules("-planner")
CALIBRATION = fleet_rules("-calibration")


def opted_in(
    name: str, container: dict[str, Any], pod: dict[str, Any] | None = None, **ann: str
) -> dict[str, Any]:
    obj = workload("deployments", NS, name, container=container, pod_spec=pod)
    obj["metadata"]["labels"] = {"tf-thread-advisor.io/calibrate": "true"}
    obj["metadata"]["annotations"] = ann
    return obj


def server(name: str, cpu: str, model_mount: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {
        "image": f"registry.example.com/{name}-serving:3",
        "resources": {
            "requests": {"cpu": cpu, "memory": "1Gi"},
            "limits": {"cpu": cpu, "memory": "1Gi"},
        },
        "envFrom": [{"configMapRef": {"name": f"advice-{name}"}}],
    }
    if model_mount:
        container["volumeMounts"] = [{"name": "models", "mountPath": "/models", "readOnly": True}]
    return container


def scene() -> dict[str, dict[str, Any]]:
    a = opted_in(
        "a",
        server("a", "1", model_mount=True),
        {
            "nodeSelector": {"pool": "a"},
            "volumes": [{"name": "models", "persistentVolumeClaim": {"claimName": "models-a"}}],
        },
        **{"tf-thread-advisor.io/model": "/models/a/saved"},
    )
    b = opted_in(
        "b",
        server("b", "1500m"),
        {
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
            ]
        },
        **{"tf-thread-advisor.io/model": "/opt/model/b.keras"},
    )
    c = opted_in("c", server("c", "2"), **{"tf-thread-advisor.io/model": "/models/c"})
    d = workload("deployments", NS, "d", container=server("d", "1"))
    return {"a": a, "b": b, "c": c, "d": d}


def advice_fitting(api: FakeApiServer, name: str) -> dict[str, Any]:
    """The ConfigMap a calibration of the stored Deployment ``name`` would have written."""
    obj = api.workload("deployments", NS, name)
    assert obj is not None
    obj = {**obj, "kind": "Deployment"}
    ask = read_ask(obj["metadata"]["annotations"], Defaults())
    job = derive_job(
        view(obj, "Deployment"),
        ask,
        configmap=f"advice-{name}",
        settings=JobSettings(IMAGE, "x"),
    )
    rec = build_recommendation(
        calibration_result(node=node_profile(quota=job.cpu)),
        advisor_version=__version__,
        now=datetime.now(timezone.utc) - timedelta(days=1),
    )
    rec = rec.model_copy(
        update={"provenance": rec.provenance.model_copy(update={"target": job.target})}
    )
    return render_configmap(rec, f"advice-{name}", NS)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(tmp_path, namespaces=(NS,), rules=PLANNER) as fake:
        for obj in scene().values():
            fake.put_workload(obj)
        fake.put_claim(claim(NS, "models-a", ["ReadWriteMany"], bound_modes=["ReadWriteMany"]))
        fake.put(advice_fitting(fake, "c"), manager="tf-thread-advisor")
        yield fake


def plan(
    capsys: pytest.CaptureFixture[str], api: FakeApiServer, *argv: str
) -> tuple[int, str, str]:
    code = main(
        ["plan", "--kubeconfig", str(api.kubeconfig), "--namespace", NS, "--image", IMAGE, *argv],
        instruments=NO_MEASURING,
    )
    out, err = capsys.readouterr()
    return code, out, err


def decisions(
    capsys: pytest.CaptureFixture[str], api: FakeApiServer, *argv: str
) -> dict[str, dict[str, Any]]:
    code, out, err = plan(capsys, api, "--format", "json", *argv)
    doc = json.loads(out)
    assert list(doc) == ["decisions"]
    for row in doc["decisions"]:
        keys = {"workload", "container", "configmap", "decision", "reason", "job", "namespace"}
        assert set(row) == keys
        assert row["namespace"] == NS  # each decision names its workload's namespace
    # any failed decision is plan's own exit code, after every decision is printed
    failed = any(row["decision"] == "failed" for row in doc["decisions"])
    assert code == (17 if failed else 0), err
    return {row["workload"]: row for row in doc["decisions"]}


def created_jobs(api: FakeApiServer) -> list[dict[str, Any]]:
    return [
        r.body
        for r in api.requests
        if r.method == "POST" and r.path.endswith("/jobs") and r.status == 201
    ]


def test_plan_decides_calibrate_fits_and_leaves_others_out(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = decisions(capsys, api)
    assert set(rows) == {"deployment/a", "deployment/b", "deployment/c"}
    assert rows["deployment/a"]["decision"] == "calibrate"
    assert rows["deployment/b"]["decision"] == "calibrate"
    assert rows["deployment/c"]["decision"] == "fits", rows["deployment/c"]["reason"]
    assert all(r.method == "GET" for r in api.requests), "plan without --apply wrote something"
    code, table, _ = plan(capsys, api)
    assert code == 0
    assert "deployment/b" in table and "--apply" in table


def test_apply_creates_one_job_per_calibration_in_the_workloads_shape(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = plan(capsys, api, "--apply")
    assert code == 0, err
    jobs = {
        j["metadata"]["annotations"]["tf-thread-advisor.io/workload"]: j for j in created_jobs(api)
    }
    assert set(jobs) == {"deployment/a", "deployment/b"}
    for name, job in jobs.items():
        stored = api.workload("deployments", NS, name.split("/")[1])
        assert stored is not None
        serving = stored["spec"]["template"]["spec"]["containers"][0]
        pod = job["spec"]["template"]["spec"]
        (advisor,) = [c for c in pod["containers"] if c["name"] == "advisor"]
        assert advisor["resources"] == serving["resources"]
        assert pod["automountServiceAccountToken"] is False
        token_volumes = {
            v["name"]
            for v in pod["volumes"]
            if any(
                "serviceAccountToken" in s for s in (v.get("projected") or {}).get("sources", [])
            )
        }
        assert token_volumes, "no projected token"
        for c in pod["containers"] + pod.get("initContainers", []):
            mounted = {m["name"] for m in c.get("volumeMounts", [])} & token_volumes
            assert bool(mounted) == (c["name"] == "advisor"), c["name"]
        owner = job["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["uid"]) == (
            "Deployment",
            stored["metadata"]["name"],
            stored["metadata"]["uid"],
        )
    assert jobs["deployment/a"]["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "a"}
    tolerations = jobs["deployment/b"]["spec"]["template"]["spec"]["tolerations"]
    assert (
        tolerations
        == api.workload("deployments", NS, "b")["spec"]["template"]["spec"]["tolerations"]
    )  # type: ignore[index]
    a_pod = jobs["deployment/a"]["spec"]["template"]["spec"]
    (pvc,) = [v for v in a_pod["volumes"] if "persistentVolumeClaim" in v]
    assert pvc["persistentVolumeClaim"] == {"claimName": "models-a", "readOnly": True}
    # idempotent: the second apply finds the Jobs and creates nothing
    before = len(created_jobs(api))
    rows = decisions(capsys, api, "--apply")
    assert len(created_jobs(api)) == before
    assert {rows[w]["decision"] for w in ("deployment/a", "deployment/b")} == {"pending"}


def test_max_running_one_on_a_shared_pool_starts_one_job(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    b = api.workload("deployments", NS, "b")
    assert b is not None
    b = copy.deepcopy(b)
    b["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "a"}
    api.put_workload({**b, "apiVersion": "apps/v1", "kind": "Deployment"})
    rows = decisions(capsys, api, "--apply", "--max-running", "1")
    assert len(created_jobs(api)) == 1
    waiting = [r for r in rows.values() if "waits" in r["reason"]]
    assert len(waiting) == 1 and waiting[0]["decision"] == "calibrate"
    rows = decisions(capsys, api, "--apply", "--max-running", "1")
    assert len(created_jobs(api)) == 1, "a second Job started while the first runs on the pool"


def test_the_jobs_command_writes_the_advice_and_the_next_plan_says_fits(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert plan(capsys, api, "--apply")[0] == 0
    (job,) = [
        j
        for j in created_jobs(api)
        if j["metadata"]["annotations"]["tf-thread-advisor.io/workload"] == "deployment/b"
    ]
    (advisor,) = [
        c for c in job["spec"]["template"]["spec"]["containers"] if c["name"] == "advisor"
    ]
    # the kubelet expands $(VAR) from the container's env; the Downward API gives the namespace
    argv = [
        a.replace("$(TFTA_POD_NAMESPACE)", NS)
        for a in advisor.get("command", [])[1:] + advisor["args"]
    ]
    assert argv[0] == "run"
    # what the probe reads in a pod with b's limit (tests/system/test_fleet_podman.py runs it)
    quota = 1.5

    def simulated_sweep(
        options: CalibrationOptions, profile: NodeProfile, **kwargs: Any
    ) -> CalibrationResult:
        clock = FakeClock()
        trials = FakeTrials(
            clock=clock,
            usable=quota,
            affinity=2,
            flat_p99=10.0,
            baseline_factor=3.0,
            noise=0.03,
            overhead_s=0.3,
            seed=1,
        )
        return sweep(options, profile, trial_fn=trials, clock=clock, **kwargs)

    api.rules = CALIBRATION  # the Job's advisor runs as the calibration ServiceAccount
    monkeypatch.setenv("KUBECONFIG", str(api.kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code = main(
        argv,
        instruments=Instruments(probe=lambda _root: node(2, quota=quota), sweep=simulated_sweep),
    )
    _, err = capsys.readouterr()
    assert code == 0, err
    written = api.get(NS, "advice-b")
    assert written is not None
    target = parse_configmap(written).recommendation.provenance.target
    assert target is not None and (str(target.workload), target.container) == (
        "deployment/b",
        "server",
    )
    api.rules = PLANNER
    rows = decisions(capsys, api)
    assert rows["deployment/b"]["decision"] == "fits", rows["deployment/b"]["reason"]
    assert rows["deployment/c"]["decision"] == "fits"
    # the advice records the spec it was measured for, so the next plan names what changed
    assert target.spec is not None
    assert target.spec["limits.memory"] == "1Gi"
    assert target.spec["tolerations"].startswith("#")
    b = copy.deepcopy(api.workload("deployments", NS, "b"))
    assert b is not None
    b["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = "2Gi"
    b["spec"]["replicas"] = 5
    api.put_workload({**b, "apiVersion": "apps/v1", "kind": "Deployment"})
    rows = decisions(capsys, api)
    assert rows["deployment/b"]["decision"] == "calibrate"
    assert rows["deployment/b"]["reason"] == "memory limit changed (1Gi -> 2Gi)"
    assert rows["deployment/b"]["job"] != job["metadata"]["name"]


def test_status_shows_each_advices_newest_calibration_job_and_its_state(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.integration.status_cli import json_rows, reader_rules, status

    assert plan(capsys, api, "--apply")[0] == 0
    job_b = next(
        j["metadata"]["name"]
        for j in created_jobs(api)
        if j["metadata"]["annotations"]["tf-thread-advisor.io/workload"] == "deployment/b"
    )
    api.rules = reader_rules("Role")  # what a person or a dashboard reads status with
    rows = {row["name"]: row for row in json_rows(capsys, api, "--namespace", NS)}
    # b's advice is not written yet: listed as missing (b requires it), with its running Job
    assert rows["advice-b"]["missing"] is True
    assert (rows["advice-b"]["calibration_job"], rows["advice-b"]["calibration_state"]) == (
        job_b,
        "running",
    )
    assert rows["advice-c"]["calibration_job"] is None  # c fits: plan started nothing for it
    api.set_job_condition(
        NS,
        job_b,
        type="Failed",
        reason="PodFailurePolicy",
        message=f"Container advisor for pod {NS}/{job_b}-x failed with exit code 4 matching "
        "FailJob rule at index 0",
    )
    code, table, _ = status(capsys, api, "--namespace", NS)
    assert code == 0
    assert f"{job_b} (failed)" in table
    assert f"calibration Job {job_b} failed: PodFailurePolicy" in table
    assert "exit 4: model" in table
    api.rules = PLANNER
    assert decisions(capsys, api)["deployment/b"]["decision"] == "failed"


def printed_jobs(
    capsys: pytest.CaptureFixture[str], api: FakeApiServer, *argv: str
) -> list[tuple[dict[str, Any], argparse.Namespace]]:
    """``plan --print-jobs``'s Jobs, each with the ``run`` its advisor container starts, parsed
    as the CLI parses it."""
    from advisor.cli import build_parser

    code, out, err = plan(capsys, api, "--print-jobs", *argv)
    assert code == 0, err
    found = []
    for job in (doc for doc in yaml.safe_load_all(out) if doc):
        containers = job["spec"]["template"]["spec"]["containers"]
        (advisor,) = [c for c in containers if c["name"] == "advisor"]
        args = [a.replace("$(TFTA_POD_NAMESPACE)", NS) for a in advisor["args"]]
        found.append((job, build_parser().parse_args(args)))
    return found


def test_print_jobs_shows_what_apply_would_create_and_the_run_flags_pass_through(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = printed_jobs(
        capsys,
        api,
        "--trial-mode",
        "spawn",
        "--sweep-onednn",
        "--configmap-annotation",
        "reloader.stakater.com/match=true",
    )
    assert {j["metadata"]["annotations"]["tf-thread-advisor.io/workload"] for j, _ in jobs} == {
        "deployment/a",
        "deployment/b",
    }
    assert all(r.method == "GET" for r in api.requests)
    for _, parsed in jobs:
        assert (parsed.command, parsed.trial_mode, parsed.sweep_onednn) == ("run", "spawn", True)
        assert parsed.configmap_annotation == ["reloader.stakater.com/match=true"]
        assert parsed.for_workload is not None and parsed.spec_hash


def test_plans_input_shape_given_once_per_input_reaches_each_job_whole(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from advisor.cli._sweep_flags import options_from_args

    jobs = printed_jobs(
        capsys, api, "--input-shape", "input_ids=128", "--input-shape", "attention_mask=128"
    )
    assert jobs
    for _, parsed in jobs:
        assert options_from_args(parsed).input_shape == "attention_mask=128;input_ids=128"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--max-running", "0"], "--max-running must be 1 or more"),
        (["--image", "a b"], "--image 'a b' is not an image reference"),
        (["--service-account", "Bad_Name"], "--service-account 'Bad_Name'"),
        (["--configmap-annotation", "tf-thread-advisor.io/x=1"], "the advisor's own"),
        (["--configmap-annotation", "novalue"], "must be KEY=VALUE"),
        (["--objective", "slo"], "--objective slo needs --p99-ms"),
        (["--budget", "5"], "--budget 5 s is too small"),
        (["--max-age", "soon"], "--max-age"),
        (["--image-pull-secret", "Mirror_Creds"], "--image-pull-secret 'Mirror_Creds' must be"),
        (["--priority-class", "Low Priority"], "--priority-class 'Low Priority' must be"),
        (["--startup-allowance", "soon"], "--startup-allowance: 'soon' must be a duration"),
        (["--startup-allowance", "0m"], "--startup-allowance: '0m' must be longer than zero"),
        (["--restart", "--restart-forbidden"], "--restart and --restart-forbidden exclude"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2_before_the_cluster_is_asked(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    code, out, err = plan(capsys, api, *argv)
    assert (code, out) == (2, "")
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) <= 2 and "Traceback" not in err, err
    assert says in err
    assert not api.requests


def test_a_forbidden_create_stops_with_exit_8_naming_the_rule(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.rules = [r for r in PLANNER if "create" not in r.verbs] + [
        Rule(r.api_groups, r.resources, tuple(v for v in r.verbs if v != "create"))
        for r in PLANNER
        if "create" in r.verbs
    ]
    code, _, err = plan(capsys, api, "--apply")
    assert code == 8
    assert "create jobs (batch)" in err and "Traceback" not in err
    assert not created_jobs(api)


def test_a_workload_deleted_mid_plan_leaves_no_job_behind(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    deleted: list[str] = []

    def delete_b_first(server: FakeApiServer) -> None:
        if not deleted:
            deleted.append("b")
            server.delete_workload("deployments", NS, "b")

    api.before_write = delete_b_first
    code, _, err = plan(capsys, api, "--apply")
    assert code == 0, err
    api.before_write = None
    assert "deployment/b" not in decisions(capsys, api)
    # the API server took b's Job, and its garbage collector removed it with its owner gone
    remaining = {j["metadata"]["annotations"]["tf-thread-advisor.io/workload"] for j in api.jobs()}
    assert remaining == {"deployment/a"}


def test_pull_secrets_deadline_and_priority_reach_the_jobs_and_no_lint_annotation_the_live_ones(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    b = api.workload("deployments", NS, "b")
    assert b is not None
    b = copy.deepcopy(b)
    b["spec"]["template"]["spec"]["imagePullSecrets"] = [{"name": "serving-creds"}]
    api.put_workload({**b, "apiVersion": "apps/v1", "kind": "Deployment"})
    flags = [
        "--image-pull-secret",
        "mirror-creds",
        "--image-pull-secret",
        "serving-creds",
        "--startup-allowance",
        "30m",
        "--priority-class",
        "batch-low",
    ]
    code, out, err = plan(capsys, api, "--print-jobs", *flags)
    assert code == 0, err
    printed = {
        j["metadata"]["annotations"]["tf-thread-advisor.io/workload"]: j
        for j in yaml.safe_load_all(out)
        if j
    }
    # printed for a reader or a linter: with the reasoned checkov skips
    for job in printed.values():
        assert any(k.startswith("checkov.io/skip") for k in job["metadata"]["annotations"])
    code, _, err = plan(capsys, api, "--apply", *flags)
    assert code == 0, err
    created = {
        j["metadata"]["annotations"]["tf-thread-advisor.io/workload"]: j for j in created_jobs(api)
    }
    assert set(created) == set(printed) == {"deployment/a", "deployment/b"}
    for owner, job in created.items():
        assert not [k for k in job["metadata"]["annotations"] if k.startswith("checkov.io")]
        pod = job["spec"]["template"]["spec"]
        assert pod["priorityClassName"] == "batch-low"
        budget = 300  # plan's default budget
        assert job["spec"]["activeDeadlineSeconds"] == budget + 30 * 60
        secrets = [s["name"] for s in pod["imagePullSecrets"]]
        if owner == "deployment/b":  # its own first, then plan's, each once
            assert secrets == ["serving-creds", "mirror-creds"]
        else:
            assert secrets == ["mirror-creds", "serving-creds"]
        annotations = job["spec"]["template"]["metadata"]["annotations"]
        assert annotations["sidecar.istio.io/inject"] == "false"
        assert annotations["linkerd.io/inject"] == "disabled"


def test_a_failed_model_copy_is_the_decisions_reason(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert plan(capsys, api, "--apply")[0] == 0
    job_a = next(
        j["metadata"]["name"]
        for j in created_jobs(api)
        if j["metadata"]["annotations"]["tf-thread-advisor.io/workload"] == "deployment/a"
    )
    api.set_job_condition(
        NS,
        job_a,
        type="Failed",
        reason="PodFailurePolicy",
        message=f"Container copy-model for pod {NS}/{job_a}-x7k2p failed with exit code 1 "
        "matching FailJob rule at index 3",
    )
    row = decisions(capsys, api)["deployment/a"]
    assert row["decision"] == "failed"
    assert row["reason"] == (
        f"calibration Job {job_a} failed: model copy failed: the serving image's cp exited with "
        f"code 1 (kubectl logs job/{job_a} -c copy-model says why)"
    )


def test_the_labels_value_is_read_true_false_or_named(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in (("e", "True"), ("f", "false")):
        obj = opted_in(name, server(name, "1"), **{"tf-thread-advisor.io/model": "/models/x"})
        obj["metadata"]["labels"] = {"tf-thread-advisor.io/calibrate": value}
        api.put_workload(obj)
    rows = decisions(capsys, api)
    assert "deployment/f" not in rows
    assert rows["deployment/e"]["decision"] == "skipped"
    assert rows["deployment/e"]["reason"] == (
        'label tf-thread-advisor.io/calibrate=\'True\' must be "true" or "false"'
    )


def test_a_restart_the_planner_may_not_make_is_skipped_and_gets_no_job(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    b = api.workload("deployments", NS, "b")
    assert b is not None
    b["metadata"]["annotations"]["tf-thread-advisor.io/restart"] = "true"
    api.put_workload({**b, "kind": "Deployment"})
    rows = decisions(capsys, api, "--restart-forbidden", "--apply")
    assert rows["deployment/b"]["decision"] == "skipped"
    assert "--restart-forbidden" in rows["deployment/b"]["reason"]
    assert rows["deployment/a"]["decision"] == "calibrate"  # the others go on
    assert [
        j["metadata"]["annotations"]["tf-thread-advisor.io/workload"] for j in created_jobs(api)
    ] == ["deployment/a"]
