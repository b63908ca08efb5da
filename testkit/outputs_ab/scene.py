"""The cluster every command of the A/B comparison runs against: one fake API server and one
Prometheus stand-in, built the same way every time (same names, same uids, same timestamps), so
that two servers built for the two sides of a command that writes hold the same objects.

What it holds (``build``):

- ``team-00`` .. ``team-04``: the benchmark's fleet (``benchmarks/fleet.py``'s ``serving`` and
  ``fitting_advice``): opted-in Deployments over four node pools, every other one with advice
  that fits it;
- ``ml``: the hand-made cases of fleet mode: calibrate (no advice, a PVC-mounted model, a
  toleration, advice measured for another CPU limit, a stale advice), fits, pending and failed
  calibration Jobs (created by a real ``plan --apply`` while the scene is built), bad annotations
  (objective, concurrency, budget, an SLO without its bound, a container that is not there), two
  containers with and without the container annotation, TF Serving containers without a model
  annotation (its model from ``MODEL_NAME``, and one serving a ``--model_config_file``), a
  throughput objective with concurrency and batch size, an SLO, a StatefulSet, a restart
  annotation, a requests file (inside the model and escaping it), an input shape, and
  production: an advice
  that made its pods worse (a revert with ``--prometheus-url``), one that opts out of reverts,
  one that helped, and a throttled container that is not opted in (a suggestion);
- ``web``: not opted in, the consumers ``status`` audits: every problem code (limits, requests,
  pools, resize policy, pods older than the advice, missing advice, key references,
  StatefulSets, DaemonSets, bare pods), an advice nobody reads, one without a data time, and
  four consumers with production verdicts (improved, regressed, unchanged, and regressed by
  its own p99 query);
- ``quiet``: opted in, but without the calibration ServiceAccount (``plan -A`` skips it).

``rights.SETUPS`` adds what admission says to a plan's Jobs (a ResourceQuota, a webhook's and a
policy's denials, Pod Security's warning) to a scene built for one command; ``rights.RIGHTS`` are
the rules each command runs with; ``prometheus.answer`` is what the Prometheus stand-in says.

The clock: every side runs with ``datetime.now`` frozen at ``fixed.NOW``
(testkit/outputs_ab/side.py) and the fake server stamps its objects with ``fixed.server_clock``'s
time, so ages, windows and verdicts are the same on both sides and on every run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from advisor import __version__
from advisor.fleet.derive import JobSettings, derive_job
from advisor.fleet.optin import Defaults, read_ask
from advisor.keys import ADVICE_HASH_ANNOTATION, HASH_ANNOTATION, LATENCY_QUERY_ANNOTATION
from advisor.models import ServingTarget
from advisor.models.kube import KubeWorkload
from advisor.pipeline.plan import DEFAULT_SERVICE_ACCOUNT, PlanRequest, plan, run_args
from advisor.recommend import build_recommendation, render_configmap
from advisor.recommend.previous import keep_previous
from benchmarks.fleet import IMAGE, OPT_IN, PLANNER, fitting_advice, serving
from testkit.fakeapi.apps import RESIZE_ON_CPU, reads, workload
from testkit.fakeapi.claims import claim
from testkit.fakeapi.pods import bare_pod, pod_of
from testkit.fakeapi.samples import advice_configmap, calibration_result, node_profile
from testkit.fakeapi.server import FakeApiServer
from testkit.fakeprom import FakePrometheus
from testkit.outputs_ab.fixed import (
    HOME,
    MEASURED,
    ML,
    NAMESPACES,
    NOW,
    QUIET,
    TEAMS,
    WEB,
    same_ids,
    server_clock,
)
from testkit.outputs_ab.prometheus import answer
from testkit.outputs_ab.rights import PLANNER_RULES, PRODUCTION_RULES, READER_RULES

#: the workloads the fleet puts in ``team-*`` by default (``--fleet``)
FLEET = 20
LATENCY = 'p99_seconds{namespace="$namespace",deployment="$workload"}'

# --------------------------------------------------------------------------------------------------
# the workloads


def opted_in(
    name: str,
    container: dict[str, Any],
    annotations: Mapping[str, str] | None = None,
    *,
    resource: str = "deployments",
    namespace: str = ML,
    pod_spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A workload labelled to be calibrated, with fleet mode's ``annotations``."""
    obj = workload(resource, namespace, name, container=container, pod_spec=pod_spec)
    obj["metadata"]["labels"] = dict(OPT_IN)
    obj["metadata"]["annotations"] = dict(annotations or {})
    return obj


def server(name: str, cpu: str = "2", **extra: Any) -> dict[str, Any]:
    """A serving container reading ``advice-<name>`` with ``cpu`` as request and limit."""
    return {
        "image": f"registry.example.com/{name}-serving:3",
        "resources": {
            "requests": {"cpu": cpu, "memory": "1Gi"},
            "limits": {"cpu": cpu, "memory": "1Gi"},
        },
        "envFrom": [{"configMapRef": {"name": f"advice-{name}"}}],
        **extra,
    }


def _settings() -> JobSettings:
    request = PlanRequest(image=IMAGE)
    return JobSettings(
        image=IMAGE, service_account=DEFAULT_SERVICE_ACCOUNT, extra_args=run_args(request)
    )


def _fits(api: FakeApiServer, stored: dict[str, Any], *, measured: datetime = MEASURED) -> None:
    """The advice a calibration of the stored workload (its ask from its annotations, its Job
    derived as plan derives it) would have written at ``measured``."""
    meta = stored["metadata"]
    ask = read_ask(meta.get("annotations") or {}, Defaults())
    workload = KubeWorkload.read(stored)
    assert workload is not None, f"the scene stored a kind no view reads: {stored['kind']}"
    configmap = f"advice-{meta['name']}"
    job = derive_job(workload, ask, configmap=configmap, settings=_settings())
    rec = build_recommendation(
        calibration_result(node=node_profile(quota=job.cpu)),
        advisor_version=__version__,
        node_selector=stored["spec"]["template"]["spec"].get("nodeSelector"),
        target=job.target,
        now=measured,
    )
    api.put(render_configmap(rec, configmap, meta["namespace"]), "tf-thread-advisor")


def _fleet(api: FakeApiServer, workloads: int) -> None:
    """benchmarks/fleet.py's fleet, with this scene's clock."""
    for namespace in TEAMS:
        api.put_namespace(namespace, OPT_IN)
        api.put_service_account(namespace, DEFAULT_SERVICE_ACCOUNT)
    for index in range(workloads):
        stored = api.put_workload(serving(TEAMS[index % len(TEAMS)], index))
        if index % 2 == 0:
            advice = fitting_advice({**stored, "kind": "Deployment"}, _settings(), NOW)
            api.put(advice, "tf-thread-advisor")


def _planned_jobs(api: FakeApiServer) -> None:
    """Calibration Jobs as a real ``plan --apply`` creates them two hours ago: ``pending`` still
    running, ``failed`` failed, ``c``'s complete (its advice is there)."""
    for name in ("c", "pending", "failed"):
        api.put_workload(opted_in(name, server(name), _ann(model=f"/models/{name}")))
    with server_clock(NOW - timedelta(hours=2)):
        request = PlanRequest(
            image=IMAGE,
            namespace=ML,
            apply=True,
            events=False,
            max_running=10,
            kubeconfig=api.kubeconfig,
        )
        plan(request, now=NOW - timedelta(hours=2))
    jobs = {j["metadata"]["annotations"]["tf-thread-advisor.io/workload"]: j for j in api.jobs()}
    with server_clock(NOW - timedelta(hours=1)):
        api.set_job_running(ML, jobs["deployment/pending"]["metadata"]["name"])
        api.set_job_condition(
            ML,
            jobs["deployment/failed"]["metadata"]["name"],
            "Failed",
            reason="BackoffLimitExceeded",
            message="Job has reached the specified backoff limit",
            failed=2,
        )
        api.set_job_condition(ML, jobs["deployment/c"]["metadata"]["name"], "Complete")


def _replacing(current: dict[str, Any], name: str) -> dict[str, Any]:
    """``current`` advice written over an older one (intra 4, inter 2), which it keeps."""
    old = build_recommendation(
        calibration_result(4, 2, node=node_profile(quota=2.0)),
        advisor_version=__version__,
        now=NOW - timedelta(days=9),
    )
    return keep_previous(current, render_configmap(old, f"advice-{name}", ML))


def _ml(api: FakeApiServer) -> None:
    api.put_namespace(ML, OPT_IN)
    api.put_service_account(ML, DEFAULT_SERVICE_ACCOUNT)
    _planned_jobs(api)
    _fits(api, api.workload("deployments", ML, "c") or {})
    pvc = {"name": "models", "persistentVolumeClaim": {"claimName": "models-a"}}
    mount = [{"name": "models", "mountPath": "/models", "readOnly": True}]
    toleration = {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
    api.put_claim(claim(ML, "models-a", ["ReadWriteMany"], bound_modes=["ReadWriteMany"]))
    api.put_claim(claim(ML, "models-rwo", ["ReadWriteOnce"], bound_modes=["ReadWriteOnce"]))
    sidecar = {"name": "proxy", "image": "registry.example.com/proxy:1"}
    tf_serving = "tensorflow/serving:2.21.0"
    cases = [
        opted_in(
            "a",
            server("a", "1", volumeMounts=mount),
            _ann(model="/models/a/saved"),
            pod_spec={"nodeSelector": {"pool": "a"}, "volumes": [pvc]},
        ),
        opted_in(
            "rwo",
            server("rwo", "1", volumeMounts=mount),
            _ann(model="/models/rwo"),
            pod_spec={"volumes": [{**pvc, "persistentVolumeClaim": {"claimName": "models-rwo"}}]},
        ),
        opted_in(
            "b",
            server("b", "1500m"),
            _ann(model="/opt/model/b.keras"),
            pod_spec={"tolerations": [toleration]},
        ),
        opted_in("bad-objective", server("bo"), _ann(model="/m", objective="fastest")),
        opted_in("bad-concurrency", server("bc"), _ann(model="/m", concurrency="zero")),
        opted_in("bad-budget", server("bb"), _ann(model="/m", budget="-5")),
        opted_in("bad-slo", server("bs"), _ann(model="/m", objective="slo")),
        opted_in("bad-revert", server("br"), _ann(model="/m", revert="maybe")),
        opted_in("no-model", server("nm")),
        opted_in("bad-container", server("bk"), _ann(model="/m", container="nope")),
        workload_with(
            opted_in("two-unnamed", server("tu"), _ann(model="/m")), extra_container=sidecar
        ),
        workload_with(
            opted_in("two-named", server("tn"), _ann(model="/m", container="server")),
            extra_container=sidecar,
        ),
        opted_in(
            "tfserving",
            server("tfs", image=tf_serving, env=[{"name": "MODEL_NAME", "value": "resnet"}]),
        ),
        opted_in(
            "tfserving-args",
            server("tfa", image=tf_serving, args=["--model_base_path=/models/bert", "--port=8500"]),
        ),
        opted_in(
            "tfserving-config",
            server("tfc", image=tf_serving, args=["--model_config_file=/config/models.conf"]),
        ),
        opted_in(
            "throughput",
            server("tp", "4"),
            _ann(
                model="/models/tp", objective="throughput", concurrency="4", **{"batch-size": "8"}
            ),
        ),
        opted_in(
            "slo",
            server("slo", "2"),
            _ann(model="/models/slo", objective="slo", **{"p99-ms": "25"}),
        ),
        opted_in("db", server("db"), _ann(model="/models/db"), resource="statefulsets"),
        opted_in("restarter", server("rs"), _ann(model="/models/rs", restart="true")),
        opted_in("replayed", server("rp"), _ann(model="/models/rp", requests="warmup.jsonl")),
        opted_in("escaping", server("es"), _ann(model="/models/es", requests="/etc/passwd")),
        opted_in(
            "shaped", server("sh"), _ann(model="/models/sh", **{"input-shape": "input_ids=128"})
        ),
    ]
    for obj in cases:
        api.put_workload(obj)
    # advice measured for 2 CPUs, the workload has 4 now; and a stale advice
    resized = opted_in("resized", server("resized", "2"), _ann(model="/models/resized"))
    _fits(api, api.put_workload(resized))
    api.put_workload(opted_in("resized", server("resized", "4"), _ann(model="/models/resized")))
    stale = api.put_workload(opted_in("stale", server("stale"), _ann(model="/models/stale")))
    _fits(api, stale, measured=NOW - timedelta(days=40))
    # production: advice that replaced an older one, each read by its workload's pods
    for name, marks in (
        ("regressed", {}),
        ("regressed-optout", _ann(revert="false")),
        ("helped", {}),
    ):
        stored = api.put_workload(
            opted_in(name, server(name), {**_ann(model=f"/models/{name}"), **marks})
        )
        _fits(api, stored)
        current = api.get(ML, f"advice-{name}")
        assert current is not None
        api.put(_replacing(current, name), "tf-thread-advisor")
        api.put_pod(
            pod_of({**stored, "kind": "Deployment"}, "a1", started=MEASURED + timedelta(hours=2))
        )
    hot = api.put_workload(workload("deployments", ML, "hot", container=server("hot")))
    api.put_pod(pod_of({**hot, "kind": "Deployment"}, "a1", started=NOW - timedelta(days=3)))


def _ann(**values: str) -> dict[str, str]:
    """Fleet mode's annotations: ``model="/m"`` is tf-thread-advisor.io/model."""
    return {f"tf-thread-advisor.io/{key}": value for key, value in values.items()}


def workload_with(obj: dict[str, Any], *, extra_container: dict[str, Any]) -> dict[str, Any]:
    obj["spec"]["template"]["spec"]["containers"].append(extra_container)
    return obj


def advice_cm(
    name: str,
    *,
    quota: float | None = 4.0,
    node_selector: dict[str, str] | None = None,
    target: ServingTarget | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """An advice in ``web`` measured under ``quota`` CPUs on an 8-CPU node at MEASURED."""
    return advice_configmap(
        name,
        WEB,
        measured=MEASURED,
        quota=quota,
        node_selector=node_selector,
        target=target,
        annotations=annotations,
    )


POOL = "node.kubernetes.io/instance-type"


def _web_advice(api: FakeApiServer) -> str:
    """The advice ConfigMaps of ``web`` and one that is not advice; tf-advice's content hash."""
    api.put(advice_cm("tf-advice"))
    api.put(advice_cm("spare"))
    api.put(advice_cm("pooled", node_selector={POOL: "c7i.4xlarge"}))
    api.put(advice_cm("whole-node", quota=None))
    api.put(advice_cm("searched", annotations={"reloader.stakater.com/match": "true"}))
    by_request = ServingTarget(workload="deployment/req", container="server", cpu_from="request")
    api.put(advice_cm("for-request", quota=2.0, target=by_request))
    older = advice_cm("older")
    del older["metadata"]["annotations"]["tf-thread-advisor.io/data-changed-at"]
    api.put(older)
    api.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "app-config", "namespace": WEB},
            "data": {"MODE": "fast"},
        }
    )
    stored = api.get(WEB, "tf-advice")
    assert stored is not None
    return str(stored["metadata"]["annotations"][HASH_ANNOTATION])


def _deploy(api: FakeApiServer, name: str, container: dict[str, Any], **kw: Any) -> dict[str, Any]:
    obj = api.put_workload(workload("deployments", WEB, name, container=container, **kw))
    return {**obj, "kind": "Deployment"}


def _old_pod(api: FakeApiServer, obj: dict[str, Any]) -> None:
    api.put_pod(pod_of(obj, "old", started=MEASURED - timedelta(days=3)))


def _web(api: FakeApiServer) -> None:
    """status's consumers: every problem code produced, and each quiet somewhere."""
    current = _web_advice(api)
    _deploy(api, "web-ok", reads())
    _deploy(api, "web-small", reads(cpu="2", resize=False))
    _deploy(api, "web-nolimit", reads(cpu=None, resize=False))
    _deploy(api, "pod-level", reads(cpu=None), pod_spec={"resources": {"limits": {"cpu": "4"}}})
    resized = _deploy(api, "resized", reads())
    api.put_pod(pod_of(resized, "a", started=NOW - timedelta(hours=1)))
    api.put_pod(pod_of(resized, "b", started=NOW - timedelta(hours=1), cpu_now="3"))
    _deploy(api, "free", reads("whole-node", cpu=None))
    _deploy(api, "limited", reads("whole-node"))
    _deploy(api, "selected", reads("pooled"), pod_spec={"nodeSelector": {POOL: "c7i.4xlarge"}})
    _deploy(api, "elsewhere", reads("pooled"), pod_spec={"nodeSelector": {POOL: "m7i.xlarge"}})
    _deploy(api, "anywhere", reads("pooled"))
    predate = _deploy(api, "predate", reads())
    api.put_pod(pod_of(predate, "new", started=MEASURED + timedelta(minutes=5)))
    _old_pod(api, predate)
    api.put_pod(pod_of(predate, "pending", started=MEASURED - timedelta(days=2), phase="Pending"))
    _old_pod(api, _deploy(api, "rolled", reads(), **{ADVICE_HASH_ANNOTATION: current}))
    behind = {ADVICE_HASH_ANNOTATION: "sha256:" + "0" * 64}
    _old_pod(api, _deploy(api, "behind", reads(), **behind))
    reload = {"configmap.reloader.stakater.com/reload": "app-config, tf-advice"}
    _old_pod(api, _deploy(api, "named", reads(), metadata={"annotations": reload}))
    search = {"reloader.stakater.com/search": "true"}
    _old_pod(api, _deploy(api, "matched", reads("searched"), metadata={"annotations": search}))
    _old_pod(api, _deploy(api, "reads-older", reads("older")))
    _deploy(api, "needs", reads("gone"))
    _deploy(api, "hopes", reads("gone-too", optional=True))
    _deploy(api, "configured", reads("app-config"))
    _web_more(api)


def _web_more(api: FakeApiServer) -> None:
    """Key references, request-basis advice, other kinds and production's consumers."""
    for name, key in (("by-key", "TF_NUM_INTRAOP_THREADS"), ("other-key", "LOG_LEVEL")):
        ref = {"configMapKeyRef": {"name": "tf-advice", "key": key}}
        container = {
            "env": [{"name": "X", "valueFrom": ref}],
            "resources": {"limits": {"cpu": "4"}},
            "resizePolicy": RESIZE_ON_CPU,
        }
        _deploy(api, name, container)
    for name, cpu in (("req", "2000m"), ("req-big", "3"), ("req-unset", None)):
        container = reads("for-request", cpu=None)
        if cpu is not None:
            container["resources"] = {"requests": {"cpu": cpu, "memory": "4Gi"}}
        _deploy(api, name, container)
    sts = api.put_workload(workload("statefulsets", WEB, "cache", container=reads(cpu="2")))
    ds = api.put_workload(workload("daemonsets", WEB, "agent", container=reads(resize=False)))
    api.put_pod(pod_of(sts, "0", started=MEASURED - timedelta(days=2)))
    api.put_pod(pod_of(ds, "x1", started=MEASURED + timedelta(hours=1)))
    api.put_pod(bare_pod(WEB, "debug", container=reads(), started=MEASURED - timedelta(days=2)))
    # production verdicts: pods started after the advice's data changed
    for name in ("web-better", "web-worse", "web-same"):
        obj = _deploy(api, name, reads())
        api.put_pod(pod_of(obj, "a1", started=MEASURED + timedelta(hours=1)))
    latency = {"annotations": {LATENCY_QUERY_ANNOTATION: LATENCY}}
    slow = _deploy(api, "web-slow", reads(), metadata=latency)
    api.put_pod(pod_of(slow, "a1", started=MEASURED + timedelta(hours=1)))


def _quiet(api: FakeApiServer) -> None:
    api.put_namespace(QUIET, OPT_IN)  # no calibration ServiceAccount: plan -A skips it
    api.put_workload(opted_in("lonely", server("lonely"), _ann(model="/m"), namespace=QUIET))


# --------------------------------------------------------------------------------------------------
# the scene


@dataclass
class Scene:
    api: FakeApiServer
    prometheus: FakePrometheus
    #: the folder the server's kubeconfig and the scene's files are in
    folder: Path


@contextlib.contextmanager
def build(folder: Path, fleet: int = FLEET, *, seed: int = 41) -> Iterator[Scene]:
    """The scene's servers, started, in ``folder``; the same objects for the same ``fleet``."""
    folder.mkdir(parents=True, exist_ok=True)
    with (
        same_ids(seed),
        FakeApiServer(
            folder,
            namespaces=NAMESPACES,
            role_namespace=HOME,
            rules=[],
            cluster_rules=[*PLANNER_RULES, *PRODUCTION_RULES, *READER_RULES],
            service_account=PLANNER,
        ) as api,
        FakePrometheus(answer) as prometheus,
    ):
        with server_clock(MEASURED - timedelta(days=10)):
            _fleet(api, fleet)
            _ml(api)
            _web(api)
            _quiet(api)
        with server_clock(NOW):
            yield Scene(api, prometheus, folder)
