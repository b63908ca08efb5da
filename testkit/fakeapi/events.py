"""core/v1 Events for the fake API server: a POST to a namespace's events, and lists of them.

As a real server checks an Event created through core/v1 (the old style, with no ``eventTime``):
authorized as ``create`` on ``events`` (core), the namespace must exist, the body is decoded
against the Event's schema (an undeclared field is 400 with ``fieldValidation=Strict``), the
name must be a DNS subdomain (``generateName`` fills it in), ``involvedObject.namespace`` must be
the Event's namespace (422 ``Invalid``), and a name in use is 409 ``AlreadyExists``. A dry run is
never stored. The API server's event TTL is not modelled: an Event stays until the test ends.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Callable
from typing import Any

from testkit.fakeapi import meta as meta_checks
from testkit.fakeapi import schema
from testkit.fakeapi.errors import ApiError


class Events:
    def __init__(self, next_rv: Callable[[], str]) -> None:
        self.next_rv = next_rv
        self.store: dict[tuple[str, str], dict[str, Any]] = {}

    def all(self) -> list[dict[str, Any]]:
        return [self.store[key] for key in sorted(self.store)]

    def create(self, request: Any, namespace: str) -> tuple[int, dict[str, Any], dict[str, str]]:
        """A POST's answer, once the server authorized it and found the namespace."""
        headers: dict[str, str] = {}
        obj = schema.decode_request(
            request.body,
            request.query,
            headers,
            api_version="v1",
            kind="Event",
            model="CoreV1Event",
        )
        meta = obj.setdefault("metadata", {})
        meta_checks.in_namespace(meta, namespace)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
        name = str(meta.get("name") or "")
        causes = (
            meta_checks.subdomain_causes(name, "metadata.name")
            if name
            else ["metadata.name: Required value: name or generateName is required"]
        )
        involved = obj.get("involvedObject") or {}
        if involved.get("namespace") != namespace:
            causes.append(
                f'involvedObject.namespace: Invalid value: "{involved.get("namespace", "")}": '
                "does not match event.namespace"
            )
        if causes:
            raise ApiError(
                422,
                "Invalid",
                f'Event "{name}" is invalid: {"; ".join(causes)}',
                {"name": name, "kind": "Event"},
            )
        if (namespace, name) in self.store:
            raise ApiError(
                409,
                "AlreadyExists",
                f'events "{name}" already exists',
                {"name": name, "kind": "events"},
            )
        meta.update(
            uid=str(uuid.uuid4()),
            creationTimestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        if request.query.get("dryRun") == "All":
            return 201, obj, headers
        meta["resourceVersion"] = self.next_rv()
        self.store[(namespace, name)] = obj
        return 201, copy.deepcopy(obj), headers
