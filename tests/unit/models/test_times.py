"""The API server's times, read once for status's consumers and plan's Jobs."""

from __future__ import annotations

from datetime import datetime, timezone

from advisor.fleet.jobs import planned_job
from advisor.models.kube import KubeJob
from advisor.models.times import kube_time


def test_zulu_offset_and_zoneless_times_are_aware_utc() -> None:
    want = datetime(2026, 11, 25, 10, 0, tzinfo=timezone.utc)
    assert kube_time("2026-11-25T10:00:00Z") == want
    assert kube_time("2026-11-25T11:00:00+01:00") == want
    assert kube_time("2026-11-25T10:00:00") == want


def test_anything_else_is_none() -> None:
    for value in (None, 17, "", "yesterday", "2026-13-40T00:00:00Z"):
        assert kube_time(value) is None


def test_a_jobs_creation_time_compares_with_an_aware_one() -> None:
    # status orders a ConfigMap's Jobs by creation time against an aware floor
    job = planned_job(
        KubeJob.read({"metadata": {"name": "j", "creationTimestamp": "2026-11-25T10:00:00"}})
    )
    assert job.created is not None
    assert job.created > datetime.min.replace(tzinfo=timezone.utc)


def test_each_wording_of_a_span_is_what_its_readers_show() -> None:
    from datetime import timedelta

    from advisor.models.times import duration_text

    day, ninety_minutes = timedelta(hours=24), timedelta(minutes=90)
    assert [duration_text(day, w) for w in ("age", "hours", "flag", "days")] == [
        "1d",
        "24.0 h",
        "24h",
        "1.0 days",
    ]
    assert [duration_text(ninety_minutes, w) for w in ("age", "hours", "flag", "days")] == [
        "1h30m",
        "1.5 h",
        "1.5h",
        "1.5 hours",
    ]
    assert duration_text(timedelta(days=1, hours=12), "days") == "1.5 days"
    assert duration_text(timedelta(days=3, hours=4)) == "3d4h"
