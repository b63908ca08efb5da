"""The calibration options, one row each: everything the model, the flags of ``calibrate``,
``run`` and ``plan``, fleet mode's annotations and defaults, the calibration Jobs' ``run``
arguments and the calibration spec say about an option is read from its row here.

Pure data, at the bottom of the layers, so every layer that names an option reads it from here
and no two can disagree. Adding an option is one row (and a typed field of ``CalibrationOptions``
that reads it); the tests in tests/unit/models/test_option_table.py fail until every reader
agrees with the table.

Two commands take an option differently: ``calibrate`` and ``run`` parse each flag strictly (a
word the model refuses is refused by the flag); ``plan`` parses numbers as plain numbers and
checks its flags with the model's rules in ``check_request`` (so its messages name the flag as
the model says it).

Restarting the workload is not a calibration option (it measures nothing, so it is in no
calibration spec); the three flags that name it relate as ``RESTART`` says.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import Field

from advisor.keys import (
    ANN_BATCH_SIZE,
    ANN_BUDGET,
    ANN_CONCURRENCY,
    ANN_INPUT_SHAPE,
    ANN_MODEL,
    ANN_OBJECTIVE,
    ANN_P99_MS,
    ANN_REQUESTS,
    ANN_RESTART,
)
from advisor.models.input_shape import INPUT_SEPARATOR
from advisor.objectives import DEFAULT_OBJECTIVE, OBJECTIVES, bounded_names

#: The sweep's default budget, in seconds: the smallest that gives up nothing a longer one gives.
#: Bigger nodes set it: below it the simulated sweep (``python -m benchmarks scaling``, forked
#: trials) leaves candidates unmeasured on the largest node sizes; the measurements behind it are
#: in docs/benchmark.md, "The default budget".
DEFAULT_BUDGET_S = 45.0

#: The smallest budget accepted, in seconds: inspecting the model (one child: TF start-up and a
#: model load, ~4-5 s here) plus the baseline and two settings at the screen's longest trial, as
#: spawned trials (the fallback) cost them: 3.5 s of start-up + 0.2 s warm-up + a 1.2 s window,
#: planned with 20% headroom: 5 + 3 x 5.9 = 22.6, rounded up with room for a slow inspection.
#: Anything less cannot compare even two settings with the TF default.
MIN_BUDGET_S = 25.0

#: ``plan``'s default budget for a calibration Job, in seconds: the budget every shipped Job runs
#: with (deploy/job.yaml, the chart's defaults.budget, the planner's --budget), so a workload
#: without a budget annotation is measured as the single Job would measure it
PLAN_BUDGET_S = 300.0

#: how a flag reads its word: a whole number, a number (its unit in the row), one of the
#: ``choices``, any text, or a switch without a value
Parse = Literal["int", "float", "choice", "text", "switch"]

#: where ``plan`` takes an option: ``workload``, a default each workload's annotation
#: overrides, written into its Job's ``run`` arguments; ``job``, the same for every Job, passed
#: to each Job's ``run`` when it is not ``run``'s own default
PlanScope = Literal["workload", "job"]

_SAME = object()

#: ``--requests``'s word for "no request file": synthesise inputs, even where the model has a
#: warmup file
NO_FILE = "none"


@dataclass(frozen=True)
class PlanFlag:
    """How ``plan`` takes an option (its flag is the row's ``flag``)."""

    scope: PlanScope
    #: the help text; ``{annotation}`` is the workload annotation's full key
    help: str
    #: the position among ``plan``'s flags of the same scope (``plan --help`` lists them so)
    rank: int
    #: ``plan``'s default when it is not the model's
    default: Any = _SAME


@dataclass(frozen=True)
class Option:
    """One calibration option: a field of ``CalibrationOptions`` and every way it is set."""

    #: the field of ``CalibrationOptions`` (and of ``PlanRequest`` for a ``job`` option)
    field: str
    default: Any
    #: the model's description of the field
    description: str
    #: ``calibrate``'s and ``run``'s flag; without its dashes, the option's key in the
    #: calibration spec
    flag: str
    parse: Parse
    #: ``calibrate``'s and ``run``'s help, ``{default}`` its default; or a function, when it
    #: reads a registry (the objectives) that may grow before the parser is built
    help: str | Callable[[], str]
    metavar: str | None = None
    #: the unit a ``float`` flag's error names
    unit: str = ""
    #: a ``choice`` flag's words (a function: read from a registry when asked)
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()
    #: the model's limits (pydantic's ``ge``/``gt``/``le``/``min_length``)
    limits: tuple[tuple[str, Any], ...] = ()
    #: ``plan``'s flag, None: ``plan`` does not take it
    plan: PlanFlag | None = None
    #: the workload annotation that sets it (its full key, from advisor.keys), None: none does
    annotation: str | None = None
    #: a ``workload`` option's position in its Job's ``run`` arguments (the shipped Jobs' order)
    job_rank: int = 0
    #: how a reason names it when the calibration spec changes
    spec_label: str = ""
    #: its annotation names a file inside the model directory, relative to it: a Job's ``run``
    #: gets it joined to the model's copy (``run_arg``'s ``model_dir``); ``NO_FILE`` passes as is
    model_relative: bool = False
    #: a ``text`` flag that may be given more than once, each occurrence adding to the value:
    #: the separator the occurrences are joined with (None: the last occurrence wins)
    repeat: str | None = None

    @property
    def key(self) -> str:
        """The option's key in the calibration spec: its flag without the dashes."""
        return self.flag.removeprefix("--")

    @property
    def dest(self) -> str:
        """argparse's attribute for the flag."""
        return self.key.replace("-", "_")

    @property
    def plan_default(self) -> Any:
        if self.plan is None or self.plan.default is _SAME:
            return self.default
        return self.plan.default

    @property
    def help_text(self) -> str:
        if callable(self.help):
            return self.help()
        return self.help.format(default=self.default)

    @property
    def allowed(self) -> tuple[str, ...]:
        """A ``choice`` flag's words."""
        return self.choices() if callable(self.choices) else self.choices

    def from_flag(self, value: Any) -> Any:
        """The option's value from what argparse gathered for its flag: a ``repeat`` flag's
        occurrences joined into one value, as if given once with the separator."""
        if self.repeat is not None and isinstance(value, list):
            return self.repeat.join(value)
        return value

    def model_field(self) -> Any:
        """The pydantic field ``CalibrationOptions`` declares the option with."""
        return Field(default=self.default, description=self.description, **dict(self.limits))

    def run_arg(self, value: Any, *, model_dir: str | None = None) -> str | None:
        """The ``run`` argument that sets ``value`` (None: none is needed); a ``model_relative``
        value is joined to ``model_dir``, the model's path where the Job's ``run`` reads it."""
        if value is None or value is False:
            return None
        if value is True:
            return self.flag
        if self.model_relative and model_dir is not None and value != NO_FILE:
            value = posixpath.join(model_dir, value)
        if self.parse == "float":  # 300, not 300.0: as the shipped Job writes it
            value = str(int(value)) if float(value).is_integer() else repr(float(value))
        return f"{self.flag}={value}"


#: how trial processes start: forked from a server that has imported TensorFlow once (fast), a
#: fresh interpreter each (slow, always works), or fork with a fallback to spawn (the default).
TrialMode = Literal["auto", "fork", "spawn"]
TRIAL_MODES: tuple[TrialMode, ...] = get_args(TrialMode)


def _objective_help() -> str:
    return "; ".join(
        f"{name}: {objective.help}" + (" (default)" if name == DEFAULT_OBJECTIVE else "")
        for name, objective in OBJECTIVES.items()
    )


#: the options, in the order ``calibrate --help`` lists their flags
OPTIONS: tuple[Option, ...] = (
    Option(
        field="model_path",
        default=None,
        description=(
            "SavedModel directory, TF Serving base path (its highest version) or .keras file; "
            "null = the built-in model"
        ),
        flag="--model",
        parse="text",
        metavar="PATH",
        help=(
            "SavedModel directory, TF Serving base path (its highest version is measured) or "
            ".keras file to measure (default: a built-in CNN)"
        ),
        # read on its own (required, and a path in the serving container, not the Job's)
        annotation=ANN_MODEL,
    ),
    Option(
        field="signature",
        default="serving_default",
        description="SavedModel signature",
        flag="--signature",
        parse="text",
        metavar="NAME",
        help="SavedModel signature to call (default: {default})",
        limits=(("min_length", 1),),
    ),
    Option(
        field="batch_size",
        default=1,
        description="fills unknown batch dimensions",
        flag="--batch-size",
        parse="int",
        metavar="N",
        help="fills unknown batch dimensions of the inputs (default: {default})",
        limits=(("ge", 1), ("le", 65536)),
        plan=PlanFlag("workload", "{annotation} (default %(default)s)", rank=3),
        annotation=ANN_BATCH_SIZE,
        job_rank=4,
        spec_label="batch size",
    ),
    Option(
        field="input_shape",
        default=None,
        description="sizes of unknown dimensions after the batch, per input: "
        "NAME=D1[,D2...], several separated by ';' (stored canonically: names sorted)",
        flag="--input-shape",
        parse="text",
        metavar="NAME=D1[,D2...][;...]",
        help="the sizes of an input's unknown dimensions after the batch (a sequence length, "
        "an image side), e.g. 'input_ids=128;attention_mask=128'; several inputs separated by "
        "';' or given as more --input-shape flags",
        plan=PlanFlag(
            "workload",
            "{annotation}: sizes of unknown dimensions after the batch, NAME=D1[,D2...], "
            "several separated by ';' or given as more --input-shape flags (default: none)",
            rank=6,
        ),
        annotation=ANN_INPUT_SHAPE,
        job_rank=6,
        spec_label="input shape",
        # as perf_analyzer's --shape is given, once per input
        repeat=INPUT_SEPARATOR,
    ),
    Option(
        field="concurrency",
        default=1,
        description="requests kept in flight",
        flag="--concurrency",
        parse="int",
        metavar="N",
        help="requests kept in flight, as a server would (default: {default})",
        limits=(("ge", 1), ("le", 256)),
        plan=PlanFlag("workload", "{annotation} (default %(default)s)", rank=2),
        annotation=ANN_CONCURRENCY,
        job_rank=5,
        spec_label="concurrency",
    ),
    Option(
        field="objective",
        default=DEFAULT_OBJECTIVE,
        description="what the sweep optimises",
        flag="--objective",
        parse="choice",
        choices=lambda: tuple(OBJECTIVES),
        help=_objective_help,
        plan=PlanFlag("workload", "{annotation} (default %(default)s)", rank=1),
        annotation=ANN_OBJECTIVE,
        job_rank=2,
        spec_label="objective",
    ),
    Option(
        field="p99_slo_ms",
        default=None,
        description="with objective 'slo': the p99 bound in milliseconds",
        flag="--p99-ms",
        parse="float",
        unit="milliseconds",
        metavar="X",
        help=lambda: f"the p99 bound for --objective {bounded_names()}, in milliseconds",
        limits=(("gt", 0),),
        plan=PlanFlag("workload", "{annotation}, for objective slo", rank=4),
        annotation=ANN_P99_MS,
        job_rank=3,
        spec_label="p99 bound (ms)",
    ),
    Option(
        field="budget_s",
        default=DEFAULT_BUDGET_S,
        description="hard wall-clock limit, s",
        flag="--budget",
        parse="float",
        unit="seconds",
        metavar="S",
        help="hard wall-clock limit for the whole calibration, seconds (default {default:g}, "
        f"at least {MIN_BUDGET_S:g})",
        limits=(("gt", 0), ("le", 86400)),
        plan=PlanFlag(
            "workload", "{annotation}, seconds (default %(default)g)", rank=5, default=PLAN_BUDGET_S
        ),
        annotation=ANN_BUDGET,
        job_rank=1,
        spec_label="budget (s)",
    ),
    Option(
        field="spend_budget",
        default=False,
        description="race until the budget is spent, even once more measurement cannot change "
        "the advice",
        flag="--spend-budget",
        parse="switch",
        help="race until the budget is spent (default: end as soon as more measurement cannot "
        "change the advice; --budget is the ceiling)",
    ),
    Option(
        field="requests",
        default=None,
        description="requests to replay: a TF Serving REST body (JSON or JSON lines) or a "
        "TFRecord of PredictionLog; 'none': synthesise inputs even where the SavedModel has "
        "assets.extra/tf_serving_warmup_requests (replayed by default)",
        flag="--requests",
        parse="text",
        metavar="FILE",
        help="replay these requests, each with its own batch and shapes: a TF Serving REST body "
        "(instances or inputs, one body or JSON lines) or a TFRecord of "
        "PredictionLog; 'none' synthesises inputs (default: the SavedModel's "
        "assets.extra/tf_serving_warmup_requests when it has one, else synthesised)",
        limits=(("min_length", 1),),
        plan=PlanFlag(
            "workload",
            "{annotation}: a file inside the model directory, relative to it, or "
            "none (default: the model's warmup file)",
            rank=7,
        ),
        annotation=ANN_REQUESTS,
        job_rank=7,
        spec_label="requests file",
        model_relative=True,
    ),
    Option(
        field="sweep_onednn",
        default=False,
        description="also measure TF_ENABLE_ONEDNN_OPTS=0 against =1 for the advised setting",
        flag="--sweep-onednn",
        parse="switch",
        help="also measure TF_ENABLE_ONEDNN_OPTS=0 against =1 on the advised setting (a third "
        "of the budget); the advice sets it only when one value wins beyond noise",
        plan=PlanFlag(
            "job", "the Jobs also measure TF_ENABLE_ONEDNN_OPTS (run --sweep-onednn)", rank=2
        ),
        spec_label="oneDNN sweep",
    ),
    Option(
        field="trial_mode",
        default="auto",
        description="fork: trials forked from one TensorFlow-importing server; spawn: a new "
        "process each; auto: fork, falling back to spawn if the server fails",
        flag="--trial-mode",
        parse="choice",
        choices=TRIAL_MODES,
        help="how trial processes start: fork (from one process that imported TensorFlow "
        "once; fast), spawn (a new process each; slow), auto (fork, falling back to spawn if "
        "forking fails; default)",
        plan=PlanFlag(
            "job", "how the Jobs start their trials (run --trial-mode; default %(default)s)", rank=1
        ),
        spec_label="trial mode",
    ),
)

OPTION: dict[str, Option] = {option.field: option for option in OPTIONS}


def plan_options(scope: PlanScope) -> tuple[Option, ...]:
    """The options ``plan`` takes in ``scope``, in the order it lists them."""
    taken = [o for o in OPTIONS if o.plan is not None and o.plan.scope == scope]
    return tuple(sorted(taken, key=lambda o: o.plan.rank if o.plan else 0))


def job_options() -> tuple[Option, ...]:
    """The ``workload`` options a calibration Job's ``run`` arguments set, in their order."""
    return tuple(sorted(plan_options("workload"), key=lambda o: o.job_rank))


def plan_defaults() -> dict[str, Any]:
    """``plan``'s defaults of the options a workload's annotations override."""
    return {o.field: o.plan_default for o in plan_options("workload")}


@dataclass(frozen=True)
class Restart:
    """Restarting a workload on new advice: ``run --restart KIND/NAME`` restarts the named
    workload after the write; in fleet mode each Job's ``run`` gets ``--restart=<its own
    workload>`` when the workload's ``restart`` annotation (default: ``plan --restart``) says
    "true"; ``plan --restart-forbidden`` (the calibration ServiceAccount may not patch
    workloads) skips a workload that asks for one. The run flag names a workload, plan's are
    switches."""

    run_flag: str = "--restart"
    plan_flag: str = "--restart"
    plan_forbidden_flag: str = "--restart-forbidden"
    annotation: str = ANN_RESTART


RESTART = Restart()

__all__ = [
    "DEFAULT_BUDGET_S",
    "MIN_BUDGET_S",
    "NO_FILE",
    "OPTION",
    "OPTIONS",
    "PLAN_BUDGET_S",
    "RESTART",
    "TRIAL_MODES",
    "Option",
    "PlanFlag",
    "Restart",
    "TrialMode",
    "job_options",
    "plan_defaults",
    "plan_options",
]
