"""advisor/pipeline/drift.py's pure rules: whether the TensorFlow an advice was measured with
changed, the one check ``check``, the incumbent and ``status`` share."""

from __future__ import annotations

import pytest

from advisor.pipeline.drift import tf_version_changed


@pytest.mark.parametrize(
    ("measured", "installed", "changed"),
    [
        ("2.21.0", "2.21.0", False),
        ("2.21.0", "2.20.0", True),
        ("2.21.0", None, False),  # TF not installed here: no evidence either way
        (None, "2.21.0", False),  # an advice that did not record it
        ("", "2.21.0", False),
        (None, None, False),
    ],
)
def test_tf_changed_only_when_both_are_known_and_differ(
    measured: str | None, installed: str | None, changed: bool
) -> None:
    assert tf_version_changed(measured, installed) is changed
