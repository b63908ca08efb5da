"""The base every model of the advisor derives from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Base for every model here: unknown fields are errors, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)
