"""``tf-thread-advisor status``: every advice ConfigMap, as a table, JSON, YAML or CSV.

Read-only: it lists ConfigMaps by the advisor's labels (get/list on configmaps; see
deploy/examples/advice-reader.yaml for the Role a person or a dashboard uses).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
from datetime import timedelta
from typing import Any

import yaml

from advisor.cli._output import emit
from advisor.cli.publish_cmd import add_cluster_arguments

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
)
CPU_MODEL_WIDTH = 28


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
        "changed since, or it is older than --max-age). Needs only get/list on configmaps.",
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
        help="list every namespace (needs a ClusterRole allowing get/list on configmaps)",
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
    add_cluster_arguments(parser)
    parser.add_argument(
        "--cluster-timeout",
        metavar="S",
        type=float,
        default=60.0,
        help="bound on all API retries of the listing, seconds (default 60)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from advisor.pipeline.status import cluster_status

    rows = [
        row.as_dict()
        for row in cluster_status(
            args.namespace,
            all_namespaces=args.all_namespaces,
            kubeconfig=args.kubeconfig,
            max_age=args.max_age,
            cluster_timeout_s=args.cluster_timeout,
        )
    ]
    if args.format == "json":
        emit(json.dumps(rows, indent=2) + "\n")
    elif args.format == "yaml":
        emit(yaml.safe_dump(rows, sort_keys=False))
    elif args.format == "csv":
        emit(_csv(rows))
    else:
        emit(_table(rows))
    return 0


def _cell(row: dict[str, Any], key: str) -> str:
    """A value as the table and the CSV show it."""
    if key == "pool":
        return ",".join(f"{k}={v}" for k, v in row["node_labels"].items()) or row["node"] or ""
    value = row[key]
    if key == "stale":
        return "; ".join(row["stale_reasons"]) if value else "no"
    if value is None:
        return ""
    if key == "gain" and row.get("gain_within_noise"):
        return f"{value:.2f}x (noise)"  # within the noise band: no measurable gain
    if isinstance(value, float):
        return f"{value:.2f}x" if key == "gain" else f"{value:g}"
    return str(value)


def _table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no advice ConfigMaps found\n"
    lines = [[header for header, _ in _COLUMNS]]
    for row in rows:
        cells = [_cell(row, key) or "-" for _, key in _COLUMNS]
        model = cells[3]
        if len(model) > CPU_MODEL_WIDTH:
            cells[3] = model[: CPU_MODEL_WIDTH - 1] + "\u2026"
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(_COLUMNS))]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        + "\n"
        for line in lines
    )


def _csv(rows: list[dict[str, Any]]) -> str:
    """The table's columns and a few more, values unformatted."""
    keys = [key for _, key in _COLUMNS if key != "stale"]
    keys += ["stale", "stale_reasons", "age_s", "node", "objective", "gain_within_noise"]
    keys += ["advisor_version", "created_at"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(keys)
    for row in rows:
        cells = []
        for key in keys:
            if key == "stale":
                cells.append("true" if row["stale"] else "false")
            elif key == "stale_reasons":
                cells.append("; ".join(row["stale_reasons"]))
            elif key == "pool":
                cells.append(_cell(row, key))
            else:  # numbers as numbers (no "x", no rounding) for spreadsheets
                cells.append("" if row[key] is None else str(row[key]))
        writer.writerow(cells)
    return out.getvalue()
