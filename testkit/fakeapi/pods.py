"""Pods as the cluster would have made them, for the fake API server's lists: a workload's pods
(owned through its ReplicaSet or directly, spec copied from its template) and bare pods.

Inputs, not expected outputs: each test decides when they started and what they run with.
"""

from __future__ import annotations

import copy
import uuid
from datetime import datetime, timezone
from typing import Any

#: the suffix a Deployment's ReplicaSet and pods carry (label pod-template-hash)
TEMPLATE_HASH = "5d8f7c9b6"


def _time(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(spec: dict[str, Any], started: datetime, phase: str) -> dict[str, Any]:
    statuses = []
    for container in spec.get("containers") or []:
        state = {"running": {"startedAt": _time(started)}} if phase == "Running" else {}
        statuses.append({"name": container["name"], "ready": phase == "Running", "state": state})
    return {"phase": phase, "startTime": _time(started), "containerStatuses": statuses}


def pod_of(
    owner: dict[str, Any],
    suffix: str,
    *,
    started: datetime,
    phase: str = "Running",
    cpu_now: str | None = None,
) -> dict[str, Any]:
    """A pod of ``owner`` (a Deployment, StatefulSet or DaemonSet from ``apps.workload``), made
    from its template; ``cpu_now`` is the CPU limit the kubelet reports after an in-place
    resize (status and spec, as a resize leaves them)."""
    meta, template = owner["metadata"], owner["spec"]["template"]
    labels = dict(template["metadata"].get("labels") or {})
    if owner["kind"] == "Deployment":
        labels["pod-template-hash"] = TEMPLATE_HASH
        controller = {"kind": "ReplicaSet", "name": f"{meta['name']}-{TEMPLATE_HASH}"}
        name = f"{meta['name']}-{TEMPLATE_HASH}-{suffix}"
    else:
        controller = {"kind": owner["kind"], "name": meta["name"]}
        name = f"{meta['name']}-{suffix}"
    spec = copy.deepcopy(template["spec"])
    spec.setdefault("nodeName", "node-a")
    status = _status(spec, started, phase)
    if cpu_now is not None:
        pairs = zip(spec["containers"], status["containerStatuses"], strict=True)
        for container, reported in pairs:
            container.setdefault("resources", {}).setdefault("limits", {})["cpu"] = cpu_now
            reported["resources"] = {"limits": {"cpu": cpu_now}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "labels": labels,
            "annotations": dict(template["metadata"].get("annotations") or {}),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    **controller,
                    "uid": str(uuid.uuid4()),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
        "status": status,
    }


def bare_pod(
    namespace: str,
    name: str,
    *,
    container: dict[str, Any],
    started: datetime,
    phase: str = "Running",
) -> dict[str, Any]:
    """A pod nothing owns, with one container ``server`` (``container``'s keys added)."""
    spec = {
        "containers": [{"name": "server", "image": "registry.example.com/m:1", **container}],
        "nodeName": "node-a",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": spec,
        "status": _status(spec, started, phase),
    }
