"""The components' configuration files, written from the layout (pure text, no processes)."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import yaml

from testkit.realcluster import layout as L


def kubeconfig(pki: Path, identity: str, server: str) -> str:
    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "tfta",
                    "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")},
                }
            ],
            "users": [
                {
                    "name": identity,
                    "user": {
                        "client-certificate-data": b64(f"{identity}.crt"),
                        "client-key-data": b64(f"{identity}.key"),
                    },
                }
            ],
            "contexts": [{"name": "tfta", "context": {"cluster": "tfta", "user": identity}}],
            "current-context": "tfta",
        }
    )


def inside_server() -> str:
    return f"https://{L.NODE_IP}:{L.API_PORT}"


def host_server() -> str:
    return f"https://127.0.0.1:{L.HOST_API_PORT}"


def containerd_toml(lay: L.Layout) -> str:
    d = lay.containerd
    return f"""version = 2
root = "{d / "root"}"
state = "{d / "state"}"
# the CRI plugin alone: nothing here is pulled, and no other plugin's state lands outside root
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "{lay.containerd_socket}"

[ttrpc]
  address = "{lay.containerd_socket}.ttrpc"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{L.SANDBOX_IMAGE}"
  # pod network namespaces under the state directory, so `down` finds every one
  netns_mounts_under_state_dir = true
  enable_cdi = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    discard_unpacked_layers = false
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # the kubelet's cgroupfs driver: both must name cgroups the same way
        SystemdCgroup = false
        # runc behind a wrapper that raises negative oom_score_adj to 0 (runc_wrapper.py says why)
        BinaryName = "{lay.config / "runc"}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{lay.cni_conf}"
    max_conf_num = 1
"""


def cni_conflist(lay: L.Layout) -> str:
    return json.dumps(
        {
            "cniVersion": "0.4.0",
            "name": "tfta",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": L.BRIDGE,
                    "isGateway": True,
                    # nothing leaves the namespace, so nothing needs masquerading
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": L.POD_CIDR, "gateway": L.POD_GATEWAY}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(lay.cni_state),
                    },
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        },
        indent=2,
    )


def kubelet_yaml(lay: L.Layout) -> str:
    pki = lay.pki
    return yaml.safe_dump(
        {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(pki / "ca.crt")},
            },
            "authorization": {"mode": "Webhook"},
            "tlsCertFile": str(pki / "kubelet-serving.crt"),
            "tlsPrivateKeyFile": str(pki / "kubelet-serving.key"),
            "address": L.NODE_IP,
            "readOnlyPort": 0,
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": "/" + L.CGROUP_ROOT,
            "cgroupsPerQOS": True,
            "containerRuntimeEndpoint": f"unix://{lay.containerd_socket}",
            "failSwapOn": False,
            # imported images cannot be pulled back
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
            # Guaranteed pods with whole CPUs get exclusive CPUs, as on a tuned node; the static
            # policy needs some CPU reserved, and 100m keeps 1.9 of the 2 CPUs allocatable
            "cpuManagerPolicy": "static",
            "kubeReserved": {"cpu": "100m"},
            "clusterDomain": "cluster.local",
            "clusterDNS": [],
            "resolvConf": "/etc/resolv.conf",
            "rotateCertificates": False,
            "serverTLSBootstrap": False,
            "registerNode": True,
            "staticPodPath": "",
            "podPidsLimit": 4096,
            "maxPods": 40,
            "nodeStatusUpdateFrequency": "5s",
            "syncFrequency": "10s",
            "fileCheckFrequency": "10s",
            "shutdownGracePeriod": "0s",
            "logging": {"format": "text"},
        }
    )


def kube_proxy_yaml(lay: L.Layout) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(lay.config / "kube-proxy.kubeconfig")},
            "mode": "iptables",
            "hostnameOverride": L.NODE_NAME,
            "bindAddress": L.NODE_IP,
            "clusterCIDR": L.POD_CIDR,
            "metricsBindAddress": "127.0.0.1:10249",
            "healthzBindAddress": "127.0.0.1:10256",
            # a network namespace of our own cannot set the conntrack table's size: leave it
            "conntrack": {
                "maxPerCore": 0,
                "min": 0,
                "tcpEstablishedTimeout": "0s",
                "tcpCloseWaitTimeout": "0s",
            },
        }
    )


def write_all(lay: L.Layout) -> None:
    cfg = lay.config
    cfg.mkdir(parents=True, exist_ok=True)
    for identity in (
        "controller-manager",
        "scheduler",
        "kubelet",
        "kube-proxy",
        "prometheus",
        "kube-state-metrics",
    ):
        (cfg / f"{identity}.kubeconfig").write_text(kubeconfig(lay.pki, identity, inside_server()))
    (cfg / "admin-inside.kubeconfig").write_text(kubeconfig(lay.pki, "admin", inside_server()))
    lay.kubeconfig.write_text(kubeconfig(lay.pki, "admin", host_server()))
    lay.kubeconfig.chmod(0o600)
    (cfg / "containerd.toml").write_text(containerd_toml(lay))
    wrapper = cfg / "runc"
    wrapper.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
        "from testkit.realcluster.runc_wrapper import main\n"
        "main(sys.argv[1:])\n"
    )
    wrapper.chmod(0o755)
    (cfg / "kubelet.yaml").write_text(kubelet_yaml(lay))
    (cfg / "kube-proxy.yaml").write_text(kube_proxy_yaml(lay))
    lay.cni_conf.mkdir(parents=True, exist_ok=True)
    (lay.cni_conf / "10-tfta.conflist").write_text(cni_conflist(lay))
