"""v1 PersistentVolumeClaims for the fake API server: what ``plan`` lists to learn the access
modes of the claim a model lives on (the list itself: testkit/fakeapi/lists.py).

GET on one named claim, authorized by the server's rules (core group), 404 with ``details.kind``
for one that does not exist; other methods are 405 (the advisor never writes a claim). A seed is
checked as a real server checks a create, so a test cannot store a claim no cluster would hold:

- decoding against the claim's schema (testkit/fakeapi/schema.py): a wrong type or an undeclared
  field is refused (what ``fieldValidation=Strict`` answers);
- the validation of ``ValidatePersistentVolumeClaimSpec``: at least one access mode, each one the
  server knows, ``ReadWriteOncePod`` alone, a ``resources.requests`` storage size; the name a DNS
  subdomain, labels and annotations valid;
- the server's part: uid, creationTimestamp, resourceVersion, ``spec.volumeMode`` Filesystem and
  the status: ``Pending`` until bound, or, with ``bound_modes``, ``Bound`` with the access modes
  and capacity of the PersistentVolume (which may allow more modes than the claim asked for).
"""

from __future__ import annotations

import copy
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from testkit.fakeapi import meta as meta_checks
from testkit.fakeapi import schema
from testkit.fakeapi.errors import ApiError, not_found

ITEM = re.compile(r"^/api/v1/namespaces/([^/]+)/persistentvolumeclaims/([^/]+)$")
RESOURCE = "persistentvolumeclaims"
#: the access modes the API server accepts (core/v1 PersistentVolumeAccessMode)
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")


def claim(
    namespace: str,
    name: str,
    modes: list[str],
    *,
    storage: str = "10Gi",
    bound_modes: list[str] | None = None,
) -> dict[str, Any]:
    """A PersistentVolumeClaim asking for ``modes``; bound to a PersistentVolume with
    ``bound_modes`` when given (``Claims.put`` fills the status)."""
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"accessModes": list(modes), "resources": {"requests": {"storage": storage}}},
    }
    if bound_modes is not None:
        obj["spec"]["volumeName"] = f"pv-{name}"
        obj["status"] = {"accessModes": list(bound_modes)}
    return obj


class Claims:
    """The PersistentVolumeClaims of one fake server (it holds the lock while calling in)."""

    def __init__(self, next_rv: Callable[[], str]) -> None:
        self._next_rv = next_rv
        self._store: dict[tuple[str, str], dict[str, Any]] = {}

    def put(self, body: dict[str, Any]) -> dict[str, Any]:
        """Store ``body`` (from ``claim()``) as created by someone else and bound (or not) by
        the cluster; ApiError when a real server would refuse to create it."""
        status = copy.deepcopy(body.get("status") or {})
        try:
            decoded = schema.decode(body, "V1PersistentVolumeClaim", "PersistentVolumeClaim")
        except schema.DecodeError as exc:
            raise ApiError(400, "BadRequest", str(exc)) from None
        if decoded.unknown:
            unknown = ", ".join(f'unknown field "{path}"' for path in decoded.unknown)
            raise ApiError(400, "BadRequest", f"strict decoding error: {unknown}")
        obj = decoded.obj
        meta = obj.setdefault("metadata", {})
        name = str(meta.get("name") or "")
        causes = _invalid_causes(obj)
        if causes:
            raise ApiError(
                422,
                "Invalid",
                f'PersistentVolumeClaim "{name}" is invalid: {"; ".join(causes)}',
                {"name": name, "kind": "PersistentVolumeClaim"},
            )
        spec = obj["spec"]
        spec.setdefault("volumeMode", "Filesystem")
        if spec.get("volumeName"):
            obj["status"] = {
                "phase": "Bound",
                "accessModes": status.get("accessModes") or list(spec["accessModes"]),
                "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            }
        else:
            obj["status"] = {"phase": "Pending"}
        meta.update(
            uid=str(uuid.uuid4()),
            creationTimestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            resourceVersion=self._next_rv(),
        )
        self._store[(meta["namespace"], name)] = obj
        return copy.deepcopy(obj)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        found = self._store.get((namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def remove(self, namespace: str, name: str) -> dict[str, Any] | None:
        """Forget the claim (``kubectl delete pvc``); what was stored, None when nothing was."""
        return self._store.pop((namespace, name), None)

    def all(self) -> list[dict[str, Any]]:
        """Every stored claim (the list's input)."""
        return list(self._store.values())

    def handle(
        self,
        request: Any,
        match: re.Match[str],
        authorize: Callable[[str, str, str, str, str], None],
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """One request (the server's ``Recorded``) for the claim in ``match`` (``ITEM``)."""
        namespace, name = match.group(1), match.group(2)
        if request.method != "GET":
            raise ApiError(
                405, "MethodNotAllowed", f"the fake does not serve {request.method} here"
            )
        authorize("get", namespace, name, "", RESOURCE)
        found = self.get(namespace, name)
        if found is None:
            raise not_found(RESOURCE, name)
        return 200, found, {}


def _invalid_causes(obj: dict[str, Any]) -> list[str]:
    """What ``ValidatePersistentVolumeClaim`` says of a new claim."""
    meta = obj["metadata"]
    causes = meta_checks.subdomain_causes(str(meta.get("name") or ""), "metadata.name")
    causes += meta_checks.label_causes(meta.get("labels") or {})
    causes += meta_checks.annotation_causes(meta.get("annotations") or {})
    spec = obj.get("spec") or {}
    modes = spec.get("accessModes") or []
    if not modes:
        causes.append("spec.accessModes: Required value: at least 1 access mode is required")
    supported = ", ".join(f'"{mode}"' for mode in ACCESS_MODES)
    causes += [
        f'spec.accessModes: Unsupported value: "{mode}": supported values: {supported}'
        for mode in modes
        if mode not in ACCESS_MODES
    ]
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        causes.append(
            "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"
        )
    if "storage" not in ((spec.get("resources") or {}).get("requests") or {}):
        causes.append("spec.resources[storage]: Required value")
    return causes
