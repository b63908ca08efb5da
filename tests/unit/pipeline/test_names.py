"""``advisor.pipeline``'s public names: each one a Python caller imports from the package is the
object its module defines, whether the package imported that module at once or imports it on the
name's first use."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

from advisor import pipeline


@pytest.mark.parametrize("name", pipeline.__all__)
def test_every_public_name_is_its_modules_object(name: str) -> None:
    value = getattr(pipeline, name)
    home = getattr(value, "__module__", None)  # a constant (a str) names none
    if home is not None:
        assert getattr(importlib.import_module(home), name) is value


def test_the_names_imported_on_first_use_are_the_ones_type_checkers_see() -> None:
    tree = ast.parse(inspect.getsource(pipeline))
    (checking,) = (n for n in tree.body if isinstance(n, ast.If))
    seen = {
        alias.name: node.module
        for node in checking.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert seen == {name: f"advisor.pipeline.{module}" for name, module in pipeline._LAZY.items()}
    assert set(seen) <= set(pipeline.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = pipeline.nothing_here  # type: ignore[attr-defined]
