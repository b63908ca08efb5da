"""Job mode on the real cluster, as a platform team installs it: the chart (and the kustomize
base) into a namespace whose Pod Security admission enforces `restricted`. The Job is admitted,
runs as its ServiceAccount under the CFS quota the kubelet made from `limits.cpu: "1"`, reaches the
API server through the `kubernetes` Service, writes the advice ConfigMap and completes; `validate`
passes on what it wrote. Then its token is refused everything it was not granted."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.cluster import (
    ADVICE,
    ADVISOR_IMAGE,
    BUDGET,
    JOB_RESOURCES,
    Cluster,
    chart_values,
    helm_install,
    the_job,
)
from tests.support import REPO

pytestmark = pytest.mark.e2e


def _provenance(cm: dict[str, Any]) -> dict[str, Any]:
    return json.loads(cm["metadata"]["annotations"]["tf-thread-advisor.io/provenance"])


def _check_advice(cluster: Cluster, namespace: str, job: str) -> None:
    state = cluster.wait_job(namespace, job, 900)
    assert state == "Complete", cluster.describe(namespace)
    cm = cluster.get(namespace, "configmap", ADVICE)
    assert cm is not None, cluster.describe(namespace)
    assert {"TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"} <= set(
        cm["data"]
    )
    # the probe read the quota the kubelet wrote into the pod's cgroup: 1 CPU on a 2-CPU node
    node = _provenance(cm)
    assert node["quota_cpus"] == 1.0, node
    assert node["effective_cpus"] == 1.0, node
    assert len(node["affinity_cpus"]) == 2, node
    check = cluster.advisor("validate", "--configmap", ADVICE, "--namespace", namespace)
    assert check.returncode == 0, check.stderr
    assert f"intra={cm['data']['TF_NUM_INTRAOP_THREADS']} " in check.stdout, check.stdout


def _least_privilege(cluster: Cluster, namespace: str, serviceaccount: str) -> None:
    token = cluster.token(namespace, serviceaccount)
    # what it was granted: its own advice ConfigMap
    ok = cluster.as_token(token, "-n", namespace, "get", "configmap", ADVICE, "-o", "name")
    assert ok.returncode == 0, ok.stderr
    refused = {
        "write another ConfigMap": (
            "-n",
            namespace,
            "create",
            "configmap",
            "not-the-advice",
            "--from-literal=a=b",
        ),
        "read a Secret": ("-n", namespace, "get", "secrets"),
        "create a Job": ("-n", namespace, "create", "job", "sneaky", f"--image={ADVISOR_IMAGE}"),
        "touch another namespace": ("-n", "default", "get", "configmaps"),
    }
    for what, args in refused.items():
        proc = cluster.as_token(token, *args)
        assert proc.returncode != 0 and "forbidden" in proc.stderr.lower(), (
            f"the Job's token could {what}: {proc.stderr}"
        )


def test_the_chart_runs_under_restricted_pod_security_and_writes_its_advice(
    cluster: Cluster, advisor_image: str, namespace: str, tmp_path: Path
) -> None:
    helm_install(cluster, namespace, "e2e", chart_values(advisor_image), tmp_path)
    job = the_job(cluster, namespace)
    _check_advice(cluster, namespace, job["metadata"]["name"])
    pod_spec = job["spec"]["template"]["spec"]
    _least_privilege(cluster, namespace, pod_spec["serviceAccountName"])


def test_the_kustomize_base_runs_the_same(
    cluster: Cluster, advisor_image: str, namespace: str, tmp_path: Path
) -> None:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    repo, tag = advisor_image.rsplit(":", 1)
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(REPO / "deploy", overlay)],
                "images": [{"name": "tf-thread-advisor", "newName": repo, "newTag": tag}],
            }
        )
    )
    rendered = cluster.kubectl("kustomize", str(overlay), "--load-restrictor=LoadRestrictionsNone")
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    for doc in docs:
        if doc["kind"] == "Job":
            spec = doc["spec"]["template"]["spec"]
            for c in spec["containers"]:
                c["imagePullPolicy"] = "Never"
                c["resources"] = JOB_RESOURCES
                c["args"] = [
                    f"--budget={BUDGET}" if a.startswith("--budget=") else a
                    for a in c.get("args", [])
                ]
    cluster.apply(namespace, *docs)
    (job,) = [d for d in docs if d["kind"] == "Job"]
    _check_advice(cluster, namespace, job["metadata"]["name"])
