"""The chart over a release's life, rendered by the real helm: the image a user must set, the opt-in
uninstall cleanup, and the Argo CD / Flux path (what two syncs in a row do).

The cleanup hook's Role is taken from the render and loaded into the strict fake API server, and
the hook Job's own args run through the real CLI against it: the shipped Role is exactly enough.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import build_parser, main
from advisor.recommend import render_configmap
from testkit.fakeapi.rbac import Rule
from testkit.fakeapi.samples import recommendation
from testkit.fakeapi.server import FakeApiServer
from tests.support import REPO
from tests.support import k8s_checks as k8s

CHART = REPO / "charts" / "tf-thread-advisor"
CI = CHART / "ci"
NAMESPACE = "ml"
REPOSITORY = "registry.example.com/mirror/tf-thread-advisor"
IMAGE_SET = ("--set", f"image.repository={REPOSITORY}")
CLEANUP_ON = ("--set", "cleanup.enabled=true")
#: kinds the API server updates in place: re-applying a changed one is an ordinary patch
MUTABLE_KINDS = {"ServiceAccount", "Role", "RoleBinding", "NetworkPolicy", "CronJob"}

pytestmark = pytest.mark.tools


def helm(*args: str, check: bool = True) -> Any:
    return k8s.run_tool([k8s.tool("helm"), *args], check=check)


def template(*extra: str, check: bool = True) -> Any:
    return helm("template", "rel", str(CHART), "--namespace", NAMESPACE, *extra, check=check)


def render(*extra: str) -> list[dict[str, Any]]:
    return k8s.load_docs(template(*extra).stdout)


def targets(values: Path | None) -> list[dict[str, Any]]:
    source = values if values is not None else CHART / "values.yaml"
    found: list[dict[str, Any]] = yaml.safe_load(source.read_text())["targets"]
    return found


def annotations(doc: dict[str, Any]) -> dict[str, str]:
    return dict(doc["metadata"].get("annotations") or {})


def component(docs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["metadata"]["labels"].get("app.kubernetes.io/component") == name]


VALUES = [None, *sorted(CI.glob("*.yaml"))]
#: the uninstall cleanup is about the targets' ConfigMaps: fleet mode alone has none (the chart
#: refuses cleanup.enabled there; tests/system/test_chart_fleet.py checks it)
WITH_TARGETS = [v for v in VALUES if v is None or yaml.safe_load(v.read_text())["targets"]]


def values_args(values: Path | None) -> tuple[str, ...]:
    return () if values is None else ("-f", str(values))


def _id(values: Path | None) -> str:
    return "defaults" if values is None else values.name


# --------------------------------------------------------------------------------------------------
# the image


@pytest.mark.parametrize("command", ["template", "install", "lint"])
def test_without_an_image_repository_the_install_fails_saying_what_to_do(command: str) -> None:
    args = {
        "template": ("template", "rel", str(CHART)),
        "install": ("install", "rel", str(CHART), "--dry-run=client"),
        "lint": ("lint", "--strict", str(CHART)),
    }[command]
    proc = helm(*args, "--namespace", NAMESPACE, check=False)
    # helm lint renders in lint mode, where `fail` is reported but not fatal (so that charts
    # with required values lint): it must still show the message
    assert (proc.returncode == 0) == (command == "lint"), proc.stderr[-1500:]
    output = proc.stdout + proc.stderr
    for needle in ("image.repository is not set", "docs/deploy.md", "--set image.repository="):
        assert needle in output, output[-1500:]


def test_the_image_set_is_the_image_every_pod_runs() -> None:
    docs = render(*IMAGE_SET, *CLEANUP_ON, "--set", "image.tag=1.2.3")
    pods = [k8s.pod_spec(d) for d in docs if d["kind"] in ("Job", "CronJob")]
    pods += [d["spec"] for d in k8s.by_kind(docs, "Pod")]
    assert len(pods) == 3  # the Job, the helm test Pod, the cleanup Job
    images = {c["image"] for pod in pods for c in pod["containers"]}
    assert images == {f"{REPOSITORY}:1.2.3"}


def test_every_ci_values_file_names_its_image() -> None:
    for path in sorted(CI.glob("*.yaml")):
        assert yaml.safe_load(path.read_text())["image"]["repository"] == REPOSITORY, path.name


# --------------------------------------------------------------------------------------------------
# uninstall cleanup


@pytest.mark.parametrize("values", WITH_TARGETS, ids=_id)
def test_cleanup_is_off_by_default_and_the_notes_say_the_advice_stays(values: Path | None) -> None:
    docs = render(*IMAGE_SET, *values_args(values))
    assert component(docs, "cleanup") == []
    proc = helm(
        "install",
        "rel",
        str(CHART),
        "-n",
        NAMESPACE,
        "--dry-run=client",
        *IMAGE_SET,
        *values_args(values),
    )
    notes = proc.stdout.split("NOTES:", 1)[1]
    assert "helm uninstall keeps these ConfigMaps" in notes
    assert "cleanup.enabled=true" in notes
    for target in targets(values):
        assert f"            name: {target['configMapName']}\n" in notes  # per-target envFrom


@pytest.mark.parametrize("values", WITH_TARGETS, ids=_id)
def test_cleanup_hook_has_its_own_least_privilege_identity(values: Path | None) -> None:
    docs = render(*IMAGE_SET, *CLEANUP_ON, *values_args(values))
    hook = component(docs, "cleanup")
    assert sorted(d["kind"] for d in hook) == ["Job", "Role", "RoleBinding", "ServiceAccount"]
    for doc in hook:
        notes = annotations(doc)
        assert notes["helm.sh/hook"] == "post-delete"
        assert notes["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
        assert notes["argocd.argoproj.io/hook"] == "PostDelete"
    weights = {d["kind"]: int(annotations(d)["helm.sh/hook-weight"]) for d in hook}
    assert weights["ServiceAccount"] < weights["RoleBinding"] < weights["Job"]
    assert weights["Role"] < weights["RoleBinding"]

    names = {t["configMapName"] for t in targets(values)}
    role = k8s.one(hook, "Role")
    (rule,) = role["rules"]
    assert set(rule.pop("resourceNames")) == names
    assert rule == {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "delete"]}
    account = k8s.one(hook, "ServiceAccount")["metadata"]["name"]
    binding = k8s.one(hook, "RoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert [s["name"] for s in binding["subjects"]] == [account]
    # not the advisor's ServiceAccount: that one is deleted with the release, before the hook
    advisor_accounts = {d["metadata"]["name"] for d in component(docs, "advisor")}
    assert account not in advisor_accounts

    job = k8s.one(hook, "Job")
    pod = k8s.pod_spec(job)
    assert pod["serviceAccountName"] == account
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    k8s.assert_container_hardened(container)
    parsed = build_parser().parse_args(container["args"])
    assert (parsed.command, parsed.namespace) == ("cleanup", NAMESPACE)
    assert set(parsed.configmap) == names


def test_cleanup_renders_lint_validate_and_pass_checkov(tmp_path: Path) -> None:
    files = []
    for values in WITH_TARGETS:
        proc = helm(
            "lint",
            "--strict",
            str(CHART),
            "-n",
            NAMESPACE,
            *IMAGE_SET,
            *CLEANUP_ON,
            *values_args(values),
        )
        assert "0 chart(s) failed" in proc.stdout
        docs = render(*IMAGE_SET, *CLEANUP_ON, *values_args(values))
        k8s.validate_k8s(docs)
        k8s.assert_skips_have_reasons(docs)
        path = tmp_path / f"{_id(values)}.yaml"
        path.write_text(yaml.safe_dump_all(docs))
        files.append(path)
    k8s.assert_checkov_clean(k8s.checkov_report(files))


def test_the_hook_job_with_the_rendered_role_deletes_exactly_the_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    values = CI / "two-node-pools.yaml"
    hook = component(render(*IMAGE_SET, *CLEANUP_ON, "-f", str(values)), "cleanup")
    rules = [
        Rule(
            tuple(r["apiGroups"]),
            tuple(r["resources"]),
            tuple(r["verbs"]),
            tuple(r.get("resourceNames", ())),
        )
        for r in k8s.one(hook, "Role")["rules"]
    ]
    args = k8s.one(hook, "Job")["spec"]["template"]["spec"]["containers"][0]["args"]
    names = [t["configMapName"] for t in targets(values)]
    with FakeApiServer(
        tmp_path, namespaces=(NAMESPACE,), role_namespace=NAMESPACE, rules=rules
    ) as api:
        for name in names:
            api.put(render_configmap(recommendation(2, 1), name, NAMESPACE))
        api.put(render_configmap(recommendation(2, 1), "another-release-advice", NAMESPACE))
        code = main([*args, "--kubeconfig", str(api.kubeconfig)])
        out, err = capsys.readouterr()
        assert (code, err) == (0, "")
        assert [line.split(":")[0] for line in out.splitlines()] == ["deleted"] * len(names)
        assert all(api.get(NAMESPACE, name) is None for name in names)
        assert api.get(NAMESPACE, "another-release-advice") is not None
        # and that is all the Role allows: the other release's advice cannot be deleted
        assert (
            main(
                [
                    "cleanup",
                    "--namespace",
                    NAMESPACE,
                    "--configmap",
                    "another-release-advice",
                    "--kubeconfig",
                    str(api.kubeconfig),
                ]
            )
            == 8
        )
        capsys.readouterr()


# --------------------------------------------------------------------------------------------------
# GitOps: what a sync does, twice in a row


def sync(previous: list[dict[str, Any]], desired: list[dict[str, Any]]) -> dict[str, str]:
    """What applying ``desired`` over ``previous`` does to each object, as Argo CD would: a hook
    with before-hook-creation is deleted and created again; any other object is created, left
    alone or patched, and patching a Job's pod template is the API server's immutable-field
    error."""
    before = {(d["kind"], d["metadata"]["name"]): d for d in previous}
    outcome = {}
    for doc in desired:
        key = (doc["kind"], doc["metadata"]["name"])
        notes = annotations(doc)
        old = before.get(key)
        if "BeforeHookCreation" in notes.get("argocd.argoproj.io/hook-delete-policy", ""):
            outcome[f"{key[0]}/{key[1]}"] = "recreated"
        elif old is None:
            outcome[f"{key[0]}/{key[1]}"] = "created"
        elif old == doc:
            outcome[f"{key[0]}/{key[1]}"] = "unchanged"
        elif doc["kind"] == "Job" and old["spec"]["template"] != doc["spec"]["template"]:
            outcome[f"{key[0]}/{key[1]}"] = "immutable-field error"
        else:
            assert doc["kind"] in MUTABLE_KINDS, doc["kind"]
            outcome[f"{key[0]}/{key[1]}"] = "patched"
    return outcome


ARGO = ("-f", str(CI / "argocd-hooks.yaml"))


def test_two_helm_templates_in_hook_mode_are_identical_with_fixed_names() -> None:
    first, second = template(*ARGO).stdout, template(*ARGO).stdout
    assert first == second
    (job,) = k8s.by_kind(k8s.load_docs(first), "Job")
    assert job["metadata"]["name"] == "rel-tf-thread-advisor-bert-calibrate"
    assert "-r1" not in first
    assert annotations(job) | {
        "helm.sh/hook": "post-install,post-upgrade",
        "helm.sh/hook-delete-policy": "before-hook-creation",
        "argocd.argoproj.io/hook": "PostSync",
        "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation",
    } == annotations(job)
    k8s.assert_hardened_advisor_job(job)


def test_a_second_sync_reruns_the_job_and_patches_nothing_immutable() -> None:
    first = render(*ARGO)
    assert sync(first, first) == {
        "ServiceAccount/rel-tf-thread-advisor": "unchanged",
        "NetworkPolicy/rel-tf-thread-advisor": "unchanged",
        "Role/rel-tf-thread-advisor": "unchanged",
        "RoleBinding/rel-tf-thread-advisor": "unchanged",
        "Job/rel-tf-thread-advisor-bert-calibrate": "recreated",
        "Pod/rel-tf-thread-advisor-bert-test": "unchanged",
    }
    # a changed budget in git: the same Job name, a new Job, never a patch of the old one
    changed = render(*ARGO, "--set", "defaults.budget=400")
    outcome = sync(first, changed)
    assert outcome["Job/rel-tf-thread-advisor-bert-calibrate"] == "recreated"
    assert "immutable-field error" not in outcome.values()


def test_revision_mode_under_helm_template_is_what_breaks_argo_cd() -> None:
    """Why hook mode exists: without a Helm release the revision is always 1."""
    first = render(*IMAGE_SET)
    changed = render(*IMAGE_SET, "--set", "defaults.budget=400")
    assert sync(first, first)["Job/rel-tf-thread-advisor-default-r1"] == "unchanged"  # no rerun
    assert sync(first, changed)["Job/rel-tf-thread-advisor-default-r1"] == "immutable-field error"


def test_mode_none_leaves_the_cronjob_alone_and_needs_it() -> None:
    docs = render(*IMAGE_SET, "--set", "job.mode=none", "--set", "cronJob.enabled=true")
    assert k8s.by_kind(docs, "Job") == []
    (cron,) = k8s.by_kind(docs, "CronJob")
    assert sync(docs, docs)[f"CronJob/{cron['metadata']['name']}"] == "unchanged"
    proc = template(*IMAGE_SET, "--set", "job.mode=none", check=False)
    assert proc.returncode != 0
    assert "job.mode none" in proc.stderr and "cronJob.enabled=true" in proc.stderr
