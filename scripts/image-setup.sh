#!/usr/bin/env bash
# Sets up what building and running the image for PLATFORMS needs on this machine, as root; fast
# and changes nothing when all of it is there. Usage: image-setup.sh [linux/amd64,linux/arm64]
# - podman, runc, debootstrap from Debian, and .tools/containers.conf (podman is pointed at it
#   through CONTAINERS_CONF; /etc is not edited).
# - for a platform that is not this machine's: qemu-user-static and binfmt-support, binfmt_misc
#   mounted and the qemu entry enabled, so the foreign binaries run under emulation.
# - per platform, the base image docker.io/library/debian:bookworm-slim, built with debootstrap
#   since no container registry is reachable, into the project's own store (scripts/image-lib.sh)
#   as the matching entry of a local manifest list of that name (as on Docker Hub), so the
#   Dockerfile's `FROM` picks the right one for `--platform`. The root filesystem is kept as a
#   tarball in the machine-wide cache ($TFTA_CACHE) for the next checkout.
set -euo pipefail
# shellcheck source=scripts/image-lib.sh
source "$(dirname "$0")/image-lib.sh"

PLATFORMS="${1:-$(host_platform)}"

if [[ "$(id -u)" != "0" ]]; then
  image_log "must run as root (apt-get, binfmt_misc, debootstrap)"
  exit 1
fi

apt_install() {
  image_log "installing $* with apt"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "$@" >/dev/null
}

install_podman() {
  if command -v podman >/dev/null && command -v runc >/dev/null && command -v debootstrap >/dev/null; then
    return
  fi
  apt_install podman runc debootstrap
}

write_containers_conf() {
  mkdir -p "$TOOLS"
  cat >"$TOOLS/containers.conf.part" <<'EOF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
EOF
  mv "$TOOLS/containers.conf.part" "$TOOLS/containers.conf"
}

enable_emulation() {
  local entry="$1"
  if ! command -v qemu-aarch64-static >/dev/null || ! command -v update-binfmts >/dev/null; then
    apt_install qemu-user-static binfmt-support
  fi
  if ! mountpoint -q /proc/sys/fs/binfmt_misc; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  fi
  if [[ "$(head -n1 "/proc/sys/fs/binfmt_misc/$entry" 2>/dev/null)" != "enabled" ]]; then
    update-binfmts --enable "$entry"
  fi
  # F (fix binary): the kernel keeps the interpreter open, so it runs inside containers too
  grep -q '^flags:.*F' "/proc/sys/fs/binfmt_misc/$entry" || {
    image_log "/proc/sys/fs/binfmt_misc/$entry lacks the F flag: emulation would fail in containers"
    exit 1
  }
}

# debootstrap's minbase, trimmed the way Docker's official -slim images are (no docs, man pages,
# locales; dpkg told to keep them out of later installs too): 121 MB -> see the Dockerfile.
rootfs_tarball() {
  local arch="$1" tarball="$TFTA_CACHE/debian-$DEBIAN_SUITE-slim-$arch.tar"
  if [[ -s "$tarball" ]]; then
    echo "$tarball"
    return
  fi
  image_log "debootstrap $DEBIAN_SUITE for $arch (cached afterwards in $tarball)"
  mkdir -p "$TFTA_CACHE"
  local rootfs
  rootfs="$(mktemp -d)"
  # a foreign arch runs its second stage under qemu (binfmt F flag), which takes minutes
  debootstrap --arch="$arch" --variant=minbase "$DEBIAN_SUITE" "$rootfs" >"$rootfs.log" 2>&1 || {
    tail -n 20 "$rootfs.log" >&2
    rm -rf "$rootfs" "$rootfs.log"
    exit 1
  }
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
EOF
  find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$rootfs"/usr/share/{man,info,locale,lintian}/* \
    "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin \
    "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log "$rootfs"/var/log/apt/*
  # mktemp -d made the rootfs 0700: "/" of the image must be traversable by non-root users.
  chmod 0755 "$rootfs"
  tar -C "$rootfs" --numeric-owner -cf "$tarball.part" .
  mv "$tarball.part" "$tarball"
  rm -rf "$rootfs" "$rootfs.log"
  echo "$tarball"
}

base_image() {
  local arch="$1" tag="$BASE_IMAGE-$arch"
  if ! "${PODMAN[@]}" image exists "$tag"; then
    local tarball
    tarball="$(rootfs_tarball "$arch")"
    "${PODMAN[@]}" import --arch "$arch" --os linux --change 'CMD ["bash"]' "$tarball" "$tag" >/dev/null
    image_log "imported $tag"
  fi
  # the list holds one image per architecture; re-adding an arch replaces its entry
  if ! "${PODMAN[@]}" manifest exists "$BASE_IMAGE"; then
    "${PODMAN[@]}" manifest create "$BASE_IMAGE" >/dev/null
  fi
  local digest
  digest="$("${PODMAN[@]}" image inspect --format '{{.Digest}}' "$tag")"
  if ! "${PODMAN[@]}" manifest inspect "$BASE_IMAGE" | grep -q "$digest"; then
    "${PODMAN[@]}" manifest add --arch "$arch" --os linux "$BASE_IMAGE" "containers-storage:$tag" >/dev/null
  fi
}

install_podman
write_containers_conf
IFS=',' read -r -a platforms <<<"$PLATFORMS"
for platform in "${platforms[@]}"; do
  arch="$(platform_arch "$platform")"
  entry="$(qemu_binfmt_name "$arch")"
  if [[ -n "$entry" ]]; then
    enable_emulation "$entry"
  fi
  base_image "$arch"
done
