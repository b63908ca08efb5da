#!/usr/bin/env bash
# `make image`: builds the Dockerfile with podman for each of PLATFORMS into the project's own
# store (.tools/podman, see scripts/image-lib.sh), tags each as IMAGE-ARCH and gathers them in the
# local manifest list IMAGE, which `scripts/podman manifest push --all IMAGE docker://...` pushes.
# Sets up what it needs first, as root (scripts/image-setup.sh: podman, qemu + binfmt for a foreign
# platform, a debootstrap-built base image per platform).
#
#   PLATFORMS  comma-separated, default: this machine's (linux/amd64 or linux/arm64)
#   IMAGE      default: localhost/tf-thread-advisor:<version in pyproject.toml>
#
# The build is a cross-build (see the Dockerfile): pip runs natively, only the final stage's
# apt-get runs under emulation. podman 4.3 does not define BUILDPLATFORM/TARGETPLATFORM for FROM
# lines the way buildx does, so they are passed as build args (buildx sets the same values).
set -euo pipefail
# shellcheck source=scripts/image-lib.sh
source "$(dirname "$0")/image-lib.sh"
cd "$IMAGE_LIB_ROOT"

PLATFORMS="${PLATFORMS:-$(host_platform)}"
VERSION="$(python3 -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')"
IMAGE="${IMAGE:-localhost/tf-thread-advisor:$VERSION}"
HOST_CA=/etc/ssl/certs/ca-certificates.crt

# the stages that run on the build machine need its own base image too
bash scripts/image-setup.sh "$(host_platform),$PLATFORMS"

build_args=(--network host --pull=never --build-arg "BUILDPLATFORM=$(host_platform)")
if [[ -f "$HOST_CA" ]]; then
  # pip in the build trusts what the host trusts; a build arg, so it never lands in the image
  build_args+=(-v "$HOST_CA:/run/host-ca.crt:ro" --build-arg PIP_CERT=/run/host-ca.crt)
fi

IFS=',' read -r -a platforms <<<"$PLATFORMS"
images=()
for platform in "${platforms[@]}"; do
  arch="$(platform_arch "$platform")"
  start=$SECONDS
  # the deps stage gets a tag of its own, so pruning old builds keeps its (slow) cache
  for target in "--target=deps -t $IMAGE-deps-$arch" "-t $IMAGE-$arch"; do
    # shellcheck disable=SC2086  # target holds two words on purpose
    "${PODMAN[@]}" build "${build_args[@]}" --platform "$platform" \
      --build-arg "TARGETPLATFORM=$platform" $target .
  done
  image_log "built $IMAGE-$arch in $((SECONDS - start)) s: $("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE-$arch") bytes"
  images+=("$IMAGE-$arch")
done

# the manifest list is made anew, so it holds exactly this run's platforms
if "${PODMAN[@]}" manifest exists "$IMAGE"; then
  "${PODMAN[@]}" manifest rm "$IMAGE" >/dev/null
fi
"${PODMAN[@]}" manifest create "$IMAGE" >/dev/null
for image in "${images[@]}"; do
  "${PODMAN[@]}" manifest add "$IMAGE" "containers-storage:$image" >/dev/null
done
# vfs stores every layer as a full copy: drop the untagged leftovers of earlier builds
"${PODMAN[@]}" image prune -f >/dev/null
image_log "manifest list $IMAGE: ${images[*]}"
