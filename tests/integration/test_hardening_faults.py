"""Faults, through the real CLI: at publish (the fake API server misbehaving after the sweep) and
during trials (children that hang, crash, are killed or print garbage).

Publish faults run ``run`` in-process with the real search over a cost model (no TF: what is under
test is what happens after the sweep); each fault is switched on by a hook between the pre-sweep
checks and the publish, exactly where a real cluster would start to fail. Trial faults run the
real runner with real child processes: the sweep is given a dispatcher as its trial program, which
turns each setting into one misbehaviour of tests/support/fake_trials/fake_trial.py. Both reach the
CLI as its ``Instruments``.

Every failure must be the documented exit code with one line on stderr, the ``--output`` and
``--env-file`` files keeping their old bytes and the stored ConfigMap not carrying the new advice.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import pytest

from advisor import errors
from advisor.calibrate.candidates import candidate_configs
from advisor.cli import main
from advisor.pipeline import Instruments
from advisor.pipeline.sweep import sweep
from advisor.recommend import render_configmap
from advisor.trials.launch import TrialPrograms
from testkit.fakeapi.rbac import role_rules, without_verb
from testkit.fakeapi.samples import recommendation
from testkit.fakeapi.server import FakeApiServer
from tests.support import FAKE_TRIALS
from tests.support.scene import (
    CLUSTER_TIMEOUT_S,
    NAME,
    NS,
    Hook,
    Outcome,
    Scene,
    make_scene,
)
from tests.support.search_fakes import node as simulated_node

FAKE_TRIAL = FAKE_TRIALS / "fake_trial.py"


@pytest.fixture
def scene(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Scene]:
    with FakeApiServer(tmp_path, configmap_name=NAME) as api:
        yield make_scene(tmp_path, api, capsys, monkeypatch)


def seed(api: FakeApiServer) -> dict[str, Any]:
    """A previous advice, measured with a smaller budget than the run's (so it may be replaced)."""
    return api.put(render_configmap(recommendation(3, 2, budget_s=30.0), NAME, NS))


# --------------------------------------------------------------------------------------------------
# faults at publish that end the run: exit code, one line, nothing changed


def rotate_token(scene: Scene) -> None:
    scene.api.token = "rotated-while-we-measured"


def revoke_patch(scene: Scene) -> None:
    scene.api.rules = without_verb(role_rules(configmap_name=NAME), "patch")


def delete_namespace(scene: Scene) -> None:
    api = scene.api
    with api._lock:
        api.namespaces.discard(NS)
        api.configmaps.store.pop((NS, NAME), None)


def make_immutable(scene: Scene) -> None:
    stored = scene.api.get(NS, NAME)
    assert stored is not None
    scene.api.put({**stored, "immutable": True})


def keep_changing(scene: Scene) -> None:
    """Another writer bumps the ConfigMap before each of our writes: every apply is stale."""
    counter = iter(range(1000))

    def race(server: FakeApiServer) -> None:
        stored = server.get(NS, NAME)
        assert stored is not None
        stored["metadata"]["labels"]["race"] = str(next(counter))
        server.put(stored)

    scene.api.before_write = race


def created_meanwhile(scene: Scene) -> None:
    """Someone else (kubectl) creates the ConfigMap between our read (404) and our write: the
    write must not take it over as if it had been ours to replace."""
    foreign = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": NAME, "namespace": NS, "labels": {"team": "ml"}},
        "data": {"TF_NUM_INTRAOP_THREADS": "64", "NOTES": "hand-tuned, do not touch"},
    }

    def race(server: FakeApiServer) -> None:
        if server.get(NS, NAME) is None:
            server.put(foreign, manager="kubectl")

    scene.api.before_write = race


def fail_every_request(status: int) -> Hook:
    def hook(scene: Scene) -> None:
        scene.api.inject(status, times=10_000)

    return hook


def hang_every_request(scene: Scene) -> None:
    scene.api.hang(times=10_000)


def refuse_connections(scene: Scene) -> None:
    """The API server goes away: its port is closed, and so are the client's kept-alive
    connections to it (a dead server's connections die with it)."""
    scene.api.stop()
    for connection in scene.connections:
        connection.api_client.rest_client.pool_manager.clear()


@dataclass(frozen=True)
class Fault:
    id: str
    hook: Hook
    error: type[errors.AdvisorError]
    says: tuple[str, ...]
    seeded: bool = True


FATAL = [
    Fault("401-token-rotated", rotate_token, errors.ForbiddenError, ("401", "credentials")),
    Fault("403-role-lost-patch", revoke_patch, errors.ForbiddenError, ("forbidden", "patch")),
    Fault(
        "404-namespace-gone",
        delete_namespace,
        errors.ClusterRejectedError,
        ("namespace ml not found",),
        seeded=False,
    ),
    Fault("409-conflict-persisting", keep_changing, errors.ConflictError, ("kept changing",)),
    Fault(
        "409-created-meanwhile",
        created_meanwhile,
        errors.AdviceKeptError,
        ("not written by tf-thread-advisor",),
        seeded=False,
    ),
    Fault("422-immutable", make_immutable, errors.ClusterRejectedError, ("422", "immutable")),
    # transient statuses are retried (more than one attempt) up to the bound, then given up on
    Fault(
        "500-persisting",
        fail_every_request(500),
        errors.ClusterUnreachableError,
        ("HTTP 500", "gave up after 3 attempt(s)"),
    ),
    Fault(
        "503-persisting",
        fail_every_request(503),
        errors.ClusterUnreachableError,
        ("HTTP 503", "gave up after 3 attempt(s)"),
    ),
    Fault(
        "429-persisting",
        fail_every_request(429),
        errors.ClusterUnreachableError,
        ("HTTP 429", "gave up after 3 attempt(s)"),
    ),
    Fault(
        "connection-refused",
        refuse_connections,
        errors.ClusterUnreachableError,
        ("cannot connect",),
    ),
    Fault(
        "never-answers", hang_every_request, errors.ClusterUnreachableError, ("no answer within",)
    ),
]


@pytest.mark.parametrize("fault", FATAL, ids=[f.id for f in FATAL])
def test_a_fault_at_publish_is_one_line_and_changes_nothing(fault: Fault, scene: Scene) -> None:
    before = seed(scene.api) if fault.seeded else None
    outcome = scene.run(at_publish=fault.hook)
    assert outcome.code == fault.error.exit_code, outcome.err
    line = outcome.the_one_line()
    for fragment in fault.says:
        assert fragment in line, line
    assert "configmaps/tf-advice" in line or "ConfigMap" in line or "tf-advice" in line, line
    assert outcome.out == ""
    scene.assert_files_unchanged()
    stored = scene.api.get(NS, NAME)
    if before is None:
        assert stored is None or "tf-thread-advisor.io/provenance" not in stored.get(
            "metadata", {}
        ).get("annotations", {}), stored
        assert stored is None or stored["data"].get("NOTES") == "hand-tuned, do not touch"
    else:
        assert stored is not None
        # whatever another writer did, our advice never landed
        assert stored["data"] == before["data"]
        assert stored["metadata"]["annotations"] == before["metadata"]["annotations"]
    # retries are bounded by --cluster-timeout (generous slack: this is a bound, not a speed)
    assert outcome.seconds < CLUSTER_TIMEOUT_S + 20


# --------------------------------------------------------------------------------------------------
# transient faults at publish: retried, then the advice lands


@pytest.mark.parametrize(
    "status, times, retry_after",
    [(429, 1, "1"), (503, 2, None), (500, 1, None), (409, 1, None)],
    ids=["429-retry-after", "503-twice", "500-once", "409-once"],
)
def test_a_transient_fault_at_publish_is_retried(
    status: int, times: int, retry_after: str | None, scene: Scene
) -> None:
    seed(scene.api)

    def hook(scene: Scene) -> None:
        scene.api.requests.clear()
        scene.api.inject(status, times=times, retry_after=retry_after, method="PATCH")

    outcome = scene.run(at_publish=hook)
    assert (outcome.code, outcome.err) == (0, ""), outcome.err
    printed = scene.published()
    assert printed is not None
    stored = scene.api.get(NS, NAME)
    assert stored is not None
    assert stored["data"] == printed["data"]
    assert stored["metadata"]["annotations"] == printed["metadata"]["annotations"]
    patches = [r.status for r in scene.api.requests if r.method == "PATCH"]
    assert patches == [status] * times + [200]


# --------------------------------------------------------------------------------------------------
# faults during trials: recorded with their reason, the sweep goes on; a dead baseline is fatal

DISPATCHER = """
import json, os, sys
MODES = json.loads({modes!r})
args = sys.argv[1:]
request = json.loads(open(args[args.index("--request") + 1]).read())
if request["mode"] == "inspect":
    info = {{"kind": "builtin", "batch_size": request["batch_size"],
             "concurrency": request["concurrency"], "tf_version": "0.0-fake"}}
    with open(args[args.index("--result") + 1], "w") as out:
        json.dump({{"status": "ok", "info": info}}, out)
    sys.exit(0)
key = ",".join(os.environ.get(f"TF_NUM_{{pool}}_THREADS", "-") for pool in ("INTRAOP", "INTEROP"))
mode = MODES.get(key, ["ok"])
os.execv(sys.executable, [sys.executable, {fake!r}, *mode, *args])
"""


def use_trial_programs(tmp: Path, modes: dict[str, list[str]]) -> Instruments:
    """The real sweep, every trial child (and the inspection) running the dispatcher instead of
    TensorFlow: spawned, since only the real child can be forked."""
    script = tmp / "dispatch_trial.py"
    script.write_text(DISPATCHER.format(modes=json.dumps(modes), fake=str(FAKE_TRIAL)))
    programs = TrialPrograms.spawned([sys.executable, str(script)])
    return Instruments(sweep=partial(sweep, programs=programs))


def test_faulty_trials_are_recorded_and_the_sweep_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # This machine's 2 CPUs leave 3 settings once TF's default (2/2, the baseline) is not one of
    # them: too few for six faults beside a healthy one. The node is simulated with 8 CPUs (the
    # trial programs do not care); the children, their faults and the deadlines are real.
    node = simulated_node(8)
    settings = [(c.intra, c.inter) for c in candidate_configs(node)]
    faults = {
        "hang": ("timeout", "deadline"),
        "crash": ("crashed", "the model exploded"),
        "sigkill": ("oom", "SIGKILL"),
        "garbage": ("failed", "not JSON"),
        "sigsegv": ("crashed", "SIGSEGV"),
        "silent": ("failed", "without an answer"),
    }
    pid_file = tmp_path / "hang.pids"
    modes: dict[str, list[str]] = {}
    assigned: dict[tuple[int, int], str] = {}
    # the first setting (closest to the usable CPUs) stays healthy: something must be advised
    for (intra, inter), mode in zip(settings[1:], faults, strict=False):
        modes[f"{intra},{inter}"] = [mode, str(pid_file)] if mode == "hang" else [mode]
        assigned[(intra, inter)] = mode
    assert len(assigned) >= 3, f"too few settings on this node to show the faults: {settings}"
    instruments = replace(use_trial_programs(tmp_path, modes), probe=lambda _root: node)

    code = main(
        ["--log-level", "error", "calibrate", "--budget", "30", "--format", "json"],
        instruments=instruments,
    )
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    result = json.loads(out)
    seen: dict[str, dict[str, Any]] = {}
    for trial in result["trials"]:
        mode = assigned.get((trial["intra_op_threads"], trial["inter_op_threads"]))
        if mode is not None:
            status, says = faults[mode]
            assert trial["status"] == status, trial
            assert says in trial["reason"], trial
            seen[mode] = trial
        else:
            assert trial["status"] == "ok", trial
    assert set(seen) == set(assigned.values()), "every faulty setting was tried and recorded"
    # a faulty setting is never advised (TF's default may be: it is the baseline, and healthy)
    assert (result["intra_op_threads"], result["inter_op_threads"]) not in assigned
    faulty_raced = [t for t in result["trials"] if t["round"] > 0 and t["status"] != "ok"]
    assert faulty_raced == [], "a setting that failed in the screen is not raced"
    # the hung child and the grandchild it started went with its process group
    for pid in map(int, pid_file.read_text().split()):
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.parametrize("baseline", ["crash", "garbage", "sigkill"])
def test_a_baseline_that_cannot_run_publishes_nothing(baseline: str, scene: Scene) -> None:
    seed(scene.api)
    before = scene.api.get(NS, NAME)
    instruments = use_trial_programs(scene.tmp, {"-,-": [baseline]})
    argv = [
        *("--log-level", "error", "run", "--budget", "60"),
        *("--configmap", NAME, "--namespace", NS, "--kubeconfig", str(scene.api.kubeconfig)),
        *("--output", str(scene.output), "--env-file", str(scene.env_file)),
    ]
    code = main(argv, instruments=instruments)
    out, err = scene.capsys.readouterr()
    outcome = Outcome(code, out, err, 0.0)
    assert outcome.code == errors.CalibrationError.exit_code, err
    assert "baseline" in outcome.the_one_line()
    assert out == ""
    scene.assert_files_unchanged()
    assert scene.api.get(NS, NAME) == before
    assert [r for r in scene.api.writes() if r.query.get("dryRun") != "All"] == []


def _signal_arrives(during: str, scene: Scene) -> None:
    """Raise what the SIGTERM handler raises, at one point of the publish step."""
    from advisor.cluster import ConfigMapWriter
    from advisor.pipeline import files

    interrupted = errors.InterruptedRunError("interrupted by SIGTERM; nothing was published")
    if during == "cluster-write":
        real_publish = ConfigMapWriter.publish

        def publish_then_signal(self: Any, *args: Any, **kwargs: Any) -> Any:
            real_publish(self, *args, **kwargs)  # the apply went through; the reply is lost
            raise interrupted

        scene.monkeypatch.setattr(ConfigMapWriter, "publish", publish_then_signal)
    else:

        def commit_signal(self: Any) -> None:
            raise interrupted

        scene.monkeypatch.setattr(files.StagedFile, "commit", commit_signal)


@pytest.mark.parametrize(
    ("during", "says"),
    [
        (
            "cluster-write",
            "while writing configmaps/tf-advice in namespace ml: it holds the previous",
        ),
        ("file-rename", "after configmaps/tf-advice in namespace ml was written"),
    ],
)
def test_a_signal_at_publish_says_what_was_published(during: str, scene: Scene, says: str) -> None:
    # "nothing was published" would be false once the apply has been sent
    seed(scene.api)
    _signal_arrives(during, scene)
    outcome = scene.run()
    assert outcome.code == errors.InterruptedRunError.exit_code
    line = outcome.the_one_line()
    assert "interrupted by SIGTERM" in line
    assert says in line
    assert "nothing was published" not in line
    scene.assert_files_unchanged()
