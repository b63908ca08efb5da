"""The records of a request file as read, before each is checked against the signatures it
calls (``advisor.trials.child.requests.bind``): what the REST reader (``rest``) and the
PredictionLog reader (``requests``) both make. Imports no TensorFlow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class JsonValue:
    """A REST value as JSON gave it (b64 objects decoded to bytes): typed when bound."""

    #: for ``instances``, the list of the rows' values (stacked on a new batch dimension)
    value: Any


@dataclass(frozen=True)
class RawCall:
    """One signature call of a record: None is the default signature, or its only input."""

    signature: str | None
    inputs: Mapping[str | None, np.ndarray | JsonValue]


@dataclass(frozen=True)
class RawRequest:
    record: int
    calls: tuple[RawCall, ...]
    #: examples in the request, when the format says (instances, serialized Examples)
    rows: int | None = None
