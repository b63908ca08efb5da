"""advisor/recommend/measured_for.py: which options an advice was measured for are asked
otherwise now, the one comparison run's incumbent and plan make."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.models import CalibrationOptions
from advisor.recommend.measured_for import Changed, option_changes
from testkit.fakeapi.samples import recommendation

#: what the sample advice was measured for: latency, no bound, 1 in flight, batch 1
PROV = recommendation().provenance


def test_the_same_options_change_nothing() -> None:
    assert option_changes(PROV, CalibrationOptions(objective="latency")) == {}


@pytest.mark.parametrize(
    ("asked", "want"),
    [
        ({"concurrency": 4}, [Changed("concurrency", 1, 4)]),
        ({"batch_size": 8}, [Changed("batch size", 1, 8)]),
        ({"objective": "throughput"}, [Changed("objective", "latency", "throughput")]),
        (
            {"objective": "slo", "p99_slo_ms": 20.0, "batch_size": 2},
            [
                Changed("objective", "latency", "slo"),
                Changed("batch size", 1, 2),
                Changed("p99 bound (ms)", None, 20.0),
            ],
        ),
    ],
)
def test_each_change_is_named_with_both_values_in_one_order(
    asked: dict[str, Any], want: list[Changed]
) -> None:
    changed = option_changes(PROV, CalibrationOptions(**{"objective": "latency", **asked}))
    assert list(changed.values()) == want
    assert list(changed) == [c.what for c in want]
