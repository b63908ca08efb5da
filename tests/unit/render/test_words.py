"""The sentences of a calibration's typed verdicts: each note kind and each oneDNN verdict in the
words the result stores (``CalibrationResult.notes``, ``OnednnVerdict.reason``)."""

from __future__ import annotations

import pytest

from advisor.models import PairsVerdict, ThreadSetting
from advisor.models.notes import (
    AdviceIgnored,
    BadThreadValue,
    BudgetShort,
    DefaultKept,
    FewerThreads,
    Forced,
    HighestVersion,
    IncumbentKept,
    IncumbentUnmeasured,
    NoGain,
    NoProvenance,
    Note,
    OnlyDefault,
    PassedOver,
    SloMissed,
    UndoneInProduction,
    Unmeasured,
    Unstable,
)
from advisor.objectives import P99, THROUGHPUT
from advisor.render.words import note_text, onednn_reason

A, B, C = ThreadSetting(2, 1), ThreadSetting(1, 1), ThreadSetting(4, 2)
DEFAULT = ThreadSetting.TF_DEFAULT
IGNORED = "not used as the advice in force; TF's default is the incumbent"


@pytest.mark.parametrize(
    ("note", "words"),
    [
        (SloMissed(P99, 5.0), "no setting met p99 <= 5 ms; picked the lowest p99 instead"),
        (FewerThreads(B, A, 0.05), "1/1 is within 5% of 2/1; took the one with fewer threads"),
        (
            PassedOver(A, 0.12, 0.05, (B, DEFAULT)),
            "within noise (12%) of 2/1 but more than 5% behind it, so not advised despite fewer "
            "threads: 1/1, TF default",
        ),
        (
            IncumbentUnmeasured(C),
            "the advice in force (4/2) could not be measured in this run, so it cannot stand",
        ),
        (
            IncumbentKept(B, A, P99, 1.25, 0.3),
            "1/1 measured 20% better than the advice in force (2/1), inside the 30% noise band of "
            "the two: 2/1 kept",
        ),
        (
            IncumbentKept(B, A, THROUGHPUT, 0.9, 0.3),
            "1/1 measured 10% worse than the advice in force (2/1), inside the 30% noise band of "
            "the two: 2/1 kept",
        ),
        (
            IncumbentKept(B, A, P99, 1.6, 0.1),
            "1/1 measured 38% better than the advice in force (2/1), beyond the 10% noise band "
            "of the two, but it has not won the paired test against it: 2/1 kept",
        ),
        (
            BudgetShort(B, DEFAULT, P99, 2.5, 1, 3, 110.0),
            "the budget ended before the paired test could decide on 1/1 (60% better than the "
            "advice in force, TF default, over 1 paired round): 3 more like those would, so a "
            "--budget of about 110 s would let it decide",
        ),
        (
            IncumbentKept(B, A, P99, None, 0.3),
            "1/1 measured differently than the advice in force (2/1), inside the 30% noise band "
            "of the two: 2/1 kept",
        ),
        (
            NoGain(A, 0.08, 1.034),
            "2/1 and the TF default measured within the 8% noise band of each other (ratio 1.03): "
            "no measurable gain",
        ),
        (
            NoGain(A, 0.08, None),
            "2/1 and the TF default measured within the 8% noise band of each other: no "
            "measurable gain",
        ),
        (
            OnlyDefault(B),
            "TF's default (1/1) is the only setting for one CPU in the affinity mask; only it was "
            "measured",
        ),
        (DefaultKept(C), "advice keeps TF's default, spelled out: intra = inter = 4"),
        (Unmeasured((A, C)), "not measured for lack of budget (intra/inter): 2/1, 4/2"),
        (
            Unstable((DEFAULT, B), 0.1),
            "unstable (its windows disagree by a CV over 10%; its numbers are less sure than the "
            "others'): TF default, 1/1",
        ),
        (
            AdviceIgnored("cm/x", "not ours"),
            f"cm/x was not written by tf-thread-advisor: {IGNORED}",
        ),
        (
            AdviceIgnored("cm/x", "elsewhere", "batch size: measured 1, this run 2"),
            f"cm/x was measured for something else (batch size: measured 1, this run 2): {IGNORED}",
        ),
        (
            AdviceIgnored("cm/x", "invalid", "bad JSON"),
            f"the stored advice does not validate (bad JSON): {IGNORED}",
        ),
        (
            AdviceIgnored("f.yaml", "unusable", "no YAML"),
            f"f.yaml: cannot use it (no YAML): {IGNORED}",
        ),
        (AdviceIgnored("a.env", "unreadable", "gone"), f"a.env: cannot read it (gone): {IGNORED}"),
        (
            BadThreadValue("a.env", "TF_NUM_INTRAOP_THREADS", None, 8),
            f"a.env: TF_NUM_INTRAOP_THREADS is missing: {IGNORED}",
        ),
        (
            BadThreadValue("a.env", "TF_NUM_INTEROP_THREADS", "99", 8),
            f"a.env: TF_NUM_INTEROP_THREADS is '99', not a thread count up to 8: {IGNORED}",
        ),
        (
            NoProvenance("a.env"),
            "a.env carries no provenance: only its values were checked against this node (use "
            "--output or --configmap for the full check)",
        ),
        (
            UndoneInProduction(),
            "the stored advice was undone in production: TF's default is the incumbent",
        ),
        (Forced(), "--force: the stored advice is not the incumbent; TF's default is"),
        (
            HighestVersion("/models/m", 12, "/models/m/12"),
            "/models/m is a TF Serving base path: its highest version, 12, was measured "
            "(/models/m/12), the one TF Serving serves by default",
        ),
    ],
)
def test_each_note_is_worded_once(note: Note, words: str) -> None:
    assert note_text(note) == words


def test_each_onednn_verdict_is_worded_with_its_figures() -> None:
    medians = {"0": 3.5, "1": 5.0}
    few = PairsVerdict("few pairs", None, {"0": 3.5}, 2, 2, 3, "ms p99")
    assert onednn_reason(few) == "only 2 measured pair(s), 3 needed: left unset (raise --budget)"
    better = PairsVerdict("better", "0", medians, 4, 4, 3, "ms p99", 0.1, 0.3)
    assert onednn_reason(better) == (
        "TF_ENABLE_ONEDNN_OPTS=0 is 30% better (=0: 3.50, =1: 5.00 ms p99 over 4 pairs; noise "
        "10%): the advice sets it"
    )
    same = PairsVerdict("within noise", None, medians, 5, 4, 3, "req/s", 0.25, 0.2)
    assert onednn_reason(same) == (
        "no difference beyond noise (=0: 3.50, =1: 5.00 req/s over 4 pairs; noise 25%): left unset"
    )
    stored = better.stored(onednn_reason(better))
    assert (stored.code, stored.reason) == ("better", onednn_reason(better))
    assert same.stored("x").code == "within noise" and few.stored("x").code == "few pairs"
