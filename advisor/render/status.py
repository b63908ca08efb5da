"""``status`` for people and programs: the advice table, its consumers and their problems; CSV
for spreadsheets; JSON and YAML of the same rows.

Rows are the plain dicts ``AdviceStatus.as_dict()`` gives (what JSON and YAML show), so this
stays a pure function of data the pipeline gathered.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

import yaml

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
#: consumers named in the one line of a failing status (``problems_line``)
NAMED_IN_ERROR = 3


def _consumer_rows(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(advice, consumer) for every consumer of every advice, in output order."""
    return [(row, consumer) for row in rows for consumer in row["consumers"] or []]


def _where(row: dict[str, Any], consumer: dict[str, Any]) -> str:
    """``ml/deployment/web (server)``: the container, as a person finds it with kubectl."""
    ref = f"{consumer['kind'].lower()}/{consumer['name']}"
    return f"{row['namespace']}/{ref} ({consumer['container']})"


def problems_line(rows: list[dict[str, Any]]) -> str:
    """One line for a failing ``status`` (``--fail-on-problems``): how many problems, and the
    first few consumers with theirs."""
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


def status_table(rows: list[dict[str, Any]]) -> str:
    """The advice, one line each; then their consumers, one line each; then every problem's
    sentence, since a code alone does not say which limit or node pool differs."""
    if not rows:
        return "no advice ConfigMaps found\n"
    # fleet mode's column only where plan has calibrated something: hand-written targets' tables
    # stay as they were
    planned = any(row.get("calibration_job") for row in rows)
    lines = [[header for header, _ in _COLUMNS] + (["CALIBRATION"] if planned else [])]
    for row in rows:
        cells = [_cell(row, key) or "-" for _, key in _COLUMNS]
        model = cells[3]
        if len(model) > CPU_MODEL_WIDTH:
            cells[3] = model[: CPU_MODEL_WIDTH - 1] + "\u2026"
        if planned:
            cells.append(_calibration_cell(row))
        lines.append(cells)
    text = _grid(lines)
    consumers = _consumer_rows(rows)
    if consumers:
        grid = [list(_CONSUMER_COLUMNS)]
        for row, consumer in consumers:
            codes = ", ".join(p["code"] for p in consumer["problems"])
            grid.append(
                [
                    str(row["namespace"]),
                    row["name"],
                    f"{consumer['kind'].lower()}/{consumer['name']}",
                    consumer["container"],
                    _cpu_cell(row, consumer),
                    codes or "-",
                ]
            )
        text += "\n" + _grid(grid)
    sentences = [
        f"{_where(row, consumer)} reads {row['name']}: {problem['code']}: {problem['message']}\n"
        for row, consumer in consumers
        for problem in consumer["problems"]
    ]
    failed = [
        f"{row['namespace']}/{row['name']}: calibration Job {row['calibration_job']} failed: "
        f"{row['calibration_reason'] or 'no reason given'}\n"
        for row in rows
        if row.get("calibration_state") == "failed"
    ]
    if sentences or failed:
        text += "\n" + "".join(sentences + failed)
    return text


def _calibration_cell(row: dict[str, Any]) -> str:
    """``tfta-web-server-0a1b2c3d4e (running)``: the newest Job plan created for it."""
    job = row.get("calibration_job")
    return f"{job} ({row['calibration_state']})" if job else "-"


def _cpu_cell(row: dict[str, Any], consumer: dict[str, Any]) -> str:
    """The consumer's CPU limit; for an advice measured for a CPU request (a container without
    a limit), its request too, since that is what the advice is compared with."""
    limit = consumer["cpu_limit"]
    text = "none" if limit is None else f"{limit:g}"
    if _measured_for_request(row):
        request = consumer["cpu_request"]
        text += f" (req {'none' if request is None else f'{request:g}'})"
    return text


def _measured_for_request(row: dict[str, Any]) -> bool:
    target = row.get("target")
    return isinstance(target, dict) and target.get("cpu_from") == "request"


def _grid(lines: list[list[str]]) -> str:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        + "\n"
        for line in lines
    )


def status_csv(rows: list[dict[str, Any]]) -> str:
    """The table's columns and a few more, values unformatted; one line per consumer (an
    advice without any: one line with the consumer's columns empty), so a spreadsheet can
    filter on a problem."""
    keys = [key for _, key in _COLUMNS if key not in ("stale", "consumers")]
    keys += ["stale", "stale_reasons", "age_s", "node", "objective", "gain_within_noise"]
    keys += ["advisor_version", "created_at", "data_changed_at", "unused", "missing"]
    keys += ["calibration_job", "calibration_state", "calibration_reason"]
    consumer_keys = ["consumer_kind", "consumer_name", "container", "cpu_limit", "cpu_request"]
    consumer_keys += ["problems"]
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
        return [""] * 6
    limit, request = consumer["cpu_limit"], consumer["cpu_request"]
    problems = "; ".join(f"{p['code']}: {p['message']}" for p in consumer["problems"])
    return [
        consumer["kind"],
        consumer["name"],
        consumer["container"],
        "" if limit is None else str(limit),
        "" if request is None else str(request),
        problems,
    ]


def render_status(rows: list[dict[str, Any]], fmt: str) -> str:
    """The rows as ``fmt`` (one of FORMATS) shows them, ending in a newline."""
    if fmt == "json":
        return json.dumps(rows, indent=2) + "\n"
    if fmt == "yaml":
        return yaml.safe_dump(rows, sort_keys=False)
    if fmt == "csv":
        return status_csv(rows)
    return status_table(rows)
