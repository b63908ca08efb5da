"""The intra x inter heatmap as a standalone SVG.

Cells show the value the objective ranks by (p99 for latency, requests/s otherwise): the median
over each setting's trusted windows (the race's, if it was raced), coloured from worst (red) to
best (green). Every setting within noise of the best gets the best's colour: the measurement cannot
tell them apart, so a gradient among them would show a ranking that is not there. TF's default is
in the cell of the thread counts it runs, the advice in force before the run is marked, the chosen
cell is outlined and starred, screened-only cells are tagged; failed settings are grey with their
status; settings never measured are blank. Hand-written SVG keeps the advisor's dependencies to
what it needs to run.

SVG neither wraps text nor grows to hold it: what crosses its edge is clipped. So the drawing is
sized from its own text, estimated by ``textbox``: each cell as wide as the longest label, the
title and legend wrapped to the drawing's width.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from advisor.models import CalibrationResult, SettingStats, ThreadSetting
from advisor.objectives import Measure, named
from advisor.render.textbox import text_width, wrap
from advisor.render.words import near_best_line, number, ranked_by, versus_default

#: font sizes (px): body text, the title, a cell's value, a cell's tag line
FONT, TITLE_FONT, VALUE_FONT, TAG_FONT = 13, 15, 14, 11


#: margin around the drawing; room left of the grid for the intra axis title and row labels
PAD, LEFT = 16, 96


#: a cell: at least this wide, wider when its label needs it; tall enough for two lines
MIN_CELL_W, CELL_H = 96, 52


#: room beside a cell's label, past the outlines drawn inside the chosen and the incumbent cell
CELL_ROOM = 20


#: the drawing is at least this wide, so the title and legend keep to a few lines
MIN_WIDTH = 880


#: the page shows the drawing as wide as the page allows, up to this many times its own size
PAGE_SCALE = 1.3


#: the colour scale: at least this wide, wider when its end labels need it
SCALE_W = 260


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
    default = result.tf_picks
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


@dataclass(frozen=True)
class _Cell:
    """One drawn cell: its colour, its value line (with the marks) and an optional tag line."""

    setting: ThreadSetting
    fill: str
    label: str
    tag: str | None = None
    chosen: bool = False
    incumbent: bool = False


def _cells(result: CalibrationResult, grid: _Grid) -> list[_Cell]:
    """Every cell of the grid, row by row, with what its labels say."""
    cells = []
    objective, bound = named(result.objective), result.p99_slo_ms
    for intra in grid.intras:
        for inter in grid.inters:
            cell = ThreadSetting(intra, inter)
            s = grid.by_cell.get(cell)
            tag = None
            if s is not None:
                fill, label = grid.fill(s, cell), number(grid.value(s))
                if cell == grid.default_cell:
                    tag = "TF default"
                if bound is not None and not objective.admits(s, bound):
                    label += " !"
                if grid.raced and not s.raced:
                    label += " (s)"
                if cell in grid.near and cell != result.setting:
                    label += " ~"
            elif cell in grid.failed:
                fill, label = "#bbbbbb", grid.failed[cell]
            else:
                fill, label = "#f4f4f4", ""
            incumbent, chosen = cell == grid.incumbent_cell, cell == result.setting
            if incumbent:
                label = f"\u25c6 {label}"
            if chosen:
                label = f"\u2605 {label}"
            cells.append(_Cell(cell, fill, label, tag, chosen, incumbent))
    return cells


def _cell_width(cells: list[_Cell]) -> int:
    """Wide enough for the longest label (the chosen one's in bold) with room to spare."""
    needed = [text_width(c.label, VALUE_FONT, bold=c.chosen) for c in cells if c.label] + [
        text_width(c.tag, TAG_FONT) for c in cells if c.tag
    ]
    return max([MIN_CELL_W, *(math.ceil(n) + CELL_ROOM for n in needed)])


@dataclass
class _Lines:
    """Text lines laid out top to bottom at ``x``, each wrapped to the drawing's width."""

    x: float
    width: float
    y: float
    parts: list[str]

    def add(self, text: str, size: int = FONT, *, bold: bool = False, gap: float = 0) -> None:
        """``text`` (plain, escaped here) as one or more lines below the last."""
        self.y += gap
        weight = ' font-weight="bold"' if bold else ""
        for line in wrap(text, self.width, size, bold=bold):
            self.y += round(size * 1.4)
            self.parts.append(
                f'<text x="{self.x}" y="{self.y}" font-size="{size}"{weight}>'
                f"{html.escape(line)}</text>"
            )


def _header(result: CalibrationResult, grid: _Grid, width: int) -> _Lines:
    title, unit, lower = grid.measure.title, grid.measure.unit, grid.measure.lower_is_better
    base_value = grid.measure.read(result.baseline)
    slo = f", p99 <= {result.p99_slo_ms:g} ms" if result.p99_slo_ms else ""
    lines = _Lines(PAD, width - 2 * PAD, PAD - 4, [])
    better = "lower" if lower else "higher"
    lines.add(f"{title} ({unit}, {better} is better) by thread setting", TITLE_FONT, bold=True)
    lines.add(
        f"TF default (baseline, {len(result.node.affinity_cpus)} CPUs in affinity): "
        f"{number(base_value)} {unit}; objective {result.objective}{slo}"
    )
    return lines


def _svg_grid(grid: _Grid, cells: list[_Cell], cell_w: int, top: float) -> list[str]:
    """The axis titles, the row and column labels and the cells, the grid's top at ``top``."""
    middle = top + CELL_H * len(grid.intras) / 2
    parts = [
        f'<text x="{LEFT + cell_w * len(grid.inters) / 2}" y="{top - 34}" '
        'text-anchor="middle" font-weight="bold">inter-op threads</text>',
        f'<text x="40" y="{middle}" text-anchor="middle" font-weight="bold" '
        f'transform="rotate(-90 40 {middle})">intra-op threads</text>',
    ]
    for col, inter in enumerate(grid.inters):
        x = LEFT + col * cell_w + cell_w / 2
        parts.append(f'<text x="{x}" y="{top - 10}" text-anchor="middle">{inter}</text>')
    for row, intra in enumerate(grid.intras):
        y = top + row * CELL_H + CELL_H / 2 + 5
        parts.append(f'<text x="{LEFT - 10}" y="{y}" text-anchor="end">{intra}</text>')
    columns = len(grid.inters)
    for index, cell in enumerate(cells):
        x, y = LEFT + (index % columns) * cell_w, top + (index // columns) * CELL_H
        parts.append(f'<g class="cell" data-setting="{cell.setting.label}">')
        parts.append(
            f'<rect x="{x}" y="{y}" width="{cell_w}" height="{CELL_H}" fill="{cell.fill}" '
            'stroke="white" stroke-width="2"/>'
        )
        if cell.incumbent:
            parts.append(
                f'<rect x="{x + 6}" y="{y + 6}" width="{cell_w - 12}" height="{CELL_H - 12}" '
                'fill="none" stroke="#3050c0" stroke-width="2" stroke-dasharray="5 3">'
                "<title>the advice in force before this run</title></rect>"
            )
        if cell.chosen:
            parts.append(
                f'<rect x="{x + 2}" y="{y + 2}" width="{cell_w - 4}" height="{CELL_H - 4}" '
                'fill="none" stroke="black" stroke-width="4"><title>chosen</title></rect>'
            )
        centre = x + cell_w / 2
        # one line centred; with a tag, the value above it
        value_y = y + CELL_H / 2 + 5 if cell.tag is None else y + 22
        weight = ' font-weight="bold"' if cell.chosen else ""
        if cell.label:  # a cell never measured stays blank
            parts.append(
                f'<text x="{centre}" y="{value_y}" text-anchor="middle" font-size="{VALUE_FONT}"'
                f"{weight}>{html.escape(cell.label)}</text>"
            )
        if cell.tag is not None:
            parts.append(
                f'<text x="{centre}" y="{y + 40}" text-anchor="middle" font-size="{TAG_FONT}">'
                f"{html.escape(cell.tag)}</text>"
            )
        parts.append("</g>")
    return parts


def _legend_items(result: CalibrationResult, grid: _Grid) -> list[str]:
    """What the marks mean, one item per mark that the grid uses."""
    if result.kept_default:
        chosen = (
            f"\u2605 chosen: TF's default, spelled out (intra = inter = {result.setting.intra})"
        )
    else:
        chosen = (
            f"\u2605 chosen: intra {result.setting.intra}, inter {result.setting.inter} "
            f"({versus_default(result)})"
        )
    items = [chosen]
    held = result.incumbent
    if grid.incumbent_cell is not None and held is not None:
        items.append(
            f"\u25c6 in force before this run: {held.setting.label}, "
            f"{'kept' if held.kept else 'replaced'}"
        )
    limit = named(result.objective).bounded_by
    marks = "grey: failed; blank: not measured"
    if grid.raced:
        marks += "; (s): screened only (short windows)"
    if limit is not None and result.p99_slo_ms is not None:
        marks += f"; !: {limit.beyond(result.p99_slo_ms)}"
    items.append(marks)
    near = near_best_line(result)
    if near is not None:
        items.append(f"~ {near}; one colour: the measurement cannot rank them")
    return items


def _svg_legend(result: CalibrationResult, grid: _Grid, width: int, top: float) -> _Lines:
    """The colour scale with its two ends, then the marks' meanings, from ``top`` down."""
    unit = grid.measure.unit
    worst, best = f"{number(grid.worst)} {unit} (worst)", f"{number(grid.best)} {unit} (best)"
    scale_w = max(SCALE_W, text_width(worst, FONT) + text_width(best, FONT) + 24)
    steps = 10
    parts = []
    for i in range(steps):
        x = LEFT + i * scale_w / steps
        parts.append(
            f'<rect x="{x:g}" y="{top}" width="{scale_w / steps + 0.5:g}" height="14" '
            f'fill="{_colour(i / (steps - 1))}"/>'
        )
    parts += [
        f'<text x="{LEFT}" y="{top + 30}">{html.escape(worst)}</text>',
        f'<text x="{LEFT + scale_w:g}" y="{top + 30}" text-anchor="end">{html.escape(best)}</text>',
    ]
    lines = _Lines(LEFT, width - LEFT - PAD, top + 32, parts)
    for item in _legend_items(result, grid):
        lines.add(item, gap=4)
    return lines


def heatmap_svg(result: CalibrationResult, *, page: bool = False) -> str:
    """The intra x inter grid of the objective's value, as a standalone SVG document.

    Sized from its content: cells as wide as their longest label, the title and legend wrapped
    to the drawing's width. With ``page``, for inline use in an HTML page: as wide as the page,
    up to ``PAGE_SCALE`` times its own size, its text scaling with it.
    """
    grid = _grid(result)
    cells = _cells(result, grid)
    cell_w = _cell_width(cells)
    width = max(MIN_WIDTH, LEFT + cell_w * max(1, len(grid.inters)) + PAD)
    header = _header(result, grid, width)
    top = header.y + 64
    body = _svg_grid(grid, cells, cell_w, top)
    legend = _svg_legend(result, grid, width, top + CELL_H * max(1, len(grid.intras)) + 24)
    height = round(legend.y + PAD)
    size = (
        f'width="100%" style="max-width: {round(width * PAGE_SCALE)}px; height: auto"'
        if page
        else f'width="{width}" height="{height}"'
    )
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" {size} viewBox="0 0 {width} {height}" '
            f'font-family="sans-serif" font-size="{FONT}">',
            f'<rect width="{width}" height="{height}" fill="white"/>',
            *header.parts,
            *body,
            *legend.parts,
            "</svg>",
        ]
    )
