"""Restarting the workloads that consume an advice: ``run --restart deployment/NAME``.

TensorFlow reads its thread settings once, at process start, and a pod reads ``envFrom`` once, at
creation, so new advice reaches running pods only through new pods. This does what ``kubectl
rollout restart`` does (a pod-template annotation change), with the advice's content hash as the
value: the same advice gives the same value, the patch changes nothing and no rollout starts.

Every named workload is checked before the sweep (it exists; the Role lets us patch it, by a
server-side dry run), so a typo or a missing rule fails in seconds, not after the measurement.
Only the named workloads are ever read or patched; the Role can name them one by one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from advisor.cluster.config import Connection
from advisor.cluster.http import Response, Target, final_error, namespace_missing, request
from advisor.cluster.rest import Resource, send
from advisor.errors import (
    AdvisorError,
    InterruptedRunError,
    Opt,
    RestartFailedError,
    RestartTargetError,
)
from advisor.keys import ADVICE_HASH_ANNOTATION, FIELD_MANAGER
from advisor.models import WorkloadRef
from advisor.retry import Deadline, RetryPolicy

#: what the dry run before the sweep sets (it stores nothing)
PREFLIGHT_VALUE = "preflight"
#: a patch touching the fields it names and nothing else (what `kubectl rollout restart` sends)
STRATEGIC_MERGE = "application/strategic-merge-patch+json"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Restarted:
    """One workload after its patch: ``rolled`` when its pod template changed (a rollout)."""

    workload: WorkloadRef
    rolled: bool
    generation: int | None


@dataclass
class WorkloadRestarter:
    """The ``--restart`` workloads of one run, as the advisor's ServiceAccount sees them."""

    connection: Connection
    namespace: str
    workloads: Sequence[WorkloadRef]
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    #: the workloads patched so far by ``restart`` (what an interruption reports)
    done: list[Restarted] = field(default_factory=list)

    def where(self, ref: WorkloadRef) -> str:
        return f"{ref.resource}/{ref.name} in namespace {self.namespace}"

    # ---------------------------------------------------------------------------------------------
    # public operations

    def preflight(self) -> None:
        """Before the sweep: every workload exists and the Role lets us patch it (dry run).
        RestartTargetError (one line, naming the workload) otherwise."""
        deadline = Deadline(self.policy)
        for ref in self.workloads:
            resp = self._read(ref, deadline)
            if resp.status != 200:
                raise self._target_error("get", ref, resp)
            resp = self._patch(ref, PREFLIGHT_VALUE, deadline, dry_run=True)
            if resp.status != 200:
                raise self._target_error("patch", ref, resp, dry_run=True)

    def restart(self, advice_hash: str, configmap_where: str) -> list[Restarted]:
        """Set every workload's pod-template annotation to ``advice_hash``, in order. A failure
        is a RestartFailedError that says which were and were not restarted (the ConfigMap,
        ``configmap_where``, stays written)."""
        deadline = Deadline(self.policy)
        self.done = []
        for ref in self.workloads:
            try:
                self.done.append(self._restart_one(ref, advice_hash, deadline))
            except InterruptedRunError:
                raise  # the caller says what was written and restarted
            except AdvisorError as exc:
                raise RestartFailedError(
                    f"{configmap_where} was written, but restarting {ref} failed: {exc}; "
                    f"{self.progress()}"
                ) from None
        return list(self.done)

    def progress(self) -> str:
        """Which workloads were restarted and which were not (for a failure's one line)."""
        patched = {r.workload for r in self.done}
        done = ", ".join(str(r.workload) for r in self.done) or "none"
        left = ", ".join(str(w) for w in self.workloads if w not in patched) or "none"
        return f"restarted: {done}; not restarted: {left}"

    # ---------------------------------------------------------------------------------------------

    def _restart_one(self, ref: WorkloadRef, advice_hash: str, deadline: Deadline) -> Restarted:
        before = self._read(ref, deadline)
        if before.status != 200:
            raise self._error("get", ref, before)
        old_value = _template_annotations(before.body).get(ADVICE_HASH_ANNOTATION)
        resp = self._patch(ref, advice_hash, deadline, dry_run=False)
        if resp.status != 200:
            raise self._error("patch", ref, resp)
        generation = ((resp.body or {}).get("metadata") or {}).get("generation")
        outcome = Restarted(
            ref, rolled=old_value != advice_hash, generation=generation if generation else None
        )
        log.info(
            "%s: %s %s",
            ref,
            ADVICE_HASH_ANNOTATION,
            "changed, pods are being replaced" if outcome.rolled else "unchanged, no rollout",
        )
        return outcome

    def _read(self, ref: WorkloadRef, deadline: Deadline) -> Response:
        path = _path(ref, self.namespace)
        return request(
            self.connection,
            self.policy,
            deadline,
            f"get {self.where(ref)}",
            lambda timeout: send(self.connection.api_client, "GET", path, timeout=timeout),
        )

    def _patch(
        self, ref: WorkloadRef, value: str, deadline: Deadline, *, dry_run: bool
    ) -> Response:
        # A strategic merge patch: it touches this one annotation and nothing else.
        body = {
            "spec": {"template": {"metadata": {"annotations": {ADVICE_HASH_ANNOTATION: value}}}}
        }
        path = _path(ref, self.namespace)
        query = {"dryRun": "All" if dry_run else None, "fieldManager": FIELD_MANAGER}
        return request(
            self.connection,
            self.policy,
            deadline,
            f"patch {self.where(ref)}" + (" (dry run)" if dry_run else ""),
            lambda timeout: send(
                self.connection.api_client,
                "PATCH",
                path,
                query=query,
                content_type=STRATEGIC_MERGE,
                body=body,
                timeout=timeout,
            ),
        )

    def _target_error(
        self, verb: str, ref: WorkloadRef, resp: Response, *, dry_run: bool = False
    ) -> AdvisorError:
        """Before the sweep, a missing or forbidden workload is a RestartTargetError."""
        error = self._error(verb, ref, resp, dry_run=dry_run)
        if resp.status == 403 or (resp.status == 404 and not namespace_missing(resp)):
            return RestartTargetError(Opt("restart"), f" {ref}: {error}")
        return error

    def _error(
        self, verb: str, ref: WorkloadRef, resp: Response, *, dry_run: bool = False
    ) -> AdvisorError:
        attempt = f"{verb} {self.where(ref)}" + (" (dry run)" if dry_run else "")
        target = Target(
            f"{ref.resource}/{ref.name}",
            self.namespace,
            "the Role bound to the advisor's ServiceAccount must allow verbs get, patch on "
            f"{ref.resource} (apiGroup apps) with resourceNames [{ref.name}]",
            not_found=f"no {ref.kind.value.lower()} named {ref.name} in namespace {self.namespace}",
        )
        return final_error(resp, verb, attempt, self.connection, target)


def _path(ref: WorkloadRef, namespace: str) -> str:
    return Resource(ref.kind.api_version, ref.resource).path(namespace, ref.name)


def _template_annotations(obj: dict[str, Any] | None) -> dict[str, Any]:
    node: Any = obj or {}
    for key in ("spec", "template", "metadata", "annotations"):
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}
