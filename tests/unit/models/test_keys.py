"""advisor/keys.py: every label and annotation key is defined once, so two names can never drift
apart while they mean one key on the cluster."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from advisor import keys

#: the names that hold a key (a label or annotation key), not a selector or a value
KEY_NAMES = [
    name
    for name, value in vars(keys).items()
    if isinstance(value, str)
    and (name.startswith(("ANN_", "LABEL_")) or name.endswith("_ANNOTATION"))
]


def test_the_keys_are_found() -> None:
    assert {"ANN_CONTAINER", "ANN_CONFIGMAP", "LABEL_CALIBRATE", "HASH_ANNOTATION"} <= set(
        KEY_NAMES
    )


def test_no_two_names_hold_one_key() -> None:
    texts = Counter(getattr(keys, name) for name in KEY_NAMES)
    shared = {
        text: [name for name in KEY_NAMES if getattr(keys, name) == text]
        for text, count in texts.items()
        if count > 1
    }
    assert shared == {}


def test_the_field_manager_is_defined_once() -> None:
    """Server-side apply's ownership hangs on it: the writer and the restarter import it."""
    package = Path(keys.__file__).parent
    defined = [
        str(path.relative_to(package))
        for path in sorted(package.rglob("*.py"))
        if re.search(r"^FIELD_MANAGER\b.*=", path.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert defined == ["keys.py"]
