"""``plan`` for people and programs: a table with each decision's reason (plain, Markdown, HTML),
one record per decision (CSV), the decisions' data (JSON and YAML: ``{"decisions": [...]}``), and
the Jobs as Kubernetes YAML. The reasons are worded in ``advisor.render.plan_reasons``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import yaml

from advisor.models import PlanResult
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

# re-exported for pipeline/production.py, which imports it from here (until it imports it from
# plan_reasons)
from advisor.render.plan_reasons import plan_reason_text

__all__ = ["PlanView", "jobs_yaml", "plan_reason_text", "revert_limit_text"]

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


def jobs_yaml(jobs: Sequence[dict[str, Any]]) -> str:
    """The Jobs as a YAML stream (``kubectl apply -f -`` or ``create -f -`` reads it)."""
    return "".join("---\n" + yaml.safe_dump(job, sort_keys=False) for job in jobs)
