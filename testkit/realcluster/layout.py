"""Where the cluster lives on this machine: one data directory, one network namespace, fixed
addresses inside that namespace.

Every component runs inside a network namespace of the cluster's own (made by `up`, deleted by
`down`): the node's address, the pods' bridge, kube-proxy's iptables chains and every pod's traffic
stay inside it, and deleting it takes all of them away at once. The host reaches the API server
(and Prometheus, when a test starts one) only through loopback forwarders (forward.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

NETNS = "tfta-realcluster"
NODE_NAME = "tfta-node"
#: the node's own address: on an interface inside NETNS (DUMMY), never on the host
NODE_IP = "10.243.0.2"
POD_CIDR = "10.244.0.0/24"
POD_GATEWAY = "10.244.0.1"
SERVICE_CIDR = "10.96.0.0/24"
#: the `kubernetes` Service's ClusterIP (the first address of SERVICE_CIDR)
API_SERVICE_IP = "10.96.0.1"
API_PORT = 6443
PROMETHEUS_PORT = 9090
#: kube-state-metrics' metrics and its own telemetry, on the node's address
KUBE_STATE_METRICS_PORT = 8080
KUBE_STATE_METRICS_TELEMETRY_PORT = 8081
#: loopback ports on the host that forward into NETNS
HOST_API_PORT = int(os.environ.get("TFTA_CLUSTER_API_PORT", "16443"))
HOST_PROMETHEUS_PORT = int(os.environ.get("TFTA_CLUSTER_PROMETHEUS_PORT", "19090"))
#: the kubelet's cgroup root: every pod's cgroup sits below it, so `down` can find them all
CGROUP_ROOT = "tfta-realcluster"
BRIDGE = "cni0"
#: the node's interface: one end of a veth pair whose both ends are inside NETNS
DUMMY = "tfta0"
SANDBOX_IMAGE = "tfta.local/pause:3.10"


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def run(self) -> Path:
        """pid files, one per process `up` started"""
        return self.root / "run"

    @property
    def etcd(self) -> Path:
        return self.root / "etcd"

    @property
    def containerd(self) -> Path:
        return self.root / "containerd"

    @property
    def containerd_socket(self) -> Path:
        return self.containerd / "containerd.sock"

    @property
    def kubelet(self) -> Path:
        return self.root / "kubelet"

    @property
    def cni_conf(self) -> Path:
        return self.root / "cni" / "net.d"

    @property
    def cni_state(self) -> Path:
        return self.root / "cni" / "state"

    @property
    def config(self) -> Path:
        return self.root / "config"

    @property
    def kubeconfig(self) -> Path:
        """the admin's kubeconfig for the host, through the loopback forwarder"""
        return self.root / "admin.kubeconfig"

    @property
    def state(self) -> Path:
        """what `up` changed on the host that `down` must put back (JSON)"""
        return self.root / "host-state.json"


def layout() -> Layout:
    return Layout(Path(os.environ.get("TFTA_CLUSTER_DIR", "/var/lib/tfta-realcluster")))
