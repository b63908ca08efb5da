"""The replaced advice kept in the ConfigMap, and the ConfigMap that writes it back."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from advisor import __version__
from advisor.keys import (
    DATA_CHANGED_ANNOTATION,
    PREVIOUS_ANNOTATION,
    PROVENANCE_ANNOTATION,
    REVERTED_ANNOTATION,
)
from advisor.recommend import build_recommendation, parse_configmap, render_configmap
from advisor.recommend.previous import (
    keep_previous,
    previous_advice,
    rejected_settings,
    reverted_configmap,
)
from testkit.fakeapi.samples import calibration_result, node_profile

OLD = datetime(2026, 11, 1, 8, tzinfo=timezone.utc)
NEW = OLD + timedelta(days=7)


def advice(intra: int, inter: int, when: datetime) -> dict[str, Any]:
    result = calibration_result(intra, inter, node=node_profile(affinity=8, quota=4.0))
    rec = build_recommendation(result, advisor_version=__version__, now=when)
    return render_configmap(rec, "tf-advice", "ml")


def notes(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj["metadata"]["annotations"])


def test_new_data_keeps_the_replaced_advice_whole() -> None:
    old, new = advice(4, 2, OLD), advice(2, 1, NEW)
    written = keep_previous(new, old)
    kept = previous_advice(written)
    assert kept is not None
    assert dict(kept.data) == old["data"]
    assert kept.provenance == notes(old)[PROVENANCE_ANNOTATION]
    assert kept.data_changed_at == notes(old)[DATA_CHANGED_ANNOTATION]
    assert kept.summary.startswith("intra=4 inter=2, objective latency, built 2026-11-01")
    parse_configmap(written)  # the advice itself still parses


def test_same_data_carries_the_stored_previous_and_nothing_else() -> None:
    old, new = advice(4, 2, OLD), advice(2, 1, NEW)
    first = keep_previous(new, old)
    again = keep_previous(advice(2, 1, NEW + timedelta(days=1)), first)
    assert notes(again)[PREVIOUS_ANNOTATION] == notes(first)[PREVIOUS_ANNOTATION]
    assert PREVIOUS_ANNOTATION not in notes(keep_previous(advice(2, 1, NEW), None))


def test_an_older_configmap_keeps_none_and_parses() -> None:
    old = advice(4, 2, OLD)
    assert previous_advice(old) is None
    assert rejected_settings(old) == []
    broken = advice(4, 2, OLD)
    broken["metadata"]["annotations"][PREVIOUS_ANNOTATION] = "{not json"
    assert previous_advice(broken) is None
    parse_configmap(broken)


def test_revert_writes_the_previous_back_and_records_the_rejected_setting() -> None:
    old, new = advice(4, 2, OLD), advice(2, 1, NEW)
    current = keep_previous(new, old)
    kept = previous_advice(current)
    assert kept is not None
    at = NEW + timedelta(days=2)
    back = reverted_configmap(current, kept, now=at, reason="p99 190 ms is above before 100-122 ms")
    parsed = parse_configmap(back)  # provenance, hash and data agree again
    assert back["data"] == old["data"]
    assert (parsed.recommendation.intra_op_threads, parsed.recommendation.inter_op_threads) == (
        4,
        2,
    )
    assert parsed.data_changed_at == at
    assert PREVIOUS_ANNOTATION not in notes(back)  # never twice in a row
    assert json.loads(notes(back)[REVERTED_ANNOTATION])["undone"] == new["data"]
    (rejected,) = rejected_settings(back)
    assert rejected["env"] == new["data"] and "p99 190 ms" in rejected["reason"]
    # a later advice carries the rejected settings along
    later = keep_previous(advice(3, 1, at + timedelta(days=1)), back)
    assert rejected_settings(later) == [rejected]


def test_rejected_settings_apply_to_their_own_target_only() -> None:
    from advisor.models import ServingTarget, ThreadSetting
    from advisor.recommend.previous import rejected_for

    web = ServingTarget(workload="deployment/web", container="server")
    other = ServingTarget(workload="deployment/web", container="sidecar")
    old = advice(4, 2, OLD)
    result = calibration_result(2, 1, node=node_profile(affinity=8, quota=4.0))
    rec = build_recommendation(result, advisor_version=__version__, now=NEW, target=web)
    current = keep_previous(render_configmap(rec, "tf-advice", "ml"), old)
    kept = previous_advice(current)
    assert kept is not None
    back = reverted_configmap(current, kept, now=NEW + timedelta(days=1), reason="regressed")
    assert rejected_for(back, web) == (ThreadSetting(2, 1),)
    assert rejected_for(back, other) == ()
    assert rejected_for(back, None) == ()
    assert rejected_for(None, web) == ()
