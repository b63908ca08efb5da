"""Fleet mode for real: the calibration Job `plan --apply` derives for an opted-in Deployment runs
under podman (the advisor image built from this checkout, a serving image with a real Keras
SavedModel baked in), measures the model under the Deployment's CPU limit as a real CFS quota, and
writes the advice that the next `plan` finds fitting.

The API server is the strict fake (testkit/fakeapi) on 127.0.0.1; each step is authorized by
the Role of the ServiceAccount that runs it in the shipped component (deploy/components/fleet):
the planner lists and creates the Job, the pod's advisor writes the advice. There is no kubelet
and no Job controller: the test plays the Job's pod template as a Pod with `podman kube play`
(podman 4.3 plays no Job), bounds the wait by the Job's activeDeadlineSeconds, and records the
Job's status as the controller would (running, then Complete when the advisor exited 0).

What `podman kube play` (4.3.1, bookworm, runc, cgroup v1) does with the derived pod, as tried here:

- accepted and played as derived: the init container (the serving image's `cp -RL` copying the
  model, reached through symlinks, into the emptyDir, run to completion before the advisor starts,
  then removed by podman), emptyDir volumes (chowned to the pod's runAsUser, 65532, so the
  non-root copy can write), readOnly mounts, readOnlyRootFilesystem,
  runAsUser/runAsGroup/runAsNonRoot, capabilities drop ALL, seccompProfile RuntimeDefault,
  tolerations and serviceAccountName (ignored), the Downward API's `metadata.name` and
  `resourceFieldRef` (`limits.cpu`, `requests.cpu` with divisor 1m: 1500), and
  `resources.limits.cpu: 1500m`, which reaches the container as a CFS quota of 150000/100000 us:
  the probe inside reports 1.5 CPUs. `--network host` puts the pod on the host's network, so it
  reaches the fake API server on 127.0.0.1.
- swapped, as podman has no ServiceAccount token projection: ONLY the projected `kube-api-access`
  volume, replaced by a hostPath directory holding a kubeconfig for the fake server (with the
  token, and the `token` and `namespace` files the projection would hold); KUBECONFIG is set for
  the container that mounts it (the advisor), and no other container sees it.
- adapted, each because podman 4.3 refuses or ignores it (the pod is otherwise as derived):
  - Downward API `fieldRef` `metadata.namespace` and `spec.nodeName` are refused ("fieldPath ...
    is either not valid or not supported"): they become the values the kubelet would give, the
    Job's namespace and this machine's hostname;
  - `$(VAR)` in `command`/`args` is passed literally (`--namespace=$(TFTA_POD_NAMESPACE)` would
    reach the advisor as is): the test expands it from the container's env the way the kubelet
    does (`$$` escapes, an undefined name stays as written).
- a `kube play` that fails part-way leaves its pod behind: `--down` runs whatever happened.

The advisor image stays in the store (other tests use its cache); the serving image is removed.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from advisor.cli import main
from advisor.fleet.naming import MODEL_MOUNT
from advisor.recommend import parse_configmap
from testkit.fakeapi.apps import workload
from testkit.fakeapi.rbac import fleet_rules
from testkit.fakeapi.server import FakeApiServer
from tests.support.images import PODMAN, build_image, podman_env, podman_missing
from tests.support.real_parts import missing_real_part

pytestmark = [pytest.mark.container, pytest.mark.tf]

NS = "ml"
MODEL_PATH = "/models/b/model"
SERVING_IMAGE = "localhost/tfta-serving-b:test"
#: the smallest budget a calibration takes is 25 s; 30 leaves the search a candidate or two
BUDGET_S = "30"
ADVICE = "advice-b"
#: the projected ServiceAccount token volume of the derived pod, the one part podman cannot play
TOKEN_VOLUME = "kube-api-access"
#: the Keras model's input name, so the advice can show it measured this model
MODEL_INPUT = "features"
PLANNER = fleet_rules("-planner")
CALIBRATION = fleet_rules("-calibration")

#: a small Keras model exported as a SavedModel, in a child so TensorFlow stays out of pytest
EXPORT_KERAS = f"""
import sys
import keras
keras.utils.set_random_seed(7)
x = keras.Input(shape=(16,), name="{MODEL_INPUT}")
h = keras.layers.Dense(32, activation="relu")(x)
model = keras.Model(x, keras.layers.Dense(4, name="scores")(h))
model.export(sys.argv[1], format="tf_saved_model", verbose=False)
"""


@pytest.fixture(scope="module")
def advisor_image() -> str:
    reason = podman_missing()
    if reason is not None:
        missing_real_part(reason)
    return build_image("linux/amd64")


@pytest.fixture
def serving_image(advisor_image: str, tmp_path: Path) -> Iterator[str]:
    """debian:bookworm-slim (the project's store holds it: scripts/image-setup.sh) with a real
    SavedModel reached through symlinks at MODEL_PATH; it has `cp`, which is all the derived
    init container runs."""
    if importlib.util.find_spec("tensorflow") is None:
        missing_real_part("tensorflow is not installed")
    context = tmp_path / "serving"
    context.mkdir()
    exported = subprocess.run(
        [sys.executable, "-c", EXPORT_KERAS, str(context / "model")],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert exported.returncode == 0, exported.stderr[-3000:]
    # MODEL_PATH is a link to a version directory, whose graph is a link out of it: the copy
    # must dereference both (cp -R alone would copy dangling links)
    model_dir = PurePosixPath(MODEL_PATH).parent
    (context / "Containerfile").write_text(
        "FROM docker.io/library/debian:bookworm-slim\n"
        f"COPY model {model_dir}/v1\n"
        f"RUN mv {model_dir}/v1/saved_model.pb {model_dir}/graph.pb"
        f" && ln -s ../graph.pb {model_dir}/v1/saved_model.pb"
        f" && ln -s v1 {MODEL_PATH}\n"
    )
    built = _podman("build", "--pull=never", "--network", "none", "-t", SERVING_IMAGE, str(context))
    assert built.returncode == 0, built.stderr[-3000:]
    try:
        yield SERVING_IMAGE
    finally:
        _podman("rmi", "-f", SERVING_IMAGE)


def _podman(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PODMAN, *args],
        env=podman_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def deployment_b(image: str) -> dict[str, Any]:
    """The fleet issue's Deployment b: opted in, its model baked into its image, a CPU limit of
    1500m (requests the same), a toleration, its advice read with envFrom."""
    resources = {"cpu": "1500m", "memory": "2Gi"}
    obj = workload(
        "deployments",
        NS,
        "b",
        container={
            "image": image,
            "resources": {"requests": dict(resources), "limits": dict(resources)},
            "envFrom": [{"configMapRef": {"name": ADVICE}}],
        },
        pod_spec={
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
            ]
        },
    )
    obj["metadata"]["labels"] = {"tf-thread-advisor.io/calibrate": "true"}
    obj["metadata"]["annotations"] = {
        "tf-thread-advisor.io/model": MODEL_PATH,
        "tf-thread-advisor.io/budget": BUDGET_S,
    }
    return obj


def plan(api: FakeApiServer, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """``plan`` through the real CLI, in-process, as the planner; its stdout."""
    api.rules = PLANNER
    code = main(["plan", "--kubeconfig", str(api.kubeconfig), "--namespace", NS, *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


# --------------------------------------------------------------------------------------------
# from the Job's pod template to a Pod podman plays


_EXPANSION = re.compile(r"\$\$|\$\(([^)]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """The kubelet's expansion of ``$(VAR)`` in command and args: a defined name is replaced,
    ``$$`` is a literal ``$``, anything else stays as written."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return _EXPANSION.sub(one, text)


def pod_from_job(job: Mapping[str, Any], *, kube_dir: Path, node_name: str) -> dict[str, Any]:
    """The Pod the Job controller would create from ``job``'s template, with what podman 4.3
    cannot play swapped or adapted (the module docstring lists each, and why)."""
    meta = job["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    template = copy.deepcopy(job["spec"]["template"])
    pod_meta = {**template.get("metadata", {}), "name": name, "namespace": namespace}
    spec = template["spec"]
    # the projected token is the only volume swapped: a hostPath with a kubeconfig instead
    (token,) = [v for v in spec["volumes"] if v["name"] == TOKEN_VOLUME]
    sources = token["projected"]["sources"]
    assert any("serviceAccountToken" in s for s in sources), token
    token.clear()
    token.update(name=TOKEN_VOLUME, hostPath={"path": str(kube_dir), "type": "Directory"})
    # what the kubelet gives for the Downward API fields podman refuses
    downward = {"metadata.namespace": namespace, "spec.nodeName": node_name}
    for container in [*spec.get("initContainers", []), *spec["containers"]]:
        env = container.setdefault("env", [])
        for i, item in enumerate(env):
            path = ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
            if path in downward:
                env[i] = {"name": item["name"], "value": downward[path]}
        for mount in container.get("volumeMounts", []):
            if mount["name"] == TOKEN_VOLUME:
                env.append({"name": "KUBECONFIG", "value": f"{mount['mountPath']}/kubeconfig"})
        values = {e["name"]: e["value"] for e in env if "value" in e}
        for key in ("command", "args"):
            if key in container:
                container[key] = [expand(arg, values) for arg in container[key]]
        if not env:
            del container["env"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def write_token_dir(api: FakeApiServer, kube_dir: Path, namespace: str) -> None:
    """What the projected volume would hold, plus a kubeconfig for the fake server (plain HTTP,
    so no ca.crt); readable by the pod's non-root user, as the projection's 0644 files are."""
    kube_dir.mkdir()
    api.write_kubeconfig(kube_dir / "kubeconfig", token=api.token)
    (kube_dir / "token").write_text(api.token)
    (kube_dir / "namespace").write_text(namespace)
    kube_dir.chmod(0o755)
    for path in kube_dir.iterdir():
        path.chmod(0o644)


@dataclass
class Played:
    #: the advisor container's (None: it ran past the Job's deadline)
    exit_code: int | None
    logs: str


def play(pod: Mapping[str, Any], workdir: Path, *, deadline_s: float) -> Played:
    """``podman kube play`` on the host's network, wait for the advisor container as long as
    the Job would let it run, then take the pod down (also after a failed play: it leaves its
    pod behind)."""
    path = workdir / "pod.yaml"
    path.write_text(yaml.safe_dump(dict(pod), sort_keys=False))
    advisor = f"{pod['metadata']['name']}-advisor"
    try:
        played = _podman("kube", "play", "--network", "host", str(path))
        assert played.returncode == 0, f"kube play failed:\n{played.stdout}\n{played.stderr}"
        try:
            waited = _podman("wait", advisor, timeout=deadline_s)
        except subprocess.TimeoutExpired:
            waited = None
        logs = _podman("logs", advisor)
        code = int(waited.stdout.strip()) if waited and waited.returncode == 0 else None
        return Played(code, logs.stdout + logs.stderr)
    finally:
        _podman("kube", "play", "--down", str(path))


# --------------------------------------------------------------------------------------------


def test_the_derived_calibration_pod_runs_under_podman_and_its_advice_fits(
    advisor_image: str,
    serving_image: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with FakeApiServer(tmp_path, namespaces=(NS,), rules=PLANNER) as api:
        api.put_workload(deployment_b(serving_image))
        plan(api, capsys, "--apply", "--image", advisor_image)
        (job,) = api.jobs()
        assert job["metadata"]["annotations"]["tf-thread-advisor.io/workload"] == "deployment/b"

        kube_dir = tmp_path / "serviceaccount"
        write_token_dir(api, kube_dir, NS)
        pod = pod_from_job(job, kube_dir=kube_dir, node_name=socket.gethostname())
        deadline = float(job["spec"]["activeDeadlineSeconds"])
        api.rules = CALIBRATION  # the pod's advisor runs as the calibration ServiceAccount
        api.set_job_running(NS, job["metadata"]["name"])
        played = play(pod, tmp_path, deadline_s=deadline)
        assert played.exit_code == 0, f"advisor exit {played.exit_code}:\n{played.logs[-4000:]}"
        api.set_job_condition(NS, job["metadata"]["name"], "Complete")

        written = api.get(NS, ADVICE)
        assert written is not None, played.logs[-4000:]
        advice = parse_configmap(written, f"ConfigMap {ADVICE}").recommendation
        prov = advice.provenance
        # the init container copied the model out of the serving image: the advisor measured it
        assert prov.workload.kind == "savedmodel"
        assert prov.workload.path == f"{MODEL_MOUNT}/{PurePosixPath(MODEL_PATH).name}"
        assert MODEL_INPUT in prov.workload.inputs, prov.workload.inputs
        # the Deployment's CPU limit reached the advisor as a real CFS quota
        assert prov.quota_cpus == 1.5
        assert prov.effective_cpus == 1.5
        target = prov.target
        assert target is not None
        assert target.cpu_from == "limit"
        assert (str(target.workload), target.container) == ("deployment/b", "server")
        assert (target.image, target.model_path) == (serving_image, MODEL_PATH)

        rows = json.loads(plan(api, capsys, "--format", "json", "--image", advisor_image))
        (b,) = [r for r in rows["decisions"] if r["workload"] == "deployment/b"]
        assert b["decision"] == "fits", b["reason"]
