"""Debian's Prometheus inside the cluster's network namespace, scraping the kubelet's cAdvisor
endpoint as its own identity (pki.py's `prometheus`, granted nodes/metrics by the ClusterRole
below), reached from the host through the forwarder on 127.0.0.1:HOST_PROMETHEUS_PORT."""

from __future__ import annotations

import shutil
import time
import urllib.request

import yaml

from testkit.realcluster import cluster
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
                }
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
