"""Whether the calibration pod can read the model where the server keeps it: a claim that only
one node (or one pod) may mount, and object storage, are ``skipped`` with what to use instead.

Access modes, as Kubernetes enforces them: ``ReadWriteOnce`` lets one node mount the volume (every
pod on that node may share it), ``ReadWriteOncePod`` exactly one pod in the cluster. A calibration
pod could share a ReadWriteOnce claim only on the node a serving replica runs on; placing it there
needs the replicas' pods and the node the volume is attached to (VolumeAttachments) read at the
moment the Job is created, and the replica may move before the pod starts. Anywhere else it waits
in Multi-Attach until its deadline. So such a model is skipped rather than pinned to a node. A
claim the volume's PersistentVolume also allows as ``ReadOnlyMany`` or ``ReadWriteMany`` (the
claim's ``status.accessModes`` once bound) may be mounted on any node.

Object storage (``gs://``, ``s3://``, ...) is read by the server with its own credentials; the
copy container has none and runs ``cp``.

Pure: the views of the serving container and of the namespace's claims in, a message or None
out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from advisor.fleet.tf_serving import BASE_PATH_ENV, BASE_PATH_FLAG, flag_values
from advisor.models.kube import Container, KubeClaim

#: the modes any number of nodes may mount a volume with
SHARED_MODES = frozenset({"ReadOnlyMany", "ReadWriteMany"})
#: the schemes of remote storage TensorFlow Serving reads through its file systems
OBJECT_STORAGE_SCHEMES = ("gs", "s3", "az", "hdfs", "http", "https")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
_INSTEAD_OF_CLAIM = (
    "use a ReadOnlyMany or ReadWriteMany claim, bake the model into the serving image, or "
    "serve it from an image volume or a ConfigMap"
)
_INSTEAD_OF_OBJECT_STORAGE = (
    "serve the model from a volume or the image, or run the advisor as a Job with the "
    "credentials yourself (docs/deploy.md)"
)


# --------------------------------------------------------------------------------------------------
# Object storage


def object_storage_scheme(path: str) -> str | None:
    """The scheme of ``path`` when it names remote storage (``gs``, ``s3``...); None otherwise."""
    match = _SCHEME.match(path.strip())
    scheme = match.group(1).lower() if match else None
    return scheme if scheme in OBJECT_STORAGE_SCHEMES else None


def object_storage_problem(path: str, where: str) -> str | None:
    """Why a model at ``path`` (named by ``where``) cannot be calibrated; None when it is not
    in object storage."""
    scheme = object_storage_scheme(path)
    if scheme is None:
        return None
    return (
        f"{where} is {path!r}: the server reads its model from object storage ({scheme}://), "
        f"which the calibration pod's copy cannot read: {_INSTEAD_OF_OBJECT_STORAGE}"
    )


def serving_model_problem(container: Container) -> str | None:
    """Why the serving container's own model path cannot be copied: TensorFlow Serving's
    ``--model_base_path`` (in its command or args, as ``=X`` or ``X``, also inside a shell
    string) or the official image's ``MODEL_BASE_PATH`` env naming object storage. A
    ``--model_config_file`` is a file the planner cannot read: what it names is left alone."""
    name = container.label
    for value in flag_values(container, BASE_PATH_FLAG):
        problem = object_storage_problem(value, f"container {name}'s {BASE_PATH_FLAG}")
        if problem:
            return problem
    for entry in container.env:
        if entry.get("name") == BASE_PATH_ENV:
            problem = object_storage_problem(
                str(entry.get("value") or ""), f"container {name}'s env {BASE_PATH_ENV}"
            )
            if problem:
                return problem
    return None


# --------------------------------------------------------------------------------------------------
# Claims


def claim_problem(
    volume: str,
    claim_name: str,
    claims: Mapping[str, KubeClaim] | None,
    *,
    template_modes: Iterable[str] | None = None,
    template: str | None = None,
) -> str | None:
    """Why the calibration pod cannot mount PersistentVolumeClaim ``claim_name`` (the model's
    ``volume``); None when it can. ``claims`` are the namespace's by name (None: not read, only
    a claim template's own modes are checked); ``template`` names the StatefulSet's claim
    template the claim was made from, ``template_modes`` its ``spec.accessModes``."""
    stored = claims.get(claim_name) if claims is not None else None
    held = stored.access_modes if stored is not None else ()
    modes = list(dict.fromkeys([*(template_modes or ()), *held]))
    where = f"the model is in volume {volume}, on PersistentVolumeClaim {claim_name}"
    if template is not None:
        where += f" (from the StatefulSet's claim template {template})"
    if modes and not SHARED_MODES & set(modes):
        only = ("access modes are " if len(modes) > 1 else "access mode is ") + " and ".join(modes)
        reach = (
            "only one pod may mount it, a serving replica"
            if modes == ["ReadWriteOncePod"]
            else "only pods on the node it is attached to may mount it, and the calibration Job "
            "is not placed there"
        )
        return f"{where}, whose {only}: {reach}: {_INSTEAD_OF_CLAIM}"
    if claims is not None and stored is None:
        return (
            f"{where}, which does not exist in the namespace: the calibration pod could not start"
        )
    return None
