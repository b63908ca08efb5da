"""The image as shipped: built from this checkout with podman, run read-only under a CPU limit.

podman stands in for docker (no Docker engine here): vfs storage, runc (crun fails on this cgroup v1
hybrid layout), host network for pip, the host CA bundle mounted for the build only, and
CONTAINERS_CONF pointing at .tools/containers.conf (written by scripts/install-test-tools.sh).
The image is built once per session; a rebuild with unchanged inputs is served from the layer cache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.models import ADVICE_ENV_NAMES
from tests.conftest import REPO, missing_real_part

pytestmark = pytest.mark.container

IMAGE = "localhost/tf-thread-advisor:test"
DEPS_IMAGE = "localhost/tf-thread-advisor-deps:test"
BASE_IMAGE = "docker.io/library/debian:bookworm-slim"
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
CONTAINERS_CONF = REPO / ".tools" / "containers.conf"
BUILD_TIMEOUT_S = 1800


def _podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


@pytest.fixture(scope="module")
def podman() -> list[str]:
    if os.geteuid() != 0:
        missing_real_part("the podman tier runs as root (vfs storage, runc, cgroup v1 quotas)")
    exe, runc = shutil.which("podman"), shutil.which("runc")
    if exe is None or runc is None:
        missing_real_part("podman/runc not installed (run scripts/install-test-tools.sh as root)")
    if not CONTAINERS_CONF.is_file():
        missing_real_part(f"{CONTAINERS_CONF} missing (run scripts/install-test-tools.sh)")
    assert exe is not None
    assert runc is not None
    cmd = [exe, "--storage-driver=vfs", "--runtime", runc]
    exists = subprocess.run(
        [*cmd, "image", "exists", BASE_IMAGE], env=_podman_env(), check=False, timeout=120
    )
    if exists.returncode != 0:
        missing_real_part(
            f"base image {BASE_IMAGE} missing (scripts/install-test-tools.sh builds it)"
        )
    return cmd


@pytest.fixture(scope="module")
def image(podman: list[str]) -> Iterator[str]:
    build = [*podman, "build", "--network", "host", "--pull=never"]
    if HOST_CA.is_file():
        # pip in the build trusts what the host trusts; a build arg, so it never lands in the image
        build += [
            "-v",
            f"{HOST_CA}:/run/host-ca.crt:ro",
            "--build-arg",
            "PIP_CERT=/run/host-ca.crt",
        ]
    # The deps stage gets a tag of its own so that pruning old builds keeps its (slow) cache.
    for tag_args in (["--target", "deps", "-t", DEPS_IMAGE], ["-t", IMAGE]):
        proc = subprocess.run(
            [*build, *tag_args, str(REPO)],
            env=_podman_env(),
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
        assert proc.returncode == 0, (
            f"image build failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    yield IMAGE
    # vfs stores every layer as a full copy: drop the untagged leftovers of earlier builds
    subprocess.run(
        [*podman, "image", "prune", "-f"],
        env=_podman_env(),
        capture_output=True,
        timeout=600,
        check=False,
    )


def _run(
    podman: list[str],
    image: str,
    *args: str,
    timeout: float = 600,
    cpus: str = "1.5",
    volumes: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """docker-run the way a cautious user (or a Job) does: read-only root, tmpfs /tmp, CPU limit."""
    cmd = [*podman, "run", "--rm", "--read-only", "--tmpfs", "/tmp:rw,size=512m"]
    for volume in volumes:
        cmd += ["-v", volume]
    cmd += ["--cpus", cpus, "--network", "none", image, *args]
    return subprocess.run(
        cmd, env=_podman_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def _inspect(podman: list[str], image: str) -> dict[str, Any]:
    proc = subprocess.run(
        [*podman, "image", "inspect", image],
        env=_podman_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    (info,) = json.loads(proc.stdout)
    config: dict[str, Any] = info["Config"]
    return config


def _assert_valid_configmap(text: str) -> dict[str, Any]:
    """Parses the printed ConfigMap and has the advisor's own `validate -` accept it."""
    configmap: dict[str, Any] = yaml.safe_load(text)
    assert configmap["kind"] == "ConfigMap"
    assert sorted(configmap["data"]) == sorted(ADVICE_ENV_NAMES)
    for value in configmap["data"].values():
        assert int(value) >= 1
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "validate", "-"],
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok"), proc.stdout
    return configmap


def test_image_runs_the_cli_as_a_numeric_non_root_user(podman: list[str], image: str) -> None:
    config = _inspect(podman, image)
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["tf-thread-advisor"]
    assert config["Cmd"] == ["run", "--output", "-"]
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["HOME"] == "/tmp"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert "PIP_CERT" not in env, "the build's CA mount must not leak into the image"


def test_probe_reports_the_cpu_limit_read_only(podman: list[str], image: str) -> None:
    proc = _run(podman, image, "probe", "--format", "json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    profile = json.loads(proc.stdout)
    assert profile["effective_cpus"] == 1.5
    assert profile["quota_cpus"] == 1.5


def test_default_command_prints_a_valid_configmap(podman: list[str], image: str) -> None:
    """`docker run --rm --cpus N IMAGE`, nothing else: the full job on the built-in workload."""
    proc = _run(podman, image, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _assert_valid_configmap(proc.stdout)


def test_image_is_a_base_for_a_baked_in_model(
    podman: list[str], image: str, tmp_path: Path, test_models: Callable[[], Path]
) -> None:
    """`FROM tf-thread-advisor` + `COPY model /model`, run the documented way with results in a
    mounted ./out: the model is readable by uid 65532 and measured with a read-only root (what the
    chart's `model.source: image` relies on), and both output files are written."""
    context = tmp_path / "ctx"
    shutil.copytree(test_models() / "sm_good", context / "sm_good")
    (context / "Dockerfile").write_text(f"FROM {image}\nCOPY sm_good /model\n")
    derived = "localhost/tf-thread-advisor-model:test"
    proc = subprocess.run(
        [*podman, "build", "--pull=never", "--network", "none", "-t", derived, str(context)],
        env=_podman_env(),
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)  # the image's user is 65532
    try:
        run = _run(
            podman,
            derived,
            *("run", "--model", "/model", "--budget", "30"),
            *("--output", "/out/configmap.yaml", "--env-file", "/out/advice.env"),
            volumes=(f"{out}:/out",),
        )
    finally:
        subprocess.run(
            [*podman, "rmi", "-f", derived], env=_podman_env(), capture_output=True, check=False
        )
    assert run.returncode == 0, run.stderr[-3000:]
    configmap = _assert_valid_configmap((out / "configmap.yaml").read_text())
    env_lines = (out / "advice.env").read_text().splitlines()
    assert dict(line.split("=", 1) for line in env_lines) == configmap["data"]
    annotations = configmap["metadata"]["annotations"]
    provenance = json.loads(next(v for k, v in annotations.items() if k.endswith("/provenance")))
    assert provenance["workload"]["kind"] == "savedmodel"
    # the probe inside the container saw the limit, and the advice says so
    assert provenance["quota_cpus"] == 1.5
    assert provenance["effective_cpus"] == 1.5
