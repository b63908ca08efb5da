"""The parent side of a trial: start one child per setting, supervise it, read its one answer.

TensorFlow reads its thread settings once, at start-up, so every setting needs a fresh process;
and this package must never import tensorflow outside ``advisor.trials.child`` (an import-linter
contract checks it). A child answers with one JSON object in a result file (protocol in
``advisor.trials.child.trial``), never on stdout, because TF and oneDNN write what they like
there. Trial faults never raise: they become a TrialResult with a status (failed, crashed, oom,
timeout) and a one-line reason, and the sweep goes on.

How a child comes to exist is a ``Starter``'s business: ``SpawnStarter`` starts a fresh
interpreter; the fork starter in ``advisor.trials.launch`` asks a trial server that has
TensorFlow imported already. A forked child that fails before it has loaded the model raises
``LaunchFailure``, and the caller runs the trial again as a spawned process.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from advisor.calibrate.spec import SubjectSpec, TrialSpec
from advisor.errors import ModelError, RequestsError, first_error, one_line
from advisor.models import ModelFormat, SubjectInfo, ThreadSetting, TrialResult
from advisor.trials.environment import trial_env
from advisor.trials.modelfile import check_subject, subject_format
from advisor.trials.requestfile import requests_source
from advisor.trials.spawn import SpawnStarter
from advisor.trials.supervise import Starter, run_child
from advisor.trials.wire import TrialRequest

log = logging.getLogger(__name__)


def run_trial(
    spec: TrialSpec,
    subject: SubjectSpec,
    *,
    deadline_s: float,
    program: Sequence[str] | None = None,
    starter: Starter | None = None,
    load_timeout_s: float | None = None,
) -> TrialResult:
    """Measure one setting in a fresh child; never raises for anything the trial does.

    ``deadline_s`` is the wall-clock time the child may take from its start (TF import and model
    load included); past it the whole process group is killed and the result is a timeout.
    ``program`` replaces the child command (tests use fake trial programs); the runner appends
    ``--request FILE --result FILE``. With a forking ``starter``, a child that has not loaded the
    model within ``load_timeout_s`` (or dies before) raises LaunchFailure.
    """
    identity: dict[str, Any] = {
        "setting": spec.setting,
        "round": spec.round,
        "onednn": spec.onednn,
    }
    try:
        request = _request(subject_format(subject), subject, spec)
    except (ModelError, RequestsError) as exc:
        return TrialResult(**identity, status="failed", reason=str(exc))
    env = trial_env(spec.setting, onednn=spec.onednn)
    outcome = run_child(
        request,
        env=env,
        timeout_s=deadline_s,
        starter=starter or (SpawnStarter() if program is None else SpawnStarter(program)),
        load_timeout_s=load_timeout_s,
    )
    label = _label(spec)
    if outcome.answer is None:
        log.info("trial %s: %s (%s)", label, outcome.status, outcome.reason)
        return TrialResult(**identity, status=outcome.status, reason=outcome.reason)
    answer = dict(outcome.answer)
    status = answer.pop("status", None)
    if status == "failed":
        reason = one_line(str(answer.get("reason") or "the trial reported a failure"))
        log.info("trial %s: failed (%s)", label, reason)
        return TrialResult(**identity, status="failed", reason=reason)
    if status != "ok":
        return TrialResult(**identity, status="failed", reason=f"unknown status {status!r}")
    try:
        result = TrialResult(**identity, status="ok", **answer)
    except (ValidationError, TypeError) as exc:
        detail = first_error(exc) if isinstance(exc, ValidationError) else str(exc)
        reason = one_line(f"the trial's answer does not validate: {detail}")
        return TrialResult(**identity, status="failed", reason=reason)
    log.info(
        "trial %s: p50 %.2f ms, p99 %.2f ms, %.1f req/s, %s threads",
        label,
        result.p50_ms or 0.0,
        result.p99_ms or 0.0,
        result.throughput_rps or 0.0,
        result.threads,
    )
    return result


def inspect_subject(
    subject: SubjectSpec, *, timeout_s: float = 120, starter: Starter | None = None
) -> SubjectInfo:
    """Load the model once in a child and describe it; anything wrong is a one-line ModelError.

    The child also runs one request on the synthesised inputs (or each distinct request it
    replays), so a model that cannot run on them fails here, before any budget is spent on a
    sweep; a request file that cannot be replayed is a one-line RequestsError.
    """
    where = subject.model_path or "built-in model"
    model_format = check_subject(subject)
    outcome = run_child(
        _request(model_format, subject),
        env=trial_env(ThreadSetting.TF_DEFAULT),
        timeout_s=timeout_s,
        starter=starter or SpawnStarter(),
        load_timeout_s=None,
    )
    if outcome.answer is None:
        if outcome.status == "timeout":
            raise ModelError(f"{where}: loading the model took longer than {timeout_s:g} s")
        raise ModelError(f"{where}: loading the model failed: {outcome.reason}")
    status = outcome.answer.get("status")
    if status == "model_error":
        raise ModelError(one_line(str(outcome.answer.get("reason") or f"{where}: unusable model")))
    if status == "requests_error":
        reason = outcome.answer.get("reason") or f"{where}: the requests cannot be replayed"
        raise RequestsError(one_line(str(reason)))
    try:
        return SubjectInfo.model_validate(outcome.answer.get("info"))
    except ValidationError as exc:
        raise ModelError(
            f"{where}: the model's description does not validate: {first_error(exc)}"
        ) from None


def _request(
    model_format: ModelFormat, subject: SubjectSpec, spec: TrialSpec | None = None
) -> TrialRequest:
    """What the child is asked: to measure ``spec`` or, without one, to inspect the subject.

    The requests to replay are looked for here, each time: a warmup file is the model's own."""
    window: dict[str, Any] = (
        {}
        if spec is None
        else {
            "warmup_s": spec.warmup_s,
            "measure_s": spec.measure_s,
            "min_requests": spec.min_requests,
            "max_measure_s": spec.max_measure_s,
        }
    )
    try:
        return TrialRequest(
            mode="inspect" if spec is None else "trial",
            model_format=model_format,
            path=subject.model_path,
            signature=subject.signature,
            batch_size=subject.batch_size,
            input_shape=subject.input_shape,
            concurrency=subject.concurrency,
            **_replayed(model_format, subject),
            **window,
        )
    except ValidationError as exc:  # a size or a window no child could use
        where = subject.model_path or "built-in model"
        problem = first_error(exc)
        raise ModelError(f"{where}: the trial request does not validate: {problem}") from None


def _replayed(model_format: ModelFormat, subject: SubjectSpec) -> dict[str, str]:
    return TrialRequest.replaying(requests_source(subject, model_format))


def _label(spec: TrialSpec) -> str:
    if spec.setting.is_default:
        return "baseline (TF default)"
    return f"intra={spec.setting.intra} inter={spec.setting.inter} round={spec.round}"
