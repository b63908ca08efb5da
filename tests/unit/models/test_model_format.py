"""advisor.models.format_of: which format a model path names, by its name alone: the one rule
the sweep's description of the subject and the parent's check on disk (trials/modelfile.py)
share."""

from __future__ import annotations

import pytest

from advisor.models import ModelFormat, format_of


@pytest.mark.parametrize(
    ("path", "want"),
    [
        (None, "builtin"),
        ("/models/cnn.keras", "keras"),
        ("/models/cnn.H5", "keras"),
        ("model.KERAS", "keras"),
        ("/models/resnet/1", "savedmodel"),
        ("/models/resnet/", "savedmodel"),
        ("/models/model.pb", "savedmodel"),
        ("/models/keras", "savedmodel"),
    ],
)
def test_the_format_a_path_names(path: str | None, want: ModelFormat) -> None:
    assert format_of(path) == want
