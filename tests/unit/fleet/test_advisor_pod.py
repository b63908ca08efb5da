"""What the calibration Job brings of its own in real clusters: the service meshes' opt-outs, a
copy that follows symlinks and fails the Job at once (and how plan reads that failure), the pull
secrets, the deadline's start-up allowance, the priority class, and the lint annotations kept off
the live Job."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from advisor.fleet.derive import DerivedJob, JobSettings, derive_job
from advisor.fleet.jobs import job_state
from advisor.fleet.optin import read_ask
from advisor.keys import ANN_BUDGET
from tests.support.fleet_workloads import SETTINGS, deployment, shapes

#: what a namespace's or a pod's mesh settings ask for: a proxy in every pod
ASKS_FOR_A_PROXY = {
    "sidecar.istio.io/inject": "true",
    "linkerd.io/inject": "enabled",
    "kuma.io/sidecar-injection": "enabled",
    "consul.hashicorp.com/connect-inject": "true",
}


def derive(
    workload: dict[str, Any],
    settings: JobSettings = SETTINGS,
    annotations: dict[str, str] | None = None,
) -> DerivedJob:
    return derive_job(
        "Deployment",
        workload,
        read_ask({**workload["metadata"]["annotations"], **(annotations or {})}),
        configmap="resnet-advice",
        settings=settings,
    )


def template(job: DerivedJob) -> dict[str, Any]:
    result: dict[str, Any] = job.manifest["spec"]["template"]
    return result


def copier(job: DerivedJob) -> dict[str, Any]:
    (only,) = template(job)["spec"]["initContainers"]
    return dict(only)


def failed_job(message: str, name: str = "tfta-resnet-server-0123456789") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ml"},
        "status": {
            "conditions": [
                {
                    "type": "FailureTarget",
                    "status": "True",
                    "reason": "PodFailurePolicy",
                    "message": message,
                }
            ]
        },
    }


# --------------------------------------------------------------------------------------------------
# Meshes


def test_the_calibration_pod_opts_out_of_every_meshs_injection() -> None:
    """The serving pod template (and the workload) ask for a proxy; the Job's pod template
    opts out, as a label and an annotation for Istio and Kuma (newer versions read the label,
    older the annotation), as an annotation for Linkerd and Consul."""
    workload = deployment()
    workload["metadata"]["annotations"].update(ASKS_FOR_A_PROXY)
    pod_template = workload["spec"]["template"]
    pod_template["metadata"]["labels"].update(
        {"sidecar.istio.io/inject": "true", "kuma.io/sidecar-injection": "enabled"}
    )
    pod_template["metadata"]["annotations"] = dict(ASKS_FOR_A_PROXY)
    metadata = template(derive(workload))["metadata"]
    assert metadata["annotations"] == {
        "sidecar.istio.io/inject": "false",
        "linkerd.io/inject": "disabled",
        "kuma.io/sidecar-injection": "disabled",
        "consul.hashicorp.com/connect-inject": "false",
    }
    assert metadata["labels"]["sidecar.istio.io/inject"] == "false"
    assert metadata["labels"]["kuma.io/sidecar-injection"] == "disabled"
    # the Job's own metadata is not the pod's: injectors read the pod
    assert "sidecar.istio.io/inject" not in derive(workload).manifest["metadata"]["annotations"]


@pytest.mark.parametrize("shape", sorted(shapes()))
def test_every_shape_opts_out(shape: str) -> None:
    kind, workload = shapes()[shape]
    job = derive_job(
        kind,
        workload,
        read_ask(workload["metadata"]["annotations"]),
        configmap="resnet-advice",
        settings=SETTINGS,
    )
    assert template(job)["metadata"]["annotations"]["linkerd.io/inject"] == "disabled"
    assert template(job)["metadata"]["labels"]["sidecar.istio.io/inject"] == "false"


# --------------------------------------------------------------------------------------------------
# The copy


def test_the_copy_follows_symlinks_and_keeps_its_last_words() -> None:
    copy_model = copier(derive(deployment()))
    assert copy_model["command"] == ["cp", "-RL", "/models/resnet/1", "/tfta-model/"]
    assert copy_model["terminationMessagePolicy"] == "FallbackToLogsOnError"


def test_a_failing_copy_fails_the_job_at_once() -> None:
    job = derive(deployment())
    rules = job.manifest["spec"]["podFailurePolicy"]["rules"]
    copy_rules = [r for r in rules if r.get("onExitCodes", {}).get("containerName") == "copy-model"]
    assert copy_rules == [
        {
            "action": "FailJob",
            "onExitCodes": {"containerName": "copy-model", "operator": "NotIn", "values": [0]},
        }
    ]
    # after the DisruptionTarget rule: a copy killed by a drain is retried, not failed
    disruption = next(i for i, r in enumerate(rules) if "onPodConditions" in r)
    assert rules.index(copy_rules[0]) > disruption
    # it names the init container the Job has
    assert copier(job)["name"] == "copy-model"


def test_plan_reads_a_failed_copy_as_model_copy_failed() -> None:
    message = (
        "Container copy-model for pod ml/tfta-resnet-server-0123456789-x7k2p failed with exit "
        "code 1 matching FailJob rule at index 3"
    )
    state, reason = job_state(failed_job(message))
    assert state == "failed"
    assert reason == (
        "model copy failed: the serving image's cp exited with code 1 "
        "(kubectl logs job/tfta-resnet-server-0123456789 -c copy-model says why)"
    )


def test_a_copys_exit_code_is_not_read_as_the_advisors() -> None:
    """Exit 4 of the advisor is a model error; of cp it is only cp's."""
    copy_failed = job_state(
        failed_job("Container copy-model for pod ml/j-x failed with exit code 4 matching FailJob")
    )[1]
    assert "model copy failed" in copy_failed
    assert "exit 4: model" not in copy_failed
    advisor_failed = job_state(
        failed_job("Container advisor for pod ml/j-x failed with exit code 4 matching FailJob")
    )[1]
    assert "model copy failed" not in advisor_failed
    assert advisor_failed.startswith("PodFailurePolicy: Container advisor")
    assert "(exit 4: model; the Job's logs say more)" in advisor_failed


def test_a_failure_without_a_container_is_read_as_written() -> None:
    job = failed_job("Job was active longer than specified deadline")
    job["status"]["conditions"][0]["reason"] = "DeadlineExceeded"
    assert job_state(job) == (
        "failed",
        "DeadlineExceeded: Job was active longer than specified deadline",
    )


# --------------------------------------------------------------------------------------------------
# Pulls, deadline, priority


def test_the_serving_pods_pull_secrets_and_plans_reach_the_job_once_each() -> None:
    workload = deployment(imagePullSecrets=[{"name": "serving-registry"}, {"name": "mirror"}])
    settings = dataclasses.replace(SETTINGS, image_pull_secrets=("mirror", "advisor-registry"))
    spec = template(derive(workload, settings))["spec"]
    assert spec["imagePullSecrets"] == [
        {"name": "serving-registry"},
        {"name": "mirror"},
        {"name": "advisor-registry"},
    ]


def test_plans_pull_secrets_alone_reach_the_job() -> None:
    settings = dataclasses.replace(SETTINGS, image_pull_secrets=("advisor-registry",))
    spec = template(derive(deployment(), settings))["spec"]
    assert spec["imagePullSecrets"] == [{"name": "advisor-registry"}]
    assert "imagePullSecrets" not in template(derive(deployment()))["spec"]


def test_the_deadline_is_the_budget_and_the_start_up_allowance() -> None:
    job = derive(deployment(), annotations={ANN_BUDGET: "300"})
    assert job.manifest["spec"]["activeDeadlineSeconds"] == 300 + 900
    settings = dataclasses.replace(SETTINGS, startup_allowance_s=1800)
    job = derive(deployment(), settings, {ANN_BUDGET: "300"})
    assert job.manifest["spec"]["activeDeadlineSeconds"] == 300 + 1800


def test_the_priority_class_is_plans_never_the_serving_pods() -> None:
    workload = deployment(priorityClassName="serving-critical")
    assert "priorityClassName" not in template(derive(workload))["spec"]
    settings = dataclasses.replace(SETTINGS, priority_class="batch-low")
    assert template(derive(workload, settings))["spec"]["priorityClassName"] == "batch-low"


# --------------------------------------------------------------------------------------------------
# Lint annotations


def test_the_live_job_carries_no_lint_annotations_and_the_printed_one_does() -> None:
    job = derive(deployment())
    assert not [k for k in job.manifest["metadata"]["annotations"] if k.startswith("checkov.io")]
    printed = job.printed["metadata"]["annotations"]
    skips = {k: v for k, v in printed.items() if k.startswith("checkov.io/skip")}
    assert skips == job.lint_annotations
    # the default images are not pinned by digest and pulled IfNotPresent: two skips at least
    assert {v.split("=", 1)[0] for v in skips.values()} >= {"CKV_K8S_43", "CKV_K8S_15"}
    # the rest of the printed Job is the live one
    printed_job = job.printed
    printed_job["metadata"]["annotations"] = {
        k: v for k, v in printed.items() if not k.startswith("checkov.io")
    }
    assert printed_job == job.manifest
