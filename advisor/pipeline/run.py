"""One calibration run end to end: check, measure, publish, restart (``run``, and Python callers).

Every problem that can be found before the sweep is found before it (names, output paths, cluster
config, RBAC and namespace through server-side dry runs, the budget guard, the restart targets),
because a Job that measures for minutes and then cannot write has wasted the node. After the sweep
the whole Recommendation is validated with the rules ``validate`` uses, and only then are files
and the ConfigMap written, each in one step (files: temp + rename; the ConfigMap: one server-side
apply). Restarts come last: they need the written advice, and their failure leaves it standing.

Before the sweep the stored advice is read from where the run will write (the ConfigMap, else
``--output``, else ``--env-file``): it is the incumbent the sweep must beat beyond noise
(``pipeline.incumbent``), so a run on an unchanged node republishes the same values.

The three stages are separate so a caller can wrap the sweep alone (the CLI's progress bar)::

    prepared = prepare_run(request)          # UsageError, ForbiddenError, ... before measuring
    result = prepared.measure(progress)      # probe + calibrate
    published = prepared.publish(result)     # files, ConfigMap, restarts

The probe and the sweep are the ``Instruments`` given to ``prepare_run`` (the real ones by
default).

``run_advisor(request)`` does all three. Error messages name the request's fields (``errors.Opt``);
the CLI spells them as its flags.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

from advisor import __version__
from advisor.errors import InterruptedRunError, InvalidAdviceError, Opt, UsageError
from advisor.keys import HASH_ANNOTATION
from advisor.kubenames import label_problem
from advisor.models import (
    CalibrationOptions,
    CalibrationResult,
    NodeProfile,
    ProgressFn,
    Recommendation,
    ThreadSetting,
)
from advisor.models.notes import Forced, Note, UndoneInProduction
from advisor.pipeline.calibration import resolve_served_version, with_notes
from advisor.pipeline.files import StagedFile, check_output_path, stage_file
from advisor.pipeline.incumbent import (
    IncumbentChoice,
    from_configmap,
    from_configmap_file,
    from_env_file,
    stored_configmap,
)
from advisor.pipeline.instruments import Instruments
from advisor.pipeline.run_request import RunRequest
from advisor.pipeline.source import (
    check_cluster_timeout,
    check_names,
    namespace_needed,
)
from advisor.pipeline.target import check_target, warn_on_probe
from advisor.recommend import (
    annotation_key_problem,
    build_recommendation,
    configmap_yaml,
    env_file_text,
    keep_data_changed_at,
    parse_configmap,
    render_configmap,
)
from advisor.recommend.previous import keep_previous, rejected_for
from advisor.render.words import note_text

if TYPE_CHECKING:
    from advisor.cluster import ConfigMapWriter, PublishOutcome
    from advisor.cluster.restart import Restarted, WorkloadRestarter

log = logging.getLogger("advisor.publish")


class _Phase(Enum):
    """How far ``publish`` got, for what an interrupting signal leaves behind."""

    STAGING = "staging"
    WRITING = "writing"
    WRITTEN = "written"
    RESTARTING = "restarting"


def check_run_request(request: RunRequest) -> None:
    """Every name, path and combination of ``request``, before anything runs (UsageError)."""
    if request.configmap is not None:
        check_names(configmap=request.configmap)
        if request.namespace is None:
            raise namespace_needed()
    elif request.namespace is not None:
        raise UsageError(
            Opt("namespace"),
            " needs ",
            Opt("configmap"),
            ": it is the ConfigMap's namespace, and without ",
            Opt("configmap"),
            " nothing is written to a cluster",
        )
    if request.namespace is not None:
        check_names(namespace=request.namespace)
    check_cluster_timeout(request.cluster_timeout_s)
    for option, pairs in (
        ("node_labels", request.node_labels),
        ("node_selector", request.node_selector),
    ):
        for key, value in pairs.items():
            problem = label_problem(key, value)
            if problem:
                raise UsageError(Opt(option), f" {f'{key}={value}'!r}: {problem}")
    for key in request.annotations:
        problem = annotation_key_problem(key)
        if problem:
            raise UsageError(Opt("annotations"), f" {key!r}: {problem}")
    _check_restart(request)
    if request.target is not None:
        check_target(request.target)
    if request.output_file is not None:
        check_output_path("output", request.output_file)
    if request.env_file is not None:
        check_output_path("env_file", request.env_file)


def _check_restart(request: RunRequest) -> None:
    if request.restart and request.configmap is None:
        raise UsageError(
            Opt("restart"), " needs ", Opt("configmap"), ": the workloads restart on its advice"
        )
    seen = set()
    for ref in request.restart:
        if ref in seen:
            raise UsageError(Opt("restart"), f" {ref} is given twice")
        seen.add(ref)


@dataclass(frozen=True)
class PublishedRun:
    """What a run published: the advice, its ConfigMap (and YAML), the cluster write's outcome
    and the workloads restarted on it."""

    recommendation: Recommendation
    configmap: dict[str, Any]
    text: str
    outcome: PublishOutcome | None = None
    restarted: tuple[Restarted, ...] = ()


@dataclass
class PreparedRun:
    """A run whose checks before the sweep passed; ``measure`` then ``publish``."""

    request: RunRequest
    writer: ConfigMapWriter | None = None
    restarter: WorkloadRestarter | None = None
    #: the ConfigMap the cluster held at the preflight (None: none, or no cluster target)
    stored: dict[str, Any] | None = None
    instruments: Instruments = field(default_factory=Instruments)
    #: what the result should say before the sweep's own notes (the version measured)
    notes: tuple[Note, ...] = ()

    def measure(self, progress: ProgressFn | None = None) -> CalibrationResult:
        """Probe this node and run the sweep (minutes: the budget), the stored advice racing as
        the incumbent."""
        node = self.instruments.probe(self.request.host_root)
        warn_on_probe(self.request.target, node)
        held = self.incumbent(node)
        for note in held.notes:
            log.warning("%s", note_text(note))
        if held.incumbent is not None:
            log.info(
                "the advice in force: intra=%d inter=%d (%s); it stays unless a setting beats "
                "it beyond noise",
                held.incumbent.setting.intra,
                held.incumbent.setting.inter,
                held.incumbent.source,
            )
        options = self._without_rejected(held)
        if options.rejected:
            held = self._rejected_incumbent(held, options.rejected)
        result = self.instruments.sweep(options, node, progress=progress, incumbent=held.incumbent)
        return with_notes(result, (*self.notes, *held.notes))

    def _without_rejected(self, held: IncumbentChoice) -> CalibrationOptions:
        """The options with the settings production undid for this target left out (the stored
        ConfigMap records them: plan's revert)."""
        rejected = rejected_for(self._stored_object(), self.request.target)
        if not rejected:
            return self.request.options
        log.info(
            "left out: %s, undone in production for this target",
            ", ".join(s.label for s in rejected),
        )
        return self.request.options.model_copy(update={"rejected": rejected})

    @staticmethod
    def _rejected_incumbent(
        held: IncumbentChoice, rejected: tuple[ThreadSetting, ...]
    ) -> IncumbentChoice:
        """A stored advice that production undid is no incumbent: TF's default is."""
        if held.incumbent is None or held.incumbent.setting not in rejected:
            return held
        return IncumbentChoice(notes=(*held.notes, UndoneInProduction()))

    def _stored_object(self) -> dict[str, Any] | None:
        """What this run replaces: the ConfigMap read at the preflight, else the --output file's
        (None when absent or unreadable: nothing to carry over)."""
        if self.writer is not None:
            return self.stored
        output = self.request.output_file
        if output is None or not output.is_file():
            return None
        loaded, _ = stored_configmap(output, str(self.request.output))
        return loaded if isinstance(loaded, dict) else None

    def incumbent(self, node: NodeProfile) -> IncumbentChoice:
        """The stored advice this run would replace, if it fits this node and this run."""
        request = self.request
        if request.force:
            return IncumbentChoice(notes=(Forced(),))
        if self.writer is not None:
            if self.stored is None:
                return IncumbentChoice()
            return from_configmap(self.stored, self.writer.where, node, request.options)
        output = request.output_file
        if output is not None and output.is_file():
            return from_configmap_file(output, f"--output {request.output}", node, request.options)
        if request.env_file is not None and request.env_file.is_file():
            return from_env_file(request.env_file, node)
        return IncumbentChoice()

    def render(self, result: CalibrationResult) -> PublishedRun:
        """The advice for ``result`` as a ConfigMap that reads back as the same advice."""
        request = self.request
        rec = build_recommendation(
            result,
            advisor_version=__version__,
            node_labels=request.node_labels,
            node_selector=request.node_selector,
            target=request.target,
        )
        configmap = render_configmap(
            rec, request.name, request.namespace, extra_annotations=request.annotations
        )
        # the time the data last changed carries over when it does not change (the writer does
        # the same against the object it reads just before its apply)
        # and so do the advice it replaces and the settings production undid (``keep_previous``)
        stored = self._stored_object()
        configmap = keep_previous(keep_data_changed_at(configmap, stored), stored)
        # the same rules `validate` applies: what is published always validates
        if parse_configmap(configmap, "the new advice").recommendation != rec:
            raise InvalidAdviceError("the rendered ConfigMap does not read back as the same advice")
        return PublishedRun(rec, configmap, configmap_yaml(configmap))

    def publish(self, result: CalibrationResult) -> PublishedRun:
        """Files staged (a full disk fails before the cluster is touched), the ConfigMap applied,
        the files put in place, then the restarts: a failed run leaves every output as it was,
        and a failed restart leaves the written advice standing."""
        request, writer = self.request, self.writer
        published = self.render(result)
        rec = published.recommendation
        staged: list[StagedFile] = []
        phase = _Phase.STAGING
        outcome = None
        try:
            if request.output_file is not None:
                staged.append(stage_file(request.output_file, published.text, "output"))
            if request.env_file is not None:
                staged.append(stage_file(request.env_file, env_file_text(rec), "env_file"))
            if writer is not None:
                phase = _Phase.WRITING
                outcome = writer.publish(
                    published.configmap, budget_s=request.options.budget_s, force=request.force
                )
                phase = _Phase.WRITTEN
                log.info(
                    "%s %s (resourceVersion %s): %s",
                    outcome.action,
                    writer.where,
                    outcome.resource_version,
                    " ".join(f"{k}={v}" for k, v in rec.env.items()),
                )
            for item in staged:
                item.commit()
                log.info("%s written to %s", item.option, item.path)
            restarted: tuple[Restarted, ...] = ()
            if self.restarter is not None and writer is not None:
                phase = _Phase.RESTARTING
                advice_hash = published.configmap["metadata"]["annotations"][HASH_ANNOTATION]
                restarted = tuple(self.restarter.restart(advice_hash, writer.where))
        except InterruptedRunError as exc:
            # The handler's "nothing was published" is only true before the cluster write began.
            if writer is not None and phase is not _Phase.STAGING:
                raise InterruptedRunError(
                    *self._interrupted(exc, phase, writer.where), signal=exc.signal
                ) from None
            raise
        finally:
            for item in staged:
                item.discard()
        return PublishedRun(rec, published.configmap, published.text, outcome, restarted)

    def _interrupted(self, exc: InterruptedRunError, phase: _Phase, where: str) -> tuple[str, ...]:
        signal_part = exc.what
        files = (Opt("output"), "/", Opt("env_file"))
        if phase is _Phase.WRITING:
            return (
                f"{signal_part} while writing {where}: it holds the previous or the new advice "
                "(one apply, never a mix); no ",
                *files,
                " was written",
            )
        if phase is _Phase.RESTARTING and self.restarter is not None:
            return (f"{signal_part} after {where} was written; {self.restarter.progress()}",)
        return (f"{signal_part} after {where} was written; ", *files, " may be the old ones")


def prepare_run(request: RunRequest, instruments: Instruments | None = None) -> PreparedRun:
    """The checks before the sweep: the request itself, then (with a ConfigMap target) cluster
    access, RBAC and the budget guard by a dry-run apply, and every restart target."""
    check_run_request(request)
    options, version = resolve_served_version(request.options)
    prepared = PreparedRun(
        replace(request, options=options),
        instruments=instruments or Instruments(),
        notes=(version,) if version is not None else (),
    )
    request = prepared.request
    if request.configmap is None:
        return prepared
    from advisor.cluster import ConfigMapWriter, RetryPolicy, connect
    from advisor.cluster.restart import WorkloadRestarter

    assert request.namespace is not None  # check_run_request refuses --configmap without one
    policy = RetryPolicy(total_s=request.cluster_timeout_s)
    writer = ConfigMapWriter(
        connect(request.kubeconfig), request.name, request.namespace, policy=policy
    )
    existing = writer.preflight(budget_s=request.options.budget_s, force=request.force)
    log.info(
        "cluster access ok: %s (%s), %s",
        writer.where,
        writer.connection.source,
        "exists" if existing else "will be created",
    )
    prepared.writer = writer
    prepared.stored = existing
    if request.restart:
        restarter = WorkloadRestarter(
            writer.connection, request.namespace, list(request.restart), policy=policy
        )
        restarter.preflight()
        log.info(
            "restart targets ok (exist, patch allowed): %s",
            ", ".join(str(ref) for ref in request.restart),
        )
        prepared.restarter = restarter
    return prepared


def run_advisor(
    request: RunRequest,
    progress: ProgressFn | None = None,
    instruments: Instruments | None = None,
) -> PublishedRun:
    """Check, measure, publish and restart, as ``tf-thread-advisor run`` does."""
    prepared = prepare_run(request, instruments)
    return prepared.publish(prepared.measure(progress))
