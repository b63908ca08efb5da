"""What a command imports, in a fresh process: the cluster calls of ``plan`` and ``run`` (the
ConfigMap writer, the restarter, the cleanup) go without the kubernetes client's generated API
classes, which since client 37 import every model of their API group (most of what ``plan``'s
imports once cost), and building the command line imports neither the probe and the trials nor
the Prometheus client, which only ``run``, ``calibrate`` and a judged plan use. ``plan``
without Prometheus imports no other command's module or pipeline (a calibration's, a run's,
``status``'s) nor the production judge's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from advisor.recommend import render_configmap
from testkit.fakeapi.apps import workload
from testkit.fakeapi.rbac import Rule, fleet_rules, role_rules
from testkit.fakeapi.samples import recommendation
from testkit.fakeapi.server import FakeApiServer
from tests.support import REPO

NS = "ml"

SCRIPT = """
import json, sys
from pathlib import Path
from advisor.cli import build_parser
from advisor.cluster import ConfigMapWriter, connect
from advisor.cluster.cleanup import delete_advice
from advisor.cluster.restart import WorkloadRestarter
from advisor.models import WorkloadRef

build_parser()
connection = connect(Path(sys.argv[1]))
ConfigMapWriter(connection, "tf-advice", "ml").preflight(budget_s=60, force=False)
WorkloadRestarter(connection, "ml", [WorkloadRef.parse("deployment/web")]).preflight()
outcomes = delete_advice(connection, "ml", ["old"], dry_run=True)
print(json.dumps({"actions": [o.action for o in outcomes], "modules": sorted(sys.modules)}))
"""


def _fresh_process(script: str, kubeconfig: Path) -> Any:
    """What ``script`` printed as JSON, run in a process of its own with ``kubeconfig``."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(kubeconfig)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


def test_the_writer_restarter_and_cleanup_import_no_generated_api_class(tmp_path: Path) -> None:
    rules = [
        *role_rules(configmap_name="tf-advice"),
        Rule(("apps",), ("deployments",), ("get", "patch"), ("web",)),
        Rule(("",), ("configmaps",), ("get", "delete"), ("old",)),
    ]
    with FakeApiServer(tmp_path, rules=rules) as api:
        api.put_workload(workload("deployments", NS, "web"))
        api.put(render_configmap(recommendation(2, 1), "old", NS))
        answer = _fresh_process(SCRIPT, api.kubeconfig)
        sent = sorted({(r.method, r.path.rsplit("/", 2)[-2]) for r in api.requests})
    # the calls were made: a read, a dry-run apply, a read and a dry-run patch, a dry-run delete
    assert answer["actions"] == ["would delete"]
    assert sent == [
        ("DELETE", "configmaps"),
        ("GET", "configmaps"),
        ("GET", "deployments"),
        ("PATCH", "configmaps"),
        ("PATCH", "deployments"),
    ]
    loaded = set(answer["modules"])
    assert "kubernetes.client.api_client" in loaded
    assert sorted(m for m in loaded if m.startswith("kubernetes.client.api.")) == []
    measuring = {
        "advisor.pipeline.sweep",
        "advisor.trials.launch",
        "advisor.probe",
        "advisor.prometheus.client",
        "advisor.pipeline.production",
    }
    assert sorted(loaded & measuring) == []


PLAN_SCRIPT = """
import contextlib, io, json, sys
from advisor.cli import main

printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    code = main(["plan", "--namespace", "ml", "--kubeconfig", sys.argv[1], "--image", "x:1"])
print(json.dumps({"code": code, "printed": printed.getvalue(), "modules": sorted(sys.modules)}))
"""


def test_plan_imports_no_other_commands_pipeline(tmp_path: Path) -> None:
    with FakeApiServer(tmp_path, namespaces=(NS,), rules=fleet_rules("-planner")) as api:
        web = workload("deployments", NS, "web")
        web["metadata"]["labels"] = {"tf-thread-advisor.io/calibrate": "true"}
        web["metadata"]["annotations"] = {"tf-thread-advisor.io/model": "/models/web"}
        api.put_workload(web)
        answer = _fresh_process(PLAN_SCRIPT, api.kubeconfig)
    assert answer["code"] == 0
    assert "deployment/web" in answer["printed"]  # it planned
    loaded = set(answer["modules"])
    assert "advisor.pipeline.plan" in loaded
    others = {
        "advisor.cli.calibrate_cmd",
        "advisor.cli.run_cmd",
        "advisor.cli.status_cmd",
        "advisor.pipeline.calibration",
        "advisor.pipeline.check",
        "advisor.pipeline.run",
        "advisor.pipeline.status",
        "advisor.pipeline.target",
        "advisor.pipeline.production",
        "advisor.prometheus.client",
        "advisor.render.report",
        "advisor.render.heatmap",
        "advisor.models.notes",
    }
    assert sorted(loaded & others) == []
