"""``run`` end to end with real TensorFlow trials: the ConfigMap it prints validates (ours and the
upstream k8s 1.35 schema), it is created in the (fake) cluster and updated in place by a second
run through a transient 503; and a consumer process started with exactly its data runs with
those pool sizes. Plus the opt-in test against a real cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from advisor.recommend import render_configmap
from testkit.fakeapi.samples import recommendation
from testkit.fakeapi.server import FakeApiServer
from tests.support import REPO
from tests.support.real_parts import missing_real_part

NAME, NS = "tf-advice", "ml"
#: the smallest budget `run` accepts: the model check, the TF default and two settings
BUDGET = "25"


def advisor(*argv: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "advisor", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        check=False,
    )


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeApiServer]:
    with FakeApiServer(tmp_path_factory.mktemp("fakeapi"), configmap_name=NAME) as server:
        yield server


@pytest.fixture(scope="module")
def first_run(api: FakeApiServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    env_file = tmp_path_factory.mktemp("out") / "advice.env"
    proc = advisor(
        "run",
        "--budget",
        BUDGET,
        "--configmap",
        NAME,
        "--namespace",
        NS,
        "--kubeconfig",
        str(api.kubeconfig),
        "--output",
        "-",
        "--env-file",
        str(env_file),
        "--node-label",
        "pool=cpu-a",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, env_file


@pytest.mark.tf
def test_run_prints_a_configmap_that_validate_accepts(first_run: Any) -> None:
    proc, _ = first_run
    check = advisor("validate", "-", stdin=proc.stdout)
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith("ok: ml/tf-advice: intra=")


@pytest.mark.tf
def test_run_output_passes_the_upstream_schema(first_run: Any) -> None:
    try:
        import kubernetes_validate
    except ImportError:
        missing_real_part("kubernetes-validate is not installed (pip install -e '.[dev]')")
    proc, _ = first_run
    doc = yaml.safe_load(proc.stdout)
    kubernetes_validate.validate(doc, "1.35", strict=True)


@pytest.mark.tf
def test_run_created_the_configmap_and_wrote_the_env_file(
    first_run: Any, api: FakeApiServer
) -> None:
    proc, env_file = first_run
    printed = yaml.safe_load(proc.stdout)
    stored = api.get(NS, NAME)
    assert stored is not None
    assert stored["data"] == printed["data"]
    assert stored["metadata"]["annotations"] == printed["metadata"]["annotations"]
    assert env_file.read_text() == "".join(f"{k}={v}\n" for k, v in printed["data"].items())
    assert (
        '"node_labels":{"pool":"cpu-a"}'
        in printed["metadata"]["annotations"]["tf-thread-advisor.io/provenance"]
    )
    statuses = [(r.method, r.query.get("dryRun"), r.status) for r in api.writes()]
    assert statuses == [("PATCH", "All", 201), ("PATCH", None, 201)]


@pytest.mark.tf
def test_second_run_updates_in_place_through_a_transient_503(
    first_run: Any, api: FakeApiServer
) -> None:
    before = api.get(NS, NAME)
    assert before is not None
    api.requests.clear()
    api.inject(503, times=2, method="PATCH")
    proc = advisor(
        "run",
        "--budget",
        BUDGET,
        "--configmap",
        NAME,
        "--namespace",
        NS,
        "--kubeconfig",
        str(api.kubeconfig),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == ""  # a ConfigMap target and no --output: nothing on stdout
    assert "HTTP 503" in proc.stderr and "retrying" in proc.stderr
    after = api.get(NS, NAME)
    assert after is not None
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
    assert after["metadata"]["annotations"] != before["metadata"]["annotations"]  # a new time
    assert [r.status for r in api.writes()] == [503, 503, 200, 200]


def _threads_with(data: dict[str, str]) -> int:
    """The thread count of a fresh TF process whose whole environment is ``data``."""
    child = (
        "import re, tensorflow as tf\n"
        "x = tf.random.uniform((256, 256))\n"
        "_ = tf.matmul(x, x).numpy()\n"
        "status = open('/proc/self/status').read()\n"
        "print(re.search(r'^Threads:\\s+(\\d+)', status, re.M).group(1))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", child],
        env=dict(data),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return int(proc.stdout.strip().splitlines()[-1])


@pytest.mark.tf
def test_a_consumer_runs_with_the_configmap_pool_sizes() -> None:
    few = render_configmap(recommendation(1, 1), NAME, NS)["data"]
    many = render_configmap(recommendation(4, 4), NAME, NS)["data"]
    assert set(few) == {"TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"}
    threads_few, threads_many = _threads_with(few), _threads_with(many)
    # both pools grow by 3 threads each going from 1/1 to 4/4
    assert threads_many - threads_few >= (4 - 1) + (4 - 1), (threads_few, threads_many)
