"""The tables: from a run's figures (``benchmarks.results``) to what goes in docs/benchmark.md.

A ratio advice/default below 1 is a win for latency and a loss for throughput; the tables say
which. The arithmetic behind every cell (pooled figures, best, targets) is ``benchmarks.figures``.

One module, though over 500 lines: one job, a run's Markdown (each function one table or line of
docs/benchmark.md's LATEST section, sharing the cell formats and the block that replaces it);
the figures they show are computed elsewhere.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

from advisor.models.option_table import DEFAULT_BUDGET_S
from advisor.render.document import Grid
from benchmarks.figures import (
    GRID_BEST_TOLERANCE,
    REPLAY_COST_TARGET,
    SHORT_BUDGET_S,
    TARGETS,
    grid_noise,
    lower_is_better,
    near_best,
    per_60s,
)
from benchmarks.results import (
    Calibration,
    Host,
    Look,
    ReplayCost,
    Rerun,
    Run,
    ScalingRow,
    ScenarioResult,
)


def _grid_noise_of(result: ScenarioResult) -> str:
    settings = result.settings
    advice = result.advice
    best = result.grid_best.setting
    if not advice or advice.setting == best or not {advice.setting, best} <= set(settings):
        return "-"  # nothing to tell apart, or nothing measured to tell it by
    band = grid_noise(settings[advice.setting], settings[best], result.objective)
    return "-" if band is None else f"±{band:.0%}"


def worse_than_default(result: ScenarioResult) -> bool | None:
    """The advice measured worse than TF's default beyond the grid's noise of the two (None:
    no advice, or too few rounds to tell)."""
    settings = result.settings
    advice, default = result.advice, result.default.setting
    if not advice or advice.setting == default:
        return None if not advice else False
    if not {advice.setting, default} <= set(settings):
        return None
    band = grid_noise(settings[advice.setting], settings[default], result.objective)
    if band is None:
        return None
    ratio = advice.value / result.default.value
    return ratio > 1 + band if lower_is_better(result.objective) else ratio < 1 - band


def _again(result: ScenarioResult) -> str:
    """What a second calibration with the first's advice as incumbent wrote: the same data, or
    the setting it moved to."""
    repeat = result.repeat
    if not repeat:
        return "-"
    if repeat.same_data:
        return "same"
    return f"moved ({repeat.advice or 'no advice'})"


def repeat_count(results: Sequence[ScenarioResult]) -> tuple[int, int]:
    """Scenarios whose second calibration (the first's result as incumbent) wrote the same
    ``data``, of those calibrated twice."""
    repeated = [r.repeat for r in results if r.repeat]
    return sum(r.same_data for r in repeated), len(repeated)


def _fmt(value: float | None, objective: str) -> str:
    if value is None:
        return "-"
    return f"{value:.2f} ms" if objective == "latency" else f"{value:.1f} rps"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table as the benchmark's reports print it: the advisor's ``Grid``, laid out as a
    Markdown table whose columns line up in plain text too.

    Not the advisor's ``markdown`` format: that one escapes what Markdown reads as markup (a
    verdict's ``*`` mark, a setting's ``#2``), since its cells come from a cluster, and does not
    pad; these cells are the benchmark's own figures, and the reports of the recorded runs and
    docs/benchmark.md are padded."""
    grid = Grid(tuple(headers), tuple(tuple(row) for row in rows))
    widths = [max(len(line[i]) for line in (grid.columns, *grid.rows)) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(grid.columns), sep, *(line(r) for r in grid.rows)])


def quality_table(results: Sequence[ScenarioResult]) -> str:
    headers = [
        "scenario",
        "better",
        "default",
        "rule",
        "advice",
        "grid best",
        "adv/def",
        "adv/best",
        "A/A",
        "grid noise",
        "first look",
        "held out",
        "again",
    ]
    rows = []
    for r in results:
        obj = r.objective
        rows.append(
            [
                r.scenario,
                "lower" if lower_is_better(obj) else "higher",
                _fmt(r.default.value, obj),
                f"{_fmt(r.rule.value, obj)} ({r.rule.setting})",
                f"{_fmt(r.advice.value, obj)} ({r.advice.setting})" if r.advice else "no advice",
                f"{_fmt(r.grid_best.value, obj)} ({r.grid_best.setting})",
                _ratio(r.ratios.advice_vs_default) + (" (worse)" if worse_than_default(r) else ""),
                _ratio(r.ratios.advice_vs_grid_best),
                _aa_of(r),
                _grid_noise_of(r),
                _look_of(r, r.first_look),
                _look_of(r, r.held_out),
                _again(r),
            ]
        )
    return markdown_table(headers, rows)


def _aa_noise(result: ScenarioResult) -> float | None:
    return None if result.aa is None else result.aa.noise


def _aa_of(result: ScenarioResult) -> str:
    """How far the advice's two arms measured apart; marked where beyond the tolerance."""
    noise = _aa_noise(result)
    if noise is None:
        return "-"
    mark = f" (> {GRID_BEST_TOLERANCE:.0%})" if aa_beyond(result) else ""
    return f"{noise:.0%}{mark}"


def aa_beyond(result: ScenarioResult) -> bool:
    """The advice's A/A noise exceeds the near-best tolerance: the verdict is within the judge's
    own noise (False where no A/A was measured, as in runs recorded before it)."""
    noise = _aa_noise(result)
    return noise is not None and noise > GRID_BEST_TOLERANCE


def aa_summary(results: Sequence[ScenarioResult]) -> str | None:
    """The line under the table: the A/A noise over the scenarios, and where it exceeds the
    tolerance (None when no scenario measured one)."""
    noises = [noise for noise in map(_aa_noise, results) if noise is not None]
    if not noises:
        return None
    beyond = [r.scenario for r in results if aa_beyond(r)]
    head = (
        "A/A: the advice measured as two arms (the same setting in two processes, in the same "
        f"rounds) differed by {statistics.median(noises):.0%} (median), {max(noises):.0%} at most"
    )
    if not beyond:
        return f"{head}; within the {GRID_BEST_TOLERANCE:.0%} tolerance in all {len(noises)}."
    return (
        f"{head}. A/A noise exceeds the {GRID_BEST_TOLERANCE:.0%} tolerance in {len(beyond)} of "
        f"{len(noises)} ({', '.join(beyond)}): there the near-best verdict (marked * under "
        "Targets) is within the judge's own noise, and this run cannot tell it."
    )


def _look_of(result: ScenarioResult, look: Look | None) -> str:
    """adv/best from one look's rounds alone (``first_look``, ``held_out``), and that look's
    best where it was another setting than the final figures'."""
    if not look or look.advice_vs_grid_best is None:
        return "-"
    ratio = _ratio(look.advice_vs_grid_best)
    best = look.grid_best.setting
    return ratio if best == result.grid_best.setting else f"{ratio} ({best})"


def held_out_count(results: Sequence[ScenarioResult]) -> tuple[int, int]:
    """How many scenarios' advice is near the best on the held-out rounds, of those judged."""
    judged = [(r.held_out, r.objective) for r in results if r.held_out]
    near = sum(
        near_best(look.advice_value, look.grid_best.value, objective) for look, objective in judged
    )
    return near, len(judged)


def cost_table(results: Sequence[ScenarioResult]) -> str:
    """Cost of the default (fork) calibration, and beside it the same calibration with every
    trial spawned (``--trial-mode spawn``), run in the same scenario, same cgroup, same run."""
    headers = [
        "scenario",
        "calibrate s",
        "ended",
        "grid s",
        "cal/grid",
        "trials ok",
        "ok per 60 s",
        "peak RSS MiB",
        "spawn: trials ok",
        "spawn: adv/best",
        f"{SHORT_BUDGET_S:g} s: adv/best",
    ]
    rows = []
    for r in results:
        cal = r.calibrate
        spawn = r.spawn or Rerun()
        short = r.short or Rerun()
        rows.append(
            [
                r.scenario,
                f"{cal.wall_s:.1f}" if cal.wall_s else "-",
                _ended(cal),
                f"{r.grid_time.total_s:.1f}",
                _ratio(r.calibrate_vs_grid),
                "-" if cal.ok_trials is None else str(cal.ok_trials),
                _per_minute(cal.ok_trials, cal.wall_s),
                f"{cal.peak_tree_rss_mib:.0f}" if cal.peak_tree_rss_mib else "-",
                "-" if spawn.ok_trials is None else str(spawn.ok_trials),
                _ratio(spawn.advice_vs_grid_best),
                _ratio(short.advice_vs_grid_best),
            ]
        )
    return markdown_table(headers, rows)


def settle_line(results: Sequence[ScenarioResult]) -> str | None:
    """``time to settle: median 38.2 s of a 45 s budget (0.85 of it); 5 of 6 settled, the rest
    spent the budget``: the stopping rule's target (under a third of the Job's 300 s, under two
    thirds of calibrate's 45 s). None for runs before the rule."""
    ended = [
        (r.calibrate.reported_elapsed_s, r.calibrate.stopped, _budget_of(r.calibrate))
        for r in results
        if r.calibrate.stopped is not None and r.calibrate.reported_elapsed_s is not None
    ]
    if not ended:
        return None
    elapsed = statistics.median(e for e, _, _ in ended)
    budgets = sorted({b for _, _, b in ended if b is not None})
    settled = sum(1 for _, stopped, _ in ended if stopped == "settled")
    of = ""
    if len(budgets) == 1:
        of = f" of a {budgets[0]:g} s budget ({elapsed / budgets[0]:.2f} of it)"
    return (
        f"time to settle: median {elapsed:.1f} s{of}; {settled} of {len(ended)} settled, the "
        "rest spent the budget (`ended`: why, and the seconds the calibration says it took)."
    )


def _budget_of(cal: Calibration) -> float | None:
    """The budget a calibration ran with: its ``--budget``, else the advisor's default."""
    if "--budget" in cal.argv:
        return float(cal.argv[cal.argv.index("--budget") + 1])
    return DEFAULT_BUDGET_S


def _ended(cal: Calibration) -> str:
    """``settled 38.2`` or ``budget 45.0``: why the calibration ended and the seconds it says it
    took (its own ``elapsed_s``: from the sweep's start, before the process's exit); ``-`` for
    a run before the stopping rule."""
    if cal.stopped is None or cal.reported_elapsed_s is None:
        return "-"
    return f"{cal.stopped} {cal.reported_elapsed_s:.1f}"


def _per_minute(ok_trials: int | None, wall_s: float | None) -> str:
    rate = per_60s(ok_trials, wall_s)
    return "-" if rate is None else f"{rate:.1f}"


def _quota_name(quota: float | None) -> str:
    return "none" if quota is None else f"{quota:g} CPU"


def budget_table(results: Sequence[ScenarioResult]) -> str | None:
    """The default budget against the short one, per quota level, on the scenarios where both ran:
    how often each advice was near the grid's best (the same grid judges both), and what each cost.
    None when no short sweep ran."""
    paired = [r for r in results if r.short and r.calibrate_vs_grid]
    if not paired:
        return None
    headers = [
        "quota",
        "scenarios",
        "default budget: near best",
        f"{SHORT_BUDGET_S:g} s: near best",
        "default budget: cal/grid",
        f"{SHORT_BUDGET_S:g} s: cal/grid",
        "default budget: ok per 60 s",
        f"{SHORT_BUDGET_S:g} s: ok per 60 s",
    ]
    levels = [
        (_quota_name(q), [r for r in paired if r.quota_cpus == q])
        for q in dict.fromkeys(r.quota_cpus for r in paired)
    ]
    if len(levels) > 1:
        levels.append(("all", paired))
    rows = [_budget_row(name, here) for name, here in levels]
    return markdown_table(headers, rows)


def _budget_row(name: str, here: Sequence[ScenarioResult]) -> list[str]:
    """One quota level of ``budget_table``: every scenario here has a short sweep and a cal/grid."""
    shorts = [r.short or Rerun() for r in here]

    def judged(r: ScenarioResult, value: float | None) -> bool:
        return near_best(value, r.grid_best.value, r.objective)

    near = [judged(r, r.advice.value if r.advice else None) for r in here]
    short = [judged(r, s.advice_value) for r, s in zip(here, shorts, strict=True)]
    short_share = [s.wall_s / r.grid_time.total_s for r, s in zip(here, shorts, strict=True)]
    return [
        name,
        str(len(here)),
        f"{sum(near)} of {len(here)}",
        f"{sum(short)} of {len(here)}",
        _ratio(statistics.median(r.calibrate_vs_grid or 0.0 for r in here)),
        _ratio(statistics.median(short_share)),
        _median_rate(r.calibrate for r in here),
        _median_rate(shorts),
    ]


def _median_rate(runs: Iterable[Calibration | Rerun]) -> str:
    rates = [per_60s(run.ok_trials, run.wall_s) for run in runs]
    known = [rate for rate in rates if rate is not None]
    return f"{statistics.median(known):.1f}" if known else "-"


def targets_table(results: Sequence[ScenarioResult]) -> str:
    headers = ["scenario", *TARGETS]
    rows = [
        [
            r.scenario,
            *(
                # "-": a target added after the run was recorded
                r.targets.get(k, "-") + (" *" if k == "near_best" and aa_beyond(r) else "")
                for k in TARGETS
            ),
        ]
        for r in results
    ]
    legend = "\n".join(f"- {k}: {text}" for k, text in TARGETS.items())
    if any(aa_beyond(r) for r in results):
        legend += (
            f"\n- *: the advice's A/A noise exceeds the {GRID_BEST_TOLERANCE:.0%} tolerance: "
            "this near-best verdict is within the judge's own noise"
        )
    return markdown_table(headers, rows) + "\n\n" + legend


def inputs_table(results: Sequence[ScenarioResult]) -> str:
    """What each calibration says it fed the model: the warmup file (how many requests, which
    batch sizes), a requests file, or synthesis; and the inputs' dtypes and shapes."""
    headers = ["scenario", "inputs from", "requests", "batch sizes", "inputs"]
    rows = []
    for r in results:
        subject = r.calibrate.its_own_subject or {}
        source = subject.get("inputs_source") or {}
        inputs = subject.get("inputs") or {}
        sizes = source.get("batch_sizes")
        rows.append(
            [
                r.scenario,
                "- (failed)" if r.calibrate.exit_code != 0 else source.get("kind", "not said"),
                str(source.get("requests") or "-"),
                "-" if not sizes else "-".join(str(b) for b in dict.fromkeys(sizes)),
                ", ".join(f"{k} {v}" for k, v in inputs.items()) or "-",
            ]
        )
    return markdown_table(headers, rows)


def replay_cost_table(cost: ReplayCost) -> str:
    """The two calibrations of one model, replaying its warmup requests and on synthesised
    inputs of the same shapes, and what each measured per minute."""
    headers = ["inputs", "exit", "calibrate s", "trials ok", "ok per 60 s", "inputs it reports"]
    rows = []
    for name, run in (("warmup replay", cost.replay), ("synthesised", cost.synthesised)):
        seen = (run.its_own_subject or {}).get("inputs") if run.exit_code == 0 else None
        rows.append(
            [
                name,
                "-" if run.exit_code is None else str(run.exit_code),
                f"{run.wall_s:.1f}" if run.wall_s else "-",
                "-" if run.ok_trials is None else str(run.ok_trials),
                _per_minute(run.ok_trials, run.wall_s if run.exit_code == 0 else None),
                ", ".join(f"{k} {v}" for k, v in seen.items()) if seen else "-",
            ]
        )
    quota = _quota_name(cost.quota_cpus)
    ratio = "-" if cost.ratio is None else f"{cost.ratio:.2f}"
    lines = [
        f"{cost.subject}, {cost.requests} warmup requests of batch {cost.batch_size}, "
        f"quota {quota}: replay / synthesised = {ratio}, target {cost.target} "
        f"({REPLAY_COST_TARGET}).",
    ]
    for name, run in (("warmup replay", cost.replay), ("synthesised", cost.synthesised)):
        if run.error:
            lines.append(f"{name} calibration failed: {run.error}")
    return markdown_table(headers, rows) + "\n\n" + "\n".join(lines)


def scaling_table(rows: Sequence[ScalingRow]) -> str:
    headers = [
        "start-up",
        "cpus",
        "quota",
        "settings",
        "measured",
        "trials",
        "race rounds",
        "simulated s",
        "advice",
        "model best",
        "advice/best p99",
        "default/best p99",
    ]
    body = [
        [
            f"{r.launcher} {r.overhead_s:g} s",
            str(r.cpus),
            "-" if r.quota_cpus is None else f"{r.quota_cpus:g}",
            str(r.candidates),
            str(r.measured),
            str(r.trials),
            str(r.race_rounds),
            f"{r.simulated_s:.1f}",
            r.advice + (" (default)" if r.kept_default else ""),
            r.model_best,
            f"{r.advice_vs_best:.2f}",
            f"{r.default_vs_best:.2f}",
        ]
        for r in rows
    ]
    return markdown_table(headers, body)


def machine_line(host: Host | None) -> str:
    """One line naming the machine of a run's ``host`` section (a run recorded before machines
    were named says so, with the little it has)."""
    machine = None if host is None else host.machine
    load = None if host is None else host.loadavg_start
    at_start = "" if not load else f"; 1-min load average {load[0]:.2f} at start"
    if not machine:
        cpus = None if host is None else host.affinity
        counted = "" if cpus is None else f" ({cpus} CPUs in the affinity mask)"
        return f"machine: not recorded in this run{counted}{at_start}"
    cores = machine.physical_cores
    cgroup = machine.cgroup_version
    parts = [
        machine.cpu_model or "CPU model unknown",
        f"{machine.logical_cpus} logical CPUs, {machine.affinity_cpus} in the "
        "affinity mask" + ("" if cores is None else f" ({cores} cores)"),
        f"kernel {machine.kernel}",
        "cgroup unknown" if cgroup is None else f"cgroup v{cgroup}",
        f"Python {machine.python}",
        f"TensorFlow {machine.tensorflow or 'not installed'}",
    ]
    if machine.commit:
        parts.append(f"advisor at {machine.commit}")
    return "machine: " + ", ".join(parts) + at_start


LATEST_START = "<!-- LATEST -->"
LATEST_END = "<!-- /LATEST -->"


def latest_block(report: Run, text: str) -> str:
    """The docs section for one run: the exact command, when, how loaded the machine was, tables."""
    host = report.host
    if host is None or report.wall_s is None:
        raise ValueError("a run's docs section needs its host and its wall time")
    start, end = host.loadavg_start[0], (host.loadavg_end or [float("nan")])[0]
    return "\n".join(
        [
            f"Command: `{report.command}` (run {report.started_utc}, "
            f"total {report.wall_s:.0f} s, {host.affinity} CPUs in the affinity mask, "
            f"1-min load average {start:.2f} at start and {end:.2f} at end).",
            "",
            text,
        ]
    )


def replace_latest(doc: str, block: str) -> str:
    """``doc`` with the text between the LATEST markers replaced by ``block``."""
    head, sep, rest = doc.partition(LATEST_START)
    _, sep2, tail = rest.partition(LATEST_END)
    if not sep or not sep2:
        raise ValueError(f"no {LATEST_START} ... {LATEST_END} section to replace")
    return f"{head}{LATEST_START}\n{block}\n{LATEST_END}{tail}"


def render(report: Run) -> str:
    """The whole report as Markdown-compatible text (it is pasted into docs/benchmark.md)."""
    results = report.scenarios
    family = "" if report.family in {None, "shapes"} else f", {report.family} family"
    parts = [f"## Advice quality ({report.mode}{family}, {report.started_utc})"]
    parts += ["", machine_line(report.host)]
    parts += [f"note: {n}" for n in report.notes]
    if results:
        parts += ["", "### Objective per setting", quality_table(results)]
        parts += [
            "",
            "latency = pooled p99 ms (lower is better); throughput = req/s (higher is "
            "better). adv/def < 1 wins for latency, > 1 wins for throughput; adv/best is 1.00"
            " at the grid's best. grid noise: two standard errors of the difference between the"
            " advice's and the best's figures, from the spread of their rounds; an adv/best"
            " within it is not told from 1.00 by this grid. A/A: the advice's setting measured"
            " as two arms (two processes, the same rounds), how far apart they came out: the"
            " judge's own noise on the figure adv/best rests on. TF's default spelled out (intra"
            " = inter = the affinity count) shares the default's windows. first look: adv/best"
            " from the first rounds alone (with that look's best where it was another setting);"
            " then the advice"
            " and the top grid settings were measured more rounds (second look), and the other"
            " columns pool all of them. held out: adv/best from the second look's rounds alone,"
            " so the best is not picked by the rounds that measure it (not a target: a second"
            " view of the same verdict).",
        ]
        same, repeated = repeat_count(results)
        if repeated:
            parts += [
                "",
                f"again: each scenario calibrated a second time with the first one's result as "
                f"the incumbent (`calibrate --incumbent`, as the next scheduled run would race "
                f"the ConfigMap the first wrote) wrote the same data in {same} of {repeated}.",
            ]
        worse = [r.scenario for r in results if worse_than_default(r)]
        parts += [
            "",
            "advice worse than TF's default beyond the grid's noise of the two (adv/def "
            f"marked 'worse'): {len(worse)} of {len(results)}"
            + (f" ({', '.join(worse)})" if worse else "")
            + ".",
        ]
        aa_line = aa_summary(results)
        if aa_line is not None:
            parts += ["", aa_line]
        near, judged = held_out_count(results)
        if judged:
            parts += [
                "",
                f"held out: the advice within {GRID_BEST_TOLERANCE:.0%} of the best in {near} of"
                f" {judged} scenarios (the target's verdict: "
                f"{sum(r.targets['near_best'] == 'PASS' for r in results)} of {len(results)}).",
            ]
        parts += ["", "### Cost", cost_table(results)]
        settle = settle_line(results)
        if settle is not None:
            parts += ["", settle]
        parts += ["", "### Targets", targets_table(results)]
        if report.family == "serving":
            parts += ["", "### Inputs each calibration measured on", inputs_table(results)]
        budgets = budget_table(results)
        if budgets is not None:
            parts += [
                "",
                f"### The default budget against {SHORT_BUDGET_S:g} s (same scenarios, same grid)",
                budgets,
                "",
                "near best: advice within "
                f"{GRID_BEST_TOLERANCE:.0%} of the grid's best; cal/grid: the median calibrate "
                "wall over the grid's time.",
            ]
    if report.replay_cost:
        parts += [
            "",
            "### Replaying warmup requests against synthesised inputs",
            replay_cost_table(report.replay_cost),
        ]
    if report.scaling:
        parts += [
            "",
            "### Simulated scaling (real search, synthetic cost model, fake clock)",
            scaling_table(report.scaling),
        ]
    for r in results:
        if r.calibrate.error:
            parts.append(f"calibrate failed in {r.scenario}: {r.calibrate.error}")
    for failure in report.failures:
        parts.append(f"FAILED: {failure}")
    return "\n".join(parts)
