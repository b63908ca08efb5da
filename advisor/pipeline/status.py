"""Every advice in a namespace (or the cluster) at a glance, and which ones are stale: ``status``.

Like a VPA's recommendation or krr's table, but for thread settings: what each ConfigMap advises,
what it was measured on, how sure the measurement was, and whether it still applies. An advice is
stale when the advisor or TensorFlow changed since it was measured (a new TF may size its pools
differently) or when it is older than ``max_age`` (nodes, kernels and models move on). A
ConfigMap that carries the labels but does not validate is listed too, as stale, with the reason.

Like krr or a VPA, it also starts from the workloads: each advice lists the containers that read
it, with their CPU limit and the problems that make the advice wrong for them (``fit``); an
advice nobody reads is ``unused``, and a required reference to an advice that does not exist is
listed as a ``missing`` advice with its consumers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor import __version__
from advisor.consumers import fit
from advisor.consumers.mounts import mounts, workloads
from advisor.errors import ForbiddenError, Opt, UsageError
from advisor.fleet.jobs import PlannedJob, planned_job
from advisor.keys import PLANNED_SELECTOR, RELOADER_MATCH
from advisor.models import AdviceStatus, StatusResult
from advisor.models.kube import KubeJob
from advisor.models.times import format_age, timestamp
from advisor.pipeline.drift import installed_tf_version, tf_version_changed
from advisor.pipeline.source import (
    CLUSTER_TIMEOUT_S,
    check_cluster_timeout,
    namespace_to_list,
)
from advisor.recommend import ParsedAdvice
from advisor.recommend.stored import StoredAdvice
from advisor.render.words import took_text

if TYPE_CHECKING:
    from advisor.cluster.inventory import Inventory
    from advisor.pipeline.production_source import ProductionSource
    from advisor.prometheus import Settings

log = logging.getLogger(__name__)
_EPOCH = datetime.min.replace(tzinfo=timezone.utc)


def advice_status(
    stored: StoredAdvice,
    *,
    now: datetime,
    max_age: timedelta | None = None,
    advisor_version: str = __version__,
    tf_version: str | None = None,
) -> AdviceStatus:
    """The status of one ConfigMap that carries the advice labels."""
    name = stored.name or "?"
    namespace = stored.configmap.namespace or None
    parsed = stored.outcome
    if not isinstance(parsed, ParsedAdvice):
        reason = f"invalid: {parsed}"
        return AdviceStatus(
            name=name, namespace=namespace, stale=True, stale_reasons=[reason], error=str(parsed)
        )
    rec = parsed.recommendation
    prov = rec.provenance
    reasons = []
    if prov.advisor_version != advisor_version:
        reasons.append(f"advisor changed ({prov.advisor_version} -> {advisor_version})")
    if tf_version_changed(prov.tf_version, tf_version):
        reasons.append(f"TensorFlow changed ({prov.tf_version} -> {tf_version})")
    age = now - prov.created_at
    if max_age is not None and age > max_age:
        reasons.append(f"older than {format_age(max_age)}")
    within = prov.near_best
    return AdviceStatus(
        name=name,
        namespace=namespace,
        intra_op_threads=rec.intra_op_threads,
        inter_op_threads=rec.inter_op_threads,
        stale=bool(reasons),
        stale_reasons=reasons,
        node=prov.node_name,
        node_labels=dict(prov.node_labels),
        cpu_model=prov.cpu_model,
        effective_cpus=prov.effective_cpus,
        quota_cpus=prov.quota_cpus,
        cpus_exclusive=prov.cpus_exclusive,
        within_noise=within,
        range=None if within is None else within.describe(),
        objective=prov.objective,
        gain=prov.gain,
        gain_within_noise=prov.gain_within_noise,
        trials=prov.trials_total,
        budget_s=prov.budget_s,
        elapsed_s=prov.elapsed_s,
        stopped=prov.stopped,
        took=took_text(prov.elapsed_s, prov.stopped),
        tf_version=prov.tf_version,
        advisor_version=prov.advisor_version,
        created_at=timestamp(prov.created_at),
        age=format_age(age),
        age_s=int(age.total_seconds()),
        node_selector=prov.node_selector,
        data_changed_at=(
            None if parsed.data_changed_at is None else timestamp(parsed.data_changed_at)
        ),
        target=prov.target,
    )


def statuses(
    objects: Iterable[dict[str, Any]],
    *,
    now: datetime | None = None,
    max_age: timedelta | None = None,
    inventory: Inventory | None = None,
    production: ProductionSource | None = None,
) -> list[AdviceStatus]:
    """The status of each ConfigMap, sorted by namespace and name; versions compared with this
    advisor and the TensorFlow installed beside it (the image's, when run from the image). With
    ``inventory``, each with its consumers, and the missing advice that containers require; with
    ``production``, each consumer with its production verdict. Each advice is parsed once."""
    now = now or datetime.now(timezone.utc)
    tf_version = installed_tf_version()
    stored = [StoredAdvice.read(obj) for obj in objects]
    rows = [advice_status(s, now=now, max_age=max_age, tf_version=tf_version) for s in stored]
    if inventory is not None:
        rows = with_consumers(rows, stored, inventory, production)
    return sorted(rows, key=lambda r: (r.namespace or "", r.name))


def with_consumers(
    rows: list[AdviceStatus],
    stored: list[StoredAdvice],
    inventory: Inventory,
    production: ProductionSource | None = None,
) -> list[AdviceStatus]:
    """``rows`` (one per ConfigMap in ``stored``) with their consumers, then a ``missing`` row for
    each ConfigMap that a container requires and nobody has written. A reference to a
    ConfigMap that exists but is no advice is someone else's business."""
    by_configmap = mounts(workloads(inventory.workloads, inventory.pods))
    joined = []
    for row, advice in zip(rows, stored, strict=True):
        parsed = advice.parsed
        annotations = advice.configmap.annotations
        match = str(annotations.get(RELOADER_MATCH, "")).lower() == "true"
        reading = by_configmap.pop((row.namespace or "", row.name), [])
        found = [fit.consumer(parsed, mount, reloader_match=match) for mount in reading]
        if production is not None:
            previous = advice.previous
            found = [
                consumer.model_copy(
                    update={"production": production.judge(parsed, mount, previous)}
                )
                for consumer, mount in zip(found, reading, strict=True)
            ]
        joined.append(row.model_copy(update={"consumers": found, "unused": not found}))
    for (namespace, name), readers in sorted(by_configmap.items()):
        required = [mount for mount in readers if not mount.optional]
        if (namespace, name) in inventory.configmaps or not required:
            continue
        joined.append(
            AdviceStatus(
                name=name,
                namespace=namespace,
                error=f"no ConfigMap {name} in namespace {namespace}, but "
                f"{len(required)} container(s) require it",
                consumers=[fit.missing(mount) for mount in required],
                unused=False,
                missing=True,
            )
        )
    return joined


def with_calibrations(rows: list[AdviceStatus], jobs: Iterable[PlannedJob]) -> list[AdviceStatus]:
    """Each row with the newest calibration Job planned for its ConfigMap (by namespace)."""
    newest: dict[tuple[str, str], PlannedJob] = {}
    for job in jobs:
        key = (job.namespace, job.configmap)
        held = newest.get(key)
        if held is None or (job.created or _EPOCH) >= (held.created or _EPOCH):
            newest[key] = job
    out = []
    for row in rows:
        found = newest.get((row.namespace or "", row.name))
        if found is None:
            out.append(row)
            continue
        out.append(
            row.model_copy(
                update={
                    "calibration_job": found.name,
                    "calibration_state": found.state,
                    "calibration_reason": found.reason or None,
                }
            )
        )
    return out


def production_reader(
    prometheus: Settings | None, window: timedelta | None, warm_up: timedelta | None = None
) -> ProductionSource | None:
    """The reader of production verdicts, None without Prometheus."""
    if prometheus is None:
        return None
    from advisor.pipeline.production_source import production_source

    return production_source(prometheus, window, warm_up=warm_up)


def cluster_status(
    namespace: str | None = None,
    *,
    all_namespaces: bool = False,
    kubeconfig: Path | None = None,
    max_age: timedelta | None = None,
    cluster_timeout_s: float = CLUSTER_TIMEOUT_S,
    consumers: bool = True,
    prometheus: Settings | None = None,
    window: timedelta | None = None,
    warm_up: timedelta | None = None,
) -> StatusResult:
    """Every advice ConfigMap in ``namespace`` (default: $TFTA_POD_NAMESPACE, then the
    kubeconfig context's, then ``default``) or, with ``all_namespaces``, in the cluster; with
    ``consumers``, joined with the workloads and pods that read them, and with ``prometheus``,
    each consumer's production verdict over ``window`` (default 24 h) before and after, skipping
    ``warm_up`` (default 10 min) after each rollout. A
    person waits on it: an API server or a Prometheus that cannot be connected to is given up
    after seconds."""
    from advisor.cluster import RetryPolicy, connect
    from advisor.cluster.inventory import list_inventory
    from advisor.cluster.listing import READER_HINT, list_advice
    from advisor.cluster.plan_lists import list_jobs

    if all_namespaces and namespace:
        raise UsageError(Opt("namespace"), " and ", Opt("all_namespaces"), " exclude each other")
    check_cluster_timeout(cluster_timeout_s)
    if prometheus is not None and not consumers:
        # production is judged per consumer: without them there is nothing to judge
        raise UsageError(
            Opt("consumers=False"), " and ", Opt("prometheus_url"), " exclude each other"
        )
    if prometheus is not None:
        from advisor.pipeline.prometheus_settings import check_window

        check_window(window, warm_up)
    connection = connect(kubeconfig)
    where: str | None = None
    if not all_namespaces:
        where = namespace_to_list(namespace, kubeconfig)
    policy = RetryPolicy.interactive(cluster_timeout_s)
    objects = list_advice(connection, where, policy)
    inventory = list_inventory(connection, where, policy) if consumers else None
    reader = production_reader(prometheus, window, warm_up)
    rows = statuses(objects, max_age=max_age, inventory=inventory, production=reader)
    if reader is not None:
        reader.warn()
    if not consumers:
        return StatusResult(rows=rows)
    try:  # across namespaces: one list of every namespace's Jobs, which a ClusterRole allows
        planned = list_jobs(connection, where, PLANNED_SELECTOR, policy)
    except ForbiddenError as exc:
        # fleet mode is optional: a reader's Role without jobs still gets every advice
        log.debug("calibration Jobs not listed: %s", exc)
        if where is None:  # asked for the cluster, so say what is left out
            log.info(
                "calibration Jobs not shown: the ClusterRole does not allow list jobs (batch) in "
                "all namespaces (the ClusterRole of %s does)",
                READER_HINT,
            )
        return StatusResult(rows=rows)
    return StatusResult(
        rows=with_calibrations(rows, [planned_job(KubeJob.read(obj)) for obj in planned])
    )
