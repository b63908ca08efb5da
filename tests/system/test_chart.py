"""The Helm chart, rendered by the real helm (v4, from PyPI) with its defaults and every ci/*.yaml.

Each render is linted, validated against the k8s 1.30 and 1.35 schemas (strict) and checkov, and
checked for what the chart promises: one hardened Job per target with exactly the target's
resources and node pool, RBAC equal to deploy/rbac.yaml's rule, a `helm test` hook that validates
each ConfigMap, and a values schema that rejects unknown keys.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import build_parser
from advisor.models import MIN_BUDGET_S
from tests.support import REPO
from tests.support import k8s_checks as k8s

CHART = REPO / "charts" / "tf-thread-advisor"
CI_VALUES = sorted((CHART / "ci").glob("*.yaml"))
NAMESPACE = "ml-serving"
STANDARD_LABELS = (
    "helm.sh/chart",
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
)

pytestmark = pytest.mark.tools


def _values_files() -> list[Path | None]:
    return [None, *CI_VALUES]


def _id(path: Path | None) -> str:
    return "defaults" if path is None else path.name


def _helm(*args: str, check: bool = True) -> Any:
    return k8s.run_tool([k8s.tool("helm"), *args], check=check)


#: the chart has no default image (nothing is published; test_chart_lifecycle.py checks the
#: install fails without one): "defaults" below means the defaults plus this one required value
IMAGE_SET = ("--set", "image.repository=registry.example.com/mirror/tf-thread-advisor")


def _template(values: Path | None = None, *extra: str, check: bool = True) -> Any:
    args = ["template", "rel", str(CHART), "--namespace", NAMESPACE, *IMAGE_SET]
    if values is not None:
        args += ["-f", str(values)]
    return _helm(*args, *extra, check=check)


def _values(values: Path | None) -> dict[str, Any]:
    merged: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    if values is not None:
        merged.update(yaml.safe_load(values.read_text()))
    return merged


@pytest.fixture(scope="module")
def renders() -> dict[str, list[dict[str, Any]]]:
    return {_id(v): k8s.load_docs(_template(v).stdout) for v in _values_files()}


def test_there_are_at_least_two_ci_values_files() -> None:
    assert len(CI_VALUES) >= 2


@pytest.mark.parametrize("values", _values_files(), ids=_id)
def test_helm_lint_strict(values: Path | None) -> None:
    args = ["lint", "--strict", str(CHART), "--namespace", NAMESPACE, *IMAGE_SET]
    if values is not None:
        args += ["-f", str(values)]
    proc = _helm(*args)
    assert "0 chart(s) failed" in proc.stdout


@pytest.mark.parametrize("values", _values_files(), ids=_id)
def test_render_validates_strictly(values: Path | None, renders: dict[str, Any]) -> None:
    docs = renders[_id(values)]
    assert docs
    k8s.validate_k8s(docs)


def test_checkov_passes_on_every_render(renders: dict[str, Any], tmp_path: Path) -> None:
    files = []
    for name, docs in renders.items():
        path = tmp_path / f"{name}.rendered.yaml"
        path.write_text(yaml.safe_dump_all(docs))
        files.append(path)
        k8s.assert_skips_have_reasons(docs)
    k8s.assert_checkov_clean(k8s.checkov_report(files))


def test_image_skips_vanish_when_the_image_is_pinned(renders: dict[str, Any]) -> None:
    """The digest/pull-policy exceptions are only claimed when they apply."""
    pinned = renders["model-from-image.yaml"]
    ids = {check for _, check, _ in k8s.checkov_skips(pinned)}
    assert "CKV_K8S_43" not in ids
    assert "CKV_K8S_15" not in ids
    assert "CKV_K8S_43" in {check for _, check, _ in k8s.checkov_skips(renders["defaults"])}


@pytest.mark.parametrize("values", _values_files(), ids=_id)
def test_one_hardened_job_per_target_with_the_targets_pool_and_resources(
    values: Path | None, renders: dict[str, Any]
) -> None:
    docs = renders[_id(values)]
    targets = _values(values)["targets"]
    jobs = k8s.by_kind(docs, "Job")
    assert len(jobs) == len(targets)
    by_target = {j["metadata"]["labels"]["tf-thread-advisor/target"]: j for j in jobs}
    workloads = list(jobs)
    if _values(values).get("cronJob", {}).get("enabled"):
        cronjobs = k8s.by_kind(docs, "CronJob")
        assert len(cronjobs) == len(targets)
        workloads += cronjobs
    for target in targets:
        job = by_target[target["name"]]
        container = k8s.advisor_container(job)
        assert container["resources"] == target["resources"]
        pod = k8s.pod_spec(job)
        assert pod.get("nodeSelector", {}) == target.get("nodeSelector", {})
        assert pod.get("affinity", {}) == target.get("affinity", {})
        assert pod.get("tolerations", []) == target.get("tolerations", [])
        assert k8s.arg_value(container["args"], "--configmap") == target["configMapName"]
        for key, value in target.get("nodeSelector", {}).items():
            assert f"--node-selector={key}={value}" in container["args"]
        assert len(job["metadata"]["name"]) <= 63
    for workload in workloads:
        k8s.assert_hardened_advisor_job(workload)


@pytest.mark.parametrize("values", _values_files(), ids=_id)
def test_job_args_parse_with_the_real_cli(values: Path | None, renders: dict[str, Any]) -> None:
    """What the chart passes is what `tf-thread-advisor run` accepts (flag names and values)."""
    parser = build_parser()
    for job in k8s.by_kind(renders[_id(values)], "Job"):
        args = [
            a.replace("$(TFTA_POD_NAMESPACE)", NAMESPACE)
            for a in k8s.advisor_container(job)["args"]
        ]
        parsed = parser.parse_args(args)
        assert parsed.command == "run", shlex.join(args)


def test_model_sources_reach_the_advisor(renders: dict[str, Any]) -> None:
    image_job = k8s.one(renders["model-from-image.yaml"], "Job")
    container = k8s.advisor_container(image_job)
    assert k8s.arg_value(container["args"], "--model") == "/model/resnet"
    assert container["image"].startswith("registry.example.com/ml/tf-thread-advisor-resnet@sha256:")
    assert k8s.arg_value(container["args"], "--objective") == "slo"
    assert k8s.arg_value(container["args"], "--p99-ms") == "40"

    jobs = {
        j["metadata"]["labels"]["tf-thread-advisor/target"]: j
        for j in k8s.by_kind(renders["two-node-pools.yaml"], "Job")
    }
    copy = k8s.pod_spec(jobs["ranker-amd"])
    (init,) = copy["initContainers"]
    assert init["image"].startswith("registry.example.com/ml/ranker-serving@")
    assert init["command"] == ["cp", "-RL", "/models/ranker", "/model/"]
    assert k8s.arg_value(k8s.advisor_container(jobs["ranker-amd"])["args"], "--model") == (
        "/model/ranker"
    )
    volumes = {v["name"]: v for v in copy["volumes"]}
    assert "emptyDir" in volumes["model"]

    pvc = k8s.pod_spec(jobs["ranker-intel"])
    volumes = {v["name"]: v for v in pvc["volumes"]}
    assert volumes["model"]["persistentVolumeClaim"] == {
        "claimName": "ranker-models",
        "readOnly": True,
    }
    args = k8s.advisor_container(jobs["ranker-intel"])["args"]
    assert k8s.arg_value(args, "--model") == "/model/ranker/1"
    assert k8s.arg_value(args, "--input-shape") == "history=50"
    # the builtin default passes no --model at all
    assert (
        k8s.arg_value(k8s.advisor_container(k8s.one(renders["defaults"], "Job"))["args"], "--model")
        is None
    )


def _advisor_objects(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The hand-written targets' objects (fleet mode's planner and calibration ones aside)."""
    return [
        d for d in docs if d["metadata"]["labels"].get("app.kubernetes.io/component") == "advisor"
    ]


def test_role_mirrors_deploy_rbac(renders: dict[str, Any]) -> None:
    deploy_role = k8s.one(k8s.load_file_docs(REPO / "deploy" / "rbac.yaml"), "Role")
    chart_role = k8s.one(renders["defaults"], "Role")
    # same ConfigMap name by default, so the rules are identical
    assert k8s.role_rules(chart_role, drop_names=False) == k8s.role_rules(
        deploy_role, drop_names=False
    )
    for name, all_docs in renders.items():
        docs = _advisor_objects(all_docs)
        if not k8s.by_kind(all_docs, "Job"):
            # no target, no advisor identity: a rule with no resourceNames would allow every
            # ConfigMap of the namespace
            assert not [d for d in docs if d["kind"] != "NetworkPolicy"], name
            continue
        role = k8s.one(docs, "Role")
        configmap_rules = [r for r in role["rules"] if "configmaps" in r["resources"]]
        assert k8s.role_rules({"rules": configmap_rules}, drop_names=True) == k8s.role_rules(
            deploy_role, drop_names=True
        ), name
        (rule,) = configmap_rules
        written = {
            k8s.arg_value(k8s.advisor_container(j)["args"], "--configmap")
            for j in k8s.by_kind(docs, "Job")
        }
        assert set(rule["resourceNames"]) == written, name
        binding = k8s.one(docs, "RoleBinding")
        assert binding["roleRef"]["name"] == role["metadata"]["name"]
        (subject,) = binding["subjects"]
        assert subject["name"] == k8s.one(docs, "ServiceAccount")["metadata"]["name"]
        for job in k8s.by_kind(docs, "Job"):
            assert k8s.pod_spec(job)["serviceAccountName"] == subject["name"]


def _restarts(docs: list[dict[str, Any]]) -> set[str]:
    """Every --restart KIND/NAME the rendered Jobs pass."""
    return {
        arg.split("=", 1)[1]
        for job in k8s.by_kind(docs, "Job")
        for arg in k8s.advisor_container(job)["args"]
        if arg.startswith("--restart=")
    }


@pytest.mark.parametrize("values", _values_files(), ids=_id)
def test_restart_rules_name_exactly_the_restarted_workloads(
    values: Path | None, renders: dict[str, Any]
) -> None:
    """With no restart targets the Role has the ConfigMap rule alone; with them, one get+patch
    rule per kind, by resourceNames, naming exactly the workloads the Jobs restart."""
    docs = renders[_id(values)]
    roles = k8s.by_kind(_advisor_objects(docs), "Role")
    assert len(roles) == (1 if _values(values)["targets"] else 0)
    others = [r for role in roles for r in role["rules"] if "configmaps" not in r["resources"]]
    restarts = _restarts(docs)
    expected: set[str] = set()
    for target in _values(values)["targets"]:
        expected |= set(target.get("restart", []))
    assert restarts == expected
    allowed = set()
    for rule in others:
        assert rule["apiGroups"] == ["apps"]
        assert sorted(rule["verbs"]) == ["get", "patch"]
        (resource,) = rule["resources"]
        assert resource in ("deployments", "statefulsets")
        allowed |= {f"{resource.removesuffix('s')}/{n}" for n in rule["resourceNames"]}
    assert allowed == restarts
    assert len(others) == len({r.split("/")[0] for r in restarts})


def test_a_values_file_restarts_and_turns_reloader_on(renders: dict[str, Any]) -> None:
    docs = renders["restart-and-reloader.yaml"]
    assert _restarts(docs) == {"deployment/web", "statefulset/web-cache", "deployment/batch-scorer"}
    for job in k8s.by_kind(docs, "Job"):
        args = k8s.advisor_container(job)["args"]
        assert "--configmap-annotation=reloader.stakater.com/match=true" in args
        parsed = build_parser().parse_args(
            [a.replace("$(TFTA_POD_NAMESPACE)", NAMESPACE) for a in args]
        )
        assert parsed.configmap_annotation == ["reloader.stakater.com/match=true"]
    for job in k8s.by_kind(renders["defaults"], "Job"):
        args = k8s.advisor_container(job)["args"]
        assert not [a for a in args if a.startswith(("--restart", "--configmap-annotation"))]


def test_every_object_has_the_standard_labels_and_namespace(renders: dict[str, Any]) -> None:
    """In the release namespace, but the cluster-scoped objects of planner.scope cluster (in
    none) and the calibration identity rendered in each of planner.namespaces."""
    for name, docs in renders.items():
        values = _values(None if name == "defaults" else CHART / "ci" / name)
        elsewhere = set(values["planner"].get("namespaces", []))
        for doc in docs:
            labels = doc["metadata"].get("labels", {})
            missing = [label for label in STANDARD_LABELS if label not in labels]
            assert not missing, f"{name}: {doc['kind']}/{doc['metadata']['name']} lacks {missing}"
            assert labels["app.kubernetes.io/instance"] == "rel"
            if doc["kind"] in ("ClusterRole", "ClusterRoleBinding"):
                assert "namespace" not in doc["metadata"]
            elif labels.get("app.kubernetes.io/component") == "calibration":
                assert doc["metadata"]["namespace"] in {NAMESPACE, *elsewhere}
            else:
                assert doc["metadata"]["namespace"] == NAMESPACE


def test_helm_test_hook_validates_each_configmap(renders: dict[str, Any]) -> None:
    for name, docs in renders.items():
        pods = [
            p
            for p in k8s.by_kind(docs, "Pod")
            if p["metadata"]["annotations"].get("helm.sh/hook") == "test"
        ]
        configmaps = {
            t["configMapName"]
            for t in _values(None if name == "defaults" else CHART / "ci" / name)["targets"]
        }
        assert len(pods) == len(configmaps), name
        for pod in pods:
            (container,) = pod["spec"]["containers"]
            args = container["args"]
            assert args[0] == "validate"
            assert k8s.arg_value(args, "--namespace") == NAMESPACE
            configmaps.discard(k8s.arg_value(args, "--configmap"))
            k8s.assert_container_hardened(container)
            assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
            parsed = build_parser().parse_args(args)
            assert parsed.command == "validate"
        assert not configmaps, f"{name}: no test for {configmaps}"


def test_notes_tell_how_to_mount_and_roll(tmp_path: Path) -> None:
    proc = _helm(
        "install",
        "rel",
        str(CHART),
        "--namespace",
        NAMESPACE,
        "--dry-run=client",
        "-f",
        str(CHART / "ci" / "two-node-pools.yaml"),
    )
    notes = proc.stdout.split("NOTES:", 1)[1]
    for needle in (
        "ranker-amd-thread-advice",
        "ranker-intel-thread-advice",
        "configMapRef",
        "restartPolicy: RestartContainer",
        f"tf-thread-advisor status --namespace {NAMESPACE}",
        "--tensorflow_intra_op_parallelism=$(TF_NUM_INTRAOP_THREADS)",
        "rollout restart",
        "helm test rel",
        # two-node-pools.yaml raises the Job deadline to 2400 s: the wait must not give up first
        "--timeout=2400s job/rel-tf-thread-advisor-ranker-amd-r1",
    ):
        assert needle in notes, needle


# ------------------------------------------------------------------------------------------------
# the values schema
# ------------------------------------------------------------------------------------------------


def _walk_objects(schema: Any, path: str = "$") -> list[tuple[str, dict[str, Any]]]:
    found = []
    if isinstance(schema, dict):
        if "properties" in schema:
            found.append((path, schema))
        for key, value in schema.items():
            found += _walk_objects(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            found += _walk_objects(value, f"{path}[{i}]")
    return found


def test_schema_closes_every_object_level() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    objects = _walk_objects(schema)
    assert len(objects) > 10
    for path, obj in objects:
        # if/then clauses only narrow properties of an already closed object
        if (".allOf[" in path and ".then" in path) or ".if" in path:
            continue
        assert obj.get("additionalProperties") is False, f"{path} accepts unknown keys"


@pytest.mark.parametrize(
    ("set_arg", "needle"),
    [
        ("imagee.tag=x", "imagee"),
        ("job.backofLimit=2", "backofLimit"),
        ("targets[0].nodeselector.pool=a", "nodeselector"),
        ("targets[0].model.sourse=pvc", "sourse"),
        ("targets[0].resources.limits.gpu=1", "gpu"),
        ("reloader.matches=true", "matches"),
    ],
)
def test_schema_rejects_unknown_keys(set_arg: str, needle: str) -> None:
    proc = _template(None, "--set", set_arg, check=False)
    assert proc.returncode != 0
    assert needle in proc.stderr


def _default_target_with(tmp_path: Path, changes: dict[str, Any], top: dict[str, Any]) -> Path:
    """A values file whose one target is the default target with `changes` merged in (model
    merged key by key): `--set targets[0].x=...` would replace the whole target, and the error
    for its missing keys would hide the one under test."""
    (target,) = _values(None)["targets"]
    model = {**target["model"], **changes.get("model", {})}
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({**top, "targets": [{**target, **changes, "model": model}]}))
    return values


@pytest.mark.parametrize(
    ("changes", "top", "needle"),
    [
        ({"model": {"source": "pvc"}}, {}, "claimName"),
        ({"model": {"source": "initContainer", "path": "/m"}}, {}, "'image'"),
        ({"objective": "slo"}, {}, "p99Ms"),
        ({}, {"defaults": {**_values(None)["defaults"], "objective": "slo"}}, "p99Ms"),
        ({"name": "Bad_Name"}, {}, "Bad_Name"),
        ({"budget": 0}, {}, "budget"),
        # below the CLI's minimum (`run --budget` exits 2): fail at install, not in the Job
        ({"budget": int(MIN_BUDGET_S) - 1}, {}, "budget"),
        # a sweep that cannot end before the Job's deadline would be killed with nothing written
        ({"budget": 1600}, {}, "activeDeadlineSeconds >= 1900"),
        ({}, {"job": {"activeDeadlineSeconds": 500}}, "activeDeadlineSeconds >= 600"),
        # only the kinds `run --restart` restarts, with valid names, each once
        ({"restart": ["pod/web"]}, {}, "restart"),
        ({"restart": ["deployment/Web"]}, {}, "restart"),
        ({"restart": ["deployment/web", "deployment/web"]}, {}, "restart"),
        ({"restart": "deployment/web"}, {}, "restart"),
    ],
)
def test_bad_values_fail_with_a_message(
    changes: dict[str, Any], top: dict[str, Any], needle: str, tmp_path: Path
) -> None:
    proc = _template(_default_target_with(tmp_path, changes, top), check=False)
    assert proc.returncode != 0, proc.stdout[:500]
    assert needle in proc.stderr
    assert "missing properties" not in proc.stderr, proc.stderr


def test_smallest_budget_the_cli_accepts_renders(tmp_path: Path) -> None:
    docs = k8s.load_docs(
        _template(_default_target_with(tmp_path, {"budget": int(MIN_BUDGET_S)}, {})).stdout
    )
    args = k8s.advisor_container(k8s.one(docs, "Job"))["args"]
    assert build_parser().parse_args(args).budget == MIN_BUDGET_S


@pytest.mark.parametrize(
    ("second", "needle"),
    [
        ({"name": "other", "configMapName": "tf-thread-advice"}, "configMapName"),
        ({"name": "default", "configMapName": "other-advice"}, "name"),
    ],
)
def test_targets_must_not_share_a_name_or_configmap(
    second: dict[str, str], needle: str, tmp_path: Path
) -> None:
    targets = _values(None)["targets"]
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"targets": [*targets, {**targets[0], **second}]}))
    proc = _template(values, check=False)
    assert proc.returncode != 0
    assert f"{needle} {second[needle]!r}".replace("'", '"') in proc.stderr


def test_values_example_in_the_docs_renders(tmp_path: Path) -> None:
    """docs/deploy.md's my-values.yaml is a working values file, not prose."""
    doc = (REPO / "docs" / "deploy.md").read_text()
    start = doc.index("cat > my-values.yaml <<'EOF'\n") + len("cat > my-values.yaml <<'EOF'\n")
    values = tmp_path / "my-values.yaml"
    values.write_text(doc[start : doc.index("\nEOF\n", start)])
    docs = k8s.load_docs(_template(values).stdout)
    k8s.validate_k8s(docs)
    job = k8s.one(docs, "Job")
    k8s.assert_hardened_advisor_job(job)
    assert k8s.arg_value(k8s.advisor_container(job)["args"], "--model") == "/model/resnet/1"


def test_content_hash_snippet_in_the_docs_renders_before_the_first_advice(
    tmp_path: Path,
) -> None:
    """docs/deploy.md's Helm annotation for the checksum pattern: `lookup` returns nothing on a
    first install and under `helm template`, and the snippet must still render (to "none")."""
    doc = (REPO / "docs" / "deploy.md").read_text()
    (line,) = [ln for ln in doc.splitlines() if "lookup " in ln and ln.lstrip().startswith("tf-")]
    chart = tmp_path / "consumer"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: consumer\nversion: 0.1.0\n")
    (chart / "templates" / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
        f"    {line.strip()}\n"
        "spec:\n  containers:\n    - name: c\n      image: example.com/c:1\n"
    )
    proc = _helm("template", "rel", str(chart), "--namespace", NAMESPACE, check=False)
    assert proc.returncode == 0, proc.stderr
    pod = k8s.one(k8s.load_docs(proc.stdout), "Pod")
    assert pod["metadata"]["annotations"] == {"tf-thread-advisor.io/content-hash": "none"}


def test_trial_mode_and_onednn_sweep_reach_the_advisor_only_when_set(
    renders: dict[str, Any],
) -> None:
    jobs = {
        j["metadata"]["labels"]["tf-thread-advisor/target"]: k8s.advisor_container(j)["args"]
        for j in k8s.by_kind(renders["two-node-pools.yaml"], "Job")
    }
    assert "--sweep-onednn" in jobs["ranker-amd"]
    assert not any(a.startswith("--trial-mode") for a in jobs["ranker-amd"])  # auto: the default
    assert "--trial-mode=spawn" in jobs["ranker-intel"]
    assert "--sweep-onednn" not in jobs["ranker-intel"]
    default_args = k8s.advisor_container(k8s.one(renders["defaults"], "Job"))["args"]
    assert "--sweep-onednn" not in default_args
    assert not any(a.startswith("--trial-mode") for a in default_args)
    wrong = _template(None, "--set", "defaults.trialMode=thread", check=False)
    assert wrong.returncode != 0 and "trialMode" in wrong.stderr


def _pod_metadata(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """kind/name -> pod template metadata of every Job and CronJob rendered."""
    out = {}
    for doc in docs:
        spec = doc.get("spec") or {}
        if doc["kind"] == "CronJob":
            spec = spec["jobTemplate"]["spec"]
        elif doc["kind"] != "Job":
            continue
        out[f"{doc['kind']}/{doc['metadata']['name']}"] = spec["template"]["metadata"]
    return out


EVERY_POD = (
    "--set",
    "planner.enabled=true,cleanup.enabled=true,cronJob.enabled=true",
)


def test_every_pod_opts_out_of_mesh_injection_and_the_values_win() -> None:
    """The chart's pods carry the planned Jobs' mesh opt-outs; meshOptOut=false drops them, and
    a key job.podAnnotations/podLabels set is the user's."""
    from advisor.keys import MESH_OPT_OUT_ANNOTATIONS, MESH_OPT_OUT_LABELS

    pods = _pod_metadata(k8s.load_docs(_template(None, *EVERY_POD).stdout))
    kinds = {name.split("/")[0] for name in pods}
    assert kinds == {"Job", "CronJob"} and len(pods) >= 4, pods.keys()
    for name, metadata in pods.items():
        assert metadata["labels"].items() >= MESH_OPT_OUT_LABELS.items(), name
        assert metadata["annotations"].items() >= MESH_OPT_OUT_ANNOTATIONS.items(), name

    off = _pod_metadata(
        k8s.load_docs(_template(None, *EVERY_POD, "--set", "meshOptOut=false").stdout)
    )
    for name, metadata in off.items():
        assert not set(metadata.get("annotations", {})) & set(MESH_OPT_OUT_ANNOTATIONS), name
        assert not set(metadata["labels"]) & set(MESH_OPT_OUT_LABELS), name

    mine = _pod_metadata(
        k8s.load_docs(
            _template(
                None,
                *EVERY_POD,
                "--set-string",
                "job.podAnnotations.linkerd\\.io/inject=enabled,job.podLabels.team=ml",
            ).stdout
        )
    )
    for name, metadata in mine.items():
        assert metadata["annotations"]["linkerd.io/inject"] == "enabled", name
        assert metadata["annotations"]["sidecar.istio.io/inject"] == "false", name
        assert metadata["labels"]["team"] == "ml", name
