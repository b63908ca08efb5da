"""``plan`` for people and programs: a table with each decision's reason (plain, Markdown, HTML),
one record per decision (CSV), the decisions' data (JSON and YAML: ``{"decisions": [...]}``), and
the Jobs as Kubernetes YAML."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import yaml

from advisor.errors import one_line
from advisor.keys import ANN_CONFIGMAP, ANN_REVERT
from advisor.models import PlanResult, Production
from advisor.models.plan import (
    Applied,
    Calibrate,
    Cause,
    CompletedUnfit,
    Confounded,
    ConsumerVerdict,
    Created,
    EarlierRunning,
    Fits,
    ForeignConfigMap,
    Helped,
    JobExists,
    JobFailed,
    NoPrevious,
    NoServiceAccount,
    NotCalibrated,
    NotReverted,
    NotWrittenBack,
    OptedOut,
    Overridden,
    PlanReason,
    Refused,
    Retried,
    RetryUnchecked,
    Reverted,
    Running,
    SharedDiffers,
    Skipped,
    Stopped,
    Suggested,
    Waits,
    WrittenBack,
)
from advisor.render.document import (
    RECORDS,
    TABLES,
    Block,
    Capability,
    Document,
    Grid,
    Lines,
    View,
    grid,
)
from advisor.render.words import took_text

_COLUMNS = ("WORKLOAD", "CONTAINER", "CONFIGMAP", "DECISION", "JOB")
_RECORD_KEYS = ("workload", "container", "configmap", "decision", "reason", "job", "namespace")


class PlanView(View):
    """The decisions of one ``plan`` in ``namespace`` (None: in every opted-in namespace,
    ``namespaces``, each decision naming its own); ``applied``: the Jobs were created."""

    provides: ClassVar[frozenset[Capability]] = frozenset({TABLES, RECORDS})

    def __init__(
        self,
        result: PlanResult,
        *,
        namespace: str | None,
        applied: bool,
        namespaces: Sequence[str] = (),
        revert_limited: Sequence[str] = (),
    ) -> None:
        self.result = result
        self.namespace = namespace
        self.applied = applied
        self.namespaces = tuple(namespaces)
        #: the regressed advice (NAMESPACE/NAME) left as they are for --max-reverts
        self.revert_limited = tuple(revert_limited)

    def data(self) -> Any:
        return self.result.model_dump(mode="json")

    def document(self) -> Document:
        """One line per container, then each decision's reason (too long for a column)."""
        everywhere = self.namespace is None
        title = f"tf-thread-advisor plan: {self.namespace or 'all namespaces'}"
        decisions = self.result.decisions
        if not decisions:
            return Document(title, (Lines((self._nothing(),)),))
        rows = [
            [str(d.workload), d.container or "-", d.configmap or "-", d.decision, d.job or "-"]
            for d in decisions
        ]
        columns: tuple[str, ...] = _COLUMNS
        if everywhere:
            columns = ("NAMESPACE", *_COLUMNS)
            rows = [[d.namespace or "-", *row] for d, row in zip(decisions, rows, strict=True)]
        reasons = tuple(
            (f"{d.namespace}/" if everywhere and d.namespace else "")
            + f"{d.workload}"
            + (f" ({d.container})" if d.container else "")
            + f": {d.reason}"
            for d in decisions
        )
        blocks: list[Block] = [grid(columns, rows, "decisions"), Lines(reasons, "reasons")]
        if not self.applied and any(d.decision == "calibrate" for d in decisions):
            blocks.append(
                Lines(("nothing was created: run again with --apply to start the calibrations",))
            )
        if not self.applied and any(d.decision == "revert" for d in decisions):
            blocks.append(
                Lines(("nothing was reverted: run again with --apply to write the previous advice "
                       "back",))
            )  # fmt: skip
        if self.revert_limited:
            blocks.append(Lines((revert_limit_text(self.revert_limited),)))
        return Document(title, tuple(blocks))

    def _nothing(self) -> str:
        """Why there is no decision at all."""
        workloads = "label a Deployment or StatefulSet tf-thread-advisor.io/calibrate=true"
        if self.namespace is not None:
            return f"no opted-in workloads in namespace {self.namespace} ({workloads})"
        if not self.namespaces:
            return (
                "no namespace is labelled tf-thread-advisor.io/calibrate=true: label each "
                "namespace to plan, then its workloads"
            )
        return f"no opted-in workloads in namespaces {', '.join(self.namespaces)} ({workloads})"

    def records(self) -> Grid:
        """One line per decision, its reason beside it; nothing is "" (not "-")."""
        rows = [
            [str(value) if (value := getattr(d, key)) is not None else "" for key in _RECORD_KEYS]
            for d in self.result.decisions
        ]
        return grid(_RECORD_KEYS, rows)


def revert_limit_text(limited: Sequence[str]) -> str:
    """The summary of the regressed advice ``--max-reverts`` left as they are."""
    return (
        f"{len(limited)} regressed advice not reverted: --max-reverts reached "
        f"({', '.join(limited)}); many regressions at once may be a change under every "
        "workload (a node-pool upgrade): look before the next plan reverts more"
    )


#: a reason's longest line: reasons end up in tables, logs and Events
REASON_LIMIT = 500


def plan_reason_text(reason: PlanReason) -> str:
    """A decision's reason in one line (``PlanDecision.reason``): its cause, then each thing
    applying it added after a ``;``, clipped to ``REASON_LIMIT`` as each was added."""
    text = one_line(_cause_text(reason.cause), REASON_LIMIT)
    for part in reason.added:
        text = one_line(f"{text}; {_applied_text(part)}", REASON_LIMIT)
    return text


#: what a container that is not opted in is told
OPT_IN_HINT = "label it tf-thread-advisor.io/calibrate=true to calibrate it"

#: what to install in a namespace so that its calibration Jobs can run
CALIBRATION_RBAC_HINT = (
    "list the namespace in the chart's planner.namespaces, or apply deploy/components/fleet there"
)


def _cause_text(cause: Cause) -> str:
    if isinstance(cause, Skipped | NotCalibrated | ForeignConfigMap | Overridden):
        return _skipped_text(cause)
    if isinstance(cause, JobExists | Refused):
        return _answer_text(cause)
    if isinstance(cause, Running | JobFailed | EarlierRunning | CompletedUnfit):
        return _job_text(cause)
    if isinstance(cause, Reverted | Suggested):
        return _production_text(cause)
    return _advice_text(cause)


def _skipped_text(cause: Skipped | NotCalibrated | ForeignConfigMap | Overridden) -> str:
    """Why it cannot be calibrated."""
    if isinstance(cause, Skipped):
        return cause.text
    if isinstance(cause, NotCalibrated):
        return f"a {cause.kind} is not calibrated"
    if isinstance(cause, ForeignConfigMap):
        return (
            f"ConfigMap {cause.configmap} was not written by tf-thread-advisor and is never "
            f"replaced: name a new one with annotation {ANN_CONFIGMAP}"
        )
    return "the advice would be overridden: " + "; ".join(cause.problems)


def _answer_text(cause: JobExists | Refused) -> str:
    """The API server's answer about the Job."""
    if isinstance(cause, JobExists):
        warns = _warns(cause.warnings)
        return f"Job {cause.job} exists already (created by an earlier plan){warns}"
    return cause.message


def _production_text(cause: Reverted | Suggested) -> str:
    """What production's verdicts decide."""
    if isinstance(cause, Reverted):
        then = f"; calibrated by the next plan ({'; '.join(cause.then)})" if cause.then else ""
        return (
            f"{_regression(cause.verdicts)}; back to the previous advice ({cause.previous}){then}"
        )
    return (
        f"throttled in {cause.throttled:.0%} of its CFS periods over the last {cause.window} "
        f"(above {cause.threshold:.0%}); {OPT_IN_HINT}"
    )


def _job_text(cause: Running | JobFailed | EarlierRunning | CompletedUnfit) -> str:
    """Why the calibration Jobs already there decide it."""
    if isinstance(cause, Running):
        return f"calibration Job {cause.job} for this spec has not finished"
    if isinstance(cause, JobFailed):
        return f"calibration Job {cause.job} failed: {cause.why}"
    if isinstance(cause, EarlierRunning):
        return (
            f"calibration Job {cause.job}, for its earlier spec, is still running; the next plan "
            f"calibrates the new one ({'; '.join(cause.differences)})"
        )
    return (
        f"calibration Job {cause.job} for this spec completed, but the advice does not fit "
        f"({'; '.join(cause.differences)}); it is calibrated again once the Job is deleted"
    )


def _advice_text(cause: Calibrate | Fits | SharedDiffers | NoServiceAccount) -> str:
    """Why the advice (or the namespace it would be calibrated in) decides it."""
    if isinstance(cause, Calibrate):
        return "; ".join(cause.differences)
    if isinstance(cause, Fits):
        exclusive = ", exclusive CPUs" if cause.exclusive else ""
        took = "" if cause.took_s is None else f"; took {took_text(cause.took_s, cause.stopped)}"
        return (
            f"advice {cause.intra}/{cause.inter} in {cause.configmap} was measured for it: CPU "
            f"{cause.cpu_from} {cause.cpu:g}{exclusive}, {cause.pool}, {cause.objective}{took}"
        )
    if isinstance(cause, SharedDiffers):
        return (
            f"it shares ConfigMap {cause.configmap} with {cause.owner}, which is calibrated for "
            f"its own shape, and its own differs ({'; '.join(cause.differences)}): give it its "
            f"own ConfigMap with annotation {ANN_CONFIGMAP}"
        )
    return (
        f"namespace {cause.namespace} has no ServiceAccount {cause.service_account} for its "
        f"calibration Job to run as: {CALIBRATION_RBAC_HINT} (it would calibrate: "
        f"{plan_reason_text(cause.would)})"
    )


def _applied_text(part: Applied) -> str:
    if isinstance(part, Waits):
        return (
            f"waits: {part.busy} calibration(s) already running on node pool {part.pool} "
            f"(max running {part.max_running})"
        )
    if isinstance(part, Retried):
        return f"retried: Job {part.job} is deleted and created again"
    if isinstance(part, Created):
        did = "the API server would create" if part.dry_run else "created"
        return f"{did} Job {part.job}{_warns(part.warnings)}"
    if isinstance(part, NotReverted):
        return _not_reverted_text(part)
    if isinstance(part, RetryUnchecked):
        return (
            "the server checks the new Job only once the failed one is deleted (--apply)"
            + _warns(part.warnings)
        )
    return _said(part)


def _said(part: Applied) -> str:
    if isinstance(part, NotWrittenBack) and part.refused is not None:
        return f"not written: {part.refused} (the advice is kept; the next plan judges it again)"
    return _SAID[type(part)]


def _regression(verdicts: Sequence[ConsumerVerdict]) -> str:
    """What production said of an advice: one consumer's reason, or each consumer's verdict."""
    if len(verdicts) == 1:
        return f"production regressed on this advice: {verdicts[0].production.reason}"
    worse = [_consumer(v) for v in verdicts if v.production.verdict == "regressed"]
    each = "; ".join(
        f"{_consumer(v)} {v.production.verdict} ({v.production.reason})" for v in verdicts
    )
    return (
        f"production regressed on this advice for {', '.join(worse)} of its {len(verdicts)} "
        f"consumers: {each}"
    )


def _consumer(verdict: ConsumerVerdict) -> str:
    return f"{verdict.workload} ({verdict.container})"


def _not_reverted_text(part: NotReverted) -> str:
    """A regression left as it is, and why."""
    said = _regression(part.verdicts)
    why = part.why
    if isinstance(why, NoPrevious):
        return f"{said}, but no previous advice is kept"
    if isinstance(why, Helped):
        better = [_consumer(v) for v in part.verdicts if v.production.verdict == "improved"]
        return f"{said}; kept: it improved for {', '.join(better)}"
    if isinstance(why, OptedOut):
        if why.problem is not None and not why.workloads:
            return f"{said}; not reverted: {why.problem}"
        names = ", ".join(str(ref) for ref in why.workloads)
        return f'{said}; not reverted: {names} opts out with annotation {ANN_REVERT}: "false"'
    if isinstance(why, Confounded):
        return (
            f"{said}; not reverted: its calibration spec changed since the advice "
            f"({'; '.join(why.differences)}), so before and after are not comparable: it is "
            "calibrated instead"
        )
    return f"{said}; not reverted: --max-reverts {why.limit} reached"


def revert_event_text(reason: PlanReason) -> str:
    """The AdviceReverted Event's message: what was written back, and each consumer's figures
    before and after the advice that decided it."""
    cause = reason.cause
    assert isinstance(cause, Reverted)
    figures = "; ".join(
        f"{_consumer(v)}: {_figures(v.production)}: {v.production.verdict} ({v.production.reason})"
        for v in cause.verdicts
    )
    return f"advice reverted to the previous one ({cause.previous}): {figures}"


def _figures(production: Production) -> str:
    """Before -> after: throttled share, p99 and CPU, each where known."""
    p = production
    parts = []
    if p.throttled_before is not None or p.throttled_after is not None:
        parts.append(f"throttled {_share(p.throttled_before)} -> {_share(p.throttled_after)}")
    if p.p99_before_ms is not None or p.p99_after_ms is not None:
        parts.append(f"p99 {_number(p.p99_before_ms, 0)} -> {_number(p.p99_after_ms, 0)} ms")
    if p.cpu_before is not None or p.cpu_after is not None:
        parts.append(f"CPU {_number(p.cpu_before, 2)} -> {_number(p.cpu_after, 2)} cores per pod")
    return ", ".join(parts) or "no figures"


def _share(value: float | None) -> str:
    return "?" if value is None else f"{value:.0%}"


def _number(value: float | None, digits: int) -> str:
    return "?" if value is None else f"{value:.{digits}f}"


#: the parts that carry no figure: their sentence alone
_SAID: dict[type, str] = {
    Stopped: "not created: the plan stopped (the error line says why)",
    WrittenBack: "written back",
    NotWrittenBack: "not written: the ConfigMap changed since it was read (the next plan judges "
    "the new advice)",
}


def _warns(warnings: tuple[str, ...]) -> str:
    return "".join(f"; the API server warns: {text}" for text in warnings)


def jobs_yaml(jobs: Sequence[dict[str, Any]]) -> str:
    """The Jobs as a YAML stream (``kubectl apply -f -`` or ``create -f -`` reads it)."""
    return "".join("---\n" + yaml.safe_dump(job, sort_keys=False) for job in jobs)
