"""The advisor image as the container tiers build and run it (tests/system/test_container.py,
tests/system/test_fleet_podman.py): podman on the project's own store (scripts/podman,
scripts/image-lib.sh), the image built by `make image`'s script; a rebuild with unchanged inputs is
served from the layer cache, so every module that needs the image may ask for it.

No pytest here (tests/support's rule); the skip-or-fail of a missing podman is the caller's, with
tests.support.real_parts.missing_real_part and the reason ``podman_missing`` gives.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from tests.support import REPO

#: the manifest list the tests build; each architecture is tagged IMAGE-ARCH
IMAGE = "localhost/tf-thread-advisor:test"
PODMAN_SCRIPT = REPO / "scripts" / "podman"
BUILD_TIMEOUT_S = 2400
#: runc, not crun: crun fails on this machine's cgroup v1 hybrid layout (REAL-PARTS section 3)
PODMAN = [str(PODMAN_SCRIPT), "--runtime", "runc"]


def podman_env() -> dict[str, str]:
    """The environment podman runs in; scripts/image-lib.sh sets the store and CONTAINERS_CONF
    (.tools/containers.conf) itself."""
    return dict(os.environ)


def podman_missing() -> str | None:
    """Why the podman tier cannot run here (None: it can)."""
    if os.geteuid() != 0:
        return "the podman tier runs as root (vfs storage, runc, cgroup v1 quotas)"
    if shutil.which("podman") is None or shutil.which("runc") is None:
        return "podman/runc not installed (run scripts/install-test-tools.sh as root)"
    return None


def build_image(platforms: str = "linux/amd64") -> str:
    """Builds IMAGE for ``platforms`` with scripts/build-image.sh (setting up what is missing)
    and returns the tag of the first platform's image (IMAGE-ARCH)."""
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "build-image.sh")],
        env={**podman_env(), "PLATFORMS": platforms, "IMAGE": IMAGE},
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, (
        f"image build failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    )
    arch = platforms.split(",", maxsplit=1)[0].split("/")[1]
    return f"{IMAGE}-{arch}"


def podman_out(*args: str, timeout: float = 120) -> str:
    """stdout of a quick podman query (inspect, info) that must succeed."""
    proc = subprocess.run(
        [*PODMAN, *args],
        env=podman_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return proc.stdout
