"""``plan`` for people and programs: a table with each decision's reason, JSON and YAML of the
same decisions (``{"decisions": [...]}``), and the Jobs as Kubernetes YAML."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml

from advisor.models import PlanResult

FORMATS = ("table", "json", "yaml")
_COLUMNS = ("WORKLOAD", "CONTAINER", "CONFIGMAP", "DECISION", "JOB")


def render_plan(result: PlanResult, fmt: str, *, namespace: str, applied: bool) -> str:
    """The decisions as ``fmt`` (one of FORMATS) shows them, ending in a newline."""
    data = result.model_dump(mode="json")
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    if fmt == "yaml":
        return yaml.safe_dump(data, sort_keys=False)
    return plan_table(result, namespace=namespace, applied=applied)


def plan_table(result: PlanResult, *, namespace: str, applied: bool) -> str:
    """One line per container, then each decision's reason (too long for a column)."""
    if not result.decisions:
        return (
            f"no opted-in workloads in namespace {namespace} (label a Deployment or StatefulSet "
            "tf-thread-advisor.io/calibrate=true)\n"
        )
    lines = [list(_COLUMNS)]
    for d in result.decisions:
        lines.append([d.workload, d.container or "-", d.configmap or "-", d.decision, d.job or "-"])
    widths = [max(len(line[i]) for line in lines) for i in range(len(_COLUMNS))]
    text = "".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() + "\n"
        for line in lines
    )
    text += "\n" + "".join(
        f"{d.workload}" + (f" ({d.container})" if d.container else "") + f": {d.reason}\n"
        for d in result.decisions
    )
    starts = sum(1 for d in result.decisions if d.decision == "calibrate")
    if not applied and starts:
        text += "\nnothing was created: run again with --apply to start the calibrations\n"
    return text


def jobs_yaml(jobs: Sequence[dict[str, Any]]) -> str:
    """The Jobs as a YAML stream (``kubectl apply -f -`` or ``create -f -`` reads it)."""
    return "".join("---\n" + yaml.safe_dump(job, sort_keys=False) for job in jobs)
