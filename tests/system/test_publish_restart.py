"""``run --restart`` and Reloader compatibility, through the real CLI against the strict fake API
server, authorized by the Role the chart renders for a target with ``restart:`` (real helm).

The sweep is the real search over the cost model of tests/support/search_fakes (no TensorFlow:
what is under test is what happens to the workloads around the publish), in the scene of
tests/support/scene.py that test_hardening_faults uses too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor import errors
from advisor.keys import ADVICE_HASH_ANNOTATION, HASH_ANNOTATION
from advisor.recommend import render_configmap
from testkit.fakeapi.apps import workload
from testkit.fakeapi.rbac import Rule, role_rules
from testkit.fakeapi.samples import recommendation
from testkit.fakeapi.server import FakeApiServer
from tests.support import REPO
from tests.support import k8s_checks as k8s
from tests.support.scene import OLD_ENV, Scene, make_scene
from tests.support.search_fakes import tripwire

NAME, NS = "tf-advice", "ml"
CHART = REPO / "charts" / "tf-thread-advisor"

pytestmark = pytest.mark.tools


def chart_rules(tmp: Path, restart: list[str]) -> list[Rule]:
    """The rules of the Role the chart renders for one target writing NAME and restarting
    ``restart`` (release name = chart name, so the ServiceAccount is the one rbac.py expects)."""
    (target,) = yaml.safe_load((CHART / "values.yaml").read_text())["targets"]
    values = tmp / "restart-values.yaml"
    values.write_text(
        yaml.safe_dump({"targets": [{**target, "configMapName": NAME, "restart": restart}]})
    )
    proc = k8s.run_tool(
        [
            k8s.tool("helm"),
            "template",
            "tf-thread-advisor",
            str(CHART),
            "-n",
            NS,
            "-f",
            str(values),
            "--set",
            "image.repository=registry.example.com/tf-thread-advisor",
        ]
    )
    docs = k8s.load_docs(proc.stdout)
    for job in k8s.by_kind(docs, "Job"):  # what the chart runs is what these tests run
        args = k8s.advisor_container(job)["args"]
        assert [a for a in args if a.startswith("--restart=")] == [
            f"--restart={r}" for r in restart
        ]
    return role_rules(docs)


@pytest.fixture
def scene(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Scene]:
    rules = chart_rules(tmp_path, ["deployment/web", "deployment/db"])
    with FakeApiServer(tmp_path, rules=rules) as api:
        # web and db are named; api (a Deployment) and web (a StatefulSet of the same name) not
        api.put_workload(workload("deployments", NS, "web", **{ADVICE_HASH_ANNOTATION: "old"}))
        api.put_workload(workload("deployments", NS, "db"))
        api.put_workload(workload("deployments", NS, "api"))
        api.put_workload(workload("statefulsets", NS, "web"))
        yield make_scene(tmp_path, api, capsys, monkeypatch)


def generation(api: FakeApiServer, name: str, resource: str = "deployments") -> int:
    found = api.workload(resource, NS, name)
    assert found is not None
    return int(found["metadata"]["generation"])


def advice_hash(api: FakeApiServer, name: str) -> str | None:
    found = api.workload("deployments", NS, name)
    assert found is not None
    value = found["spec"]["template"]["metadata"].get("annotations", {}).get(ADVICE_HASH_ANNOTATION)
    return str(value) if value is not None else None


def workload_requests(api: FakeApiServer) -> list[tuple[str, str, str | None]]:
    return [
        (
            r.method,
            r.path.rsplit("/", 2)[-2] + "/" + r.path.rsplit("/", 1)[-1],
            r.query.get("dryRun"),
        )
        for r in api.requests
        if r.path.startswith("/apis/")
    ]


def no_sweep(scene: Scene) -> None:
    scene.sweep = tripwire("the sweep started although run should have stopped before it")


def test_restart_sets_the_content_hash_and_a_second_run_rolls_nothing(scene: Scene) -> None:
    api = scene.api
    untouched = {
        ("deployments", "api"): api.workload("deployments", NS, "api"),
        ("statefulsets", "web"): api.workload("statefulsets", NS, "web"),
    }
    first = scene.run("--restart", "deployment/web", "--restart", "deployment/db")
    assert (first.code, first.err) == (0, ""), first.err
    stored = api.get(NS, NAME)
    assert stored is not None
    content_hash = stored["metadata"]["annotations"][HASH_ANNOTATION]
    assert advice_hash(api, "web") == content_hash
    assert advice_hash(api, "db") == content_hash
    assert (generation(api, "web"), generation(api, "db")) == (2, 2)  # one rollout each
    # the checks before the sweep were dry runs; then one read and one patch each, in order
    assert workload_requests(api) == [
        ("GET", "deployments/web", None),
        ("PATCH", "deployments/web", "All"),
        ("GET", "deployments/db", None),
        ("PATCH", "deployments/db", "All"),
        ("GET", "deployments/web", None),
        ("PATCH", "deployments/web", None),
        ("GET", "deployments/db", None),
        ("PATCH", "deployments/db", None),
    ]
    patch = next(r for r in api.requests if r.method == "PATCH" and r.path.endswith("/web"))
    assert patch.content_type == "application/strategic-merge-patch+json"

    api.requests.clear()
    scene.monkeypatch.undo()  # Scene.run wraps the cluster connection anew
    second = scene.run("--restart", "deployment/web", "--restart", "deployment/db")
    assert (second.code, second.err) == (0, ""), second.err
    again = api.get(NS, NAME)
    assert again is not None
    # the same advice (the cost model is deterministic): the same data, the same hash
    assert again["data"] == stored["data"]
    assert again["metadata"]["annotations"][HASH_ANNOTATION] == content_hash
    assert (generation(api, "web"), generation(api, "db")) == (2, 2)  # no new rollout
    assert [m for m, _, dry in workload_requests(api) if dry is None].count("PATCH") == 2
    for (resource, name), before in untouched.items():
        assert api.workload(resource, NS, name) == before
    assert not [r for r in api.requests if r.path.endswith(("/api", "statefulsets/web"))]


def test_a_missing_target_fails_before_the_sweep_with_its_own_code(
    tmp_path: Path, scene: Scene
) -> None:
    no_sweep(scene)
    # the chart puts every restart target in the Role, so a typo is allowed and not found
    scene.api.rules = chart_rules(tmp_path, ["deployment/web", "deployment/ghost"])
    outcome = scene.run("--restart", "deployment/web", "--restart", "deployment/ghost")
    assert outcome.code == errors.RestartTargetError.exit_code == 14
    line = outcome.the_one_line()
    assert "--restart deployment/ghost" in line
    assert "no deployment named ghost in namespace ml" in line
    scene.assert_files_unchanged()
    assert scene.api.get(NS, NAME) is None
    assert all(r.query.get("dryRun") == "All" for r in scene.api.writes())
    assert generation(scene.api, "web") == 1


def test_a_target_the_role_does_not_name_is_a_403_before_the_sweep(scene: Scene) -> None:
    no_sweep(scene)
    outcome = scene.run("--restart", "deployment/api")  # exists, but not in resourceNames
    assert outcome.code == errors.RestartTargetError.exit_code
    line = outcome.the_one_line()
    assert "--restart deployment/api: forbidden: cannot get deployments/api" in line
    assert "resourceNames [api]" in line
    scene.assert_files_unchanged()
    assert scene.api.get(NS, NAME) is None
    assert generation(scene.api, "api") == 1


def test_a_role_without_the_restart_rule_cannot_patch(tmp_path: Path, scene: Scene) -> None:
    """The chart without restart targets renders no workload rule: a run that asks to restart
    anyway stops before the sweep (here on the first verb the Role lacks)."""
    no_sweep(scene)
    scene.api.rules = chart_rules(tmp_path, [])
    outcome = scene.run("--restart", "deployment/web")
    assert outcome.code == errors.RestartTargetError.exit_code
    assert "forbidden: cannot get deployments/web" in outcome.the_one_line()
    # and a Role that lets us read but not patch is caught by the dry run
    scene.api.rules = [
        *chart_rules(tmp_path, []),
        Rule(("apps",), ("deployments",), ("get",), ("web",)),
    ]
    outcome = scene.run("--restart", "deployment/web")
    assert outcome.code == errors.RestartTargetError.exit_code
    assert "forbidden: cannot patch deployments/web" in outcome.the_one_line()
    assert all(r.query.get("dryRun") == "All" for r in scene.api.writes())


def delete_db(scene: Scene) -> None:
    with scene.api._lock:
        del scene.api.workloads._store[("deployments", NS, "db")]


def test_a_failure_after_the_write_says_what_was_restarted_and_the_advice_stands(
    scene: Scene,
) -> None:
    outcome = scene.run(
        "--restart", "deployment/web", "--restart", "deployment/db", at_publish=delete_db
    )
    assert outcome.code == errors.RestartFailedError.exit_code == 15
    line = outcome.the_one_line()
    assert "configmaps/tf-advice in namespace ml was written" in line
    assert "restarting deployment/db failed: no deployment named db" in line
    assert "restarted: deployment/web; not restarted: deployment/db" in line
    stored = scene.api.get(NS, NAME)
    assert stored is not None
    # the advice and the local files are the new ones: the write stands
    published = scene.published()
    assert published is not None
    assert stored["data"] == published["data"]
    assert scene.env_file.read_bytes() != OLD_ENV
    assert advice_hash(scene.api, "web") == stored["metadata"]["annotations"][HASH_ANNOTATION]


def test_a_role_revoked_during_the_sweep_stops_the_first_restart(scene: Scene) -> None:
    def revoke(scene: Scene) -> None:
        scene.api.rules = role_rules(configmap_name=NAME)  # the ConfigMap rule only

    outcome = scene.run("--restart", "deployment/web", at_publish=revoke)
    assert outcome.code == errors.RestartFailedError.exit_code
    line = outcome.the_one_line()
    assert "forbidden: cannot get deployments/web" in line
    assert "restarted: none; not restarted: deployment/web" in line
    assert scene.api.get(NS, NAME) is not None
    assert generation(scene.api, "web") == 1


def test_a_signal_during_the_restarts_says_which_were_done(scene: Scene) -> None:
    from advisor.cluster.restart import WorkloadRestarter

    real = WorkloadRestarter._restart_one

    def second_interrupted(self: WorkloadRestarter, ref: Any, *args: Any) -> Any:
        if self.done:
            raise errors.InterruptedRunError.by_signal("SIGTERM")
        return real(self, ref, *args)

    scene.monkeypatch.setattr(WorkloadRestarter, "_restart_one", second_interrupted)
    outcome = scene.run("--restart", "deployment/web", "--restart", "deployment/db")
    assert outcome.code == errors.InterruptedRunError.exit_code
    line = outcome.the_one_line()
    assert "interrupted by SIGTERM after configmaps/tf-advice in namespace ml was written" in line
    assert "restarted: deployment/web; not restarted: deployment/db" in line
    assert "nothing was published" not in line


def test_the_reloader_annotation_rides_along_and_the_advice_still_validates(
    scene: Scene, capsys: pytest.CaptureFixture[str]
) -> None:
    from advisor.cli import main

    outcome = scene.run("--configmap-annotation", "reloader.stakater.com/match=true")
    assert (outcome.code, outcome.err) == (0, ""), outcome.err
    stored = scene.api.get(NS, NAME)
    assert stored is not None
    assert stored["metadata"]["annotations"]["reloader.stakater.com/match"] == "true"
    argv = ["validate", "--configmap", NAME, "--namespace", NS]
    assert main([*argv, "--kubeconfig", str(scene.api.kubeconfig)]) == 0
    assert capsys.readouterr().out.startswith("ok: ml/tf-advice")


def test_identical_advice_renders_byte_identical_data() -> None:
    """Reloader restarts consumers when a ConfigMap's data hash changes: a re-measured advice
    with the same thread values (other measurements, another time, another budget) must keep
    its data byte for byte; only the annotations may differ."""
    first = render_configmap(recommendation(3, 2, budget_s=60.0), NAME, NS)
    later = render_configmap(recommendation(3, 2, budget_s=90.0), NAME, NS)
    other = render_configmap(recommendation(3, 1), NAME, NS)
    assert first["metadata"]["annotations"] != later["metadata"]["annotations"]
    assert yaml.safe_dump(first["data"]) == yaml.safe_dump(later["data"])
    assert (
        first["metadata"]["annotations"][HASH_ANNOTATION]
        == (later["metadata"]["annotations"][HASH_ANNOTATION])
    )
    assert first["data"] != other["data"]
    assert (
        first["metadata"]["annotations"][HASH_ANNOTATION]
        != (other["metadata"]["annotations"][HASH_ANNOTATION])
    )
