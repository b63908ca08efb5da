"""The image as shipped: built from this checkout by `make image`'s script, run read-only under a
CPU limit; amd64 natively, arm64 under emulation (qemu-user-static + binfmt_misc).

podman stands in for docker (no Docker engine here) and runs on the project's own store,
.tools/podman (scripts/podman, scripts/image-lib.sh), so no other build on this machine can hand
its layers to these tests. scripts/build-image.sh sets up what is missing (as root: podman, qemu,
a debootstrap-built base image per architecture) and builds; a rebuild with unchanged inputs is
served from the layer cache.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.models import TENSORFLOW
from tests.support import REPO, distributions
from tests.support.images import (
    BUILD_TIMEOUT_S,
    IMAGE,
    PODMAN,
    build_image,
    podman_env,
    podman_missing,
    podman_out,
)
from tests.support.real_parts import missing_real_part

pytestmark = pytest.mark.container

#: the amd64 image's size goal, `podman image inspect --format '{{.Size}}'`
MAX_IMAGE_BYTES = int(1.25 * 1024**3)


@pytest.fixture(scope="module")
def podman() -> list[str]:
    reason = podman_missing()
    if reason is not None:
        missing_real_part(reason)
    return list(PODMAN)


@pytest.fixture(scope="module")
def image(podman: list[str]) -> Iterator[str]:
    yield build_image("linux/amd64")


@pytest.fixture(scope="module")
def arm64_image(podman: list[str], image: str) -> str:
    """Both platforms in one run (amd64 comes from the cache), as `make image` makes them."""
    build_image("linux/amd64,linux/arm64")
    return f"{IMAGE}-arm64"


def _run(
    podman: list[str],
    image: str,
    *args: str,
    timeout: float = 600,
    cpus: str = "1.5",
    volumes: tuple[str, ...] = (),
    entrypoint: str | None = None,
    env: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """docker-run the way a cautious user (or a Job) does: read-only root, tmpfs /tmp, CPU limit."""
    cmd = [*podman, "run", "--rm", "--read-only", "--tmpfs", "/tmp:rw,size=512m"]
    for volume in volumes:
        cmd += ["-v", volume]
    for item in env:
        cmd += ["--env", item]
    if entrypoint is not None:
        cmd += ["--entrypoint", entrypoint]
    cmd += ["--cpus", cpus, "--network", "none", image, *args]
    return subprocess.run(
        cmd, env=podman_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def _inspect(podman: list[str], image: str) -> dict[str, Any]:
    (info,) = json.loads(podman_out("image", "inspect", image))
    config: dict[str, Any] = info["Config"]
    return config


def _assert_valid_configmap(text: str) -> dict[str, Any]:
    """Parses the printed ConfigMap and has the advisor's own `validate -` accept it."""
    configmap: dict[str, Any] = yaml.safe_load(text)
    assert configmap["kind"] == "ConfigMap"
    assert sorted(configmap["data"]) == sorted(TENSORFLOW.thread_names)
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


def test_the_image_holds_one_tensorflow_and_no_serving_api(podman: list[str], image: str) -> None:
    # warmup files are read with the advisor's own TF Serving messages
    # (advisor/trials/child/serving_protos.py): nothing beside tensorflow-cpu is needed
    proc = _run(podman, image, "-c", distributions.CHECK, entrypoint="python3", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout)
    assert list(found["tensorflow"]) == ["tensorflow-cpu"], found["tensorflow"]
    assert found["serving_api"] is None


def test_probe_reports_the_cpu_limit_read_only(podman: list[str], image: str) -> None:
    proc = _run(podman, image, "probe", "--format", "json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    profile = json.loads(proc.stdout)
    assert profile["effective_cpus"] == 1.5
    assert profile["quota_cpus"] == 1.5


def test_default_command_prints_a_valid_configmap(podman: list[str], image: str) -> None:
    """`docker run --rm --cpus N IMAGE`, nothing else: the full job on the built-in model."""
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
        env=podman_env(),
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
            [*podman, "rmi", "-f", derived], env=podman_env(), capture_output=True, check=False
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


def test_the_tier_builds_in_the_projects_own_store(podman: list[str], image: str) -> None:
    """A machine-wide store could hand this build layers made with other options."""
    graph_root = podman_out("info", "--format", "{{.Store.GraphRoot}}")
    # resolved: a .tools shared through a symlink is named by its real path
    assert Path(graph_root.strip()) == (REPO / ".tools" / "podman" / "root").resolve()


def test_amd64_image_is_at_most_one_and_a_quarter_gib(podman: list[str], image: str) -> None:
    size, arch = podman_out(
        "image", "inspect", "--format", "{{.Size}} {{.Architecture}}", image
    ).split()
    assert arch == "amd64"
    assert int(size) <= MAX_IMAGE_BYTES, f"{int(size) / 2**20:.0f} MiB"


def test_calibrate_read_only_under_one_cpu(podman: list[str], image: str) -> None:
    """The slimmed image still imports TF and calibrates."""
    proc = _run(podman, image, "calibrate", "--budget", "25", "--format", "json", cpus="1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert (report["node"]["quota_cpus"], report["node"]["effective_cpus"]) == (1.0, 1.0)
    assert len(report["trials"]) >= 2, "the baseline and at least one candidate"
    assert report["tf_version"].startswith("2.")


def test_manifest_list_holds_both_architectures(podman: list[str], arm64_image: str) -> None:
    manifests = json.loads(podman_out("manifest", "inspect", IMAGE))["manifests"]
    platforms = sorted(m["platform"]["architecture"] for m in manifests)
    assert platforms == ["amd64", "arm64"]
    config = _inspect(podman, arm64_image)
    assert config["Entrypoint"] == ["tf-thread-advisor"]
    assert config["User"] == "65532:65532"


def test_arm64_image_probes_under_emulation(podman: list[str], arm64_image: str) -> None:
    proc = _run(podman, arm64_image, "probe", "--format", "json", timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    profile = json.loads(proc.stdout)
    assert profile["effective_cpus"] == 1.5
    assert profile["quota_cpus"] == 1.5


def test_arm64_python_imports_tensorflow_on_aarch64(podman: list[str], arm64_image: str) -> None:
    """Emulated code runs many times slower: one op proves the aarch64 TF runs, no calibration."""
    code = (
        "import platform, tensorflow as tf; "
        "print(platform.machine(), tf.__version__, float(tf.reduce_sum(tf.ones([2, 3]))))"
    )
    quiet = ("TF_CPP_MIN_LOG_LEVEL=2",)
    proc = _run(podman, arm64_image, "-c", code, entrypoint="python3", timeout=1200, env=quiet)
    assert proc.returncode == 0, proc.stderr[-3000:]
    machine, version, total = proc.stdout.split()
    assert (machine, total) == ("aarch64", "6.0")
    assert version.startswith("2.")
