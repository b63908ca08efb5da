"""What a person reads: the text table, and the report file with an intra x inter heatmap.

The report is one self-contained file (no scripts, no fonts, no external links) so it can be
copied out of a pod with ``kubectl cp`` and opened anywhere: HTML with an inline SVG heatmap and
the full trial table, or the SVG alone when the file name ends in ``.svg``. Hand-written SVG keeps
the advisor's dependencies to what it needs to run.

Cells show the value the objective ranks by (p99 for latency, requests/s otherwise) from each
setting's latest round, coloured from worst (red) to best (green). The chosen cell is outlined
and starred; failed settings are grey with their status; settings never measured are blank.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from advisor.calibrate.objective import ConfigStats, aggregate, lower_is_better, rank
from advisor.errors import OutputError
from advisor.models import CalibrationResult, TrialResult

# --------------------------------------------------------------------------------------------------
# Per-setting rows (shared by the text table and the report)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One setting as a reader sees it: its latest numbers and what became of it."""

    intra_op_threads: int | None
    inter_op_threads: int | None
    stats: ConfigStats | None
    nr_throttled: int | None
    verdict: str

    @property
    def label(self) -> str:
        if self.intra_op_threads is None and self.inter_op_threads is None:
            return "TF default"
        return f"{self.intra_op_threads}/{self.inter_op_threads}"


def _key(trial: TrialResult) -> tuple[int | None, int | None]:
    return (trial.intra_op_threads, trial.inter_op_threads)


def rows(result: CalibrationResult) -> list[Row]:
    """Chosen first, then the baseline, the rest best first, failures and skips last."""
    stats = aggregate(result.trials, result.objective)
    ordered = rank(stats, result.objective, result.p99_slo_ms)
    last_round = max((t.round for t in result.trials), default=0)
    chosen_key = (result.intra_op_threads, result.inter_op_threads)
    by_key: dict[tuple[int | None, int | None], list[TrialResult]] = {}
    for trial in result.trials:
        by_key.setdefault(_key(trial), []).append(trial)

    def throttled(key: tuple[int | None, int | None], at_round: int) -> int | None:
        runs = [t for t in by_key.get(key, []) if t.round == at_round and t.status == "ok"]
        values = [t.nr_throttled for t in runs if t.nr_throttled is not None]
        return max(values) if values else None

    out: list[Row] = []
    for s in ordered:
        key = (s.intra_op_threads, s.inter_op_threads)
        if key == chosen_key:
            verdict = "chosen"
        elif s.is_baseline:
            verdict = "baseline (TF default)"
        elif s.round == last_round:
            verdict = "finalist"
        else:
            verdict = f"dropped after round {s.round}"
        out.append(Row(key[0], key[1], s, throttled(key, s.round), verdict))
    measured = {(s.intra_op_threads, s.inter_op_threads) for s in stats}
    for key, runs in by_key.items():
        if key in measured:
            continue
        last = runs[-1]
        why = f"{last.status}: {last.reason}" if last.reason else last.status
        out.append(Row(key[0], key[1], None, None, why))
    priority = {"chosen": 0, "baseline (TF default)": 1}
    return sorted(out, key=lambda r: priority.get(r.verdict, 2))


# --------------------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------------------


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def advice_line(result: CalibrationResult) -> str:
    """The one line a person acts on: the env values and what they buy."""
    chosen, base = result.chosen, result.baseline
    if result.objective == "latency" or (result.objective == "slo" and result.slo_met is False):
        compare = f"p99 {_num(chosen.p99_ms)} ms vs {_num(base.p99_ms)} ms with TF defaults"
    else:
        compare = (
            f"{_num(chosen.throughput_rps)} req/s vs {_num(base.throughput_rps)} req/s "
            "with TF defaults"
        )
    gain = "" if result.gain is None else f", {result.gain:.2f}x"
    spread = "" if result.spread is None else f", spread {result.spread:.0%}"
    return (
        f"advice: TF_NUM_INTRAOP_THREADS={result.intra_op_threads} "
        f"TF_NUM_INTEROP_THREADS={result.inter_op_threads} "
        f"OMP_NUM_THREADS={result.intra_op_threads} ({result.objective}: {compare}{gain}{spread})"
    )


def text_summary(result: CalibrationResult) -> str:
    """A table read at a glance, then the advice and anything worth knowing about it."""
    header = ("intra/inter", "p50 ms", "p99 ms", "req/s", "throttled", "verdict")
    table: list[tuple[str, ...]] = [header]
    for row in rows(result):
        s = row.stats
        table.append(
            (
                row.label,
                _num(s.p50_ms if s else None, 2),
                _num(s.p99_ms if s else None, 2),
                _num(s.throughput_rps if s else None),
                "-" if row.nr_throttled is None else str(row.nr_throttled),
                row.verdict,
            )
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(header) - 1)]
    lines = []
    for line in table:
        cells = [
            line[0].ljust(widths[0]),
            *(cell.rjust(w) for cell, w in zip(line[1:-1], widths[1:], strict=True)),
            line[-1],
        ]
        lines.append("  ".join(cells))
    lines.append("")
    lines.append(advice_line(result))
    node = result.node
    lines.append(
        f"measured: {len(result.trials)} trials in {result.rounds} rounds, "
        f"{result.elapsed_s:.1f} of {result.budget_s:g} s; node: {node.effective_cpus:g} usable "
        f"CPUs of {len(node.affinity_cpus)} in the affinity mask"
    )
    lines.extend(f"note: {note}" for note in result.notes)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Heatmap (SVG) and report (HTML)
# --------------------------------------------------------------------------------------------------

CELL_W = 92
CELL_H = 44
LEFT = 96
TOP = 86
LEGEND_H = 64


def _colour(fraction: float) -> str:
    """0 = worst (red) .. 1 = best (green), through yellow; readable with black text."""
    fraction = min(1.0, max(0.0, fraction))
    if fraction < 0.5:
        red, green = 230, int(90 + (210 - 90) * fraction * 2)
    else:
        red, green = int(230 - (230 - 70) * (fraction - 0.5) * 2), 200 + int(10 * fraction)
    return f"#{red:02x}{green:02x}{90:02x}"


def _metric(result: CalibrationResult) -> tuple[str, str, bool]:
    """(what the cells show, unit, lower is better)."""
    lower = lower_is_better(result.objective, result.slo_met is not False)
    if lower:
        return ("p99 latency", "ms", True)
    return ("throughput", "req/s", False)


def heatmap_svg(result: CalibrationResult) -> str:
    stats = [s for s in aggregate(result.trials, result.objective) if not s.is_baseline]
    by_cell = {(s.intra_op_threads, s.inter_op_threads): s for s in stats}
    failed = {
        _key(t): t.status
        for t in result.trials
        if not t.is_baseline and _key(t) not in by_cell and t.status != "ok"
    }
    intras = sorted({k[0] for k in [*by_cell, *failed] if k[0] is not None})
    inters = sorted({k[1] for k in [*by_cell, *failed] if k[1] is not None})
    title, unit, lower = _metric(result)

    def cell_value(s: ConfigStats) -> float:
        return s.p99_ms if lower else s.throughput_rps

    values = [cell_value(s) for s in stats] or [0.0]
    worst = max(values) if lower else min(values)
    best = min(values) if lower else max(values)
    span = (worst - best) if worst != best else 1.0

    width = LEFT + CELL_W * max(1, len(inters)) + 24
    height = TOP + CELL_H * max(1, len(intras)) + LEGEND_H + 40
    e = html.escape
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="13">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="15" font-weight="bold">'
        f"{e(title)} ({unit}, {'lower' if lower else 'higher'} is better) by thread setting</text>",
    ]
    base = result.baseline
    base_value = base.p99_ms if lower else base.throughput_rps
    parts.append(
        f'<text x="{LEFT}" y="42">TF default (baseline, {len(result.node.affinity_cpus)} CPUs in '
        f"affinity): {_num(base_value)} {unit}; objective {e(result.objective)}"
        + (f", p99 &lt;= {result.p99_slo_ms:g} ms" if result.p99_slo_ms else "")
        + "</text>"
    )
    parts.append(
        f'<text x="{LEFT + CELL_W * len(inters) / 2}" y="{TOP - 12}" text-anchor="middle">'
        "inter-op threads</text>"
    )
    parts.append(
        f'<text x="20" y="{TOP + CELL_H * len(intras) / 2}" text-anchor="middle" '
        f'transform="rotate(-90 20 {TOP + CELL_H * len(intras) / 2})">intra-op threads</text>'
    )
    for col, inter in enumerate(inters):
        x = LEFT + col * CELL_W + CELL_W / 2
        parts.append(f'<text x="{x}" y="{TOP - 30}" text-anchor="middle">{inter}</text>')
    for row_index, intra in enumerate(intras):
        y = TOP + row_index * CELL_H
        parts.append(
            f'<text x="{LEFT - 10}" y="{y + CELL_H / 2 + 5}" text-anchor="end">{intra}</text>'
        )
        for col, inter in enumerate(inters):
            x = LEFT + col * CELL_W
            s = by_cell.get((intra, inter))
            if s is not None:
                value = cell_value(s)
                fill = _colour((worst - value) / span if lower else (value - worst) / span)
                label = _num(value)
                if result.objective == "slo" and result.p99_slo_ms and s.p99_ms > result.p99_slo_ms:
                    label += " !"
            elif (intra, inter) in failed:
                fill, label = "#bbbbbb", failed[(intra, inter)]
            else:
                fill, label = "#f4f4f4", ""
            parts.append(
                f'<rect x="{x}" y="{y}" width="{CELL_W}" height="{CELL_H}" fill="{fill}" '
                'stroke="white" stroke-width="2"/>'
            )
            if (intra, inter) == (result.intra_op_threads, result.inter_op_threads):
                parts.append(
                    f'<rect x="{x + 2}" y="{y + 2}" width="{CELL_W - 4}" height="{CELL_H - 4}" '
                    'fill="none" stroke="black" stroke-width="4"><title>chosen</title></rect>'
                )
                label = f"\u2605 {label}"
            parts.append(
                f'<text x="{x + CELL_W / 2}" y="{y + CELL_H / 2 + 5}" text-anchor="middle">'
                f"{e(label)}</text>"
            )
    # colour legend
    legend_y = TOP + CELL_H * len(intras) + 24
    steps = 10
    legend_w = min(260, CELL_W * max(2, len(inters)))
    for i in range(steps):
        x = LEFT + i * legend_w / steps
        parts.append(
            f'<rect x="{x}" y="{legend_y}" width="{legend_w / steps + 0.5}" height="14" '
            f'fill="{_colour(i / (steps - 1))}"/>'
        )
    parts.append(
        f'<text x="{LEFT}" y="{legend_y + 30}">{_num(worst)} {unit} (worst)</text>'
        f'<text x="{LEFT + legend_w}" y="{legend_y + 30}" text-anchor="end">'
        f"{_num(best)} {unit} (best)</text>"
    )
    chosen_note = (
        f"\u2605 chosen: intra {result.intra_op_threads}, inter {result.inter_op_threads}"
        + ("" if result.gain is None else f" ({result.gain:.2f}x the TF default)")
    )
    parts.append(f'<text x="{LEFT}" y="{legend_y + 52}">{e(chosen_note)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


_TRIAL_COLUMNS = (
    ("round", "round"),
    ("intra", "intra_op_threads"),
    ("inter", "inter_op_threads"),
    ("status", "status"),
    ("window s", "measure_s"),
    ("requests", "requests"),
    ("p50 ms", "p50_ms"),
    ("p90 ms", "p90_ms"),
    ("p99 ms", "p99_ms"),
    ("max ms", "max_ms"),
    ("req/s", "throughput_rps"),
    ("CPU s", "cpu_time_s"),
    ("threads", "threads"),
    ("throttled", "nr_throttled"),
    ("throttled ms", "throttled_time_ms"),
    ("reason", "reason"),
)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    return html.escape(str(value))


def report_html(result: CalibrationResult) -> str:
    e = html.escape
    trial_rows = []
    for trial in result.trials:
        data = trial.model_dump()
        cells = "".join(f"<td>{_cell(data[field])}</td>" for _, field in _TRIAL_COLUMNS)
        if trial.is_baseline:
            cells = cells.replace("<td></td>", "<td>default</td>", 2)
        trial_rows.append(f"<tr class='{e(trial.status)}'>{cells}</tr>")
    head = "".join(f"<th>{e(name)}</th>" for name, _ in _TRIAL_COLUMNS)
    summary = e(text_summary(result))
    workload = result.workload
    what = workload.path or "built-in workload"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>tf-thread-advisor calibration: intra {result.intra_op_threads} inter {
        result.inter_op_threads
    }</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; }}
table {{ border-collapse: collapse; font-size: 13px; }}
th, td {{ border: 1px solid #ccc; padding: 3px 7px; text-align: right; }}
th {{ background: #eee; }}
tr.failed, tr.crashed, tr.oom, tr.timeout, tr.skipped {{ color: #a33; }}
pre {{ background: #f7f7f7; padding: 10px; }}
</style></head><body>
<h1>Calibration: TF_NUM_INTRAOP_THREADS={result.intra_op_threads},
TF_NUM_INTEROP_THREADS={result.inter_op_threads}</h1>
<p>Workload: {e(what)} ({e(workload.kind)}, batch {workload.batch_size},
concurrency {workload.concurrency}). Objective: {e(result.objective)}.
Node: {result.node.effective_cpus:g} usable CPUs, {len(result.node.affinity_cpus)} in the
affinity mask, quota {e(str(result.node.quota_cpus or "none"))}.</p>
{heatmap_svg(result)}
<h2>Summary</h2>
<pre>{summary}</pre>
<h2>Every trial</h2>
<table><tr>{head}</tr>
{chr(10).join(trial_rows)}
</table>
</body></html>
"""


def write_report(result: CalibrationResult, path: Path) -> None:
    """HTML report, or the SVG heatmap alone for a ``.svg`` path; OutputError if unwritable."""
    content = heatmap_svg(result) if path.suffix.lower() == ".svg" else report_html(result)
    try:
        path.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise OutputError(f"--report {path}: cannot write: {exc.strerror or exc}") from None
