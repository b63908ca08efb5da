"""What a person reads: the text table, and the report file with an intra x inter heatmap.

The report is one self-contained file (no scripts, no fonts, no external links) so it can be
copied out of a pod with ``kubectl cp`` and opened anywhere: HTML with an inline SVG heatmap and
the full trial table, or the SVG alone when the file name ends in ``.svg``. Hand-written SVG keeps
the advisor's dependencies to what it needs to run.

Cells show the value the objective ranks by (p99 for latency, requests/s otherwise): the median
over each setting's trusted windows (the race's, if it was raced), coloured from worst (red) to
best (green). Every setting within noise of the best gets the best's colour: the measurement cannot
tell them apart, so a gradient among them would show a ranking that is not there. TF's default is
in the cell of the thread counts it runs, the advice in force before the run is marked, the chosen
cell is outlined and starred, screened-only cells are tagged; failed settings are grey with their
status; settings never measured are blank.

Gains are stated in the objective's own terms with their noise ("p99 5.97 ms against 8.14 ms for
TF's default (27% lower, noise ±9%)"): a ratio such as "1.36x" reads as slower for a latency.
"""

from __future__ import annotations

import html
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from advisor.calibrate.candidates import tf_default
from advisor.calibrate.objective import ConfigStats, aggregate, label, lower_is_better, rank
from advisor.errors import OutputError
from advisor.models import (
    CalibrationResult,
    Measurement,
    NearBest,
    NearBestRange,
    Objective,
    TrialResult,
)

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
        return label(self.intra_op_threads, self.inter_op_threads)


def _key(trial: TrialResult) -> tuple[int | None, int | None]:
    return (trial.intra_op_threads, trial.inter_op_threads)


def _near_key(near: NearBest) -> tuple[int | None, int | None]:
    """A setting within noise, keyed as trials are (the default as None/None)."""
    return (None, None) if near.default else (near.intra, near.inter)


def near_best_keys(result: CalibrationResult) -> set[tuple[int | None, int | None]]:
    """The settings within noise of the best."""
    return {_near_key(n) for n in result.near_best}


def near_best_line(result: CalibrationResult) -> str | None:
    """``within noise: intra 2-3, inter 1-2 (3 settings)``, or None without a range."""
    bounds = NearBestRange.of(result.near_best, result.noise_band)
    if bounds is None:
        return None
    band = "" if result.noise_band is None else f" ({result.noise_band:.0%})"
    return f"within noise{band} of the best: {bounds.describe()}"


def _leader(result: CalibrationResult) -> tuple[int | None, int | None] | None:
    """The setting with the best value (the first within noise), keyed as trials are."""
    return _near_key(result.near_best[0]) if result.near_best else None


def _verdict(
    s: ConfigStats, result: CalibrationResult, near: set[tuple[int | None, int | None]]
) -> str:
    chosen_key = (
        (None, None)
        if result.kept_default
        else (
            result.intra_op_threads,
            result.inter_op_threads,
        )
    )
    if s.key == chosen_key:
        verdict = "chosen (TF default kept)" if s.is_baseline else "chosen"
    elif s.is_baseline:
        verdict = "baseline (TF default)" + (", within noise" if s.key in near else "")
    elif s.key in near and s.key == _leader(result):
        verdict = "within noise: the best measured value"
    elif s.key in near:
        verdict = "within noise of the best"
    elif s.raced:
        verdict = f"raced ({s.windows} window{'s' if s.windows != 1 else ''})"
    else:
        verdict = "screened"
    if s.label in result.unstable:
        verdict += " (unstable)"
    return verdict


def rows(result: CalibrationResult) -> list[Row]:
    """Chosen first, then the baseline, the settings within noise, the raced, the screened (each
    best first), failures and skips last."""
    stats = aggregate(result.trials, tf_default(result.node))
    ordered = rank(stats, result.objective, result.p99_slo_ms)
    near = near_best_keys(result)
    by_key: dict[tuple[int | None, int | None], list[TrialResult]] = {}
    for trial in result.trials:
        by_key.setdefault(_key(trial), []).append(trial)

    def throttled(key: tuple[int | None, int | None], raced: bool) -> int | None:
        runs = [t for t in by_key.get(key, []) if (t.round > 0) == raced and t.status == "ok"]
        values = [t.nr_throttled for t in runs if t.nr_throttled is not None]
        return max(values) if values else None

    out: list[Row] = []
    for s in ordered:
        out.append(Row(s.key[0], s.key[1], s, throttled(s.key, s.raced), _verdict(s, result, near)))
    measured = {s.key for s in stats}
    for key, runs in by_key.items():
        if key in measured:
            continue
        last = runs[-1]
        why = f"{last.status}: {last.reason}" if last.reason else last.status
        out.append(Row(key[0], key[1], None, None, why))

    def place(row: Row) -> int:
        for index, start in enumerate(("chosen", "baseline", "within", "raced", "screened")):
            if row.verdict.startswith(start):
                return index
        return 5

    return sorted(out, key=place)


# --------------------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------------------


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _terms(objective: Objective, slo_met: bool) -> tuple[str, str, int, bool]:
    """(what, unit, digits, lower is better) of the value the objective ranks by."""
    if lower_is_better(objective, slo_met):
        return "p99 ", " ms", 2, True
    return "throughput ", " req/s", 0, False


def figure_text(objective: Objective, slo_met: bool, m: Measurement) -> str:
    """``p99 3.34 ms`` or ``throughput 283 req/s``: one measurement in the objective's terms."""
    what, unit, digits, lower = _terms(objective, slo_met)
    return f"{what}{_num(m.p99_ms if lower else m.throughput_rps, digits)}{unit}"


def compare_text(  # noqa: PLR0917 (two measurements and how to read them)
    objective: Objective,
    slo_met: bool,
    mine: Measurement,
    theirs: Measurement,
    whose: str,
    band: float | None,
) -> str:
    """``p99 5.97 ms against 8.14 ms for TF's default (27% lower, noise ±9%)``: two medians in
    the objective's own terms, which way they differ, and the noise band they were judged with."""
    what, unit, digits, lower = _terms(objective, slo_met)
    a, b = (mine.p99_ms, theirs.p99_ms) if lower else (mine.throughput_rps, theirs.throughput_rps)
    if a is None or b is None or b <= 0:
        return f"{figure_text(objective, slo_met, mine)}; no comparable figure for {whose}"
    noise = "" if band is None else f", noise \u00b1{band:.0%}"
    better = a <= b if lower else a >= b
    word = ("lower" if lower else "higher") if better else ("higher" if lower else "lower")
    return (
        f"{what}{a:.{digits}f}{unit} against {b:.{digits}f}{unit} for {whose} "
        f"({abs(a - b) / b:.0%} {word}{noise})"
    )


def _threads_versus_default(result: CalibrationResult) -> str:
    """``fewer threads (2 against 4)``: intra + inter of the advice against TF's default's."""
    default = tf_default(result.node)
    mine, theirs = result.intra_op_threads + result.inter_op_threads, sum(default)
    word = "fewer threads than" if mine < theirs else "more threads than"
    if mine == theirs:
        word = "as many threads as"
    return f"{word} TF's default ({mine} against {theirs}, intra + inter)"


def advice_line(result: CalibrationResult) -> str:
    """The one line a person acts on: the env values and the objective they were chosen for."""
    env = (
        f"TF_NUM_INTRAOP_THREADS={result.intra_op_threads} "
        f"TF_NUM_INTEROP_THREADS={result.inter_op_threads} "
        f"OMP_NUM_THREADS={result.intra_op_threads}"
    )
    if result.onednn is not None and result.onednn.value is not None:
        env += f" TF_ENABLE_ONEDNN_OPTS={result.onednn.value}"
    what = result.objective + (
        f", p99 <= {result.p99_slo_ms:g} ms" if result.p99_slo_ms is not None else ""
    )
    if result.kept_default:
        return f"advice: keep TF's default, spelled out: {env} ({what})"
    return f"advice: {env} ({what})"


def incumbent_line(result: CalibrationResult) -> str | None:
    """``in force before: 4/2 (configmaps/x in namespace ml): replaced by 1/1: ...``."""
    held = result.incumbent
    if held is None:
        return None
    name = "TF's default" if held.default else f"{held.intra}/{held.inter}"
    return f"in force before: {name} ({held.source}): {held.reason}"


def gain_line(result: CalibrationResult) -> str:
    """``against TF's default: p99 ... (27% lower, noise ±9%); fewer threads ...``."""
    line = f"against TF's default: {versus_default(result)}"
    if not result.kept_default:
        line += f"; {_threads_versus_default(result)}"
    return line


def summary_lines(result: CalibrationResult) -> list[str]:
    """The short story of a run, the same for ``calibrate`` and ``run``: the advice, the
    incumbent and whether it was kept, the range within noise, and the gain."""
    lines = [advice_line(result)]
    held = incumbent_line(result)
    if held is not None:
        lines.append(held)
    near = near_best_line(result)
    if near is not None:
        lines.append(near)
    lines.append(gain_line(result))
    return lines


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
    lines.extend(summary_lines(result))
    node = result.node
    screen = sum(1 for t in result.trials if t.round == 0)
    races = max(0, result.rounds - 1)
    lines.append(
        f"measured: {len(result.trials)} trials ({screen} in the screen, "
        f"{len(result.trials) - screen} in {races} race round{'s' if races != 1 else ''}), "
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
TOP = 112
LEGEND_H = 86
#: wide enough for the title and baseline lines whatever the grid size
MIN_WIDTH = 720


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


@dataclass(frozen=True)
class _Grid:
    """The heatmap's cells and colour scale, before any drawing."""

    intras: list[int]
    inters: list[int]
    by_cell: dict[tuple[int | None, int | None], ConfigStats]
    failed: dict[tuple[int | None, int | None], str]
    lower: bool
    worst: float
    best: float
    #: a race ran: cells judged on the screen's short windows alone are tagged
    raced: bool = False
    #: cells within noise of the best
    near: frozenset[tuple[int | None, int | None]] = frozenset()
    #: the cell of TF's default (the baseline runs these thread counts), if it was measured
    default_cell: tuple[int, int] | None = None
    #: the cell of the advice in force before the run, when it was not TF's default
    incumbent_cell: tuple[int, int] | None = None

    def value(self, s: ConfigStats) -> float:
        return s.p99_ms if self.lower else s.throughput_rps

    def fill(self, s: ConfigStats, cell: tuple[int | None, int | None]) -> str:
        if cell in self.near:
            return _colour(1.0)  # within noise of the best: the measurement cannot rank them
        span = (self.worst - self.best) or 1.0
        return _colour((self.worst - self.value(s)) / span)


def _grid(result: CalibrationResult) -> _Grid:
    default = tf_default(result.node)
    measured = aggregate(result.trials)
    stats = [s for s in measured if not s.is_baseline]
    by_cell = {(s.intra_op_threads, s.inter_op_threads): s for s in stats}
    baseline = next((s for s in measured if s.is_baseline), None)
    default_cell = None
    if baseline is not None and default not in by_cell:
        by_cell[default] = baseline
        default_cell = default
    near = {default if key == (None, None) else key for key in near_best_keys(result)}
    held = result.incumbent
    incumbent_cell = None if held is None or held.default else (held.intra, held.inter)
    failed: dict[tuple[int | None, int | None], str] = {
        _key(t): t.status
        for t in result.trials
        if not t.is_baseline and _key(t) not in by_cell and t.status != "ok"
    }
    cells = [*by_cell, *failed]
    lower = _metric(result)[2]
    values = [s.p99_ms if lower else s.throughput_rps for s in by_cell.values()] or [0.0]
    return _Grid(
        intras=sorted({k[0] for k in cells if k[0] is not None}),
        inters=sorted({k[1] for k in cells if k[1] is not None}),
        by_cell=by_cell,
        failed=failed,
        lower=lower,
        worst=max(values) if lower else min(values),
        best=min(values) if lower else max(values),
        raced=any(s.raced for s in stats),
        near=frozenset(near),
        default_cell=default_cell,
        incumbent_cell=incumbent_cell,
    )


def _svg_header(result: CalibrationResult, grid: _Grid, width: int, height: int) -> list[str]:
    title, unit, lower = _metric(result)
    base = result.baseline
    base_value = base.p99_ms if lower else base.throughput_rps
    slo = f", p99 &lt;= {result.p99_slo_ms:g} ms" if result.p99_slo_ms else ""
    middle = TOP + CELL_H * len(grid.intras) / 2
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="13">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="16" y="24" font-size="15" font-weight="bold">{html.escape(title)} ({unit}, '
        f"{'lower' if lower else 'higher'} is better) by thread setting</text>",
        f'<text x="16" y="48">TF default (baseline, {len(result.node.affinity_cpus)} CPUs in '
        f"affinity): {_num(base_value)} {unit}; objective {html.escape(result.objective)}"
        f"{slo}</text>",
        f'<text x="{LEFT + CELL_W * len(grid.inters) / 2}" y="{TOP - 34}" '
        'text-anchor="middle" font-weight="bold">inter-op threads</text>',
        f'<text x="40" y="{middle}" text-anchor="middle" font-weight="bold" '
        f'transform="rotate(-90 40 {middle})">intra-op threads</text>',
    ]
    for col, inter in enumerate(grid.inters):
        x = LEFT + col * CELL_W + CELL_W / 2
        parts.append(f'<text x="{x}" y="{TOP - 10}" text-anchor="middle">{inter}</text>')
    return parts


def _svg_cells(result: CalibrationResult, grid: _Grid) -> list[str]:
    parts = []
    chosen: tuple[int | None, int | None] = (result.intra_op_threads, result.inter_op_threads)
    for row_index, intra in enumerate(grid.intras):
        y = TOP + row_index * CELL_H
        parts.append(
            f'<text x="{LEFT - 10}" y="{y + CELL_H / 2 + 5}" text-anchor="end">{intra}</text>'
        )
        for col, inter in enumerate(grid.inters):
            x = LEFT + col * CELL_W
            s = grid.by_cell.get((intra, inter))
            if s is not None:
                fill, label = grid.fill(s, (intra, inter)), _num(grid.value(s))
                if (intra, inter) == grid.default_cell:
                    label = f"TF default {label}"
                if result.objective == "slo" and result.p99_slo_ms and s.p99_ms > result.p99_slo_ms:
                    label += " !"
                if grid.raced and not s.raced:
                    label += " (s)"
                if (intra, inter) in grid.near and (intra, inter) != chosen:
                    label += " ~"
            elif (intra, inter) in grid.failed:
                fill, label = "#bbbbbb", grid.failed[(intra, inter)]
            else:
                fill, label = "#f4f4f4", ""
            parts.append(
                f'<rect x="{x}" y="{y}" width="{CELL_W}" height="{CELL_H}" fill="{fill}" '
                'stroke="white" stroke-width="2"/>'
            )
            if (intra, inter) == grid.incumbent_cell:
                parts.append(
                    f'<rect x="{x + 6}" y="{y + 6}" width="{CELL_W - 12}" height="{CELL_H - 12}" '
                    'fill="none" stroke="#3050c0" stroke-width="2" stroke-dasharray="5 3">'
                    "<title>the advice in force before this run</title></rect>"
                )
                label = f"\u25c6 {label}"
            if (intra, inter) == chosen:
                parts.append(
                    f'<rect x="{x + 2}" y="{y + 2}" width="{CELL_W - 4}" height="{CELL_H - 4}" '
                    'fill="none" stroke="black" stroke-width="4"><title>chosen</title></rect>'
                )
                label = f"\u2605 {label}"
            parts.append(
                f'<text x="{x + CELL_W / 2}" y="{y + CELL_H / 2 + 5}" text-anchor="middle">'
                f"{html.escape(label)}</text>"
            )
    return parts


def _svg_legend(result: CalibrationResult, grid: _Grid) -> list[str]:
    unit = _metric(result)[1]
    legend_y = TOP + CELL_H * len(grid.intras) + 24
    steps = 10
    legend_w = 260
    parts = []
    for i in range(steps):
        x = LEFT + i * legend_w / steps
        parts.append(
            f'<rect x="{x}" y="{legend_y}" width="{legend_w / steps + 0.5}" height="14" '
            f'fill="{_colour(i / (steps - 1))}"/>'
        )
    if result.kept_default:
        chosen_note = (
            f"\u2605 chosen: TF's default, spelled out (intra = inter = {result.intra_op_threads})"
        )
    else:
        chosen_note = (
            f"\u2605 chosen: intra {result.intra_op_threads}, inter {result.inter_op_threads} "
            f"({versus_default(result)})"
        )
    held = result.incumbent
    if grid.incumbent_cell is not None and held is not None:
        chosen_note += f"; \u25c6 in force before: {'kept' if held.kept else 'replaced'}"
    chosen_note = (
        chosen_note
        + "; grey: failed; blank: not measured"
        + ("; (s): screened only (short windows)" if grid.raced else "")
        + (f"; !: p99 over {result.p99_slo_ms:g} ms" if result.objective == "slo" else "")
    )
    parts += [
        f'<text x="{LEFT}" y="{legend_y + 30}">{_num(grid.worst)} {unit} (worst)</text>',
        f'<text x="{LEFT + legend_w}" y="{legend_y + 30}" text-anchor="end">'
        f"{_num(grid.best)} {unit} (best)</text>",
        f'<text x="{LEFT}" y="{legend_y + 52}">{html.escape(chosen_note)}</text>',
    ]
    near = near_best_line(result)
    if near is not None:
        parts.append(
            f'<text x="{LEFT}" y="{legend_y + 74}">~ {html.escape(near)} (one colour: the '
            "measurement cannot rank them)</text>"
        )
    return parts


def versus_default(result: CalibrationResult) -> str:
    """How the advice compares with TF's default, in the objective's terms and with its noise,
    claiming no more than measured."""
    met = result.slo_met is not False
    if result.kept_default:
        figure = figure_text(result.objective, met, result.baseline)
        return f"the advice is TF's default ({figure}): no gain claimed"
    text = compare_text(
        result.objective, met, result.chosen, result.baseline, "TF's default", result.gain_band
    )
    if result.gain_within_noise:
        return f"{text}: no measurable gain"
    return text


def heatmap_svg(result: CalibrationResult) -> str:
    """The intra x inter grid of the objective's value, as a standalone SVG document."""
    grid = _grid(result)
    width = max(MIN_WIDTH, LEFT + CELL_W * max(1, len(grid.inters)) + 24)
    height = TOP + CELL_H * max(1, len(grid.intras)) + LEGEND_H + 40
    parts = _svg_header(result, grid, width, height)
    parts += _svg_cells(result, grid)
    parts += _svg_legend(result, grid)
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
pre {{ background: #f7f7f7; padding: 10px; white-space: pre-wrap; }}
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
    """HTML report, or the SVG heatmap alone for a ``.svg`` path; OutputError if unwritable.

    Written beside the target (through a symlink: beside the file it points to) and renamed into
    place, so a full disk leaves the previous report whole and a reader never sees half of one.
    """
    content = heatmap_svg(result) if path.suffix.lower() == ".svg" else report_html(result)
    target = Path(os.path.realpath(path))
    tmp: Path | None = None
    try:
        with tempfile.NamedTemporaryFile(
            "w",
            encoding="utf-8",
            dir=target.parent,
            prefix=f".{target.name}.",
            suffix=".tmp",
            delete=False,
        ) as handle:
            tmp = Path(handle.name)
            handle.write(content)
        tmp.chmod(0o644)
        tmp.replace(target)
    except OSError as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise OutputError(f"--report {path}: cannot write: {exc.strerror or exc}") from None
