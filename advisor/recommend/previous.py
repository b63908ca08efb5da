"""The advice an advice replaced, kept in the ConfigMap so a regression can be undone; and the
ConfigMap that undoes it.

When new advice replaces advice with other data, the ConfigMap keeps the replaced one in one
annotation (``previous``): its data, its provenance (verbatim, so the advice written back parses
as it did), its schema version, when its data had changed, and a short summary for people. Only
one level is kept: the replaced advice's own ``previous`` is dropped. A ConfigMap written before
this existed has none, and parses as before.

Undoing (``reverted_configmap``) writes the previous data and provenance back, with a new
data-changed time (the consumers roll onto it as onto any new advice), drops ``previous`` (so
the same advice is never reverted twice in a row: only newer advice brings a ``previous``
again), records what was undone and why (``reverted``), and adds the undone setting to the
settings rejected for that serving target (``rejected``), which later writes carry along.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from advisor.keys import (
    DATA_CHANGED_ANNOTATION,
    HASH_ANNOTATION,
    PREVIOUS_ANNOTATION,
    PROVENANCE_ANNOTATION,
    REJECTED_ANNOTATION,
    REVERTED_ANNOTATION,
    SCHEMA_ANNOTATION,
)
from advisor.models import TENSORFLOW, ServingTarget, ThreadSetting
from advisor.models.times import timestamp
from advisor.recommend.configmap import content_hash
from advisor.recommend.metadata import ANNOTATIONS_LIMIT_BYTES

#: rejected settings kept per ConfigMap (oldest dropped first)
MAX_REJECTED = 20


@dataclass(frozen=True)
class Previous:
    """The replaced advice, as kept."""

    data: Mapping[str, str]
    provenance: str
    schema_version: str
    data_changed_at: str | None
    summary: str


def _annotations(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    meta = (obj or {}).get("metadata") or {}
    found = meta.get("annotations") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def summary(obj: Mapping[str, Any]) -> str:
    """``intra=2 inter=1, objective latency, built 2026-11-20T08:00:00Z by 0.1.0``."""
    data = obj.get("data") or {}
    try:
        prov = json.loads(_annotations(obj).get(PROVENANCE_ANNOTATION) or "{}")
    except ValueError:
        prov = {}
    prov = prov if isinstance(prov, dict) else {}
    return (
        f"intra={data.get(TENSORFLOW.intra_op, '?')} "
        f"inter={data.get(TENSORFLOW.inter_op, '?')}, objective "
        f"{prov.get('objective', '?')}, built {prov.get('created_at', '?')} by "
        f"{prov.get('advisor_version', '?')}"
    )


def keep_previous(new: dict[str, Any], stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """``new`` (about to replace ``stored``) keeping ``stored`` as its previous advice when the
    data changes, and the stored settings rejected so far either way. Nothing is kept from a
    ConfigMap without a provenance (not advice), or where the annotations would pass the API
    server's size limit."""
    stored_notes = _annotations(stored)
    notes = new.setdefault("metadata", {}).setdefault("annotations", {})
    if isinstance(stored_notes.get(REJECTED_ANNOTATION), str):
        notes[REJECTED_ANNOTATION] = stored_notes[REJECTED_ANNOTATION]
    if stored is None or stored.get("data") == new.get("data"):
        if stored is not None and isinstance(stored_notes.get(PREVIOUS_ANNOTATION), str):
            notes[PREVIOUS_ANNOTATION] = stored_notes[PREVIOUS_ANNOTATION]
        return new
    provenance = stored_notes.get(PROVENANCE_ANNOTATION)
    data = stored.get("data")
    if not isinstance(provenance, str) or not isinstance(data, dict) or not data:
        return new
    kept = {
        "data": data,
        "provenance": provenance,
        "schema_version": str(stored_notes.get(SCHEMA_ANNOTATION, "v1")),
        "data_changed_at": stored_notes.get(DATA_CHANGED_ANNOTATION),
        "summary": summary(stored),
    }
    text = json.dumps(kept, separators=(",", ":"), ensure_ascii=False)
    if _size({**notes, PREVIOUS_ANNOTATION: text}) <= ANNOTATIONS_LIMIT_BYTES:
        notes[PREVIOUS_ANNOTATION] = text
    return new


def previous_advice(obj: Mapping[str, Any]) -> Previous | None:
    """The previous advice a ConfigMap keeps, None when it keeps none (or none readable)."""
    raw = _annotations(obj).get(PREVIOUS_ANNOTATION)
    try:
        kept = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    if not isinstance(kept, dict):
        return None
    data, provenance = kept.get("data"), kept.get("provenance")
    if not isinstance(data, dict) or not isinstance(provenance, str):
        return None
    if not all(isinstance(v, str) for v in data.values()):
        return None
    changed = kept.get("data_changed_at")
    return Previous(
        data=dict(data),
        provenance=provenance,
        schema_version=str(kept.get("schema_version") or "v1"),
        data_changed_at=changed if isinstance(changed, str) else None,
        summary=str(kept.get("summary") or ""),
    )


def rejected_settings(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The settings undone for this ConfigMap's target: ``{env, target, at, reason}`` each."""
    raw = _annotations(obj).get(REJECTED_ANNOTATION)
    try:
        found = json.loads(raw) if isinstance(raw, str) else []
    except ValueError:
        return []
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def rejected_for(
    obj: Mapping[str, Any] | None, target: ServingTarget | None
) -> tuple[ThreadSetting, ...]:
    """The thread settings undone in production for ``target`` (its provenance's record, field
    for field: another shape of the workload is another target, measured afresh)."""
    if obj is None:
        return ()
    wanted = None if target is None else target.model_dump(mode="json", exclude_none=True)
    found: list[ThreadSetting] = []
    for entry in rejected_settings(obj):
        env = entry.get("env")
        if entry.get("target") != wanted or not isinstance(env, dict):
            continue
        try:
            setting = TENSORFLOW.env_setting(env)
        except (KeyError, TypeError, ValueError):
            continue
        if setting not in found:
            found.append(setting)
    return tuple(found)


def reverted_configmap(
    current: Mapping[str, Any], previous: Previous, *, now: datetime, reason: str
) -> dict[str, Any]:
    """``current`` with ``previous`` written back: its data, provenance and schema, a new
    data-changed time, no ``previous``, and the undone setting recorded as rejected."""
    out = copy.deepcopy(dict(current))
    notes = out.setdefault("metadata", {}).setdefault("annotations", {})
    undone = dict(current.get("data") or {})
    try:
        target = json.loads(str(notes.get(PROVENANCE_ANNOTATION))).get("target")
    except (ValueError, AttributeError):
        target = None
    entry = {"env": undone, "target": target, "at": timestamp(now), "reason": reason}
    rejected = [*rejected_settings(current), entry][-MAX_REJECTED:]
    notes.pop(PREVIOUS_ANNOTATION, None)
    notes.update(
        {
            SCHEMA_ANNOTATION: previous.schema_version,
            HASH_ANNOTATION: content_hash(previous.data),
            DATA_CHANGED_ANNOTATION: timestamp(now),
            PROVENANCE_ANNOTATION: previous.provenance,
            REVERTED_ANNOTATION: json.dumps(
                {"at": timestamp(now), "undone": undone, "reason": reason},
                separators=(",", ":"),
            ),
            REJECTED_ANNOTATION: json.dumps(rejected, separators=(",", ":")),
        }
    )
    out["data"] = dict(previous.data)
    return out


def _size(notes: Mapping[str, Any]) -> int:
    return sum(len(str(k).encode()) + len(str(v).encode()) for k, v in notes.items())
