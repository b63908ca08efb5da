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

#: binary name -> Go package, all built by one `go build` so they share the compiling
BINARIES = {
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "kubelet": "k8s.io/kubernetes/cmd/kubelet",
    "kube-proxy": "k8s.io/kubernetes/cmd/kube-proxy",
    "etcd": "go.etcd.io/etcd/server/v3",
}
