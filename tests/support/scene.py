"""A ``run`` through the real CLI, in-process, against the strict fake API server and two files
(``--output``, ``--env-file``) that hold known old bytes, with the real search over the cost model
of search_fakes in place of trials (no TensorFlow): what is under test is what happens around the
sweep. A hook between the sweep and the publish switches a fault on where a real cluster would
start to fail.

Used by tests/integration/test_hardening_faults.py and tests/system/test_publish_restart.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import main
from advisor.models import CalibrationOptions, CalibrationResult, NodeProfile
from advisor.pipeline import Instruments
from advisor.pipeline.sweep import sweep
from testkit.fakeapi.server import FakeApiServer
from tests.support.search_fakes import FakeClock, FakeTrials

NAME, NS = "tf-advice", "ml"
OLD_OUTPUT = b"# the previous advice, byte for byte\n"
OLD_ENV = b"TF_NUM_INTRAOP_THREADS=3\n"
#: the bound on all API retries of one operation in these tests (the Job's default is 60 s)
CLUSTER_TIMEOUT_S = 6.0

Hook = Callable[["Scene"], None]


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    seconds: float

    def the_one_line(self) -> str:
        assert "Traceback" not in self.err
        lines = self.err.splitlines()
        assert len(lines) == 1, self.err
        assert lines[0].startswith("tf-thread-advisor: error: ")
        return lines[0]


@dataclass
class Scene:
    tmp: Path
    api: FakeApiServer
    output: Path
    env_file: Path
    capsys: pytest.CaptureFixture[str]
    monkeypatch: pytest.MonkeyPatch
    #: the cluster connections ``run`` made (hooks may cut them)
    connections: list[Any] = field(default_factory=list)
    #: the sweep ``run`` uses instead of the search over the cost model (a tripwire)
    sweep: Callable[..., CalibrationResult] | None = None

    def run(self, *extra: str, at_publish: Hook | None = None) -> Outcome:
        """``run`` to the fake cluster and both files; ``at_publish`` runs after the sweep."""
        from advisor import cluster

        real_connect = cluster.connect

        def connect(*args: Any, **kwargs: Any) -> Any:
            connection = real_connect(*args, **kwargs)
            self.connections.append(connection)
            return connection

        def sweep_then_fault(
            options: CalibrationOptions, node: NodeProfile, **kwargs: Any
        ) -> CalibrationResult:
            clock = FakeClock()
            trials = FakeTrials(clock, usable=node.effective_cpus, affinity=len(node.affinity_cpus))
            result = sweep(options, node, trial_fn=trials, clock=clock, **kwargs)
            if at_publish is not None:
                at_publish(self)
            return result

        self.monkeypatch.setattr(cluster, "connect", connect)
        argv = [
            *("--log-level", "error", "run", "--budget", "60"),
            *("--configmap", NAME, "--namespace", NS, "--kubeconfig", str(self.api.kubeconfig)),
            *("--output", str(self.output), "--env-file", str(self.env_file)),
            *("--cluster-timeout", str(CLUSTER_TIMEOUT_S), *extra),
        ]
        started = time.monotonic()
        code = main(argv, instruments=Instruments(sweep=self.sweep or sweep_then_fault))
        seconds = time.monotonic() - started
        out, err = self.capsys.readouterr()
        return Outcome(code, out, err, seconds)

    def assert_files_unchanged(self) -> None:
        assert self.output.read_bytes() == OLD_OUTPUT
        assert self.env_file.read_bytes() == OLD_ENV
        assert [p.name for p in self.tmp.iterdir() if p.name.endswith(".tmp")] == []

    def published(self) -> dict[str, Any] | None:
        """The ConfigMap this run wrote to ``--output`` (None when it did not write it)."""
        if self.output.read_bytes() == OLD_OUTPUT:
            return None
        loaded: dict[str, Any] = yaml.safe_load(self.output.read_text())
        return loaded


def make_scene(
    tmp: Path, api: FakeApiServer, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> Scene:
    """A scene around ``api`` whose --output and --env-file hold the old bytes."""
    output, env_file = tmp / "advice.yaml", tmp / "advice.env"
    output.write_bytes(OLD_OUTPUT)
    env_file.write_bytes(OLD_ENV)
    return Scene(tmp, api, output, env_file, capsys, mp)
