"""An input as a calibration fed it, as its provenance records it: its dtype and each dimension.

Stored as text, ``int32[1,128]`` (the batch first), as every advisor has written it: a dimension
that varies over replayed requests is its range (``int32[1-8,128]``), an unknown one ``?``; an input
whose rank varies or is not known has no dimensions (``float32[rank 1-2]``, ``float32[unknown
rank]``). A model field of this type reads that text into the dimensions, so a check compares
numbers (read when first asked for), and writes back exactly the text it read, so a stored
provenance and every output read and write what they did when it was a string. Any text reads: one
that is no such description (none is known) is an input of no known dimensions.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

#: a dimension as fed: its size, the (fewest, most) where replayed requests vary, None unknown
Dim = int | tuple[int, int] | None

_DESCRIBED = re.compile(r"(?P<dtype>[^\[\]]+)\[(?P<dims>[^\[\]]*)\]")
_RANGE = re.compile(r"(\d+)-(\d+)")


class FedInput:
    """One input's dtype and dimensions as fed, read from its text when first asked for (a plan
    parses every advice's provenance, and asks none of them)."""

    def __init__(self, text: str) -> None:
        self.text = text

    @classmethod
    def read(cls, text: str) -> FedInput:
        return cls(text)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"FedInput({self.text!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FedInput):
            return NotImplemented
        return (self.dtype, self.dims) == (other.dtype, other.dims)

    def __hash__(self) -> int:
        return hash((self.dtype, self.dims))

    @functools.cached_property
    def _read(self) -> tuple[str, tuple[Dim, ...] | None]:
        found = _DESCRIBED.fullmatch(self.text)
        if found is None:
            return self.text, None
        inner = found["dims"]
        dims = tuple(_dim(part) for part in ([] if not inner else inner.split(",")))
        if any(dim is _NOT_A_DIM for dim in dims):
            return found["dtype"], None
        return found["dtype"], dims

    @property
    def dtype(self) -> str:
        return self._read[0]

    @property
    def dims(self) -> tuple[Dim, ...] | None:
        """Each dimension, the batch first; None: the rank varied or was not known."""
        return self._read[1]

    @property
    def example_dims(self) -> tuple[Dim, ...] | None:
        """The dimensions of one example (the batch's left out), None when not known."""
        dims = self.dims
        return None if dims is None else dims[1:]

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(
            # dumped as the text in every mode: a dict dumped from a result still holds strings
            _validate,
            serialization=core_schema.to_string_ser_schema(when_used="always"),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"type": "string"}


def dim_text(dim: Dim) -> str:
    """A dimension as it is written: ``128``, ``1-8``, ``?``."""
    if dim is None:
        return "?"
    if isinstance(dim, tuple):
        return f"{dim[0]}-{dim[1]}"
    return str(dim)


#: what a part of the brackets is when it is no dimension (``rank 1-2``, ``unknown rank``)
_NOT_A_DIM: Any = object()


def _dim(part: str) -> Any:
    if part == "?":
        return None
    if part.isdigit():
        return int(part)
    found = _RANGE.fullmatch(part)
    if found is not None:
        return int(found[1]), int(found[2])
    return _NOT_A_DIM


def _validate(value: Any) -> FedInput:
    if isinstance(value, FedInput):
        return value
    if not isinstance(value, str):
        # pydantic's own words for a string field given something else, as when this was one
        raise PydanticCustomError("string_type", "Input should be a valid string")
    return FedInput(value)
