"""The kustomize base (deploy/), the consumer examples and the Dockerfile through the real tools:
kubectl (kustomize), kubernetes-validate, checkov and hadolint, the way CI does.

Split from tests/integration/test_manifests.py, which reads the same files without the tools.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import build_parser
from tests.support import REPO
from tests.support import k8s_checks as k8s
from tests.system.fleet_rbac import assert_fleet_rbac

DEPLOY = REPO / "deploy"
EXAMPLES = DEPLOY / "examples"
TF_SERVING = EXAMPLES / "tf-serving.yaml"
KERAS_SERVER = EXAMPLES / "keras-server.yaml"
OVERLAY = REPO / "docs" / "examples" / "overlay"
RESTART_OVERLAY = REPO / "docs" / "examples" / "restart"
SERVING = REPO / "docs" / "examples" / "serving-overlay"
ADVICE_READER = EXAMPLES / "advice-reader.yaml"
FLEET_COMPONENT = DEPLOY / "components" / "fleet"
FLEET_OVERLAY = REPO / "docs" / "examples" / "fleet"


def _deployment(path: Path) -> dict[str, Any]:
    return k8s.one(k8s.load_file_docs(path), "Deployment")


@pytest.fixture(scope="module")
def kustomized() -> list[dict[str, Any]]:
    proc = k8s.run_tool([k8s.tool("kubectl"), "kustomize", str(DEPLOY)])
    return k8s.load_docs(proc.stdout)


@pytest.mark.tools
def test_kustomize_renders_rbac_job_and_policy(kustomized: list[dict[str, Any]]) -> None:
    kinds = sorted(d["kind"] for d in kustomized)
    assert kinds == ["Job", "NetworkPolicy", "Role", "RoleBinding", "ServiceAccount"]
    job = k8s.one(kustomized, "Job")
    k8s.assert_hardened_advisor_job(job)
    # no registry publishes the image: the base runs the local build's tag (docs/deploy.md, 0.),
    # and every overlay sets its registry (test_documented_overlay_retargets_the_job)
    image = k8s.advisor_container(job)["image"]
    assert image == "tf-thread-advisor:0.1.0"
    assert f"docker build -t {image} ." in (REPO / "docs" / "deploy.md").read_text()
    # rbac.yaml is included as is: same rules
    source = k8s.one(k8s.load_file_docs(DEPLOY / "rbac.yaml"), "Role")
    assert k8s.one(kustomized, "Role")["rules"] == source["rules"]


@pytest.mark.tools
def test_kustomize_output_and_examples_validate_strictly(kustomized: list[dict[str, Any]]) -> None:
    docs = kustomized + k8s.load_file_docs(TF_SERVING) + k8s.load_file_docs(KERAS_SERVER)
    docs += k8s.load_file_docs(ADVICE_READER)
    docs += k8s.load_file_docs(EXAMPLES / "planner-cluster.yaml")
    k8s.validate_k8s(docs)


@pytest.mark.tools
def test_documented_overlay_retargets_the_job() -> None:
    """docs/examples/overlay: namespace, image, node pool, resources and a PVC model."""
    docs = k8s.load_docs(k8s.run_tool([k8s.tool("kubectl"), "kustomize", str(OVERLAY)]).stdout)
    k8s.validate_k8s(docs)
    assert {d["metadata"]["namespace"] for d in docs} == {"ml-serving"}
    job = k8s.one(docs, "Job")
    k8s.assert_hardened_advisor_job(job)
    container = k8s.advisor_container(job)
    assert container["image"] == "registry.example.com/mirror/tf-thread-advisor:0.1.0"
    assert container["resources"]["limits"] == {"cpu": "6", "memory": "8Gi"}
    assert k8s.pod_spec(job)["nodeSelector"] == {"node.kubernetes.io/instance-type": "c7i.4xlarge"}
    args = [a.replace("$(TFTA_POD_NAMESPACE)", "ml-serving") for a in container["args"]]
    parsed = build_parser().parse_args(args)
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["model"]["readOnly"] is True
    # the same claim as deploy/examples/tf-serving.yaml, which mounts it as the model's base path
    # (<claim>/<version>/saved_model.pb): the advisor must measure a version directory of it
    claim = {v["name"]: v for v in k8s.pod_spec(job)["volumes"]}["model"]["persistentVolumeClaim"]
    serving = _deployment(TF_SERVING)["spec"]["template"]["spec"]
    (serving_volume,) = [
        v for v in serving["volumes"] if v.get("persistentVolumeClaim", {}).get("claimName")
    ]
    assert claim["claimName"] == serving_volume["persistentVolumeClaim"]["claimName"]
    version = Path(parsed.model).relative_to(mounts["model"]["mountPath"])
    assert len(version.parts) == 1
    assert version.name.isdigit(), f"{parsed.model} is not a version directory of the claim"


@pytest.mark.tools
def test_serving_overlay_points_every_example_at_one_targets_configmap() -> None:
    """The examples' ConfigMap name is a parameter: the overlay sets it once for all of them."""
    docs = k8s.load_docs(k8s.run_tool([k8s.tool("kubectl"), "kustomize", str(SERVING)]).stdout)
    k8s.validate_k8s(docs)
    deployments = k8s.by_kind(docs, "Deployment")
    assert len(deployments) == 2
    for deployment in deployments:
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        (source,) = container["envFrom"]
        assert source["configMapRef"]["name"] == "resnet-thread-advice"
    # the name the overlay sets is one a chart target writes (ci/model-from-image.yaml's style)
    assert "resnet-thread-advice" in (REPO / "docs" / "deploy.md").read_text()


@pytest.mark.tools
def test_restart_overlay_adds_one_named_rule_for_the_restarted_deployment(tmp_path: Path) -> None:
    """docs/examples/restart (deploy/components/restart): the Job restarts the Keras example's
    Deployment and the Role gets get+patch on exactly that name; valid and checkov clean."""
    docs = k8s.load_docs(
        k8s.run_tool([k8s.tool("kubectl"), "kustomize", str(RESTART_OVERLAY)]).stdout
    )
    k8s.validate_k8s(docs)
    job = k8s.one(docs, "Job")
    k8s.assert_hardened_advisor_job(job)
    args = [a.replace("$(TFTA_POD_NAMESPACE)", "ml") for a in k8s.advisor_container(job)["args"]]
    parsed = build_parser().parse_args(args)
    assert [str(ref) for ref in parsed.restart] == [
        f"deployment/{_deployment(KERAS_SERVER)['metadata']['name']}"
    ]
    base_role = k8s.one(k8s.load_file_docs(DEPLOY / "rbac.yaml"), "Role")
    rules = k8s.one(docs, "Role")["rules"]
    assert rules[: len(base_role["rules"])] == base_role["rules"]
    (extra,) = rules[len(base_role["rules"]) :]
    assert extra == {
        "apiGroups": ["apps"],
        "resources": ["deployments"],
        "resourceNames": [parsed.restart[0].name],
        "verbs": ["get", "patch"],
    }
    rendered = tmp_path / "restart.yaml"
    rendered.write_text(yaml.safe_dump_all(docs))
    k8s.assert_checkov_clean(k8s.checkov_report([rendered]))
    k8s.assert_skips_have_reasons(docs)


def _kustomize(path: Path) -> list[dict[str, Any]]:
    return k8s.load_docs(k8s.run_tool([k8s.tool("kubectl"), "kustomize", str(path)]).stdout)


@pytest.mark.tools
def test_fleet_overlay_builds_validates_and_passes_checkov(tmp_path: Path) -> None:
    """docs/examples/fleet (deploy/components/fleet alone): the planner CronJob, both
    ServiceAccounts, their Roles and RoleBindings and a NetworkPolicy, in the overlay's namespace,
    valid for 1.30 and 1.35 and checkov clean with reasoned skips only."""
    docs = _kustomize(FLEET_OVERLAY)
    assert sorted(f"{d['kind']}/{d['metadata']['name']}" for d in docs) == [
        "CronJob/tf-thread-advisor-planner",
        "NetworkPolicy/tf-thread-advisor-fleet",
        "Role/tf-thread-advisor-calibration",
        "Role/tf-thread-advisor-planner",
        "RoleBinding/tf-thread-advisor-calibration",
        "RoleBinding/tf-thread-advisor-planner",
        "ServiceAccount/tf-thread-advisor-calibration",
        "ServiceAccount/tf-thread-advisor-planner",
    ]
    assert {d["metadata"]["namespace"] for d in docs} == {"ml-serving"}
    k8s.validate_k8s(docs)
    rendered = tmp_path / "fleet.yaml"
    rendered.write_text(yaml.safe_dump_all(docs))
    k8s.assert_checkov_clean(k8s.checkov_report([rendered]))
    k8s.assert_skips_have_reasons(docs)


@pytest.mark.tools
def test_fleet_planner_hands_the_jobs_its_own_image() -> None:
    """`images:` does not rewrite arguments: the overlay's replacement copies the image it set
    into `plan --image=`, so the calibration Jobs run the same advisor image as the planner."""
    cron = k8s.one(_kustomize(FLEET_OVERLAY), "CronJob")
    pod = k8s.pod_spec(cron)
    (container,) = pod["containers"]
    assert container["image"] == "registry.example.com/mirror/tf-thread-advisor:0.1.0"
    args = container["args"]
    assert args[:3] == ["plan", "--apply", "--namespace=$(TFTA_POD_NAMESPACE)"]
    assert k8s.arg_value(args, "--image") == container["image"]
    assert k8s.arg_value(args, "--service-account") == "tf-thread-advisor-calibration"
    assert k8s.arg_value(args, "--max-age") == "30d"
    assert pod["serviceAccountName"] == "tf-thread-advisor-planner"
    assert pod["automountServiceAccountToken"] is True  # the advisor image alone: its own token
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    k8s.assert_container_hardened(container)
    assert pod["securityContext"]["runAsNonRoot"] is True
    # the component as shipped: same image in both places, so an overlay without images: works
    (shipped,) = k8s.pod_spec(
        k8s.one(k8s.load_file_docs(FLEET_COMPONENT / "planner.yaml"), "CronJob")
    )["containers"]
    assert k8s.arg_value(shipped["args"], "--image") == shipped["image"]
    assert shipped["args"].index(f"--image={shipped['image']}") == 3  # the replacement's index


@pytest.mark.tools
def test_fleet_component_rbac_is_least_privilege() -> None:
    docs = _kustomize(FLEET_OVERLAY)
    assert_fleet_rbac(docs, "tf-thread-advisor-planner", "tf-thread-advisor-calibration")
    calibration = [
        d
        for d in k8s.by_kind(docs, "ServiceAccount")
        if d["metadata"]["name"].endswith("-calibration")
    ]
    assert [sa["automountServiceAccountToken"] for sa in calibration] == [False]


@pytest.mark.tools
def test_fleet_component_adds_to_the_base(tmp_path: Path) -> None:
    """The component beside deploy/'s hand-written Job: both identities added, the base's Role
    unchanged, the Job still hardened with its token in the advisor alone."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(DEPLOY, overlay)],
                "components": [os.path.relpath(FLEET_COMPONENT, overlay)],
            }
        )
    )
    docs = _kustomize(overlay)
    k8s.validate_k8s(docs)
    roles = {d["metadata"]["name"]: d for d in k8s.by_kind(docs, "Role")}
    assert sorted(roles) == [
        "tf-thread-advisor",
        "tf-thread-advisor-calibration",
        "tf-thread-advisor-planner",
    ]
    base = k8s.one(k8s.load_file_docs(DEPLOY / "rbac.yaml"), "Role")
    assert roles["tf-thread-advisor"]["rules"] == base["rules"]
    k8s.assert_hardened_advisor_job(k8s.one(docs, "Job"))
    assert_fleet_rbac(docs, "tf-thread-advisor-planner", "tf-thread-advisor-calibration")
    for doc in docs:
        assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "tf-thread-advisor"
    # no right to patch workloads, so the planner skips a workload that asks for a restart
    (container,) = k8s.pod_spec(k8s.one(docs, "CronJob"))["containers"]
    assert container["args"][-1] == "--restart-forbidden"


@pytest.mark.tools
def test_fleet_restart_component_adds_the_restart_and_its_one_right(tmp_path: Path) -> None:
    """deploy/components/fleet-restart after fleet: the planner passes --restart and the
    calibration identity may patch workloads; without it, it may not (fleet's own test)."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "namespace": "ml-serving",
                "components": [
                    os.path.relpath(FLEET_COMPONENT, overlay),
                    os.path.relpath(DEPLOY / "components" / "fleet-restart", overlay),
                ],
            }
        )
    )
    docs = _kustomize(overlay)
    k8s.validate_k8s(docs)
    assert_fleet_rbac(
        docs, "tf-thread-advisor-planner", "tf-thread-advisor-calibration", restart=True
    )
    (container,) = k8s.pod_spec(k8s.one(docs, "CronJob"))["containers"]
    assert container["args"][-1] == "--restart"
    args = [a.replace("$(TFTA_POD_NAMESPACE)", "ml-serving") for a in container["args"]]
    parsed = build_parser().parse_args(args)
    assert parsed.restart is True and parsed.restart_forbidden is False


@pytest.mark.tools
def test_strict_validation_can_fail(kustomized: list[dict[str, Any]]) -> None:
    """The validator really is strict: a misspelt field in the Job is rejected."""
    job = k8s.one(kustomized, "Job")
    broken = yaml.safe_load(yaml.safe_dump(job))
    broken["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFS"] = True
    with pytest.raises(AssertionError, match="readOnlyRootFS"):
        k8s.validate_k8s([broken])


@pytest.mark.tools
def test_checkov_passes_with_reasoned_skips_only(
    kustomized: list[dict[str, Any]], tmp_path: Path
) -> None:
    rendered = tmp_path / "kustomized.yaml"
    rendered.write_text(yaml.safe_dump_all(kustomized))
    report = k8s.checkov_report([rendered, TF_SERVING, KERAS_SERVER, ADVICE_READER])
    k8s.assert_checkov_clean(report)
    docs = kustomized + k8s.load_file_docs(TF_SERVING) + k8s.load_file_docs(KERAS_SERVER)
    docs += k8s.load_file_docs(ADVICE_READER)
    k8s.assert_skips_have_reasons(docs)


@pytest.mark.tools
def test_checkov_catches_a_weakened_job(kustomized: list[dict[str, Any]], tmp_path: Path) -> None:
    """The lint gate is live: dropping readOnlyRootFilesystem makes checkov fail."""
    job = yaml.safe_load(yaml.safe_dump(k8s.one(kustomized, "Job")))
    del job["spec"]["template"]["spec"]["containers"][0]["securityContext"][
        "readOnlyRootFilesystem"
    ]
    path = tmp_path / "weak.yaml"
    path.write_text(yaml.safe_dump(job))
    assert "CKV_K8S_22" in k8s.failed_check_ids(k8s.checkov_report([path]))


@pytest.mark.tools
def test_hadolint_passes_on_the_dockerfile() -> None:
    proc = k8s.run_tool(
        [k8s.tool("hadolint"), "--config", str(REPO / ".hadolint.yaml"), str(REPO / "Dockerfile")],
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ignored = yaml.safe_load((REPO / ".hadolint.yaml").read_text()).get("ignored", [])
    config_text = (REPO / ".hadolint.yaml").read_text()
    for rule in ignored:
        # every ignore carries a written reason right above it
        before = config_text.split(f"- {rule}")[0].rstrip().splitlines()[-1]
        assert before.strip().startswith("#"), f"{rule} is ignored without a reason"


@pytest.mark.tools
def test_checkov_passes_on_the_dockerfile() -> None:
    k8s.assert_checkov_clean(k8s.checkov_report([REPO / "Dockerfile"], framework="dockerfile"))


@pytest.mark.tools
def test_production_component_adds_the_planners_reading_rights_only(tmp_path: Path) -> None:
    """deploy/components/production beside the fleet component: the planner's second Role and
    its NetworkPolicy to Prometheus, the URL and headers from an optional ConfigMap, the
    credentials as files of an optional Secret; valid and checkov clean."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    production = REPO / "deploy" / "components" / "production"
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "namespace": "ml-serving",
                "components": [
                    os.path.relpath(FLEET_COMPONENT, overlay),
                    os.path.relpath(production, overlay),
                ],
            }
        )
    )
    docs = _kustomize(overlay)
    k8s.validate_k8s(docs)
    rendered = tmp_path / "production.yaml"
    rendered.write_text(yaml.safe_dump_all(docs))
    k8s.assert_checkov_clean(k8s.checkov_report([rendered]))
    k8s.assert_skips_have_reasons(docs)
    (binding,) = [
        b for b in k8s.by_kind(docs, "RoleBinding") if b["roleRef"]["name"].endswith("-production")
    ]
    assert [s["name"] for s in binding["subjects"]] == ["tf-thread-advisor-planner"]
    (policy,) = [
        p
        for p in k8s.by_kind(docs, "NetworkPolicy")
        if p["metadata"]["name"].endswith("prometheus")
    ]
    assert policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "planner"
    (container,) = k8s.pod_spec(k8s.one(docs, "CronJob"))["containers"]
    env = {e["name"]: e for e in container["env"]}
    for name, key in (
        ("TFTA_PROMETHEUS_URL", "url"),
        ("TFTA_PROMETHEUS_HEADERS", "headers"),
        ("TFTA_PROMETHEUS_SELECTOR", "selector"),
    ):
        ref = env[name]["valueFrom"]["configMapKeyRef"]
        assert ref == {"name": "tf-thread-advisor-prometheus", "key": key, "optional": True}
    k8s.assert_container_hardened(container)
    (volume,) = [v for v in k8s.pod_spec(k8s.one(docs, "CronJob"))["volumes"] if "secret" in v]
    assert volume["secret"] == {"secretName": "tf-thread-advisor-prometheus", "optional": True}
