"""The one Kubernetes release the real-cluster tier builds and runs, and why that one.

v1.34 is the newest minor whose kubelet starts on a cgroup v1 node without `failCgroupV1: false`
(KEP-5573 made 1.35 refuse v1 by default) and that still supports containerd 1.x (Debian
bookworm ships 1.6.20). The patch is the newest v1.34 the Go module proxy served when this was
pinned. etcd is the server module that release itself requires (go.mod), so the pair is the one
upstream tests together, and above the 3.5.13 that watches need.
"""

from __future__ import annotations

KUBERNETES = "v1.34.4"
#: the staging modules' version for KUBERNETES (k8s.io/X v0.MINOR.PATCH)
STAGING = "v0." + KUBERNETES.removeprefix("v1.")
ETCD = "v3.6.4"
#: the series production's judge joins pods to workloads and rollouts with (kube_pod_owner,
#: kube_replicaset_owner, kube_pod_start_time). v2.16 is the newest the Go module proxy serves
#: (v2.17 is refused); its client-go v0.33 lists and watches the v1 APIs 1.34 serves.
#: sum.golang.org's mirror on the proxy has no record of it nor of its k8s.io/sample-controller,
#: so those two (KUBE_STATE_METRICS_NOSUMDB) are taken on the proxy's word; every other module
#: is checked as usual
KUBE_STATE_METRICS = "v2.16.0"
KUBE_STATE_METRICS_NOSUMDB = "k8s.io/kube-state-metrics,k8s.io/sample-controller"

#: binary name -> Go package, all built by one `go build` so they share the compiling
BINARIES = {
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "kubelet": "k8s.io/kubernetes/cmd/kubelet",
    "kube-proxy": "k8s.io/kubernetes/cmd/kube-proxy",
    "etcd": "go.etcd.io/etcd/server/v3",
}
