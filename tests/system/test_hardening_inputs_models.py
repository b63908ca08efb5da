"""The bad-input cases of tests/integration/test_hardening_inputs.py whose model is a real one
built by TensorFlow (test_models): a corrupt SavedModel, a wrong signature, string inputs.

Same table, same world, same check; only these cases need TF, so they run in the system tier.
"""

from __future__ import annotations

import pytest

from tests.integration import test_hardening_inputs as inputs
from tests.integration.test_hardening_inputs import CASES, Case, World

pytestmark = pytest.mark.tf

# the integration module's fixtures, so that this module gets its own server and world
api, world, built_models = inputs.api, inputs.world, inputs.built_models


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.id) for c in CASES if inputs.needs_models(c)]
)
def test_bad_input_is_one_line_and_changes_nothing(
    case: Case,
    world: World,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inputs.assert_one_line_and_nothing_changed(case, world, capsys, monkeypatch)
