"""The intra x inter heatmap as a standalone SVG.

Cells show the value the objective ranks by (p99 for latency, requests/s otherwise): the median
over each setting's trusted windows (the race's, if it was raced), coloured from worst (red) to
best (green). Every setting within noise of the best gets the best's colour: the measurement cannot
tell them apart, so a gradient among them would show a ranking that is not there. TF's default is
in the cell of the thread counts it runs, the advice in force before the run is marked, the chosen
cell is outlined and starred, screened-only cells are tagged; failed settings are grey with their
status; settings never measured are blank. Hand-written SVG keeps the advisor's dependencies to
what it needs to run.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from advisor.models import CalibrationResult, SettingStats, ThreadSetting
from advisor.objectives import Measure, named
from advisor.render.words import near_best_line, number, ranked_by, versus_default

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


@dataclass(frozen=True)
class _Grid:
    """The heatmap's cells and colour scale, before any drawing."""

    intras: list[int]
    inters: list[int]
    by_cell: dict[ThreadSetting, SettingStats]
    failed: dict[ThreadSetting, str]
    #: what the cells show
    measure: Measure
    worst: float
    best: float
    #: a race ran: cells judged on the screen's short windows alone are tagged
    raced: bool = False
    #: cells within noise of the best
    near: frozenset[ThreadSetting] = frozenset()
    #: the cell of TF's default (the baseline runs these thread counts), if it was measured
    default_cell: ThreadSetting | None = None
    #: the cell of the advice in force before the run, when it was not TF's default
    incumbent_cell: ThreadSetting | None = None

    def value(self, s: SettingStats) -> float:
        return self.measure.value(s)

    def fill(self, s: SettingStats, cell: ThreadSetting) -> str:
        if cell in self.near:
            return _colour(1.0)  # within noise of the best: the measurement cannot rank them
        span = (self.worst - self.best) or 1.0
        return _colour((self.worst - self.value(s)) / span)


def _grid(result: CalibrationResult) -> _Grid:
    default = result.tf_default
    measured = [s for s in result.settings if s.verdict != "failed"]
    stats = [s for s in measured if not s.setting.is_default]
    by_cell = {s.setting: s for s in stats}
    baseline = next((s for s in measured if s.setting.is_default), None)
    default_cell = None
    if baseline is not None and default not in by_cell:
        by_cell[default] = baseline
        default_cell = default
    near = {
        s.setting.spelled_out(len(result.node.affinity_cpus)) for s in measured if s.within_noise
    }
    held = result.incumbent
    incumbent_cell = None if held is None or held.setting.is_default else held.setting
    failed: dict[ThreadSetting, str] = {
        s.setting: s.status
        for s in result.settings
        if s.verdict == "failed" and not s.setting.is_default and s.setting not in by_cell
    }
    cells = [*by_cell, *failed]
    measure = ranked_by(result)
    lower = measure.lower_is_better
    values = [measure.value(s) for s in by_cell.values()] or [0.0]
    return _Grid(
        intras=sorted({k.intra for k in cells if k.intra is not None}),
        inters=sorted({k.inter for k in cells if k.inter is not None}),
        by_cell=by_cell,
        failed=failed,
        measure=measure,
        worst=max(values) if lower else min(values),
        best=min(values) if lower else max(values),
        raced=any(s.raced for s in stats),
        near=frozenset(near),
        default_cell=default_cell,
        incumbent_cell=incumbent_cell,
    )


def _svg_header(result: CalibrationResult, grid: _Grid, width: int, height: int) -> list[str]:
    title, unit, lower = grid.measure.title, grid.measure.unit, grid.measure.lower_is_better
    base_value = grid.measure.read(result.baseline)
    slo = f", p99 &lt;= {result.p99_slo_ms:g} ms" if result.p99_slo_ms else ""
    middle = TOP + CELL_H * len(grid.intras) / 2
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="13">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="16" y="24" font-size="15" font-weight="bold">{html.escape(title)} ({unit}, '
        f"{'lower' if lower else 'higher'} is better) by thread setting</text>",
        f'<text x="16" y="48">TF default (baseline, {len(result.node.affinity_cpus)} CPUs in '
        f"affinity): {number(base_value)} {unit}; objective {html.escape(result.objective)}"
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
    chosen = result.setting
    objective, bound = named(result.objective), result.p99_slo_ms
    for row_index, intra in enumerate(grid.intras):
        y = TOP + row_index * CELL_H
        parts.append(
            f'<text x="{LEFT - 10}" y="{y + CELL_H / 2 + 5}" text-anchor="end">{intra}</text>'
        )
        for col, inter in enumerate(grid.inters):
            x = LEFT + col * CELL_W
            cell = ThreadSetting(intra, inter)
            s = grid.by_cell.get(cell)
            if s is not None:
                fill, label = grid.fill(s, cell), number(grid.value(s))
                if cell == grid.default_cell:
                    label = f"TF default {label}"
                if bound is not None and not objective.admits(s, bound):
                    label += " !"
                if grid.raced and not s.raced:
                    label += " (s)"
                if cell in grid.near and cell != chosen:
                    label += " ~"
            elif cell in grid.failed:
                fill, label = "#bbbbbb", grid.failed[cell]
            else:
                fill, label = "#f4f4f4", ""
            parts.append(
                f'<rect x="{x}" y="{y}" width="{CELL_W}" height="{CELL_H}" fill="{fill}" '
                'stroke="white" stroke-width="2"/>'
            )
            if cell == grid.incumbent_cell:
                parts.append(
                    f'<rect x="{x + 6}" y="{y + 6}" width="{CELL_W - 12}" height="{CELL_H - 12}" '
                    'fill="none" stroke="#3050c0" stroke-width="2" stroke-dasharray="5 3">'
                    "<title>the advice in force before this run</title></rect>"
                )
                label = f"\u25c6 {label}"
            if cell == chosen:
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
    unit = grid.measure.unit
    limit = named(result.objective).bounded_by
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
        + (
            f"; !: {limit.beyond(result.p99_slo_ms)}"
            if limit is not None and result.p99_slo_ms is not None
            else ""
        )
    )
    parts += [
        f'<text x="{LEFT}" y="{legend_y + 30}">{number(grid.worst)} {unit} (worst)</text>',
        f'<text x="{LEFT + legend_w}" y="{legend_y + 30}" text-anchor="end">'
        f"{number(grid.best)} {unit} (best)</text>",
        f'<text x="{LEFT}" y="{legend_y + 52}">{html.escape(chosen_note)}</text>',
    ]
    near = near_best_line(result)
    if near is not None:
        parts.append(
            f'<text x="{LEFT}" y="{legend_y + 74}">~ {html.escape(near)} (one colour: the '
            "measurement cannot rank them)</text>"
        )
    return parts


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
