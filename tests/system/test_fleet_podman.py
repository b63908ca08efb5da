"""Fleet mode for real: the calibration Job `plan --apply` derives for an opted-in Deployment runs
under podman (the advisor image built from this checkout, a serving image with a real Keras
SavedModel baked in), measures the model under the Deployment's CPU limit as a real CFS quota, and
writes the advice that the next `plan` finds fitting. A second case serves its model in TF
Serving's layout, named by MODEL_NAME with no model annotation: the copy carries the whole base
path (every version, version 2's assets.extra warmup file byte for byte, looked at in the pod's
emptyDir before the pod is taken down) and the Job measures the highest version.

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
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from advisor.cli import main
from advisor.fleet.naming import MODEL_MOUNT
from advisor.models import Recommendation
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

#: a small Keras model exported as a SavedModel, in a child so TensorFlow stays out of pytest,
#: with the warmup file TF Serving replays at load (a TFRecord of PredictionLog, written through
#: the official protos) in its assets.extra
EXPORT_KERAS = f"""
import sys
import numpy as np
import keras
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_log_pb2
keras.utils.set_random_seed(7)
x = keras.Input(shape=(16,), name="{MODEL_INPUT}")
h = keras.layers.Dense(32, activation="relu")(x)
model = keras.Model(x, keras.layers.Dense(4, name="scores")(h))
model.export(sys.argv[1], format="tf_saved_model", verbose=False)
with tf.io.TFRecordWriter(sys.argv[2]) as writer:
    for rows in (1, 3):
        request = predict_pb2.PredictRequest()
        request.model_spec.signature_name = "serving_default"
        features = np.random.default_rng(rows).random((rows, 16), dtype=np.float32)
        request.inputs["{MODEL_INPUT}"].CopyFrom(tf.make_tensor_proto(features))
        log = prediction_log_pb2.PredictionLog(
            predict_log=prediction_log_pb2.PredictLog(request=request)
        )
        writer.write(log.SerializeToString())
"""
#: TF Serving's layout for the base-path case: the official image's MODEL_BASE_PATH (/models,
#: left to the image) and MODEL_NAME (set by the Deployment)
TFS_MODEL_NAME = "half"
TFS_BASE_PATH = f"/models/{TFS_MODEL_NAME}"
TFS_IMAGE = "localhost/tfta-serving-tfs:test"
TFS_ADVICE = "advice-tfs"
WARMUP = "assets.extra/tf_serving_warmup_requests"


@pytest.fixture(scope="module")
def advisor_image() -> str:
    reason = podman_missing()
    if reason is not None:
        missing_real_part(reason)
    return build_image("linux/amd64")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SavedModel, with its warmup requests in assets.extra, exported once for the module."""
    for module in ("tensorflow", "tensorflow_serving"):
        if importlib.util.find_spec(module) is None:
            missing_real_part(f"{module} is not installed")
    model = tmp_path_factory.mktemp("exported") / "model"
    done = subprocess.run(
        [sys.executable, "-c", EXPORT_KERAS, str(model), str(model.parent / "warmup")],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (model / "assets.extra").mkdir()
    shutil.move(model.parent / "warmup", model / WARMUP)
    return model


@pytest.fixture
def serving_image(advisor_image: str, exported: Path, tmp_path: Path) -> Iterator[str]:
    """debian:bookworm-slim (the project's store holds it: scripts/image-setup.sh) with a real
    SavedModel reached through symlinks at MODEL_PATH; it has `cp`, which is all the derived
    init container runs."""
    context = tmp_path / "serving"
    context.mkdir()
    shutil.copytree(exported, context / "model", symlinks=True)
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


@pytest.fixture
def tf_serving_image(advisor_image: str, exported: Path, tmp_path: Path) -> Iterator[str]:
    """A serving image in TF Serving's layout: base path TFS_BASE_PATH holding version 1, version
    2 with the warmup file in its assets.extra, and an entry TF Serving ignores (not a number)."""
    context = tmp_path / "tf-serving"
    context.mkdir()
    for version in ("1", "2"):
        shutil.copytree(exported, context / version, symlinks=True)
    (context / "1" / "assets.extra" / "tf_serving_warmup_requests").unlink()
    (context / "upload-tmp").mkdir()
    (context / "upload-tmp" / "partial").write_text("not a model\n")
    (context / "Containerfile").write_text(
        "FROM docker.io/library/debian:bookworm-slim\n"
        f"COPY 1 {TFS_BASE_PATH}/1\n"
        f"COPY 2 {TFS_BASE_PATH}/2\n"
        f"COPY upload-tmp {TFS_BASE_PATH}/upload-tmp\n"
    )
    built = _podman("build", "--pull=never", "--network", "none", "-t", TFS_IMAGE, str(context))
    assert built.returncode == 0, built.stderr[-3000:]
    try:
        yield TFS_IMAGE
    finally:
        _podman("rmi", "-f", TFS_IMAGE)


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


def deployment_tfs(image: str) -> dict[str, Any]:
    """A TF Serving Deployment that names its model as the official image's users do, with
    MODEL_NAME and the image's MODEL_BASE_PATH, and no model annotation."""
    resources = {"cpu": "1500m", "memory": "2Gi"}
    obj = workload(
        "deployments",
        NS,
        "tfs",
        container={
            "image": image,
            "env": [{"name": "MODEL_NAME", "value": TFS_MODEL_NAME}],
            "resources": {"requests": dict(resources), "limits": dict(resources)},
            "envFrom": [{"configMapRef": {"name": TFS_ADVICE}}],
        },
    )
    obj["metadata"]["labels"] = {"tf-thread-advisor.io/calibrate": "true"}
    obj["metadata"]["annotations"] = {"tf-thread-advisor.io/budget": BUDGET_S}
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


def play(
    pod: Mapping[str, Any],
    workdir: Path,
    *,
    deadline_s: float,
    before_down: Callable[[str], None] | None = None,
) -> Played:
    """``podman kube play`` on the host's network, wait for the advisor container as long as
    the Job would let it run, then take the pod down (also after a failed play: it leaves its
    pod behind). ``before_down`` gets the advisor container's name while its volumes exist."""
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
        if before_down is not None:
            before_down(advisor)
        return Played(code, logs.stdout + logs.stderr)
    finally:
        _podman("kube", "play", "--down", str(path))


# --------------------------------------------------------------------------------------------


def calibrate_for_real(
    api: FakeApiServer,
    capsys: pytest.CaptureFixture[str],
    advisor_image: str,
    tmp_path: Path,
    *,
    workload_ref: str,
    advice: str,
    before_down: Callable[[str], None] | None = None,
) -> Recommendation:
    """``plan --apply``, the one Job it creates played as its pod, the Job's status recorded as
    the controller would; the advice the pod wrote."""
    plan(api, capsys, "--apply", "--image", advisor_image)
    (job,) = api.jobs()
    assert job["metadata"]["annotations"]["tf-thread-advisor.io/workload"] == workload_ref
    kube_dir = tmp_path / "serviceaccount"
    write_token_dir(api, kube_dir, NS)
    pod = pod_from_job(job, kube_dir=kube_dir, node_name=socket.gethostname())
    deadline = float(job["spec"]["activeDeadlineSeconds"])
    api.rules = CALIBRATION  # the pod's advisor runs as the calibration ServiceAccount
    api.set_job_running(NS, job["metadata"]["name"])
    played = play(pod, tmp_path, deadline_s=deadline, before_down=before_down)
    assert played.exit_code == 0, f"advisor exit {played.exit_code}:\n{played.logs[-4000:]}"
    api.set_job_condition(NS, job["metadata"]["name"], "Complete")
    written = api.get(NS, advice)
    assert written is not None, played.logs[-4000:]
    return parse_configmap(written, f"ConfigMap {advice}").recommendation


def fits_now(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], advisor_image: str, ref: str
) -> None:
    """The next plan finds the advice fitting the workload as it is."""
    rows = json.loads(plan(api, capsys, "--format", "json", "--image", advisor_image))
    (row,) = [r for r in rows["decisions"] if r["workload"] == ref]
    assert row["decision"] == "fits", row["reason"]


def test_the_derived_calibration_pod_runs_under_podman_and_its_advice_fits(
    advisor_image: str,
    serving_image: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with FakeApiServer(tmp_path, namespaces=(NS,), rules=PLANNER) as api:
        api.put_workload(deployment_b(serving_image))
        advice = calibrate_for_real(
            api, capsys, advisor_image, tmp_path, workload_ref="deployment/b", advice=ADVICE
        )
        prov = advice.provenance
        # the init container copied the model out of the serving image: the advisor measured it
        assert prov.subject.model_format == "savedmodel"
        assert prov.subject.path == f"{MODEL_MOUNT}/{PurePosixPath(MODEL_PATH).name}"
        assert MODEL_INPUT in prov.subject.inputs, prov.subject.inputs
        # the Deployment's CPU limit reached the advisor as a real CFS quota
        assert prov.quota_cpus == 1.5
        assert prov.effective_cpus == 1.5
        target = prov.target
        assert target is not None
        assert target.cpu_from == "limit"
        assert (str(target.workload), target.container) == ("deployment/b", "server")
        assert (target.image, target.model_path) == (serving_image, MODEL_PATH)
        fits_now(api, capsys, advisor_image, "deployment/b")


def test_a_tf_serving_base_path_is_copied_whole_and_its_highest_version_measured(
    advisor_image: str,
    tf_serving_image: str,
    exported: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No model annotation: the Deployment's MODEL_NAME and the image's MODEL_BASE_PATH name the
    base path; the copy carries every version with its assets.extra; the Job measures version 2,
    the one TF Serving serves."""
    copied: dict[str, bytes] = {}

    def look_at_the_copy(advisor: str) -> None:
        mounts = json.loads(_podman("inspect", "--format", "{{json .Mounts}}", advisor).stdout)
        (copy_dir,) = [Path(m["Source"]) for m in mounts if m["Destination"] == MODEL_MOUNT]
        base = copy_dir / TFS_MODEL_NAME
        copied.update(
            (str(path.relative_to(base)), path.read_bytes())
            for path in base.rglob("*")
            if path.is_file() and "variables" not in path.parts
        )

    with FakeApiServer(tmp_path, namespaces=(NS,), rules=PLANNER) as api:
        api.put_workload(deployment_tfs(tf_serving_image))
        advice = calibrate_for_real(
            api,
            capsys,
            advisor_image,
            tmp_path,
            workload_ref="deployment/tfs",
            advice=TFS_ADVICE,
            before_down=look_at_the_copy,
        )
        # the copy holds the base path as the server has it: both versions, the warmup file in
        # version 2's assets.extra byte for byte, the entry TF Serving ignores
        assert {"1/saved_model.pb", "2/saved_model.pb", "upload-tmp/partial"} <= set(copied)
        assert copied[f"2/{WARMUP}"] == (exported / WARMUP).read_bytes()
        assert f"1/{WARMUP}" not in copied
        prov = advice.provenance
        # the highest version was measured, read from the copy
        assert prov.subject.model_format == "savedmodel"
        assert prov.subject.path == f"{MODEL_MOUNT}/{TFS_MODEL_NAME}/2"
        assert MODEL_INPUT in prov.subject.inputs, prov.subject.inputs
        target = prov.target
        assert target is not None
        # the advice is for the base path the server names, whatever version it serves
        assert (target.image, target.model_path) == (tf_serving_image, TFS_BASE_PATH)
        # the inputs were the warmup requests of the copied version directory
        source = prov.subject.inputs_source
        assert source is not None and source.kind == "warmup", source
        assert source.file == f"{MODEL_MOUNT}/{TFS_MODEL_NAME}/2/{WARMUP}", source
        assert source.requests == 2 and source.batch_sizes == (1, 3), source
        fits_now(api, capsys, advisor_image, "deployment/tfs")
