"""How long ``plan`` takes over a fleet: N opted-in workloads in K namespaces, through the real
pipeline and the official client against the strict fake API server on loopback.

Why: a platform team runs one nightly planner over every serving namespace, so its cost grows with
the fleet. The product's figure is "2,000 workloads planned in under 2 s"; every list the planner
reads (workloads, ConfigMaps, claims, Jobs, ServiceAccounts, Namespaces) and every decision
(deriving each Job, parsing each advice, comparing each spec) is in what is timed here. Half the
workloads carry advice measured for them (``fits``, what a nightly plan mostly sees), half none
(``calibrate``); four node pools, so ``--max-running`` leaves most calibrations waiting.

    python -m benchmarks fleet                      # 2,000 workloads over 30 namespaces
    python -m benchmarks fleet --workloads 200 --namespaces 3 --repeat 5

Each line is the median of ``--repeat`` plans and its spread (min-max), for ``plan -A`` and for
``plan`` of one namespace holding the same workloads, with the time spent in the pure decisions
alone (``fleet.decide`` over what was listed) beside it: the rest is listing over HTTP, JSON
decoding and the fake server itself. The load average and the machine are printed first: the
figures are wall-clock and only comparable on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from advisor import __version__
from advisor.fleet.decide import decide
from advisor.fleet.derive import JobSettings, derive_job
from advisor.fleet.optin import Defaults, read_ask
from advisor.models import WorkloadKind
from advisor.models.kube import KubeWorkload
from advisor.pipeline.plan import DEFAULT_SERVICE_ACCOUNT, PlanRequest, plan, run_args
from advisor.recommend import build_recommendation, render_configmap
from benchmarks import REPO
from benchmarks.machine import describe
from benchmarks.report import machine_line
from benchmarks.results import Host
from testkit.fakeapi.apps import workload
from testkit.fakeapi.rbac import cluster_role_rules, load_documents
from testkit.fakeapi.samples import calibration_result, node_profile
from testkit.fakeapi.server import FakeApiServer

IMAGE = "registry.example.com/tf-thread-advisor:1"
HOME = "ml-platform"
OPT_IN = {"tf-thread-advisor.io/calibrate": "true"}
#: the planner's ServiceAccount and the cluster-scope ClusterRole it is bound to
PLANNER = "tf-thread-advisor-planner"
POOLS = ("cpu-a", "cpu-b", "cpu-c", "cpu-d")
CPUS = ("1", "2", "4", "1500m")


@dataclass(frozen=True)
class Timing:
    """One way of planning, ``repeat`` times: seconds each, and its decisions by verdict."""

    what: str
    seconds: list[float]
    verdicts: dict[str, int]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def serving(namespace: str, index: int) -> dict[str, Any]:
    """An opted-in Deployment of the fleet: its CPU and pool vary with ``index``."""
    name = f"model-{index:05d}"
    cpu = CPUS[index % len(CPUS)]
    container = {
        "image": f"registry.example.com/serving/{name}:3",
        "resources": {
            "requests": {"cpu": cpu, "memory": "2Gi"},
            "limits": {"cpu": cpu, "memory": "2Gi"},
        },
        "envFrom": [{"configMapRef": {"name": f"advice-{name}"}}],
    }
    obj = workload(
        "deployments",
        namespace,
        name,
        container=container,
        pod_spec={"nodeSelector": {"pool": POOLS[index % len(POOLS)]}},
    )
    obj["metadata"]["labels"] = dict(OPT_IN)
    obj["metadata"]["annotations"] = {"tf-thread-advisor.io/model": f"/opt/model/{name}.keras"}
    return obj


def fitting_advice(obj: dict[str, Any], settings: JobSettings, now: datetime) -> dict[str, Any]:
    """The ConfigMap a calibration of ``obj`` would have written a day ago."""
    name = obj["metadata"]["name"]
    namespace = obj["metadata"]["namespace"]
    configmap = f"advice-{name}"
    ask = read_ask(obj["metadata"]["annotations"], Defaults())
    workload = KubeWorkload.read(obj)
    job = derive_job(WorkloadKind.DEPLOYMENT, workload, ask, configmap=configmap, settings=settings)
    rec = build_recommendation(
        calibration_result(node=node_profile(quota=job.cpu)),
        advisor_version=__version__,
        node_selector=obj["spec"]["template"]["spec"]["nodeSelector"],
        target=job.target,
        now=now - timedelta(days=1),
    )
    return render_configmap(rec, configmap, namespace)


#: per namespace, its workloads and its ConfigMaps by name, as the fake API server stored them
Stored = dict[str, tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]]


def fleet(api: FakeApiServer, workloads: int, namespaces: Sequence[str]) -> Stored:
    """``workloads`` Deployments spread over ``namespaces`` (all opted in), every other one with
    advice that fits it."""
    request = PlanRequest(image=IMAGE)
    settings = JobSettings(
        image=IMAGE, service_account=DEFAULT_SERVICE_ACCOUNT, extra_args=run_args(request)
    )
    now = datetime.now(timezone.utc)
    out: Stored = {}
    for namespace in namespaces:
        api.put_namespace(namespace, OPT_IN)
        api.put_service_account(namespace, DEFAULT_SERVICE_ACCOUNT)
        out[namespace] = ([], {})
    for index in range(workloads):
        namespace = namespaces[index % len(namespaces)]
        stored = {**api.put_workload(serving(namespace, index)), "kind": "Deployment"}
        out[namespace][0].append(stored)
        if index % 2 == 0:
            advice = api.put(fitting_advice(stored, settings, now), "tf-thread-advisor")
            out[namespace][1][advice["metadata"]["name"]] = advice
    return out


def timed(what: str, repeat: int, run: Callable[[], list[str]]) -> Timing:
    """``run`` once untimed (imports, the client's connection, caches), then ``repeat`` times."""
    run()
    seconds, verdicts = [], {}
    for _ in range(repeat):
        start = time.perf_counter()
        decided = run()
        seconds.append(time.perf_counter() - start)
        verdicts = {v: decided.count(v) for v in sorted(set(decided))}
    return Timing(what, seconds, verdicts)


def measure(workloads: int, namespaces: int, repeat: int) -> list[Timing]:
    """Plan ``workloads`` over ``namespaces`` with -A, then all of them in one namespace."""
    rules = cluster_role_rules(
        load_documents(REPO / "deploy" / "examples" / "planner-cluster.yaml"), PLANNER
    )
    spread = [f"team-{i:02d}" for i in range(namespaces)]
    out = []
    for label, names, request in (
        (f"plan -A ({namespaces} namespaces)", spread, {"all_namespaces": True}),
        ("plan, one namespace", ["team-00"], {"namespace": "team-00"}),
    ):
        with (
            tempfile.TemporaryDirectory() as tmp,
            FakeApiServer(
                Path(tmp),
                namespaces=(HOME, *names),
                role_namespace=HOME,
                rules=[],
                cluster_rules=rules,
                service_account=PLANNER,
            ) as api,
        ):
            stored = fleet(api, workloads, names)
            ask = PlanRequest(image=IMAGE, kubeconfig=api.kubeconfig, **request)

            def whole(ask: PlanRequest = ask) -> list[str]:
                return [d.decision for d in plan(ask).result.decisions]

            out.append(timed(label, repeat, whole))
            out.append(timed(f"{label}: decisions only", repeat, _decisions_only(stored)))
    return out


def _decisions_only(stored: Stored) -> Callable[[], list[str]]:
    """``fleet.decide`` over the objects the fake server stored, as the planner lists them."""
    settings = JobSettings(
        image=IMAGE,
        service_account=DEFAULT_SERVICE_ACCOUNT,
        extra_args=run_args(PlanRequest(image=IMAGE)),
    )
    now = datetime.now(timezone.utc)

    def run() -> list[str]:
        verdicts: list[str] = []
        for objs, configmaps in stored.values():
            # read as the planner reads them, once listed
            workloads = [KubeWorkload.read(obj) for obj in objs]
            decided = decide(
                workloads,
                configmaps,
                [],
                defaults=Defaults(),
                settings=settings,
                now=now,
                claims={},
            )
            verdicts += [item.verdict for item in decided]
        return verdicts

    return run


def report(timings: list[Timing], workloads: int) -> str:
    lines = []
    for timing in timings:
        low, high = min(timing.seconds), max(timing.seconds)
        per = 1000 * timing.median / workloads
        shown = ", ".join(f"{n} {v}" for v, n in timing.verdicts.items())
        lines.append(
            f"{timing.what:<44} {timing.median:6.2f} s  ({low:.2f}-{high:.2f}; "
            f"{per:.2f} ms a workload)  {shown}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks fleet", description=__doc__)
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--namespaces", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if args.workloads < 1 or args.namespaces < 1 or args.repeat < 1:
        parser.error("--workloads, --namespaces and --repeat must be 1 or more")
    load = os.getloadavg()
    affinity = len(os.sched_getaffinity(0))
    print(machine_line(Host(affinity=affinity, loadavg_start=load, machine=describe())))
    print(f"{args.workloads} workloads, {args.namespaces} namespaces, {args.repeat} plans each")
    print(report(measure(args.workloads, args.namespaces, args.repeat), args.workloads))
    return 0
