"""What a calibration is asked to do (``CalibrationOptions``) and the rules its options obey."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, WithJsonSchema, field_validator, model_validator

from advisor.errors import InvalidOptionsError, Opt
from advisor.models.base import StrictModel
from advisor.models.setting import ThreadSetting
from advisor.objectives import DEFAULT_OBJECTIVE, OBJECTIVES, bounded_names, named


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

#: The sweep's default budget, in seconds: the smallest that gives up nothing a longer one gives.
#: Bigger nodes set it: below it the simulated sweep (``python -m benchmarks scaling``, forked
#: trials) leaves candidates unmeasured on the largest node sizes; the measurements behind it are
#: in docs/benchmark.md, "The default budget".
DEFAULT_BUDGET_S = 45.0

#: quotas closer than this (in CPUs) are the same quota (CFS rounding)
QUOTA_TOLERANCE = 0.01

#: The smallest budget accepted, in seconds: inspecting the model (one child: TF start-up and a
#: model load, ~4-5 s here) plus the baseline and two settings at the screen's longest trial, as
#: spawned trials (the fallback) cost them: 3.5 s of start-up + 0.2 s warm-up + a 1.2 s window,
#: planned with 20% headroom: 5 + 3 x 5.9 = 22.6, rounded up with room for a slow inspection.
#: Anything less cannot compare even two settings with the TF default.
MIN_BUDGET_S = 25.0

#: how trial processes start: forked from a server that has imported TensorFlow once (fast), a
#: fresh interpreter each (slow, always works), or fork with a fallback to spawn (the default).
TrialMode = Literal["auto", "fork", "spawn"]

#: oneDNN's graph optimisations in TF CPU builds: read once, at ``import tensorflow``, so the
#: sweep measures each value in a process (and fork server) of its own. Only "0" and "1" mean
#: anything to TF.
ENV_ONEDNN = "TF_ENABLE_ONEDNN_OPTS"
OnednnValue = Literal["0", "1"]
ONEDNN_VALUES: tuple[OnednnValue, ...] = ("0", "1")


class CalibrationOptions(StrictModel):
    """What the user asked to calibrate, and how long it may take.

    The rules a calibration's options obey live here, for the CLI and Python callers alike: the
    budget floor, the SLO bound that objective ``slo`` needs and no other takes. They are checked
    when the options are made, before anything starts, not after a minute of trials.
    """

    model_path: str | None = Field(
        default=None, description="SavedModel directory or .keras file; null = built-in workload"
    )
    signature: str = Field(
        default="serving_default", min_length=1, description="SavedModel signature"
    )
    batch_size: int = Field(default=1, ge=1, le=65536, description="fills unknown batch dimensions")
    concurrency: int = Field(default=1, ge=1, le=256, description="requests kept in flight")
    objective: ObjectiveName = Field(
        default=DEFAULT_OBJECTIVE, description="what the sweep optimises"
    )
    p99_slo_ms: float | None = Field(
        default=None, gt=0, description="with objective 'slo': the p99 bound in milliseconds"
    )
    budget_s: float = Field(
        default=DEFAULT_BUDGET_S, gt=0, le=86400, description="hard wall-clock limit, s"
    )
    trial_mode: TrialMode = Field(
        default="auto",
        description="fork: trials forked from one TensorFlow-importing server; spawn: a new "
        "process each; auto: fork, falling back to spawn if the server fails",
    )
    sweep_onednn: bool = Field(
        default=False,
        description="also measure TF_ENABLE_ONEDNN_OPTS=0 against =1 for the advised setting",
    )
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
