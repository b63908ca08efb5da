"""Which namespaces one planner plans with ``--all-namespaces``, and what a namespace must hold
for its Jobs to run.

A Namespace opts in with the label ``tf-thread-advisor.io/calibrate: "true"`` (as Goldilocks'
``goldilocks.fairwinds.com/enabled=true``); its workloads still opt in one by one with their own
label, so labelling a namespace calibrates nothing by itself. Each calibration Job runs in its
workload's namespace as the calibration ServiceAccount there: where that account does not exist,
a Job would be created and its pod never (the Job controller's pod creation is refused), so the
workloads that would be calibrated are ``skipped``, saying what to install.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import replace

from advisor.fleet.decide import Planned, with_cause
from advisor.fleet.optin import OptInError, opted_in
from advisor.models.kube import KubeWorkload, ObjectMeta
from advisor.models.plan import NoServiceAccount


def opted_in_namespaces(namespaces: Iterable[ObjectMeta]) -> tuple[list[str], list[str]]:
    """(the names of the Namespaces (their metadata) whose label says "true", sorted; a
    sentence for each whose label says neither "true" nor "false", which is not planned)."""
    names: list[str] = []
    problems: list[str] = []
    for meta in namespaces:
        name = meta.name
        if not name:
            continue
        try:
            if opted_in(meta.labels):
                names.append(name)
        except OptInError as exc:
            problems.append(f"namespace {name} is not planned: {exc}")
    return sorted(names), sorted(problems)


def by_namespace(
    workloads: Iterable[KubeWorkload], namespaces: Collection[str]
) -> dict[str, list[KubeWorkload]]:
    """``workloads`` grouped by their namespace, keeping only those in ``namespaces`` (the ones
    that opted in); every namespace of ``namespaces`` is a key, with no workloads or some."""
    grouped: dict[str, list[KubeWorkload]] = {name: [] for name in sorted(namespaces)}
    for workload in workloads:
        if workload.metadata.namespace in grouped:
            grouped[workload.metadata.namespace].append(workload)
    return grouped


def without_service_account(planned: Planned, namespace: str, service_account: str) -> Planned:
    """``planned`` in a namespace without the calibration ServiceAccount: a calibration becomes
    ``skipped`` with what to install; every other decision stands (an advice that fits still
    fits, a Job that is running or failed is still there)."""
    if planned.decision != "calibrate":
        return planned
    cause = NoServiceAccount(namespace, service_account, planned.reason)
    skipped = with_cause(planned, cause)
    return replace(skipped, job_name=None, job=None)
