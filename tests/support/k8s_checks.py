"""Shared checks for the shipped Kubernetes manifests (deploy/ and the Helm chart).

Both the kustomize base and the chart must give the advisor pod the same hardening and the same
Downward API wiring, and both run the same linters; keeping the checks here makes the two test
modules assert the same things instead of two drifting copies.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from advisor.errors import (
    AdviceKeptError,
    AdvisorError,
    CheckMismatchError,
    ClusterRejectedError,
    ClusterUnreachableError,
    ForbiddenError,
    InvalidAdviceError,
    ModelError,
    OutputError,
    ProbeError,
    RequestsError,
    RestartFailedError,
    RestartTargetError,
    UsageError,
)
from tests.support import REPO
from tests.support.real_parts import missing_real_part

#: Kubernetes versions the manifests must validate against (oldest supported, newest).
K8S_VERSIONS = ("1.30", "1.35")

#: exit codes a retry cannot fix (README "Exit codes", retry no): the Job must fail at once
NO_RETRY_CODES = {
    e.exit_code
    for e in (
        AdvisorError,
        UsageError,
        ProbeError,
        ModelError,
        InvalidAdviceError,
        ForbiddenError,
        ClusterRejectedError,
        CheckMismatchError,
        OutputError,
        AdviceKeptError,
        RestartTargetError,
        RestartFailedError,
        RequestsError,
    )
}
RETRY_CODE = ClusterUnreachableError.exit_code

DOWNWARD_FIELDS = {
    "TFTA_NODE_NAME": "spec.nodeName",
    "TFTA_POD_NAME": "metadata.name",
    "TFTA_POD_NAMESPACE": "metadata.namespace",
}
DOWNWARD_RESOURCES = {"TFTA_CPU_LIMIT": "limits.cpu", "TFTA_CPU_REQUEST": "requests.cpu"}

#: the projected ServiceAccount token a calibration pod mounts into its advisor container alone
#: (what the kubelet would automount, under the same name and path)
TOKEN_VOLUME = "kube-api-access"
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_SOURCES = [
    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
    {
        "downwardAPI": {
            "items": [
                {
                    "path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                }
            ]
        }
    },
]


def tool(name: str) -> str:
    """Where helm/kubectl/checkov/hadolint is: .tools/bin (install-test-tools.sh), else PATH."""
    local = REPO / ".tools" / "bin" / name
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    found = shutil.which(name)
    if found is None:
        missing_real_part(f"{name} not found (run `make deps` or scripts/install-test-tools.sh)")
    assert found is not None
    return found


def run_tool(
    args: list[str], *, cwd: Path = REPO, check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    if check and proc.returncode != 0:
        command = " ".join(args)
        raise AssertionError(
            f"{command} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


def load_docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def load_file_docs(path: Path) -> list[dict[str, Any]]:
    return load_docs(path.read_text())


def by_kind(docs: Iterable[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d.get("kind") == kind]


def one(docs: Iterable[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(docs, kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def validate_k8s(docs: Iterable[dict[str, Any]]) -> None:
    """Strict schema validation (unknown fields are errors) for every supported k8s version."""
    import kubernetes_validate

    for doc in docs:
        for version in K8S_VERSIONS:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                name = doc.get("metadata", {}).get("name")
                raise AssertionError(
                    f"{doc['kind']}/{name} invalid for k8s {version}: {exc}"
                ) from exc


def checkov_report(paths: list[Path], framework: str = "kubernetes") -> dict[str, Any]:
    """Runs checkov offline on files; returns its JSON report (failed and skipped checks)."""
    args = [tool("checkov"), "--skip-download", "--compact", "-o", "json", "--framework", framework]
    for path in paths:
        args += ["-f", str(path)]
    proc = run_tool(args, cwd=paths[0].parent, check=False)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(
            f"checkov printed no JSON (exit {proc.returncode}): {proc.stderr[-2000:]}"
        ) from exc
    reports = report if isinstance(report, list) else [report]
    assert len(reports) == 1, [r.get("check_type") for r in reports]
    result: dict[str, Any] = reports[0]
    assert result["summary"]["parsing_errors"] == 0, result["summary"]
    return result


def assert_checkov_clean(report: dict[str, Any]) -> None:
    """No failed check, and every skipped one carries a written reason."""
    failed = [
        f"{c['check_id']} {c['resource']} ({c['file_path']})"
        for c in report["results"].get("failed_checks", [])
    ]
    assert not failed, "checkov failed:\n" + "\n".join(failed)
    for check in report["results"].get("skipped_checks", []):
        reason = (check.get("check_result") or {}).get("suppress_comment", "")
        assert len(reason.split()) >= 5, f"{check['check_id']} on {check['resource']}: no reason"
    assert report["summary"]["passed"] > 5


def failed_check_ids(report: dict[str, Any]) -> set[str]:
    return {c["check_id"] for c in report["results"].get("failed_checks", [])}


def checkov_skips(docs: Iterable[dict[str, Any]]) -> Iterator[tuple[str, str, str]]:
    """(object, check id, reason) for every checkov.io/skip annotation."""
    for doc in docs:
        name = f"{doc['kind']}/{doc['metadata']['name']}"
        for key, value in (doc["metadata"].get("annotations") or {}).items():
            if key.startswith("checkov.io/skip"):
                check_id, _, reason = str(value).partition("=")
                yield name, check_id, reason


def assert_skips_have_reasons(docs: Iterable[dict[str, Any]]) -> None:
    for name, check_id, reason in checkov_skips(docs):
        assert check_id.startswith(("CKV_", "CKV2_")), f"{name}: malformed skip {check_id!r}"
        assert "=" not in reason, f"{name}: checkov cannot parse '=' in a skip reason"
        assert len(reason.split()) >= 5, f"{name}: skip of {check_id} needs a written reason"


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    if workload["kind"] == "CronJob":
        spec: dict[str, Any] = workload["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    else:
        spec = workload["spec"]["template"]["spec"]
    return spec


def job_spec(workload: dict[str, Any]) -> dict[str, Any]:
    if workload["kind"] == "CronJob":
        spec: dict[str, Any] = workload["spec"]["jobTemplate"]["spec"]
        return spec
    return dict(workload["spec"])


def advisor_container(workload: dict[str, Any]) -> dict[str, Any]:
    containers = [c for c in pod_spec(workload)["containers"] if c["name"] == "advisor"]
    assert len(containers) == 1, "the advisor container must be named 'advisor'"
    return containers[0]


def arg_value(args: list[str], flag: str) -> str | None:
    for arg in args:
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def assert_container_hardened(container: dict[str, Any]) -> None:
    sc = container.get("securityContext") or {}
    name = container["name"]
    assert sc.get("allowPrivilegeEscalation") is False, f"{name}: allowPrivilegeEscalation"
    assert sc.get("readOnlyRootFilesystem") is True, f"{name}: readOnlyRootFilesystem"
    assert sc.get("privileged", False) is False, f"{name}: privileged"
    assert sc.get("capabilities", {}).get("drop") == ["ALL"], f"{name}: capabilities.drop"
    assert not sc.get("capabilities", {}).get("add"), f"{name}: capabilities.add"
    assert "limits" in container.get("resources", {}), f"{name}: resources.limits"


def _carries_a_token(volume: dict[str, Any]) -> bool:
    """A volume that gives API credentials: a projected ServiceAccount token, or a Secret (a
    legacy token Secret is one)."""
    sources = (volume.get("projected") or {}).get("sources") or []
    return "secret" in volume or any(
        "serviceAccountToken" in source or "secret" in source for source in sources
    )


def assert_token_in_advisor_only(workload: dict[str, Any]) -> None:
    """No automounted token; the projected one is mounted read-only into the advisor container,
    and no other container (init containers included) mounts any volume carrying credentials."""
    pod = pod_spec(workload)
    assert pod.get("automountServiceAccountToken") is False, "the pod must not automount a token"
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    assert volumes[TOKEN_VOLUME]["projected"]["sources"] == TOKEN_SOURCES
    credentials = {name for name, volume in volumes.items() if _carries_a_token(volume)}
    containers = [*pod.get("initContainers", []), *pod["containers"]]
    for container in containers:
        mounts = container.get("volumeMounts", [])
        given = [m for m in mounts if m["name"] in credentials]
        under_sa_path = [m for m in mounts if m["mountPath"].startswith("/var/run/secrets")]
        if container["name"] == "advisor" and container in pod["containers"]:
            assert given == [
                {"name": TOKEN_VOLUME, "mountPath": TOKEN_MOUNT_PATH, "readOnly": True}
            ], f"advisor: token mounts {given}"
            assert under_sa_path == given
        else:
            assert not given and not under_sa_path, f"{container['name']} gets a token: {given}"


def assert_hardened_advisor_job(workload: dict[str, Any]) -> None:
    """Everything a security review and the exit-code contract ask of an advisor Job/CronJob."""
    spec = job_spec(workload)
    assert isinstance(spec["backoffLimit"], int)
    assert 0 < spec["backoffLimit"] <= 10
    assert spec["activeDeadlineSeconds"] >= 60
    assert spec["ttlSecondsAfterFinished"] >= 0

    rules = spec["podFailurePolicy"]["rules"]
    fail_codes: set[int] = set()
    counted: set[int] = set()
    for rule in rules:
        codes = rule.get("onExitCodes")
        if not codes:
            continue
        if codes.get("containerName") != "advisor":
            # an init container of the pod (fleet mode's model copy): any failure fails the Job
            init = {c["name"] for c in pod_spec(workload).get("initContainers", [])}
            assert codes.get("containerName") in init, codes
            assert (rule["action"], codes["operator"], codes["values"]) == ("FailJob", "NotIn", [0])
            continue
        assert codes["operator"] == "In"
        if rule["action"] == "FailJob":
            fail_codes |= set(codes["values"])
        elif rule["action"] == "Count":
            counted |= set(codes["values"])
    assert fail_codes == NO_RETRY_CODES, f"FailJob exit codes {fail_codes} != {NO_RETRY_CODES}"
    assert RETRY_CODE in counted, "exit 7 (unreachable) must be retried"
    assert RETRY_CODE not in fail_codes
    assert any(
        r["action"] == "Ignore"
        and any(c["type"] == "DisruptionTarget" for c in r.get("onPodConditions", []))
        for r in rules
    ), "evictions should be retried without counting"

    pod = pod_spec(workload)
    assert pod["restartPolicy"] == "Never", "podFailurePolicy requires restartPolicy Never"
    psc = pod["securityContext"]
    assert psc["runAsNonRoot"] is True
    assert isinstance(psc["runAsUser"], int)
    assert psc["runAsUser"] > 0
    assert psc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork")
    assert not pod.get("hostPID")
    for container in [*pod.get("initContainers", []), *pod["containers"]]:
        assert_container_hardened(container)

    assert_token_in_advisor_only(workload)

    advisor = advisor_container(workload)
    tmp_mounts = [m for m in advisor["volumeMounts"] if m["mountPath"] == "/tmp"]
    assert len(tmp_mounts) == 1, "the advisor needs a writable /tmp"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[tmp_mounts[0]["name"]], "/tmp must be an emptyDir"

    env = {e["name"]: e for e in advisor["env"]}
    for name, field in DOWNWARD_FIELDS.items():
        assert env[name]["valueFrom"]["fieldRef"]["fieldPath"] == field, name
    for name, resource in DOWNWARD_RESOURCES.items():
        ref = env[name]["valueFrom"]["resourceFieldRef"]
        assert ref["resource"] == resource, name
        assert str(ref["divisor"]) == "1m", f"{name}: divisor must be 1m (millicores)"
        assert ref.get("containerName", "advisor") == "advisor", name

    args = advisor["args"]
    assert args[0] == "run"
    assert arg_value(args, "--configmap"), "the Job must name the ConfigMap it writes"
    assert arg_value(args, "--namespace") == "$(TFTA_POD_NAMESPACE)"


def role_rules(role: dict[str, Any], *, drop_names: bool) -> list[dict[str, Any]]:
    rules = []
    for source in role["rules"]:
        rule = {k: (sorted(v) if isinstance(v, list) else v) for k, v in source.items()}
        if drop_names:
            rule.pop("resourceNames", None)
        rules.append(rule)
    return rules
