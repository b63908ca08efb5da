"""The kustomize base (deploy/), the consumer examples and the Dockerfile, as shipped.

These tests read the files; the `tools` tests, which run the real kubectl (kustomize),
kubernetes-validate, checkov and hadolint the way CI does, are tests/system/test_manifests_tools.py.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomllib
import yaml
from packaging.requirements import Requirement

from advisor.cli import build_parser
from advisor.fleet.optin import opted_in, read_ask
from advisor.keys import LABEL_CALIBRATE, MESH_OPT_OUT_ANNOTATIONS, MESH_OPT_OUT_LABELS
from advisor.models import TENSORFLOW
from advisor.recommend import DEFAULT_CONFIGMAP_NAME
from tests.support import REPO
from tests.support import k8s_checks as k8s

DEPLOY = REPO / "deploy"
EXAMPLES = DEPLOY / "examples"
TF_SERVING = EXAMPLES / "tf-serving.yaml"
KERAS_SERVER = EXAMPLES / "keras-server.yaml"
ADVICE_READER = EXAMPLES / "advice-reader.yaml"


def _job() -> dict[str, Any]:
    return k8s.one(k8s.load_file_docs(DEPLOY / "job.yaml"), "Job")


def _deployment(path: Path) -> dict[str, Any]:
    return k8s.one(k8s.load_file_docs(path), "Deployment")


def _model_container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


# ------------------------------------------------------------------------------------------------
# unit: the files themselves
# ------------------------------------------------------------------------------------------------


def test_job_is_hardened_and_wired() -> None:
    k8s.assert_hardened_advisor_job(_job())


def test_job_writes_the_configmap_the_role_allows() -> None:
    job_cm = k8s.arg_value(k8s.advisor_container(_job())["args"], "--configmap")
    role = k8s.one(k8s.load_file_docs(DEPLOY / "rbac.yaml"), "Role")
    (rule,) = role["rules"]
    assert rule["resourceNames"] == [job_cm]
    assert job_cm == DEFAULT_CONFIGMAP_NAME
    assert (
        k8s.pod_spec(_job())["serviceAccountName"]
        == k8s.one(k8s.load_file_docs(DEPLOY / "rbac.yaml"), "ServiceAccount")["metadata"]["name"]
    )


@pytest.mark.parametrize("example", [TF_SERVING, KERAS_SERVER], ids=lambda p: p.name)
def test_examples_mount_the_advice_with_the_jobs_resources(example: Path) -> None:
    container = _model_container(_deployment(example))
    job_cm = k8s.arg_value(k8s.advisor_container(_job())["args"], "--configmap")
    assert [e["configMapRef"]["name"] for e in container["envFrom"]] == [job_cm]
    # the advice is only valid for the CPUs it was measured on
    assert container["resources"] == k8s.advisor_container(_job())["resources"]
    # an explicit env entry would shadow the ConfigMap's value
    shadowing = {e["name"] for e in container.get("env", [])} & set(TENSORFLOW.thread_names)
    assert not shadowing, f"{example.name} overrides {shadowing} from the ConfigMap"
    k8s.assert_container_hardened(container)


@pytest.mark.parametrize("example", [TF_SERVING, KERAS_SERVER], ids=lambda p: p.name)
def test_examples_restart_on_a_cpu_resize_and_require_the_advice(example: Path) -> None:
    """In-place resize (GA in 1.35) defaults to NotRequired: without RestartContainer a CPU
    resize keeps TensorFlow's pools at the old size. One answer on `optional` everywhere: the
    advice is required."""
    container = _model_container(_deployment(example))
    assert {"resourceName": "cpu", "restartPolicy": "RestartContainer"} in container["resizePolicy"]
    assert all(
        source["configMapRef"].get("optional", False) is False for source in container["envFrom"]
    )


@pytest.mark.parametrize("example", [TF_SERVING, KERAS_SERVER], ids=lambda p: p.name)
def test_examples_opt_in_to_fleet_mode(example: Path) -> None:
    """The opt-in is on the workload (label and annotations, read by advisor.fleet.optin as plan
    reads them), not on its pods; the container keeps its envFrom, so no configmap annotation."""
    deployment = _deployment(example)
    assert opted_in(deployment["metadata"]["labels"])
    assert LABEL_CALIBRATE not in deployment["spec"]["template"]["metadata"]["labels"]
    ask = read_ask(deployment["metadata"]["annotations"])
    container = _model_container(deployment)
    assert ask.container is None  # the pod's only container
    assert ask.configmap is None  # the one it reads with envFrom
    assert [e["configMapRef"]["name"] for e in container["envFrom"]] == [DEFAULT_CONFIGMAP_NAME]
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"].get("volumes", [])}
    under = [
        m
        for m in container.get("volumeMounts", [])
        if Path(ask.model_path).is_relative_to(m["mountPath"])
    ]
    if example == TF_SERVING:
        # one version directory of the models claim the server mounts (TF Serving's layout)
        (mount,) = under
        assert volumes[mount["name"]]["persistentVolumeClaim"]["readOnly"] is True
        version = Path(ask.model_path).relative_to(mount["mountPath"])
        assert len(version.parts) == 1 and version.name.isdigit(), ask.model_path
    else:
        # baked into the server image: no volume holds it, the Job copies it out of the image
        assert not under
        assert Path(ask.model_path).suffix == ".keras"


DOC_SNIPPETS = (REPO / "docs" / "deploy.md", REPO / "README.md")


@pytest.mark.parametrize("doc", DOC_SNIPPETS, ids=lambda p: p.name)
def test_doc_snippets_that_mount_the_advice_say_the_same(doc: Path) -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", doc.read_text(), flags=re.S)
    mounting = [block for block in blocks if "configMapRef" in block]
    assert mounting, f"{doc.name} shows no envFrom snippet"
    for block in mounting:
        assert "resizePolicy" in block and "RestartContainer" in block, block
        assert "optional: true" not in block, block


def test_the_serving_example_runs_the_advisors_tensorflow() -> None:
    """The advice is measured on one TensorFlow runtime: TF Serving's tag is TF's version."""
    image = _model_container(_deployment(TF_SERVING))["image"]
    serving = image.rsplit(":", 1)[1]
    pins = (REPO / "docker" / "requirements.txt").read_text()
    measured = set(re.findall(r"^tensorflow(?:_cpu|-cpu)?==([\d.]+)", pins, flags=re.M))
    assert measured == {serving}, f"{image} serves with another TensorFlow than {measured}"
    assert image in (REPO / "docs" / "deploy.md").read_text()


def test_tf_serving_passes_the_advice_as_flags() -> None:
    container = _model_container(_deployment(TF_SERVING))
    args = container["args"]
    assert f"--tensorflow_intra_op_parallelism=$({TENSORFLOW.intra_op})" in args
    assert f"--tensorflow_inter_op_parallelism=$({TENSORFLOW.inter_op})" in args
    text = TF_SERVING.read_text()
    flags = [a for a in args if "session_parallelism" in a]
    assert not flags, "--tensorflow_session_parallelism would override both pool sizes"
    # not referenced in command, args or env either
    spec_text = yaml.safe_dump(_deployment(TF_SERVING)["spec"])
    assert "tensorflow_session_parallelism" not in spec_text
    # $(VAR) is only expanded when VAR exists: the ConfigMap must not be optional here
    assert container["envFrom"][0]["configMapRef"].get("optional", False) is False
    assert "$(" + TENSORFLOW.intra_op + ")" in text


def test_keras_server_uses_env_only() -> None:
    container = _model_container(_deployment(KERAS_SERVER))
    referenced = re.findall(r"\$\((\w+)\)", yaml.safe_dump(container))
    assert not referenced, "the Keras server reads the env directly; no $(VAR) needed"
    assert "envFrom" in container
    assert not container.get("args")


def test_job_args_parse_with_the_real_cli() -> None:
    args = k8s.advisor_container(_job())["args"]
    parsed = build_parser().parse_args([a.replace("$(TFTA_POD_NAMESPACE)", "ns") for a in args])
    assert parsed.command == "run"


def test_reloader_example_reloads_the_configmap_it_mounts() -> None:
    """The Reloader path: the annotation names the ConfigMap the server reads with envFrom."""
    deployment = _deployment(TF_SERVING)
    (source,) = _model_container(deployment)["envFrom"]
    reload = deployment["metadata"]["annotations"]["configmap.reloader.stakater.com/reload"]
    assert reload == source["configMapRef"]["name"]


def test_the_advice_reader_can_only_read() -> None:
    """What `status` needs and no more: get and list on configmaps (the advice), list on the
    workloads and pods that may consume it (and on fleet mode's Jobs), in a Role
    for one namespace and a ClusterRole for --all-namespaces, each bound by its own kind of
    binding."""
    docs = k8s.load_file_docs(ADVICE_READER)
    for role_kind, binding_kind in (("Role", "RoleBinding"), ("ClusterRole", "ClusterRoleBinding")):
        role = k8s.one(docs, role_kind)
        assert role["rules"] == [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
            {
                "apiGroups": ["apps"],
                "resources": ["deployments", "statefulsets", "daemonsets"],
                "verbs": ["list"],
            },
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
            # fleet mode's calibration Jobs (status shows them where this is allowed)
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list"]},
        ]
        binding = k8s.one(docs, binding_kind)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role_kind,
            "name": role["metadata"]["name"],
        }


def test_kustomization_lists_rbac_as_is() -> None:
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    assert "rbac.yaml" in kustomization["resources"]
    assert "job.yaml" in kustomization["resources"]
    assert "namespace" not in kustomization, "the namespace is the consumer's, chosen with -n"


# ------------------------------------------------------------------------------------------------
# unit: Dockerfile and the pinned dependency set
# ------------------------------------------------------------------------------------------------


def _dockerfile_instructions() -> list[tuple[str, str]]:
    lines = (REPO / "Dockerfile").read_text().replace("\\\n", " ").splitlines()
    out = []
    for line in lines:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def test_dockerfile_is_multistage_nonroot_with_cli_entrypoint() -> None:
    instructions = _dockerfile_instructions()
    froms = [rest for kw, rest in instructions if kw == "FROM"]
    assert len(froms) >= 2, "build stage + slim final stage"
    final_stage = instructions[max(i for i, (kw, _) in enumerate(instructions) if kw == "FROM") :]
    users = [rest for kw, rest in final_stage if kw == "USER"]
    assert users, "the final stage must set USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit(), "numeric USER lets Kubernetes prove runAsNonRoot"
    assert int(uid) != 0
    assert int(uid) == k8s.pod_spec(_job())["securityContext"]["runAsUser"]
    assert ("ENTRYPOINT", '["tf-thread-advisor"]') in final_stage
    assert ("CMD", '["run", "--output", "-"]') in final_stage
    env_text = " ".join(rest for kw, rest in final_stage if kw == "ENV")
    for var in ("HOME=/tmp", "TMPDIR=/tmp", "PYTHONDONTWRITEBYTECODE=1"):
        assert var in env_text
    # nothing from the build context reaches the final stage: only the venv, from earlier stages
    copies = [rest for kw, rest in final_stage if kw == "COPY"]
    assert copies
    assert all(c.startswith("--from=") for c in copies), copies
    assert not [rest for kw, rest in final_stage if kw == "ADD"]


MACHINES = {"amd64": "x86_64", "arm64": "aarch64"}


def _pins_for(arch: str) -> dict[str, tuple[str, list[str]]]:
    """name -> (version, sha256 hashes) that docker/pip-for-arch.py selects for linux/ARCH."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "docker" / "pip-for-arch.py"), "requirements", arch,
         str(REPO / "docker" / "requirements.txt")],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    pins: dict[str, tuple[str, list[str]]] = {}
    for line in proc.stdout.splitlines():
        requirement, _, options = line.partition(" --")
        req = Requirement(requirement)
        (spec,) = req.specifier
        assert spec.operator == "==", f"{line}: pin with =="
        assert req.marker is None, "markers are evaluated for the target, then dropped"
        hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", "--" + options)
        assert hashes, f"{req.name}: no sha256, but the build uses --require-hashes"
        pins[req.name.lower().replace("_", "-")] = (spec.version, hashes)
    return pins


@pytest.mark.parametrize("arch", sorted(MACHINES))
def test_image_requirements_pin_every_dependency_for_both_architectures(arch: str) -> None:
    pins = _pins_for(arch)
    tensorflow = "tensorflow-cpu" if arch == "amd64" else "tensorflow"  # no -cpu wheel on aarch64
    assert pins[tensorflow][0] == "2.21.0"
    assert not ({"tensorflow", "tensorflow-cpu"} - {tensorflow}) & set(pins)
    # pyproject.toml's runtime dependencies, with their markers evaluated for this architecture
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    runtime = [Requirement(r) for r in project["dependencies"]]
    assert runtime
    for req in runtime:
        if req.marker is not None and not req.marker.evaluate({"platform_machine": MACHINES[arch]}):
            continue
        name = req.name.lower().replace("_", "-")
        assert name in pins, f"{name} is a dependency but not pinned for {arch}"
        assert req.specifier.contains(pins[name][0]), f"{name}=={pins[name][0]} violates {req}"


@pytest.mark.parametrize("arch", sorted(MACHINES))
def test_the_image_pins_one_tensorflow_and_no_serving_api(arch: str) -> None:
    """The advisor reads warmup files with its own TF Serving messages: tensorflow-serving-api,
    which requires the ``tensorflow`` distribution (a second TensorFlow beside tensorflow-cpu on
    amd64), is not in the image."""
    pins = _pins_for(arch)
    assert ("tensorflow-cpu" in pins) != ("tensorflow" in pins)
    assert "tensorflow-serving-api" not in pins
    assert "--no-deps" in (REPO / "Dockerfile").read_text()


def test_a_pin_shared_by_both_architectures_carries_both_wheels_hashes() -> None:
    amd64, arm64 = _pins_for("amd64"), _pins_for("arm64")
    # numpy ships a wheel per architecture: one line, both hashes, each build checks its own
    assert amd64["numpy"] == arm64["numpy"]
    assert len(amd64["numpy"][1]) == 2
    # pure-Python packages have one wheel for both
    assert amd64["pyyaml"][0] == arm64["pyyaml"][0]
    assert len(amd64["six"][1]) == 1


def test_dockerignore_keeps_the_context_small() -> None:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    assert "*" in lines, "ignore everything by default"
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    assert {"pyproject.toml", "README.md", "advisor"} <= allowed


@pytest.mark.parametrize("doc", [REPO / "docs" / "deploy.md", REPO / "README.md"], ids=str)
def test_paths_named_in_the_user_docs_exist(doc: Path) -> None:
    text = doc.read_text()
    pattern = r"[`(]((?:deploy|charts|docs|docker|scripts|benchmarks)/[\w./*-]+)[`)]"
    named = set(re.findall(pattern, text))
    assert len(named) >= 3
    for path in named:
        assert list(REPO.glob(path)), f"{doc.name} names {path}, which does not exist"


# ------------------------------------------------------------------------------------------------
# unit: the commands in README.md and docs/deploy.md are ones the CLI accepts
# ------------------------------------------------------------------------------------------------

USER_DOCS = (REPO / "README.md", REPO / "docs" / "deploy.md")
#: how the docs name the image in `docker run ... IMAGE <subcommand> ...`
DOC_IMAGES = {"tf-thread-advisor:0.1.0", "$IMAGE"}
DEFAULT_CMD = ["run", "--output", "-"]


def _doc_shell_commands(text: str) -> list[list[str]]:
    """Every simple command (split at &&, ||, ;, |) in the ```sh blocks and in inline code that
    starts with `tf-thread-advisor `, as shell words."""
    sources = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    sources += re.findall(r"`(tf-thread-advisor [^`]+)`", text)
    commands: list[list[str]] = []
    for source in sources:
        for line in source.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            current: list[str] = []
            for word in [*words, ";"]:
                if word in {"&&", "||", ";", "|"}:
                    if current:
                        commands.append(current)
                    current = []
                else:
                    current.append(word)
    return commands


def _advisor_argv(command: list[str]) -> list[str] | None:
    """The CLI's arguments in a documented command, or None when it does not run the advisor."""
    if command[0] == "tf-thread-advisor":
        return command[1:]
    if command[0] in {"docker", "podman"} and command[1] == "run":
        image_at = [i for i, word in enumerate(command) if word in DOC_IMAGES]
        assert image_at, f"docker run without the documented image: {shlex.join(command)}"
        return command[image_at[0] + 1 :] or DEFAULT_CMD
    return None


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda p: p.name)
def test_documented_commands_parse_with_the_real_cli(doc: Path) -> None:
    parser = build_parser()
    checked = 0
    for command in _doc_shell_commands(doc.read_text()):
        argv = _advisor_argv(command)
        if argv is None or "--help" in argv:
            continue
        try:
            parser.parse_args(argv)
        except SystemExit as exc:  # argparse's way of rejecting a flag or a value
            raise AssertionError(f"{doc.name}: `{shlex.join(command)}` does not parse") from exc
        checked += 1
    assert checked >= 3, f"{doc.name}: only {checked} advisor commands found"


def _pod_templates(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(kind/name, pod template metadata) of every Job and CronJob among ``docs``."""
    out = []
    for doc in docs:
        spec = doc.get("spec") or {}
        if doc.get("kind") == "CronJob":
            spec = spec["jobTemplate"]["spec"]
        elif doc.get("kind") != "Job":
            continue
        out.append((f"{doc['kind']}/{doc['metadata']['name']}", spec["template"]["metadata"]))
    return out


def test_every_shipped_pod_opts_out_of_mesh_injection() -> None:
    """The shipped Job and the planner run the advisor alone, as the planned Jobs do: a mesh
    proxy sidecar never exits, so a Job with one never completes."""

    docs = [
        *k8s.load_file_docs(DEPLOY / "job.yaml"),
        *k8s.load_file_docs(DEPLOY / "components" / "fleet" / "planner.yaml"),
    ]
    templates = _pod_templates(docs)
    assert {name.split("/")[0] for name, _ in templates} == {"Job", "CronJob"}
    for name, metadata in templates:
        labels, annotations = metadata.get("labels", {}), metadata.get("annotations", {})
        assert labels.items() >= MESH_OPT_OUT_LABELS.items(), name
        assert annotations.items() >= MESH_OPT_OUT_ANNOTATIONS.items(), name
