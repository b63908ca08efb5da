"""``status`` joins each advice with the containers that read it, through the real CLI against the
strict fake API server, authorized by the read-only Role of deploy/examples/advice-reader.yaml.

Every problem code has a test that produces it and one where it stays quiet; the inputs are
workloads and pods as the cluster would hold them, the expectations follow from them.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from advisor import errors
from advisor.cli import main
from advisor.keys import ADVICE_HASH_ANNOTATION, HASH_ANNOTATION
from advisor.models import AdviceStatus, ServingTarget, StatusResult
from advisor.pipeline import Instruments, cluster_status
from advisor.recommend import content_hash, parse
from testkit.fakeapi.apps import RESIZE_ON_CPU, reads, workload
from testkit.fakeapi.pods import bare_pod, pod_of
from testkit.fakeapi.rbac import Rule
from testkit.fakeapi.samples import advice_configmap
from testkit.fakeapi.server import FakeApiServer, refused_port
from tests.integration.status_cli import json_rows, reader_rules, status
from tests.support.search_fakes import tripwire

NOW = datetime.now(timezone.utc).replace(microsecond=0)
#: when the advice of these tests was measured (and its data last changed)
MEASURED = NOW - timedelta(days=1)


def advice_cm(
    name: str = "tf-advice",
    *,
    quota: float | None = 4.0,
    node_selector: dict[str, str] | None = None,
    namespace: str = "ml",
    target: ServingTarget | None = None,
    **annotations: str,
) -> dict[str, Any]:
    """An advice measured under ``quota`` CPUs on an 8-CPU node, a day ago (for ``target``)."""
    return advice_configmap(
        name,
        namespace,
        measured=MEASURED,
        quota=quota,
        node_selector=node_selector,
        target=target,
        annotations=annotations,
    )


def deployment(name: str, container: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    return workload("deployments", "ml", name, container=container, **kw)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(
        tmp_path, namespaces=("ml", "web"), rules=reader_rules("Role"), role_namespace="ml"
    ) as server:
        server.put(advice_cm())
        yield server


def rows_of(capsys: pytest.CaptureFixture[str], api: FakeApiServer) -> dict[str, Any]:
    return {row["name"]: row for row in json_rows(capsys, api, "--namespace", "ml")}


def consumer(
    capsys: pytest.CaptureFixture[str], api: FakeApiServer, name: str, advice: str = "tf-advice"
) -> dict[str, Any]:
    (found,) = [c for c in rows_of(capsys, api)[advice]["consumers"] if c["name"] == name]
    return found


def codes(found: dict[str, Any]) -> set[str]:
    return {p["code"] for p in found["problems"]}


def message(found: dict[str, Any], code: str) -> str:
    (text,) = [p["message"] for p in found["problems"] if p["code"] == code]
    return str(text)


# --------------------------------------------------------------------------------------------------
# every check at once, as one namespace a platform team has


def test_done_when(
    api: FakeApiServer,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api.put(advice_cm("spare"))  # measured like the other, mounted by nobody
    api.put_workload(deployment("web-ok", reads(cpu="4", resize=True)))
    api.put_workload(deployment("web-small", reads(cpu="2", resize=False)))
    api.put_workload(deployment("web-nolimit", reads(cpu=None, resize=False)))
    api.put_workload(deployment("other"))  # mounts nothing

    rows = rows_of(capsys, api)
    consumers = {c["name"]: c for c in rows["tf-advice"]["consumers"]}
    assert sorted(consumers) == ["web-nolimit", "web-ok", "web-small"]  # not "other"
    assert {c["kind"] for c in consumers.values()} == {"Deployment"}
    assert {c["container"] for c in consumers.values()} == {"server"}
    assert (consumers["web-ok"]["cpu_limit"], consumers["web-ok"]["problems"]) == (4.0, [])
    assert codes(consumers["web-small"]) == {"cpu-limit-differs", "resize-restarts-nothing"}
    assert consumers["web-small"]["cpu_limit"] == 2.0
    assert "is 2" in message(consumers["web-small"], "cpu-limit-differs")
    assert "under 4" in message(consumers["web-small"], "cpu-limit-differs")
    assert codes(consumers["web-nolimit"]) == {"no-cpu-limit", "resize-restarts-nothing"}
    assert consumers["web-nolimit"]["cpu_limit"] is None
    assert (rows["tf-advice"]["unused"], rows["spare"]["unused"]) == (False, True)
    assert rows["spare"]["consumers"] == []

    # --fail-on-problems: the same output, then a distinct non-zero exit and one line
    code, out, err = status(
        capsys, api, "--namespace", "ml", "--format", "json", "--fail-on-problems"
    )
    assert code == errors.ProblemsFoundError.exit_code != 0
    assert {row["name"] for row in json.loads(out)} == {"tf-advice", "spare"}
    (line,) = err.splitlines()
    assert line.startswith("tf-thread-advisor: error: 4 problem(s) in 2 consumer(s)")
    assert "ml/deployment/web-small (server): cpu-limit-differs" in line

    # an API server that refuses connections: exit 7 within 10 s, not after a minute
    dead = api.write_kubeconfig(
        tmp_path / "dead", token="t", server=f"http://127.0.0.1:{refused_port()}"
    )
    started = time.monotonic()
    code = main(["status", "--kubeconfig", str(dead), "--namespace", "ml"])
    took = time.monotonic() - started
    _, err = capsys.readouterr()
    assert code == errors.ClusterUnreachableError.exit_code
    assert took < 10, f"status took {took:.1f}s against a refused port"
    assert "cannot reach the API server" in err.splitlines()[-1]

    # run --namespace without --configmap: a usage error before any sweep
    no_measuring = Instruments(
        probe=tripwire("run went on to probe"), sweep=tripwire("run went on to measure")
    )
    assert (
        main(["run", "--namespace", "x"], instruments=no_measuring) == errors.UsageError.exit_code
    )
    assert "--namespace needs --configmap" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# each problem: produced, and quiet


def test_each_advice_is_parsed_once_however_many_containers_read_it(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    api.put(advice_cm("spare"))
    for name in ("web-a", "web-b"):
        api.put_workload(deployment(name, reads(cpu="4", resize=True)))
    hashed: list[object] = []

    def counted(env: Any) -> str:
        hashed.append(env)
        return content_hash(env)

    # every advice that validates is hashed once as it is parsed, whoever parses it
    monkeypatch.setattr(parse, "content_hash", counted)
    code, out, err = status(capsys, api, "--namespace", "ml", "--format", "json")
    assert (code, err) == (0, "")
    consumers = {row["name"]: len(row["consumers"]) for row in json.loads(out)}
    assert consumers == {"spare": 0, "tf-advice": 2}
    assert len(hashed) == 2


def test_cpu_limit_differs_and_quiet_when_equal_in_any_notation(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.put_workload(deployment("half", reads(cpu="2000m")))
    api.put_workload(deployment("same", reads(cpu="4000m")))
    api.put_workload(
        deployment("capped", reads(cpu="8"), pod_spec={"resources": {"limits": {"cpu": "4"}}})
    )
    rows = {c["name"]: c for c in rows_of(capsys, api)["tf-advice"]["consumers"]}
    assert codes(rows["half"]) == {"cpu-limit-differs"}
    assert rows["half"]["cpu_limit"] == 2.0
    assert codes(rows["same"]) == set() and rows["same"]["cpu_limit"] == 4.0
    # a pod-level limit (Kubernetes 1.34+) caps the container's: the quota is 4
    assert codes(rows["capped"]) == set() and rows["capped"]["cpu_limit"] == 4.0


def test_cpu_limit_differs_for_a_pod_resized_in_place(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    web = api.put_workload(deployment("web", reads(cpu="4")))
    api.put_pod(pod_of(web, "a", started=NOW - timedelta(hours=1)))
    assert codes(consumer(capsys, api, "web")) == set()
    api.put_pod(pod_of(web, "b", started=NOW - timedelta(hours=1), cpu_now="3"))
    found = consumer(capsys, api, "web")
    assert codes(found) == {"cpu-limit-differs"} and found["cpu_limit"] == 4.0
    assert "web-5d8f7c9b6-b (3)" in message(found, "cpu-limit-differs")


def test_no_cpu_limit_and_quiet_with_a_pod_level_or_admitted_limit(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.put_workload(deployment("bare-metal", reads(cpu=None)))
    pod_level = {"resources": {"limits": {"cpu": "4"}}}
    api.put_workload(deployment("pod-level", reads(cpu=None), pod_spec=pod_level))
    # no limit in the template, but a LimitRange default gave its pods one
    defaulted = api.put_workload(deployment("defaulted", reads(cpu=None)))
    admitted = pod_of(defaulted, "a", started=NOW)
    admitted["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "4"}}
    api.put_pod(admitted)
    rows = {c["name"]: c for c in rows_of(capsys, api)["tf-advice"]["consumers"]}
    assert codes(rows["bare-metal"]) == {"no-cpu-limit"}
    assert "quota of 4 CPUs" in message(rows["bare-metal"], "no-cpu-limit")
    assert codes(rows["pod-level"]) == set() and rows["pod-level"]["cpu_limit"] == 4.0
    assert codes(rows["defaulted"]) == set() and rows["defaulted"]["cpu_limit"] == 4.0


def test_no_quota_measured_and_none_used_is_quiet_a_limit_is_not(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.put(advice_cm("whole-node", quota=None))
    api.put_workload(deployment("free", reads("whole-node", cpu=None)))
    api.put_workload(deployment("limited", reads("whole-node", cpu="4")))
    rows = {c["name"]: c for c in rows_of(capsys, api)["whole-node"]["consumers"]}
    assert codes(rows["free"]) == set()
    assert codes(rows["limited"]) == {"cpu-limit-differs"}
    assert "measured without one (8 CPUs usable)" in message(rows["limited"], "cpu-limit-differs")


def requests_only(configmap: str, cpu: str | None) -> dict[str, Any]:
    """A container that reads ``configmap`` with a CPU request of ``cpu`` and no CPU limit."""
    container = reads(configmap, cpu=None)
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu, "memory": "4Gi"}}
    return container


def test_request_basis_advice_compares_a_request_only_consumer_with_its_request(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    measured_for = ServingTarget(workload="deployment/web", container="server", cpu_from="request")
    api.put(advice_cm("for-request", quota=2.0, target=measured_for))
    api.put_workload(deployment("web", requests_only("for-request", "2000m")))
    api.put_workload(deployment("web-big", requests_only("for-request", "3")))
    api.put_workload(deployment("web-unset", requests_only("for-request", None)))
    api.put_workload(deployment("web-limited", reads("for-request", cpu="4")))
    row = rows_of(capsys, api)["for-request"]
    assert row["target"] == measured_for.model_dump(mode="json")
    found = {c["name"]: c for c in row["consumers"]}
    assert (found["web"]["cpu_limit"], found["web"]["cpu_request"]) == (None, 2.0)
    assert found["web"]["problems"] == []
    assert codes(found["web-big"]) == {"cpu-request-differs"}
    assert "its CPU request is 3" in message(found["web-big"], "cpu-request-differs")
    assert "request of 2" in message(found["web-big"], "cpu-request-differs")
    assert codes(found["web-unset"]) == {"cpu-request-differs"}
    assert found["web-unset"]["cpu_request"] is None
    assert "neither a CPU limit nor a CPU request" in message(
        found["web-unset"], "cpu-request-differs"
    )
    assert codes(found["web-limited"]) == {"cpu-limit-differs"}

    # the table notes the request beside the limit; the CSV has a column for it
    code, table, _ = status(capsys, api, "--namespace", "ml")
    assert code == 0
    lines = {line.split()[2]: line for line in table.split("\n\n")[1].splitlines()[1:]}
    assert lines["deployment/web"].split()[4:] == ["none", "(req", "2)", "-"]
    assert lines["deployment/web-unset"].split()[4:] == [
        "none",
        "(req",
        "none)",
        "cpu-request-differs",
    ]
    assert lines["deployment/web-limited"].split()[4:7] == ["4", "(req", "none)"]
    code, as_csv, _ = status(capsys, api, "--namespace", "ml", "--format", "csv")
    records = {r["consumer_name"]: r for r in csv.DictReader(io.StringIO(as_csv))}
    assert (records["web-big"]["cpu_limit"], records["web-big"]["cpu_request"]) == ("", "3.0")
    assert records["web-big"]["problems"].startswith("cpu-request-differs: its CPU request is 3")

    # the same consumer read against limit-basis advice: no limit is still no limit
    limit_basis = measured_for.model_copy(update={"cpu_from": "limit"})
    api.put(advice_cm("for-request", quota=2.0, target=limit_basis))
    found = {c["name"]: c for c in rows_of(capsys, api)["for-request"]["consumers"]}
    assert codes(found["web"]) == {"no-cpu-limit"}
    code, table, _ = status(capsys, api, "--namespace", "ml")
    assert "(req" not in table


def required_affinity(*terms: dict[str, list[str]]) -> dict[str, Any]:
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": key, "operator": "In", "values": values}
                                for key, values in term.items()
                            ]
                        }
                        for term in terms
                    ]
                }
            }
        }
    }


def test_node_pool_differs_and_quiet_when_pinned_to_the_pool(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = "node.kubernetes.io/instance-type"
    api.put(advice_cm("pooled", node_selector={pool: "c7i.4xlarge"}))
    cases = {
        "selected": ({"nodeSelector": {pool: "c7i.4xlarge", "zone": "a"}}, set()),
        "affine": (required_affinity({pool: ["c7i.4xlarge"]}), set()),
        "elsewhere": ({"nodeSelector": {pool: "m7i.xlarge"}}, {"node-pool-differs"}),
        "anywhere": ({}, {"node-pool-differs"}),
        # terms are ORed: the second lets pods onto any instance type in zone b
        "either": (
            required_affinity({pool: ["c7i.4xlarge"]}, {"zone": ["b"]}),
            {"node-pool-differs"},
        ),
        "choice": (required_affinity({pool: ["c7i.4xlarge", "m7i.xlarge"]}), {"node-pool-differs"}),
    }
    for name, (pod_spec, _) in cases.items():
        api.put_workload(deployment(name, reads("pooled"), pod_spec=pod_spec))
    api.put_workload(deployment("unpinned", reads("tf-advice")))  # that advice records no pool
    rows = rows_of(capsys, api)
    found = {c["name"]: c for c in rows["pooled"]["consumers"]}
    for name, (_, expected) in cases.items():
        assert codes(found[name]) == expected, name
    assert "its nodeSelector says " + pool + "=m7i.xlarge" in message(
        found["elsewhere"], "node-pool-differs"
    )
    assert f"nothing it requires pins {pool}" in message(found["anywhere"], "node-pool-differs")
    assert rows["pooled"]["node_selector"] == {pool: "c7i.4xlarge"}
    (unpinned,) = rows["tf-advice"]["consumers"]
    assert codes(unpinned) == set()


def test_resize_restarts_nothing_and_quiet_with_restart_container(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.put_workload(deployment("restarts", reads(resize=True)))
    api.put_workload(deployment("default", reads(resize=False)))
    not_required = [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]
    memory_only = [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    api.put_workload(deployment("explicit", reads(resize=False, resizePolicy=not_required)))
    api.put_workload(deployment("memory", reads(resize=False, resizePolicy=memory_only)))
    rows = {c["name"]: c for c in rows_of(capsys, api)["tf-advice"]["consumers"]}
    assert codes(rows["restarts"]) == set()
    for name in ("default", "explicit", "memory"):
        assert codes(rows[name]) == {"resize-restarts-nothing"}, name
    assert "GA in 1.35" in message(rows["default"], "resize-restarts-nothing")


def test_pods_predate_advice_and_quiet_for_newer_pods(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    web = api.put_workload(deployment("web", reads()))
    api.put_pod(pod_of(web, "new", started=MEASURED + timedelta(minutes=5)))
    assert codes(consumer(capsys, api, "web")) == set()
    api.put_pod(pod_of(web, "old", started=MEASURED - timedelta(days=2)))
    api.put_pod(pod_of(web, "pending", started=MEASURED - timedelta(days=2), phase="Pending"))
    found = consumer(capsys, api, "web")
    assert codes(found) == {"pods-predate-advice"}
    text = message(found, "pods-predate-advice")
    assert text.startswith("1 of its 2 running pod(s)")  # the pending one runs nothing yet
    assert "web-5d8f7c9b6-old" in text and "kubectl rollout restart deployment/web" in text
    stored = api.get("ml", "tf-advice")
    assert stored is not None
    assert MEASURED.strftime("%Y-%m-%dT%H:%M:%SZ") in text


def test_pods_predate_advice_is_quiet_when_a_restart_is_set_up(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    stored = api.get("ml", "tf-advice")
    assert stored is not None
    current = stored["metadata"]["annotations"][HASH_ANNOTATION]
    api.put(advice_cm("searched", **{"reloader.stakater.com/match": "true"}))
    rolled = {ADVICE_HASH_ANNOTATION: current}
    behind = {ADVICE_HASH_ANNOTATION: "sha256:" + "0" * 64}  # the restart of an older advice
    reload_named = {"configmap.reloader.stakater.com/reload": "app-config, tf-advice"}
    reload_other = {"configmap.reloader.stakater.com/reload": "app-config"}
    search = {"reloader.stakater.com/search": "true"}
    cases = [
        ("rolled", "tf-advice", {}, rolled, set()),
        ("behind", "tf-advice", {}, behind, {"pods-predate-advice"}),
        ("named", "tf-advice", reload_named, {}, set()),
        ("other", "tf-advice", reload_other, {}, {"pods-predate-advice"}),
        ("auto", "tf-advice", {"reloader.stakater.com/auto": "true"}, {}, set()),
        ("matched", "searched", search, {}, set()),
        ("unmatched", "tf-advice", search, {}, {"pods-predate-advice"}),  # no match annotation
    ]
    for name, advice, marks, template_marks, _ in cases:
        obj = deployment(name, reads(advice), metadata={"annotations": marks}, **template_marks)
        api.put_pod(pod_of(api.put_workload(obj), "old", started=MEASURED - timedelta(days=3)))
    rows = rows_of(capsys, api)
    for name, advice, _, _, expected in cases:
        (found,) = [c for c in rows[advice]["consumers"] if c["name"] == name]
        assert codes(found) == expected, name


def test_pods_predate_advice_is_quiet_for_advice_without_a_data_time(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Advice written before the data-changed-at annotation existed cannot say when its data
    changed; its creation time changes on every run, so it is not used instead."""
    older = advice_cm("older")
    del older["metadata"]["annotations"]["tf-thread-advisor.io/data-changed-at"]
    api.put(older)
    web = api.put_workload(deployment("web", reads("older")))
    api.put_pod(pod_of(web, "old", started=MEASURED - timedelta(days=3)))
    rows = rows_of(capsys, api)
    assert rows["older"]["data_changed_at"] is None
    (found,) = rows["older"]["consumers"]
    assert codes(found) == set()


def test_missing_advice_is_listed_unless_optional_or_someone_elses(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "app-config", "namespace": "ml"},
            "data": {"MODE": "fast"},
        }
    )
    api.put_workload(deployment("needs", reads("gone")))
    api.put_workload(deployment("hopes", reads("gone-too", optional=True)))
    api.put_workload(deployment("configured", reads("app-config")))
    rows = rows_of(capsys, api)
    assert sorted(rows) == ["gone", "tf-advice"]
    gone = rows["gone"]
    assert (gone["missing"], gone["unused"], gone["stale"]) == (True, False, False)
    (found,) = gone["consumers"]
    assert (found["name"], codes(found)) == ("needs", {"advice-missing"})
    assert "ConfigMap gone, which does not exist" in message(found, "advice-missing")
    code, table, _ = status(capsys, api, "--namespace", "ml")
    advice_part = table.split("\n\n")[0]
    (line,) = [line for line in advice_part.splitlines() if " gone " in line]
    assert code == 0 and line.split()[-1] == "missing"


def test_key_references_count_only_for_advice_keys(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    def key_ref(key: str) -> dict[str, Any]:
        ref = {"configMapKeyRef": {"name": "tf-advice", "key": key}}
        limits = {"limits": {"cpu": "4"}}
        env = [{"name": "X", "valueFrom": ref}]
        return {"env": env, "resources": limits, "resizePolicy": RESIZE_ON_CPU}

    api.put_workload(deployment("by-key", key_ref("TF_NUM_INTRAOP_THREADS")))
    api.put_workload(deployment("other-key", key_ref("LOG_LEVEL")))
    found = rows_of(capsys, api)["tf-advice"]["consumers"]
    assert [(c["name"], codes(c)) for c in found] == [("by-key", set())]


def test_statefulsets_daemonsets_and_bare_pods_consume_too(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    sts = api.put_workload(workload("statefulsets", "ml", "db", container=reads(cpu="2")))
    ds = api.put_workload(workload("daemonsets", "ml", "agent", container=reads(resize=False)))
    api.put_pod(pod_of(sts, "0", started=MEASURED - timedelta(days=2)))
    api.put_pod(pod_of(ds, "x1", started=MEASURED + timedelta(hours=1)))
    api.put_pod(bare_pod("ml", "debug", container=reads(), started=MEASURED - timedelta(days=2)))
    job_pod = bare_pod("ml", "batch-x", container=reads(), started=MEASURED - timedelta(days=2))
    job_pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "batch", "uid": "u", "controller": True}
    ]
    api.put_pod(job_pod)  # owned by a Job: not a bare pod, and no workload status lists
    found = {(c["kind"], c["name"]): c for c in rows_of(capsys, api)["tf-advice"]["consumers"]}
    assert sorted(found) == [("DaemonSet", "agent"), ("Pod", "debug"), ("StatefulSet", "db")]
    assert codes(found[("StatefulSet", "db")]) == {"cpu-limit-differs", "pods-predate-advice"}
    assert codes(found[("DaemonSet", "agent")]) == {"resize-restarts-nothing"}
    debug = found[("Pod", "debug")]
    assert codes(debug) == {"pods-predate-advice"}
    assert "recreate the pod" in message(debug, "pods-predate-advice")


# --------------------------------------------------------------------------------------------------
# formats, scope, permissions


def test_every_format_carries_consumers_and_problems(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.put(advice_cm("spare"))
    api.put_workload(deployment("web-ok", reads()))
    api.put_workload(deployment("web-small", reads(cpu="2", resize=False)))
    rows = json_rows(capsys, api, "--namespace", "ml")
    code, as_csv, _ = status(capsys, api, "--namespace", "ml", "--format", "csv")
    assert code == 0
    records = list(csv.DictReader(io.StringIO(as_csv)))
    # one line per consumer, one for an advice nobody reads
    assert [(r["name"], r["consumer_name"]) for r in records] == [
        ("spare", ""),
        ("tf-advice", "web-ok"),
        ("tf-advice", "web-small"),
    ]
    assert [r["unused"] for r in records] == ["true", "false", "false"]
    small = records[2]
    assert (small["consumer_kind"], small["container"], small["cpu_limit"]) == (
        "Deployment",
        "server",
        "2.0",
    )
    json_small = rows[1]["consumers"][1]
    assert small["problems"] == "; ".join(
        f"{p['code']}: {p['message']}" for p in json_small["problems"]
    )
    assert records[1]["problems"] == ""

    code, table, _ = status(capsys, api, "--namespace", "ml")
    assert code == 0
    advice_part, consumer_part, sentences = table.split("\n\n")
    assert advice_part.splitlines()[0].split()[-1] == "CONSUMERS"
    cells = {line.split()[1]: line.split()[-1] for line in advice_part.splitlines()[1:]}
    assert cells["spare"] == "unused"
    tf_line = next(line for line in advice_part.splitlines() if " tf-advice " in line)
    assert tf_line.endswith("2 (2 problems)")
    consumer_lines = consumer_part.splitlines()
    assert consumer_lines[0].split() == [
        "NAMESPACE",
        "ADVICE",
        "CONSUMER",
        "CONTAINER",
        "CPU",
        "LIMIT",
        "PROBLEMS",
    ]
    assert consumer_lines[1].split() == ["ml", "tf-advice", "deployment/web-ok", "server", "4", "-"]
    assert consumer_lines[2].split()[:5] == [
        "ml",
        "tf-advice",
        "deployment/web-small",
        "server",
        "2",
    ]
    assert consumer_lines[2].endswith("cpu-limit-differs, resize-restarts-nothing")
    where = "ml/deployment/web-small (server) reads tf-advice"
    for problem in json_small["problems"]:
        assert f"{where}: {problem['code']}: {problem['message']}" in sentences
    # a message never carries the CSV's separator
    assert all(";" not in p["message"] for p in json_small["problems"])


def test_json_is_the_typed_results_dump_and_every_report_has_its_table(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.put(advice_cm("spare"))
    api.put_workload(deployment("web-ok", reads()))
    api.put_workload(deployment("web-small", reads(cpu="2", resize=False)))
    rows = json_rows(capsys, api, "--namespace", "ml")
    result = cluster_status("ml", kubeconfig=api.kubeconfig)
    assert isinstance(result, StatusResult)
    assert [_timeless(r) for r in rows] == [
        _timeless(r) for r in result.model_dump(mode="json")["rows"]
    ]
    # what status prints validates back into the typed rows
    typed = [AdviceStatus.model_validate(r) for r in rows]
    assert [r.model_copy(update={"age_s": 0}) for r in typed] == [
        r.model_copy(update={"age_s": 0}) for r in result.rows
    ]
    assert [r.problems for r in typed] == [0, 2]

    code, table, _ = status(capsys, api, "--namespace", "ml")
    assert code == 0
    first_row = table.splitlines()[1].split("  ")
    code, markdown, _ = status(capsys, api, "--namespace", "ml", "--format", "markdown")
    assert code == 0
    assert markdown.startswith("# tf-thread-advisor status: ml\n")
    spare = next(line for line in markdown.splitlines() if line.startswith("| ml | spare |"))
    assert [c.strip() for c in spare.strip("|").split(" | ")] == [
        c.strip() for c in first_row if c.strip()
    ]
    code, page, _ = status(capsys, api, "--namespace", "ml", "--format", "html")
    assert code == 0
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert page.count("<tr>") == 1 + 2 + 1 + 2  # the advice's and the consumers' tables
    assert "<li>ml/deployment/web-small (server) reads tf-advice: cpu-limit-differs: " in page


def _timeless(row: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in row.items() if key != "age_s"}


def test_no_consumers_lists_the_advice_only(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.put_workload(deployment("web-small", reads(cpu="2")))
    code, out, _ = status(capsys, api, "--namespace", "ml", "--format", "json", "--no-consumers")
    assert code == 0
    (row,) = json.loads(out)
    assert (row["consumers"], row["unused"]) == (None, None)
    assert {r.path for r in api.requests} == {"/api/v1/namespaces/ml/configmaps"}
    code, _, err = status(capsys, api, "--no-consumers", "--fail-on-problems")
    assert code == errors.UsageError.exit_code and "not allowed with" in err


def test_without_the_list_rules_status_says_which_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configmaps_only = [Rule(("",), ("configmaps",), ("get", "list"))]
    with FakeApiServer(tmp_path, rules=configmaps_only) as api:
        api.put(advice_cm())
        code, out, err = status(capsys, api, "--namespace", "ml")
        assert (code, out) == (errors.ForbiddenError.exit_code, "")
        (line,) = err.splitlines()
        assert "forbidden: cannot list deployments.apps in namespace ml" in line
        assert "deploy/examples/advice-reader.yaml" in line and "--no-consumers" in line
        code, out, _ = status(capsys, api, "--namespace", "ml", "--no-consumers")
        assert code == 0 and "tf-advice" in out


def test_all_namespaces_joins_each_namespace_with_its_own(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.cluster_rules = reader_rules("ClusterRole")
    api.put(advice_cm(namespace="web"))  # the same name in another namespace
    api.put_workload(deployment("ml-server", reads(cpu="2")))
    api.put_workload(workload("deployments", "web", "web-server", container=reads()))
    code, out, _ = status(capsys, api, "-A", "--format", "json")
    assert code == 0
    rows = {(r["namespace"], r["name"]): r for r in json.loads(out)}
    assert [c["name"] for c in rows[("ml", "tf-advice")]["consumers"]] == ["ml-server"]
    assert [c["name"] for c in rows[("web", "tf-advice")]["consumers"]] == ["web-server"]
    listed = {r.path for r in api.requests}
    assert {"/apis/apps/v1/deployments", "/api/v1/pods", "/api/v1/configmaps"} <= listed


def test_the_lists_are_paged_and_read_only(tmp_path: Path) -> None:
    from advisor.cluster import RetryPolicy, connect
    from advisor.cluster.inventory import LIVE_PODS, list_inventory

    with FakeApiServer(tmp_path, rules=reader_rules("Role")) as api:
        for index in range(5):
            web = api.put_workload(deployment(f"web-{index}", reads()))
            api.put_pod(pod_of(web, "a", started=NOW))
        done = pod_of(web, "done", started=NOW, phase="Succeeded")
        done["status"]["phase"] = "Succeeded"
        api.put_pod(done)
        found = list_inventory(connect(api.kubeconfig), "ml", RetryPolicy(), page_size=2)
        assert sorted(w.raw["metadata"]["name"] for w in found.workloads) == [
            f"web-{i}" for i in range(5)
        ]
        assert {w.raw["kind"] for w in found.workloads} == {"Deployment"}
        assert len(found.pods) == 5  # the finished one is left out by the server
        pages = [r for r in api.requests if r.path == "/apis/apps/v1/namespaces/ml/deployments"]
        assert [r.query.get("limit") for r in pages] == ["2", "2", "2"]
        assert ["continue" in r.query for r in pages] == [False, True, True]
        pods = [r for r in api.requests if r.path == "/api/v1/namespaces/ml/pods"]
        assert {r.query["fieldSelector"] for r in pods} == {LIVE_PODS}
        (configmaps,) = [r for r in api.requests if r.path == "/api/v1/namespaces/ml/configmaps"]
        assert "as=PartialObjectMetadataList" in (configmaps.accept or "")
        assert {r.method for r in api.requests} == {"GET"}


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("4", 4.0),
        ("500m", 0.5),
        ("1.5", 1.5),
        ("2000m", 2.0),
        (".5", 0.5),
        ("4e0", 4.0),
        ("2e-3", 0.002),
        ("1k", 1000.0),
        ("1Ki", 1024.0),
        ("250000u", 0.25),
        (2, 2.0),
    ],
)
def test_cpu_quantities_are_compared_as_numbers(text: Any, cpus: float) -> None:
    from advisor.consumers.quantity import cpu_quantity

    assert cpu_quantity(text) == pytest.approx(cpus)


@pytest.mark.parametrize(
    "text", ["", "four", "4 cpus", "1.2.3", "m", None, True, "4x", "2e3m", "-1", -2]
)
def test_what_is_not_a_quantity_is_none(text: Any) -> None:
    from advisor.consumers.quantity import cpu_quantity

    assert cpu_quantity(text) is None
