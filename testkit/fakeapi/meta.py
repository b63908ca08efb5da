"""ObjectMeta validation as the API server does it (apimachinery's ``ValidateObjectMeta``), shared
by every kind the fake stores: names, labels, annotations and ownerReferences.

Each check returns the causes (``field: Invalid value: ...``) a 422 joins; an empty list is valid.
"""

from __future__ import annotations

import re
from typing import Any

from testkit.fakeapi.errors import ApiError

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
#: the total size of an object's annotations (keys and values)
ANNOTATIONS_MAX = 256 * 1024


def in_namespace(meta: dict[str, Any], namespace: str) -> None:
    """The body's namespace set to the request's; a different one is 400, as a real server
    refuses it before validating."""
    if meta.get("namespace") not in (None, namespace):
        raise ApiError(
            400,
            "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the request",
        )
    meta["namespace"] = namespace


def subdomain_causes(name: str, path: str) -> list[str]:
    if not name or len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        return [
            f'{path}: Invalid value: "{name}": a lowercase RFC 1123 subdomain '
            "must consist of lower case alphanumeric characters, '-' or '.'"
        ]
    return []


def dns_label_causes(name: Any, path: str) -> list[str]:
    if not isinstance(name, str) or len(name) > 63 or not DNS1123_LABEL.match(name):
        return [
            f'{path}: Invalid value: "{name}": a lowercase RFC 1123 label must consist of '
            "lower case alphanumeric characters or '-', and must start and end with an "
            "alphanumeric character"
        ]
    return []


def _bad_key(key: str) -> bool:
    prefix, _, short = key.rpartition("/")
    bad_prefix = bool(prefix) and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix))
    return bad_prefix or len(short) > 63 or not QUALIFIED.match(short)


def label_causes(labels: Any, path: str = "metadata.labels") -> list[str]:
    """Keys are qualified names (an optional DNS subdomain prefix), values label values."""
    if not isinstance(labels, dict):
        return [f"{path}: Invalid value: must be an object"]
    causes = []
    for key, value in labels.items():
        if _bad_key(key):
            causes.append(f'{path}: Invalid value: "{key}": name part must be valid')
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            causes.append(f'{path}: Invalid value: "{value}": a valid label value')
    return causes


def annotation_causes(annotations: Any, path: str = "metadata.annotations") -> list[str]:
    """Keys are qualified names, values strings; 256 KiB in all."""
    if not isinstance(annotations, dict):
        return [f"{path}: Invalid value: must be an object"]
    causes = [
        f'{path}: Invalid value: "{key}": name part must be valid'
        for key in annotations
        if _bad_key(key)
    ]
    size = sum(len(k) + len(str(v).encode()) for k, v in annotations.items())
    if size > ANNOTATIONS_MAX:
        causes.append(f"{path}: Too long: must have at most {ANNOTATIONS_MAX} bytes ({size})")
    return causes


def owner_reference_causes(refs: Any, path: str = "metadata.ownerReferences") -> list[str]:
    """apiVersion (with a version), kind, name and uid are required; one controller at most.
    Whether the owner exists is not checked: the garbage collector finds out later."""
    if not isinstance(refs, list):
        return [f"{path}: Invalid value: must be a list"]
    causes = []
    controllers = []
    for ref in refs:
        if not isinstance(ref, dict):
            causes.append(f"{path}: Invalid value: must be an object")
            continue
        api_version = str(ref.get("apiVersion") or "")
        if not api_version.rpartition("/")[2]:
            causes.append(
                f'{path}.apiVersion: Invalid value: "{api_version}": version must not be empty'
            )
        for key in ("kind", "name", "uid"):
            if not ref.get(key):
                causes.append(
                    f'{path}.{key}: Invalid value: "{ref.get(key) or ""}": {key} must not be empty'
                )
        if ref.get("controller") is True:
            controllers.append(f"{ref.get('kind')}/{ref.get('name')}")
    if len(controllers) > 1:
        causes.append(
            f"{path}: Invalid value: Only one reference can have Controller set to true. "
            f'Found "true" in references for {" and ".join(controllers)}'
        )
    return causes


def precondition_failure(body: Any, current: dict[str, Any], qualified: str) -> str | None:
    """DeleteOptions.preconditions: the uid/resourceVersion the client saw; the 409's message
    when ``current`` (``qualified``: ``jobs.batch "x"``) no longer has them."""
    given = (body.get("preconditions") or {}) if isinstance(body, dict) else {}
    for key, field_name in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
        expected, actual = given.get(key), current["metadata"].get(key)
        if expected is not None and expected != actual:
            return (
                f"Operation cannot be fulfilled on {qualified}: Precondition failed: "
                f"{field_name} in precondition: {expected}, {field_name} in object meta: {actual}"
            )
    return None
