"""The Jobs fleet mode derives, through the real tools: strict schema validation for the oldest and
newest supported Kubernetes (kubernetes-validate) and checkov, as the shipped manifests are checked
(test_manifests_tools.py). The pod shapes are tests/support/fleet_workloads.py's.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.fleet.derive import DerivedJob, JobSettings, derive_job
from advisor.fleet.optin import read_ask
from advisor.keys import LABEL_COMPONENT, LABEL_NAME, PLANNED_SELECTOR
from tests.support import k8s_checks as k8s
from tests.support.fleet_workloads import NAMESPACE, SETTINGS, container, deployment, shapes, view

#: pod-level resources are in the API from Kubernetes 1.32 (PodLevelResources)
POD_LEVEL_RESOURCES_FROM = "1.35"

#: what a fleet install puts beside the planner, as the chart does for its advisor pods: the
#: calibration pods serve nothing and talk only to DNS and the API server
CALIBRATION_NETWORK_POLICY: dict[str, Any] = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "NetworkPolicy",
    "metadata": {"name": "tf-thread-advisor-calibration", "namespace": NAMESPACE},
    "spec": {
        "podSelector": {
            "matchLabels": dict(pair.split("=", 1) for pair in PLANNED_SELECTOR.split(","))
        },
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [],
        "egress": [
            {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
            {"ports": [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 6443}]},
        ],
    },
}


#: every knob of plan that shapes the Job turned: pull secrets, a priority class, the allowance
FULL_SETTINGS = dataclasses.replace(
    SETTINGS,
    image_pull_secrets=("mirror-creds",),
    priority_class="batch-low",
    startup_allowance_s=1800,
)


def _derive(kind: Any, workload: dict[str, Any]) -> DerivedJob:
    return derive_job(
        view(workload, kind),
        read_ask(workload["metadata"]["annotations"]),
        configmap="resnet-thread-advice",
        settings=FULL_SETTINGS,
    )


@pytest.fixture(scope="module")
def derived() -> dict[str, DerivedJob]:
    return {name: _derive(kind, workload) for name, (kind, workload) in shapes().items()}


def _pod_level_resources() -> dict[str, Any]:
    return deployment(
        container(
            "server",
            resources={"requests": {"cpu": "2", "memory": "2Gi"}},
            mounts=[{"name": "models", "mountPath": "/models"}],
        ),
        volumes=[{"name": "models", "persistentVolumeClaim": {"claimName": "resnet-models"}}],
        resources={
            "requests": {"cpu": "3", "memory": "3Gi"},
            "limits": {"cpu": "3", "memory": "3Gi"},
        },
    )


@pytest.mark.tools
def test_the_shapes_are_real_workloads() -> None:
    """The inputs are what an API server accepts, or the Jobs would be derived from fiction."""
    k8s.validate_k8s(workload for _, workload in shapes().values())


@pytest.mark.tools
def test_derived_jobs_validate_strictly(derived: dict[str, DerivedJob]) -> None:
    k8s.validate_k8s(job.manifest for job in derived.values())
    k8s.validate_k8s([CALIBRATION_NETWORK_POLICY])


@pytest.mark.tools
def test_derived_jobs_are_hardened_like_the_shipped_one(derived: dict[str, DerivedJob]) -> None:
    for job in derived.values():
        k8s.assert_hardened_advisor_job(job.manifest)


@pytest.mark.tools
def test_pod_level_resources_validate_where_the_api_has_them() -> None:
    import kubernetes_validate

    job = _derive("Deployment", _pod_level_resources())
    kubernetes_validate.validate(job.manifest, POD_LEVEL_RESOURCES_FROM, strict=True)
    assert job.manifest["spec"]["template"]["spec"]["resources"]["limits"]["cpu"] == "3"
    # the oldest supported version has no such field: the serving pod could not have had one
    with pytest.raises(kubernetes_validate.ValidationError, match="resources"):
        kubernetes_validate.validate(job.manifest, k8s.K8S_VERSIONS[0], strict=True)


@pytest.mark.tools
def test_the_validation_can_fail(derived: dict[str, DerivedJob]) -> None:
    broken = copy.deepcopy(derived["pvc"].manifest)
    broken["spec"]["template"]["spec"]["initContainers"][0]["volumeMounts"][1]["readonly"] = True
    with pytest.raises(AssertionError, match="readonly"):
        k8s.validate_k8s([broken])


def _write(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all(docs))
    return path


@pytest.mark.tools
def test_checkov_passes_with_reasoned_skips_only(
    derived: dict[str, DerivedJob], tmp_path: Path
) -> None:
    # as plan --print-jobs prints them: with their lint annotations
    docs = [job.printed for job in derived.values()]
    docs += [_derive("Deployment", _pod_level_resources()).printed, CALIBRATION_NETWORK_POLICY]
    k8s.assert_checkov_clean(k8s.checkov_report([_write(tmp_path / "jobs.yaml", docs)]))
    k8s.assert_skips_have_reasons(docs)


@pytest.mark.tools
def test_each_skip_is_one_the_job_needs(derived: dict[str, DerivedJob], tmp_path: Path) -> None:
    """Without its skip annotations, as it is created, each Job fails exactly the checks its
    printed form skips: no blanket exception, none a shape does not trigger."""
    for name, job in derived.items():
        skipped = {check for _, check, _ in k8s.checkov_skips([job.printed])}
        bare = job.manifest
        assert not list(k8s.checkov_skips([bare])), name
        path = _write(tmp_path / f"{name}.yaml", [bare, CALIBRATION_NETWORK_POLICY])
        assert k8s.failed_check_ids(k8s.checkov_report([path])) == skipped, name


@pytest.mark.tools
def test_checkov_catches_a_copy_that_may_escalate(
    derived: dict[str, DerivedJob], tmp_path: Path
) -> None:
    """The lint gate is live on the init container too."""
    weak = copy.deepcopy(derived["pvc"].manifest)
    weak["spec"]["template"]["spec"]["initContainers"][0]["securityContext"][
        "allowPrivilegeEscalation"
    ] = True
    path = _write(tmp_path / "weak.yaml", [weak, CALIBRATION_NETWORK_POLICY])
    assert "CKV_K8S_20" in k8s.failed_check_ids(k8s.checkov_report([path]))


@pytest.mark.tools
def test_the_policy_selects_the_calibration_pods(derived: dict[str, DerivedJob]) -> None:
    selector = CALIBRATION_NETWORK_POLICY["spec"]["podSelector"]["matchLabels"]
    assert set(selector) == {LABEL_NAME, LABEL_COMPONENT}
    for job in derived.values():
        labels = job.manifest["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items()
        assert (
            job.manifest["metadata"]["namespace"]
            == CALIBRATION_NETWORK_POLICY["metadata"]["namespace"]
        )


@pytest.mark.tools
def test_pinned_images_pulled_always_need_no_skip(tmp_path: Path) -> None:
    digest = "@sha256:" + "0" * 64
    workload = deployment(
        container(image="registry.example.com/resnet-serving" + digest, imagePullPolicy="Always")
    )
    settings = JobSettings(
        image="registry.example.com/tf-thread-advisor" + digest,
        service_account=SETTINGS.service_account,
        image_pull_policy="Always",
    )
    job = derive_job(
        view(workload, "Deployment"),
        read_ask(workload["metadata"]["annotations"]),
        configmap="resnet-thread-advice",
        settings=settings,
    )
    assert not list(k8s.checkov_skips([job.printed]))
    path = _write(tmp_path / "pinned.yaml", [job.manifest, CALIBRATION_NETWORK_POLICY])
    k8s.assert_checkov_clean(k8s.checkov_report([path]))
    k8s.validate_k8s([job.manifest])
