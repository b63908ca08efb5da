"""Figures, targets and the tables: from raw measurements to what goes in docs/benchmark.md.

Pure functions over plain data, so the arithmetic (pooled percentiles, ratio directions, PASS/MISS)
is tested without running anything. What "best" means is the advisor's (``advisor.objectives``):
latency ranks by the p99 in ms, lower is better; throughput by completed requests per second,
higher is better. A ratio advice/default below 1 is a win for latency and a loss for throughput;
the tables say which. A percentile is the advisor's too (``advisor.calibrate.percentile``, nearest
rank), so the judge's p99 and a trial's are the same statistic.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from advisor.calibrate.percentile import percentile
from advisor.calibrate.statistics import coefficient_of_variation
from advisor.objectives import Measure, named

#: the advice's quality targets (measured and reported, never asserted, never tuned toward)
P99_VS_DEFAULT_MAX = 0.60
GRID_BEST_TOLERANCE = 0.05
CALIBRATE_MAX_S = 60.0
CALIBRATE_MAX_GRID_SHARE = 0.25
RSS_MAX_MIB = 1.5 * 1024
MIN_OK_TRIALS_PER_60S = 30
SHORT_BUDGET_S = 30.0

TARGETS = {
    "1cpu_p99": f"1-CPU latency: advice p99 <= {P99_VS_DEFAULT_MAX:.2f} x default p99",
    "near_best": f"advice within {GRID_BEST_TOLERANCE:.0%} of grid best (its objective)",
    "cal_60s": f"calibrate wall <= {CALIBRATE_MAX_S:.0f} s",
    "cal_25pct": f"calibrate wall <= {CALIBRATE_MAX_GRID_SHARE:.0%} of grid time",
    "rss": f"peak RSS of the calibrate tree <= {RSS_MAX_MIB / 1024:.1f} GiB (builtin)",
    "trials_60s": f">= {MIN_OK_TRIALS_PER_60S} measured (ok) trials per 60 s "
    "(builtin, 1-CPU quota, latency)",
    "near_best_30s": f"a {SHORT_BUDGET_S:g} s sweep's advice within {GRID_BEST_TOLERANCE:.0%} of "
    "grid best (no quota, latency)",
}

__all__ = ["percentile"]  # re-exported: the judge's percentile is the advisor's


@dataclass(frozen=True)
class Figures:
    """One setting's pooled figures as the advisor's objectives read them. ``threads`` is 0 for
    all, so settings an objective ranks equal keep the order they were given in (the grid's:
    fewer threads first)."""

    p50_ms: float | None = None
    p99_ms: float | None = None
    throughput_rps: float | None = None
    threads: int = 0

    @classmethod
    def of(cls, stats: Mapping[str, Any]) -> Figures:
        return cls(stats.get("p50_ms"), stats.get("p99_ms"), stats.get("throughput_rps"))

    @classmethod
    def alone(cls, value: float) -> Figures:
        """A bare figure, read by whichever measure asks (for comparing two of them)."""
        return cls(value, value, value)


def measure_of(objective: str) -> Measure:
    """The measure the advisor ranks ``objective``'s settings by (p99 ms, req/s)."""
    return named(objective).measure()


def pool_rounds(samples: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One setting's rounds pooled: percentiles over every latency, throughput over all windows."""
    rounds = list(samples)
    latencies = sorted(x for r in rounds for x in r["latencies_ms"])
    completed = sum(int(r["completed"]) for r in rounds)
    window = sum(float(r["window_s"]) for r in rounds)
    per_round_p99 = [percentile(sorted(r["latencies_ms"]), 99) for r in rounds if r["latencies_ms"]]
    per_round_rps = [int(r["completed"]) / float(r["window_s"]) for r in rounds]
    return {
        "p50_ms": round(percentile(latencies, 50), 3),
        "p99_ms": round(percentile(latencies, 99), 3),
        "throughput_rps": round(completed / window, 2),
        "requests": len(latencies),
        "rounds": len(rounds),
        "round_p99_ms": [round(x, 3) for x in per_round_p99],
        "round_rps": [round(x, 2) for x in per_round_rps],
        "cpu_s": round(sum(float(r.get("cpu_s", 0.0)) for r in rounds), 3),
        "nr_throttled": sum(int(r.get("nr_throttled", 0)) for r in rounds),
    }


def objective_value(stats: Mapping[str, Any], objective: str) -> float:
    return measure_of(objective).value(Figures.of(stats))


def lower_is_better(objective: str) -> bool:
    return named(objective).lower_is_better()


def ranked(
    stats_by_key: Mapping[str, Mapping[str, Any]], keys: Iterable[str], objective: str
) -> list[str]:
    """``keys`` best first for ``objective``, by the advisor's measure of it; ties keep their
    order."""
    measure = measure_of(objective)
    return sorted(keys, key=lambda key: measure.key(Figures.of(stats_by_key[key])))


def best_of(
    stats_by_key: Mapping[str, Mapping[str, Any]], keys: Iterable[str], objective: str
) -> tuple[str, float]:
    """The best of ``keys`` for ``objective``; ties go to the first key (fewer threads first)."""
    key = ranked(stats_by_key, keys, objective)[0]
    return key, objective_value(stats_by_key[key], objective)


def contenders(
    stats_by_key: dict[str, dict[str, Any]],
    grid_keys: Iterable[str],
    objective: str,
    top: int,
    also: Iterable[str] = (),
) -> list[str]:
    """What the judge looks at again: the ``top`` best grid settings and every setting in
    ``also`` (the advice), once each, best first.

    Only these can change a near-best verdict: the advice's figure, and the figure it is held
    against. A setting outside the top few would need to beat all of them on a second look.
    """
    ordered = ranked(stats_by_key, grid_keys, objective)
    return list(dict.fromkeys([*ordered[:top], *also]))


def within_of_best(advice: float, best: float, objective: str, tolerance: float) -> bool:
    """``advice`` on the good side of ``best`` loosened by ``tolerance``, as the objective's
    measure compares."""
    return measure_of(objective).within(Figures.alone(advice), best, tolerance)


#: standard errors of the difference between two grid figures that count as "told apart"
GRID_Z = 2.0


def near_best(value: float | None, best: float, objective: str) -> bool:
    """An advice's grid value within the target's tolerance of the grid's best; no advice is not."""
    return value is not None and within_of_best(value, best, objective, GRID_BEST_TOLERANCE)


def done_when_short(quota_cpus: float | None, objective: str) -> bool:
    """The scenarios the done-when's 30 s sweep is about: no quota, latency."""
    return quota_cpus is None and objective == "latency"


def grid_noise(one: dict[str, Any], other: dict[str, Any], objective: str) -> float | None:
    """How far apart two settings' grid figures can be by the grid's own noise, as a fraction.

    Each figure pools its rounds; its relative standard error is estimated from the spread of
    its per-round figures (stdev / mean / sqrt(rounds)). Two figures closer than ``GRID_Z``
    standard errors of their difference cannot be told apart by this grid, so an adv/best inside
    that band is a 1.00 as far as this run can say. None without at least two rounds each.
    """
    key = "round_p99_ms" if lower_is_better(objective) else "round_rps"
    errors = []
    for stats in (one, other):
        rounds = [float(v) for v in stats.get(key) or []]
        cv = coefficient_of_variation(rounds)
        if cv is None:
            return None
        errors.append(cv / math.sqrt(len(rounds)))
    return GRID_Z * math.hypot(*errors)


def _grid_noise_of(result: dict[str, Any]) -> str:
    settings = result.get("settings") or {}
    advice = result.get("advice")
    best = result["grid_best"]["setting"]
    if not advice or advice["setting"] == best or not {advice["setting"], best} <= set(settings):
        return "-"  # nothing to tell apart, or nothing measured to tell it by
    band = grid_noise(settings[advice["setting"]], settings[best], result["objective"])
    return "-" if band is None else f"±{band:.0%}"


def worse_than_default(result: dict[str, Any]) -> bool | None:
    """The advice measured worse than TF's default beyond the grid's noise of the two (None:
    no advice, or too few rounds to tell)."""
    settings = result.get("settings") or {}
    advice, default = result.get("advice"), result["default"]["setting"]
    if not advice or advice["setting"] == default:
        return None if not advice else False
    if not {advice["setting"], default} <= set(settings):
        return None
    band = grid_noise(settings[advice["setting"]], settings[default], result["objective"])
    if band is None:
        return None
    ratio = advice["value"] / result["default"]["value"]
    return ratio > 1 + band if lower_is_better(result["objective"]) else ratio < 1 - band


def _again(result: dict[str, Any]) -> str:
    """What a second calibration with the first's advice as incumbent wrote: the same data, or
    the setting it moved to."""
    repeat = result.get("repeat")
    if not repeat:
        return "-"
    if repeat.get("same_data"):
        return "same"
    return f"moved ({repeat.get('advice') or 'no advice'})"


def repeat_count(results: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """Scenarios whose second calibration (the first's result as incumbent) wrote the same
    ``data``, of those calibrated twice."""
    repeated = [r for r in results if r.get("repeat")]
    return sum(bool(r["repeat"].get("same_data")) for r in repeated), len(repeated)


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def targets(
    scenario: dict[str, Any],
    *,
    advice: float | None,
    default: float,
    best: float,
    calibrate_wall_s: float | None,
    grid_s: float,
    peak_rss_mib: float | None,
    ok_trials_per_60s: float | None = None,
    short_advice: float | None = None,
    short_ran: bool = False,
) -> dict[str, str]:
    """PASS / MISS / n/a for each target in ``TARGETS`` (n/a: not this scenario's, or no advice).

    ``short_advice``: the grid's value of the advice of the short-budget sweep, when one ran
    (``short_ran``; no advice from it is a miss). Its target is the done-when's, the no-quota
    latency scenarios; elsewhere a short sweep is compared in ``budget_table``."""
    objective = scenario["objective"]
    has_advice = advice is not None
    one_cpu = scenario["quota_cpus"] == 1.0 and objective == "latency"
    builtin_one_cpu = one_cpu and scenario["workload"] == "builtin"
    return {
        "1cpu_p99": _verdict(
            (advice is not None and advice <= P99_VS_DEFAULT_MAX * default) if one_cpu else None
        ),
        "near_best": _verdict(near_best(advice, best, objective)),
        "cal_60s": _verdict(
            calibrate_wall_s <= CALIBRATE_MAX_S if calibrate_wall_s and has_advice else False
        ),
        "cal_25pct": _verdict(
            calibrate_wall_s <= CALIBRATE_MAX_GRID_SHARE * grid_s
            if calibrate_wall_s and has_advice
            else False
        ),
        "rss": _verdict(
            (peak_rss_mib is not None and peak_rss_mib <= RSS_MAX_MIB)
            if scenario["workload"] == "builtin"
            else None
        ),
        "trials_60s": _verdict(
            (ok_trials_per_60s is not None and ok_trials_per_60s >= MIN_OK_TRIALS_PER_60S)
            if builtin_one_cpu
            else None
        ),
        "near_best_30s": _verdict(
            near_best(short_advice, best, objective)
            if short_ran and done_when_short(scenario["quota_cpus"], objective)
            else None
        ),
    }


def _fmt(value: float | None, objective: str) -> str:
    if value is None:
        return "-"
    return f"{value:.2f} ms" if objective == "latency" else f"{value:.1f} rps"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), sep, *(line(r) for r in rows)])


def quality_table(results: Sequence[dict[str, Any]]) -> str:
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
        obj = r["objective"]
        rows.append(
            [
                r["scenario"],
                "lower" if lower_is_better(obj) else "higher",
                _fmt(r["default"]["value"], obj),
                f"{_fmt(r['rule']['value'], obj)} ({r['rule']['setting']})",
                f"{_fmt(r['advice']['value'], obj)} ({r['advice']['setting']})"
                if r["advice"]
                else "no advice",
                f"{_fmt(r['grid_best']['value'], obj)} ({r['grid_best']['setting']})",
                _ratio(r["ratios"]["advice_vs_default"])
                + (" (worse)" if worse_than_default(r) else ""),
                _ratio(r["ratios"]["advice_vs_grid_best"]),
                _aa_of(r),
                _grid_noise_of(r),
                _look_of(r, "first_look"),
                _look_of(r, "held_out"),
                _again(r),
            ]
        )
    return markdown_table(headers, rows)


def _aa_of(result: dict[str, Any]) -> str:
    """How far the advice's two arms measured apart; marked where beyond the tolerance."""
    aa = result.get("aa")
    if not aa or aa.get("noise") is None:
        return "-"
    mark = f" (> {GRID_BEST_TOLERANCE:.0%})" if aa_beyond(result) else ""
    return f"{aa['noise']:.0%}{mark}"


def aa_beyond(result: dict[str, Any]) -> bool:
    """The advice's A/A noise exceeds the near-best tolerance: the verdict is within the judge's
    own noise (False where no A/A was measured, as in runs recorded before it)."""
    aa = result.get("aa") or {}
    return aa.get("noise") is not None and aa["noise"] > GRID_BEST_TOLERANCE


def aa_summary(results: Sequence[dict[str, Any]]) -> str | None:
    """The line under the table: the A/A noise over the scenarios, and where it exceeds the
    tolerance (None when no scenario measured one)."""
    noises = [r["aa"]["noise"] for r in results if (r.get("aa") or {}).get("noise") is not None]
    if not noises:
        return None
    beyond = [r["scenario"] for r in results if aa_beyond(r)]
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


def _look_of(result: dict[str, Any], look: str) -> str:
    """adv/best from one look's rounds alone (``first_look``, ``held_out``), and that look's
    best where it was another setting than the final figures'."""
    figures = result.get(look)
    if not figures or figures["advice_vs_grid_best"] is None:
        return "-"
    ratio = _ratio(figures["advice_vs_grid_best"])
    best = figures["grid_best"]["setting"]
    return ratio if best == result["grid_best"]["setting"] else f"{ratio} ({best})"


def held_out_count(results: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """How many scenarios' advice is near the best on the held-out rounds, of those judged."""
    judged = [r for r in results if r.get("held_out")]
    near = sum(
        near_best(
            r["held_out"]["advice_value"], r["held_out"]["grid_best"]["value"], r["objective"]
        )
        for r in judged
    )
    return near, len(judged)


def cost_table(results: Sequence[dict[str, Any]]) -> str:
    """Cost of the default (fork) calibration, and beside it the same calibration with every
    trial spawned (``--trial-mode spawn``), run in the same scenario, same cgroup, same run."""
    headers = [
        "scenario",
        "calibrate s",
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
        cal = r["calibrate"]
        spawn = r.get("spawn") or {}
        short = r.get("short") or {}
        rows.append(
            [
                r["scenario"],
                f"{cal['wall_s']:.1f}" if cal["wall_s"] else "-",
                f"{r['grid_time']['total_s']:.1f}",
                _ratio(r["calibrate_vs_grid"]),
                "-" if cal.get("ok_trials") is None else str(cal["ok_trials"]),
                _per_minute(cal.get("ok_trials"), cal["wall_s"]),
                f"{cal['peak_tree_rss_mib']:.0f}" if cal["peak_tree_rss_mib"] else "-",
                "-" if spawn.get("ok_trials") is None else str(spawn["ok_trials"]),
                _ratio(spawn.get("advice_vs_grid_best")),
                _ratio(short.get("advice_vs_grid_best")),
            ]
        )
    return markdown_table(headers, rows)


def per_60s(ok_trials: int | None, wall_s: float | None) -> float | None:
    """Measured (ok) trials per 60 s of calibration wall time."""
    if ok_trials is None or not wall_s:
        return None
    return ok_trials * 60.0 / wall_s


def _per_minute(ok_trials: int | None, wall_s: float | None) -> str:
    rate = per_60s(ok_trials, wall_s)
    return "-" if rate is None else f"{rate:.1f}"


def _quota_name(quota: float | None) -> str:
    return "none" if quota is None else f"{quota:g} CPU"


def budget_table(results: Sequence[dict[str, Any]]) -> str | None:
    """The default budget against the short one, per quota level, on the scenarios where both ran:
    how often each advice was near the grid's best (the same grid judges both), and what each cost.
    None when no short sweep ran."""
    paired = [r for r in results if r.get("short") and r.get("calibrate_vs_grid")]
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
        (_quota_name(q), [r for r in paired if r["quota_cpus"] == q])
        for q in dict.fromkeys(r["quota_cpus"] for r in paired)
    ]
    if len(levels) > 1:
        levels.append(("all", paired))
    rows = [_budget_row(name, here) for name, here in levels]
    return markdown_table(headers, rows)


def _budget_row(name: str, here: Sequence[dict[str, Any]]) -> list[str]:
    def judged(r: dict[str, Any], value: float | None) -> bool:
        return near_best(value, r["grid_best"]["value"], r["objective"])

    near = [judged(r, r["advice"]["value"] if r["advice"] else None) for r in here]
    short = [judged(r, r["short"].get("advice_value")) for r in here]
    short_share = [r["short"]["wall_s"] / r["grid_time"]["total_s"] for r in here]
    return [
        name,
        str(len(here)),
        f"{sum(near)} of {len(here)}",
        f"{sum(short)} of {len(here)}",
        _ratio(statistics.median(r["calibrate_vs_grid"] for r in here)),
        _ratio(statistics.median(short_share)),
        _median_rate(r["calibrate"] for r in here),
        _median_rate(r["short"] for r in here),
    ]


def _median_rate(runs: Iterable[dict[str, Any]]) -> str:
    rates = [per_60s(run.get("ok_trials"), run.get("wall_s")) for run in runs]
    known = [rate for rate in rates if rate is not None]
    return f"{statistics.median(known):.1f}" if known else "-"


def targets_table(results: Sequence[dict[str, Any]]) -> str:
    headers = ["scenario", *TARGETS]
    rows = [
        [
            r["scenario"],
            *(
                # "-": a target added after the run was recorded
                r["targets"].get(k, "-") + (" *" if k == "near_best" and aa_beyond(r) else "")
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


def scaling_table(rows: Sequence[dict[str, Any]]) -> str:
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
            f"{r['launcher']} {r['overhead_s']:g} s",
            str(r["cpus"]),
            "-" if r["quota_cpus"] is None else f"{r['quota_cpus']:g}",
            str(r["candidates"]),
            str(r["measured"]),
            str(r["trials"]),
            str(r["race_rounds"]),
            f"{r['simulated_s']:.1f}",
            r["advice"] + (" (default)" if r["kept_default"] else ""),
            r["model_best"],
            f"{r['advice_vs_best']:.2f}",
            f"{r['default_vs_best']:.2f}",
        ]
        for r in rows
    ]
    return markdown_table(headers, body)


def machine_line(host: Mapping[str, Any]) -> str:
    """One line naming the machine of a run's ``host`` section (a run recorded before machines
    were named says so, with the little it has)."""
    machine = host.get("machine")
    load = host.get("loadavg_start")
    at_start = "" if not load else f"; 1-min load average {load[0]:.2f} at start"
    if not machine:
        cpus = host.get("affinity")
        counted = "" if cpus is None else f" ({cpus} CPUs in the affinity mask)"
        return f"machine: not recorded in this run{counted}{at_start}"
    cores = machine.get("physical_cores")
    cgroup = machine.get("cgroup_version")
    parts = [
        machine.get("cpu_model") or "CPU model unknown",
        f"{machine.get('logical_cpus')} logical CPUs, {machine.get('affinity_cpus')} in the "
        "affinity mask" + ("" if cores is None else f" ({cores} cores)"),
        f"kernel {machine.get('kernel')}",
        "cgroup unknown" if cgroup is None else f"cgroup v{cgroup}",
        f"Python {machine.get('python')}",
        f"TensorFlow {machine.get('tensorflow') or 'not installed'}",
    ]
    if machine.get("commit"):
        parts.append(f"advisor at {machine['commit']}")
    return "machine: " + ", ".join(parts) + at_start


LATEST_START = "<!-- LATEST -->"
LATEST_END = "<!-- /LATEST -->"


def latest_block(report: dict[str, Any], text: str) -> str:
    """The docs section for one run: the exact command, when, how loaded the machine was, tables."""
    host = report["host"]
    start, end = host["loadavg_start"][0], host.get("loadavg_end", [float("nan")])[0]
    return "\n".join(
        [
            f"Command: `{report['command']}` (run {report['started_utc']}, "
            f"total {report['wall_s']:.0f} s, {host['affinity']} CPUs in the affinity mask, "
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


def render(report: dict[str, Any]) -> str:
    """The whole report as Markdown-compatible text (it is pasted into docs/benchmark.md)."""
    results = report["scenarios"]
    parts = [f"## Advice quality ({report['mode']}, {report['started_utc']})"]
    parts += ["", machine_line(report.get("host") or {})]
    parts += [f"note: {n}" for n in report["notes"]]
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
        worse = [r["scenario"] for r in results if worse_than_default(r)]
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
                f"{sum(r['targets']['near_best'] == 'PASS' for r in results)} of {len(results)}).",
            ]
        parts += ["", "### Cost", cost_table(results)]
        parts += ["", "### Targets", targets_table(results)]
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
    if report.get("scaling"):
        parts += [
            "",
            "### Simulated scaling (real search, synthetic cost model, fake clock)",
            scaling_table(report["scaling"]),
        ]
    for r in results:
        if r["calibrate"].get("error"):
            parts.append(f"calibrate failed in {r['scenario']}: {r['calibrate']['error']}")
    for failure in report.get("failures", []):
        parts.append(f"FAILED: {failure}")
    return "\n".join(parts)
