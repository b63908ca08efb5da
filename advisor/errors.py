"""Typed errors and the exit codes they map to.

Every failure a user can cause or meet (bad flags, bad files, a broken model, a cluster that says
no) is raised as one of these. The CLI turns it into one line on stderr and the exit code below, so
a Job's ``podFailurePolicy`` can tell a retryable failure from one that will never succeed: each
class says what the calibration Job does with its code (``retry``) and whether the planner's
CronJob fails at once on it (``planner_fails``); fleet mode's Job policy is made of these, and the
table in README.md (codes and the retry column) and the shipped manifests are checked against them
by the tests.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from pydantic import ValidationError


class Opt(str):
    """An option named in a message, by its Python name (``env_file``, ``budget_s``).

    The layers below the CLI do not know its flags, but their messages must name the option a
    person got wrong: a message is built of parts, the options among them as ``Opt``; ``str()``
    of the error names them as a Python caller passes them, and the CLI spells them as its flags
    (``spelled``): ``UsageError(Opt("restart"), " needs ", Opt("configmap"))`` reads "restart
    needs configmap" to Python and "--restart needs --configmap" on the command line.
    """

    __slots__ = ()


class Retry(Enum):
    """What the calibration Job's ``podFailurePolicy`` does with an exit code."""

    #: a retry cannot fix it: the Job fails at once (FailJob)
    FAIL_JOB = "fail the Job"
    #: a retry may fix it: retried, counting towards backoffLimit (Count)
    COUNT = "count and retry"
    #: in no exit-code rule, so a drained pod's SIGTERM reaches the DisruptionTarget rule
    #: (retried uncounted); any other pod's failure is counted by default
    DISRUPTION = "left to the disruption rule"
    #: the Job's ``run`` never exits with it (another command's code): in no rule
    NOT_RUN = "not the run's"

    @property
    def readme(self) -> str:
        """README's retry cell: does the Job try again."""
        return {Retry.FAIL_JOB: "no", Retry.NOT_RUN: ""}.get(self, "yes")


class AdvisorError(Exception):
    """Base of every expected failure; ``exit_code`` is what the process exits with.

    ``parts`` joined are the message (see ``Opt``); a plain string is one part.
    """

    exit_code: ClassVar[int] = 1
    #: one word for logs and the README table
    kind: ClassVar[str] = "internal"
    #: what the calibration Job does with ``exit_code``: a class with a code of its own says so
    #: itself (the tests check), one that shares its parent's code shares its classification
    retry: ClassVar[Retry] = Retry.FAIL_JOB
    #: whether the planner's CronJob fails at once on ``exit_code`` (a second ``plan`` would end
    #: the same); its other codes are retried. A class with a code of its own says so itself
    planner_fails: ClassVar[bool] = True

    def __init__(self, *parts: str) -> None:
        self.parts = parts
        super().__init__("".join(parts))

    def spelled(self, name: Callable[[Opt], str]) -> str:
        """The message with each option spelled by ``name`` (the CLI: its flag)."""
        return "".join(name(part) if isinstance(part, Opt) else part for part in self.parts)


class UsageError(AdvisorError):
    """Bad flags or flag values (also what argparse exits with)."""

    exit_code = 2
    kind = "usage"
    retry = Retry.FAIL_JOB
    planner_fails = True


class InvalidOptionsError(UsageError, ValueError):
    """Options the models refuse: a budget that cannot measure anything, an SLO without its bound.

    Raised in the models' validators, once for every caller: a ValueError, so pydantic reports it
    in its ValidationError like any other bad field, and a UsageError that the CLI finds there
    and prints with its flags spelled (exit 2).
    """


class ProbeError(AdvisorError):
    """The node could not be probed well enough to say anything (not even the affinity)."""

    exit_code = 3
    kind = "probe"
    retry = Retry.FAIL_JOB
    planner_fails = False


class ModelError(AdvisorError):
    """The model path, file, signature or its inputs cannot be used."""

    exit_code = 4
    kind = "model"
    retry = Retry.FAIL_JOB
    planner_fails = False


class CalibrationError(AdvisorError):
    """The sweep produced nothing to advise on: the baseline failed, or no trial succeeded."""

    exit_code = 5
    kind = "calibration"
    retry = Retry.COUNT
    planner_fails = False


class InvalidAdviceError(AdvisorError):
    """A Recommendation or ConfigMap does not validate (``validate``, or before any write)."""

    exit_code = 6
    kind = "invalid"
    retry = Retry.FAIL_JOB
    planner_fails = False


class ClusterUnreachableError(AdvisorError):
    """The API server could not be reached or kept failing transiently; retrying may help."""

    exit_code = 7
    kind = "unreachable"
    retry = Retry.COUNT
    planner_fails = False


class ForbiddenError(AdvisorError):
    """401/403: the credentials or the Role do not allow the write; retrying will not help."""

    exit_code = 8
    kind = "forbidden"
    retry = Retry.FAIL_JOB
    planner_fails = True


class ConflictError(AdvisorError):
    """409s kept coming past the retry bound (a concurrent writer); a later run may succeed."""

    exit_code = 9
    kind = "conflict"
    retry = Retry.COUNT
    planner_fails = False


class AdviceKeptError(AdvisorError):
    """The stored advice was kept: measured with a bigger budget, or not ours (no ``--force``).

    Apart from ConflictError because a retry cannot change it: the Job must fail at once, not
    re-measure up to its backoffLimit.
    """

    exit_code = 13
    kind = "kept"
    retry = Retry.FAIL_JOB
    planner_fails = False


class ClusterRejectedError(AdvisorError):
    """The API server refused the object for good (404 namespace, 422 invalid, other 4xx)."""

    exit_code = 10
    kind = "rejected"
    retry = Retry.FAIL_JOB
    planner_fails = True


class CheckMismatchError(AdvisorError):
    """``check --strict``: the node differs from the one the advice was measured on."""

    exit_code = 11
    kind = "mismatch"
    retry = Retry.FAIL_JOB
    planner_fails = False


class OutputError(AdvisorError):
    """A local output file (``--output``, ``--env-file``, ``--report``) could not be written."""

    exit_code = 12
    kind = "output"
    retry = Retry.FAIL_JOB
    planner_fails = False


class RestartTargetError(AdvisorError):
    """A ``--restart`` workload does not exist, or the Role does not let us patch it; found
    before the sweep, so nothing was measured or written."""

    exit_code = 14
    kind = "workload"
    retry = Retry.FAIL_JOB
    planner_fails = False


class RestartFailedError(AdvisorError):
    """The advice was written, but patching a ``--restart`` workload failed afterwards; the line
    says which workloads were restarted and which were not. The ConfigMap write stands, so a
    retry (another full sweep) is not the fix: restart the rest by hand."""

    exit_code = 15
    kind = "restart"
    retry = Retry.FAIL_JOB
    planner_fails = False


class ProblemsFoundError(AdvisorError):
    """``status --fail-on-problems``: a consumer does not fit its advice (stdout lists each
    problem). Its own code so CI and alerting can tell "found problems" from "could not look"."""

    exit_code = 16
    kind = "problems"
    retry = Retry.NOT_RUN
    planner_fails = False


class DecisionsFailedError(AdvisorError):
    """``plan``: a decision is ``failed`` (a calibration Job failed, or the API server refused to
    create one: a quota, an admission webhook, an invalid Job). stdout lists every decision
    first; the code is the plan's own, so a CronJob shows it. Never the Job's ``run``."""

    exit_code = 17
    kind = "failed"
    retry = Retry.NOT_RUN
    planner_fails = True


class RevertsLimitedError(AdvisorError):
    """``plan``: more advice regressed than ``--max-reverts`` may revert in one plan; the rest
    stay as they are (stdout lists every decision first). Many at once may be a change under
    every workload, for a person to look at; a retry would revert more, so the planner's
    CronJob fails at once. Never the Job's ``run``."""

    exit_code = 19
    kind = "reverts"
    retry = Retry.NOT_RUN
    planner_fails = True


class InterruptedRunError(AdvisorError):
    """SIGINT/SIGTERM arrived; the run stopped and published nothing."""

    exit_code = 130
    kind = "interrupted"
    retry = Retry.DISRUPTION
    planner_fails = False

    def __init__(self, *parts: str, signal: str | None = None) -> None:
        super().__init__(*parts)
        #: the signal's name (``SIGTERM``), for a later message that says where it arrived
        self.signal = signal

    @classmethod
    def by_signal(cls, name: str) -> InterruptedRunError:
        """What the signal handler raises: nothing is published after it."""
        return cls(f"interrupted by {name}; nothing was published", signal=name)

    @property
    def what(self) -> str:
        """``interrupted by SIGTERM``."""
        return "interrupted" if self.signal is None else f"interrupted by {self.signal}"


EXIT_OK = 0


def error_classes() -> list[type[AdvisorError]]:
    """``AdvisorError`` and every class of this module below it, by exit code."""
    found: list[type[AdvisorError]] = []
    pending: list[type[AdvisorError]] = [AdvisorError]
    while pending:
        cls = pending.pop(0)
        if cls.__module__ == __name__ and cls not in found:
            found.append(cls)
        pending.extend(cls.__subclasses__())
    return sorted(found, key=lambda cls: cls.exit_code)


def exit_codes(retry: Retry) -> list[int]:
    """The exit codes the calibration Job treats as ``retry`` says, ascending."""
    return sorted({cls.exit_code for cls in error_classes() if cls.retry is retry})


def planner_fail_codes() -> list[int]:
    """The exit codes on which the planner's CronJob fails at once, ascending."""
    return sorted({cls.exit_code for cls in error_classes() if cls.planner_fails})


#: every exit code the CLI can end with, by kind; README's table must match this.
EXIT_CODES: dict[str, int] = {
    "ok": EXIT_OK,
    **{cls.kind: cls.exit_code for cls in error_classes()},
}


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line, clipped: reasons end up in tables, logs and ConfigMap annotations."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def first_error(
    exc: ValidationError,
    *,
    where: Callable[[tuple[int | str, ...]], str] | None = None,
    count_more: bool = False,
) -> str:
    """The first problem pydantic found, as ``location: message`` on one line.

    One is enough to act on (the rest are often its consequences), and it has to fit where a
    reason goes. ``where`` names the location (default: the field path, ``trials.0.p99_ms``;
    the CLI names the flag instead); ``count_more`` adds ``(and N more)``.
    """
    errors = exc.errors()
    if not errors:
        return str(exc)
    first = errors[0]
    loc = tuple(first.get("loc", ()))
    place = ".".join(str(part) for part in loc) if where is None else where(loc)
    # a validator's ValueError comes as "Value error, <its message>": the message says it all
    message = str(first.get("msg", "")).removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more)" if count_more and len(errors) > 1 else ""
    return f"{place + ': ' if place else ''}{message}{more}"


def usage_error(exc: ValidationError) -> UsageError:
    """A model's refusal of options as one usage line: its own rule's message (options spelled
    by the caller, as every error's are), else the field's option and pydantic's words."""
    error = exc.errors()[0]
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, AdvisorError):
        return UsageError(*cause.parts)
    message = first_error(exc, where=lambda _: "")
    if not error["loc"]:
        return UsageError(message)
    return UsageError(Opt(str(error["loc"][0])), f": {message}")
