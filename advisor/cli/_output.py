"""Rendering a result model as json, yaml or a text summary on stdout."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

import yaml
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

FORMATS = ("json", "yaml", "text")


def render(model: M, fmt: str, text: Callable[[M], str]) -> str:
    """The model dump as JSON or YAML, or ``text(model)`` for people."""
    if fmt == "json":
        return json.dumps(model.model_dump(mode="json"), indent=2)
    if fmt == "yaml":
        return yaml.safe_dump(model.model_dump(mode="json"), sort_keys=False).rstrip("\n")
    return text(model)
