"""The files ``validate`` and ``check`` read in the comparison: one valid advice (the scene's
``tf-advice``, as written to a file) and advice broken in the ways a person meets."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from testkit.outputs_ab.scene import advice_cm


def write_files(folder: Path) -> None:
    """``advice.yaml`` and its broken kin, in ``folder``."""
    good = advice_cm("tf-advice")
    broken = {
        "no-provenance": _without(good, "tf-thread-advisor.io/provenance"),
        "bad-value": _with_data(good, TF_NUM_INTRAOP_THREADS="zero"),
        "bad-hash": _with_data(good, TF_NUM_INTRAOP_THREADS="7"),
    }
    (folder / "advice.yaml").write_text(yaml.safe_dump(good, sort_keys=False))
    for name, obj in broken.items():
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(obj, sort_keys=False))
    (folder / "not-yaml.yaml").write_text("kind: ConfigMap\ndata: [unclosed\n")
    (folder / "list.yaml").write_text(yaml.safe_dump([good]))


def _without(obj: dict, annotation: str) -> dict:  # type: ignore[type-arg]
    changed = copy.deepcopy(obj)
    del changed["metadata"]["annotations"][annotation]
    return changed


def _with_data(obj: dict, **data: str) -> dict:  # type: ignore[type-arg]
    changed = copy.deepcopy(obj)
    changed["data"].update(data)
    return changed
