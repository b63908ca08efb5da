"""Production on the real cluster: Debian's Prometheus scrapes the kubelet's own cAdvisor
endpoint (testkit/realcluster/prometheus.py), a serving Deployment under `limits.cpu: 500m` runs a
TensorFlow model flat out with TF's default pools (as many threads as the node's CPUs), and the
series the advisor's production judge reads are there for its pod, with the labels it selects on
and the throttling the kubelet's quota causes. `status --prometheus-url` reads them and gives the
consumer a verdict: on pods minutes old, `unknown`, saying how much after-window it lacks, never a
verdict drawn from minutes (the judge's days of history cannot be had in a CI run).

kube-state-metrics is not run: only the pods gone since the advice need its ownership series,
and here the live pods are named directly, as status does for them."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from typing import Any

import pytest

from testkit.realcluster import cluster as realcluster
from testkit.realcluster import prometheus
from tests.e2e.cluster import ADVICE, Cluster, publish, restricted_deployment, wait_for

pytestmark = pytest.mark.e2e

#: TF's defaults, flat out: a matmul loop with both pools sized from the affinity mask
BUSY = """
import tensorflow as tf
x = tf.random.normal((384, 384))
step = tf.function(lambda: tf.linalg.matmul(x, x))
while True:
    step()
"""


def _query(url: str, promql: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(
        f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}", timeout=10
    ) as r:
        answer = json.loads(r.read())
    assert answer["status"] == "success", answer
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def _busy(image: str) -> dict[str, Any]:
    return restricted_deployment(
        "busy",
        {
            "name": "model",
            "image": image,
            "command": ["python", "-c", BUSY],
            "env": [{"name": "TF_CPP_MIN_LOG_LEVEL", "value": "2"}],
            "envFrom": [{"configMapRef": {"name": ADVICE, "optional": True}}],
            "resources": {
                "requests": {"cpu": "250m", "memory": "1Gi"},
                "limits": {"cpu": "500m", "memory": "1Gi"},
            },
        },
        tmp=True,
    )


def test_prometheus_reads_the_kubelets_throttling_and_status_judges_it_honestly(
    cluster: Cluster, advisor_image: str, namespace: str
) -> None:
    try:
        url = prometheus.start()
    except realcluster.ClusterError as exc:
        pytest.fail(str(exc))
    cluster.apply(namespace, _busy(advisor_image))
    selector = f'namespace="{namespace}",container="model"'
    share = f"""sum(increase(container_cpu_cfs_throttled_periods_total{{{selector}}}[1m]))
        / sum(increase(container_cpu_cfs_periods_total{{{selector}}}[1m]))"""
    seen: list[float] = []

    def throttled() -> bool:
        result = _query(url, share)
        if result:
            seen.append(float(result[0]["value"][1]))
        return bool(seen) and seen[-1] > 0.5

    wait_for(
        throttled,
        240,
        f"the busy pod's throttling in Prometheus (seen {seen})",
        lambda: cluster.describe(namespace),
    )
    # the series carry the labels the judge selects on: namespace, pod and container of the pod
    (series,) = _query(url, f"container_cpu_cfs_throttled_periods_total{{{selector}}}")
    (pod,) = cluster.items(namespace, "pods", "-l", "app=busy")
    assert series["metric"]["pod"] == pod["metadata"]["name"], series
    assert _query(url, f"container_cpu_usage_seconds_total{{{selector}}}"), "no CPU usage series"

    # the advice, the Deployment restarted onto it, then status over the real series
    assert publish(cluster, namespace, (1, 1), "--restart", "deployment/busy") == 0

    def rolled() -> bool:
        pods = cluster.items(namespace, "pods", "-l", "app=busy")
        return len(pods) == 1 and pods[0]["status"].get("phase") == "Running"

    wait_for(rolled, 180, "the restarted busy pod", lambda: cluster.describe(namespace))
    status = cluster.advisor(
        "status", "--namespace", namespace, "--prometheus-url", url, "--format", "json"
    )
    assert status.returncode in (0, 1), status.stderr
    assert "Traceback" not in status.stderr
    ((advice,),) = [json.loads(status.stdout)]
    (consumer,) = advice["consumers"]
    assert consumer["name"] == "busy", consumer
    production = consumer["production"]
    # minutes of history: never a verdict, and saying what is missing
    assert production["verdict"] == "unknown", production
    assert production["cause"] == "no-after-window", production
    assert "too little data after the advice" in production["reason"], production
