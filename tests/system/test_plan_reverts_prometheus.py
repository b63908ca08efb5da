"""``plan --apply --prometheus-url`` against a real Prometheus (Debian's package) serving nine days
of history written for the test: what plan does with the verdicts. The workloads, their live pods
and the advice ConfigMaps are on the strict fake API server; the PromQL is evaluated by
Prometheus itself (testkit/realprom.py).

Five serving Deployments in ``ml``, each of whose advice changed six hours ago (its new pods
started ten minutes later), throttled before -> after:

- ``one-worse`` and ``two-worse``: opted in, each with its own advice (which replaced an older
  one), 5% -> 40%: regressed;
- ``shared-a``: opted in, 5% -> 40% (regressed), and ``shared-b``, not opted in, reading the same
  advice, 40% -> 5% (improved);
- ``steady``: not opted in, 10% -> 10%.

``--max-reverts 1`` writes one of the two regressed advice back and leaves the other, saying so
(exit 19); the shared advice, which helped one of its consumers, is kept either way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from advisor import __version__
from advisor.cli import main
from advisor.keys import DATA_CHANGED_ANNOTATION, PREVIOUS_ANNOTATION
from advisor.models.times import timestamp
from advisor.recommend import build_recommendation, render_configmap
from advisor.recommend.previous import keep_previous, rejected_settings
from testkit.fakeapi.apps import workload
from testkit.fakeapi.pods import TEMPLATE_HASH, pod_of
from testkit.fakeapi.rbac import fleet_rules
from testkit.fakeapi.samples import calibration_result, node_profile
from testkit.fakeapi.server import FakeApiServer
from testkit.realprom import binaries, loaded_prometheus, openmetrics
from tests.integration.test_plan import NO_MEASURING, advice_fitting, opted_in, server
from tests.integration.test_plan_production import PRODUCTION
from tests.support.real_parts import missing_real_part

pytestmark = pytest.mark.tools

NS = "ml"
STEP_S = 60
#: 100 ms CFS periods in a minute of a container that always has work
PERIODS_PER_STEP = 600
CORES = 2.0
WINDOW = "3h"
#: the throttled share before and after the advice changed
SERIES = {
    "one-worse": (0.05, 0.40),
    "two-worse": (0.05, 0.40),
    "shared-a": (0.05, 0.40),
    "shared-b": (0.40, 0.05),
    "steady": (0.10, 0.10),
}
OPTED_IN = ("one-worse", "two-worse", "shared-a")
REVERTS_LIMITED = 19


@dataclass(frozen=True)
class Clock:
    """The history's times. Taken by the module's fixture as the history is written, never at
    import: the history ends at ``now``, and Prometheus answers an instant query only from samples
    in its 5-minute lookback, so a clock read when pytest collected the module goes stale while
    the rest of a full run goes first."""

    now: datetime
    #: when each advice's data changed
    changed: datetime
    #: the new pods started ten minutes later
    rolled: datetime
    #: nine days before the change: room for the 7 earlier days the test needs, at each 3 h
    #: window's hours, for both windows a revert needs
    history_from: datetime

    @classmethod
    def read(cls) -> Clock:
        now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
        changed = now - timedelta(hours=6)
        return cls(
            now=now,
            changed=changed,
            rolled=changed + timedelta(minutes=10),
            history_from=changed - timedelta(days=9),
        )


@pytest.fixture(scope="module")
def clock() -> Clock:
    """The module's one clock, shared by the history (``prometheus``) and the fake API server's
    objects (``fleet``)."""
    return Clock.read()


def minutes(start: datetime, end: datetime) -> Iterator[int]:
    return iter(range(int(start.timestamp()), int(end.timestamp()), STEP_S))


def history(clock: Clock) -> str:
    """Up to ``clock.now``, each workload's old pod (gone: only kube-state-metrics knows it was
    the workload's) until ten minutes after the change, its new pod from then on; the throttled
    share wobbles by a point from minute to minute around its level."""
    periods, throttled, usage, started, pod_owner, rs_owner = ([] for _ in range(6))
    span = list(minutes(clock.history_from, clock.now))
    for name, shares in SERIES.items():
        old_rs, new_rs = f"{name}-0ld", f"{name}-{TEMPLATE_HASH}"
        for rs in (old_rs, new_rs):
            labels = f'namespace="{NS}",replicaset="{rs}",owner_kind="Deployment"'
            rs_owner += [
                f'kube_replicaset_owner{{{labels},owner_name="{name}"}} 1 {t}' for t in span
            ]
        for pod, rs, (start, end), share in (
            (f"{old_rs}-x1", old_rs, (clock.history_from, clock.rolled), shares[0]),
            (f"{new_rs}-a1", new_rs, (clock.rolled, clock.now), shares[1]),
        ):
            owner = f'namespace="{NS}",pod="{pod}",owner_kind="ReplicaSet",owner_name="{rs}"'
            cadvisor = f'namespace="{NS}",pod="{pod}",container="server"'
            since = int(start.timestamp())
            done = 0.0
            for i, t in enumerate(minutes(start, end)):
                pod_owner.append(f"kube_pod_owner{{{owner}}} 1 {t}")
                started.append(f'kube_pod_start_time{{namespace="{NS}",pod="{pod}"}} {since} {t}')
                periods.append(
                    f"container_cpu_cfs_periods_total{{{cadvisor}}} {i * PERIODS_PER_STEP} {t}"
                )
                throttled.append(
                    f"container_cpu_cfs_throttled_periods_total{{{cadvisor}}} {round(done)} {t}"
                )
                done += PERIODS_PER_STEP * (share + 0.01 * (i % 3 - 1))
                usage.append(
                    f"container_cpu_usage_seconds_total{{{cadvisor}}} {i * STEP_S * CORES} {t}"
                )
    return openmetrics(
        (
            ("container_cpu_cfs_periods", "counter", periods),
            ("container_cpu_cfs_throttled_periods", "counter", throttled),
            ("container_cpu_usage_seconds", "counter", usage),
            ("kube_pod_start_time", "gauge", started),
            ("kube_pod_owner", "gauge", pod_owner),
            ("kube_replicaset_owner", "gauge", rs_owner),
        )
    )


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory, clock: Clock) -> Iterator[str]:
    if binaries() is None:
        missing_real_part(
            "prometheus/promtool not installed (scripts/install-test-tools.sh, as root)"
        )
    with loaded_prometheus(tmp_path_factory.mktemp("prometheus"), history(clock)) as url:
        yield url


def deploy(api: FakeApiServer, obj: dict[str, Any], started: datetime) -> None:
    api.put_workload(obj)
    api.put_pod(pod_of(obj, "a1", started=started))


def replaced_advice(api: FakeApiServer, name: str, changed: datetime) -> None:
    """``name``'s fitting advice, its data changed at ``changed``, over an older one it keeps."""
    current = advice_fitting(api, name)
    current["metadata"]["annotations"][DATA_CHANGED_ANNOTATION] = timestamp(changed)
    old = build_recommendation(
        calibration_result(4, 2, node=node_profile(quota=CORES)),
        advisor_version=__version__,
        # before the history began: every pod of the earlier days started after it
        now=changed - timedelta(days=9, hours=1),
    )
    api.put(
        keep_previous(current, render_configmap(old, f"advice-{name}", NS)),
        manager="tf-thread-advisor",
    )


@pytest.fixture
def fleet(tmp_path: Path, clock: Clock) -> Iterator[FakeApiServer]:
    rules = [*fleet_rules("-planner"), *PRODUCTION]
    with FakeApiServer(tmp_path, namespaces=(NS,), rules=rules) as api:
        for name in OPTED_IN:
            obj = opted_in(
                name, server(name, f"{CORES:g}"), **{"tf-thread-advisor.io/model": "/models/m"}
            )
            deploy(api, obj, clock.rolled)
            replaced_advice(api, name, clock.changed)
        for name, reads in (("shared-b", "shared-a"), ("steady", "steady")):
            deploy(api, workload("deployments", NS, name, container={
                "envFrom": [{"configMapRef": {"name": f"advice-{reads}"}}],
                "resources": {"limits": {"cpu": f"{CORES:g}", "memory": "1Gi"}}}),
                clock.rolled)  # fmt: skip
        yield api


def plan(
    capsys: pytest.CaptureFixture[str], api: FakeApiServer, prometheus: str, *argv: str
) -> tuple[int, dict[str, dict[str, Any]], str]:
    code = main(
        ["plan", "--kubeconfig", str(api.kubeconfig), "--namespace", NS, "--apply",
         "--image", "registry.example.com/tf-thread-advisor:1", "--format", "json",
         "--prometheus-url", prometheus, "--window", WINDOW, *argv],
        instruments=NO_MEASURING,
    )  # fmt: skip
    out, err = capsys.readouterr()
    return code, {d["workload"]: d for d in json.loads(out)["decisions"]}, err


def test_max_reverts_one_writes_one_of_two_regressed_advice_back(
    prometheus: str, fleet: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {name: fleet.get(NS, f"advice-{name}") for name in OPTED_IN}
    code, found, err = plan(capsys, fleet, prometheus, "--max-reverts", "1")
    assert code == REVERTS_LIMITED, err
    (line,) = err.strip().splitlines()
    assert "1 regressed advice not reverted: --max-reverts reached (ml/advice-two-worse)" in line
    one, two = found["deployment/one-worse"], found["deployment/two-worse"]
    assert one["decision"] == "revert", one
    assert one["reason"].endswith("written back")
    assert two["decision"] == "fits", two
    assert "production regressed on this advice" in two["reason"]
    assert two["reason"].endswith("not reverted: --max-reverts 1 reached")
    back = fleet.get(NS, "advice-one-worse")
    assert back is not None and back["data"]["TF_NUM_INTRAOP_THREADS"] == "4"
    assert PREVIOUS_ANNOTATION not in back["metadata"]["annotations"]
    regressed = before["one-worse"]
    assert regressed is not None
    assert [r["env"] for r in rejected_settings(back)] == [regressed["data"]]
    assert fleet.get(NS, "advice-two-worse") == before["two-worse"]
    (event,) = fleet.events()
    assert (event["reason"], event["involvedObject"]["name"]) == ("AdviceReverted", "one-worse")
    assert "deployment/one-worse (server): throttled 5% -> 40%" in event["message"]
    # the shared advice helped shared-b: kept, and no revert of the budget spent on it
    shared = found["deployment/shared-a"]
    assert shared["decision"] == "fits", shared
    assert shared["reason"].endswith("kept: it improved for deployment/shared-b (server)")
    assert fleet.get(NS, "advice-shared-a") == before["shared-a"]


def test_a_shared_advice_that_helped_one_consumer_is_kept(
    prometheus: str, fleet: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, found, err = plan(capsys, fleet, prometheus, "--max-reverts", "5")
    assert (code, err) == (0, "")
    shared = found["deployment/shared-a"]
    assert shared["decision"] == "fits", shared
    assert "for deployment/shared-a (server) of its 2 consumers" in shared["reason"]
    assert "deployment/shared-b (server) improved" in shared["reason"]
    assert {found[f"deployment/{n}"]["decision"] for n in ("one-worse", "two-worse")} == {"revert"}
    puts = [r.path.rsplit("/", 1)[1] for r in fleet.requests if r.method == "PUT"]
    assert sorted(puts) == ["advice-one-worse", "advice-two-worse"]
    assert sorted(e["involvedObject"]["name"] for e in fleet.events()) == ["one-worse", "two-worse"]
