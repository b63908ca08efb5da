"""``tf-thread-advisor status``: every advice ConfigMap and the containers that read it, as a
table, JSON, YAML or CSV.

Read-only: it lists ConfigMaps by the advisor's labels, and the workloads and pods of the same
namespace to find their consumers (get/list on configmaps, list on deployments, statefulsets,
daemonsets and pods; see deploy/examples/advice-reader.yaml for the Role a person or a dashboard
uses).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import yaml

from advisor.cli._output import emit
from advisor.cli.publish_cmd import add_cluster_arguments
from advisor.errors import ProblemsFoundError
from advisor.objectives import OBJECTIVES

FORMATS = ("table", "json", "yaml", "csv")
#: table columns: header -> how to show a row's value
_COLUMNS: tuple[tuple[str, str], ...] = (
    ("NAMESPACE", "namespace"),
    ("NAME", "name"),
    ("POOL", "pool"),
    ("CPU", "cpu_model"),
    ("CPUS", "effective_cpus"),
    ("QUOTA", "quota_cpus"),
    ("INTRA", "intra_op_threads"),
    ("INTER", "inter_op_threads"),
    ("WITHIN NOISE", "range"),
    ("GAIN", "gain"),
    ("TRIALS", "trials"),
    ("BUDGET", "budget_s"),
    ("TF", "tf_version"),
    ("AGE", "age"),
    ("STALE", "stale"),
    ("CONSUMERS", "consumers"),
)
#: the consumers' table, below the advice's
_CONSUMER_COLUMNS = ("NAMESPACE", "ADVICE", "CONSUMER", "CONTAINER", "CPU LIMIT", "PROBLEMS")
CPU_MODEL_WIDTH = 28
#: consumers named in the one-line error of --fail-on-problems
NAMED_IN_ERROR = 3


def _duration(text: str) -> timedelta:
    from advisor.pipeline.status import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} {exc}") from None


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "status",
        help="list every advice ConfigMap: what it advises, what it was measured on, if stale",
        description="List the advice ConfigMaps (found by the advisor's labels) in a namespace "
        "or in all of them: the thread settings, the node pool and CPUs they were measured on, "
        "the range of settings within noise (where known), the gain over TF's default, trials, "
        "budget, TF version, age, and whether the advice is stale (the advisor or TensorFlow "
        "changed since, or it is older than --max-age). Then the containers of Deployments, "
        "StatefulSets, DaemonSets and bare Pods that read each advice, with their CPU limit and "
        "problems (cpu-limit-differs, no-cpu-limit, node-pool-differs, resize-restarts-nothing, "
        "pods-predate-advice, advice-missing); an advice nobody reads is unused. Needs get/list "
        "on configmaps and list on deployments, statefulsets, daemonsets and pods.",
    )
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--namespace",
        metavar="NS",
        help="namespace to list (default: $TFTA_POD_NAMESPACE, then the kubeconfig context's)",
    )
    scope.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="list every namespace (needs the ClusterRole of deploy/examples/advice-reader.yaml)",
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="table", help="output format (default: table)"
    )
    parser.add_argument(
        "--max-age",
        metavar="DURATION",
        type=_duration,
        default=None,
        help="call advice older than this stale, e.g. 30d, 12h, 1d12h (default: no age limit)",
    )
    consumers = parser.add_mutually_exclusive_group()
    consumers.add_argument(
        "--fail-on-problems",
        action="store_true",
        help="after the output, exit 16 if any consumer has a problem (for CI and alerting)",
    )
    consumers.add_argument(
        "--no-consumers",
        action="store_true",
        help="list the advice only, without their consumers (needs get/list on configmaps only)",
    )
    add_cluster_arguments(parser)
    parser.add_argument(
        "--cluster-timeout",
        metavar="S",
        type=float,
        default=60.0,
        help="bound on all API retries of the listing, seconds (default 60); an API server "
        "that cannot be connected to is given up after about 3 s",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from advisor.pipeline.status import cluster_status

    found = cluster_status(
        args.namespace,
        all_namespaces=args.all_namespaces,
        kubeconfig=args.kubeconfig,
        max_age=args.max_age,
        cluster_timeout_s=args.cluster_timeout,
        consumers=not args.no_consumers,
    )
    rows = [row.as_dict() for row in found]
    if args.format == "json":
        emit(json.dumps(rows, indent=2) + "\n")
    elif args.format == "yaml":
        emit(yaml.safe_dump(rows, sort_keys=False))
    elif args.format == "csv":
        emit(_csv(rows))
    else:
        emit(_table(rows))
    if args.fail_on_problems and any(row.problems for row in found):
        raise ProblemsFoundError(_problems_line(rows))
    return 0


def _consumer_rows(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(advice, consumer) for every consumer of every advice, in output order."""
    return [(row, consumer) for row in rows for consumer in row["consumers"] or []]


def _where(row: dict[str, Any], consumer: dict[str, Any]) -> str:
    """``ml/deployment/web (server)``: the container, as a person finds it with kubectl."""
    ref = f"{consumer['kind'].lower()}/{consumer['name']}"
    return f"{row['namespace']}/{ref} ({consumer['container']})"


def _problems_line(rows: list[dict[str, Any]]) -> str:
    """One line for --fail-on-problems: how many, and the first few consumers with theirs."""
    with_problems = [(r, c) for r, c in _consumer_rows(rows) if c["problems"]]
    total = sum(len(c["problems"]) for _, c in with_problems)
    named = [
        f"{_where(r, c)}: {', '.join(p['code'] for p in c['problems'])}"
        for r, c in with_problems[:NAMED_IN_ERROR]
    ]
    more = len(with_problems) - len(named)
    return (
        f"{total} problem(s) in {len(with_problems)} consumer(s): {'; '.join(named)}"
        + (f"; and {more} more consumer(s)" if more else "")
        + " (the output above says what each means)"
    )


def _cell(row: dict[str, Any], key: str) -> str:
    """A value as the table and the CSV show it."""
    if key == "pool":
        return ",".join(f"{k}={v}" for k, v in row["node_labels"].items()) or row["node"] or ""
    if key in _DERIVED_CELLS:
        return _DERIVED_CELLS[key](row)
    value = row[key]
    if value is None:
        return ""
    if key == "gain":
        return _gain(value, row)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _gain(ratio: float, row: dict[str, Any]) -> str:
    """The gain over TF's default in the objective's own terms (``p99 27% lower``, ``req/s 16%
    higher``): a bare ratio such as 1.36x reads as slower for a latency. Within the noise band
    it is no gain at all. The measure is the objective's own, as if its bound was met: the row
    does not say whether it was."""
    if row.get("gain_within_noise"):
        return "none (noise)"
    objective = OBJECTIVES.get(str(row.get("objective")))
    if ratio <= 0 or objective is None:
        return "-"
    measure = objective.measure()
    if measure.lower_is_better:
        change = 1 - 1 / ratio
        return f"{measure.short} {abs(change):.0%} {'lower' if change >= 0 else 'higher'}"
    return f"{measure.short} {abs(ratio - 1):.0%} {'higher' if ratio >= 1 else 'lower'}"


def _stale_cell(row: dict[str, Any]) -> str:
    if row["missing"]:
        return ""
    return "; ".join(row["stale_reasons"]) if row["stale"] else "no"


def _consumers_cell(row: dict[str, Any]) -> str:
    """``missing``, ``unused``, or how many read it and how many problems they have."""
    if row["missing"]:
        return "missing"
    consumers = row["consumers"]
    if consumers is None:
        return ""
    if not consumers:
        return "unused"
    problems = sum(len(c["problems"]) for c in consumers)
    if not problems:
        return str(len(consumers))
    return f"{len(consumers)} ({problems} problem{'s' if problems != 1 else ''})"


#: cells made from several of a row's values
_DERIVED_CELLS: dict[str, Callable[[dict[str, Any]], str]] = {
    "stale": _stale_cell,
    "consumers": _consumers_cell,
}


def _table(rows: list[dict[str, Any]]) -> str:
    """The advice, one line each; then their consumers, one line each; then every problem's
    sentence, since a code alone does not say which limit or node pool differs."""
    if not rows:
        return "no advice ConfigMaps found\n"
    lines = [[header for header, _ in _COLUMNS]]
    for row in rows:
        cells = [_cell(row, key) or "-" for _, key in _COLUMNS]
        model = cells[3]
        if len(model) > CPU_MODEL_WIDTH:
            cells[3] = model[: CPU_MODEL_WIDTH - 1] + "\u2026"
        lines.append(cells)
    text = _grid(lines)
    consumers = _consumer_rows(rows)
    if consumers:
        grid = [list(_CONSUMER_COLUMNS)]
        for row, consumer in consumers:
            limit = consumer["cpu_limit"]
            codes = ", ".join(p["code"] for p in consumer["problems"])
            grid.append(
                [
                    str(row["namespace"]),
                    row["name"],
                    f"{consumer['kind'].lower()}/{consumer['name']}",
                    consumer["container"],
                    "none" if limit is None else f"{limit:g}",
                    codes or "-",
                ]
            )
        text += "\n" + _grid(grid)
    sentences = [
        f"{_where(row, consumer)} reads {row['name']}: {problem['code']}: {problem['message']}\n"
        for row, consumer in consumers
        for problem in consumer["problems"]
    ]
    if sentences:
        text += "\n" + "".join(sentences)
    return text


def _grid(lines: list[list[str]]) -> str:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        + "\n"
        for line in lines
    )


def _csv(rows: list[dict[str, Any]]) -> str:
    """The table's columns and a few more, values unformatted; one line per consumer (an
    advice without any: one line with the consumer's columns empty), so a spreadsheet can
    filter on a problem."""
    keys = [key for _, key in _COLUMNS if key not in ("stale", "consumers")]
    keys += ["stale", "stale_reasons", "age_s", "node", "objective", "gain_within_noise"]
    keys += ["advisor_version", "created_at", "data_changed_at", "unused", "missing"]
    consumer_keys = ["consumer_kind", "consumer_name", "container", "cpu_limit", "problems"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(keys + consumer_keys)
    for row in rows:
        cells = []
        for key in keys:
            value = _cell(row, key) if key == "pool" else row[key]
            if isinstance(value, bool):
                cells.append("true" if value else "false")
            elif key == "stale_reasons":
                cells.append("; ".join(value))
            else:  # numbers as numbers (no "x", no rounding) for spreadsheets
                cells.append("" if value is None else str(value))
        for consumer in row["consumers"] or [None]:
            writer.writerow(cells + _consumer_cells(consumer))
    return out.getvalue()


def _consumer_cells(consumer: dict[str, Any] | None) -> list[str]:
    if consumer is None:
        return [""] * 5
    limit = consumer["cpu_limit"]
    problems = "; ".join(f"{p['code']}: {p['message']}" for p in consumer["problems"])
    return [
        consumer["kind"],
        consumer["name"],
        consumer["container"],
        "" if limit is None else str(limit),
        problems,
    ]
