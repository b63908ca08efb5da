"""What a calibration is asked to do (``CalibrationOptions``) and the rules its options obey."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    Field,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from advisor.errors import InvalidOptionsError, Opt
from advisor.models.base import StrictModel
from advisor.models.input_shape import canonical_input_shapes
from advisor.models.option_table import MIN_BUDGET_S, NO_FILE, OPTION, TrialMode
from advisor.models.setting import ThreadSetting
from advisor.objectives import OBJECTIVES, bounded_names, named


def _known_objective(name: str) -> str:
    named(name)  # ValueError naming the known ones
    return name


#: an objective's name, one of ``advisor.objectives.OBJECTIVES``: stored (and hashed, in the
#: ConfigMap's provenance) as the plain string it is
ObjectiveName = Annotated[
    str,
    AfterValidator(_known_objective),
    WithJsonSchema({"type": "string", "enum": list(OBJECTIVES)}),
]

#: validation context key: the model path is decided after these options are read (fleet mode's
#: TF Serving container without the model annotation names its model where the Job is derived),
#: so a missing ``model_path`` does not refuse ``requests`` (a file inside that model)
MODEL_PATH_LATER = "model_path_later"

#: an option an advice is measured for, named as ``plan`` words it (what
#: ``advisor.recommend.measured_for`` compares)
Measured = Literal["objective", "concurrency", "batch size", "p99 bound (ms)"]

#: quotas closer than this (in CPUs) are the same quota (CFS rounding)
QUOTA_TOLERANCE = 0.01


class CalibrationOptions(StrictModel):
    """What the user asked to calibrate, and how long it may take.

    The rules a calibration's options obey live here, for the CLI and Python callers alike: the
    budget floor, the SLO bound that objective ``slo`` needs and no other takes. They are checked
    when the options are made, before anything starts, not after a minute of trials.
    """

    # each option's default, limits and description are its row of the option table
    model_path: str | None = OPTION["model_path"].model_field()
    signature: str = OPTION["signature"].model_field()
    batch_size: int = OPTION["batch_size"].model_field()
    input_shape: str | None = OPTION["input_shape"].model_field()
    concurrency: int = OPTION["concurrency"].model_field()
    objective: ObjectiveName = OPTION["objective"].model_field()
    p99_slo_ms: float | None = OPTION["p99_slo_ms"].model_field()
    budget_s: float = OPTION["budget_s"].model_field()
    spend_budget: bool = OPTION["spend_budget"].model_field()
    trial_mode: TrialMode = OPTION["trial_mode"].model_field()
    requests: str | None = OPTION["requests"].model_field()
    sweep_onednn: bool = OPTION["sweep_onednn"].model_field()
    rejected: tuple[ThreadSetting, ...] = Field(
        default=(),
        description="settings production undid for this serving target (plan's revert): never "
        "candidates, so never advised again; TF's default is the baseline and stays measured",
    )

    @field_validator("model_path")
    @classmethod
    def _model_path_names_something(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise InvalidOptionsError(Opt("model_path"), " must not be empty")
        return value

    @field_validator("input_shape")
    @classmethod
    def _input_shape_parses(cls, value: str | None) -> str | None:
        # spelled canonically, so one shape is one calibration spec however it was written
        if value is None:
            return None
        try:
            return canonical_input_shapes(value)
        except ValueError as exc:
            raise InvalidOptionsError(Opt("input_shape"), f" {value!r}: {exc}") from None

    @field_validator("budget_s")
    @classmethod
    def _budget_can_measure(cls, value: float) -> float:
        if value < MIN_BUDGET_S:
            raise InvalidOptionsError(
                Opt("budget_s"),
                f" {value:g} s is too small to measure anything: at least {MIN_BUDGET_S:g} s "
                "are needed for the model check, the TF default and two settings",
            )
        return value

    @property
    def requests_file(self) -> str | None:
        """The request file the user named (None: none, or ``none``)."""
        return None if self.requests in (None, NO_FILE) else self.requests

    @model_validator(mode="after")
    def _requests_are_replayed_as_recorded(self, info: ValidationInfo) -> CalibrationOptions:
        # each request carries its own batch: a batch size beside them would be ignored or would
        # measure other requests than those given (the warmup file's case is checked where the
        # model is looked at, in advisor.trials.requestfile)
        if self.requests_file is None:
            return self
        later = bool((info.context or {}).get(MODEL_PATH_LATER))
        if self.model_path is None and not later:
            raise InvalidOptionsError(
                Opt("requests"), " replays a model's requests: it needs ", Opt("model_path")
            )
        if self.batch_size != OPTION["batch_size"].default:
            raise InvalidOptionsError(
                Opt("batch_size"),
                " cannot be given with ",
                Opt("requests"),
                ": each request keeps its own batch (or pass ",
                Opt("requests"),
                f" {NO_FILE} to synthesise inputs of that batch size)",
            )
        # likewise their shapes: an input shape beside them would be ignored, and the stored
        # advice's shapes (the replayed ones) would never match it
        if self.input_shape is not None:
            raise InvalidOptionsError(
                Opt("input_shape"),
                " cannot be given with ",
                Opt("requests"),
                ": each request keeps its own shapes (or pass ",
                Opt("requests"),
                f" {NO_FILE} to synthesise inputs of those shapes)",
            )
        return self

    @model_validator(mode="after")
    def _slo_has_its_bound(self) -> CalibrationOptions:
        # the search ranks an SLO by it: without one, choosing would fail after the whole sweep;
        # a bound for another objective would be silently ignored
        bounded = named(self.objective).bounded_by is not None
        if bounded and self.p99_slo_ms is None:
            raise InvalidOptionsError(
                Opt("objective"),
                f" {self.objective} needs ",
                Opt("p99_slo_ms"),
                " (the p99 bound in milliseconds)",
            )
        if not bounded and self.p99_slo_ms is not None:
            raise InvalidOptionsError(
                Opt("p99_slo_ms"),
                " only applies to ",
                Opt("objective"),
                " " + bounded_names(),
            )
        return self
