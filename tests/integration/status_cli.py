"""``status`` through the real CLI against a fake API server, for the status test modules: the
read-only Role it is run with, one call, and the JSON and YAML it prints, which must agree."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from advisor.cli import main
from testkit.fakeapi.rbac import Rule, parse_rules
from testkit.fakeapi.server import FakeApiServer
from tests.support import REPO
from tests.support import k8s_checks as k8s

READER = REPO / "deploy" / "examples" / "advice-reader.yaml"


def reader_rules(kind: str) -> list[Rule]:
    """The rules of the shipped reader Role or ClusterRole: a test that passes proves them."""
    return parse_rules(k8s.one(k8s.load_file_docs(READER), kind)["rules"])


def status(capsys: pytest.CaptureFixture[str], api: FakeApiServer, *argv: str) -> Any:
    """(exit code, stdout, stderr) of ``status`` against ``api``."""
    code = main(["status", "--kubeconfig", str(api.kubeconfig), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def json_rows(capsys: pytest.CaptureFixture[str], api: FakeApiServer, *argv: str) -> Any:
    """The rows of ``status --format json``, after checking that YAML says the same (but for
    ``age_s``: the two calls may fall on either side of a second)."""
    code, as_json, err = status(capsys, api, *argv, "--format", "json")
    assert (code, err) == (0, ""), err
    rows = json.loads(as_json)
    code, as_yaml, _ = status(capsys, api, *argv, "--format", "yaml")
    assert code == 0
    assert [_timeless(row) for row in yaml.safe_load(as_yaml)] == [_timeless(r) for r in rows]
    return rows


def _timeless(row: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in row.items() if key != "age_s"}
