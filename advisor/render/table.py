"""The text table a person reads at a glance: one row per setting, its latest numbers and what
became of it (advised, raced, dropped, screened only, failed).
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.calibrate.candidates import tf_default
from advisor.calibrate.objective import ConfigStats, aggregate, label
from advisor.models import (
    CalibrationResult,
    NearBest,
    TrialResult,
)
from advisor.objectives import named
from advisor.render.words import number, summary_lines


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


def setting_key(trial: TrialResult) -> tuple[int | None, int | None]:
    return (trial.intra_op_threads, trial.inter_op_threads)


def _near_key(near: NearBest) -> tuple[int | None, int | None]:
    """A setting within noise, keyed as trials are (the default as None/None)."""
    return (None, None) if near.default else (near.intra, near.inter)


def near_best_keys(result: CalibrationResult) -> set[tuple[int | None, int | None]]:
    """The settings within noise of the best."""
    return {_near_key(n) for n in result.near_best}


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
    ordered = named(result.objective).rank(stats, result.p99_slo_ms)
    near = near_best_keys(result)
    by_key: dict[tuple[int | None, int | None], list[TrialResult]] = {}
    for trial in result.trials:
        by_key.setdefault(setting_key(trial), []).append(trial)

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


def text_summary(result: CalibrationResult) -> str:
    """A table read at a glance, then the advice and anything worth knowing about it."""
    header = ("intra/inter", "p50 ms", "p99 ms", "req/s", "throttled", "preempt/req", "verdict")
    table: list[tuple[str, ...]] = [header]
    for row in rows(result):
        s = row.stats
        table.append(
            (
                row.label,
                number(s.p50_ms if s else None, 2),
                number(s.p99_ms if s else None, 2),
                number(s.throughput_rps if s else None),
                "-" if row.nr_throttled is None else str(row.nr_throttled),
                number(s.switches_per_request if s else None),
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
