"""``validate``, ``check`` and everything ``run`` refuses before the sweep, through the real CLI.

A tripwire replaces the sweep in the ``run`` tests here: each of them must stop before it, and
the fake API server records that nothing was written.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import main
from advisor.models import DEFAULT_BUDGET_S
from advisor.pipeline import Instruments
from advisor.probe import probe_node
from advisor.recommend import build_recommendation, configmap_yaml, render_configmap
from testkit.fakeapi.rbac import role_rules, without_verb
from testkit.fakeapi.samples import (
    FIXED_NOW,
    calibration_result,
    node_profile,
    recommendation,
)
from testkit.fakeapi.server import FakeApiServer, refused_port
from tests.support.search_fakes import tripwire

NAME, NS = "tf-advice", "ml"


@pytest.fixture
def api(tmp_path: Path) -> Any:
    with FakeApiServer(tmp_path, configmap_name=NAME) as server:
        yield server


@pytest.fixture
def no_sweep() -> Instruments:
    return Instruments(
        sweep=tripwire("the sweep started although run should have stopped before it")
    )


def cli(
    capsys: pytest.CaptureFixture[str], *argv: str, instruments: Instruments | None = None
) -> tuple[int, str, str]:
    code = main(list(argv), instruments=instruments)
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def write_cm(tmp_path: Path, cm: dict[str, Any]) -> Path:
    path = tmp_path / "cm.yaml"
    path.write_text(configmap_yaml(cm))
    return path


# --------------------------------------------------------------------------------------------------
# validate


def test_validate_file_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_cm(tmp_path, render_configmap(recommendation(3, 2), NAME, NS))
    code, out, _ = cli(capsys, "validate", str(path))
    assert code == 0
    assert out.startswith("ok: ml/tf-advice: intra=3 inter=2")


def test_validate_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = configmap_yaml(render_configmap(recommendation(1, 1), NAME))
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code, out, _ = cli(capsys, "validate", "-")
    assert (code, out.split(":")[0]) == (0, "ok")


def test_validate_stdin_that_is_not_utf8_exits_6_like_such_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    garbage = b"\xff\xfe not text"
    path = tmp_path / "cm.yaml"
    path.write_bytes(garbage)
    assert cli(capsys, "validate", str(path))[0] == 6
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(garbage), encoding="utf-8"))
    code, out, err = cli(capsys, "validate", "-")
    assert (code, out) == (6, "")
    assert one_error_line(err).endswith("stdin: not UTF-8 text")


def test_validate_invalid_exits_6_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cm = render_configmap(recommendation(), NAME, NS)
    cm["data"]["TF_NUM_INTRAOP_THREADS"] = "zero"
    code, out, err = cli(capsys, "validate", str(write_cm(tmp_path, cm)))
    assert (code, out) == (6, "")
    assert "TF_NUM_INTRAOP_THREADS='zero' is not a positive integer" in one_error_line(err)


def test_validate_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, "validate")[0] == 2
    assert cli(capsys, "validate", "x.yaml", "--configmap", NAME)[0] == 2
    code, _, err = cli(capsys, "validate", str(tmp_path / "missing.yaml"))
    assert code == 2 and "cannot read it" in one_error_line(err)


def test_validate_from_the_cluster(api: FakeApiServer, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["validate", "--configmap", NAME, "--namespace", NS, "--kubeconfig", str(api.kubeconfig)]
    code, _, err = cli(capsys, *args)
    assert code == 10 and "not found" in one_error_line(err)
    api.put(render_configmap(recommendation(2, 2), NAME, NS))
    code, out, _ = cli(capsys, *args)
    assert code == 0 and "intra=2 inter=2" in out
    other = ["validate", "--configmap", "other", "--namespace", NS]
    code, _, err = cli(capsys, *other, "--kubeconfig", str(api.kubeconfig))
    assert code == 8 and "cannot get configmaps/other" in one_error_line(err)


# --------------------------------------------------------------------------------------------------
# run: refused before the sweep


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--configmap", "Bad_Name", "--namespace", NS], "--configmap 'Bad_Name'"),
        (["--configmap", NAME, "--namespace", "Not.A.Label"], "--namespace 'Not.A.Label'"),
        (["--configmap", NAME], "--configmap needs --namespace"),
        (["--node-label", "novalue"], "must be KEY=VALUE"),
        (["--node-label", "k=bad value"], "not a valid label value"),
        (["--output", "/nonexistent-dir/cm.yaml"], "does not exist"),
        (["--env-file", "/"], "is a directory"),
        (["--budget", "5"], "--budget 5 s is too small"),
        (["--cluster-timeout", "0"], "--cluster-timeout must be a positive number"),
    ],
)
def test_run_refuses_bad_flags_before_the_sweep(
    flags: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_sweep: Instruments,
) -> None:
    monkeypatch.delenv("TFTA_POD_NAMESPACE", raising=False)
    code, out, err = cli(capsys, "run", *flags, instruments=no_sweep)
    assert (code, out) == (2, "")
    assert message in one_error_line(err)


def test_run_403_before_the_sweep_leaves_the_configmap_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_sweep: Instruments
) -> None:
    rules = without_verb(role_rules(configmap_name=NAME), "patch")
    with FakeApiServer(tmp_path, rules=rules) as api:
        # stored with the default budget, so the run would replace it (not keep it, exit 13)
        stored = recommendation(1, 1, budget_s=DEFAULT_BUDGET_S)
        before = api.put(render_configmap(stored, NAME, NS))
        code, out, err = cli(
            capsys,
            "run",
            "--configmap",
            NAME,
            "--namespace",
            NS,
            "--kubeconfig",
            str(api.kubeconfig),
            instruments=no_sweep,
        )
        assert (code, out) == (8, "")
        line = one_error_line(err)
        assert "cannot patch configmaps/tf-advice in namespace ml" in line
        assert "Role tf-thread-advisor" in line
        assert api.get(NS, NAME) == before
        assert [r.method for r in api.writes()] == ["PATCH"]  # the dry run, refused
        assert api.writes()[0].query["dryRun"] == "All"


def test_run_namespace_from_the_downward_api(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_sweep: Instruments,
) -> None:
    with FakeApiServer(
        tmp_path, namespaces=("other",), role_namespace="team-a", configmap_name=NAME
    ) as api:
        monkeypatch.setenv("TFTA_POD_NAMESPACE", "team-a")
        code, _, err = cli(
            capsys,
            "run",
            "--configmap",
            NAME,
            "--kubeconfig",
            str(api.kubeconfig),
            instruments=no_sweep,
        )
        assert code == 10 and "namespace team-a not found" in one_error_line(err)
        assert {r.path for r in api.requests} == {"/api/v1/namespaces/team-a/configmaps/tf-advice"}


def test_run_unreachable_cluster_exits_7(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_sweep: Instruments
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [
                    {"name": "c", "cluster": {"server": f"http://127.0.0.1:{refused_port()}"}}
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    code, _, err = cli(
        capsys,
        "run",
        "--configmap",
        NAME,
        "--namespace",
        NS,
        "--kubeconfig",
        str(kubeconfig),
        "--cluster-timeout",
        "0.5",
        instruments=no_sweep,
    )
    assert code == 7 and "cannot connect" in one_error_line(err)


def test_run_keeps_advice_with_a_bigger_budget(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], no_sweep: Instruments
) -> None:
    before = api.put(render_configmap(recommendation(1, 1, budget_s=600), NAME, NS))
    code, _, err = cli(
        capsys,
        "run",
        "--budget",
        "60",
        "--configmap",
        NAME,
        "--namespace",
        NS,
        "--kubeconfig",
        str(api.kubeconfig),
        instruments=no_sweep,
    )
    assert code == 13
    assert "600s budget, more than this run's 60s; kept it (pass --force" in one_error_line(err)
    assert api.get(NS, NAME) == before and api.writes() == []


# --------------------------------------------------------------------------------------------------
# check


def _advice_for(node: Any, tmp_path: Path, intra: int = 1, inter: int = 1) -> Path:
    rec = build_recommendation(
        calibration_result(intra, inter, node=node), advisor_version="0.1.0", now=FIXED_NOW
    )
    return write_cm(tmp_path, render_configmap(rec, NAME, NS))


def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)


def test_check_matching_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch)
    path = _advice_for(probe_node(), tmp_path)  # measured "here"
    for extra in ([], ["--strict"]):
        code, out, err = cli(capsys, "check", "--configmap-file", str(path), *extra)
        assert (code, err) == (0, "")
        assert out.startswith("ok: this node matches ml/tf-advice")


def test_check_other_node_warns_or_fails_strict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch)
    here = probe_node()
    other = node_profile(affinity=len(here.affinity_cpus) + 62, quota=0.5, logical=128)
    path = _advice_for(other, tmp_path)
    code, out, err = cli(capsys, "check", "--configmap-file", str(path))
    assert code == 0 and out.startswith("ok with")
    assert f"affinity: calibrated with {len(here.affinity_cpus) + 62} CPUs" in err
    assert "CPU quota: calibrated 0.5 CPUs" in err
    code, out, err = cli(capsys, "check", "--configmap-file", str(path), "--strict")
    assert code == 11 and out == ""
    assert "difference(s)" in one_error_line(err)


def test_check_env_against_the_configmap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch)
    path = _advice_for(probe_node(), tmp_path, intra=1, inter=1)
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "1")
    monkeypatch.setenv("TF_NUM_INTEROP_THREADS", "2")
    code, _, err = cli(capsys, "check", "--configmap-file", str(path), "--strict")
    assert code == 11
    line = one_error_line(err)
    assert "TF_NUM_INTEROP_THREADS=2 in this process, but the advice says 1" in line
    assert "OMP_NUM_THREADS is not set" in line


def test_check_env_only_against_this_node(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch)
    code, _, err = cli(capsys, "check")
    assert code == 2 and "nothing to check" in one_error_line(err)
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "1")
    monkeypatch.setenv("TF_NUM_INTEROP_THREADS", "1")
    assert cli(capsys, "check", "--strict")[0] == 0
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "4096")
    code, _, err = cli(capsys, "check", "--strict")
    assert code == 11 and "TF_NUM_INTRAOP_THREADS=4096 exceeds" in one_error_line(err)
    # more digits than Python converts to int (4300) is still just a value over the cap
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "1" * 5000)
    code, _, err = cli(capsys, "check", "--strict")
    assert code == 11 and f"TF_NUM_INTRAOP_THREADS={'1' * 5000} exceeds" in one_error_line(err)


def test_check_fetches_the_configmap_from_the_cluster(
    api: FakeApiServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch)
    rec = build_recommendation(
        calibration_result(1, 1, node=probe_node()), advisor_version="0.1.0", now=FIXED_NOW
    )
    api.put(render_configmap(rec, NAME, NS))
    monkeypatch.setenv("TFTA_POD_NAMESPACE", NS)  # what the Job's Downward API sets
    code, out, _ = cli(
        capsys, "check", "--configmap", NAME, "--kubeconfig", str(api.kubeconfig), "--strict"
    )
    assert code == 0 and out.startswith("ok: this node matches ml/tf-advice")
    assert [(r.method, r.path) for r in api.requests] == [
        ("GET", "/api/v1/namespaces/ml/configmaps/tf-advice")
    ]


def test_run_checks_the_folder_a_symlinked_output_points_to_before_the_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_sweep: Instruments
) -> None:
    link = tmp_path / "advice.env"
    link.symlink_to(tmp_path / "gone" / "advice.env")
    code, out, err = cli(capsys, "run", "--env-file", str(link), instruments=no_sweep)
    assert (code, out) == (2, "")
    assert f"folder {tmp_path / 'gone'} does not exist" in one_error_line(err)


def test_run_refuses_an_output_that_is_not_a_regular_file_before_the_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_sweep: Instruments
) -> None:
    # the write renames a new file into place: a device or a pipe there would be replaced by it
    # (as root, ``--output /dev/null`` would have replaced the system's /dev/null)
    pipe = tmp_path / "advice.fifo"
    os.mkfifo(pipe)
    code, out, err = cli(capsys, "run", "--output", str(pipe), instruments=no_sweep)
    assert (code, out) == (2, "")
    assert f"--output {pipe}: is not a regular file" in one_error_line(err)
    assert stat.S_ISFIFO(pipe.lstat().st_mode)


def test_a_staged_output_through_a_symlink_lands_in_the_file_it_points_to(tmp_path: Path) -> None:
    # e.g. --env-file on a path that links into a mounted volume: the link must stay a link.
    from advisor.pipeline.files import stage_file

    real = tmp_path / "volume" / "advice.env"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "advice.env"
    link.symlink_to(real)
    stage_file(link, "new\n", "env_file").commit()
    assert link.is_symlink()
    assert real.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["advice.env", "volume"]
    assert sorted(p.name for p in real.parent.iterdir()) == ["advice.env"]


# --------------------------------------------------------------------------------------------------
# the same pipeline from Python, without the CLI


def test_the_run_pipeline_is_callable_from_python(api: FakeApiServer, tmp_path: Path) -> None:
    from advisor.errors import UsageError
    from advisor.models import CalibrationOptions
    from advisor.pipeline import RunRequest, prepare_run

    output = tmp_path / "advice.yaml"
    request = RunRequest(
        options=CalibrationOptions(budget_s=60.0),
        configmap=NAME,
        namespace=NS,
        output=str(output),
        kubeconfig=api.kubeconfig,
        node_labels={"pool": "cpu-a"},
    )
    prepared = prepare_run(request)  # the dry run happened: nothing stored yet
    assert api.get(NS, NAME) is None and prepared.writer is not None
    published = prepared.publish(calibration_result(3, 2))
    assert published.outcome is not None and published.outcome.action == "created"
    stored = api.get(NS, NAME)
    assert stored is not None and stored["data"] == published.configmap["data"]
    assert output.read_text() == published.text
    assert published.recommendation.provenance.node_labels == {"pool": "cpu-a"}
    with pytest.raises(UsageError, match=r"^restart needs configmap"):
        from advisor.models import WorkloadRef

        prepare_run(RunRequest(restart=(WorkloadRef.parse("deploy/web"),)))
