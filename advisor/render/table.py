"""The text table a person reads at a glance: one row per setting, the numbers it was judged by
and what became of it (chosen, baseline, within noise, raced, dropped, screened only, failed), as
the calibration result records them: nothing here recomputes a statistic or a verdict.
"""

from __future__ import annotations

from advisor.models import CalibrationResult, SettingStats
from advisor.render.words import (
    inputs_text,
    number,
    rate_label,
    stop_text,
    summary_lines,
    time_split_line,
)

#: the table's groups, top to bottom: the advice first, failures last (best first within each,
#: as the result orders its settings)
ORDER = ("chosen", "baseline", "within noise", "raced", "dropped", "screened", "failed")


def _windows(s: SettingStats) -> str:
    return f"{s.windows} window{'s' if s.windows != 1 else ''}"


def verdict_text(s: SettingStats) -> str:
    """What became of a setting, in words."""
    if s.verdict == "failed":
        return f"{s.status}: {s.reason}" if s.reason else s.status
    if s.verdict == "chosen":
        text = "chosen (TF default kept)" if s.setting.is_default else "chosen"
    elif s.verdict == "baseline":
        text = "baseline (TF default)" + (", within noise" if s.within_noise else "")
    elif s.verdict == "within noise":
        text = "within noise: the best measured value" if s.best else "within noise of the best"
    elif s.verdict == "raced":
        text = f"raced ({_windows(s)})"
    elif s.verdict == "dropped":
        text = f"dropped: clearly worse than the best ({_windows(s)})"
    else:
        text = "screened"
    return text + (" (unstable)" if s.unstable else "")


def rows(result: CalibrationResult) -> list[SettingStats]:
    """Chosen first, then the baseline, the settings within noise, the raced, the dropped, the
    screened (each best first), failures last."""
    return sorted(result.settings, key=lambda s: ORDER.index(s.verdict))


def text_summary(result: CalibrationResult) -> str:
    """A table read at a glance, then the advice and anything worth knowing about it."""
    rate = rate_label(result.subject)
    header = ("intra/inter", "p50 ms", "p99 ms", rate, "throttled", "preempt/req", "verdict")
    table: list[tuple[str, ...]] = [header]
    for s in rows(result):
        table.append(
            (
                s.setting.label,
                number(s.p50_ms, 2),
                number(s.p99_ms, 2),
                number(s.throughput_rps),
                "-" if s.nr_throttled is None else str(s.nr_throttled),
                number(s.switches_per_request),
                verdict_text(s),
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
    if not result.settings and result.trials:
        lines.append("(a result of an older version: no per-setting statistics recorded)")
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
    if result.stopped is not None:
        lines.append(f"ended: {stop_text(result)}")
    split = time_split_line(result)
    if split is not None:
        lines.append(split)
    lines.append(f"inputs: {inputs_text(result.subject)}")
    lines.extend(f"note: {note}" for note in result.notes)
    return "\n".join(lines)
