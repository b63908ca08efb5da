"""The base every model of the advisor derives from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Base for every model here: unknown fields are errors, instances are immutable.

    A field whose name in code differs from its key in stored and printed data says so with
    ``Field(alias=KEY)``: it is read by either name and always written as its key, so stored
    ConfigMaps and every output keep their keys (a calibration's ``subject`` is its
    ``"workload"``)."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )
