"""advisor.errors.first_error: the first pydantic problem as one ``location: message`` line, the
one formatting the runner, the CLI and the ConfigMap reader share."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field, ValidationError, model_validator

from advisor.errors import first_error


class Inner(BaseModel):
    p99_ms: float = Field(ge=0)


class Outer(BaseModel):
    name: str = Field(min_length=1)
    trials: list[Inner] = []

    @model_validator(mode="after")
    def _not_reserved(self) -> Outer:
        if self.name == "reserved":
            raise ValueError("the name 'reserved' is taken")
        return self


def error_of(data: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Outer.model_validate(data)
    return caught.value


def test_the_location_is_the_field_path() -> None:
    exc = error_of({"name": "a", "trials": [{"p99_ms": 1}, {"p99_ms": -4}]})
    assert first_error(exc) == "trials.1.p99_ms: Input should be greater than or equal to 0"


def test_only_the_first_problem_unless_the_others_are_counted() -> None:
    exc = error_of({"name": "", "trials": [{"p99_ms": -1}, {"p99_ms": -2}]})
    assert first_error(exc) == "name: String should have at least 1 character"
    assert first_error(exc, count_more=True) == (
        "name: String should have at least 1 character (and 2 more)"
    )


def test_a_validator_message_comes_without_pydantic_prefix_or_empty_location() -> None:
    exc = error_of({"name": "reserved"})
    assert first_error(exc) == "the name 'reserved' is taken"


def test_the_caller_can_name_the_location_its_own_way() -> None:
    exc = error_of({"name": ""})
    flags = {"name": "--name"}
    named = first_error(exc, where=lambda loc: flags[str(loc[0])] if loc else "")
    assert named == "--name: String should have at least 1 character"
    assert "\n" not in named
