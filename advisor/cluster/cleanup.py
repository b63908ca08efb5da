"""Deleting advice ConfigMaps on uninstall: only the named ones, and only if the advisor wrote them.

``helm uninstall`` leaves the advice behind: the Jobs write it, so Helm never owned it, and a
Deployment may still mount it. The chart's opt-in post-delete hook calls this. It reads each named
ConfigMap and deletes it only when it carries the advisor's labels, with the uid and
resourceVersion just read as preconditions: an object someone replaced in between is not deleted
unseen. Names instead of a label-selector list keep the hook's Role to get and delete on exactly
the chart's ConfigMaps (a ``list`` cannot be limited by resourceNames).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from advisor.cluster.config import Connection
from advisor.cluster.rest import send
from advisor.cluster.writer import ConfigMapWriter
from advisor.errors import ConflictError
from advisor.keys import APP_NAME, LABEL_MANAGED_BY, LABEL_NAME
from advisor.retry import Conflict, Deadline, RetryPolicy, until_no_conflict

log = logging.getLogger(__name__)

#: the labels every advice ConfigMap carries (advisor.recommend.render_configmap)
ADVICE_LABELS = {LABEL_NAME: APP_NAME, LABEL_MANAGED_BY: APP_NAME}

Action = Literal["deleted", "would delete", "absent", "kept"]


@dataclass(frozen=True)
class CleanupOutcome:
    where: str
    action: Action
    why: str = ""


def foreign_labels(obj: dict[str, Any]) -> str | None:
    """Why ``obj`` is not an advice ConfigMap by its labels, or None when it is one."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for key, value in ADVICE_LABELS.items():
        if labels.get(key) != value:
            found = repr(labels[key]) if key in labels else "missing"
            return f"not written by {APP_NAME} (label {key} is {found})"
    return None


class AdviceDeleter(ConfigMapWriter):
    """One named advice ConfigMap, as the cleanup hook's ServiceAccount sees it."""

    role_hint = "cleanup Role of the chart (templates/cleanup-rbac.yaml)"
    required_verbs = "get, delete"

    def delete_if_advice(self, *, dry_run: bool = False) -> CleanupOutcome:
        deadline = Deadline(self.policy)

        def attempt(_conflicts: int) -> CleanupOutcome | Conflict:
            stored = self.read(deadline)
            if stored is None:
                return CleanupOutcome(self.where, "absent")
            problem = foreign_labels(stored)
            if problem:
                return CleanupOutcome(self.where, "kept", problem)
            meta = stored.get("metadata") or {}
            status = self._delete(meta.get("uid"), meta.get("resourceVersion"), deadline, dry_run)
            if status == 200:
                return CleanupOutcome(self.where, "would delete" if dry_run else "deleted")
            if status == 404:
                return CleanupOutcome(self.where, "absent")
            # 409: changed since the read (a CronJob run wrote a new advice): look again
            return Conflict()

        return until_no_conflict(
            attempt,
            deadline=deadline,
            give_up=lambda _conflicts, _last: ConflictError(
                f"{self.where} kept changing while deleting it; kept it"
            ),
            on_conflict=lambda: log.warning("%s changed since it was read; re-reading", self.where),
        )

    def _delete(self, uid: Any, version: Any, deadline: Deadline, dry_run: bool) -> int:
        # the DeleteOptions as the client serializes its model: unset fields left out
        preconditions = {"resourceVersion": version, "uid": uid}
        options = {"preconditions": {k: v for k, v in preconditions.items() if v is not None}}
        query = {"dryRun": "All" if dry_run else None}
        resp = self._request(
            "delete",
            deadline,
            lambda timeout: send(
                self.connection.api_client,
                "DELETE",
                self.path,
                query=query,
                body=options,
                content_type=None,
                timeout=timeout,
            ),
        )
        if resp.status in (200, 202, 404, 409):
            return 200 if resp.status == 202 else resp.status
        raise self._error("delete", resp)


def delete_advice(
    connection: Connection,
    namespace: str,
    names: list[str],
    *,
    policy: RetryPolicy | None = None,
    dry_run: bool = False,
) -> list[CleanupOutcome]:
    """Each named ConfigMap deleted if it is an advice; the outcome of each, in order."""
    return [
        AdviceDeleter(connection, name, namespace, policy=policy).delete_if_advice(dry_run=dry_run)
        for name in dict.fromkeys(names)
    ]
