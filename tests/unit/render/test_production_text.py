"""Production's before -> after figures, worded once for status's cell and the revert Event."""

from __future__ import annotations


def test_production_figures_are_worded_once_for_status_and_plan() -> None:
    from advisor.models import Production
    from advisor.render.production_text import changes

    p = Production(
        verdict="improved",
        reason="",
        throttled_before=0.41,
        throttled_after=0.03,
        p99_before_ms=122.4,
        p99_after_ms=None,
        load_before=40.2,
        load_after=0.456,
        cpu_before=0.5,
        cpu_after=0.4,
    )
    assert changes(p, "load") == [
        "throttled 41% -> 3%",
        "p99 122 -> ? ms",
        "load 40 -> 0.46 req/s",
    ]
    assert changes(p, "cpu")[2] == "CPU 0.50 -> 0.40 cores per pod"
    assert changes(Production(verdict="unknown", reason="no data"), "cpu") == []
