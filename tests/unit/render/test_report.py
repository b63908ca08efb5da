"""The text table and the report file (HTML with an inline SVG heatmap, or SVG alone)."""

from __future__ import annotations

import html
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from advisor.errors import OutputError
from advisor.models import CalibrationResult
from advisor.render.heatmap import heatmap_svg
from advisor.render.report import report_html, write_report
from advisor.render.table import text_summary
from tests.support import run_python
from tests.support.render_samples import DEFAULT, GRID, Row, S
from tests.support.render_samples import result as built

SVG = "{http://www.w3.org/2000/svg}"


def result_for(objective: str = "latency", p99: float | None = None) -> CalibrationResult:
    """The grid's result (8 CPUs, a 4-CPU quota, one setting crashed) under ``objective``."""
    return built(GRID, objective=objective, p99_slo_ms=p99)


#: every setting as fast as the others, TF's default three times slower: 2/1 advised, the rest
#: within noise of it
FLAT = [
    Row(S(2, 1), "chosen", 10.0, within_noise=True, best=True),
    Row(DEFAULT, "baseline", 30.0),
    Row(S(1, 1), "within noise", 10.0, within_noise=True),
    Row(S(4, 1), "within noise", 10.0, within_noise=True),
    Row(S(4, 2), "within noise", 10.0, within_noise=True),
]


def cell_texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def legend(svg: str) -> str:
    """The text outside the cells, its lines joined (a long line is wrapped at spaces)."""
    root = ET.fromstring(svg)
    in_cells = {id(t) for g in root.iter(f"{SVG}g") for t in g.iter(f"{SVG}text")}
    return " ".join("".join(t.itertext()) for t in root.iter(f"{SVG}text") if id(t) not in in_cells)


def test_heatmap_is_valid_svg_with_values_and_the_chosen_cell_marked() -> None:
    result = result_for()
    svg = heatmap_svg(result)
    texts = cell_texts(svg)
    chosen = result.chosen.p99_ms
    assert chosen is not None
    starred = [t for t in texts if t.startswith("\u2605 ") and "chosen" not in t]
    assert starred == [f"\u2605 {chosen:.1f}"]
    assert "crashed" in texts  # the failed setting is shown, not silently missing
    baseline = result.baseline.p99_ms
    assert baseline is not None
    assert any(t.startswith("TF default (baseline") and f"{baseline:.1f} ms" in t for t in texts)
    assert "inter-op threads" in texts
    assert "intra-op threads" in texts
    # one coloured cell with a value per measured setting
    measured = [r for r in GRID if r.p99 is not None and not r.setting.is_default]
    value_cells = [label for label, _ in cell_fills(svg) if number(label) is not None]
    assert len(value_cells) == len(measured)
    # cells judged on the screen's short windows alone say so; the raced ones' do not
    screened = [label for label in value_cells if "(s)" in label]
    assert len(screened) == len([r for r in measured if not r.raced]) == 2
    assert f"{chosen:.1f}" in value_cells


@dataclass(frozen=True)
class Drawn:
    """One cell as drawn: its value line, its tag line, its fill, whether it is outlined."""

    value: str
    tag: str | None
    fill: str
    width: float


def drawn_cells(svg: str) -> list[Drawn]:
    """Every cell of the grid (a ``<g class="cell">``: its rectangle first, then its lines)."""
    cells = []
    for group in ET.fromstring(svg).iter(f"{SVG}g"):
        if group.get("class") != "cell":
            continue
        rect = group.find(f"{SVG}rect")
        assert rect is not None
        lines = ["".join(t.itertext()) for t in group.iter(f"{SVG}text")]
        assert len(lines) <= 2
        value = lines[0] if lines else ""  # a cell never measured has no line
        tag = lines[1] if len(lines) == 2 else None
        cells.append(Drawn(value, tag, rect.get("fill", ""), float(rect.get("width", "0"))))
    return cells


def cell_fills(svg: str) -> list[tuple[str, str]]:
    """(cell label, fill colour of its rectangle) per cell: the value line without the chosen
    cell's star, after its tag ("TF default 12.0") when it has one."""
    return [
        (" ".join(filter(None, (c.tag, c.value.replace("\u2605 ", "")))), c.fill)
        for c in drawn_cells(svg)
    ]


def number(label: str) -> float | None:
    """The value a cell shows ("12.3", "12.3 (r0)", "12.3 !"), or None for a status cell."""
    try:
        return float(label.split(maxsplit=1)[0])
    except (ValueError, IndexError):
        return None


def test_best_cell_is_greenest_and_worst_reddest() -> None:
    result = result_for()
    cells = cell_fills(heatmap_svg(result))
    values = {v: fill for label, fill in cells if (v := number(label)) is not None}
    assert len(values) >= 3
    greenness = {v: int(f[3:5], 16) - int(f[1:3], 16) for v, f in values.items()}
    best, worst = min(values), max(values)  # latency: lower is better
    assert greenness[best] == max(greenness.values())
    assert greenness[worst] == min(greenness.values())
    assert greenness[best] > 0 > greenness[worst]


def test_every_cell_within_noise_of_the_best_has_the_best_colour() -> None:
    """The measurement cannot rank them, so the heatmap does not either; the others keep the
    gradient, and TF's default sits in the cell of the thread counts it runs."""
    result = built(FLAT)
    svg = heatmap_svg(result)
    cells = cell_fills(svg)
    near = [fill for label, fill in cells if label.endswith(" ~")]
    chosen = [fill for label, fill in cells if label.startswith(f"{result.chosen.p99_ms:.1f}")]
    assert len(near) >= 2
    assert set(near) == set(chosen)  # one colour for the whole range, the advice's included
    # TF's default is three times slower: outside the range, so it keeps the gradient's red end
    outside = [fill for label, fill in cells if label.startswith("TF default ")]
    assert outside and set(outside).isdisjoint(near)
    default = [label for label, _ in cells if label.startswith("TF default ")]
    assert len(default) == 1


def test_throughput_heatmap_shows_requests_per_second() -> None:
    result = result_for("throughput")
    texts = cell_texts(heatmap_svg(result))
    assert any("req/s, higher is better" in t for t in texts)


def test_slo_cells_over_the_bound_are_flagged() -> None:
    result = result_for("slo", p99=6.0)
    texts = cell_texts(heatmap_svg(result))
    assert any(t.endswith(" !") for t in texts)


def test_html_report_is_self_contained_with_the_trial_table(tmp_path: Path) -> None:
    result = result_for()
    target = tmp_path / "report.html"
    write_report(result, target)
    page = target.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "<svg" in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "<script" not in page
    assert page.count("<tr class=") == len(result.trials)
    assert f"TF_NUM_INTRAOP_THREADS={result.setting.intra}" in page


def test_svg_report_is_the_heatmap_alone(tmp_path: Path) -> None:
    result = result_for()
    target = tmp_path / "heat.svg"
    write_report(result, target)
    root = ET.parse(target).getroot()
    assert root.tag == f"{SVG}svg"


def test_unwritable_report_is_an_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="cannot write"):
        write_report(result_for(), tmp_path / "missing" / "r.html")


#: writes a report over an existing one with files limited to 2000 bytes (EFBIG past that)
_SMALL_FILES = """
import resource, signal, sys
from pathlib import Path
from advisor.render.report import write_report
from advisor.errors import OutputError
from tests.unit.render.test_report import result_for
result = result_for()
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))
try:
    write_report(result, Path(sys.argv[1]))
except OutputError as exc:
    print(exc)
"""


def test_a_report_that_cannot_be_written_whole_leaves_the_old_one(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("the previous report\n")
    assert "cannot write" in run_python(_SMALL_FILES, str(target))
    assert target.read_text() == "the previous report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_text_table_has_chosen_baseline_and_a_one_line_advice() -> None:
    result = result_for()
    text = text_summary(result)
    lines = text.splitlines()
    assert lines[0].split() == [
        "intra/inter",
        "p50",
        "ms",
        "p99",
        "ms",
        "req/s",
        "throttled",
        "preempt/req",
        "verdict",
    ]
    label = f"{result.setting.intra}/{result.setting.inter}"
    assert lines[1].startswith(label)
    assert lines[1].endswith("chosen")
    assert lines[2].startswith("TF default")
    assert any(line.startswith("2/2") and line.endswith("crashed: fake crashed") for line in lines)
    advice = [line for line in lines if line.startswith("advice:")]
    assert len(advice) == 1
    assert f"TF_NUM_INTRAOP_THREADS={result.setting.intra}" in advice[0]
    against = next(line for line in lines if line.startswith("against TF's default:"))
    mine, theirs = result.chosen.p99_ms, result.baseline.p99_ms
    assert mine is not None and theirs is not None and result.gain_band is not None
    assert (
        f"p99 {mine:.2f} ms against {theirs:.2f} ms for TF's default "
        f"({(theirs - mine) / theirs:.0%} lower, noise \u00b1{result.gain_band:.0%})"
    ) in against
    assert "x the TF default" not in text


def test_report_view_for_people(tmp_path: Path) -> None:
    """Writes both forms next to each other; a person can open them (kept in tmp_path)."""
    result = result_for()
    html_text = report_html(result)
    assert html_text.count("<svg") == 1
    assert "Every trial" in html_text


def test_kept_default_reads_as_such() -> None:
    rows = [
        Row(DEFAULT, "chosen", 3.0, best=True),
        Row(S(1, 1), "raced", 4.0),
        Row(S(2, 1), "raced", 4.5),
        Row(S(1, 2), "screened", 5.0, raced=False, windows=1),
    ]
    result = built(rows, cpus=2)
    lines = text_summary(result).splitlines()
    assert lines[1].startswith("TF default")
    assert lines[1].endswith("chosen (TF default kept)")
    assert not any(line.endswith("  chosen") for line in lines)
    assert any(line.startswith("advice: keep TF's default, spelled out:") for line in lines)
    assert any("the advice is TF's default" in line and "no gain claimed" in line for line in lines)
    assert not any("% lower" in line for line in lines if line.startswith("against"))
    svg = heatmap_svg(result)
    # TF's default has its cell (2/2 on two CPUs), and it is the starred one
    starred = [c for c in drawn_cells(svg) if c.value.startswith("\u2605 ")]
    assert [(c.value, c.tag) for c in starred] == [
        (f"\u2605 {result.baseline.p99_ms:.1f}", "TF default")
    ]
    assert "chosen: TF's default, spelled out" in legend(svg)


def test_no_measurable_gain_and_the_range_within_noise_are_shown() -> None:
    """Every setting as fast as the default: nothing beat the incumbent (TF's default), so it is
    kept with no gain claimed; the text, the heatmap and the report show the range."""
    rows = [
        Row(DEFAULT, "chosen", 10.0, within_noise=True, best=True),
        *(Row(r.setting, "within noise", 10.0, within_noise=True) for r in FLAT[2:]),
        Row(S(2, 1), "within noise", 10.0, within_noise=True),
    ]
    result = built(rows)
    assert result.gain_within_noise
    assert result.kept_default
    text = text_summary(result)
    against = next(line for line in text.splitlines() if line.startswith("against TF's default"))
    assert "no gain claimed" in against
    held = next(line for line in text.splitlines() if line.startswith("in force before:"))
    assert "TF's default (none stored: TF's default): measured best: kept" in held or (
        "kept: nothing beat it beyond noise" in held
    )
    within = next(line for line in text.splitlines() if line.startswith("within noise"))
    assert f"({len(result.near_best)} settings, TF's default among them)" in within
    assert "within noise of the best" in text  # the verdict of the others in the range
    svg = heatmap_svg(result)
    assert "~ within noise" in legend(svg)
    assert any(c.value.endswith(" ~") for c in drawn_cells(svg))  # the others in the range
    assert "one colour: the measurement cannot rank them" in legend(svg)
    assert html.escape(within) in report_html(result)


def test_the_table_says_what_became_of_every_setting_as_the_result_records_it() -> None:
    lines = text_summary(result_for()).splitlines()
    rows = lines[1 : 1 + len(GRID)]
    assert [row.split()[0] for row in rows] == [
        "4/1",
        "TF",
        "2/1",
        "4/2",
        "8/1",
        "1/1",
        "8/2",
        "2/2",
    ]
    verdict = {row.split()[0]: row for row in rows}
    assert verdict["4/1"].endswith("  chosen")
    assert verdict["TF"].endswith("baseline (TF default)")
    assert verdict["2/1"].endswith("within noise of the best")
    assert verdict["4/2"].endswith("raced (3 windows)")
    assert verdict["8/1"].endswith("dropped: clearly worse than the best (3 windows)")
    assert verdict["1/1"].endswith("screened")


def test_the_heatmap_shows_the_medians_the_table_shows() -> None:
    """Both format the result's statistics: the same setting has the same value in each."""
    result = result_for()
    columns = [
        row.replace("TF default", "TF").split()
        for row in text_summary(result).splitlines()[1 : 1 + len(GRID)]
    ]
    p99 = {cells[0]: float(cells[2]) for cells in columns if cells[2] != "-"}
    cells = [label for label, _ in cell_fills(heatmap_svg(result))]
    shown = sorted(v for label in cells if (v := number(label)) is not None)
    # TF's default sits in its own cell (8/8), labelled as such
    default = [label for label in cells if label.startswith("TF default ")]
    assert default == [f"TF default {p99.pop('TF'):.1f}"]
    assert shown == sorted(p99.values())


def test_a_best_with_nothing_near_it_is_not_listed_as_its_own_range() -> None:
    """The range within noise holds the best itself: alone in it, the text says nothing else is
    near it rather than naming the best as within noise of itself."""
    rows = [
        Row(S(2, 1), "chosen", 10.0, within_noise=True, best=True),
        Row(DEFAULT, "baseline", 30.0),
        Row(S(1, 1), "dropped", 20.0),
    ]
    text = text_summary(built(rows))
    assert "no other setting within noise (6%) of the best" in text.splitlines()
    assert "of the best: intra" not in text
    two = text_summary(built([*rows[:2], Row(S(1, 1), "within noise", 10.0, within_noise=True)]))
    assert "within noise (6%) of the best: intra 1-2, inter 1 (2 settings)" in two.splitlines()
