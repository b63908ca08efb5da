"""``tf-thread-advisor cleanup`` (the chart's opt-in uninstall hook) against the strict fake API
server, with only the verbs the hook's Role grants: get and delete on the named ConfigMaps.

It deletes exactly the named ConfigMaps that carry the advisor's labels; a foreign ConfigMap of a
listed name, an unlisted advice and everything else stay; a ConfigMap replaced between the read
and the delete is judged again, not deleted unseen.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor import errors
from advisor.cli import main
from advisor.recommend import render_configmap
from testkit.fakeapi.rbac import Rule
from testkit.fakeapi.samples import recommendation
from testkit.fakeapi.server import FakeApiServer

NS = "ml"
LISTED = ("resnet-thread-advice", "ranker-thread-advice", "foreign-advice", "never-written")


def hook_rules(
    names: tuple[str, ...] = LISTED, verbs: tuple[str, ...] = ("get", "delete")
) -> list[Rule]:
    return [Rule(("",), ("configmaps",), verbs, names)]


def advice(name: str) -> dict[str, Any]:
    return render_configmap(recommendation(2, 1), name, NS)


def foreign(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": "mine"}},
        "data": {"TF_NUM_INTRAOP_THREADS": "8"},
    }


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeApiServer]:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with FakeApiServer(tmp_path, rules=hook_rules()) as server:
        for name in ("resnet-thread-advice", "ranker-thread-advice", "unlisted-advice"):
            server.put(advice(name))
        server.put(foreign("foreign-advice"))
        server.requests.clear()
        yield server


def cleanup(
    api: FakeApiServer,
    capsys: pytest.CaptureFixture[str],
    *extra: str,
    names: tuple[str, ...] = LISTED,
) -> tuple[int, str, str]:
    argv = ["cleanup", "--namespace", NS, "--kubeconfig", str(api.kubeconfig), *extra]
    for name in names:
        argv += ["--configmap", name]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_deletes_the_named_advice_and_nothing_else(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cleanup(api, capsys)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"deleted: configmaps/resnet-thread-advice in namespace {NS}",
        f"deleted: configmaps/ranker-thread-advice in namespace {NS}",
        f"kept: configmaps/foreign-advice in namespace {NS} (not written by tf-thread-advisor "
        "(label app.kubernetes.io/name is missing))",
        f"absent: configmaps/never-written in namespace {NS}",
    ]
    assert api.get(NS, "resnet-thread-advice") is None
    assert api.get(NS, "ranker-thread-advice") is None
    assert api.get(NS, "foreign-advice") == foreign_stored(api)
    assert api.get(NS, "unlisted-advice") is not None
    deletes = [r for r in api.requests if r.method == "DELETE"]
    assert [r.path.rsplit("/", 1)[1] for r in deletes] == [
        "resnet-thread-advice",
        "ranker-thread-advice",
    ]
    # each delete names the object it judged: uid and resourceVersion as preconditions
    assert all(set(r.body["preconditions"]) == {"uid", "resourceVersion"} for r in deletes)


def foreign_stored(api: FakeApiServer) -> dict[str, Any] | None:
    stored = api.get(NS, "foreign-advice")
    assert stored is not None and stored["metadata"]["labels"] == {"app": "mine"}
    return stored


def test_a_second_run_finds_everything_gone(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cleanup(api, capsys)[0] == 0
    code, out, _ = cleanup(api, capsys)
    assert code == 0
    assert [line.split(":")[0] for line in out.splitlines()] == [
        "absent",
        "absent",
        "kept",
        "absent",
    ]


def test_dry_run_asks_the_server_and_changes_nothing(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cleanup(api, capsys, "--dry-run")
    assert code == 0
    assert out.splitlines()[0] == f"would delete: configmaps/resnet-thread-advice in namespace {NS}"
    assert api.get(NS, "resnet-thread-advice") is not None
    deletes = [r for r in api.requests if r.method == "DELETE"]
    assert deletes and all(r.query.get("dryRun") == "All" for r in deletes)


def test_an_advice_replaced_by_a_foreign_one_after_the_read_is_kept(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    def race(server: FakeApiServer) -> None:
        server.before_write = None
        server.put(foreign("resnet-thread-advice"))  # a new resourceVersion and labels

    api.before_write = race
    code, out, _ = cleanup(api, capsys, names=("resnet-thread-advice",))
    assert code == 0
    assert out.startswith("kept: configmaps/resnet-thread-advice")
    stored = api.get(NS, "resnet-thread-advice")
    assert stored is not None and stored["metadata"]["labels"] == {"app": "mine"}
    statuses = [r.status for r in api.requests if r.method == "DELETE"]
    assert statuses == [409]


def test_a_role_without_delete_is_one_forbidden_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with FakeApiServer(tmp_path, rules=hook_rules(verbs=("get",))) as api:
        api.put(advice("resnet-thread-advice"))
        code, out, err = cleanup(api, capsys, names=("resnet-thread-advice",))
        assert api.get(NS, "resnet-thread-advice") is not None
    assert (code, out) == (errors.ForbiddenError.exit_code, "")
    (line,) = err.splitlines()
    assert line.startswith("tf-thread-advisor: error: forbidden: cannot delete configmaps/")
    assert "cleanup Role" in line and "verbs get, delete" in line


@pytest.mark.parametrize(
    "argv, says",
    [
        (["cleanup", "--namespace", NS], "--configmap"),
        (["cleanup", "--configmap", "x"], "--namespace"),
        (["cleanup", "--namespace", "Bad_NS", "--configmap", "x"], "--namespace 'Bad_NS'"),
        (["cleanup", "--namespace", NS, "--configmap", "UPPER"], "--configmap 'UPPER'"),
    ],
)
def test_bad_flags_are_one_usage_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    code = main(argv)
    out, err = capsys.readouterr()
    assert (code, out) == (errors.UsageError.exit_code, "")
    (line,) = err.splitlines()
    assert line.startswith("tf-thread-advisor: error: ") and says in line
