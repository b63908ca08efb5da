"""Rendering a result model as json, yaml or a text summary on stdout."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TypeVar

import yaml
from pydantic import BaseModel

from advisor.errors import OutputError

M = TypeVar("M", bound=BaseModel)

FORMATS = ("json", "yaml", "text")


def render(model: M, fmt: str, text: Callable[[M], str]) -> str:
    """The model dump as JSON or YAML, or ``text(model)`` for people."""
    if fmt == "json":
        return json.dumps(model.model_dump(mode="json"), indent=2)
    if fmt == "yaml":
        return yaml.safe_dump(model.model_dump(mode="json"), sort_keys=False).rstrip("\n")
    return text(model)


def emit(text: str) -> None:
    """The command's result on stdout, flushed now: a full disk or a closed pipe behind
    ``> file`` is an OutputError (exit 12), not an internal error or a silent exit 120."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise  # the reader left (``| head``): main() exits quietly
    except OSError as exc:
        raise OutputError(f"stdout: cannot write the result ({exc.strerror or exc})") from None
