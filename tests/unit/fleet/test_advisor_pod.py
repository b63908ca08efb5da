"""What the calibration Job brings of its own: the shipped Job's settings and plan's, the advisor's
exact ``run`` arguments, the API token mounted into the advisor alone; and in real clusters: the
service meshes' opt-outs, a copy that follows symlinks and fails the Job at once (and how plan
reads that failure), the pull secrets, the deadline's start-up allowance, the priority class, and
the lint annotations kept off the live Job."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml

from advisor.fleet.derive import DerivedJob, JobSettings, derive_job
from advisor.fleet.jobs import job_state
from advisor.fleet.naming import hash_of
from advisor.fleet.optin import read_ask
from advisor.keys import (
    ANN_BATCH_SIZE,
    ANN_BUDGET,
    ANN_CONCURRENCY,
    ANN_OBJECTIVE,
    ANN_P99_MS,
    ANN_RESTART,
)
from advisor.models.kube import KubeJob
from tests.support import REPO
from tests.support.fleet_workloads import (
    SERVING_IMAGE,
    SETTINGS,
    advisor,
    arg,
    ask,
    copier,
    deployment,
    derive,
    mounts,
    pod,
    pvc_deployment,
    shapes,
    statefulset,
    view,
    volumes,
)

TOKEN_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
SHIPPED_JOB = yaml.safe_load((REPO / "deploy" / "job.yaml").read_text())

#: what a namespace's or a pod's mesh settings ask for: a proxy in every pod
ASKS_FOR_A_PROXY = {
    "sidecar.istio.io/inject": "true",
    "linkerd.io/inject": "enabled",
    "kuma.io/sidecar-injection": "enabled",
    "consul.hashicorp.com/connect-inject": "true",
}


def derive_annotated(
    workload: dict[str, Any],
    settings: JobSettings = SETTINGS,
    annotations: dict[str, str] | None = None,
) -> DerivedJob:
    return derive_job(
        view(workload, "Deployment"),
        read_ask({**workload["metadata"]["annotations"], **(annotations or {})}),
        configmap="resnet-advice",
        settings=settings,
    )


def template(job: DerivedJob) -> dict[str, Any]:
    result: dict[str, Any] = job.manifest["spec"]["template"]
    return result


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
    metadata = template(derive_annotated(workload))["metadata"]
    assert metadata["annotations"] == {
        "sidecar.istio.io/inject": "false",
        "linkerd.io/inject": "disabled",
        "kuma.io/sidecar-injection": "disabled",
        "consul.hashicorp.com/connect-inject": "false",
    }
    assert metadata["labels"]["sidecar.istio.io/inject"] == "false"
    assert metadata["labels"]["kuma.io/sidecar-injection"] == "disabled"
    # the Job's own metadata is not the pod's: injectors read the pod
    assert (
        "sidecar.istio.io/inject"
        not in derive_annotated(workload).manifest["metadata"]["annotations"]
    )


@pytest.mark.parametrize("shape", sorted(shapes()))
def test_every_shape_opts_out(shape: str) -> None:
    kind, workload = shapes()[shape]
    job = derive_job(
        view(workload, kind),
        read_ask(workload["metadata"]["annotations"]),
        configmap="resnet-advice",
        settings=SETTINGS,
    )
    assert template(job)["metadata"]["annotations"]["linkerd.io/inject"] == "disabled"
    assert template(job)["metadata"]["labels"]["sidecar.istio.io/inject"] == "false"


# --------------------------------------------------------------------------------------------------
# The copy


def test_the_copy_follows_symlinks_and_keeps_its_last_words() -> None:
    copy_model = copier(derive_annotated(deployment()))
    assert copy_model["command"] == ["cp", "-RL", "/models/resnet/1", "/tfta-model/"]
    assert copy_model["terminationMessagePolicy"] == "FallbackToLogsOnError"


def test_a_failing_copy_fails_the_job_at_once() -> None:
    job = derive_annotated(deployment())
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
    state, reason = job_state(KubeJob.read(failed_job(message)))
    assert state == "failed"
    assert reason == (
        "model copy failed: the serving image's cp exited with code 1 "
        "(kubectl logs job/tfta-resnet-server-0123456789 -c copy-model says why)"
    )


def test_a_copys_exit_code_is_not_read_as_the_advisors() -> None:
    """Exit 4 of the advisor is a model error; of cp it is only cp's."""
    copy_failed = job_state(
        KubeJob.read(
            failed_job(
                "Container copy-model for pod ml/j-x failed with exit code 4 matching FailJob"
            )
        )
    )[1]
    assert "model copy failed" in copy_failed
    assert "exit 4: model" not in copy_failed
    advisor_failed = job_state(
        KubeJob.read(
            failed_job("Container advisor for pod ml/j-x failed with exit code 4 matching FailJob")
        )
    )[1]
    assert "model copy failed" not in advisor_failed
    assert advisor_failed.startswith("PodFailurePolicy: Container advisor")
    assert "(exit 4: model; the Job's logs say more)" in advisor_failed


def test_a_failure_without_a_container_is_read_as_written() -> None:
    job = failed_job("Job was active longer than specified deadline")
    job["status"]["conditions"][0]["reason"] = "DeadlineExceeded"
    assert job_state(KubeJob.read(job)) == (
        "failed",
        "DeadlineExceeded: Job was active longer than specified deadline",
    )


# --------------------------------------------------------------------------------------------------
# Pulls, deadline, priority


def test_the_serving_pods_pull_secrets_and_plans_reach_the_job_once_each() -> None:
    workload = deployment(imagePullSecrets=[{"name": "serving-registry"}, {"name": "mirror"}])
    settings = dataclasses.replace(SETTINGS, image_pull_secrets=("mirror", "advisor-registry"))
    spec = template(derive_annotated(workload, settings))["spec"]
    assert spec["imagePullSecrets"] == [
        {"name": "serving-registry"},
        {"name": "mirror"},
        {"name": "advisor-registry"},
    ]


def test_plans_pull_secrets_alone_reach_the_job() -> None:
    settings = dataclasses.replace(SETTINGS, image_pull_secrets=("advisor-registry",))
    spec = template(derive_annotated(deployment(), settings))["spec"]
    assert spec["imagePullSecrets"] == [{"name": "advisor-registry"}]
    assert "imagePullSecrets" not in template(derive_annotated(deployment()))["spec"]


def test_the_deadline_is_the_budget_and_the_start_up_allowance() -> None:
    job = derive_annotated(deployment(), annotations={ANN_BUDGET: "300"})
    assert job.manifest["spec"]["activeDeadlineSeconds"] == 300 + 900
    settings = dataclasses.replace(SETTINGS, startup_allowance_s=1800)
    job = derive_annotated(deployment(), settings, {ANN_BUDGET: "300"})
    assert job.manifest["spec"]["activeDeadlineSeconds"] == 300 + 1800


def test_the_priority_class_is_plans_never_the_serving_pods() -> None:
    workload = deployment(priorityClassName="serving-critical")
    assert "priorityClassName" not in template(derive_annotated(workload))["spec"]
    settings = dataclasses.replace(SETTINGS, priority_class="batch-low")
    assert (
        template(derive_annotated(workload, settings))["spec"]["priorityClassName"] == "batch-low"
    )


# --------------------------------------------------------------------------------------------------
# Lint annotations


def test_the_live_job_carries_no_lint_annotations_and_the_printed_one_does() -> None:
    job = derive_annotated(deployment())
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


# --------------------------------------------------------------------------------------------------
# The shipped Job's settings and plan's


def test_the_job_carries_the_shipped_jobs_settings() -> None:
    job = derive(deployment(), ask(**{ANN_BUDGET: "600"}))
    spec = job.manifest["spec"]
    assert job.manifest["apiVersion"] == "batch/v1"
    assert job.manifest["kind"] == "Job"
    # the shipped Job's rules, then the copy's own (test_advisor_pod.py)
    shipped_rules = SHIPPED_JOB["spec"]["podFailurePolicy"]["rules"]
    assert spec["podFailurePolicy"]["rules"][: len(shipped_rules)] == shipped_rules
    assert spec["backoffLimit"] == 3
    assert spec["ttlSecondsAfterFinished"] == 86400
    assert spec["activeDeadlineSeconds"] == 1500  # the 600 s sweep + the 900 s start-up allowance
    shipped_pod = SHIPPED_JOB["spec"]["template"]["spec"]
    (shipped,) = shipped_pod["containers"]
    assert pod(job)["restartPolicy"] == "Never"
    assert advisor(job)["env"] == shipped["env"]
    assert advisor(job)["securityContext"].items() >= shipped["securityContext"].items()
    assert pod(job)["securityContext"] == shipped_pod["securityContext"]
    (tmp,) = [m for m in advisor(job)["volumeMounts"] if m["mountPath"] == "/tmp"]
    assert volumes(job)[tmp["name"]] == {"name": tmp["name"], "emptyDir": {"sizeLimit": "1Gi"}}


def test_plans_settings_shape_the_job() -> None:
    settings = JobSettings(
        image="mirror.example/tfta@sha256:" + "a" * 64,
        service_account="calibrator",
        image_pull_policy="Always",
        ttl_s=600,
        backoff_limit=1,
        extra_args=("--configmap-annotation=reloader.stakater.com/match=true",),
    )
    job = derive(deployment(), settings=settings)
    assert job.manifest["spec"]["backoffLimit"] == 1
    assert job.manifest["spec"]["ttlSecondsAfterFinished"] == 600
    assert advisor(job)["image"] == settings.image
    assert advisor(job)["imagePullPolicy"] == "Always"
    assert pod(job)["serviceAccountName"] == "calibrator"
    assert advisor(job)["args"][-1] == "--configmap-annotation=reloader.stakater.com/match=true"


# --------------------------------------------------------------------------------------------------
# Arguments


def test_the_advisor_runs_with_exactly_the_documented_arguments() -> None:
    workload = pvc_deployment(nodeSelector={"zone": "b", "pool": "cpu"})
    the_ask = ask(
        **{
            ANN_OBJECTIVE: "slo",
            ANN_P99_MS: "25.5",
            ANN_BATCH_SIZE: "8",
            ANN_CONCURRENCY: "2",
            ANN_BUDGET: "450",
            ANN_RESTART: "true",
        }
    )
    settings = JobSettings(
        image=SETTINGS.image,
        service_account=SETTINGS.service_account,
        extra_args=("--configmap-annotation=team=ml",),
    )
    job = derive(workload, the_ask, settings=settings, configmap="resnet-advice")
    # the volume the copy reads the model from, as the calibration pod mounts it
    copied_from = {
        "volumes": [volumes(job)["models"]],
        "mounts": [mounts(copier(job))["models"]],
        "env": [],
    }
    assert advisor(job)["args"] == [
        "run",
        "--configmap=resnet-advice",
        "--namespace=$(TFTA_POD_NAMESPACE)",
        "--budget=450",
        "--objective=slo",
        "--p99-ms=25.5",
        "--batch-size=8",
        "--concurrency=2",
        "--model=/tfta-model/1",
        "--node-selector=pool=cpu",
        "--node-selector=zone=b",
        "--for-workload=deployment/resnet",
        "--for-container=server",
        f"--serving-image={SERVING_IMAGE}",
        "--serving-model-path=/models/resnet/1",
        "--cpu-from=limit",
        f"--spec-hash={job.spec_hash}",
        # the spec it measures, field by field: the provenance has the image, the model path
        # and the options already; a long value goes as its hash
        "--spec-field=node-selector=pool=cpu,zone=b",
        "--spec-field=requests.cpu=4",
        "--spec-field=requests.memory=4Gi",
        "--spec-field=limits.cpu=4",
        "--spec-field=limits.memory=4Gi",
        f"--spec-field=model-volume=#{hash_of(copied_from)}",
        "--spec-field=budget=450",
        "--spec-field=trial-mode=auto",
        "--spec-field=sweep-onednn=off",
        "--restart=deployment/resnet",
        "--configmap-annotation=team=ml",
    ]


def test_defaults_leave_out_the_bound_the_selector_and_the_restart() -> None:
    job = derive(deployment(), kind="Deployment")
    args = advisor(job)["args"]
    assert not any(a.startswith(("--p99-ms", "--node-selector", "--restart")) for a in args)
    assert arg(job, "--budget") == ["300"]
    assert arg(job, "--objective") == ["latency"]


def test_a_statefulset_is_named_and_restarted_as_kubectl_names_it() -> None:
    job = derive(statefulset(name="db"), ask(**{ANN_RESTART: "true"}), kind="StatefulSet")
    assert arg(job, "--for-workload") == ["statefulset/db"]
    assert arg(job, "--restart") == ["statefulset/db"]
    assert str(job.target.workload) == "statefulset/db"
    assert job.manifest["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"


def test_a_fractional_budget_gets_a_whole_second_deadline() -> None:
    job = derive(deployment(), ask(**{ANN_BUDGET: "90.5"}))
    assert arg(job, "--budget") == ["90.5"]
    assert job.manifest["spec"]["activeDeadlineSeconds"] == 91 + 900


# --------------------------------------------------------------------------------------------------
# Credentials


def test_the_token_reaches_the_advisor_container_alone() -> None:
    job = derive(pvc_deployment())
    assert pod(job)["automountServiceAccountToken"] is False
    assert volumes(job)["kube-api-access"] == {
        "name": "kube-api-access",
        "projected": {
            "sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                {
                    "configMap": {
                        "name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ]
        },
    }
    assert mounts(advisor(job))["kube-api-access"] == {
        "name": "kube-api-access",
        "mountPath": TOKEN_MOUNT,
        "readOnly": True,
    }
    copy_mounts = copier(job)["volumeMounts"]
    assert all(m["name"] != "kube-api-access" for m in copy_mounts)
    assert all(not m["mountPath"].startswith("/var/run/secrets") for m in copy_mounts)
