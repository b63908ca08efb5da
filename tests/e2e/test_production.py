"""Production on the real cluster: a serving Deployment kept busy by a load generator in the
cluster is throttled under TF's default, then advised, and `status --prometheus-url` judges it on
the series Debian's Prometheus scraped from the kubelet's cAdvisor and from kube-state-metrics
(testkit/realcluster/prometheus.py), both built or installed here.

The server answers one request at a time (a single-threaded HTTP server, as a sync worker does)
with TensorFlow matmuls; the load generator, a Deployment of its own, keeps four requests
waiting on it through its Service. Under `limits.cpu: 1200m` on the 2-CPU node, TF's default
pools (two intra-op threads) want two CPUs and are throttled in most CFS periods; the advice
(one thread each) wants one and is not.

The judge needs 7 or more earlier days at the after-window's hours. Those are made from the
before-phase's real series (tests/e2e/history.py) and loaded beside the live scrape; the
after-windows are the live scrape. The windows are short (`--window 5m --warm-up 1m`), so the
verdict is there minutes after the rollout: the first test (run first) sets the workload up,
measures and advises it; the second (run after the others, before teardown) waits for the
first full after-window and reads the verdict."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from testkit.realcluster import cluster as realcluster
from testkit.realcluster import prometheus
from tests.e2e import history
from tests.e2e.cluster import ADVICE, Cluster, publish, restricted_deployment, wait_for

pytestmark = pytest.mark.e2e

#: one request at a time, each a few matmuls on TF's pools as the environment sizes them
SERVE = """
import http.server
import tensorflow as tf
x = tf.random.normal((512, 512))
step = tf.function(lambda: tf.reduce_sum(tf.linalg.matmul(tf.linalg.matmul(x, x), x)))
step()
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = str(float(step())).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("", 8080), Handler).serve_forever()
"""
#: four clients in a closed loop, through the Service (its environment variables: no DNS here)
LOAD = """
import os, threading, time, urllib.request
url = f"http://{os.environ['SERVE_SERVICE_HOST']}:{os.environ['SERVE_SERVICE_PORT']}/"
def client():
    while True:
        try:
            urllib.request.urlopen(url, timeout=10).read()
        except OSError:
            time.sleep(0.2)
for _ in range(4):
    threading.Thread(target=client, daemon=True).start()
while True:
    time.sleep(60)
"""
WINDOW = ("--window", "5m", "--warm-up", "1m")
#: the before-phase's throttled share at least (alone on the node about 0.7; less beside other
#: work, which takes CPU time from the server)
THROTTLED = 0.2
#: the before-phase read back for the history: long enough for a few dozen scrapes
BEFORE_S = 150
#: earlier days made: more than the 7 the test needs
DAYS = tuple(range(1, 10))
#: after the advice: the KSM rollout step (up to two 5-minute steps), the warm-up, a window
VERDICT_WITHIN_S = 25 * 60


@dataclass
class Workload:
    """What the first test left for the second."""

    namespace: str = ""
    url: str = ""
    before_share: float = 0.0
    advised_at: float = 0.0
    problems: list[str] = field(default_factory=list)


WORKLOAD = Workload()


def _service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "serve"},
        "spec": {"selector": {"app": "serve"}, "ports": [{"port": 8080}]},
    }


def _serve(image: str) -> dict[str, Any]:
    return restricted_deployment(
        "serve",
        {
            "name": "model",
            "image": image,
            "command": ["python", "-c", SERVE],
            "env": [{"name": "TF_CPP_MIN_LOG_LEVEL", "value": "2"}],
            "envFrom": [{"configMapRef": {"name": ADVICE, "optional": True}}],
            "ports": [{"containerPort": 8080}],
            "resources": {
                # a weight that holds its own beside other work on the node; small enough
                # that the other tests' pods still fit beside it
                "requests": {"cpu": "500m", "memory": "1Gi"},
                "limits": {"cpu": "1200m", "memory": "1Gi"},
            },
        },
        tmp=True,
    )


def _load(image: str) -> dict[str, Any]:
    return restricted_deployment(
        "load",
        {
            "name": "load",
            "image": image,
            "command": ["python", "-c", LOAD],
            "resources": {
                "requests": {"cpu": "50m", "memory": "128Mi"},
                "limits": {"cpu": "200m", "memory": "128Mi"},
            },
        },
    )


def _share(namespace: str, span: str, at: float | None = None) -> float | None:
    selector = f'namespace="{namespace}",container="model"'
    result = prometheus.query(
        f"sum(increase(container_cpu_cfs_throttled_periods_total{{{selector}}}[{span}]))"
        f" / sum(increase(container_cpu_cfs_periods_total{{{selector}}}[{span}]))",
        at,
    )["result"]
    return float(result[0]["value"][1]) if result else None


def _one_pod(cluster: Cluster, namespace: str, app: str) -> dict[str, Any] | None:
    pods = cluster.items(namespace, "pods", "-l", f"app={app}")
    running = [p for p in pods if p["status"].get("phase") == "Running"]
    return running[0] if len(pods) == 1 and running else None


@pytest.mark.e2e_first
def test_a_served_model_under_load_is_throttled_then_advised(
    cluster: Cluster, advisor_image: str
) -> None:
    try:
        WORKLOAD.url = prometheus.start()
    except realcluster.ClusterError as exc:
        pytest.fail(str(exc))
    namespace = WORKLOAD.namespace = cluster.namespace("e2e-prod")
    cluster.apply(namespace, _service())
    # the Service first: its environment variables are in the pods created after it
    cluster.apply(namespace, _serve(advisor_image), _load(advisor_image))
    seen: list[float | None] = []

    def throttled() -> bool:
        seen.append(_share(namespace, "1m"))
        return (seen[-1] or 0.0) > THROTTLED

    wait_for(throttled, 300, f"throttling (seen {seen})", lambda: cluster.describe(namespace))
    # the series carry the labels the judge selects on, and kube-state-metrics names the pod's
    # owner chain
    old = _one_pod(cluster, namespace, "serve")
    assert old is not None, cluster.describe(namespace)
    pod = old["metadata"]["name"]
    replicaset = old["metadata"]["ownerReferences"][0]["name"]
    (owner,) = prometheus.query(f'kube_pod_owner{{namespace="{namespace}",pod="{pod}"}}')["result"]
    assert (owner["metric"]["owner_kind"], owner["metric"]["owner_name"]) == (
        "ReplicaSet",
        replicaset,
    ), owner
    (chain,) = prometheus.query(
        f'kube_replicaset_owner{{namespace="{namespace}",replicaset="{replicaset}"}}'
    )["result"]
    assert chain["metric"]["owner_name"] == "serve", chain
    time.sleep(BEFORE_S)
    ended = time.time()
    share = _share(namespace, f"{BEFORE_S}s", ended)
    assert share is not None and share > THROTTLED, share
    WORKLOAD.before_share = share
    raw = prometheus.query(history.selector(namespace, BEFORE_S), ended)["result"]

    # the earlier days, across the hours the after-windows will lie in
    text = history.days(
        raw, pod=pod, replicaset=replicaset, start=ended - 600, end=ended + 3600, back=DAYS
    )
    probe = f'kube_pod_owner{{namespace="{namespace}",pod="{pod}"}}'
    prometheus.backfill(text, probe, ended - DAYS[-1] * history.DAY_S)

    # on minutes of data after the advice: never a verdict, saying what is missing
    assert publish(cluster, namespace, (1, 1), "--restart", "deployment/serve") == 0
    WORKLOAD.advised_at = time.time()
    wait_for(
        lambda: (
            (p := _one_pod(cluster, namespace, "serve")) is not None
            and p["metadata"]["name"] != pod
        ),
        180,
        "the restarted server",
        lambda: cluster.describe(namespace),
    )
    early = _production(cluster, namespace)
    assert (early["verdict"], early["cause"]) == ("unknown", "no-after-window"), early
    assert "too little data after the advice" in early["reason"], early


def _production(cluster: Cluster, namespace: str) -> dict[str, Any]:
    status = cluster.advisor(
        "status", "--namespace", namespace, "--prometheus-url", WORKLOAD.url, *WINDOW,
        "--format", "json",
    )  # fmt: skip
    assert status.returncode in (0, 1), status.stderr
    assert "Traceback" not in status.stderr, status.stderr
    (advice,) = json.loads(status.stdout)
    (consumer,) = [c for c in advice["consumers"] if c["name"] == "serve"]
    production: dict[str, Any] = consumer["production"]
    return production


@pytest.mark.e2e_late
def test_status_judges_the_advice_on_the_real_series_against_the_days_before(
    cluster: Cluster,
) -> None:
    namespace = WORKLOAD.namespace
    if not WORKLOAD.advised_at:
        pytest.fail("the served model was not advised (see the test before)")
    found: list[dict[str, Any]] = []

    def judged() -> bool:
        found.append(_production(cluster, namespace))
        return found[-1]["verdict"] != "unknown" and not found[-1]["provisional"]

    wait_for(
        judged,
        max(60.0, WORKLOAD.advised_at + VERDICT_WITHIN_S - time.time()),
        f"a verdict on a full after-window (last: {found[-1:] or None})",
        lambda: cluster.describe(namespace),
    )
    production = found[-1]
    # throttled in most periods under TF's default, in hardly any on the advice
    assert production["verdict"] == "improved", production
    assert production["cause"] == "throttling", production
    assert (production["test"], production["alpha"]) == ("day-t", 0.05), production
    assert production["days"] >= 7, production
    assert production["p_value"] <= 0.05, production
    # the days' share is the before-phase's own, replayed; the after-window's is the live scrape
    assert abs(production["throttled_before"] - WORKLOAD.before_share) < 0.1, production
    assert production["throttled_after"] < WORKLOAD.before_share / 2, production
    assert "fell by more than 10 points" in production["reason"], production
    cluster.delete_namespace(namespace)
