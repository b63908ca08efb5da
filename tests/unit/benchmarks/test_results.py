"""benchmarks/results.py: a recorded run reads back typed and writes out as the very same JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from benchmarks.results import Run
from tests.support import REPO
from tests.unit.benchmarks import factory


@pytest.mark.parametrize("path", sorted((REPO / "benchmarks" / "runs").glob("full-*.json")))
def test_a_recorded_run_round_trips_to_the_same_json(path: Path) -> None:
    recorded = json.loads(path.read_text())
    run = Run.model_validate(recorded)
    assert json.dumps(run.dump()) == json.dumps(recorded)  # every key, in its order
    assert run.scenarios and all(s.settings for s in run.scenarios)


def test_parts_an_older_run_lacks_stay_absent_and_an_unknown_key_is_refused() -> None:
    older = factory.scenario({})
    assert "first_look" not in older.dump() and older.first_look is None
    with pytest.raises(ValidationError, match="advise"):
        factory.scenario({"advise": None})  # a typo is not silently dropped
