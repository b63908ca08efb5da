"""What the e2e tests do with the real cluster: kubectl and helm as a platform team runs them,
the advisor as a user runs it from outside, namespaces of their own, waiting on what the
controllers do. No pytest here; the fixtures are in conftest.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from advisor.cli import main
from advisor.models import CalibrationOptions, CalibrationResult, NodeProfile
from advisor.pipeline import Instruments
from advisor.pipeline.sweep import sweep
from tests.support import REPO
from tests.support.search_fakes import FakeClock, FakeTrials

TOOLS = REPO / ".tools" / "bin"
#: the advisor's image as `make image` tags it for the tests, imported into the node's containerd
ADVISOR_IMAGE = "localhost/tf-thread-advisor:test-amd64"
RESTRICTED = "pod-security.kubernetes.io/enforce"


def _tool(name: str) -> str:
    local = TOOLS / name
    return str(local) if local.exists() else name


@dataclass(frozen=True)
class Cluster:
    kubeconfig: Path

    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 120
    ) -> str:
        proc = subprocess.run(
            [_tool("kubectl"), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)}: exit {proc.returncode}: {proc.stderr.strip()[-2000:]}"
            )
        return proc.stdout if check else proc.stdout + proc.stderr

    def run(self, tool: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [_tool(tool), *args],
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=timeout,
            check=False,
        )

    def apply(self, namespace: str, *objects: dict[str, Any]) -> None:
        self.kubectl("-n", namespace, "apply", "-f", "-", stdin=yaml.safe_dump_all(objects))

    def get(self, namespace: str, kind: str, name: str) -> dict[str, Any] | None:
        proc = subprocess.run(
            [_tool("kubectl"), "-n", namespace, "get", kind, name, "-o", "json"],
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=60,
            check=False,
        )
        if proc.returncode != 0:
            if "NotFound" in proc.stderr:
                return None
            raise AssertionError(f"kubectl get {kind}/{name}: {proc.stderr.strip()}")
        return json.loads(proc.stdout)

    def items(self, namespace: str, kind: str, *selector: str) -> list[dict[str, Any]]:
        out = self.kubectl("-n", namespace, "get", kind, *selector, "-o", "json")
        return json.loads(out)["items"]

    def namespace(self, prefix: str, labels: dict[str, str] | None = None) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        meta: dict[str, Any] = {
            "name": name,
            "labels": {RESTRICTED: "restricted", **(labels or {})},
        }
        self.kubectl(
            "apply",
            "-f",
            "-",
            stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": meta}),
        )
        wait_for(
            lambda: self.get(name, "serviceaccount", "default") is not None,
            60,
            f"{name}'s default ServiceAccount",
        )
        return name

    def delete_namespace(self, name: str) -> None:
        self.kubectl("delete", "namespace", name, "--wait=false", check=False)

    def advisor(self, *argv: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """The advisor's CLI from outside the cluster, as a user runs it with a kubeconfig."""
        return subprocess.run(
            [sys.executable, "-m", "advisor", *argv],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=self.env(),
            timeout=timeout,
            check=False,
        )

    def token(self, namespace: str, serviceaccount: str) -> str:
        return self.kubectl(
            "-n", namespace, "create", "token", serviceaccount, "--duration=10m"
        ).strip()

    def as_token(self, token: str, *args: str) -> subprocess.CompletedProcess[str]:
        """kubectl with only a bearer token (no client certificate): the API server's own RBAC
        decides."""
        cfg = yaml.safe_load(self.kubeconfig.read_text())
        server = cfg["clusters"][0]["cluster"]["server"]
        ca = cfg["clusters"][0]["cluster"]["certificate-authority-data"]
        tokencfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "c", "cluster": {"server": server, "certificate-authority-data": ca}}
            ],
            "users": [{"name": "u", "user": {"token": token}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
        }
        path = (
            Path(os.environ.get("TMPDIR", "/tmp"))
            / f"tfta-e2e-token-{uuid.uuid4().hex[:8]}.kubeconfig"
        )
        path.write_text(yaml.safe_dump(tokencfg))
        try:
            return subprocess.run(
                [_tool("kubectl"), f"--kubeconfig={path}", *args],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        finally:
            path.unlink(missing_ok=True)

    def job_done(self, namespace: str, name: str) -> str | None:
        """'Complete' or 'Failed' once the Job controller says so, else None."""
        job = self.get(namespace, "job", name)
        for cond in (job or {}).get("status", {}).get("conditions", []):
            if cond["type"] in ("Complete", "Failed") and cond["status"] == "True":
                return str(cond["type"])
        return None

    def wait_job(self, namespace: str, name: str, seconds: float) -> str:
        found: list[str] = []

        def done() -> bool:
            state = self.job_done(namespace, name)
            if state:
                found.append(state)
            return bool(state)

        wait_for(
            done,
            seconds,
            f"job {namespace}/{name} to finish",
            on_timeout=lambda: self.describe(namespace),
        )
        return found[0]

    def describe(self, namespace: str) -> str:
        """What a person would look at when a wait times out: the namespace's pods, jobs, events."""
        parts = [
            self.kubectl("-n", namespace, "get", "pods,jobs", "-o", "wide", check=False),
            self.kubectl("-n", namespace, "get", "events", "--sort-by=.lastTimestamp", check=False)[
                -3000:
            ],
        ]
        for pod in json.loads(
            self.kubectl("-n", namespace, "get", "pods", "-o", "json", check=False)
            or '{"items": []}'
        ).get("items", []):
            parts.append(
                self.kubectl(
                    "-n",
                    namespace,
                    "logs",
                    pod["metadata"]["name"],
                    "--all-containers",
                    "--tail=30",
                    check=False,
                )
            )
        return "\n".join(parts)

    def logs(self, namespace: str, selector: str) -> str:
        return self.kubectl(
            "-n", namespace, "logs", "-l", selector, "--all-containers", "--tail=-1", check=False
        )


def wait_for(
    ok: Callable[[], bool], seconds: float, what: str, on_timeout: Callable[[], str] | None = None
) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ok():
            return
        time.sleep(1)
    detail = on_timeout() if on_timeout else ""
    raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}\n{detail[-6000:]}")


CHART = REPO / "charts" / "tf-thread-advisor"
ADVICE = "tf-thread-advice"
#: the smallest budget the chart and `run` accept: the model check, TF's default and two settings
BUDGET = 25
#: Burstable on purpose: a Guaranteed pod with a whole CPU gets an exclusive CPU from the static
#: CPU manager and, in 1.34, no CFS quota at all (test_fleet.py covers that shape)
JOB_RESOURCES = {
    "requests": {"cpu": "500m", "memory": "2Gi"},
    "limits": {"cpu": "1", "memory": "2Gi"},
}


def chart_values(image: str, **overrides: Any) -> dict[str, Any]:
    """The chart's values for one built-in target in Job mode, the image imported (never pulled);
    ``overrides`` replace top-level keys (``target`` merges into the one target)."""
    repo, tag = image.rsplit(":", 1)
    target = {
        "name": "default",
        "configMapName": ADVICE,
        "resources": JOB_RESOURCES,
        "model": {"source": "builtin"},
        **overrides.pop("target", {}),
    }
    return {
        "image": {"repository": repo, "tag": tag, "pullPolicy": "Never"},
        "defaults": {"budget": BUDGET, "objective": "latency", "batchSize": 1, "concurrency": 1},
        "job": {"activeDeadlineSeconds": BUDGET + 600},
        "targets": [target],
        **overrides,
    }


def helm_install(
    cluster: Cluster, namespace: str, release: str, values: dict[str, Any], tmp: Path
) -> None:
    path = tmp / f"{release}-values.yaml"
    path.write_text(yaml.safe_dump(values))
    proc = cluster.run("helm", "install", release, str(CHART), "-n", namespace, "-f", str(path))
    assert proc.returncode == 0, proc.stderr


def the_job(cluster: Cluster, namespace: str) -> dict[str, Any]:
    (job,) = cluster.items(namespace, "jobs", "-l", "app.kubernetes.io/component=advisor")
    return job


def sweep_with(best: tuple[int, int]) -> Any:
    """A sweep whose cost model makes ``best`` clearly the fastest setting (half the p99)."""

    def run_sweep(
        options: CalibrationOptions, node: NodeProfile, **kwargs: Any
    ) -> CalibrationResult:
        clock = FakeClock()
        trials = FakeTrials(
            clock, usable=node.effective_cpus, affinity=len(node.affinity_cpus), table={best: 1.0}
        )
        return sweep(options, node, trial_fn=trials, clock=clock, **kwargs)

    return run_sweep


def publish(cluster: Cluster, namespace: str, best: tuple[int, int], *extra: str) -> int:
    """`run` through the real CLI, in this process, against the real API server, with the real
    search over the cost model of tests/support/search_fakes in place of TensorFlow trials (so the
    advice is known): what is under test is what the cluster does with it."""
    argv = [
        # the Job's budget: room for the paired rounds that replace the advice in force
        *("--log-level", "error", "run", "--budget", "300"),
        *("--configmap", ADVICE, "--namespace", namespace, "--kubeconfig", str(cluster.kubeconfig)),
        *extra,
    ]
    return main(argv, instruments=Instruments(sweep=sweep_with(best)))


def restricted_deployment(
    name: str,
    container: dict[str, Any],
    *,
    replicas: int = 1,
    tmp: bool = False,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Deployment that Pod Security `restricted` admits: non-root, RuntimeDefault seccomp, no
    privilege escalation, every capability dropped, a read-only root (``tmp``: an emptyDir at
    /tmp, which TensorFlow's import wants). ``container`` holds name, image, command, resources,
    envFrom; its pull policy is Never (the node's images are imported)."""
    labels = {"app": name}
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 2,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "imagePullPolicy": "Never",
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
                **container,
            }
        ],
    }
    if tmp:
        spec["containers"][0]["volumeMounts"] = [{"name": "tmp", "mountPath": "/tmp"}]
        spec["volumes"] = [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, **(metadata or {})},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
            },
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }
