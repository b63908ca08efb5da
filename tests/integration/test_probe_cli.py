"""``tf-thread-advisor probe`` on fixture trees: formats, the text summary, one-line errors."""

from __future__ import annotations

import html
import json

import pytest
import yaml

from advisor.cli import main
from advisor.errors import ProbeError, UsageError
from advisor.probe import probe_node
from tests.support import PROBE_TREES

CASES_DIR = PROBE_TREES


@pytest.fixture(autouse=True)
def _no_downward_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TFTA_CPU_LIMIT", "TFTA_CPU_REQUEST", "TFTA_NODE_NAME", "TFTA_POD_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("TFTA_POD_NAMESPACE", raising=False)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_has_the_contract_keys_and_types(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(
        capsys, "probe", "--format", "json", "--host-root", str(CASES_DIR / "nested-v1")
    )
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["logical_cpus"] == 8
    assert data["affinity_cpus"] == list(range(8))
    assert data["quota_cpus"] == 0.5
    assert data["effective_cpus"] == 0.5
    assert isinstance(data["effective_cpus"], float)
    assert data["cgroup"]["limiting_path"] == "/kubepods/burstable/pod1f0c"
    assert data["topology"]["physical_cores"] == 4
    assert data["warnings"] == []


def test_json_quota_is_null_when_unlimited(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "probe", "--format=json", "--host-root", str(CASES_DIR / "v2-max"))
    data = json.loads(out)
    assert (code, data["quota_cpus"], data["effective_cpus"]) == (0, None, 8.0)


def test_yaml_is_the_same_dump(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "probe", "--format", "yaml", "--host-root", str(CASES_DIR / "v2"))
    assert code == 0
    expected = probe_node(CASES_DIR / "v2", env={}).model_dump(mode="json")
    assert yaml.safe_load(out) == expected


def test_text_summary_says_allowed_quota_and_effective(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "probe", "--host-root", str(CASES_DIR / "v1"))
    assert code == 0
    first = out.splitlines()[0]
    assert first == (
        "8 CPUs allowed (0-7 of 8), quota 1.5 CPUs "
        "(cgroup v1, /kubepods/burstable/pod1f0c/ctr-a): effective 1.5"
    )
    assert "1 socket(s), 4 core(s), 2 thread(s)/core" in out


def test_text_summary_reports_unknown_quota_and_warnings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "probe", "--host-root", str(CASES_DIR / "malformed-quota-nan"))
    assert code == 0
    assert "quota unknown (cgroup v1, see warnings): effective 8" in out
    assert "warning: /sys/fs/cgroup/cpu,cpuacct/kubepods/burstable/pod1f0c/ctr-a/" in out


def test_downward_mismatch_reaches_the_output(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TFTA_CPU_LIMIT", "2000")
    monkeypatch.setenv("TFTA_POD_NAME", "advisor-abc")
    code, out, _ = _run(capsys, "probe", "--format", "json", "--host-root", str(CASES_DIR / "v1"))
    data = json.loads(out)
    assert code == 0
    assert data["downward_api"]["cpu_limit_cpus"] == 2.0
    assert data["downward_api"]["pod_name"] == "advisor-abc"
    assert data["effective_cpus"] == 1.5  # the cgroup quota wins
    assert len(data["warnings"]) == 1
    assert "TFTA_CPU_LIMIT=2 CPUs but the cgroup quota is 1.5 CPUs" in data["warnings"][0]


@pytest.mark.parametrize(
    "argv",
    [
        ["probe", "--format", "xml"],
        ["probe", "--bogus"],
        ["probe", "extra"],
        ["probe", "--host-root"],
    ],
)
def test_bad_flags_are_one_line_usage_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = _run(capsys, *argv)
    assert code == UsageError.exit_code
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("tf-thread-advisor: error: ")
    assert "Traceback" not in err


# a --host-root that does not exist is a usage error naming the flag (test_hardening_inputs.py)
@pytest.mark.parametrize("case", ["no-affinity"])
def test_no_affinity_is_a_one_line_probe_error(
    capsys: pytest.CaptureFixture[str], case: str
) -> None:
    code, out, err = _run(capsys, "probe", "--host-root", str(CASES_DIR / case))
    assert code == ProbeError.exit_code
    assert out == ""
    assert err.count("\n") == 1
    assert "/proc/self/status" in err
    assert "Traceback" not in err


def test_markdown_and_html_carry_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    root = str(CASES_DIR / "nested-v1")
    code, text, _ = _run(capsys, "probe", "--host-root", root)
    assert code == 0
    code, markdown, _ = _run(capsys, "probe", "--format", "markdown", "--host-root", root)
    assert code == 0
    assert markdown.startswith("# tf-thread-advisor probe\n\n```text\n")
    assert text in markdown and markdown.endswith("\n```\n")
    code, page, _ = _run(capsys, "probe", "--format", "html", "--host-root", root)
    assert code == 0
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert f"<pre>{html.escape(text.rstrip())}</pre>" in page
