"""What ``plan`` does for each opted-in workload container: calibrate, fits, pending, failed or
skipped, each with a one-line reason.

The advice fits when it was measured for this container (the workload and container it records)
in the shape the container has now: the same CPU quota (its limit, or its request where it has no
limit), node pool, model path, serving image, objective, concurrency and batch, the same fields of
the calibration spec it records (``advisor.fleet.spec``: node affinity, tolerations, runtime
class, memory and the other resources, the model volume, the budget, run's flags), and it is
younger than ``max_age``. Any difference is named in the reason. Advice an older advisor wrote
records no spec and is judged by the rest alone. A calibration Job for the same derived
spec that has not finished is ``pending``; one that failed is ``failed`` with the Job's own
reason, and stays so until the Job is gone (its TTL): a broken spec is not retried every night.
While an earlier spec's calibration of the same container runs, the new one waits for it, so two
Jobs never write one ConfigMap at once.

Two opted-in containers may read one ConfigMap: the first (by workload and container) owns it and
is calibrated for; the others fit when their shape matches the advice and are skipped otherwise,
since one ConfigMap cannot hold two shapes' advice.

One module, though over 500 lines: one job, each container's decision from its advice, its Job
and the Jobs already there (``to_create`` applies the same decisions' one budget rule); the
differences an advice can have are typed in ``advisor.models.plan``, worded in render.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal

from advisor.consumers.fit import node_pool_problems, shadow_problems
from advisor.consumers.mounts import references
from advisor.consumers.quota import same_quota
from advisor.fleet.derive import (
    DerivedJob,
    DeriveError,
    JobSettings,
    derive_job,
    serving_container,
)
from advisor.fleet.jobs import PlannedJob
from advisor.fleet.optin import CalibrationAsk, Defaults, OptInError, opted_in, read_ask
from advisor.fleet.spec import CPU_KEYS, NODE_SELECTOR, spec_changes
from advisor.keys import ANN_CONFIGMAP
from advisor.models import (
    CpuFrom,
    Decision,
    Provenance,
    ServingTarget,
    WorkloadRef,
)
from advisor.models.kube import Container, KubeClaim, KubeWorkload, PodSpec
from advisor.models.plan import (
    Applied,
    Calibrate,
    Cause,
    CompletedUnfit,
    Difference,
    EarlierRunning,
    Fits,
    ForeignConfigMap,
    HandWritten,
    InvalidAdvice,
    JobExists,
    JobFailed,
    NoAdvice,
    NotCalibrated,
    OptionChanged,
    OtherContainer,
    Overridden,
    PlanReason,
    PoolSelected,
    PoolUnpinned,
    Quota,
    QuotaChanged,
    Refused,
    Running,
    SharedDiffers,
    Skipped,
    SpecChanged,
    SpecDifference,
    TargetChanged,
    TooOld,
    Waits,
)
from advisor.recommend import ParsedAdvice
from advisor.recommend.measured_for import option_changes
from advisor.recommend.stored import StoredAdvice


@dataclass(frozen=True)
class Planned:
    """One decision (``PlanDecision``'s fields, its ``job_name`` the Job created, to create,
    running or failed), with the Job it would create (calibrate) or concerns (pending, failed).

    ``reason`` is why, typed: the decision's cause and what planning and applying it did, which
    the pipeline puts into words (``advisor.render.plan_reasons.plan_reason_text``)."""

    workload: WorkloadRef
    reason: PlanReason
    container: str | None = None
    configmap: str | None = None
    job_name: str | None = None
    namespace: str | None = None
    job: DerivedJob | None = None
    #: production may write the previous advice back (the workload's
    #: ``tf-thread-advisor.io/revert`` annotation)
    revert: bool = True

    @property
    def decision(self) -> Decision:
        """What ``plan`` decides: what its reason makes it (``PlanReason.decision``)."""
        return self.reason.decision

    @property
    def verdict(self) -> Decision:
        """``decision``, by its former name: pipeline/production.py and its tests still ask for
        it (to go once they ask for ``decision``)."""
        return self.decision


@dataclass(frozen=True)
class _Candidate:
    """One opted-in container of ``workload`` that got as far as a derived Job: what deciding
    found out about it (the ask, the serving container, its advice ConfigMap, the Job)."""

    workload: KubeWorkload
    ask: CalibrationAsk
    serving: Container
    configmap: str
    job: DerivedJob

    @property
    def ref(self) -> WorkloadRef:
        return self.workload.ref

    @property
    def container(self) -> str:
        return self.serving.label

    @property
    def pod_spec(self) -> PodSpec:
        return self.workload.pod_spec


def decide(
    workloads: Iterable[KubeWorkload],
    configmaps: Mapping[str, StoredAdvice],
    jobs: Iterable[PlannedJob],
    *,
    defaults: Defaults,
    settings: JobSettings,
    now: datetime,
    max_age: timedelta | None = None,
    claims: Mapping[str, KubeClaim] | None = None,
    keep_advice: bool = False,
) -> list[Planned]:
    """A decision per opted-in container of ``workloads`` (one without a name is no workload),
    given the namespace's ConfigMaps and PersistentVolumeClaims by name and the planner's Jobs
    there. Sorted by workload.

    Each advice is parsed once, however many containers read it, and forgotten once the last of
    them is decided, unless ``keep_advice`` (someone asks it again: production's judge): a plan
    kept every parsed advice measurably slower than one that let each go (docs/benchmark.md,
    "Fleet planning")."""
    jobs = list(jobs)
    out: list[Planned] = []
    owners: dict[str, _Candidate] = {}
    listed = [obj for obj in workloads if obj.name]
    found: list[tuple[KubeWorkload, _Candidate | Planned]] = []
    for obj in sorted(listed, key=lambda item: str(item.ref)):
        try:
            if not opted_in(obj.metadata.labels):
                continue
        except OptInError as exc:
            found.append((obj, _planned(obj.ref, None, None, Skipped(str(exc)))))
            continue
        found.append((obj, _candidate(obj, configmaps, defaults, settings, claims=claims)))
    readers = Counter(one.configmap for _, one in found if isinstance(one, _Candidate))
    for obj, one in found:
        if isinstance(one, Planned):
            out.append(_in_namespace(one, obj))
            continue
        owner = owners.setdefault(one.configmap, one)
        decided = _decide_one(one, owner, configmaps, jobs, now=now, max_age=max_age)
        out.append(_in_namespace(decided, obj))
        readers[one.configmap] -= 1
        stored = configmaps.get(one.configmap)
        if not readers[one.configmap] and not keep_advice and stored is not None:
            stored.forget()
    return out


def _in_namespace(planned: Planned, workload: KubeWorkload) -> Planned:
    """The decision naming its workload's namespace (where its Job would run)."""
    namespace = workload.metadata.namespace
    if not namespace:
        return planned
    return replace(planned, namespace=namespace)


def _candidate(
    workload: KubeWorkload,
    configmaps: Mapping[str, StoredAdvice],
    defaults: Defaults,
    settings: JobSettings,
    *,
    claims: Mapping[str, KubeClaim] | None = None,
) -> _Candidate | Planned:
    ref, kind = workload.ref, workload.kind
    if not kind.calibrated:
        return _planned(ref, None, None, NotCalibrated(kind))
    try:
        ask = read_ask(workload.annotations, defaults)
        container = serving_container(workload.pod_spec, ask)
    except (OptInError, DeriveError) as exc:
        return _planned(ref, None, None, Skipped(str(exc)))
    name = container.label
    try:
        configmap = advice_configmap(container, ask, configmaps)
    except DeriveError as exc:
        return _planned(ref, name, None, Skipped(str(exc)))
    unusable = _unusable(container, configmap, configmaps.get(configmap))
    if unusable:
        return _planned(ref, name, configmap, unusable)
    try:
        job = derive_job(workload, ask, configmap=configmap, settings=settings, claims=claims)
    except DeriveError as exc:
        return _planned(ref, name, configmap, Skipped(str(exc)))
    return _Candidate(workload, ask, container, configmap, job)


def _unusable(
    container: Container, configmap: str, stored: StoredAdvice | None
) -> ForeignConfigMap | Overridden | None:
    """Why calibrating for ``configmap`` would be waste or harm: it is someone else's, or the
    container keeps the advice's values from TensorFlow (nobody would use what is measured)."""
    if stored is not None and not stored.ours:
        return ForeignConfigMap(configmap)
    overridden = shadow_problems(container, configmap)
    if overridden:
        return Overridden(tuple(overridden))
    return None


def advice_configmap(
    container: Container,
    ask: CalibrationAsk,
    configmaps: Mapping[str, StoredAdvice],
) -> str:
    """The advice ConfigMap of ``container``: the annotation's, else the one it reads that is
    the advisor's (or does not exist yet: a required reference waiting for its advice).
    DeriveError when it reads none, or several that could be."""
    if ask.configmap:
        return ask.configmap
    # every ConfigMap it reads with envFrom, or by a key reference to one of the advice's keys
    names, others = [], []
    for name in references(container):
        stored = configmaps.get(name)
        if stored is None or stored.ours:
            names.append(name)
        else:
            others.append(name)
    if len(names) == 1:
        return names[0]
    if not names:
        reads = (
            f" (it reads {', '.join(others)}, not written by tf-thread-advisor)" if others else ""
        )
        raise DeriveError(
            f"its container reads no advice ConfigMap with envFrom{reads}: mount one, or name "
            f"the one to write with annotation {ANN_CONFIGMAP}"
        )
    raise DeriveError(
        f"its container reads several ConfigMaps that could be its advice ({', '.join(names)}): "
        f"name one with annotation {ANN_CONFIGMAP}"
    )


def _decide_one(
    found: _Candidate,
    owner: _Candidate,
    configmaps: Mapping[str, StoredAdvice],
    jobs: Sequence[PlannedJob],
    *,
    now: datetime,
    max_age: timedelta | None,
) -> Planned:
    job = found.job

    def planned(cause: Cause, job_name: str | None = job.name) -> Planned:
        return Planned(
            found.ref,
            PlanReason(cause),
            container=found.container,
            configmap=found.configmap,
            job_name=job_name,
            job=job,
            revert=found.ask.revert,
        )

    parsed, problem = _advice(configmaps.get(found.configmap))
    shared = owner is not found
    differences: tuple[Difference, ...] = (
        (problem,)
        if problem
        else tuple(differences_from(parsed, found, max_age=max_age, now=now, shared=shared))
    )
    if shared and differences:
        return planned(SharedDiffers(found.configmap, owner.ref, differences), None)
    if not differences:
        return planned(_fits(parsed, found), None)
    waiting = _by_jobs(found, jobs, differences, planned)
    changed = tuple(shape_changes(parsed, found)) if parsed is not None else ()
    return waiting or planned(Calibrate(differences, changed))


def _by_jobs(
    found: _Candidate,
    jobs: Sequence[PlannedJob],
    differences: tuple[Difference, ...],
    planned: Callable[..., Planned],
) -> Planned | None:
    """pending or failed by the Jobs already there for this container; None: none stands in
    the way of a new calibration."""
    job = found.job
    mine = [j for j in jobs if (j.workload, j.container) == (found.ref, found.container)]
    same = next((j for j in mine if j.name == job.name), None)
    if same is not None and same.state == "running":
        return planned(Running(same.name))
    if same is not None and same.state == "failed":
        return planned(JobFailed(same.name, same.reason))
    earlier = [j for j in mine if j.name != job.name and j.state == "running"]
    if earlier:
        return planned(EarlierRunning(earlier[0].name, differences), earlier[0].name)
    if same is not None:  # complete, and what it wrote does not fit
        return planned(CompletedUnfit(same.name, differences))
    return None


def differences_from(
    parsed: ParsedAdvice | None,
    found: _Candidate,
    *,
    max_age: timedelta | None,
    now: datetime,
    shared: bool = False,
) -> list[Difference]:
    """Why the stored advice does not fit the container as it is now (empty: it fits)."""
    if parsed is None:
        return [NoAdvice(found.configmap)]
    prov = parsed.recommendation.provenance
    target = prov.target
    if target is None:
        return [HandWritten(found.configmap)]
    out: list[Difference] = []
    if not shared and (target.workload, target.container) != (found.ref, found.container):
        out.append(OtherContainer(target.workload, target.container))
    out += shape_changes(parsed, found)
    age = now - prov.created_at
    if max_age is not None and age > max_age:
        out.append(TooOld(age))
    return out


def shape_changes(parsed: ParsedAdvice, found: _Candidate) -> list[SpecDifference]:
    """How the container's calibration spec differs from the one the advice records (empty:
    the same, or no spec recorded: a hand-written target's advice)."""
    prov = parsed.recommendation.provenance
    target, now_target = prov.target, found.job.target
    if target is None:
        return []
    cpu = _cpu_difference(prov, found.job)
    pool = _pool_difference(prov, found.pod_spec)
    out: list[SpecDifference] = [*cpu, *pool]
    targets: tuple[tuple[Literal["model path", "serving image"], str | None, str | None], ...] = (
        ("model path", target.model_path, now_target.model_path),
        ("serving image", target.image, now_target.image),
    )
    for what, was, now_value in targets:
        if was != now_value:
            out.append(TargetChanged(what, was, now_value))
    for change in option_changes(prov, found.ask.options).values():
        out.append(OptionChanged(change.what, change.was, change.now))
    out += _spec_difference(target, now_target, cpu=bool(cpu), pool=bool(pool))
    return out


def _spec_difference(
    target: ServingTarget, now_target: ServingTarget, *, cpu: bool, pool: bool
) -> list[SpecChanged]:
    """The fields of the recorded calibration spec that changed, where the comparisons above
    have not named them already. Advice without the record (an older advisor's) is judged by
    those comparisons alone: an upgrade does not calibrate the whole fleet again."""
    if target.spec is None or now_target.spec is None:
        return []
    return [
        change
        for change in spec_changes(target.spec, now_target.spec)
        if not (cpu and change.key in CPU_KEYS) and not (pool and change.key == NODE_SELECTOR)
    ]


def _cpu_difference(prov: Provenance, job: DerivedJob) -> list[QuotaChanged]:
    """The CPU quota measured under against the container's now, where they are not the same
    quota: no quota then, a limit for a request (or back), or another number of CPUs."""
    target = prov.target
    measured = prov.measured_cpus
    was_from: CpuFrom = target.cpu_from if target is not None else "limit"
    now = Quota(job.cpu_from, job.cpu)
    if measured is None:
        return [QuotaChanged(None, now)]
    if was_from != job.cpu_from or not same_quota(measured, job.cpu):
        return [QuotaChanged(Quota(was_from, measured), now)]
    return []


def _pool_difference(prov: Provenance, pod_spec: PodSpec) -> list[PoolUnpinned | PoolSelected]:
    """The node pool in both directions: the advice's pool must be required of the pods
    (status's check), and the pods must not be pinned to a pool the advice was not measured on."""
    recorded = dict(prov.node_selector or {})
    current = pod_spec.selector
    out: list[PoolUnpinned | PoolSelected] = [
        PoolUnpinned(p) for p in node_pool_problems(recorded, pod_spec)
    ]
    extra = sorted(((k, v) for k, v in current.items() if recorded.get(k) != v), key=_pair_text)
    if extra and not out:
        out.append(PoolSelected(tuple(sorted(recorded.items())), tuple(extra)))
    return out


def _pair_text(pair: tuple[str, str]) -> str:
    """A selector pair as it is shown (``key=value``), which its order follows."""
    return f"{pair[0]}={pair[1]}"


def _fits(parsed: ParsedAdvice | None, found: _Candidate) -> Fits:
    assert parsed is not None  # no differences: there is an advice
    rec, job = parsed.recommendation, found.job
    return Fits(
        rec.intra_op_threads,
        rec.inter_op_threads,
        found.configmap,
        job.cpu_from,
        job.cpu,
        bool(rec.provenance.cpus_exclusive),
        job.pool,
        str(rec.provenance.objective),
        rec.provenance.elapsed_s,
        rec.provenance.stopped,
    )


def _advice(stored: StoredAdvice | None) -> tuple[ParsedAdvice | None, InvalidAdvice | None]:
    """The stored advice, or why the ConfigMap holds none that validates (nothing: no ConfigMap)."""
    if stored is None:
        return None, None
    outcome = stored.outcome
    if isinstance(outcome, ParsedAdvice):
        return outcome, None
    return None, InvalidAdvice(stored.name, str(outcome))


def _planned(
    ref: WorkloadRef, container: str | None, configmap: str | None, cause: Cause
) -> Planned:
    return Planned(ref, PlanReason(cause), container=container, configmap=configmap)


def with_cause(planned: Planned, cause: Cause) -> Planned:
    """``planned`` decided again: a new cause, nothing applied yet."""
    return replace(planned, reason=PlanReason(cause))


def applying(planned: Planned, part: Applied) -> Planned:
    """``planned`` with what applying it did added to its reason."""
    return replace(planned, reason=planned.reason.plus(part))


def answered(planned: Planned, cause: JobExists | Refused) -> Planned:
    """``planned`` with the API server's answer about its Job as its whole reason."""
    return replace(planned, reason=PlanReason(cause))


def to_create(
    planned: Sequence[Planned], jobs: Iterable[PlannedJob], *, max_running: int
) -> tuple[list[Planned], list[Planned]]:
    """(the calibrations to start now, all decisions with the waiting ones saying so).

    At most ``max_running`` of the planner's calibrations run on one node pool at once, counting
    those already running, so calibrating never takes a pool's spare CPU at once; the rest wait
    for the next plan."""
    running: dict[str, int] = {}
    for job in jobs:
        if job.state == "running":
            running[job.pool_hash] = running.get(job.pool_hash, 0) + 1
    start, out = [], []
    for item in planned:
        if item.decision != "calibrate" or item.job is None:
            out.append(item)
            continue
        pool = item.job.pool_hash
        busy = running.get(pool, 0)
        if busy >= max_running:
            out.append(applying(item, Waits(busy, item.job.pool, max_running)))
            continue
        running[pool] = busy + 1
        start.append(item)
        out.append(item)
    return start, out
