"""``status`` for people and programs: the advice table, its consumers and their problems (plain,
Markdown, HTML); one record per consumer for spreadsheets (CSV); the rows' data (JSON, YAML).

``StatusView`` is the typed ``StatusResult`` as every format in ``advisor.render.formats`` sees
it; this stays a pure function of what the pipeline gathered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from advisor.models import AdviceStatus, Consumer, Production, StatusResult
from advisor.objectives import OBJECTIVES
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
from advisor.render.formats import plain
from advisor.render.production_text import changes, evidence

#: table columns: header -> which value of a row (or a cell made of several)
_COLUMNS: tuple[tuple[str, str], ...] = (
    ("NAMESPACE", "namespace"),
    ("NAME", "name"),
    ("POOL", "pool"),
    ("CPU", "cpu_model"),
    ("CPUS", "effective_cpus"),
    ("QUOTA", "quota"),
    ("INTRA", "intra_op_threads"),
    ("INTER", "inter_op_threads"),
    ("WITHIN NOISE", "range"),
    ("GAIN", "gain"),
    ("TRIALS", "trials"),
    ("BUDGET", "budget_s"),
    ("TOOK", "took"),
    ("TF", "tf_version"),
    ("AGE", "age"),
    ("STALE", "stale"),
    ("CONSUMERS", "consumers"),
)
#: the consumers' table, below the advice's
_CONSUMER_COLUMNS = ("NAMESPACE", "ADVICE", "CONSUMER", "CONTAINER", "CPU LIMIT", "PROBLEMS")
#: CSV: the table's columns and a few more, then the consumer's
_CSV_KEYS = (
    *(key for _, key in _COLUMNS if key not in ("quota", "stale", "consumers")),
    "quota_cpus",
    "cpus_exclusive",
    "stale",
    "stale_reasons",
    "age_s",
    "node",
    "objective",
    "gain_within_noise",
    "advisor_version",
    "created_at",
    "data_changed_at",
    "unused",
    "missing",
    "calibration_job",
    "calibration_state",
    "calibration_reason",
)
_CSV_CONSUMER_KEYS = (
    "consumer_kind",
    "consumer_name",
    "container",
    "cpu_limit",
    "cpu_request",
    "problems",
)
#: with Prometheus: each consumer's production figures (``production_verdict``: its verdict)
_CSV_PRODUCTION_KEYS = (
    "production_verdict",
    "throttled_before",
    "throttled_after",
    "cpu_before",
    "cpu_after",
    "p99_before_ms",
    "p99_after_ms",
    "production_reason",
    "load_before",
    "load_after",
    "production_provisional",
    "production_cause",
    "production_p_value",
    "production_test",
    "production_alpha",
    "production_days",
    "production_window",
    "production_regressed_windows",
)
CPU_MODEL_WIDTH = 28
#: consumers named in the one line of a failing status (``problems_line``)
NAMED_IN_ERROR = 3
EMPTY = "no advice ConfigMaps found"


class StatusView(View):
    """Every advice and its consumers, as the formats show them."""

    provides: ClassVar[frozenset[Capability]] = frozenset({TABLES, RECORDS})

    def __init__(self, result: StatusResult) -> None:
        self.result = result

    def data(self) -> Any:
        """The rows, a JSON array (what ``status --format json`` has always printed)."""
        return [row.model_dump(mode="json") for row in self.result.rows]

    def document(self) -> Document:
        """The advice, one line each; then their consumers, one line each; then every problem's
        sentence, since a code alone does not say which limit or node pool differs."""
        rows = self.result.rows
        namespaces = sorted({row.namespace for row in rows if row.namespace})
        title = "tf-thread-advisor status" + (f": {', '.join(namespaces)}" if namespaces else "")
        if not rows:
            return Document(title, (Lines((EMPTY,)),))
        blocks: list[Block] = [_advice_grid(rows)]
        consumers = _consumer_rows(rows)
        judged = _judged(rows)
        if consumers:
            blocks.append(
                grid(
                    (*_CONSUMER_COLUMNS, *(("PRODUCTION",) if judged else ())),
                    [
                        [
                            str(row.namespace),
                            row.name,
                            str(consumer.ref),
                            consumer.container,
                            _cpu_cell(row, consumer),
                            ", ".join(p.code for p in consumer.problems) or "-",
                            *((production_cell(consumer.production),) if judged else ()),
                        ]
                        for row, consumer in consumers
                    ],
                    "consumers",
                )
            )
        sentences = [
            f"{_where(row, consumer)} reads {row.name}: {problem.code}: {problem.message}"
            for row, consumer in consumers
            for problem in consumer.problems
        ]
        failed = [
            f"{row.namespace}/{row.name}: calibration Job {row.calibration_job} failed: "
            f"{row.calibration_reason or 'no reason given'}"
            for row in rows
            if row.calibration_state == "failed"
        ]
        if sentences or failed:
            blocks.append(Lines(tuple(sentences + failed), "problems"))
        return Document(title, tuple(blocks))

    def records(self) -> Grid:
        """The table's columns and a few more, values unformatted; one line per consumer (an
        advice without any: one line with the consumer's columns empty), so a spreadsheet can
        filter on a problem."""
        judged = _judged(self.result.rows)
        production = _CSV_PRODUCTION_KEYS if judged else ()
        lines: list[list[str]] = []
        for row in self.result.rows:
            cells = [_raw(row, key) for key in _CSV_KEYS]
            readers: list[Consumer | None] = [*row.consumers] if row.consumers else [None]
            lines.extend(
                cells + _consumer_cells(consumer) + _production_cells(consumer, production)
                for consumer in readers
            )
        return grid((*_CSV_KEYS, *_CSV_CONSUMER_KEYS, *production), lines)


def status_table(rows: Sequence[AdviceStatus]) -> str:
    """The rows as the ``table`` format shows them."""
    return plain(StatusView(StatusResult(rows=list(rows))))


def _advice_grid(rows: list[AdviceStatus]) -> Grid:
    # fleet mode's column only where plan has calibrated something: hand-written targets' tables
    # stay as they were
    planned = any(row.calibration_job for row in rows)
    lines = []
    for row in rows:
        cells = [_cell(row, key) or "-" for _, key in _COLUMNS]
        model = cells[3]
        if len(model) > CPU_MODEL_WIDTH:
            cells[3] = model[: CPU_MODEL_WIDTH - 1] + "\u2026"
        if planned:
            cells.append(_calibration_cell(row))
        lines.append(cells)
    header = [header for header, _ in _COLUMNS] + (["CALIBRATION"] if planned else [])
    return grid(header, lines, "advice")


def _judged(rows: Sequence[AdviceStatus]) -> bool:
    """Whether Prometheus was read: then every consumer has a production verdict."""
    return any(c.production is not None for _, c in _consumer_rows(rows))


def production_cell(production: Production | None) -> str:
    """``throttled 41% -> 3%, p99 122 -> 58 ms: improved``; what was known, then the verdict
    (an unknown or provisional one with its reason)."""
    if production is None:
        return "-"
    p = production
    parts = changes(p, "load")
    if p.provisional:  # its reason starts "provisional (how short the after-window is): "
        verdict = f"{p.verdict}, {p.reason}"
    elif p.verdict == "unknown":
        verdict = f"unknown ({p.reason})"
    else:
        verdict = p.verdict
    said = evidence(p)
    return ", ".join(parts) + (": " if parts else "") + verdict + (f" ({said})" if said else "")


def _consumer_rows(rows: Sequence[AdviceStatus]) -> list[tuple[AdviceStatus, Consumer]]:
    """(advice, consumer) for every consumer of every advice, in output order."""
    return [(row, consumer) for row in rows for consumer in row.consumers or []]


def _where(row: AdviceStatus, consumer: Consumer) -> str:
    """``ml/deployment/web (server)``: the container, as a person finds it with kubectl."""
    return f"{row.namespace}/{consumer.ref} ({consumer.container})"


def problems_line(rows: Sequence[AdviceStatus]) -> str:
    """One line for a failing ``status`` (``--fail-on-problems``): how many problems, and the
    first few consumers with theirs."""
    with_problems = [(r, c) for r, c in _consumer_rows(rows) if c.problems]
    total = sum(len(c.problems) for _, c in with_problems)
    named = [
        f"{_where(r, c)}: {', '.join(p.code for p in c.problems)}"
        for r, c in with_problems[:NAMED_IN_ERROR]
    ]
    more = len(with_problems) - len(named)
    return (
        f"{total} problem(s) in {len(with_problems)} consumer(s): {'; '.join(named)}"
        + (f"; and {more} more consumer(s)" if more else "")
        + " (the output above says what each means)"
    )


def _quota_cell(row: AdviceStatus) -> str:
    """The quota, and ``excl`` where the CPUs were the run's own (the static CPU manager)."""
    if row.quota_cpus is None:
        return ""
    return f"{row.quota_cpus:g}" + (" excl" if row.cpus_exclusive else "")


def _pool(row: AdviceStatus) -> str:
    return ",".join(f"{k}={v}" for k, v in row.node_labels.items()) or row.node or ""


def _cell(row: AdviceStatus, key: str) -> str:
    """A value as the table shows it."""
    if key in _DERIVED_CELLS:
        return _DERIVED_CELLS[key](row)
    value = getattr(row, key)
    if value is None:
        return ""
    if key == "gain":
        return _gain(value, row)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _raw(row: AdviceStatus, key: str) -> str:
    """A value as the CSV holds it: numbers as numbers (no "x", no rounding) for spreadsheets."""
    if key == "pool":
        return _pool(row)
    value = getattr(row, key)
    if isinstance(value, bool):
        return "true" if value else "false"
    if key == "stale_reasons":
        return "; ".join(value)
    return "" if value is None else str(value)


def _gain(ratio: float, row: AdviceStatus) -> str:
    """The gain over TF's default in the objective's own terms (``p99 27% lower``, ``req/s 16%
    higher``): a bare ratio such as 1.36x reads as slower for a latency. Within the noise band
    it is no gain at all. The measure is the objective's own, as if its bound was met: the row
    does not say whether it was."""
    if row.gain_within_noise:
        return "none (noise)"
    objective = OBJECTIVES.get(str(row.objective))
    if ratio <= 0 or objective is None:
        return "-"
    measure = objective.measure()
    if measure.lower_is_better:
        change = 1 - 1 / ratio
        return f"{measure.short} {abs(change):.0%} {'lower' if change >= 0 else 'higher'}"
    return f"{measure.short} {abs(ratio - 1):.0%} {'higher' if ratio >= 1 else 'lower'}"


def _stale_cell(row: AdviceStatus) -> str:
    if row.missing:
        return ""
    return "; ".join(row.stale_reasons) if row.stale else "no"


def _consumers_cell(row: AdviceStatus) -> str:
    """``missing``, ``unused``, or how many read it and how many problems they have."""
    if row.missing:
        return "missing"
    consumers = row.consumers
    if consumers is None:
        return ""
    if not consumers:
        return "unused"
    problems = row.problems
    if not problems:
        return str(len(consumers))
    return f"{len(consumers)} ({problems} problem{'s' if problems != 1 else ''})"


#: cells made from several of a row's values
_DERIVED_CELLS: dict[str, Callable[[AdviceStatus], str]] = {
    "pool": _pool,
    "quota": _quota_cell,
    "stale": _stale_cell,
    "consumers": _consumers_cell,
}


def _calibration_cell(row: AdviceStatus) -> str:
    """``tfta-web-server-0a1b2c3d4e (running)``: the newest Job plan created for it."""
    job = row.calibration_job
    return f"{job} ({row.calibration_state})" if job else "-"


def _cpu_cell(row: AdviceStatus, consumer: Consumer) -> str:
    """The consumer's CPU limit; for an advice measured for a CPU request (a container without
    a limit), its request too, since that is what the advice is compared with."""
    limit = consumer.cpu_limit
    text = "none" if limit is None else f"{limit:g}"
    if row.target is not None and row.target.cpu_from == "request":
        request = consumer.cpu_request
        text += f" (req {'none' if request is None else f'{request:g}'})"
    return text


def _consumer_cells(consumer: Consumer | None) -> list[str]:
    if consumer is None:
        return [""] * len(_CSV_CONSUMER_KEYS)
    limit, request = consumer.cpu_limit, consumer.cpu_request
    return [
        consumer.kind,
        consumer.name,
        consumer.container,
        "" if limit is None else str(limit),
        "" if request is None else str(request),
        "; ".join(f"{p.code}: {p.message}" for p in consumer.problems),
    ]


def _production_cells(consumer: Consumer | None, keys: tuple[str, ...]) -> list[str]:
    """The production figures as the CSV holds them, unformatted ("" where not known)."""
    production = consumer.production if consumer is not None else None
    if production is None:
        return [""] * len(keys)
    values = production.model_dump()
    names = {key: key.removeprefix("production_") for key in keys}
    return ["" if (v := values[names.get(key, key)]) is None else str(v) for key in keys]
