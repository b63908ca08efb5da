"""Fleet mode on the real cluster. The chart's planner CronJob, started once as a platform team
would (`kubectl create job --from=cronjob/...`), derives the calibration Job of an opted-in
Deployment; that Job's pod runs in the serving pod's shape (Guaranteed, one whole CPU, on a
kubelet with the static CPU manager policy: the probe sees the exclusive CPU it was given),
copies the model out of the serving image and writes the advice; the next plan says `fits`.
Plan from outside: `--dry-run=server` creates nothing; a Job that a ResourceQuota refuses is
that workload's `failed` (exit 17). The planner's token may do only what plan needs.

The serving Deployment keeps 0 replicas: on this 2-CPU node (1.9 allocatable) a Guaranteed
serving pod and its calibration pod cannot both hold a whole CPU. The pod template is what plan
derives from."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cluster import Cluster, helm_install, restricted_deployment
from tests.e2e.serving import MODEL_PATH, build_serving_image

pytestmark = pytest.mark.e2e

ADVICE = "advice-fleet"
RELEASE = "fleet"
PLANNER = f"{RELEASE}-tf-thread-advisor-planner"
CALIBRATION_SA = f"{RELEASE}-tf-thread-advisor-calibration"
BUDGET = "25"


@pytest.fixture(scope="module")
def serving_image(
    cluster: Cluster, advisor_image: str, tmp_path_factory: pytest.TempPathFactory
) -> str:
    return build_serving_image(tmp_path_factory.mktemp("serving"))


@pytest.fixture
def fleet(
    cluster: Cluster, advisor_image: str, serving_image: str, tmp_path: Path
) -> Iterator[str]:
    """A namespace with the chart's planner installed and one opted-in Deployment."""
    ns = cluster.namespace("fleet")
    repo, tag = advisor_image.rsplit(":", 1)
    values = {
        "image": {"repository": repo, "tag": tag, "pullPolicy": "Never"},
        "targets": [],
        "job": {"mode": "none"},
        "planner": {"enabled": True},
        "defaults": {
            "budget": int(BUDGET),
            "objective": "latency",
            "batchSize": 1,
            "concurrency": 1,
        },
    }
    helm_install(cluster, ns, RELEASE, values, tmp_path)
    cluster.apply(ns, serving_deployment(serving_image))
    yield ns
    cluster.delete_namespace(ns)


def serving_deployment(image: str) -> dict[str, Any]:
    resources = {"cpu": "1", "memory": "1Gi"}
    return restricted_deployment(
        "model",
        {
            "name": "server",
            "image": image,
            "command": ["sleep", "infinity"],
            "envFrom": [{"configMapRef": {"name": ADVICE, "optional": True}}],
            "resources": {"requests": dict(resources), "limits": dict(resources)},
        },
        replicas=0,
        metadata={
            "labels": {"tf-thread-advisor.io/calibrate": "true"},
            "annotations": {
                "tf-thread-advisor.io/model": MODEL_PATH,
                "tf-thread-advisor.io/budget": BUDGET,
            },
        },
    )


def _decisions(proc: Any) -> list[dict[str, Any]]:
    decisions: list[dict[str, Any]] = json.loads(proc.stdout)["decisions"]
    return decisions


def _calibration_jobs(cluster: Cluster, ns: str) -> list[dict[str, Any]]:
    return cluster.items(ns, "jobs", "-l", "app.kubernetes.io/component=calibration")


def test_the_planners_cronjob_derives_a_calibration_in_the_serving_shape(
    cluster: Cluster, fleet: str
) -> None:
    cluster.kubectl("-n", fleet, "create", "job", "--from", f"cronjob/{PLANNER}", "plan-1")
    assert cluster.wait_job(fleet, "plan-1", 300) == "Complete", cluster.describe(fleet)
    (job,) = _calibration_jobs(cluster, fleet)
    name = job["metadata"]["name"]
    assert cluster.wait_job(fleet, name, 900) == "Complete", cluster.describe(fleet)
    cm = cluster.get(fleet, "configmap", ADVICE)
    assert cm is not None, cluster.describe(fleet)
    node = json.loads(cm["metadata"]["annotations"]["tf-thread-advisor.io/provenance"])
    # Guaranteed with one whole CPU under the static policy: the kubelet gave the pod one CPU of
    # its own (not CPU 0, which kubeReserved keeps in the shared pool)
    assert node["affinity_cpus"] == [1], node
    assert node["effective_cpus"] == 1.0, node
    assert node["cpus_exclusive"] is True, node
    # and, since 1.34, no CFS quota on a container with exclusive CPUs
    assert "quota_cpus" not in node, node
    planned = cluster.advisor("plan", "--namespace", fleet, "--format", "json")
    assert planned.returncode == 0, planned.stdout + planned.stderr
    (decision,) = _decisions(planned)
    assert decision["decision"] == "fits", decision


def test_dry_run_server_creates_nothing_and_a_quota_refusal_is_failed(
    cluster: Cluster, fleet: str
) -> None:
    dry = cluster.advisor("plan", "--namespace", fleet, "--dry-run=server", "--format", "json")
    assert dry.returncode == 0, dry.stderr
    (decision,) = _decisions(dry)
    assert decision["decision"] == "calibrate", decision
    assert _calibration_jobs(cluster, fleet) == []
    cluster.apply(
        fleet,
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "no-jobs"},
            "spec": {"hard": {"count/jobs.batch": "0"}},
        },
    )
    refused = cluster.advisor("plan", "--namespace", fleet, "--apply", "--format", "json")
    assert refused.returncode == 17, refused.stderr
    (decision,) = _decisions(refused)
    assert decision["decision"] == "failed", decision
    assert "exceeded quota" in json.dumps(decision), decision
    assert _calibration_jobs(cluster, fleet) == []


def test_the_planners_token_may_do_only_what_plan_needs(cluster: Cluster, fleet: str) -> None:
    token = cluster.token(fleet, PLANNER)
    allowed = [("list", "deployments"), ("list", "configmaps"), ("create", "jobs")]
    for verb, resource in allowed:
        proc = cluster.as_token(token, "-n", fleet, "auth", "can-i", verb, resource)
        assert proc.stdout.strip() == "yes", (verb, resource, proc.stdout, proc.stderr)
    refused = [
        ("get", "secrets"),
        ("create", "configmaps"),
        ("delete", "jobs"),
        ("create", "pods"),
        ("patch", "deployments"),
    ]
    for verb, resource in refused:
        proc = cluster.as_token(token, "-n", fleet, "auth", "can-i", verb, resource)
        assert proc.stdout.strip() == "no", (verb, resource, proc.stdout, proc.stderr)
    other = cluster.as_token(token, "-n", "default", "auth", "can-i", "list", "deployments")
    assert other.stdout.strip() == "no"
