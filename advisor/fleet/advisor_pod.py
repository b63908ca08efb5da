"""What the calibration Job brings of its own, whatever the workload: the advisor container
(its ``run`` arguments, the Downward API env, the projected token mounted into it alone), the
volumes it needs, the Job-level settings (the exit-code policy, the deadline, the TTL), the
service meshes' opt-outs of sidecar injection and the security-lint exceptions the derived pod
needs (printed, never on the live Job).

These are the settings of the shipped Job (deploy/job.yaml, the chart's ``tfta.jobSpecSettings``).
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from advisor.errors import Retry, exit_codes
from advisor.fleet.naming import (
    ADVISOR_CONTAINER,
    COPY_CONTAINER,
    MODEL_MOUNT,
    MODEL_VOLUME,
    TMP_VOLUME,
    TOKEN_VOLUME,
)
from advisor.fleet.optin import CalibrationAsk
from advisor.models import OPTION, RESTART, CpuFrom, job_options
from advisor.models.kube import PodSpec, mapping

#: where the kubelet mounts the token it injects itself, and where the advisor reads it
TOKEN_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
#: the expiry the kubelet gives the token it injects itself (it renews it long before)
TOKEN_EXPIRATION_S = 3607
#: the advisor image's user (the shipped manifests' runAsUser)
ADVISOR_UID = 65532
#: what the Job's deadline (activeDeadlineSeconds, counted from the Job's start, pending pods
#: included) allows beyond the budget unless plan is told (--startup-allowance): up to 300 s for
#: scheduling and a node scale-up (a cluster autoscaler or Karpenter adds a node in 1-5 min), up
#: to 300 s for cold pulls of the 1.1 GB advisor image and a serving image as large (the kubelet
#: pulls one after the other by default: 2.2 GB at ~10 MB/s from a mirror, extraction included),
#: and 300 s for the model copy, TensorFlow's start-up and the publish
DEFAULT_STARTUP_ALLOWANCE_S = 900
#: the writable /tmp of the advisor (Python, Keras and the trial children write there)
TMP_SIZE_LIMIT = "1Gi"

#: exit codes a retry cannot fix: the Job fails at once (each error class's ``retry``)
FAIL_JOB_EXIT_CODES = exit_codes(Retry.FAIL_JOB)
#: retried, counting towards backoffLimit: a noisy node, an unreachable API server, a conflict.
#: Interrupted (130) is in no rule, so a drained pod's SIGTERM reaches the DisruptionTarget rule
COUNT_EXIT_CODES = exit_codes(Retry.COUNT)

#: a copy that fails (a missing model path, unreadable files, a full emptyDir) fails the same way
#: on a retry: the Job fails at once, and plan reads the rule's message as "model copy failed".
#: After the DisruptionTarget rule, so a copy killed by a drain is retried like the advisor
COPY_FAILED_RULE = {
    "action": "FailJob",
    "onExitCodes": {"containerName": COPY_CONTAINER, "operator": "NotIn", "values": [0]},
}

#: checkov's resource checks on a container: (check, requests|limits, resource)
_RESOURCE_CHECKS = (
    ("CKV_K8S_10", "requests", "cpu"),
    ("CKV_K8S_11", "limits", "cpu"),
    ("CKV_K8S_12", "requests", "memory"),
    ("CKV_K8S_13", "limits", "memory"),
)


@dataclass(frozen=True)
class JobSettings:
    """``plan``'s flags that shape every Job it derives."""

    image: str
    service_account: str
    image_pull_policy: str = "IfNotPresent"
    ttl_s: int = 86400
    backoff_limit: int = 3
    #: appended to the advisor's ``run`` arguments (e.g. a --configmap-annotation)
    extra_args: tuple[str, ...] = ()
    #: Secrets to pull the advisor image with, beside the serving pod's own (which pull the
    #: serving image the copy runs)
    image_pull_secrets: tuple[str, ...] = ()
    #: what the deadline allows beyond the budget (DEFAULT_STARTUP_ALLOWANCE_S)
    startup_allowance_s: int = DEFAULT_STARTUP_ALLOWANCE_S
    #: the calibration pods' priorityClassName (None: the cluster's default)
    priority_class: str | None = None


# --------------------------------------------------------------------------------------------------
# The Job


def job_spec_settings(ask: CalibrationAsk, settings: JobSettings) -> dict[str, Any]:
    """The Job-level settings of the shipped Job (the chart's ``tfta.jobSpecSettings``)."""
    return {
        "backoffLimit": settings.backoff_limit,
        # the sweep's budget plus scheduling, image pulls, the copy, TF start-up and the publish:
        # a deadline at the budget would kill a run before it writes anything
        "activeDeadlineSeconds": math.ceil(ask.options.budget_s) + settings.startup_allowance_s,
        "ttlSecondsAfterFinished": settings.ttl_s,
        "podFailurePolicy": {
            "rules": [
                {
                    "action": "FailJob",
                    "onExitCodes": {
                        "containerName": ADVISOR_CONTAINER,
                        "operator": "In",
                        "values": FAIL_JOB_EXIT_CODES,
                    },
                },
                {
                    "action": "Count",
                    "onExitCodes": {
                        "containerName": ADVISOR_CONTAINER,
                        "operator": "In",
                        "values": COUNT_EXIT_CODES,
                    },
                },
                # eviction, preemption, node drain: not the advisor's fault, retried uncounted
                {
                    "action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                },
                COPY_FAILED_RULE,
            ]
        },
    }


# --------------------------------------------------------------------------------------------------
# The advisor container


def run_args(
    ask: CalibrationAsk,
    *,
    configmap: str,
    model_path: str,
    pod: PodSpec,
    ref: str,
    container: str,
    image: str,
    cpu_from: CpuFrom,
    spec: Sequence[str] = (),
) -> list[str]:
    """``run``'s arguments, ``spec`` (--spec-hash and --spec-field) after --cpu-from (without the
    extra args)."""
    args = [
        "run",
        f"--configmap={configmap}",
        "--namespace=$(TFTA_POD_NAMESPACE)",
    ]
    # the workload's options (its annotations over plan's defaults), from the option table; a
    # file inside the model directory is where the Job's copy of the model has it
    copied = f"{MODEL_MOUNT}/{posixpath.basename(model_path)}"
    for option in job_options():
        value = getattr(ask.options, option.field)
        if (arg := option.run_arg(value, model_dir=copied)) is not None:
            args.append(arg)
    args.append(f"{OPTION['model_path'].flag}={copied}")
    # the Job's node pool, recorded in the advice: status reports consumers not pinned to it
    selector = pod.node_selector
    args += [f"--node-selector={k}={v}" for k, v in sorted(selector.items())]
    args += [
        f"--for-workload={ref}",
        f"--for-container={container}",
        f"--serving-image={image}",
        f"--serving-model-path={model_path}",
        f"--cpu-from={cpu_from}",
        *spec,
    ]
    if ask.restart:
        args.append(f"{RESTART.run_flag}={ref}")
    return args


def advisor_container(
    settings: JobSettings, args: list[str], resources: dict[str, Any]
) -> dict[str, Any]:
    return {
        "name": ADVISOR_CONTAINER,
        "image": settings.image,
        "imagePullPolicy": settings.image_pull_policy,
        "args": args,
        # Downward API: the probe cross-checks the cgroup quota against the pod's CPU limit and
        # the advice records the node it was measured on
        "env": [
            _field_env("TFTA_NODE_NAME", "spec.nodeName"),
            _field_env("TFTA_POD_NAME", "metadata.name"),
            _field_env("TFTA_POD_NAMESPACE", "metadata.namespace"),
            _resource_env("TFTA_CPU_LIMIT", "limits.cpu"),
            _resource_env("TFTA_CPU_REQUEST", "requests.cpu"),
        ],
        # exactly the serving container's: the advice holds for the CPUs it was measured on
        "resources": resources,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "privileged": False,
            "runAsNonRoot": True,
            "runAsUser": ADVISOR_UID,
            "runAsGroup": ADVISOR_UID,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": TMP_VOLUME, "mountPath": "/tmp"},
            {"name": MODEL_VOLUME, "mountPath": MODEL_MOUNT, "readOnly": True},
            {"name": TOKEN_VOLUME, "mountPath": TOKEN_MOUNT, "readOnly": True},
        ],
    }


def _field_env(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _resource_env(name: str, resource: str) -> dict[str, Any]:
    ref = {"containerName": ADVISOR_CONTAINER, "resource": resource, "divisor": "1m"}
    return {"name": name, "valueFrom": {"resourceFieldRef": ref}}


def own_volumes() -> list[dict[str, Any]]:
    return [
        # the only writable path of the advisor
        {"name": TMP_VOLUME, "emptyDir": {"sizeLimit": TMP_SIZE_LIMIT}},
        # the copy of the model
        {"name": MODEL_VOLUME, "emptyDir": {}},
        # what the kubelet injects when automounting, for the advisor container alone
        {
            "name": TOKEN_VOLUME,
            "projected": {
                "sources": [
                    {
                        "serviceAccountToken": {
                            "path": "token",
                            "expirationSeconds": TOKEN_EXPIRATION_S,
                        }
                    },
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
                                    "fieldRef": {
                                        "apiVersion": "v1",
                                        "fieldPath": "metadata.namespace",
                                    },
                                }
                            ]
                        }
                    },
                ]
            },
        },
    ]


# --------------------------------------------------------------------------------------------------
# Lint exceptions


def checkov_skips(spec: Mapping[str, Any]) -> dict[str, str]:
    """Security-lint exceptions the derived pod needs, each with its reason (as deploy/job.yaml
    carries them): only those its shape really triggers."""
    reasons: list[str] = []
    containers = [*spec.get("initContainers", []), *spec.get("containers", [])]
    if any("@" not in str(c.get("image", "")) for c in containers):
        reasons.append(
            "CKV_K8S_43=the advisor image is plan's --image and the copy runs the serving "
            "image as the workload names it; pin digests there"
        )
    if any(c.get("imagePullPolicy") != "Always" for c in containers):
        reasons.append(
            "CKV_K8S_15=the pull policies are plan's --image-pull-policy and the serving "
            "container's own, so the copy pulls the image as the server does"
        )
    resources = mapping(spec["containers"][0].get("resources"))
    pod_resources = mapping(spec.get("resources"))
    for check, key, what in _RESOURCE_CHECKS:
        if what in mapping(resources.get(key)):
            continue
        declared = (
            "; the pod-level resources declare one"
            if what in mapping(pod_resources.get(key))
            else ""
        )
        reasons.append(
            f"{check}=the advisor runs with exactly the serving container's resources, which "
            f"declare no {what} {key[:-1]}{declared}"
        )
    return {f"checkov.io/skip{i}": reason for i, reason in enumerate(reasons, start=1)}
