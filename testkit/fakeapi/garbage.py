"""The garbage collector, for the fake API server: what happens to an object whose owners go.

As the real one (kube-controller-manager's garbagecollector) does it: an owner is looked up by
kind and name in the dependent's namespace and counts as present only with the uid the reference
names, so a workload deleted and re-created under the same name does not keep the old one's
dependents; a dependent every owner of which is gone is deleted (and then its own dependents);
one that still has an owner loses the references to the others. Owners of a kind the fake does not
store (a ReplicaSet) are left alone: the fake cannot tell whether they exist.

The real collector works asynchronously, soon after; the fake runs it before each request it
handles, so a test sees the dangling object right after the request that made it, and not after
the next one. A cascading delete (``propagationPolicy`` Background or Foreground) runs it at once;
``Orphan`` removes the references to the deleted owner instead.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

#: (API group, kind) of every kind the fake stores, the kinds an owner can be resolved for
STORED_KINDS = frozenset(
    {
        ("", "ConfigMap"),
        ("", "Pod"),
        ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("batch", "Job"),
    }
)
#: (group, kind, namespace, name) -> the stored object or None
Lookup = Callable[[str, str, str, str], dict[str, Any] | None]


@dataclass
class Dependents:
    """One store whose objects the collector looks after, and the owner kinds it resolves for
    them (the fake's pods keep references to owners that were never stored: only their Job
    owners are resolved)."""

    store: MutableMapping[Any, dict[str, Any]]
    owner_kinds: frozenset[tuple[str, str]] = STORED_KINDS
    next_rv: Callable[[], str] | None = None


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def collect(dependents: list[Dependents], lookup: Lookup) -> list[dict[str, Any]]:
    """Delete what lost all its owners, until nothing changes; the deleted objects."""
    deleted: list[dict[str, Any]] = []
    changed = True
    while changed:
        changed = False
        for group in dependents:
            for key, obj in list(group.store.items()):
                meta = obj["metadata"]
                refs = meta.get("ownerReferences") or []
                if not refs:
                    continue
                gone = [ref for ref in refs if _gone(ref, meta.get("namespace", ""), group, lookup)]
                if not gone:
                    continue
                if len(gone) == len(refs):
                    del group.store[key]
                    deleted.append(obj)
                else:
                    meta["ownerReferences"] = [ref for ref in refs if ref not in gone]
                    if group.next_rv is not None:
                        meta["resourceVersion"] = group.next_rv()
                changed = True
    return deleted


def orphan(dependents: list[Dependents], uid: str) -> None:
    """``propagationPolicy: Orphan``: the dependents of ``uid`` stay, without the reference."""
    for group in dependents:
        for obj in group.store.values():
            meta = obj["metadata"]
            refs = meta.get("ownerReferences") or []
            kept = [ref for ref in refs if ref.get("uid") != uid]
            if len(kept) == len(refs):
                continue
            if kept:
                meta["ownerReferences"] = kept
            else:
                meta.pop("ownerReferences", None)
            if group.next_rv is not None:
                meta["resourceVersion"] = group.next_rv()


def _gone(ref: dict[str, Any], namespace: str, group: Dependents, lookup: Lookup) -> bool:
    kind = (group_of(str(ref.get("apiVersion", ""))), str(ref.get("kind", "")))
    if kind not in group.owner_kinds:
        return False
    owner = lookup(kind[0], kind[1], namespace, str(ref.get("name", "")))
    return owner is None or owner["metadata"].get("uid") != ref.get("uid")
