# Shared by scripts/image-setup.sh, scripts/build-image.sh and scripts/podman (sourced, not run).
# One place for: the project's own podman store, the machine-wide download cache, platform names.
#
# The store lives under .tools/podman (its own --root/--runroot), never the machine-wide one, so no
# other build on this machine (other options, other build args) can hand its layers to ours.
# Downloads that are the same for every checkout (debootstrap root filesystems) are kept in a
# machine-wide cache, $TFTA_CACHE, default /var/cache/tf-thread-advisor: CI runs in a fresh clone
# each time, and this is what lets a second run on the same machine skip them.

IMAGE_LIB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$IMAGE_LIB_ROOT/.tools"
# podman records its store's path and refuses the same store by another one: a .tools shared
# between checkouts through a symlink (git worktrees) is named by its real path
if [[ -L "$TOOLS" ]]; then
  TOOLS="$(readlink -f "$TOOLS")"
fi
TFTA_CACHE="${TFTA_CACHE:-/var/cache/tf-thread-advisor}"
PODMAN_ROOT="${PODMAN_ROOT:-$TOOLS/podman}"
# crun fails on this machine's cgroup v1 hybrid layout; default_ulimits = [] because podman's
# default nofile/nproc ulimits fail setrlimit on this kernel. Written by image-setup.sh.
export CONTAINERS_CONF="$TOOLS/containers.conf"
PODMAN=(podman --root "$PODMAN_ROOT/root" --runroot "$PODMAN_ROOT/run" --storage-driver vfs)
#: the Dockerfile's default base; a local manifest list with one image per built architecture
BASE_IMAGE="docker.io/library/debian:bookworm-slim"
DEBIAN_SUITE="bookworm"

image_log() { echo "${0##*/}: $*" >&2; }

# linux/arm64 -> arm64 (Debian's and the OCI image's name for the architecture are the same)
platform_arch() {
  case "$1" in
    linux/amd64) echo amd64 ;;
    linux/arm64 | linux/arm64/v8) echo arm64 ;;
    *)
      image_log "unsupported platform $1 (linux/amd64 and linux/arm64 are)"
      return 1
      ;;
  esac
}

host_platform() {
  case "$(uname -m)" in
    x86_64) echo linux/amd64 ;;
    aarch64) echo linux/arm64 ;;
    *) uname -m ;;
  esac
}

# the qemu binfmt entry that runs this architecture's binaries here; empty for the host's own
qemu_binfmt_name() {
  local arch="$1"
  [[ "linux/$arch" == "$(host_platform)" ]] && return 0
  case "$arch" in
    arm64) echo qemu-aarch64 ;;
    amd64) echo qemu-x86_64 ;;
  esac
}
