"""What names a calibration Job: the spec hash (one value, the same in any process and key order,
changed by what is measured and by nothing else) and the Job's name cut to a valid label."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from advisor.fleet.derive import JobSettings, derive_job
from advisor.fleet.optin import CalibrationAsk, read_ask
from advisor.keys import (
    ANN_BATCH_SIZE,
    ANN_BUDGET,
    ANN_CONCURRENCY,
    ANN_OBJECTIVE,
    ANN_P99_MS,
    ANN_RESTART,
    LABEL_SPEC_HASH,
)
from tests.support import run_python
from tests.support.fleet_workloads import (
    SERVING_IMAGE,
    SETTINGS,
    _required,
    arg,
    ask,
    deployment,
    derive,
    pvc_deployment,
    shapes,
    view,
)

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


# --------------------------------------------------------------------------------------------------
# Spec hash and name


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


def test_the_spec_hash_is_one_value_everywhere() -> None:
    job = derive(pvc_deployment())
    assert re.fullmatch(r"[0-9a-f]{10}", job.spec_hash)
    assert job.name.endswith("-" + job.spec_hash)
    assert arg(job, "--spec-hash") == [job.spec_hash]
    assert job.manifest["metadata"]["labels"][LABEL_SPEC_HASH] == job.spec_hash
    template_labels = job.manifest["spec"]["template"]["metadata"]["labels"]
    assert template_labels[LABEL_SPEC_HASH] == job.spec_hash


def test_the_spec_hash_ignores_key_order() -> None:
    workload = pvc_deployment(
        nodeSelector={"a": "1", "b": "2"},
        affinity=_required(["x"]),
        tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
    )
    job = derive(workload)
    again = derive(_reversed_keys(workload))
    assert again.spec_hash == job.spec_hash
    assert again.manifest == job.manifest


def test_the_spec_hash_is_the_same_in_another_process() -> None:
    """No per-process salt (Python's hash()): a planner run tomorrow finds today's Job."""
    code = (
        "import json\n"
        "from advisor.fleet.derive import derive_job\n"
        "from advisor.fleet.optin import read_ask\n"
        "from tests.support.fleet_workloads import SETTINGS, shapes, view\n"
        "out = {}\n"
        "for name, (kind, workload) in shapes().items():\n"
        "    annotations = workload['metadata']['annotations']\n"
        "    job = derive_job(view(workload, kind), read_ask(annotations),"
        " configmap='cm',"
        " settings=SETTINGS)\n"
        "    out[name] = [job.spec_hash, job.pool_hash, job.name]\n"
        "print(json.dumps(out))\n"
    )
    here = {
        name: [job.spec_hash, job.pool_hash, job.name]
        for name, (kind, workload) in shapes().items()
        if (
            job := derive_job(
                view(workload, kind),
                read_ask(workload["metadata"]["annotations"]),
                configmap="cm",
                settings=SETTINGS,
            )
        )
    }
    assert json.loads(run_python(code)) == here
    assert len({spec for spec, _, _ in here.values()}) == len(here)


def test_the_spec_hash_ignores_what_the_job_does_not_copy() -> None:
    base = derive(pvc_deployment())
    workload = pvc_deployment(
        affinity={"podAntiAffinity": {}},
        topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}
        ],
        priorityClassName="high",
        serviceAccountName="other",
    )
    workload["spec"]["replicas"] = 10
    workload["metadata"]["uid"] = "another-uid"
    workload["spec"]["template"]["metadata"]["labels"]["version"] = "2"
    assert derive(workload).spec_hash == base.spec_hash


def test_the_spec_hash_ignores_what_does_not_change_the_measurement() -> None:
    """Replicas, labels, the restart annotation, the advice ConfigMap's extra annotations and
    the advisor's own image and Job settings measure nothing: the same Job name."""
    base = derive(pvc_deployment())
    workload = pvc_deployment()
    workload["spec"]["replicas"] = 7
    workload["metadata"]["labels"]["team"] = "ml"
    workload["metadata"]["annotations"]["deploy.example.com/revision"] = "42"
    settings = _settings(
        image="registry.example.com/tfta:2",
        image_pull_policy="Always",
        backoff_limit=5,
        ttl_s=60,
        extra_args=("--configmap-annotation=reloader.stakater.com/match=true",),
    )
    changed = derive(workload, ask(**{ANN_RESTART: "true"}), settings=settings)
    assert changed.spec_hash == base.spec_hash
    assert changed.name == base.name
    assert changed.target.spec == base.target.spec


def _serving(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    serving: dict[str, Any] = spec["containers"][0]
    return serving


def _pod_of(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def _settings(**fields: Any) -> JobSettings:
    return JobSettings(
        **{"image": SETTINGS.image, "service_account": SETTINGS.service_account, **fields}
    )


#: one thing the measurement depends on, changed: (edit of the workload, the ask, the settings)
CHANGES: dict[str, tuple[Callable[[dict[str, Any]], None] | None, CalibrationAsk, JobSettings]] = {
    "image": (lambda w: _serving(w).update(image=SERVING_IMAGE + "-rc1"), ask(), SETTINGS),
    "cpu": (lambda w: _serving(w)["resources"]["limits"].update(cpu="3"), ask(), SETTINGS),
    "memory": (lambda w: _serving(w)["resources"]["limits"].update(memory="8Gi"), ask(), SETTINGS),
    "model": (None, ask("/models/resnet/2"), SETTINGS),
    "claim": (
        lambda w: _pod_of(w)["volumes"][0]["persistentVolumeClaim"].update(claimName="b"),
        ask(),
        SETTINGS,
    ),
    "node-selector": (lambda w: _pod_of(w).update(nodeSelector={"pool": "b"}), ask(), SETTINGS),
    "required-affinity": (
        lambda w: _pod_of(w).update(affinity=_required(["a"])),
        ask(),
        SETTINGS,
    ),
    "runtime-class": (lambda w: _pod_of(w).update(runtimeClassName="kata"), ask(), SETTINGS),
    "concurrency": (None, ask(**{ANN_CONCURRENCY: "4"}), SETTINGS),
    "objective": (None, ask(**{ANN_OBJECTIVE: "throughput"}), SETTINGS),
    "budget": (None, ask(**{ANN_BUDGET: "301"}), SETTINGS),
    "tolerations": (
        lambda w: _pod_of(w).update(tolerations=[{"key": "gpu", "operator": "Exists"}]),
        ask(),
        SETTINGS,
    ),
    "memory-request": (
        lambda w: _serving(w)["resources"]["requests"].update(memory="1Gi"),
        ask(),
        SETTINGS,
    ),
    "pod-resources": (
        lambda w: _pod_of(w).update(resources={"limits": {"memory": "16Gi"}}),
        ask(),
        SETTINGS,
    ),
    "batch": (None, ask(**{ANN_BATCH_SIZE: "8"}), SETTINGS),
    "p99": (None, ask(**{ANN_OBJECTIVE: "slo", ANN_P99_MS: "30"}), SETTINGS),
    "trial-mode": (None, ask(), _settings(extra_args=("--trial-mode=fork",))),
    "onednn": (None, ask(), _settings(extra_args=("--sweep-onednn",))),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_spec_hash_changes_with_what_is_measured(change: str) -> None:
    base = derive(pvc_deployment())
    edit, the_ask, settings = CHANGES[change]
    workload = pvc_deployment()
    if edit is not None:
        edit(workload)
    changed = derive(workload, the_ask, settings=settings)
    assert changed.spec_hash != base.spec_hash
    assert changed.name != base.name


def test_a_short_name_is_readable() -> None:
    job = derive(deployment(name="resnet"))
    assert job.name == f"tfta-resnet-server-{job.spec_hash}"
    assert job.manifest["metadata"]["name"] == job.name


def test_long_names_are_cut_to_a_valid_label_and_stay_apart() -> None:
    prefix = "recommendation-ranking-model-serving-" + "x" * 40
    one = derive(deployment(name=prefix + "-eu"))
    two = derive(deployment(name=prefix + "-us"))
    for job in (one, two):
        assert len(job.name) <= 63
        assert DNS_LABEL.match(job.name), job.name
        assert job.name.startswith("tfta-recommendation-ranking")
        assert job.name.endswith("-" + job.spec_hash)
    assert one.name != two.name


def test_a_cut_never_leaves_a_dash_before_the_hash() -> None:
    for length in range(40, 70):
        name = ("ab-" * 30)[:length].strip("-")
        job = derive(deployment(name=name))
        assert len(job.name) <= 63
        assert DNS_LABEL.match(job.name), job.name
        assert "--" not in job.name[-12:], job.name


def test_dots_in_a_workload_name_become_dashes() -> None:
    job = derive(deployment(name="resnet.v2"))
    assert DNS_LABEL.match(job.name)
    assert job.name.startswith("tfta-resnet-v2-server-")
    assert str(job.target.workload) == "deployment/resnet.v2"  # the real name where it is looked up
