"""Debian's Prometheus inside the cluster's network namespace, scraping the kubelet's cAdvisor
endpoint as its own identity (pki.py's `prometheus`, granted nodes/metrics by the ClusterRole
below) and kube-state-metrics (built by build.py, listing pods and ReplicaSets as its own
identity), reached from the host through the forwarder on 127.0.0.1:HOST_PROMETHEUS_PORT. The
scrape configuration is kube-prometheus-stack's in what the advisor reads: cAdvisor's and
kube-state-metrics' own namespace/pod/container labels are kept (honor_labels)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from typing import Any

import yaml

from testkit.realcluster import build, cluster
from testkit.realcluster import layout as L

#: what Prometheus may read of the kubelet: its metrics, nothing else
RBAC = [
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "tfta-prometheus"},
        "rules": [{"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]}],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "tfta-prometheus"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "tfta-prometheus",
        },
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "tfta-prometheus"}
        ],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "tfta-kube-state-metrics"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
            {"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": ["list", "watch"]},
        ],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "tfta-kube-state-metrics"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "tfta-kube-state-metrics",
        },
        "subjects": [
            {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "User",
                "name": "tfta-kube-state-metrics",
            }
        ],
    },
]


def config(lay: L.Layout, interval_s: int) -> str:
    p = lay.pki
    return yaml.safe_dump(
        {
            "global": {
                "scrape_interval": f"{interval_s}s",
                "evaluation_interval": f"{interval_s}s",
            },
            "scrape_configs": [
                {
                    "job_name": "kubelet-cadvisor",
                    "scheme": "https",
                    "metrics_path": "/metrics/cadvisor",
                    # cAdvisor's own namespace/pod/container labels are the ones the advisor reads
                    "honor_labels": True,
                    "tls_config": {
                        "ca_file": str(p / "ca.crt"),
                        "cert_file": str(p / "prometheus.crt"),
                        "key_file": str(p / "prometheus.key"),
                    },
                    "static_configs": [{"targets": [f"{L.NODE_IP}:10250"]}],
                },
                {
                    "job_name": "kube-state-metrics",
                    "honor_labels": True,
                    "static_configs": [{"targets": [f"{L.NODE_IP}:{L.KUBE_STATE_METRICS_PORT}"]}],
                },
            ],
        }
    )


def url() -> str:
    return f"http://127.0.0.1:{L.HOST_PROMETHEUS_PORT}"


def start(interval_s: int = 5) -> str:
    """Start Prometheus (once) and return its URL on the host's loopback."""
    binary = shutil.which("prometheus")
    if binary is None:
        raise cluster.ClusterError("prometheus: not installed (apt-get install prometheus)")
    lay = L.layout()
    cluster.kubectl(lay, "apply", "-f", "-", check=True, stdin=yaml.safe_dump_all(RBAC))
    (lay.config / "prometheus.yml").write_text(config(lay, interval_s))
    cluster.start(
        lay,
        "kube-state-metrics",
        [
            str(build.kube_state_metrics()),
            f"--kubeconfig={lay.config / 'kube-state-metrics.kubeconfig'}",
            "--resources=pods,replicasets",
            f"--host={L.NODE_IP}",
            f"--port={L.KUBE_STATE_METRICS_PORT}",
            f"--telemetry-host={L.NODE_IP}",
            f"--telemetry-port={L.KUBE_STATE_METRICS_TELEMETRY_PORT}",
        ],
    )
    data = lay.root / "prometheus"
    data.mkdir(exist_ok=True)
    cluster.start(
        lay,
        "prometheus",
        [
            binary,
            f"--config.file={lay.config / 'prometheus.yml'}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address={L.NODE_IP}:{L.PROMETHEUS_PORT}",
        ],
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url()}/-/ready", timeout=2) as answer:
                if answer.status == 200:
                    return url()
        except OSError:
            time.sleep(0.5)
    raise cluster.ClusterError(
        f"prometheus: not ready in 60 s: {cluster.reason(lay, 'prometheus')}"
    )


def query(promql: str, at: float | None = None) -> dict[str, Any]:
    """One instant query's ``data`` (ClusterError when Prometheus refuses it)."""
    form = {"query": promql, **({"time": f"{at:.3f}"} if at is not None else {})}
    request = urllib.request.Request(
        f"{url()}/api/v1/query", data=urllib.parse.urlencode(form).encode()
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        body = json.loads(answer.read())
    if body.get("status") != "success":
        raise cluster.ClusterError(f"prometheus refused {promql!r}: {body}")
    data: dict[str, Any] = body["data"]
    return data


def backfill(text: str, probe: str, at: float, timeout_s: float = 150.0) -> None:
    """Load ``text`` (OpenMetrics) into the running server's storage beside what it scrapes:
    promtool writes the blocks, they are moved into the data directory, and the server's own
    block reload (once a minute) takes them in. Waits until ``probe`` has a value at ``at``."""
    promtool = shutil.which("promtool")
    if promtool is None:
        raise cluster.ClusterError("promtool: not installed (apt-get install prometheus)")
    lay = L.layout()
    work = lay.root / "backfill"
    shutil.rmtree(work, ignore_errors=True)
    (work / "blocks").mkdir(parents=True)
    (work / "series.om").write_text(text)
    made = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(work / "series.om"),
         str(work / "blocks")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if made.returncode != 0:
        raise cluster.ClusterError(f"promtool: {(made.stderr or made.stdout).strip()[-500:]}")
    data = lay.root / "prometheus"
    for block in (work / "blocks").iterdir():
        shutil.move(str(block), data / block.name)
    deadline = time.monotonic() + timeout_s
    while not query(probe, at)["result"]:
        if time.monotonic() > deadline:
            raise cluster.ClusterError(f"prometheus: no backfilled {probe} after {timeout_s:.0f} s")
        time.sleep(2)
