"""Faults on the real cluster, each as the real controllers and kubelet handle it:

- the API server restarted while the Job's pod sweeps, and the pod then evicted (a node drain):
  the eviction's DisruptionTarget condition is ignored by the Job's podFailurePolicy, the Job
  controller starts another pod, and exactly one advice is written, whole;
- a model that is not there: the advisor's exit code 4 is in the FailJob rule, so the Job fails
  at once, with one pod, whatever backoffLimit allows;
- a calibration pod over its memory limit: the kernel's OOM killer ends its children, the
  advisor says so in one line with exit 4, and the Job fails at once as the table says.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from testkit.realcluster import cluster as realcluster
from tests.e2e.cluster import ADVICE, Cluster, chart_values, helm_install, the_job, wait_for

pytestmark = pytest.mark.e2e


def _pods(cluster: Cluster, namespace: str, job: str) -> list[dict[str, Any]]:
    return cluster.items(namespace, "pods", "-l", f"job-name={job}")


def _running_pod(cluster: Cluster, namespace: str, job: str) -> str:
    found: list[str] = []

    def running() -> bool:
        for pod in _pods(cluster, namespace, job):
            if pod["status"].get("phase") == "Running":
                found.append(pod["metadata"]["name"])
                return True
        return False

    wait_for(running, 300, f"a running pod of {job}", lambda: cluster.describe(namespace))
    return found[0]


def _condition(job: dict[str, Any], kind: str) -> dict[str, Any]:
    (cond,) = [c for c in job["status"].get("conditions", []) if c["type"] == kind]
    return cond


def test_an_api_server_restart_and_an_eviction_mid_sweep_still_write_one_advice(
    cluster: Cluster, advisor_image: str, namespace: str, tmp_path: Path
) -> None:
    values = chart_values(
        advisor_image,
        defaults={"budget": 60, "objective": "latency", "batchSize": 1, "concurrency": 1},
    )
    helm_install(cluster, namespace, "faults", values, tmp_path)
    name = the_job(cluster, namespace)["metadata"]["name"]
    first = _running_pod(cluster, namespace, name)
    time.sleep(10)
    realcluster.restart("kube-apiserver", pause_s=5)
    wait_for(
        lambda: cluster.run("kubectl", "get", "--raw=/readyz").returncode == 0,
        120,
        "the API server back",
    )
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": first, "namespace": namespace},
    }
    cluster.kubectl(
        "create",
        "--raw",
        f"/api/v1/namespaces/{namespace}/pods/{first}/eviction",
        "-f",
        "-",
        stdin=json.dumps(eviction),
    )
    assert cluster.wait_job(namespace, name, 900) == "Complete", cluster.describe(namespace)
    job = cluster.get(namespace, "job", name) or {}
    # the evicted pod's DisruptionTarget condition matched the Ignore rule: not counted as a
    # failure (status.failed stays 0, backoffLimit untouched), and a successor pod completed
    assert job["status"].get("failed", 0) == 0, job["status"]
    assert job["status"].get("succeeded") == 1, job["status"]
    (done,) = _pods(cluster, namespace, name)
    assert done["metadata"]["name"] != first
    cms = [
        c
        for c in cluster.items(namespace, "configmaps")
        if c["metadata"]["name"] != "kube-root-ca.crt"
    ]
    assert [c["metadata"]["name"] for c in cms] == [ADVICE]
    check = cluster.advisor("validate", "--configmap", ADVICE, "--namespace", namespace)
    assert check.returncode == 0, check.stderr


def test_an_exit_code_of_the_table_fails_the_job_at_once(
    cluster: Cluster, advisor_image: str, namespace: str, tmp_path: Path
) -> None:
    values = chart_values(
        advisor_image, target={"model": {"source": "image", "path": "/no/such/model"}}
    )
    helm_install(cluster, namespace, "missing", values, tmp_path)
    name = the_job(cluster, namespace)["metadata"]["name"]
    assert cluster.wait_job(namespace, name, 300) == "Failed", cluster.describe(namespace)
    job = cluster.get(namespace, "job", name) or {}
    assert _condition(job, "Failed")["reason"] == "PodFailurePolicy", job["status"]
    assert job["status"]["failed"] == 1, job["status"]
    (pod,) = _pods(cluster, namespace, name)
    (state,) = pod["status"]["containerStatuses"]
    assert state["state"]["terminated"]["exitCode"] == 4, state
    assert cluster.get(namespace, "configmap", ADVICE) is None


def test_a_calibration_over_its_memory_limit_is_killed_and_the_job_fails(
    cluster: Cluster, advisor_image: str, namespace: str, tmp_path: Path
) -> None:
    tight = {
        "requests": {"cpu": "500m", "memory": "200Mi"},
        "limits": {"cpu": "1", "memory": "200Mi"},
    }
    values = chart_values(advisor_image, target={"resources": tight})
    helm_install(cluster, namespace, "oom", values, tmp_path)
    name = the_job(cluster, namespace)["metadata"]["name"]
    assert cluster.wait_job(namespace, name, 600) == "Failed", cluster.describe(namespace)
    (pod,) = _pods(cluster, namespace, name)
    (state,) = pod["status"]["containerStatuses"]
    terminated = state["state"]["terminated"]
    log = cluster.kubectl("-n", namespace, "logs", pod["metadata"]["name"], check=False)
    # The kernel killed the largest process of the container's cgroup: the trial server, then
    # the model's inspection child. The advisor read the cgroup's oom_kill count and said so in
    # one line, exit 4 (model), which the FailJob rule ends at once; the kubelet, seeing the
    # cgroup's OOM event, reports the container OOMKilled.
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 4), terminated
    assert "out of memory (memory cgroup oom_kill)" in log, log[-2000:]
    job = cluster.get(namespace, "job", name) or {}
    assert _condition(job, "Failed")["reason"] == "PodFailurePolicy", job["status"]
    assert cluster.get(namespace, "configmap", ADVICE) is None
