"""``plan``'s view in every format, in one namespace and across several."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from typing import get_args

import yaml

from advisor.models import (
    PlanDecision,
    PlanResult,
    Production,
    WorkloadKind,
    WorkloadRef,
)
from advisor.models.consumers import Problem
from advisor.models.plan import (
    Applied,
    Calibrate,
    Cause,
    CompletedUnfit,
    Confounded,
    ConsumerVerdict,
    Corrected,
    Created,
    Difference,
    EarlierRunning,
    Fits,
    ForeignConfigMap,
    HandWritten,
    Helped,
    InvalidAdvice,
    JobExists,
    JobFailed,
    NoAdvice,
    NoPrevious,
    NoServiceAccount,
    NotCalibrated,
    NotReverted,
    NotRevertedWhy,
    NotWrittenBack,
    NotYet,
    OptedOut,
    OptionChanged,
    OtherContainer,
    Overridden,
    PlanReason,
    PoolSelected,
    PoolUnpinned,
    Quota,
    QuotaChanged,
    Refused,
    Retried,
    RetryUnchecked,
    Reverted,
    RevertLimit,
    Running,
    SharedDiffers,
    Skipped,
    SpecChanged,
    Stopped,
    Suggested,
    TargetChanged,
    TooOld,
    Unreadable,
    Waits,
    WrittenBack,
)
from advisor.render import formats
from advisor.render.plan import PlanView
from advisor.render.plan_reasons import (
    REASON_LIMIT,
    difference_text,
    plan_reason_text,
    revert_event_text,
)
from tests.unit.render.samples import HOSTILE, markdown_tables

API = WorkloadRef.parse("deployment/api")
WEB_WORSE = ConsumerVerdict(
    WorkloadRef.parse("deployment/web"), "server", Production(verdict="regressed", reason="p99 up")
)
API_SAME = ConsumerVerdict(API, "main", Production(verdict="unchanged", reason="p99 flat"))

# --------------------------------------------------------------------------------------------------
# plan


def plan_view(applied: bool = False) -> PlanView:
    decisions = [
        PlanDecision(
            workload="deployment/a",
            container="server",
            configmap="advice-a",
            decision="calibrate",
            reason="no advice yet",
            job="tfta-a-server-0a1b2c3d4e",
        ),
        PlanDecision(
            workload="deployment/z", decision="skipped", reason=f"no container: {HOSTILE}"
        ),
    ]
    return PlanView(PlanResult(decisions=decisions), namespace="ml", applied=applied)


def test_plan_in_every_format() -> None:
    view = plan_view()
    assert json.loads(formats.render(view, "json")) == view.result.model_dump(mode="json")
    assert yaml.safe_load(formats.render(view, "yaml")) == view.result.model_dump(mode="json")
    table, reasons, hint = formats.render(view, "table").rstrip("\n").split("\n\n")
    assert table.splitlines()[0].split() == [
        "WORKLOAD",
        "CONTAINER",
        "CONFIGMAP",
        "DECISION",
        "JOB",
    ]
    assert table.splitlines()[2].split() == ["deployment/z", "-", "-", "skipped", "-"]
    assert reasons.splitlines() == [
        "deployment/a (server): no advice yet",
        f"deployment/z: no container: {HOSTILE}",
    ]
    assert hint.startswith("nothing was created")
    assert "nothing was created" not in formats.render(plan_view(applied=True), "table")
    records = list(csv.DictReader(io.StringIO(formats.render(view, "csv"))))
    assert [(r["workload"], r["container"], r["job"]) for r in records] == [
        ("deployment/a", "server", "tfta-a-server-0a1b2c3d4e"),
        ("deployment/z", "", ""),
    ]
    assert records[1]["reason"] == f"no container: {HOSTILE}"
    (decisions,) = markdown_tables(formats.render(view, "markdown"))
    assert decisions[3] == ["deployment/z", "-", "-", "skipped", "-"]
    empty = PlanView(PlanResult(), namespace="ml", applied=False)
    assert formats.render(empty, "table").startswith("no opted-in workloads in namespace ml")


def test_plan_across_namespaces_names_each_decisions_namespace() -> None:
    one = plan_view()
    decisions = [
        d.model_copy(update={"namespace": ns})
        for d, ns in zip(one.result.decisions, ("team-a", "team-b"), strict=True)
    ]
    view = PlanView(PlanResult(decisions=decisions), namespace=None, applied=True)
    table, reasons = formats.render(view, "table").rstrip("\n").split("\n\n")
    assert table.splitlines()[0].split()[:2] == ["NAMESPACE", "WORKLOAD"]
    assert table.splitlines()[2].split() == ["team-b", "deployment/z", "-", "-", "skipped", "-"]
    assert reasons.splitlines()[0] == "team-a/deployment/a (server): no advice yet"
    records = list(csv.DictReader(io.StringIO(formats.render(view, "csv"))))
    assert [r["namespace"] for r in records] == ["team-a", "team-b"]
    assert [d["namespace"] for d in json.loads(formats.render(view, "json"))["decisions"]] == [
        "team-a",
        "team-b",
    ]
    # one namespace: no NAMESPACE column, the machine formats still carry it
    single = PlanView(PlanResult(decisions=decisions), namespace="team-a", applied=True)
    assert formats.render(single, "table").split()[0] == "WORKLOAD"
    assert "NAMESPACE" not in formats.render(single, "table")
    nothing = PlanView(PlanResult(), namespace=None, applied=False)
    assert "no namespace is labelled tf-thread-advisor.io/calibrate=true" in formats.render(
        nothing, "table"
    )
    quiet = PlanView(PlanResult(), namespace=None, applied=False, namespaces=["a", "b"])
    assert "no opted-in workloads in namespaces a, b" in formats.render(quiet, "table")


# --------------------------------------------------------------------------------------------------
# a decision's reason: its cause, then what applying it added


#: every part applying a decision may add, in words
PART_WORDS: dict[Applied, str] = {
    Waits(1, "pool=a", 2): "waits: 1 calibration(s) already running on node pool pool=a "
    "(max running 2)",
    Retried("tfta-b"): "retried: Job tfta-b is deleted and created again",
    Created("tfta-b"): "created Job tfta-b",
    Created("tfta-b", dry_run=True, warnings=("w1", "w2")): "the API server would create "
    "Job tfta-b; the API server warns: w1; the API server warns: w2",
    RetryUnchecked(("w",)): "the server checks the new Job only once the failed one is "
    "deleted (--apply); the API server warns: w",
    Stopped(): "not created: the plan stopped (the error line says why)",
    WrittenBack(): "written back",
    NotWrittenBack(): "not written: the ConfigMap changed since it was read (the next plan "
    "judges the new advice)",
    NotWrittenBack(refused="forbidden"): "not written: forbidden (the advice is kept; the next "
    "plan judges it again)",
    NotReverted((WEB_WORSE,)): "production regressed on this advice: p99 up, but no previous "
    "advice is kept",
}


def test_each_part_of_a_reason_in_words() -> None:
    cause = "no advice yet: ConfigMap advice-b does not exist"
    for part, words in PART_WORDS.items():
        assert plan_reason_text(PlanReason(Skipped(cause), (part,))) == f"{cause}; {words}"
    assert plan_reason_text(PlanReason(Skipped(cause))) == cause


#: every way a stored advice differs from the container now, in words
DIFFERENCE_WORDS: dict[Difference, str] = {
    NoAdvice("advice-web"): "no advice yet: ConfigMap advice-web does not exist",
    InvalidAdvice("advice-web", "intra: not a number"): "the advice in advice-web does not "
    "validate (intra: not a number)",
    HandWritten("advice-web"): "the advice in advice-web was measured by a hand-written target, "
    "not for this workload",
    OtherContainer(API, "main"): "the advice was measured for deployment/api container main",
    TooOld(timedelta(days=9, hours=12)): "older than the maximum age (9.5 days old)",
    TooOld(timedelta(hours=20)): "older than the maximum age (20.0 hours old)",
    QuotaChanged(None, Quota("limit", 2.0)): "measured without a CPU quota, the container's "
    "CPU limit is 2",
    QuotaChanged(Quota("request", 1.5), Quota("limit", 2.0)): "measured under a CPU request of "
    "1.5, the container now has a CPU limit of 2",
    QuotaChanged(Quota("limit", 2.0), Quota("request", 4.0)): "measured under a CPU limit of 2, "
    "the container now has no CPU limit (request 4)",
    QuotaChanged(Quota("limit", 2.0), Quota("limit", 2.5)): "measured under a CPU limit of 2, "
    "the container's is now 2.5",
    PoolUnpinned(Problem(code="node-pool-differs", message="its pods may run elsewhere")): "its "
    "pods may run elsewhere",
    PoolSelected((), (("pool", "b"),)): "measured on no node selector, its pods now select pool=b",
    PoolSelected((("pool", "a"), ("zone", "x")), (("gpu", "no"), ("pool", "b"))): "measured on "
    "pool=a, zone=x, its pods now select gpu=no, pool=b",
    TargetChanged("serving image", "tfs:2.15", "tfs:2.16"): "serving image was tfs:2.15, is now "
    "tfs:2.16",
    TargetChanged("model path", None, "/models/a"): "model path was None, is now /models/a",
    OptionChanged("objective", "latency", "throughput"): "objective was latency, is now throughput",
    OptionChanged("p99 bound (ms)", None, 50.0): "p99 bound (ms) was none, is now 50",
    OptionChanged("concurrency", 4, 8): "concurrency was 4, is now 8",
    SpecChanged("limits.memory", "memory limit", "2Gi", None): "memory limit changed (2Gi -> none)",
    SpecChanged("tolerations", "tolerations", "#0123", None, readable=False): "its tolerations "
    "changed since the advice was measured",
}


def test_each_difference_in_words() -> None:
    for difference, words in DIFFERENCE_WORDS.items():
        assert difference_text(difference) == words


NO_ADVICE = NoAdvice("advice-web")
OBJECTIVE = OptionChanged("objective", "latency", "throughput")
TWO = (NO_ADVICE, OBJECTIVE)
TWO_WORDS = (
    "no advice yet: ConfigMap advice-web does not exist; objective was latency, is now throughput"
)
ONE_WORDS = "no advice yet: ConfigMap advice-web does not exist"

#: every cause, in words
CAUSE_WORDS: dict[Cause, str] = {
    Calibrate(TWO): TWO_WORDS,
    Fits(2, 1, "advice-web", "limit", 2.0, True, "pool=a", "latency"): "advice 2/1 in "
    "advice-web was measured for it: CPU limit 2, exclusive CPUs, pool=a, latency",
    Fits(2, 1, "advice-web", "request", 1.5, False, "any pool", "throughput"): "advice 2/1 "
    "in advice-web was measured for it: CPU request 1.5, any pool, throughput",
    Running("tfta-b"): "calibration Job tfta-b for this spec has not finished",
    JobFailed("tfta-b", "exit 4: model"): "calibration Job tfta-b failed: exit 4: model",
    EarlierRunning("tfta-a", TWO): "calibration Job tfta-a, for its earlier spec, is still "
    f"running; the next plan calibrates the new one ({TWO_WORDS})",
    CompletedUnfit("tfta-b", TWO[:1]): "calibration Job tfta-b for this spec completed, but "
    f"the advice does not fit ({ONE_WORDS}); it is calibrated again once the Job is deleted",
    SharedDiffers("shared", WorkloadRef.parse("deployment/a"), TWO[:1]): "it shares "
    "ConfigMap shared with deployment/a, which is calibrated for its own shape, and its own "
    f"differs ({ONE_WORDS}): give it its own ConfigMap with annotation "
    "tf-thread-advisor.io/configmap",
    NoServiceAccount("ml", "tfta-calibrate", PlanReason(Calibrate(TWO[:1]))): "namespace ml "
    "has no ServiceAccount tfta-calibrate for its calibration Job to run as: list the "
    "namespace in the chart's planner.namespaces, or apply deploy/components/fleet there (it "
    f"would calibrate: {ONE_WORDS})",
    Skipped("its container reads no advice ConfigMap"): "its container reads no advice ConfigMap",
    NotCalibrated(WorkloadKind.POD): "a Pod is not calibrated",
    ForeignConfigMap("theirs"): "ConfigMap theirs was not written by tf-thread-advisor and "
    "is never replaced: name a new one with annotation tf-thread-advisor.io/configmap",
    Overridden(
        tuple(Problem(code="advice-overridden", message=m) for m in ("env sets A", "env sets B"))
    ): "the advice would be overridden: env sets A; env sets B",
    Reverted((WEB_WORSE,), "intra=4 inter=2"): "production regressed on this advice: p99 "
    "up; back to the previous advice (intra=4 inter=2)",
    Reverted((WEB_WORSE,), "intra=4 inter=2", Fits(2, 1, "a", "limit", 2.0, False, "p", "o")): (
        "production regressed on this advice: p99 up; back to the previous advice (intra=4 inter=2)"
    ),
    Reverted((WEB_WORSE, API_SAME), "intra=4 inter=2", Calibrate((HandWritten("advice"),))): (
        "production regressed on this advice for deployment/web (server) of its 2 "
        "consumers: deployment/web (server) regressed (p99 up); deployment/api (main) "
        "unchanged (p99 flat); back to the previous advice (intra=4 inter=2); calibrated by "
        "the next plan (the advice in advice was measured by a hand-written target, not for "
        "this workload)"
    ),
    Suggested(0.9, "24h", 0.25): "throttled in 90% of its CFS periods over the last 24h "
    "(above 25%); label it tf-thread-advisor.io/calibrate=true to calibrate it",
    JobExists("tfta-b", ("w",)): "Job tfta-b exists already (created by an earlier plan); the "
    "API server warns: w",
    Refused('jobs "x" is forbidden:\n exceeded quota'): 'jobs "x" is forbidden: exceeded quota',
}


def test_each_cause_in_words() -> None:
    for cause, words in CAUSE_WORDS.items():
        assert plan_reason_text(PlanReason(cause)) == words
    kept = PlanReason(Skipped("fits"), (NotReverted((WEB_WORSE,)),))
    assert plan_reason_text(kept) == (
        "fits; production regressed on this advice: p99 up, but no previous advice is kept"
    )


#: every reason a regression is kept, in words (after what production said)
SAID = "production regressed on this advice: p99 up"
WHY_WORDS: dict[NotRevertedWhy, str] = {
    NoPrevious(): f"{SAID}, but no previous advice is kept",
    OptedOut((WorkloadRef.parse("deployment/web"),)): f"{SAID}; not reverted: "
    'deployment/web opts out with annotation tf-thread-advisor.io/revert: "false"',
    OptedOut((), Unreadable(API, "bad")): f"{SAID}; not reverted: deployment/api: bad",
    OptedOut((API,), Unreadable(API, "bad")): f"{SAID}; not reverted: deployment/api opts out "
    'with annotation tf-thread-advisor.io/revert: "false"',
    Confounded((SpecChanged("limits.cpu", "CPU limit", "2", "4"),)): f"{SAID}; not reverted: "
    "its calibration spec changed since the advice (CPU limit changed (2 -> 4)), so before and "
    "after are not comparable: it is calibrated instead",
    RevertLimit(1): f"{SAID}; not reverted: --max-reverts 1 reached",
    NotYet(1, 2): f"{SAID}; not reverted yet: regressed in 1 full after-window(s) in a row, a "
    "revert needs 2",
    Corrected(3, 0.05): f"{SAID}; not reverted: corrected for judging 3 consumers (Holm, level "
    "0.05) no regression stays significant",
}


def test_each_reason_a_regression_is_kept_in_words() -> None:
    for why, words in WHY_WORDS.items():
        assert plan_reason_text(PlanReason(Skipped("x"), (NotReverted((WEB_WORSE,), why),))) == (
            f"x; {words}"
        )
    improved = ConsumerVerdict(API, "main", Production(verdict="improved", reason="p99 down"))
    helped = PlanReason(Skipped("x"), (NotReverted((WEB_WORSE, improved), Helped()),))
    assert plan_reason_text(helped) == (
        "x; production regressed on this advice for deployment/web (server) of its 2 consumers: "
        "deployment/web (server) regressed (p99 up); deployment/api (main) improved (p99 down); "
        "kept: it improved for deployment/api (main)"
    )


def test_every_member_of_each_union_is_worded_by_a_test() -> None:
    """Each cause, part, reason kept and difference has words a test reads: a new member of a
    union fails here until it is added to its table (mypy fails first, at the wording's
    ``assert_never``)."""
    worded: list[tuple[object, set[type]]] = [
        (Cause, {type(c) for c in CAUSE_WORDS}),
        (Applied, {type(p) for p in PART_WORDS}),
        (NotRevertedWhy, {type(w) for w in WHY_WORDS} | {Helped}),
        (Difference, {type(d) for d in DIFFERENCE_WORDS}),
    ]
    for union, tested in worded:
        assert tested == set(get_args(union)), union


def test_the_revert_event_gives_each_consumers_figures() -> None:
    figures = Production(
        verdict="regressed", reason="throttling 5% -> 40%: rose", throttled_before=0.05,
        throttled_after=0.4, cpu_before=2.0, cpu_after=3.9, p99_before_ms=120.0,
        p99_after_ms=181.4,
    )  # fmt: skip
    web = ConsumerVerdict(WorkloadRef.parse("deployment/web"), "server", figures)
    text = revert_event_text(PlanReason(Reverted((web, API_SAME), "intra=4 inter=2")))
    assert text == (
        "advice reverted to the previous one (intra=4 inter=2): deployment/web (server): "
        "throttled 5% -> 40%, p99 120 -> 181 ms, CPU 2.00 -> 3.90 cores per pod: regressed "
        "(throttling 5% -> 40%: rose); deployment/api (main): no figures: unchanged (p99 flat)"
    )


def test_the_api_servers_answer_replaces_the_cause() -> None:
    assert (
        plan_reason_text(PlanReason(JobExists("tfta-b", ("w",))))
        == "Job tfta-b exists already (created by an earlier plan); the API server warns: w"
    )
    refused = PlanReason(Refused('jobs "x" is forbidden:\n exceeded quota'), (Stopped(),))
    assert plan_reason_text(refused) == (
        'jobs "x" is forbidden: exceeded quota; not created: the plan stopped (the error line '
        "says why)"
    )


def test_a_reason_is_clipped_as_each_part_is_added() -> None:
    """The reason stays one line of at most ``REASON_LIMIT``: what does not fit is cut."""
    long = "x" * (REASON_LIMIT + 50)
    text = plan_reason_text(PlanReason(Skipped(long), (Retried("j"), Created("j"))))
    assert text == "x" * (REASON_LIMIT - 3) + "..."
    fits = plan_reason_text(
        PlanReason(Skipped("x" * (REASON_LIMIT - 100)), (Retried("j"), Created("j")))
    )
    assert fits.endswith("; retried: Job j is deleted and created again; created Job j")
    cut = plan_reason_text(
        PlanReason(Skipped("x" * (REASON_LIMIT - 50)), (Retried("j"), Created("j")))
    )
    assert cut.endswith("deleted and created again; ...") and len(cut) == REASON_LIMIT
