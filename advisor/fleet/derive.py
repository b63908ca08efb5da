"""The calibration Job of one opted-in workload container, derived from its pod template.

The advice holds for the CPUs it was measured on, so the Job measures the serving container in
its own shape: its exact resources (the CPU quota TensorFlow's pools are sized for), on the nodes
its pods may run on (nodeSelector, node affinity, tolerations, runtime class), with the very model
it serves, copied out of its image or its volume by an init container that runs the serving image.
The rest of the serving pod is left out: pod (anti-)affinity, spreading, host namespaces, its
priority, its ServiceAccount and a fixed nodeName place or empower a serving replica, and would
only keep the calibration pod from running or give it what it must not have.

The Job carries the settings of the shipped Job (deploy/job.yaml, the chart's
``tfta.jobSpecSettings``): the exit-code policy, the Downward API env, the restricted security
contexts, a /tmp emptyDir. Its API credentials are a projected token mounted into the advisor
container alone: the serving image's code (the copy) gets none.

Pure: the workload's view in (read once where it is listed; its helpers take the views too, and
what is copied into the Job comes from the views' properties), a plain dict out. This module
assembles the Job; ``serving_shape``, ``model_copy``, ``advisor_pod`` and ``naming`` build its
parts.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

from advisor.fleet.advisor_pod import (
    JobSettings,
    advisor_container,
    checkov_skips,
    job_spec_settings,
    own_volumes,
    run_args,
)
from advisor.fleet.errors import DeriveError
from advisor.fleet.model_copy import copy_container, model_source, serving_model_path
from advisor.fleet.naming import job_name
from advisor.fleet.optin import CalibrationAsk
from advisor.fleet.serving_shape import advisor_resources, node_pool, pod_spec
from advisor.fleet.spec import calibration_spec, spec_hash, spec_record
from advisor.keys import (
    ANN_CONFIGMAP,
    ANN_CONTAINER,
    ANN_JOB_POOL,
    ANN_JOB_WORKLOAD,
    APP_NAME,
    CALIBRATION_COMPONENT,
    LABEL_COMPONENT,
    LABEL_MANAGED_BY,
    LABEL_NAME,
    LABEL_POOL_HASH,
    LABEL_SPEC_HASH,
    MESH_OPT_OUT_ANNOTATIONS,
    MESH_OPT_OUT_LABELS,
    PLANNER_MANAGED_BY,
)
from advisor.models import CpuFrom, ServingTarget
from advisor.models.kube import Container, KubeClaim, KubeWorkload, PodSpec

# what the rest of the package and ``plan`` import from here: the deriving, its input and result
__all__ = [
    "DeriveError",
    "DerivedJob",
    "JobSettings",
    "derive_job",
    "serving_container",
]


@dataclass(frozen=True)
class DerivedJob:
    """One calibration Job: what the planner compares and counts it by, and its manifest.

    The manifest, several times the rest, is built when it is first asked for (the Job is
    created or printed): most workloads of a nightly plan fit their advice and need none. What
    can refuse a workload (``DeriveError``) is decided before, so building it never fails."""

    name: str
    spec_hash: str
    #: the node pool the Job is pinned to, readable, and its hash (the label)
    pool: str
    pool_hash: str
    #: the quota the Job runs under and what it stands for
    cpu: float
    cpu_from: CpuFrom
    target: ServingTarget
    #: builds the manifest and its lint annotations; the Job is what the fields above name
    build: Callable[[], _Manifest] = field(repr=False, compare=False)

    @cached_property
    def _built(self) -> _Manifest:
        return self.build()

    @property
    def manifest(self) -> dict[str, Any]:
        """The Job as it is created."""
        return self._built.manifest

    @property
    def lint_annotations(self) -> dict[str, str]:
        """The checkov skips a lint of the manifest needs, each with its reason."""
        return self._built.lint_annotations

    @property
    def printed(self) -> dict[str, Any]:
        """The manifest as ``plan --print-jobs`` prints it, for a reader or a linter: with the
        lint annotations. The Job created carries none: on a live object they would only say
        that a check was skipped to whoever reads it."""
        manifest = copy.deepcopy(self.manifest)
        manifest["metadata"]["annotations"].update(self.lint_annotations)
        return manifest


@dataclass(frozen=True)
class _Manifest:
    manifest: dict[str, Any]
    lint_annotations: dict[str, str]


# --------------------------------------------------------------------------------------------------
# The serving container


def serving_container(spec: PodSpec, ask: CalibrationAsk) -> Container:
    """The container the ask is about; DeriveError when it is not there or not unique.

    Init containers are never it, native sidecars (restartPolicy Always) included: the model is
    served by a main container."""
    containers = spec.containers
    names = [str(c.name) for c in containers]
    if ask.container is not None:
        for container in containers:
            if container.name == ask.container:
                return container
        init = {str(c.name) for c in spec.init_containers}
        why = (
            "names an init container (or a native sidecar), never the serving one"
            if ask.container in init
            else "names no container of its pod"
        )
        raise DeriveError(
            f"annotation {ANN_CONTAINER}={ask.container!r} {why} "
            f"(containers: {', '.join(names) or 'none'})"
        )
    if len(containers) == 1:
        return containers[0]
    if not containers:
        raise DeriveError("its pod template has no containers")
    raise DeriveError(
        f"its pod has {len(containers)} containers ({', '.join(names)}): set annotation "
        f"{ANN_CONTAINER} to the one that serves the model"
    )


# --------------------------------------------------------------------------------------------------
# The Job


def derive_job(
    workload: KubeWorkload,
    ask: CalibrationAsk,
    *,
    configmap: str,
    settings: JobSettings,
    claims: Mapping[str, KubeClaim] | None = None,
) -> DerivedJob:
    """The Job that measures ``workload``'s serving container in its own pod shape (``claims``:
    the namespace's PersistentVolumeClaims by name, to check the model's; None: not read)."""
    ref, namespace, uid = workload.ref, workload.namespace, workload.metadata.uid
    name = ref.name
    if not name or not namespace:
        raise DeriveError("the workload has no name or namespace")
    if not uid:
        raise DeriveError(
            f"{ref} has no uid (not read from the API server?): the Job's owner "
            "reference needs one, so that deleting the workload deletes its calibrations"
        )
    pod = workload.pod_spec
    if pod.empty:
        raise DeriveError(f"{ref} has no pod template")

    container = serving_container(pod, ask)
    container_name = str(container.name)
    image = container.image
    if not image:
        raise DeriveError(f"container {container_name} has no image to copy the model from")
    model_path = serving_model_path(ask.model_path, container)
    resources, quota, cpu_from = advisor_resources(container, pod)
    pool, pool_hash = node_pool(pod)
    source = model_source(workload, container, model_path, claims=claims)
    copy_mounts, source_volumes, copy_env = source
    # named by what it measures, not by every byte of the derived pod
    measured = calibration_spec(
        pod=pod,
        container=container,
        ask=ask,
        model_path=model_path,
        model_volume=(
            {"volumes": source_volumes, "mounts": copy_mounts, "env": copy_env}
            if source_volumes
            else None
        ),
        extra_args=settings.extra_args,
    )
    hashed = spec_hash(measured, workload=str(ref), container=container_name, configmap=configmap)
    target = ServingTarget(
        workload=ref,
        container=container_name,
        image=image,
        model_path=model_path,
        cpu_from=cpu_from,
        spec_hash=hashed,
        spec=spec_record(measured),
    )
    job = _Job(
        workload=workload,
        ask=ask,
        configmap=configmap,
        settings=settings,
        container=container,
        image=image,
        model_path=model_path,
        name=job_name(name, container_name, hashed),
        target=target,
        resources=resources,
        pool=pool,
        pool_hash=pool_hash,
        model_source=source,
    )
    return DerivedJob(
        name=job.name,
        spec_hash=hashed,
        pool=pool,
        pool_hash=pool_hash,
        cpu=quota,
        cpu_from=cpu_from,
        target=target,
        build=partial(_manifest, job),
    )


@dataclass(frozen=True)
class _Job:
    """What ``derive_job`` decided, from which the manifest is built."""

    workload: KubeWorkload
    ask: CalibrationAsk
    configmap: str
    settings: JobSettings
    container: Container
    image: str
    model_path: str
    name: str
    target: ServingTarget
    #: the advisor container's (the serving container's, its CPU limit set)
    resources: dict[str, Any]
    pool: str
    pool_hash: str
    #: the copy's mounts, the volumes they need, its env (``model_copy.model_source``)
    model_source: tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]


def _manifest(job: _Job) -> _Manifest:
    """The Job's manifest and the lint exceptions it needs."""
    workload, ask, settings, target = job.workload, job.ask, job.settings, job.target
    ref, pod, container = workload.ref, workload.pod_spec, job.container
    copy_mounts, source_volumes, copy_env = job.model_source
    spec = pod_spec(pod, settings)
    spec["initContainers"] = [
        copy_container(container, pod, model_path=job.model_path, mounts=copy_mounts, env=copy_env)
    ]
    args = run_args(
        ask,
        configmap=job.configmap,
        model_path=job.model_path,
        pod=pod,
        ref=str(ref),
        container=target.container,
        image=job.image,
        cpu_from=target.cpu_from,
        # the advice records the spec it was measured for, after --cpu-from as run's flags go
        spec=[
            f"--spec-hash={target.spec_hash}",
            *(f"--spec-field={k}={v}" for k, v in (target.spec or {}).items()),
        ],
    )
    args.extend(settings.extra_args)
    spec["containers"] = [advisor_container(settings, args, job.resources)]
    spec["volumes"] = [*own_volumes(), *source_volumes]
    manifest: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job.name,
            "namespace": workload.namespace,
            "labels": {
                LABEL_NAME: APP_NAME,
                LABEL_COMPONENT: CALIBRATION_COMPONENT,
                LABEL_MANAGED_BY: PLANNER_MANAGED_BY,
                LABEL_SPEC_HASH: target.spec_hash,
                LABEL_POOL_HASH: job.pool_hash,
            },
            "annotations": {
                ANN_JOB_WORKLOAD: str(ref),
                ANN_CONTAINER: target.container,
                ANN_CONFIGMAP: job.configmap,
                ANN_JOB_POOL: job.pool,
            },
            # not the controller: the workload's controller must not adopt or count the Job;
            # deleting the workload still garbage-collects it
            "ownerReferences": [
                {
                    "apiVersion": ref.kind.api_version,
                    "kind": ref.kind.value,
                    "name": ref.name,
                    "uid": workload.metadata.uid,
                    "controller": False,
                    "blockOwnerDeletion": False,
                }
            ],
        },
        "spec": {
            **job_spec_settings(ask, settings),
            "template": {
                "metadata": {
                    "labels": {
                        LABEL_NAME: APP_NAME,
                        LABEL_COMPONENT: CALIBRATION_COMPONENT,
                        LABEL_SPEC_HASH: target.spec_hash,
                        **MESH_OPT_OUT_LABELS,
                    },
                    "annotations": dict(MESH_OPT_OUT_ANNOTATIONS),
                },
                "spec": spec,
            },
        },
    }
    return _Manifest(manifest, checkov_skips(spec))
