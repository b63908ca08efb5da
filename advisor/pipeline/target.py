"""The serving container a run measures for: ``run --for-workload deployment/web --for-container
server ...``, recorded in the advice's provenance (``ServingTarget``).

Fleet mode's calibration Jobs pass it, so ``plan`` can later tell whether an advice was measured
for the workload as it is now, and ``status`` whether its quota stands for the container's CPU
limit or (a container without a limit) its CPU request. Every rule about the options is here,
for the CLI and Python callers alike; messages name the options (``errors.Opt``).

The probe cannot see the serving container, only the quota the Job runs under; what it can
check is logged as a warning, never a failure: a Job that measured for minutes has still
measured something true of its own pod.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any, get_args

from advisor.consumers.quota import same_quota
from advisor.errors import Opt, UsageError
from advisor.kubenames import dns1123_label_problem, label_value_problem
from advisor.models import (
    MAX_SPEC_FIELDS,
    CpuFrom,
    NodeProfile,
    ServingTarget,
    WorkloadRef,
)
from advisor.recommend.build import cpus_exclusive

log = logging.getLogger("advisor.publish")

#: ServingTarget's fields -> the option that sets each (``serving_target``'s, and run's flag)
FIELD_OPTIONS: Mapping[str, str] = {
    "workload": "for_workload",
    "container": "for_container",
    "image": "serving_image",
    "model_path": "serving_model_path",
    "cpu_from": "cpu_from",
    "spec_hash": "spec_hash",
    "spec": "spec_fields",
}
#: the fields that describe the container further, and so need the two that name it
_DETAILS = ("image", "model_path", "cpu_from", "spec_hash", "spec")
#: a recorded spec field: a key as plan writes them (resource names too), a short value
_SPEC_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
MAX_SPEC_VALUE = 64

Namer = Callable[[str], str]


def serving_target(
    *,
    for_workload: str | None = None,
    for_container: str | None = None,
    serving_image: str | None = None,
    serving_model_path: str | None = None,
    cpu_from: str | None = None,
    spec_hash: str | None = None,
    spec_fields: Mapping[str, str] | None = None,
) -> ServingTarget | None:
    """The target these options describe (None: none given); UsageError naming the option when
    they do not go together or a value is not one. ``for_workload`` takes kubectl's names
    (``deploy/web``, ``sts/db``) and is recorded as ``deployment/web``; ``cpu_from`` defaults to
    ``limit``."""
    values = {
        "workload": for_workload,
        "container": for_container,
        "image": serving_image,
        "model_path": serving_model_path,
        "cpu_from": cpu_from,
        "spec_hash": spec_hash,
        "spec": dict(spec_fields) if spec_fields else None,
    }
    return _target(values, lambda name: Opt(FIELD_OPTIONS[name]))


def check_target(target: ServingTarget) -> None:
    """A ServingTarget a Python caller built obeys the same rules (its workload one ``run`` may
    name, a kind ``plan`` calibrates)."""
    _target(
        {**target.model_dump(), "workload": str(target.workload)}, lambda name: f"target.{name}"
    )


def _target(values: Mapping[str, Any], name: Namer) -> ServingTarget | None:
    workload, container = values["workload"], values["container"]
    if workload is None and container is None:
        details = [field for field in _DETAILS if values[field] is not None]
        if details:
            raise UsageError(
                name(details[0]),
                " needs ",
                name("workload"),
                " and ",
                name("container"),
                ": it describes the serving container the advice is measured for",
            )
        return None
    if workload is None or container is None:
        given, missing = (
            ("workload", "container") if container is None else ("container", "workload")
        )
        raise UsageError(
            name(given),
            " needs ",
            name(missing),
            ": the advice is measured for one container of one workload",
        )
    # the restart targets' parser: kubectl's names, one spelling recorded
    try:
        ref = WorkloadRef.parse(workload)
    except ValueError as exc:
        raise UsageError(name("workload"), f" {workload!r} {exc}") from None
    problem = dns1123_label_problem(container)
    if problem:
        raise UsageError(name("container"), f" {container!r} {problem} (a container's name)")
    _check_details(values, name)
    return ServingTarget.model_validate(
        {
            **values,
            "workload": ref,
            "cpu_from": values["cpu_from"] or ServingTarget.model_fields["cpu_from"].default,
        }
    )


def _check_details(values: Mapping[str, Any], name: Namer) -> None:
    image, model_path = values["image"], values["model_path"]
    cpu_from, spec_hash = values["cpu_from"], values["spec_hash"]
    if image is not None and (not image or any(ch.isspace() for ch in image)):
        raise UsageError(name("image"), f" {image!r} is not an image reference")
    if model_path is not None and not model_path.strip():
        raise UsageError(name("model_path"), " must not be empty")
    choices = get_args(CpuFrom)
    if cpu_from is not None and cpu_from not in choices:
        raise UsageError(name("cpu_from"), f" {cpu_from!r} must be {' or '.join(choices)}")
    if spec_hash is not None:
        problem = label_value_problem(spec_hash) if spec_hash else "must not be empty"
        if problem:
            raise UsageError(name("spec_hash"), f": {problem} (it labels the Job)")
    spec = values["spec"] or {}
    if len(spec) > MAX_SPEC_FIELDS:
        raise UsageError(name("spec"), f": {len(spec)} fields, at most {MAX_SPEC_FIELDS}")
    for key, value in spec.items():
        if not _SPEC_KEY.fullmatch(key):
            raise UsageError(name("spec"), f" {key!r} is not a spec field's name")
        if not value or len(value) > MAX_SPEC_VALUE:
            raise UsageError(
                name("spec"), f" {key}: the value must hold 1 to {MAX_SPEC_VALUE} characters"
            )


def warn_on_probe(target: ServingTarget | None, node: NodeProfile) -> None:
    """Warnings where the node this run probed is not the one the target calls for: the
    calibration Job runs under the serving container's CPU limit, or under a limit equal to its
    CPU request (``cpu_from`` request), so a quota must be there, and it must be what the Job's
    pod asked for."""
    if target is None:
        return
    basis = "CPU request" if target.cpu_from == "request" else "CPU limit"
    # exclusive CPUs from the static CPU manager come with no CFS quota since 1.34: the CPUs are
    # the limit (recommend.build.cpus_exclusive)
    if node.quota_cpus is None and not cpus_exclusive(node):
        log.warning(
            "the advice is for the %s of %s (%s %s), but no CPU quota was found here: it is "
            "measured on %g unlimited CPUs; the calibration Job's limits.cpu must be that %s",
            basis,
            target.workload,
            Opt("cpu_from"),
            target.cpu_from,
            node.effective_cpus,
            basis,
        )
        return
    requested = node.downward_api.cpu_request_cpus if node.downward_api else None
    if (
        target.cpu_from == "request"
        and requested is not None
        and not same_quota(requested, node.quota_cpus)
    ):
        log.warning(
            "the advice is for the CPU request of %s (%s request) and is measured under a "
            "quota of %g CPUs, but this pod requests %g: a calibration Job for a request sets "
            "limits.cpu (and so its own request) to the serving container's request",
            target.workload,
            Opt("cpu_from"),
            node.quota_cpus,
            requested,
        )
