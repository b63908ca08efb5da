"""The README's exit-code table is a contract with Job authors: it must match the code."""

from __future__ import annotations

import re

from advisor import errors
from tests.support import REPO


def _readme_table() -> dict[str, int]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Exit codes", 1)[1]
    rows = re.findall(r"^\|\s*(\d+)\s*\|\s*([a-z]+)\s*\|", section, flags=re.MULTILINE)
    return {kind: int(code) for code, kind in rows}


def test_readme_table_matches_the_code() -> None:
    assert _readme_table() == errors.EXIT_CODES


def test_exit_codes_are_distinct() -> None:
    codes = list(errors.EXIT_CODES.values())
    assert len(codes) == len(set(codes))


def test_every_error_class_has_a_row() -> None:
    classes = [
        obj
        for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, errors.AdvisorError)
    ]
    assert {cls.kind for cls in classes} <= set(_readme_table())
