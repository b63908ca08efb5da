"""Bad input anywhere, through the real CLI: one line naming the input and the problem, the
documented exit code, no traceback, and nothing changed that must not change.

Every case runs ``advisor.cli.main`` in-process against a small world: an ``--output`` file and an
``--env-file`` that already hold known bytes, and a fake API server that already stores an advice
ConfigMap. After the failure the files keep their bytes, the stored ConfigMap is the same object
(same resourceVersion) and no write reached the server. Cases that must stop before the sweep run
with a tripwire in its place; the model cases run the real inspection (a TF child) where one is
needed to find the problem (the cases that need a real model built by TensorFlow run from
tests/system/test_hardening_inputs_models.py, on this file's table and world).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from advisor import errors
from advisor.cli import main
from advisor.keys import HASH_ANNOTATION, PROVENANCE_ANNOTATION
from advisor.pipeline import Instruments
from advisor.recommend import configmap_yaml, content_hash, render_configmap
from testkit.fakeapi.samples import recommendation
from testkit.fakeapi.server import FakeApiServer
from tests.support import PROBE_TREES
from tests.support.search_fakes import tripwire

NAME, NS = "tf-advice", "ml"
OLD_OUTPUT = b"# the previous advice, byte for byte\nkind: ConfigMap\n"
OLD_ENV = b"TF_NUM_INTRAOP_THREADS=3\n"
V1_TREE = PROBE_TREES / "v1"
LEAF_QUOTA = "sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod1f0c/cpu.cfs_quota_us"


@dataclass
class World:
    """What a failed command must leave alone."""

    tmp: Path
    api: FakeApiServer
    output: Path
    env_file: Path
    stored: dict[str, Any]
    models: Callable[[], Path]

    def fill(self, word: str) -> str:
        return word.format(
            tmp=self.tmp,
            out=self.output,
            env=self.env_file,
            kubeconfig=self.api.kubeconfig,
            models=self.models() if "{models}" in word else "",
        )

    def assert_unchanged(self) -> None:
        assert self.output.read_bytes() == OLD_OUTPUT
        assert self.env_file.read_bytes() == OLD_ENV
        assert self.api.get(NS, NAME) == self.stored
        assert self.api.writes() == [] or all(
            r.query.get("dryRun") == "All" for r in self.api.writes()
        )
        leftovers = [p.name for p in self.tmp.iterdir() if p.name.endswith(".tmp")]
        assert leftovers == []


@pytest.fixture(scope="module")
def built_models(test_models: Callable[[], Path]) -> Callable[[], Path]:
    """Real SavedModels, built only if a case needs one."""
    return test_models


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeApiServer]:
    with FakeApiServer(tmp_path_factory.mktemp("fakeapi"), configmap_name=NAME) as server:
        server.put(render_configmap(recommendation(3, 2, budget_s=30.0), NAME, NS))
        yield server


@pytest.fixture
def world(
    tmp_path: Path,
    api: FakeApiServer,
    built_models: Callable[[], Path],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[World]:
    monkeypatch.delenv("TFTA_POD_NAMESPACE", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    output, env_file = tmp_path / "advice.yaml", tmp_path / "advice.env"
    output.write_bytes(OLD_OUTPUT)
    env_file.write_bytes(OLD_ENV)
    api.requests.clear()
    stored = api.get(NS, NAME)
    assert stored is not None
    yield World(tmp_path, api, output, env_file, stored, built_models)


#: for the inputs refused before the sweep: reaching it fails the test
NO_SWEEP = Instruments(
    sweep=tripwire("the sweep started although the input should have stopped it")
)


def run_cli(
    capsys: pytest.CaptureFixture[str], argv: list[str], instruments: Instruments | None = None
) -> tuple[int, str, str]:
    # warnings and info logs off: what is left on stderr is what the user must read
    code = main(["--log-level", "error", *argv], instruments=instruments)
    out, err = capsys.readouterr()
    return code, out, err


def the_one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tf-thread-advisor: error: "), lines[0]
    return lines[0]


# --------------------------------------------------------------------------------------------------
# flags, names, paths: one table


U, M, P = errors.UsageError, errors.ModelError, errors.ProbeError
R = errors.RequestsError


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    error: type[errors.AdvisorError]
    #: substrings the line must contain: the input and the problem
    says: tuple[str, ...]
    #: True: the problem is only found by loading the model (no tripwire)
    loads_model: bool = False
    env: dict[str, str] = field(default_factory=dict)


RUN = ("run", "--output", "{out}", "--env-file", "{env}")


def model_case(case_id: str, path: str, says: tuple[str, ...], *extra: str) -> Case:
    """Found by calibrate itself (its inspection), so no tripwire replaces it."""
    return Case(case_id, (*RUN, "--model", path, *extra), M, says, loads_model=True)


CLUSTER = ("--configmap", NAME, "--namespace", NS, "--kubeconfig", "{kubeconfig}")

CASES = [
    # the command line itself
    Case("no-command", (), U, ("COMMAND", "required")),
    Case("unknown-command", ("frobnicate",), U, ("frobnicate", "unknown command")),
    Case("unknown-global-flag", ("--bogus", "probe"), U, ("--bogus", "unrecognized")),
    Case("unknown-run-flag", (*RUN, "--bogus"), U, ("--bogus", "unrecognized")),
    # --debug after the subcommand is a global flag; a usage error stays one line under it
    Case("debug-after-command", (*RUN, "--debug", "--bogus"), U, ("--bogus", "unrecognized")),
    Case("flag-without-value", (*RUN, "--budget"), U, ("--budget", "expected one argument")),
    Case("bad-format", ("probe", "--format", "xml"), U, ("--format", "'xml'")),
    Case("bad-log-format", ("--log-format", "xml", "probe"), U, ("--log-format", "'xml'")),
    Case("bad-log-level", ("--log-level", "loud", "probe"), U, ("--log-level", "'loud'")),
    # --budget
    Case("budget-zero", (*RUN, "--budget", "0"), U, ("--budget", "'0'", "positive")),
    Case("budget-negative", (*RUN, "--budget", "-1"), U, ("--budget", "'-1'", "positive")),
    Case("budget-word", (*RUN, "--budget", "abc"), U, ("--budget", "'abc'")),
    Case("budget-nan", (*RUN, "--budget", "nan"), U, ("--budget", "'nan'")),
    Case("budget-inf", (*RUN, "--budget", "inf"), U, ("--budget", "'inf'")),
    Case("budget-too-small", (*RUN, "--budget", "5"), U, ("--budget 5", "too small")),
    Case("budget-calibrate", ("calibrate", "--budget", "24.9"), U, ("--budget 24.9", "small")),
    Case("trial-mode-unknown", (*RUN, "--trial-mode", "thread"), U, ("--trial-mode", "'thread'")),
    # sizes and the objective
    Case("batch-zero", (*RUN, "--batch-size", "0"), U, ("--batch-size", "at least 1", "0")),
    Case("batch-negative", (*RUN, "--batch-size", "-1"), U, ("--batch-size", "-1")),
    Case("batch-fraction", (*RUN, "--batch-size", "1.5"), U, ("--batch-size", "'1.5'", "whole")),
    Case("concurrency-zero", (*RUN, "--concurrency", "0"), U, ("--concurrency", "at least 1")),
    Case("objective-unknown", (*RUN, "--objective", "speed"), U, ("--objective", "'speed'")),
    Case("slo-without-bound", (*RUN, "--objective", "slo"), U, ("--objective slo", "--p99-ms")),
    Case("bound-without-slo", (*RUN, "--p99-ms", "20"), U, ("--p99-ms", "--objective slo")),
    Case(
        "p99-negative",
        (*RUN, "--objective", "slo", "--p99-ms", "-3"),
        U,
        ("--p99-ms", "'-3'", "positive"),
    ),
    Case("p99-word", (*RUN, "--objective", "slo", "--p99-ms", "fast"), U, ("--p99-ms", "'fast'")),
    Case("model-empty", (*RUN, "--model", " "), U, ("--model", "empty")),
    # --input-shape: its syntax is checked before anything starts (the model's names and ranks
    # are the inspection's, in the model cases below)
    Case("input-shape-no-name", (*RUN, "--input-shape", "128"), U, ("--input-shape '128'",)),
    Case(
        "input-shape-zero",
        (*RUN, "--input-shape", "ids=0"),
        U,
        ("--input-shape 'ids=0'", "dimension '0'"),
    ),
    Case(
        "input-shape-twice",
        (*RUN, "--input-shape", "ids=8;ids=9"),
        U,
        ("--input-shape", "'ids' is given twice"),
    ),
    Case("input-shape-empty", (*RUN, "--input-shape", ";"), U, ("--input-shape", "no input")),
    # names
    Case(
        "configmap-upper-case",
        (*RUN, "--configmap", "TF-Advice", "--namespace", NS),
        U,
        ("--configmap 'TF-Advice'", "lowercase"),
    ),
    Case(
        "configmap-underscore",
        (*RUN, "--configmap", "tf_advice", "--namespace", NS),
        U,
        ("--configmap 'tf_advice'", "lowercase"),
    ),
    Case(
        "configmap-too-long",
        (*RUN, "--configmap", "a" * 254, "--namespace", NS),
        U,
        ("--configmap 'aaaa", "254 characters", "253"),
    ),
    Case(
        "namespace-upper-case",
        (*RUN, "--configmap", NAME, "--namespace", "ML"),
        U,
        ("--namespace 'ML'", "lowercase"),
    ),
    Case(
        "namespace-too-long",
        (*RUN, "--configmap", NAME, "--namespace", "n" * 64),
        U,
        ("--namespace 'nnnn", "64 characters", "63"),
    ),
    Case(
        "namespace-underscore",
        (*RUN, "--configmap", NAME, "--namespace", "ml_team"),
        U,
        ("--namespace 'ml_team'", "lowercase"),
    ),
    Case("configmap-without-namespace", (*RUN, "--configmap", NAME), U, ("--namespace",)),
    Case(
        "namespace-from-bad-env",
        (*RUN, "--configmap", NAME),
        U,
        ("--namespace 'Bad_NS'", "lowercase"),
        env={"TFTA_POD_NAMESPACE": "Bad_NS"},
    ),
    Case("node-label-no-equals", (*RUN, "--node-label", "pool"), U, ("--node-label 'pool'", "=")),
    Case(
        "node-label-bad-value",
        (*RUN, "--node-label", "pool=a b"),
        U,
        ("--node-label 'pool=a b'", "label value"),
    ),
    Case(
        "node-selector-no-equals",
        (*RUN, "--node-selector", "pool"),
        U,
        ("--node-selector 'pool'", "KEY=VALUE"),
    ),
    Case(
        "node-selector-bad-key",
        (*RUN, "--node-selector", "Bad_Prefix/pool=a"),
        U,
        ("--node-selector 'Bad_Prefix/pool=a'", "not a DNS subdomain"),
    ),
    Case(
        "namespace-without-configmap",
        (*RUN, "--namespace", "ml"),
        U,
        ("--namespace needs --configmap",),
    ),
    Case(
        "annotation-no-equals",
        (*RUN, "--configmap-annotation", "reload"),
        U,
        ("--configmap-annotation 'reload'", "KEY=VALUE"),
    ),
    Case(
        "annotation-our-prefix",
        (*RUN, "--configmap-annotation", "tf-thread-advisor.io/content-hash=x"),
        U,
        ("'tf-thread-advisor.io/content-hash'", "the advisor's own"),
    ),
    Case(
        "restart-bad-kind",
        (*RUN, *CLUSTER, "--restart", "pod/web"),
        U,
        ("--restart", "'pod/web'", "deployment/NAME"),
    ),
    Case(
        "restart-bad-name",
        (*RUN, *CLUSTER, "--restart", "deployment/Web_1"),
        U,
        ("--restart", "'Web_1'", "lowercase"),
    ),
    Case(
        "restart-without-configmap",
        (*RUN, "--restart", "deployment/web"),
        U,
        ("--restart needs --configmap",),
    ),
    Case(
        "restart-twice",
        (*RUN, *CLUSTER, "--restart", "deployment/web", "--restart", "deploy/web"),
        U,
        ("--restart deployment/web is given twice",),
    ),
    # the shipped Role has no rule for workloads: found before the sweep, with its own code
    Case(
        "restart-not-allowed",
        (*RUN, *CLUSTER, "--restart", "deployment/web"),
        errors.RestartTargetError,
        ("--restart deployment/web", "forbidden", "resourceNames [web]"),
    ),
    # the serving target (fleet mode's Jobs): the flags that name it go together
    Case(
        "for-workload-alone",
        (*RUN, "--for-workload", "deploy/web"),
        U,
        ("--for-workload needs --for-container",),
    ),
    Case(
        "for-container-alone",
        (*RUN, "--for-container", "server"),
        U,
        ("--for-container needs --for-workload",),
    ),
    Case(
        "for-workload-bad-kind",
        (*RUN, "--for-workload", "daemonset/agent", "--for-container", "a"),
        U,
        ("--for-workload 'daemonset/agent'", "deployment/NAME"),
    ),
    Case(
        "serving-image-alone",
        (*RUN, "--serving-image", "web:1"),
        U,
        ("--serving-image needs --for-workload and --for-container",),
    ),
    Case(
        "serving-model-path-alone",
        (*RUN, "--serving-model-path", "/models/web"),
        U,
        ("--serving-model-path needs --for-workload",),
    ),
    Case("cpu-from-unknown", (*RUN, "--cpu-from", "quota"), U, ("--cpu-from", "'quota'")),
    Case(
        "spec-hash-bad",
        (*RUN, "--for-workload", "deploy/web", "--for-container", "a", "--spec-hash", "a b"),
        U,
        ("--spec-hash", "not a valid label value"),
    ),
    Case(
        "spec-field-long",
        (
            *RUN,
            "--for-workload",
            "deploy/web",
            "--for-container",
            "a",
            "--spec-field",
            "k=" + "x" * 65,
        ),
        U,
        ("--spec-field k: the value must hold 1 to 64 characters",),
    ),
    Case(
        "cluster-timeout-zero",
        (*RUN, *CLUSTER, "--cluster-timeout", "0"),
        U,
        ("--cluster-timeout",),
    ),
    Case(
        "kubeconfig-missing",
        (*RUN, "--configmap", NAME, "--namespace", NS, "--kubeconfig", "{tmp}/nope"),
        U,
        ("--kubeconfig", "/nope", "no such file"),
    ),
    Case(
        "kubeconfig-garbage",
        (*RUN, "--configmap", NAME, "--namespace", NS, "--kubeconfig", "{out}"),
        U,
        ("advice.yaml", "cannot load it"),
    ),
    # --host-root
    Case("host-root-missing", ("probe", "--host-root", "{tmp}/nope"), U, ("--host-root", "exist")),
    Case(
        "host-root-a-file",
        (*RUN, "--host-root", "{out}"),
        U,
        ("--host-root", "advice.yaml", "not a directory"),
    ),
    Case("host-root-empty", ("probe", "--host-root", "{tmp}"), P, ("/proc/self/status",)),
    # output paths
    Case("output-folder-missing", ("run", "--output", "{tmp}/no/x.yaml"), U, ("--output", "exist")),
    Case("output-is-a-directory", ("run", "--output", "{tmp}"), U, ("--output", "is a directory")),
    Case(
        "output-under-a-file",
        ("run", "--output", "/etc/hostname/advice.yaml"),
        U,
        ("--output /etc/hostname/advice.yaml", "not a directory"),
    ),
    Case(
        "output-in-a-pseudo-filesystem",
        ("run", "--output", "/proc/advice.yaml"),
        U,
        ("--output /proc/advice.yaml", "not writable"),
    ),
    Case(
        "env-file-is-a-directory",
        ("run", "--output", "{out}", "--env-file", "{tmp}"),
        U,
        ("--env-file", "is a directory"),
    ),
    Case(
        "report-folder-missing",
        ("calibrate", "--report", "{tmp}/no/r.html"),
        U,
        ("--report", "/no/r.html", "exist"),
    ),
    # model paths
    model_case("model-missing", "{tmp}/nope", ("/nope", "no such file")),
    model_case("model-empty-dir", "{tmp}/empty", ("/empty", "empty")),
    model_case("model-not-savedmodel", "{tmp}/plain", ("/plain", "saved_model.pb")),
    model_case(
        "model-base-path-highest-version-broken",
        "{tmp}/served",
        ("/served: a TF Serving base path (versions 1, 2)", "highest version, 2"),
    ),
    model_case("model-garbage-keras", "{tmp}/g.keras", ("g.keras", "zip")),
    model_case("model-fifo", "{tmp}/fifo.keras", ("fifo.keras", "not a regular file")),
    model_case("model-wrong-suffix", "{out}", ("advice.yaml", "SavedModel")),
    model_case("model-corrupt-savedmodel", "{models}/sm_corrupt", ("sm_corrupt",)),
    model_case(
        "model-wrong-signature",
        "{models}/sm_good",
        ("sm_good", "predict_v9"),
        "--signature",
        "predict_v9",
    ),
    model_case(
        "model-string-inputs",
        "{models}/sm_string",
        ("sm_string", "raw text", "tf_serving_warmup_requests", "--requests"),
    ),
    model_case(
        "model-unknown-dimension",
        "{models}/sm_unknown_dim",
        ("sm_unknown_dim", "'x' float32[?,?]", "--input-shape 'x=D1'"),
    ),
    model_case(
        "model-input-shape-names-no-input",
        "{models}/sm_good",
        ("sm_good", "--input-shape names input 'nope'", "lacks"),
        "--input-shape",
        "nope=3",
    ),
    model_case(
        "model-input-shape-wrong-rank",
        "{models}/sm_unknown_dim",
        ("sm_unknown_dim", "--input-shape x=3,4", "gives 2", "has 1"),
        "--input-shape",
        "x=3,4",
    ),
    model_case(
        "model-input-shape-known",
        "{models}/sm_good",
        ("sm_good", "'features', whose shape float32[?,16]", "no unknown dimension"),
        "--input-shape",
        "features=16",
    ),
    # requests to replay: the flags together, then the file (found before any child starts),
    # then each request against the model's signature (a TF child reads them)
    Case("requests-without-model", (*RUN, "--requests", "{tmp}/r.json"), U, ("--requests",)),
    Case(
        "requests-with-batch-size",
        (*RUN, "--model", "{tmp}/fake_sm", "--requests", "{tmp}/r.json", "--batch-size", "4"),
        U,
        ("--batch-size cannot be given with --requests", "--requests none"),
    ),
    Case(
        "requests-with-input-shape",
        (*RUN, "--model", "{tmp}/fake_sm", "--requests", "{tmp}/r.json", "--input-shape", "x=3"),
        U,
        ("--input-shape cannot be given with --requests", "--requests none"),
    ),
    Case(
        "warmup-file-with-batch-size",
        (*RUN, "--model", "{tmp}/warm_sm", "--batch-size", "4"),
        U,
        ("tf_serving_warmup_requests", "--batch-size cannot be given", "--requests none"),
        loads_model=True,
    ),
    Case(
        "requests-missing",
        (*RUN, "--model", "{tmp}/fake_sm", "--requests", "{tmp}/nope.json"),
        R,
        ("{tmp}/nope.json: no such request file",),
        loads_model=True,
    ),
    Case(
        "requests-empty",
        (*RUN, "--model", "{tmp}/fake_sm", "--requests", "{tmp}/empty.json"),
        R,
        ("{tmp}/empty.json: the request file is empty",),
        loads_model=True,
    ),
    Case(
        "requests-a-directory",
        (*RUN, "--model", "{tmp}/fake_sm", "--requests", "{tmp}/empty"),
        R,
        ("{tmp}/empty: not a regular file",),
        loads_model=True,
    ),
    Case(
        "warmup-file-empty",
        (*RUN, "--model", "{tmp}/empty_warm_sm"),
        R,
        ("tf_serving_warmup_requests: the request file is empty",),
        loads_model=True,
    ),
    *(
        Case(case_id, (*RUN, "--model", model, "--requests", file), error, says, loads_model=True)
        for case_id, model, file, error, says in (
            (
                "requests-unknown-input",
                "{models}/sm_good",
                "{tmp}/unknown_input.json",
                R,
                ("unknown_input.json: record 1: signature 'serving_default' has no input 'x'",),
            ),
            (
                "requests-missing-input",
                "{models}/two_inputs.keras",
                "{tmp}/one_of_two.json",
                R,
                ("one_of_two.json: record 1: input 'tokens' is missing",),
            ),
            (
                "requests-wrong-dtype",
                "{models}/sm_good",
                "{models}/requests/int64.tfrecord",
                R,
                ("int64.tfrecord: record 2: input 'features' is int64, the signature takes float",),
            ),
            (
                "requests-wrong-shape",
                "{models}/sm_good",
                "{tmp}/short_rows.json",
                R,
                ("short_rows.json: record 2: input 'features' has shape [1,3]", "[?,16]"),
            ),
            (
                "requests-bad-b64",
                "{models}/sm_string",
                "{tmp}/bad_b64.json",
                R,
                ("bad_b64.json: record 1: instance 2: a b64 value does not decode",),
            ),
            (
                "requests-corrupt",
                "{models}/sm_good",
                "{models}/requests/not_a_log.tfrecord",
                R,
                ("not_a_log.tfrecord: record 1: not a PredictionLog",),
            ),
            (
                "requests-neither-json-nor-tfrecord",
                "{models}/sm_good",
                "{tmp}/plain/variables.txt",
                R,
                ("variables.txt: neither a TF Serving REST body",),
            ),
            (
                "requests-the-model-rejects",
                "{models}/sm_fails",
                "{tmp}/small_values.json",
                M,
                ("small_values.json: record 1: the model failed on it", "inputs must exceed 2"),
            ),
        )
    ),
]


def _prepare_model_paths(tmp: Path) -> None:
    (tmp / "empty").mkdir()
    (tmp / "plain").mkdir()
    (tmp / "plain" / "variables.txt").write_text("not a model\n")
    (tmp / "served" / "1").mkdir(parents=True)
    (tmp / "served" / "1" / "saved_model.pb").write_bytes(b"")
    (tmp / "served" / "2").mkdir()  # the highest version, and no SavedModel
    (tmp / "g.keras").write_bytes(bytes(range(256)) * 4)
    os.mkfifo(tmp / "fifo.keras")  # nobody writes to it: opening it to read would block
    # a directory the parent takes for a SavedModel: the request file's checks come first
    for model in ("fake_sm", "warm_sm", "empty_warm_sm"):
        (tmp / model).mkdir()
        (tmp / model / "saved_model.pb").write_bytes(b"not read before the requests are")
    for model, content in (("warm_sm", b"\x01"), ("empty_warm_sm", b"")):
        (tmp / model / "assets.extra").mkdir()
        (tmp / model / "assets.extra" / "tf_serving_warmup_requests").write_bytes(content)
    (tmp / "empty.json").write_bytes(b"")
    rows = [[0.5] * 16]
    for name, bodies in {
        "unknown_input.json": [{"inputs": {"x": rows}}],
        "one_of_two.json": [{"inputs": {"numbers": [[0.0] * 8]}}],
        "short_rows.json": [{"instances": rows}, {"instances": [[0.5] * 3]}],
        "bad_b64.json": [{"instances": ["text", {"b64": "not base64!"}]}],
        "small_values.json": [{"instances": [[1.0, 1.0, 1.0]]}],
    }.items():
        (tmp / name).write_text("\n".join(json.dumps(body) for body in bodies) + "\n")


def needs_models(case: Case) -> bool:
    """True: the case loads a real model of test_models (a TF child): tests/system runs it."""
    return "{models}" in "".join(case.argv)


def assert_one_line_and_nothing_changed(
    case: Case,
    world: World,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check of every case of the table (the model cases: tests/system)."""
    _prepare_model_paths(world.tmp)
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    argv = [world.fill(word) for word in case.argv]
    code, out, err = run_cli(capsys, argv, None if case.loads_model else NO_SWEEP)
    assert code == case.error.exit_code, err
    line = the_one_line(err)
    for fragment in case.says:
        assert world.fill(fragment) in line, line
    assert out == ""
    world.assert_unchanged()


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES if not needs_models(c)])
def test_bad_input_is_one_line_and_changes_nothing(
    case: Case,
    world: World,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert_one_line_and_nothing_changed(case, world, capsys, monkeypatch)


def test_the_table_is_big_enough_and_covers_every_run_flag() -> None:
    from advisor.cli import build_parser

    assert len(CASES) >= 40
    parser = build_parser()
    run_parser = parser._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    flags = {opt for action in run_parser._actions for opt in action.option_strings}
    exercised = {word.split("=")[0] for case in CASES for word in case.argv}
    # flags that take no value or cannot be wrong on their own
    harmless = {"-h", "--help", "--force", "--signature", "--sweep-onednn", "--spend-budget"}
    assert flags - harmless <= exercised, sorted(flags - harmless - exercised)


def test_a_kubeconfig_that_is_not_yaml_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nclusters: [unclosed\n")
    argv = ["validate", "--configmap", NAME, "--namespace", NS, "--kubeconfig", str(kubeconfig)]
    code, out, err = run_cli(capsys, argv)
    assert (code, out) == (errors.UsageError.exit_code, "")
    assert f"{kubeconfig}: cannot load it" in the_one_line(err)


# --------------------------------------------------------------------------------------------------
# files the probe reads: damage is a warning, not a failure; nothing readable is a probe error


V2_LEAF = (
    "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1f0c.slice/"
    "cri-containerd-a.scope/cpu.max"
)
BINARY = bytes(range(128, 256)) * 3
#: (id, fixture tree, file, new content; None = the file becomes a directory)
DAMAGES: list[tuple[str, str, str, bytes | None]] = [
    ("v1-quota-binary", "v1", LEAF_QUOTA, b"\xff\xfe\x00\x81garbage"),
    ("v1-quota-directory", "v1", LEAF_QUOTA, None),
    ("v1-quota-words", "v1", LEAF_QUOTA, b"lots\n"),
    ("v1-mountinfo-garbage", "v1", "proc/self/mountinfo", b"this is not a mount table\n"),
    ("v1-mountinfo-binary", "v1", "proc/self/mountinfo", BINARY),
    ("v1-proc-cgroup-garbage", "v1", "proc/self/cgroup", b"x:y\n:::\n\n7\n"),
    ("v1-cpuinfo-binary", "v1", "proc/cpuinfo", BINARY),
    ("v2-cpu-max-binary", "v2", V2_LEAF, b"\xff\xfe\x00"),
    ("v2-cpu-max-directory", "v2", V2_LEAF, None),
    ("v2-cpu-max-words", "v2", V2_LEAF, b"lots of cpu\n"),
    ("v2-cpu-max-empty", "v2", V2_LEAF, b""),
    # an integer, but quota / period in CPUs would overflow a float
    ("v1-quota-huge", "v1", LEAF_QUOTA, b"9" * 400 + b"\n"),
    ("v2-cpu-max-huge", "v2", V2_LEAF, b"9" * 400 + b" 100000\n"),
]


@pytest.mark.parametrize(
    "tree, damaged, content", [d[1:] for d in DAMAGES], ids=[d[0] for d in DAMAGES]
)
def test_a_damaged_probe_file_is_a_warning_naming_it(
    tree: str,
    damaged: str,
    content: bytes | None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = tmp_path / "root"
    shutil.copytree(PROBE_TREES / tree, root)
    target = root / damaged
    assert target.is_file(), "the fixture has the file this case damages"
    if content is None:
        target.unlink()
        target.mkdir()
    else:
        target.write_bytes(content)
    code, out, err = run_cli(capsys, ["probe", "--host-root", str(root), "--format", "json"])
    assert (code, err) == (0, "")
    profile = json.loads(out)
    assert any(w.startswith("/" + damaged) for w in profile["warnings"]), profile["warnings"]
    assert profile["affinity_cpus"], "the affinity still comes through"


@pytest.mark.parametrize(
    "status, says",
    [
        ("Name:\tpython\n", "/proc/self/status"),
        ("Cpus_allowed_list:\tbanana\n", "'banana'"),
        (b"\xff\xfe\x00\x81", "/proc/self/status"),
    ],
    ids=["no-affinity-line", "affinity-garbage", "status-binary"],
)
def test_an_unknown_affinity_is_a_probe_error(
    status: str | bytes, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    shutil.copytree(V1_TREE, root)
    target = root / "proc/self/status"
    if isinstance(status, bytes):
        target.write_bytes(status)
    else:
        target.write_text(status)
    code, out, err = run_cli(capsys, ["probe", "--host-root", str(root)])
    assert code == errors.ProbeError.exit_code
    assert says in the_one_line(err)
    assert out == ""


# --------------------------------------------------------------------------------------------------
# validate: every kind of bad ConfigMap file


def _good() -> dict[str, Any]:
    return render_configmap(recommendation(3, 2), NAME, NS)


def _with(mutate: Callable[[dict[str, Any]], None], rehash: bool = False) -> bytes:
    cm = _good()
    mutate(cm)
    if rehash:
        annotations = cm["metadata"]["annotations"]
        annotations[HASH_ANNOTATION] = content_hash(cm["data"])
    return configmap_yaml(cm).encode()


def _set_data(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(cm: dict[str, Any]) -> None:
        cm["data"][key] = value

    return mutate


def _drop(*path: str) -> Callable[[dict[str, Any]], None]:
    def mutate(cm: dict[str, Any]) -> None:
        node = cm
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]

    return mutate


def _set_annotation(key: str, value: str) -> Callable[[dict[str, Any]], None]:
    def mutate(cm: dict[str, Any]) -> None:
        cm["metadata"]["annotations"][key] = value

    return mutate


def _set_kind(cm: dict[str, Any]) -> None:
    cm["kind"] = "Secret"


VALIDATE_CASES: list[tuple[str, bytes | None, type[errors.AdvisorError], tuple[str, ...]]] = [
    ("not-yaml", b"data: [unclosed\n  key: {\n", errors.InvalidAdviceError, ("not valid YAML",)),
    ("yaml-list", b"- a\n- b\n", errors.InvalidAdviceError, ("mapping", "list")),
    ("yaml-scalar", b"42\n", errors.InvalidAdviceError, ("mapping", "int")),
    (
        "two-documents",
        b"---\n".join([configmap_yaml(_good()).encode()] * 2),
        errors.InvalidAdviceError,
        ("found 2",),
    ),
    ("empty-file", b"", errors.InvalidAdviceError, ("found 0",)),
    ("binary-garbage", bytes(range(128, 256)) * 8, errors.InvalidAdviceError, ("UTF-8",)),
    ("wrong-kind", _with(_set_kind), errors.InvalidAdviceError, ("kind ConfigMap", "'Secret'")),
    ("missing-data", _with(_drop("data")), errors.InvalidAdviceError, ("TF_NUM_INTRAOP_THREADS",)),
    (
        "non-integer-value",
        _with(_set_data("TF_NUM_INTRAOP_THREADS", "two"), rehash=True),
        errors.InvalidAdviceError,
        ("TF_NUM_INTRAOP_THREADS", "'two'", "positive integer"),
    ),
    (
        "number-not-string",
        _with(_set_data("TF_NUM_INTEROP_THREADS", 2)),
        errors.InvalidAdviceError,
        ("data.TF_NUM_INTEROP_THREADS", "string"),
    ),
    (
        "zero",
        _with(_set_data("TF_NUM_INTRAOP_THREADS", "0"), rehash=True),
        errors.InvalidAdviceError,
        ("TF_NUM_INTRAOP_THREADS", "'0'"),
    ),
    (
        "too-large",
        _with(_set_data("TF_NUM_INTRAOP_THREADS", "100000"), rehash=True),
        errors.InvalidAdviceError,
        ("TF_NUM_INTRAOP_THREADS", "100000"),
    ),
    (
        "bad-env-name",
        _with(_set_data("tf-threads", "2"), rehash=True),
        errors.InvalidAdviceError,
        ("tf-threads",),
    ),
    (
        "extra-data-key",
        _with(_set_data("MKL_NUM_THREADS", "2"), rehash=True),
        errors.InvalidAdviceError,
        ("MKL_NUM_THREADS",),
    ),
    (
        "annotation-not-json",
        _with(_set_annotation(PROVENANCE_ANNOTATION, "{node: a")),
        errors.InvalidAdviceError,
        (PROVENANCE_ANNOTATION, "not JSON"),
    ),
    (
        "annotation-missing",
        _with(_drop("metadata", "annotations", PROVENANCE_ANNOTATION)),
        errors.InvalidAdviceError,
        (PROVENANCE_ANNOTATION, "missing"),
    ),
    (
        "hash-mismatch",
        _with(_set_data("TF_NUM_INTRAOP_THREADS", "1")),
        errors.InvalidAdviceError,
        (HASH_ANNOTATION, "edited by hand"),
    ),
    ("missing-file", None, errors.UsageError, ("validate", "cm.yaml", "No such file")),
]


@pytest.mark.parametrize(
    "content, error, says",
    [case[1:] for case in VALIDATE_CASES],
    ids=[case[0] for case in VALIDATE_CASES],
)
def test_validate_names_the_file_and_the_problem(
    content: bytes | None,
    error: type[errors.AdvisorError],
    says: tuple[str, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "cm.yaml"
    if content is not None:
        path.write_bytes(content)
    code, out, err = run_cli(capsys, ["validate", str(path)])
    assert code == error.exit_code, err
    line = the_one_line(err)
    assert str(path) in line
    for fragment in says:
        assert fragment in line, line
    assert out == ""
    if content is not None:
        assert path.read_bytes() == content


def test_the_good_configmap_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the mutations above start from this: it must be fine, or every case would pass vacuously
    path = tmp_path / "cm.yaml"
    path.write_text(configmap_yaml(_good()))
    code, out, err = run_cli(capsys, ["validate", str(path)])
    assert (code, err) == (0, "")
    assert out.startswith("ok: ")
