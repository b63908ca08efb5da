"""Fail fast where a person waits: interactive commands give up on an API server they cannot
connect to within seconds, the Job's ``run`` keeps its patient retry, and flags that cannot
apply are usage errors before anything is measured."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor import errors
from advisor.cli import main
from advisor.cluster import RetryPolicy, connect
from advisor.cluster.http import request
from advisor.pipeline import Instruments
from advisor.recommend import configmap_yaml, render_configmap
from advisor.retry import INTERACTIVE_UNREACHABLE_S, Deadline
from testkit.fakeapi.samples import calibration_result, node_profile, recommendation
from testkit.fakeapi.server import FakeApiServer, refused_port
from tests.support.search_fakes import tripwire

#: what a person will wait for, with room for a loaded 2-core machine
PERSON_WAITS_S = 10.0


def dead_kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig whose server refuses connections."""
    with FakeApiServer(tmp_path) as api:  # only for its kubeconfig writer
        return api.write_kubeconfig(
            tmp_path / "dead", token="t", server=f"http://127.0.0.1:{refused_port()}"
        )


class FakeClock:
    """The policy's clock, advanced by its sleeps: retries without waiting for them."""

    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def __call__(self) -> float:
        return self.now


def list_call(kubeconfig: Path) -> tuple[Any, Callable[[float], Any], list[int]]:
    from kubernetes import client

    connection = connect(kubeconfig)
    core = client.CoreV1Api(connection.api_client)
    attempts: list[int] = []

    def call(timeout: float) -> Any:
        attempts.append(1)
        return core.list_namespaced_config_map(
            "ml", _preload_content=False, _request_timeout=timeout
        )

    return connection, call, attempts


def test_only_an_interactive_policy_gives_up_connecting_early(tmp_path: Path) -> None:
    connection, call, attempts = list_call(dead_kubeconfig(tmp_path))
    results = {}
    for name, make in (("job", RetryPolicy), ("person", RetryPolicy.interactive)):
        clock = FakeClock()
        policy = make(total_s=60.0)
        policy = RetryPolicy(**{**policy.__dict__, "sleep": clock.sleep, "clock": clock})
        attempts.clear()
        with pytest.raises(errors.ClusterUnreachableError) as info:
            request(connection, policy, Deadline(policy), "list configmaps", call)
        results[name] = (len(attempts), clock.now, str(info.value))
    job_attempts, job_waited, _ = results["job"]
    person_attempts, person_waited, said = results["person"]
    assert job_waited > 45 and job_attempts >= 8  # the Job rides out a minute of restarts
    assert person_waited < INTERACTIVE_UNREACHABLE_S and person_attempts == 3
    assert "cannot reach the API server, gave up after 3 attempt(s)" in said


def test_an_interactive_policy_still_waits_for_a_busy_server(tmp_path: Path) -> None:
    """503s come from a server that is there: retried for the whole --cluster-timeout."""
    with FakeApiServer(tmp_path) as api:
        api.inject(503, times=5)
        connection, call, attempts = list_call(api.kubeconfig)
        clock = FakeClock()
        policy = RetryPolicy(
            total_s=60.0,
            unreachable_s=INTERACTIVE_UNREACHABLE_S,
            sleep=clock.sleep,
            clock=clock,
        )
        resp = request(connection, policy, Deadline(policy), "list configmaps", call)
        assert resp.status == 403  # the default Role may not list: the answer came through
        assert len(attempts) == 6 and clock.now > INTERACTIVE_UNREACHABLE_S


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "--namespace", "ml"],
        ["validate", "--configmap", "tf-advice", "--namespace", "ml"],
        ["check", "--configmap", "tf-advice", "--namespace", "ml"],
        ["cleanup", "--configmap", "tf-advice", "--namespace", "ml"],
    ],
    ids=lambda argv: argv[0],
)
def test_interactive_commands_give_up_within_seconds(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    code = main([*argv, "--kubeconfig", str(dead_kubeconfig(tmp_path))])
    took = time.monotonic() - started
    _, err = capsys.readouterr()
    assert code == errors.ClusterUnreachableError.exit_code
    assert took < PERSON_WAITS_S, f"{argv[0]} took {took:.1f}s against a refused port"
    assert "Traceback" not in err
    assert "cannot reach the API server" in err.splitlines()[-1]


#: for runs that must stop before the sweep: probing or measuring fails the test
NO_MEASURING = Instruments(
    probe=tripwire("run went on to probe"), sweep=tripwire("run went on to measure")
)


def test_run_keeps_retrying_for_its_cluster_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--configmap", "tf-advice", "--namespace", "ml", "--cluster-timeout", "8"]
    started = time.monotonic()
    code = main([*argv, "--kubeconfig", str(dead_kubeconfig(tmp_path))], instruments=NO_MEASURING)
    took = time.monotonic() - started
    line = capsys.readouterr().err.splitlines()[-1]
    assert code == errors.ClusterUnreachableError.exit_code
    assert took > INTERACTIVE_UNREACHABLE_S, "the Job gave up like an interactive command"
    assert "attempt(s) within 8s" in line and "cannot connect" in line


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "--namespace", "ml-serving"], "--namespace needs --configmap"),
        (["run", "--output", "-", "--namespace", "ml"], "--namespace needs --configmap"),
        (["run", "--restart", "deployment/web"], "--restart needs --configmap"),
        (["run", "--node-selector", "pool"], "--node-selector 'pool': must be KEY=VALUE"),
        (["run", "--node-selector", "pool=a b"], "not a valid label value"),
        (["check", "--configmap-file", "cm.yaml", "--namespace", "ml"], "only apply with"),
    ],
)
def test_flags_that_cannot_apply_are_usage_errors(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv, instruments=NO_MEASURING) == errors.UsageError.exit_code
    (line,) = capsys.readouterr().err.splitlines()
    assert says in line


def test_the_jobs_own_namespace_does_not_count_as_a_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """$TFTA_POD_NAMESPACE is set in every Job pod; a Job that writes a file only must run."""
    monkeypatch.setenv("TFTA_POD_NAMESPACE", "ml")
    instruments = Instruments(
        probe=lambda _root: node_profile(), sweep=lambda *a, **k: calibration_result()
    )
    out = tmp_path / "cm.yaml"
    argv = ["run", "--output", str(out), "--node-selector", "pool=cpu-a"]
    assert main(argv, instruments=instruments) == 0
    written = out.read_text()
    assert '"node_selector":{"pool":"cpu-a"}' in written
    assert "namespace:" not in written  # a file for any namespace, as before
    capsys.readouterr()


def test_validate_of_a_file_never_touches_a_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text(configmap_yaml(render_configmap(recommendation(2, 1), "tf-advice", "ml")))
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out.startswith("ok: ml/tf-advice")
