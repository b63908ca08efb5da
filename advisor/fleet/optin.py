"""The opt-in: a workload's label and annotations, read into what to calibrate.

``plan``'s flags (the chart's values) are the defaults; a workload's annotations override them,
as Goldilocks and StormForge users know. Every annotation is checked here with the rules a
calibration's options obey (``CalibrationOptions``), so a bad one is a ``skipped`` decision
naming the annotation, never a Job that fails after its image pull.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from advisor.errors import InvalidOptionsError, first_error
from advisor.fleet.storage import object_storage_problem
from advisor.keys import (
    ANN_CONFIGMAP,
    ANN_CONTAINER,
    ANN_MODEL,
    ANN_REQUESTS,
    ANN_RESTART,
    ANN_REVERT,
    LABEL_CALIBRATE,
    PREFIX,
)
from advisor.kubenames import dns1123_subdomain_problem
from advisor.models import NO_FILE, OPTION, OPTIONS, CalibrationOptions, plan_defaults
from advisor.models.options import MODEL_PATH_LATER

#: CalibrationOptions' field -> the annotation that sets it (to read it, and to name it in a
#: problem): the option table's annotations
FIELD_ANNOTATION = {
    option.field: option.annotation for option in OPTIONS if option.annotation is not None
}


#: the option that bounds objective slo, read with the objective
_BOUND = "p99_slo_ms"


class OptInError(ValueError):
    """An annotation that cannot be calibrated as written; the message names it."""


@dataclass(frozen=True, init=False)
class Defaults:
    """``plan``'s flags: what a workload's annotations leave unsaid.

    ``Defaults(concurrency=4)``: an option the option table lets a workload's annotation set,
    by its ``CalibrationOptions`` field; the others keep ``plan``'s defaults.
    """

    #: CalibrationOptions' field -> plan's default, for every option a workload's annotation
    #: overrides (the option table's ``workload`` options)
    options: Mapping[str, Any]
    restart: bool
    #: the calibration ServiceAccount may not patch workloads: a workload that asks for a restart
    #: is refused here, not given a Job that measures for minutes and then fails on the restart
    restart_forbidden: bool

    def __init__(
        self, *, restart: bool = False, restart_forbidden: bool = False, **options: Any
    ) -> None:
        known = plan_defaults()
        if unknown := sorted(set(options) - set(known)):
            raise TypeError(f"Defaults takes no option {', '.join(unknown)}")
        object.__setattr__(self, "options", {**known, **options})
        object.__setattr__(self, "restart", restart)
        object.__setattr__(self, "restart_forbidden", restart_forbidden)


@dataclass(frozen=True)
class CalibrationAsk:
    """What one opted-in workload asks to be measured, defaults filled in and checked."""

    #: the model's absolute path inside the serving container (None: not annotated, the one a
    #: TF Serving container names itself, read where the Job is derived)
    model_path: str | None
    options: CalibrationOptions
    #: the serving container, when the pod has several (None: the pod's only one)
    container: str | None = None
    #: the advice ConfigMap, when the container mounts none yet (None: the one it mounts)
    configmap: str | None = None
    #: restart the workload on new advice
    restart: bool = False
    #: production may write the previous advice back where this advice regressed
    revert: bool = True


def opted_in(labels: Mapping[str, Any]) -> bool:
    """The opt-in label among a workload's (or a Namespace's) ``labels`` says "true" (in) or
    "false" or nothing (out); OptInError for any other value. Exactly these two spellings, as a
    label selector compares values: one rule for every reader of the label."""
    value = labels.get(LABEL_CALIBRATE)
    if value is None or value == "false":
        return False
    if value == "true":
        return True
    raise OptInError(f'label {LABEL_CALIBRATE}={str(value)!r} must be "true" or "false"')


def read_ask(annotations: Mapping[str, Any], defaults: Defaults | None = None) -> CalibrationAsk:
    """The workload's annotations over ``defaults``; OptInError (naming the annotation) when one
    cannot be used."""
    defaults = defaults or Defaults()
    model = _text(annotations, ANN_MODEL)
    if model is not None and (problem := object_storage_problem(model, f"annotation {ANN_MODEL}")):
        raise OptInError(problem)
    if model is not None and (not posixpath.isabs(model) or ".." in model.split("/")):
        raise OptInError(
            f"annotation {ANN_MODEL}={model!r} must be an absolute path without '..' "
            "(the model's path inside the serving container)"
        )
    # the bound is read first: a malformed one is named before the others, as the rule across
    # the objective and its bound (below) is where it matters most
    order = [_BOUND, *(field for field in defaults.options if field != _BOUND)]
    # only the annotations there are read: a workload sets few options, or none
    asked = {
        field: _value(annotations, field) if FIELD_ANNOTATION[field] in annotations else None
        for field in order
    }
    raw: dict[str, Any] = {"model_path": model}
    for field, default in defaults.options.items():
        raw[field] = _or(asked[field], default)
    # the default bound goes with the default objective's kind only: a workload that asks for
    # latency is not refused because the plan's default objective takes a bound
    if asked[_BOUND] is None and raw["objective"] != defaults.options["objective"]:
        raw[_BOUND] = None
    _inside_the_model(raw.get("requests"), asked=asked.get("requests") is not None)
    try:
        # without the model annotation, a TF Serving container names its model where the Job is
        # derived (fleet.tf_serving): a request file, relative to that model, is not refused now
        options = CalibrationOptions.model_validate(raw, context={MODEL_PATH_LATER: model is None})
    except ValidationError as exc:
        raise OptInError(_problem(exc)) from None
    restart = _flag(annotations, ANN_RESTART, defaults.restart)
    if restart and defaults.restart_forbidden:
        raise OptInError(
            f'annotation {ANN_RESTART}="true" asks for a restart, but the planner runs with '
            "--restart-forbidden: the calibration ServiceAccount may not patch workloads (the "
            "chart's planner.restart, kustomize's deploy/components/fleet-restart grant it)"
        )
    return CalibrationAsk(
        model_path=model,
        options=options,
        container=_name(annotations, ANN_CONTAINER),
        configmap=_name(annotations, ANN_CONFIGMAP),
        restart=restart,
        revert=may_revert(annotations),
    )


def _inside_the_model(requests: Any, *, asked: bool) -> None:
    """The request file (the annotation's, else plan's default) travels with the model's copy:
    a path inside the model directory, relative to it (or ``none``)."""
    if requests is None or requests == NO_FILE:
        return
    text = str(requests)
    if posixpath.isabs(text) or ".." in text.split("/") or posixpath.normpath(text) == ".":
        where = f"annotation {ANN_REQUESTS}" if asked else "plan's --requests"
        raise OptInError(
            f"{where}={text!r} must name a file inside the model directory, relative to it (no "
            f"leading '/', no '..'), or be {NO_FILE}"
        )


def may_revert(annotations: Mapping[str, Any]) -> bool:
    """The workload's ``tf-thread-advisor.io/revert``: False when it says "false"; OptInError
    for a value that is neither "true" nor "false"."""
    return _flag(annotations, ANN_REVERT, True)


def _problem(exc: ValidationError) -> str:
    """The first problem, options spelled as the annotations that set them: a rule across two
    options (objective slo and its bound) has no single field to name."""
    errors = exc.errors()
    cause = (errors[0].get("ctx") or {}).get("error") if errors else None
    if isinstance(cause, InvalidOptionsError):
        return cause.spelled(lambda option: _annotation_of((str(option),)))
    return first_error(exc, where=_annotation_of)


def _annotation_of(loc: tuple[int | str, ...]) -> str:
    field = str(loc[0]) if loc else ""
    return f"annotation {FIELD_ANNOTATION.get(field, PREFIX + field)}"


def _value(annotations: Mapping[str, Any], field: str) -> Any:
    """The value of the annotation that sets option ``field`` (None: not set), read as its
    flag reads a word."""
    key = FIELD_ANNOTATION[field]
    parse = OPTION[field].parse
    if parse == "int":
        return _number(annotations, key, int)
    if parse == "float":
        return _number(annotations, key, float)
    return _text(annotations, key)


def _or(value: Any, default: Any) -> Any:
    """The annotation's value, even a 0 the options refuse; the default when it is absent."""
    return default if value is None else value


def _text(annotations: Mapping[str, Any], key: str) -> str | None:
    value = annotations.get(key)
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _number(annotations: Mapping[str, Any], key: str, kind: type[int] | type[float]) -> Any:
    text = _text(annotations, key)
    if text is None:
        return None
    try:
        value = kind(text)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise OptInError(f"annotation {key}={text!r} must be {what}") from None
    if not math.isfinite(value):
        raise OptInError(f"annotation {key}={text!r} must be a finite number")
    return value


def _name(annotations: Mapping[str, Any], key: str) -> str | None:
    text = _text(annotations, key)
    if text is not None and (problem := dns1123_subdomain_problem(text)):
        raise OptInError(f"annotation {key}={text!r}: {problem}")
    return text


def _flag(annotations: Mapping[str, Any], key: str, default: bool) -> bool:
    text = _text(annotations, key)
    if text is None:
        return default
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    raise OptInError(f'annotation {key}={text!r} must be "true" or "false"')
