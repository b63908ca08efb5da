"""How long ``plan`` takes over a fleet: N opted-in workloads in K namespaces, through the real
pipeline and the official client against the strict fake API server on loopback.

Why: a platform team runs one nightly planner over every serving namespace, so its cost grows with
the fleet. The product's figure is "2,000 workloads planned in under 1.5 s"; every list the planner
reads (workloads, ConfigMaps, claims, Jobs, ServiceAccounts, Namespaces) and every decision
(deriving each Job, parsing each advice, comparing each spec) is in what is timed here. Half the
workloads carry advice measured for them (``fits``, what a nightly plan mostly sees), half none
(``calibrate``); four node pools, so ``--max-running`` leaves most calibrations waiting.

    python -m benchmarks fleet                      # 2,000 workloads over 30 namespaces
    python -m benchmarks fleet --workloads 200 --namespaces 3 --repeat 5

Each line is the median of ``--repeat`` plans and its spread (min-max), for ``plan -A`` and for
``plan`` of one namespace holding the same workloads: first end to end, ``python -m advisor
plan`` in a fresh process as a person or the CronJob runs it, with its parts
(``benchmarks/fleet_child.py``: the imports, the lists, the decisions, the rest); then planned
again in this process, imports paid, and the pure decisions alone (``fleet.decide`` over what was
listed): the rest of those is listing over HTTP, JSON decoding and the fake server itself, which
runs in this process. The load average and the machine are printed first: the figures are
wall-clock and only comparable on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
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
from advisor.models.kube import KubeWorkload
from advisor.pipeline.plan import DEFAULT_SERVICE_ACCOUNT, PlanRequest, plan, run_args
from advisor.recommend import build_recommendation, render_configmap
from advisor.recommend.stored import by_name
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
    """One way of planning, ``repeat`` times: seconds each, and its decisions by verdict; end to
    end, the seconds of each part too (``benchmarks/fleet_child.py``)."""

    what: str
    seconds: list[float]
    decisions: dict[str, int]
    parts: dict[str, list[float]] | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def part(self, name: str) -> float:
        assert self.parts is not None
        return statistics.median(self.parts[name])


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
    assert workload is not None  # a Deployment
    job = derive_job(workload, ask, configmap=configmap, settings=settings)
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
    seconds, decisions = [], {}
    for _ in range(repeat):
        start = time.perf_counter()
        decided = run()
        seconds.append(time.perf_counter() - start)
        decisions = {v: decided.count(v) for v in sorted(set(decided))}
    return Timing(what, seconds, decisions)


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

            args = (
                ["--all-namespaces"] if "all_namespaces" in request else ["--namespace", names[0]]
            )
            out.append(end_to_end(f"{label}, end to end", repeat, api.kubeconfig, args))
            with tempfile.TemporaryDirectory() as cache:
                out.append(
                    end_to_end(
                        f"{label}, end to end, bytecode cached",
                        repeat,
                        api.kubeconfig,
                        args,
                        bytecode=Path(cache),
                    )
                )
            out.append(timed(f"{label}, imports paid", repeat, whole))
            out.append(timed(f"{label}: decisions only", repeat, _decisions_only(stored)))
    return out


def end_to_end(
    what: str, repeat: int, kubeconfig: Path, args: Sequence[str], bytecode: Path | None = None
) -> Timing:
    """``python -m advisor plan`` in a fresh process, ``repeat`` times (once untimed first, so the
    files are in the page cache as they are for a CronJob that ran yesterday): the wall time of
    each process and what its parts took.

    ``bytecode``: a folder the untimed first run writes the compiled modules to and the timed
    runs read them from, as an installed advisor has them (pip compiles at install; the image
    then only stops writing new ones). Without it the checkout's setting holds (this one runs
    with ``PYTHONDONTWRITEBYTECODE=1``: every process compiles the advisor from source)."""
    env = dict(os.environ)
    if bytecode is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    seconds: list[float] = []
    parts: dict[str, list[float]] = {}
    decisions: dict[str, int] = {}
    for run in range(repeat + 1):
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "parts.json"
            command = [sys.executable, "-m", "benchmarks.fleet_child", str(report), "--", *args]
            command += ["--kubeconfig", str(kubeconfig), "--image", IMAGE]
            start = time.perf_counter()
            subprocess.run(command, cwd=REPO, check=True, env=env)
            took = time.perf_counter() - start
            answer = json.loads(report.read_text(encoding="utf-8"))
        if answer["code"] != 0:
            raise RuntimeError(f"plan exited {answer['code']}")
        if run == 0:
            continue
        seconds.append(took)
        child = answer["parts"]
        rest = child["total"] - child["imports"] - child["listing"] - child["deciding"]
        for name, value in (
            ("start", took - child["total"]),
            ("imports", child["imports"]),
            ("listing", child["listing"]),
            ("deciding", child["deciding"]),
            ("rest", rest),
        ):
            parts.setdefault(name, []).append(value)
        decided = answer["decisions"]
        decisions = {v: decided.count(v) for v in sorted(set(decided))}
    return Timing(what, seconds, decisions, parts)


def _decisions_only(stored: Stored) -> Callable[[], list[str]]:
    """``fleet.decide`` over the objects the fake server stored, as the planner lists them."""
    settings = JobSettings(
        image=IMAGE,
        service_account=DEFAULT_SERVICE_ACCOUNT,
        extra_args=run_args(PlanRequest(image=IMAGE)),
    )
    now = datetime.now(timezone.utc)

    def run() -> list[str]:
        decisions: list[str] = []
        for objs, configmaps in stored.values():
            # read as the planner reads them, once listed (each advice parsed afresh: once a plan)
            workloads = [view for obj in objs if (view := KubeWorkload.read(obj)) is not None]
            decided = decide(
                workloads,
                by_name(configmaps.values()),
                [],
                defaults=Defaults(),
                settings=settings,
                now=now,
                claims={},
            )
            decisions += [item.decision for item in decided]
        return decisions

    return run


def report(timings: list[Timing], workloads: int) -> str:
    lines = []
    for timing in timings:
        low, high = min(timing.seconds), max(timing.seconds)
        per = 1000 * timing.median / workloads
        shown = ", ".join(f"{n} {v}" for v, n in timing.decisions.items())
        lines.append(
            f"{timing.what:<48} {timing.median:6.2f} s  ({low:.2f}-{high:.2f}; "
            f"{per:.2f} ms a workload)  {shown}"
        )
        if timing.parts is not None:
            shares = ", ".join(
                f"{name} {timing.part(name):.2f} s"
                for name in ("start", "imports", "listing", "deciding", "rest")
            )
            lines.append(f"  its parts (medians): {shares}")
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
