"""The Event ``plan`` records on a workload, as sent (no server)."""

from __future__ import annotations

from datetime import datetime, timezone

from advisor.cluster.events import MESSAGE_LIMIT, WorkloadEvent, event_manifest

NOW = datetime(2026, 3, 1, 2, 43, 5, 123456, tzinfo=timezone.utc)
WEB = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "name": "web",
    "namespace": "ml",
    "uid": "0b7c5f0e-1",
}


def test_an_event_is_a_core_v1_event_about_the_workload() -> None:
    event = event_manifest(
        WorkloadEvent(WEB, "CalibrationStarted", "created Job web-1a2b\n  next line"), NOW
    )
    assert event == {
        "apiVersion": "v1",
        "kind": "Event",
        # client-go's naming: the object's name and the time in hex nanoseconds
        "metadata": {"name": f"web.{int(NOW.timestamp() * 1e9):x}", "namespace": "ml"},
        "involvedObject": WEB,
        "reason": "CalibrationStarted",
        "message": "created Job web-1a2b next line",
        "type": "Normal",
        "source": {"component": "tf-thread-advisor"},
        "reportingComponent": "tf-thread-advisor",
        "firstTimestamp": "2026-03-01T02:43:05Z",
        "lastTimestamp": "2026-03-01T02:43:05Z",
        "count": 1,
    }
    assert event["involvedObject"] is not WEB  # a copy: the caller's dict is not shared


def test_a_named_event_keeps_its_name_and_a_long_message_is_one_clipped_line() -> None:
    event = event_manifest(
        WorkloadEvent(WEB, "CalibrationFailed", "x\n" * 2000, "Warning", "web-1a2b.failed"), NOW
    )
    assert event["metadata"]["name"] == "web-1a2b.failed"
    assert event["type"] == "Warning"
    assert len(event["message"]) == MESSAGE_LIMIT and "\n" not in event["message"]
    assert event["message"].endswith("...")
