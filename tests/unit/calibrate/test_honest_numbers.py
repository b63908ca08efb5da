"""Honest numbers, end to end through sweep() with fake trials and a fake clock:
the TF default is the baseline arm and never also a candidate, the advice is concrete numbers,
a gain inside the noise is not a gain, the range within noise is reported, and nothing the advice
rests on is called unmeasured."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.calibrate.candidates import candidate_configs, tf_picks
from advisor.calibrate.statistics import aggregate
from advisor.models import (
    CalibrationOptions,
    CalibrationResult,
    Incumbent,
    ObjectiveName,
    ThreadSetting,
)
from advisor.pipeline.sweep import sweep
from advisor.recommend import build_recommendation
from advisor.render.table import text_summary
from tests.support.search_fakes import FakeClock, FakeTrials, node

FORK_S = 0.3


def run(
    cpus: int = 2,
    quota: float | None = 1.0,
    budget: float = 60.0,
    objective: ObjectiveName = "latency",
    incumbent: tuple[int, int] | None = None,
    **fake: Any,
) -> tuple[CalibrationResult, FakeTrials, list[str]]:
    profile = node(cpus, quota=quota)
    clock = FakeClock()
    fake.setdefault("overhead_s", FORK_S)
    trials = FakeTrials(clock=clock, usable=profile.effective_cpus, affinity=cpus, **fake)
    lines: list[str] = []
    options = CalibrationOptions(objective=objective, budget_s=budget)
    held = (
        None
        if incumbent is None
        else Incumbent(
            intra_op_threads=incumbent[0], inter_op_threads=incumbent[1], source="a test"
        )
    )
    result = sweep(
        options,
        profile,
        progress=lambda event: lines.append(event.line),
        trial_fn=trials,
        clock=clock,
        incumbent=held,
    )
    assert clock.monotonic() - 1000.0 <= budget
    return result, trials, lines


def claims_a_gain(text: str) -> bool:
    """A gain over TF's default stated as a figure ("27% lower"), not called noise: in the
    summary's "against TF's default:" line, or the last part of the sweep's final log line."""
    lines = text.splitlines()
    parts = [line.split(":", 1)[1] for line in lines if line.startswith("against TF's default:")]
    parts += [line.rsplit("; ", 1)[-1] for line in lines if line.startswith("advice: intra=")]
    return any(
        ("% lower" in part or "% higher" in part) and "no measurable gain" not in part
        for part in parts
    )


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize(("cpus", "quota"), [(2, None), (8, 4.0)])
def test_when_every_setting_is_equal_no_gain_is_ever_reported(
    seed: int, cpus: int, quota: float | None
) -> None:
    """All settings, the default included, have the same p99 give or take 2% per window: whatever
    the noise makes the leader, the advice claims no gain over the default."""
    result, _, lines = run(cpus, quota, flat_p99=10.0, noise=0.02, seed=seed)
    assert result.gain == 1.0
    assert result.gain_within_noise
    summary = text_summary(result)
    assert not claims_a_gain(lines[-1])
    assert not claims_a_gain(summary)
    if result.kept_default:
        assert "the advice is TF's default" in lines[-1]
        assert "no gain claimed" in lines[-1]
    else:
        assert "no measurable gain" in lines[-1]
        assert "no measurable gain" in summary
    rec = build_recommendation(result, advisor_version="test")
    assert rec.provenance.gain == 1.0
    assert rec.provenance.gain_within_noise


def test_equal_settings_keep_the_incumbent_and_the_range_holds_them() -> None:
    # nothing beats TF's default (the incumbent with nothing stored): it stands, and the range
    # within noise shows the cheaper settings a person could choose by hand
    result, _, _ = run(8, 4.0, flat_p99=10.0, noise=0.0)
    assert result.kept_default
    held = result.incumbent
    assert held is not None and held.kept and held.setting.is_default
    assert len(result.near_best) >= 2
    # the default is as good: it is in the range
    assert any(n.setting.is_default for n in result.near_best)


def test_equal_settings_below_a_stored_incumbent_keep_it() -> None:
    result, _, _ = run(8, 4.0, flat_p99=10.0, noise=0.0, incumbent=(2, 2))
    assert result.counts == (2, 2)
    assert result.incumbent is not None and result.incumbent.kept
    assert not result.incumbent.setting.is_default


def test_a_default_that_measures_best_is_kept_spelled_out_with_gain_exactly_one() -> None:
    result, fake, lines = run(2, None, baseline_factor=0.3)
    assert result.kept_default
    assert result.setting == tf_picks(node(2)) == ThreadSetting(2, 2)
    assert result.chosen == result.baseline
    assert result.gain == 1.0
    assert result.gain_within_noise
    assert "the advice is TF's default" in lines[-1]
    assert not claims_a_gain(lines[-1])
    assert not claims_a_gain(text_summary(result))
    assert any("keeps TF's default" in note for note in result.notes)
    # the default was measured as the baseline arm only, never under its numbers
    assert (2, 2) not in {(spec.setting.intra, spec.setting.inter) for spec, _, _ in fake.calls}


@pytest.mark.parametrize(("cpus", "quota"), [(2, None), (2, 1.0), (8, None), (8, 4.0), (64, None)])
def test_the_tf_default_is_never_a_candidate(cpus: int, quota: float | None) -> None:
    result, fake, _ = run(cpus, quota)
    default = tf_picks(node(cpus, quota=quota))
    explicit = {spec.setting for spec, _, _ in fake.calls}
    assert default not in explicit
    assert ThreadSetting.TF_DEFAULT in explicit
    assert default not in candidate_configs(node(cpus, quota=quota))
    if result.setting == default:
        assert result.kept_default  # the only way to advise those numbers


def test_a_one_cpu_mask_keeps_the_default_it_has_no_alternative_to() -> None:
    result, fake, _ = run(1, None)
    assert result.kept_default
    assert result.counts == (1, 1)
    assert result.gain == 1.0
    assert all(spec.setting.is_default for spec, _, _ in fake.calls)
    assert any("only setting" in note for note in result.notes)


def test_the_range_holds_exactly_the_settings_within_noise_of_the_best() -> None:
    # 8 CPUs under a 4-CPU quota: 4/1 leads, a few settings are close to it
    result, _, _ = run(8, 4.0, noise=0.03)
    band = result.noise_band
    assert band is not None
    assert band >= 0.05
    best = result.near_best[0]
    assert best.p99_ms is not None
    for n in result.near_best:
        assert n.p99_ms is not None
        assert abs(n.p99_ms - best.p99_ms) <= band * best.p99_ms
    # and every setting that competed (raced, or the baseline) within the band is in the range
    default = tf_picks(result.node)
    inside = {n.runs for n in result.near_best}
    for stats in aggregate(result.trials, default):
        if stats.raced or stats.is_baseline:
            close = abs(stats.p99_ms - best.p99_ms) <= band * best.p99_ms
            setting = stats.setting.spelled_out(len(result.node.affinity_cpus))
            assert close == (setting in inside), stats
    assert result.setting in inside
    assert result.counts == min((n.counts for n in result.near_best), key=sum)
    # and the provenance carries the range, compactly
    rec = build_recommendation(result, advisor_version="test")
    span = rec.provenance.near_best
    assert span is not None
    assert span.settings == len(result.near_best)
    assert span.intra[0] <= result.setting.intra <= span.intra[1]
    assert "within noise" in text_summary(result)


def test_ties_make_a_wide_range_and_the_cheapest_is_advised() -> None:
    # every candidate 1% apart: all within the 5% band, the advice has the fewest threads
    result, _, lines = run(8, None, 200.0, flat_p99=10.0, baseline_factor=3.0, noise=0.0)
    assert not result.kept_default  # the default is 3x slower
    assert result.gain == pytest.approx(3.0)
    assert not result.gain_within_noise
    assert result.counts == (1, 1)
    assert len(result.near_best) >= 2
    assert "p99 10.00 ms against 30.00 ms for TF's default (67% lower, noise" in lines[-1]
    assert claims_a_gain(lines[-1])


def test_no_unmeasured_note_when_every_setting_was_measured() -> None:
    result, _, _ = run(64, None)
    assert not any("not measured" in note for note in result.notes)


def test_unmeasured_settings_are_listed_and_the_advice_never_is() -> None:
    for cpus in (64, 128, 256):
        result, fake, _ = run(cpus, None, budget=60.0, overhead_s=3.5)
        notes = [n for n in result.notes if n.startswith("not measured for lack of budget")]
        assert len(notes) == 1
        listed = notes[0].split(": ", 1)[1].split(", ")
        tried = {(s.setting.intra, s.setting.inter) for s, _, _ in fake.calls}
        for label in listed:
            intra, inter = (int(x) for x in label.split("/"))
            assert (intra, inter) not in tried
        advised = f"{result.setting.intra}/{result.setting.inter}"
        assert advised not in listed


def test_an_unstable_setting_is_reported_in_the_result_and_its_notes() -> None:
    result, _, _ = run(2, 1.0, budget=90.0, noise=0.01, noisy={(1, 1): 0.4})
    assert ThreadSetting(1, 1) in result.unstable
    assert "1/1" in result.model_dump(mode="json")["unstable"]
    assert any(note.startswith("unstable") and "1/1" in note for note in result.notes)
    assert "(unstable)" in text_summary(result)


def test_throughput_gain_is_a_ratio_of_medians() -> None:
    result, _, _ = run(8, 4.0, objective="throughput", noise=0.0)
    assert result.chosen.throughput_rps is not None
    assert result.baseline.throughput_rps is not None
    assert result.gain == pytest.approx(
        result.chosen.throughput_rps / result.baseline.throughput_rps
    )
