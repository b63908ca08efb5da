"""A revert written back: the advice's previous one put in the ConfigMap, once for every
decision reading it (``plan --apply``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from advisor.errors import AdvisorError
from advisor.fleet.decide import Planned, applying
from advisor.models.kube import mapping
from advisor.models.plan import NotWrittenBack, WrittenBack
from advisor.recommend.previous import previous_advice, reverted_configmap
from advisor.render.plan import plan_reason_text

log = logging.getLogger(__name__)


def write_back(
    judged: list[Planned],
    planned: list[Planned],
    obj: dict[str, Any],
    now: datetime,
    write: Callable[[dict[str, Any]], bool],
) -> tuple[list[Planned], bool]:
    """``judged`` (the revert decisions) once the previous advice is written through ``write``
    (False: the ConfigMap changed since it was read). When it changed, or the API server
    refused the write (no ``update`` on configmaps, unreachable, 422), each decision is what it
    was (``planned``), saying so, and the plan goes on with the next advice (one warning line
    per refused write). Second: whether it was written."""
    previous = previous_advice(obj)
    assert previous is not None
    reason = plan_reason_text(judged[0].reason)
    back = reverted_configmap(obj, previous, now=now, reason=reason)
    try:
        written = write(back)
        not_written = NotWrittenBack()
    except AdvisorError as exc:
        name = mapping(obj.get("metadata")).get("name")
        log.warning("the previous advice was not written back to ConfigMap %s: %s", name, exc)
        written, not_written = False, NotWrittenBack(refused=" ".join(str(exc).split()))
    if written:
        return [applying(decision, WrittenBack()) for decision in judged], True
    return [
        replace(applying(decision, not_written), job_name=before.job_name)
        for decision, before in zip(judged, planned, strict=True)
    ], False
