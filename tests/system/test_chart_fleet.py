"""Fleet mode in the Helm chart (planner.enabled) and the token of its calibration pods, rendered
by the real helm.

The generic gates of tests/system/test_chart.py (lint --strict, strict 1.30/1.35 schemas, checkov
with reasoned skips, standard labels) run on every ci/*.yaml, the fleet ones included; this module
checks what fleet mode promises: the planner CronJob's command, its two identities and what their
Roles allow (evaluated with the fake API server's RBAC semantics), the values it refuses, and that
no container but the advisor ever gets a ServiceAccount token.
"""

from __future__ import annotations

import argparse
import copy
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import build_parser
from tests.support import REPO
from tests.support import k8s_checks as k8s
from tests.system.fleet_rbac import allowed, assert_fleet_rbac, granted, granted_everywhere

CHART = REPO / "charts" / "tf-thread-advisor"
CI = CHART / "ci"
FLEET_ONLY = CI / "fleet-only.yaml"
FLEET_BESIDE = CI / "fleet-beside-targets.yaml"
FLEET_CLUSTER = CI / "fleet-cluster.yaml"
NAMESPACE = "ml-serving"
REPOSITORY = "registry.example.com/mirror/tf-thread-advisor"
IMAGE_SET = ("--set", f"image.repository={REPOSITORY}")
PLANNER_ON = ("--set", "planner.enabled=true")
IDENTITIES = ("rel-tf-thread-advisor-planner", "rel-tf-thread-advisor-calibration")
pytestmark = pytest.mark.tools


def helm(*args: str, check: bool = True) -> Any:
    return k8s.run_tool([k8s.tool("helm"), *args], check=check)


def template(*extra: str, check: bool = True) -> Any:
    return helm("template", "rel", str(CHART), "--namespace", NAMESPACE, *extra, check=check)


def render(*extra: str) -> list[dict[str, Any]]:
    return k8s.load_docs(template(*extra).stdout)


def values_of(path: Path) -> dict[str, Any]:
    merged: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    for key, value in yaml.safe_load(path.read_text()).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def component(docs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["metadata"]["labels"].get("app.kubernetes.io/component") == name]


def planner_container(cronjob: dict[str, Any]) -> dict[str, Any]:
    (container,) = k8s.pod_spec(cronjob)["containers"]
    assert container["name"] == "planner"
    return dict(container)


@pytest.fixture(scope="module")
def fleet_only() -> list[dict[str, Any]]:
    return render("-f", str(FLEET_ONLY))


@pytest.fixture(scope="module")
def fleet_beside() -> list[dict[str, Any]]:
    return render("-f", str(FLEET_BESIDE))


# --------------------------------------------------------------------------------------------------
# what is rendered


def test_the_ci_values_cover_fleet_mode_alone_and_beside_targets() -> None:
    """test_chart.py lints, validates (1.30, 1.35) and checkov-checks every ci/*.yaml: these two
    put the planner through the same gates."""
    alone, beside = values_of(FLEET_ONLY), values_of(FLEET_BESIDE)
    assert alone["planner"]["enabled"] and alone["targets"] == []
    assert beside["planner"]["enabled"] and beside["targets"]


def test_planner_is_off_by_default() -> None:
    docs = render(*IMAGE_SET)
    assert component(docs, "planner") == []
    assert component(docs, "calibration") == []


def test_fleet_only_renders_the_planner_and_no_advisor_identity(
    fleet_only: list[dict[str, Any]],
) -> None:
    kinds = sorted(f"{d['kind']}/{d['metadata']['name']}" for d in fleet_only)
    assert kinds == [
        "CronJob/rel-tf-thread-advisor-planner",
        "NetworkPolicy/rel-tf-thread-advisor",
        "NetworkPolicy/rel-tf-thread-advisor-calibration",
        "Role/rel-tf-thread-advisor-calibration",
        "Role/rel-tf-thread-advisor-planner",
        "RoleBinding/rel-tf-thread-advisor-calibration",
        "RoleBinding/rel-tf-thread-advisor-planner",
        "ServiceAccount/rel-tf-thread-advisor-calibration",
        "ServiceAccount/rel-tf-thread-advisor-planner",
    ]


def test_beside_targets_both_paths_render_with_their_own_identities(
    fleet_beside: list[dict[str, Any]],
) -> None:
    (job,) = k8s.by_kind(fleet_beside, "Job")
    k8s.assert_hardened_advisor_job(job)
    accounts = {d["metadata"]["name"] for d in k8s.by_kind(fleet_beside, "ServiceAccount")}
    assert accounts == {
        "rel-tf-thread-advisor",
        "rel-tf-thread-advisor-planner",
        "rel-tf-thread-advisor-calibration",
    }
    assert k8s.pod_spec(job)["serviceAccountName"] == "rel-tf-thread-advisor"
    # the target's Role still names its one ConfigMap; the planner's identities are separate
    target_role = k8s.one(component(fleet_beside, "advisor"), "Role")
    assert target_role["rules"][0]["resourceNames"] == ["search-thread-advice"]
    assert_fleet_rbac(
        fleet_beside, "rel-tf-thread-advisor-planner", "rel-tf-thread-advisor-calibration"
    )
    # and the target's advisor gets none of the calibration rights
    target_rules = granted(fleet_beside, "rel-tf-thread-advisor")
    assert not allowed(target_rules, "create", "", "configmaps", "another-advice")
    assert not allowed(target_rules, "create", "batch", "jobs", None)


@pytest.mark.parametrize("values", [FLEET_ONLY, FLEET_BESIDE], ids=lambda p: p.name)
def test_planner_cronjob_runs_plan_apply_with_the_charts_settings(values: Path) -> None:
    docs = render("-f", str(values))
    settings = values_of(values)
    planner, defaults = settings["planner"], settings["defaults"]
    cron = k8s.one(component(docs, "planner"), "CronJob")
    assert cron["metadata"]["name"] == "rel-tf-thread-advisor-planner"
    spec = cron["spec"]
    assert spec["schedule"] == planner["schedule"]
    assert spec["concurrencyPolicy"] == "Forbid"
    assert spec["successfulJobsHistoryLimit"] == planner["successfulJobsHistoryLimit"]
    assert spec["failedJobsHistoryLimit"] == planner["failedJobsHistoryLimit"]
    assert spec.get("timeZone", "") == planner["timeZone"]
    assert spec["suspend"] is planner["suspend"]

    image = f"{REPOSITORY}:{settings['image']['tag']}"
    pod = k8s.pod_spec(cron)
    assert pod["serviceAccountName"] == "rel-tf-thread-advisor-planner"
    assert pod["restartPolicy"] == "Never"
    container = planner_container(cron)
    assert container["image"] == image
    expected = [
        "plan",
        "--apply",
        "--namespace=$(TFTA_POD_NAMESPACE)",
        f"--image={image}",
        f"--image-pull-policy={settings['image']['pullPolicy']}",
        "--service-account=rel-tf-thread-advisor-calibration",
        *[f"--image-pull-secret={secret['name']}" for secret in settings["imagePullSecrets"]],
        *(
            [f"--startup-allowance={planner['startupAllowance']}"]
            if planner["startupAllowance"]
            else []
        ),
        *(
            [f"--priority-class={planner['priorityClassName']}"]
            if planner["priorityClassName"]
            else []
        ),
        f"--max-running={planner['maxRunning']}",
        *([f"--max-age={planner['maxAge']}"] if planner["maxAge"] else []),
        f"--objective={defaults['objective']}",
        *([f"--p99-ms={defaults['p99Ms']}"] if defaults["objective"] == "slo" else []),
        f"--concurrency={defaults['concurrency']}",
        f"--batch-size={defaults['batchSize']}",
        f"--budget={defaults['budget']}",
        "--restart" if planner["restart"] else "--restart-forbidden",
        *([] if planner["events"] else ["--no-events"]),
        *(["--retry-failed"] if planner["retryFailed"] else []),
    ]
    assert container["args"] == expected
    env = {e["name"]: e for e in container["env"]}
    assert env["TFTA_POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    # the --service-account it passes is the calibration ServiceAccount the chart renders
    calibration = k8s.one(component(docs, "calibration"), "ServiceAccount")
    assert f"--service-account={calibration['metadata']['name']}" in container["args"]


def test_fleet_only_passes_every_default_and_the_defaults_values_pass_none(
    fleet_only: list[dict[str, Any]],
) -> None:
    """ci/fleet-only.yaml sets maxAge, restart and an slo objective: their flags appear; the
    chart's defaults leave all three out (the CLI's own defaults then hold)."""
    args = planner_container(k8s.one(fleet_only, "CronJob"))["args"]
    assert "--max-age=30d" in args and "--restart" in args and "--p99-ms=50" in args
    assert "--image-pull-secret=mirror-pull" in args
    assert "--startup-allowance=30m" in args and "--priority-class=batch-low" in args
    default_args = planner_container(
        k8s.one(component(render(*IMAGE_SET, *PLANNER_ON), "planner"), "CronJob")
    )["args"]
    left_out = ("--max-age", "--p99-ms", "--image-pull-secret", "--startup-allowance")
    assert not [a for a in default_args if a.startswith((*left_out, "--priority-class"))]
    # restart is off by default, and the calibration Role may not patch: the planner says so
    assert "--restart" not in default_args and "--restart-forbidden" in default_args
    assert "--max-running=1" in default_args


def test_planner_args_parse_with_the_real_cli(fleet_only: list[dict[str, Any]]) -> None:
    parser = build_parser()
    (subcommands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert "plan" in subcommands.choices, "the chart's planner runs plan: the CLI must have it"
    args = [
        a.replace("$(TFTA_POD_NAMESPACE)", NAMESPACE)
        for a in planner_container(k8s.one(fleet_only, "CronJob"))["args"]
    ]
    parsed = parser.parse_args(args)
    assert parsed.command == "plan"


def test_the_charts_fleet_roles_are_the_kustomize_components() -> None:
    """One set of rules, two packagings (the names differ by the release prefix): the chart
    without restarting is deploy/components/fleet; with it, the calibration identity also gets
    deploy/components/fleet-restart's rule."""
    component_docs = k8s.load_file_docs(REPO / "deploy" / "components" / "fleet" / "rbac.yaml")
    restart_docs = k8s.load_file_docs(
        REPO / "deploy" / "components" / "fleet-restart" / "rbac.yaml"
    )
    (restart_role,) = k8s.by_kind(restart_docs, "Role")
    (restart_binding,) = k8s.by_kind(restart_docs, "RoleBinding")
    assert restart_binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "tf-thread-advisor-calibration"}
    ]
    for restart in (False, True):
        docs = render("-f", str(FLEET_ONLY), "--set", f"planner.restart={str(restart).lower()}")
        for suffix in ("planner", "calibration"):
            (chart_role,) = [
                r
                for r in k8s.by_kind(docs, "Role")
                if r["metadata"]["name"] == f"rel-tf-thread-advisor-{suffix}"
            ]
            (kustomize_role,) = [
                r
                for r in k8s.by_kind(component_docs, "Role")
                if r["metadata"]["name"] == f"tf-thread-advisor-{suffix}"
            ]
            expected = k8s.role_rules(kustomize_role, drop_names=False)
            if restart and suffix == "calibration":
                expected += k8s.role_rules(restart_role, drop_names=False)
            assert k8s.role_rules(chart_role, drop_names=False) == expected, (suffix, restart)


@pytest.mark.parametrize(
    ("events", "retry_failed", "restart"),
    [(True, False, False), (False, True, True), (False, False, False), (True, True, True)],
)
def test_each_right_is_granted_only_with_its_feature(
    events: bool, retry_failed: bool, restart: bool
) -> None:
    """planner.events (create events), planner.retryFailed (delete jobs), planner.restart (patch
    workloads): each right is in the Roles exactly when its feature is on, and the planner's
    flags say the same."""
    docs = render(
        "-f",
        str(FLEET_ONLY),
        "--set",
        f"planner.events={str(events).lower()},planner.retryFailed={str(retry_failed).lower()},"
        f"planner.restart={str(restart).lower()}",
    )
    assert_fleet_rbac(
        docs,
        "rel-tf-thread-advisor-planner",
        "rel-tf-thread-advisor-calibration",
        events=events,
        retry_failed=retry_failed,
        restart=restart,
    )
    args = planner_container(k8s.one(docs, "CronJob"))["args"]
    assert ("--no-events" in args) is not events
    assert ("--retry-failed" in args) is retry_failed
    assert ("--restart" in args) is restart
    parsed = build_parser().parse_args(
        [a.replace("$(TFTA_POD_NAMESPACE)", NAMESPACE) for a in args]
    )
    assert (parsed.events, parsed.retry_failed, parsed.restart) == (events, retry_failed, restart)
    # without the right to patch, a workload asking for a restart is skipped, not failed later
    assert parsed.restart_forbidden is not restart


def test_planner_pod_is_hardened_and_keeps_only_its_own_token(
    fleet_only: list[dict[str, Any]],
) -> None:
    cron = k8s.one(fleet_only, "CronJob")
    pod = k8s.pod_spec(cron)
    # its pod runs the advisor image alone: the automounted token is the planner's own
    assert pod["automountServiceAccountToken"] is True
    assert [c["image"] for c in pod["containers"]] == [f"{REPOSITORY}:0.1.0"]
    assert "initContainers" not in pod
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    container = planner_container(cron)
    k8s.assert_container_hardened(container)
    (tmp,) = container["volumeMounts"]
    assert tmp["mountPath"] == "/tmp"
    assert "emptyDir" in {v["name"]: v for v in pod["volumes"]}[tmp["name"]]
    assert pod["imagePullSecrets"] == [{"name": "mirror-pull"}]
    job = k8s.job_spec(cron)
    assert job["activeDeadlineSeconds"] > 0 and job["backoffLimit"] <= 3
    labels = cron["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    assert labels["app.kubernetes.io/name"] == "tf-thread-advisor"
    assert labels["app.kubernetes.io/instance"] == "rel"  # the release's NetworkPolicy selects it


def test_service_accounts_of_fleet_mode(fleet_only: list[dict[str, Any]]) -> None:
    planner = k8s.one(component(fleet_only, "planner"), "ServiceAccount")
    calibration = k8s.one(component(fleet_only, "calibration"), "ServiceAccount")
    # the calibration pods mount a projected token into their advisor container alone
    assert calibration["automountServiceAccountToken"] is False
    assert planner["automountServiceAccountToken"] is False  # its pod opts in itself
    # the advisor image's pull secret reaches calibration pods that bring none of their own
    assert calibration["imagePullSecrets"] == [{"name": "mirror-pull"}]


def test_fleet_rbac_is_least_privilege(fleet_only: list[dict[str, Any]]) -> None:
    assert_fleet_rbac(
        fleet_only,
        "rel-tf-thread-advisor-planner",
        "rel-tf-thread-advisor-calibration",
        restart=True,
    )
    # each Role is bound to its own ServiceAccount only
    for name in ("rel-tf-thread-advisor-planner", "rel-tf-thread-advisor-calibration"):
        (binding,) = [
            b for b in k8s.by_kind(fleet_only, "RoleBinding") if b["metadata"]["name"] == name
        ]
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": name,
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}
        ]


def test_the_rbac_check_can_fail(fleet_only: list[dict[str, Any]]) -> None:
    """A planner Role that may also write ConfigMaps, or a calibration Role that may create Jobs,
    is caught."""
    for role_name, rule in (
        (
            "rel-tf-thread-advisor-planner",
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"]},
        ),
        (
            "rel-tf-thread-advisor-calibration",
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create"]},
        ),
    ):
        docs = copy.deepcopy(fleet_only)
        (role,) = [r for r in k8s.by_kind(docs, "Role") if r["metadata"]["name"] == role_name]
        role["rules"].append(rule)
        with pytest.raises(AssertionError, match="may"):
            assert_fleet_rbac(
                docs,
                "rel-tf-thread-advisor-planner",
                "rel-tf-thread-advisor-calibration",
                restart=True,
            )


def test_calibration_pods_get_the_releases_network_policy(fleet_only: list[dict[str, Any]]) -> None:
    policies = {p["metadata"]["name"]: p for p in k8s.by_kind(fleet_only, "NetworkPolicy")}
    release, calibration = (
        policies["rel-tf-thread-advisor"],
        policies["rel-tf-thread-advisor-calibration"],
    )
    # plan's Jobs carry no release label: selected by the labels every planned Job has
    assert calibration["spec"]["podSelector"] == {
        "matchLabels": {
            "app.kubernetes.io/name": "tf-thread-advisor",
            "app.kubernetes.io/component": "calibration",
        }
    }
    assert calibration["spec"]["ingress"] == []
    assert calibration["spec"]["egress"] == release["spec"]["egress"]
    assert calibration["spec"]["policyTypes"] == ["Ingress", "Egress"]
    without = render("-f", str(FLEET_ONLY), "--set", "networkPolicy.enabled=false")
    assert k8s.by_kind(without, "NetworkPolicy") == []


def notes_of(values: Path) -> str:
    """The NOTES a ``helm install`` with ``values`` prints."""
    proc = helm(
        "install", "rel", str(CHART), "-n", NAMESPACE, "--dry-run=client", "-f", str(values)
    )
    return str(proc.stdout.split("NOTES:", 1)[1])


def test_notes_say_how_to_watch_the_planner() -> None:
    notes = notes_of(FLEET_ONLY)
    for needle in (
        "fleet mode only",
        'tf-thread-advisor.io/calibrate: "true"',
        "tf-thread-advisor.io/model:",
        f"tf-thread-advisor plan --namespace {NAMESPACE}",
        f"tf-thread-advisor status --namespace {NAMESPACE}",
        "create job --from=cronjob/rel-tf-thread-advisor-planner",
        "rel-tf-thread-advisor-calibration",
        '"7 */6 * * *"',
    ):
        assert needle in notes, needle
    # no target, so nothing about a target's Job, helm test or the uninstall cleanup
    for absent in ("Wait for the advice", "helm test", "cleanup.enabled=true"):
        assert absent not in notes, absent


# --------------------------------------------------------------------------------------------------
# planner.scope cluster: one planner for every opted-in namespace


@pytest.fixture(scope="module")
def fleet_cluster() -> list[dict[str, Any]]:
    return render("-f", str(FLEET_CLUSTER))


def test_cluster_scope_binds_a_cluster_role_and_no_planner_role(
    fleet_cluster: list[dict[str, Any]],
) -> None:
    planner = component(fleet_cluster, "planner")
    kinds = sorted(f"{d['kind']}/{d['metadata'].get('namespace', '-')}" for d in planner)
    assert kinds == [
        "ClusterRole/-",
        "ClusterRoleBinding/-",
        f"CronJob/{NAMESPACE}",
        f"ServiceAccount/{NAMESPACE}",
    ]
    binding = k8s.one(planner, "ClusterRoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "rel-tf-thread-advisor-planner",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "rel-tf-thread-advisor-planner", "namespace": NAMESPACE}
    ]
    # the planner's rules, everywhere, and the two lists plan --all-namespaces adds
    assert_fleet_rbac(
        fleet_cluster,
        "rel-tf-thread-advisor-planner",
        "rel-tf-thread-advisor-calibration",
        cluster=True,
    )
    assert granted(fleet_cluster, "rel-tf-thread-advisor-planner") == []
    # the same rules as the kustomize example for cluster scope
    example = k8s.load_file_docs(REPO / "deploy" / "examples" / "planner-cluster.yaml")
    assert k8s.role_rules(k8s.one(planner, "ClusterRole"), drop_names=False) == k8s.role_rules(
        k8s.one(example, "ClusterRole"), drop_names=False
    )


def test_the_cluster_scope_check_can_fail(fleet_cluster: list[dict[str, Any]]) -> None:
    """A ClusterRole that may also read Secrets, or a namespace-scope planner given the cluster
    lists, is caught."""
    docs = copy.deepcopy(fleet_cluster)
    k8s.one(docs, "ClusterRole")["rules"].append(
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}
    )
    with pytest.raises(AssertionError, match="may"):
        assert_fleet_rbac(
            docs, "rel-tf-thread-advisor-planner", "rel-tf-thread-advisor-calibration", cluster=True
        )
    docs = render("-f", str(FLEET_ONLY))
    (role,) = [r for r in k8s.by_kind(docs, "Role") if r["metadata"]["name"].endswith("planner")]
    role["rules"].append({"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["list"]})
    with pytest.raises(AssertionError, match="planner"):
        assert_fleet_rbac(docs, *IDENTITIES)


def test_cluster_scope_runs_plan_all_namespaces(fleet_cluster: list[dict[str, Any]]) -> None:
    args = planner_container(k8s.one(fleet_cluster, "CronJob"))["args"]
    assert args[:3] == ["plan", "--apply", "--all-namespaces"]
    assert not [a for a in args if a.startswith("--namespace")]
    parsed = build_parser().parse_args(args)
    assert (parsed.command, parsed.all_namespaces, parsed.namespace) == ("plan", True, None)
    assert parsed.service_account == "rel-tf-thread-advisor-calibration"


def test_the_calibration_identity_is_rendered_in_every_listed_namespace(
    fleet_cluster: list[dict[str, Any]],
) -> None:
    listed = values_of(FLEET_CLUSTER)["planner"]["namespaces"]
    calibration = component(fleet_cluster, "calibration")
    for kind in ("ServiceAccount", "Role", "RoleBinding", "NetworkPolicy"):
        found = sorted(d["metadata"]["namespace"] for d in k8s.by_kind(calibration, kind))
        assert found == sorted([NAMESPACE, *listed]), kind
    for namespace in (NAMESPACE, *listed):
        assert_fleet_rbac(
            fleet_cluster,
            "rel-tf-thread-advisor-planner",
            "rel-tf-thread-advisor-calibration",
            cluster=True,
            namespace=namespace,
        )
        (binding,) = [
            b
            for b in k8s.by_kind(calibration, "RoleBinding")
            if b["metadata"]["namespace"] == namespace
        ]
        assert binding["subjects"] == [
            {
                "kind": "ServiceAccount",
                "name": "rel-tf-thread-advisor-calibration",
                "namespace": namespace,
            }
        ]
    # the calibration identity gets nothing cluster-wide
    assert granted_everywhere(fleet_cluster, "rel-tf-thread-advisor-calibration") == []
    # the release namespace listed again is rendered once
    again = render("-f", str(FLEET_CLUSTER), "--set", f"planner.namespaces={{{NAMESPACE}}}")
    assert len(k8s.by_kind(component(again, "calibration"), "ServiceAccount")) == 1


def test_notes_say_how_to_opt_a_namespace_in() -> None:
    notes = notes_of(FLEET_CLUSTER)
    for needle in (
        "plan --apply --all-namespaces",
        "kubectl label namespace NAME tf-thread-advisor.io/calibrate=true",
        f"{NAMESPACE}, serving-a, serving-b",
        "tf-thread-advisor status --all-namespaces",
        "ClusterRole may create Jobs in every namespace",
    ):
        assert needle in notes, needle


# --------------------------------------------------------------------------------------------------
# values the chart refuses


@pytest.mark.parametrize(
    ("set_arg", "needle"),
    [
        ("planner.enable=true", "enable"),
        ("planner.maxRuning=2", "maxRuning"),
        ("planner.schedul=x", "schedul"),
        ("planner.maxRunning=0", "maxRunning"),
        ("planner.maxAge=30x", "maxAge"),
        ("planner.restart=yes", "restart"),
        ("planner.startupAllowance=soon", "startupAllowance"),
        # plan refuses a zero allowance: the chart says so at install, not each night
        ("planner.startupAllowance=0s", "startupAllowance"),
        ("planner.startupAllowance=0m0s", "startupAllowance"),
        ("planner.priorityClassName=Batch_Low", "priorityClassName"),
        ("planner.scope=clustr", "scope"),
        ("planner.scpe=cluster", "scpe"),
        ("planner.namespaces={Bad_NS}", "namespaces"),
        ("planner.namespaces={a,a}", "namespaces"),
    ],
)
def test_schema_rejects_unknown_or_bad_planner_keys(set_arg: str, needle: str) -> None:
    proc = template(*IMAGE_SET, *PLANNER_ON, "--set", set_arg, check=False)
    assert proc.returncode != 0, proc.stdout[:300]
    assert needle in proc.stderr


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        # nothing would ever calibrate
        ({"planner": {"enabled": False}}, "targets is empty and planner.enabled is false"),
        # the cleanup deletes the targets' ConfigMaps; with none its Role would name none
        ({"cleanup": {"enabled": True}}, "cleanup.enabled"),
        # the planner's default objective needs its bound (values.yaml sets no p99Ms)
        ({"defaults": {"objective": "slo"}}, "defaults.p99Ms"),
        # namespaces to give the calibration identity only mean something in cluster scope
        ({"planner": {"enabled": True, "namespaces": ["team-a"]}}, "planner.scope=cluster"),
    ],
)
def test_fleet_alone_refuses_values_that_cannot_work(
    changes: dict[str, Any], needle: str, tmp_path: Path
) -> None:
    values = tmp_path / "values.yaml"
    fleet = {"targets": [], "planner": {"enabled": True}}
    values.write_text(yaml.safe_dump({**fleet, **changes}))
    proc = template(*IMAGE_SET, "-f", str(values), check=False)
    assert proc.returncode != 0, proc.stdout[:300]
    assert needle in proc.stderr
    # and without the change it renders
    values.write_text(yaml.safe_dump(fleet))
    assert template(*IMAGE_SET, "-f", str(values)).returncode == 0


def test_job_mode_none_is_fine_without_targets() -> None:
    """job.mode none needs cronJob.enabled for targets; fleet mode alone has none to run."""
    docs = render("-f", str(FLEET_ONLY), "--set", "job.mode=none")
    assert k8s.by_kind(docs, "Job") == []
    assert len(k8s.by_kind(docs, "CronJob")) == 1


# --------------------------------------------------------------------------------------------------
# the token: no container but the advisor gets one


def _init_container_jobs() -> list[dict[str, Any]]:
    jobs = []
    for values in (CI / "two-node-pools.yaml", FLEET_BESIDE):
        for job in k8s.by_kind(render("-f", str(values)), "Job"):
            if k8s.pod_spec(job).get("initContainers"):
                jobs.append(job)
    return jobs


def test_the_init_container_model_source_gets_no_token() -> None:
    jobs = _init_container_jobs()
    assert len(jobs) == 2
    for job in jobs:
        pod = k8s.pod_spec(job)
        assert pod["automountServiceAccountToken"] is False
        (init,) = pod["initContainers"]
        # the init container runs the serving image and mounts the model's emptyDir alone
        assert [m["name"] for m in init["volumeMounts"]] == ["model"]
        advisor = k8s.advisor_container(job)
        mounts = {m["name"]: m for m in advisor["volumeMounts"]}
        assert mounts[k8s.TOKEN_VOLUME] == {
            "name": k8s.TOKEN_VOLUME,
            "mountPath": k8s.TOKEN_MOUNT_PATH,
            "readOnly": True,
        }
        k8s.assert_token_in_advisor_only(job)


@pytest.mark.parametrize(
    "weaken",
    [
        "automount",
        "init-mounts-token",
        "no-volume",
        "token-as-secret-in-init",
    ],
)
def test_the_token_check_can_fail(weaken: str) -> None:
    job = copy.deepcopy(_init_container_jobs()[0])
    pod = k8s.pod_spec(job)
    (init,) = pod["initContainers"]
    if weaken == "automount":
        pod["automountServiceAccountToken"] = True
    elif weaken == "init-mounts-token":
        init["volumeMounts"].append(
            {"name": k8s.TOKEN_VOLUME, "mountPath": k8s.TOKEN_MOUNT_PATH, "readOnly": True}
        )
    elif weaken == "no-volume":
        pod["volumes"] = [v for v in pod["volumes"] if v["name"] != k8s.TOKEN_VOLUME]
    else:
        pod["volumes"].append({"name": "legacy", "secret": {"secretName": "sa-token"}})
        init["volumeMounts"].append({"name": "legacy", "mountPath": "/creds"})
    with pytest.raises((AssertionError, KeyError)):
        k8s.assert_token_in_advisor_only(job)


@pytest.mark.parametrize(
    "values",
    [None, *sorted(CI.glob("*.yaml"))],
    ids=lambda p: "defaults" if p is None else p.name,
)
def test_every_calibration_pod_of_every_render_keeps_the_token_in_the_advisor(
    values: Path | None,
) -> None:
    """Every model source, the one-off Jobs and the CronJobs alike."""
    extra = IMAGE_SET if values is None else ("-f", str(values))
    docs = render(*extra, "--set", "cronJob.enabled=true")
    workloads = [d for d in component(docs, "advisor") if d["kind"] in ("Job", "CronJob")]
    targets = values_of(values)["targets"] if values is not None else [{"name": "default"}]
    assert len(workloads) == 2 * len(targets)  # a Job and a CronJob per target
    for workload in workloads:
        k8s.assert_token_in_advisor_only(workload)


# --------------------------------------------------------------------------------------------------
# production verdicts (planner.prometheus)


PROMETHEUS_SET = (
    "--set", "planner.prometheus.url=http://prometheus.monitoring:9090",
    "--set", "planner.prometheus.existingSecret=prom-auth",
    "--set", "planner.prometheus.tokenKey=token",
    "--set", "planner.prometheus.headers.X-Scope-OrgID=team-a",
    "--set", "planner.prometheus.window=12h",
    "--set", "planner.prometheus.warmUp=30m",
    "--set-string", 'planner.prometheus.selector=cluster=~"prod-eu|prod-us"',
    "--set", "planner.maxReverts=2",
)  # fmt: skip


def test_prometheus_passes_url_auth_and_its_rules_match_the_production_component() -> None:
    docs = render("-f", str(FLEET_ONLY), *PROMETHEUS_SET)
    container = planner_container(k8s.one(docs, "CronJob"))
    args = [a.replace("$(TFTA_POD_NAMESPACE)", NAMESPACE) for a in container["args"]]
    parsed = build_parser().parse_args(args)
    assert parsed.prometheus_url == "http://prometheus.monitoring:9090"
    assert parsed.prometheus_header == ["X-Scope-OrgID=team-a"]
    assert str(parsed.prometheus_token_file) == "/var/run/tf-thread-advisor/prometheus/token"
    assert parsed.suggest_throttled == 25
    # the matchers reach the flag as written: quoted for YAML, parsed back by the planner
    assert parsed.prometheus_selector == 'cluster=~"prod-eu|prod-us"'
    assert parsed.max_reverts == 2
    assert (parsed.window, parsed.warm_up) == (timedelta(hours=12), timedelta(minutes=30))
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "prometheus"]
    assert mount["readOnly"] is True
    (volume,) = [
        v for v in k8s.pod_spec(k8s.one(docs, "CronJob"))["volumes"] if v["name"] == "prometheus"
    ]
    assert volume["secret"]["secretName"] == "prom-auth"
    # the planner's Role = the fleet component's planner Role + the production component's Role
    (planner_role,) = [
        r
        for r in k8s.by_kind(docs, "Role")
        if r["metadata"]["name"] == "rel-tf-thread-advisor-planner"
    ]
    fleet = k8s.load_file_docs(REPO / "deploy" / "components" / "fleet" / "rbac.yaml")
    production = k8s.load_file_docs(REPO / "deploy" / "components" / "production" / "rbac.yaml")
    expected = [
        *next(r for r in k8s.by_kind(fleet, "Role") if r["metadata"]["name"].endswith("planner"))[
            "rules"
        ],
        *k8s.one(production, "Role")["rules"],
    ]
    assert planner_role["rules"] == expected
    policies = {p["metadata"]["name"]: p for p in k8s.by_kind(docs, "NetworkPolicy")}
    egress = policies["rel-tf-thread-advisor-planner-prometheus"]["spec"]["egress"]
    assert egress == [{"ports": [{"protocol": "TCP", "port": 9090}]}]


def test_without_prometheus_the_planner_gets_no_more_rights(
    fleet_only: list[dict[str, Any]],
) -> None:
    (container,) = [planner_container(k8s.one(fleet_only, "CronJob"))]
    assert not [
        a for a in container["args"] if "prometheus" in a or "suggest" in a or "reverts" in a
    ]
    verbs = {
        v for r in k8s.by_kind(fleet_only, "Role") for rule in r["rules"] for v in rule["verbs"]
    }
    assert "update" not in verbs
    assert not [
        p for p in k8s.by_kind(fleet_only, "NetworkPolicy") if "prometheus" in p["metadata"]["name"]
    ]


def test_prometheus_auth_without_a_url_is_refused() -> None:
    proc = template(
        *IMAGE_SET, "-f", str(FLEET_ONLY), "--set", "planner.prometheus.existingSecret=x",
        "--set", "planner.prometheus.tokenKey=token", check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "need planner.prometheus.url" in proc.stderr
