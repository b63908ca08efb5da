"""Consumers on the real cluster: a serving Deployment mounts the advice with `envFrom`. `run`
(the real CLI, with the real search over the cost model of tests/support/search_fakes in place of
TensorFlow trials, so each advice is known) writes the advice and restarts the Deployment: the
Deployment controller rolls it, the rollout completes and the new pods' environment holds the
advice. The same advice again rolls nothing; advice with other data rolls it again. `status`
audits the Deployment as the cluster has it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.cluster import ADVICE, Cluster, publish, restricted_deployment, wait_for

pytestmark = pytest.mark.e2e

SERVING = "serving"


def _serving(image: str) -> dict[str, Any]:
    return restricted_deployment(
        SERVING,
        {
            "name": "model",
            "image": image,
            "command": ["python", "-c", "import signal; signal.sigwait({signal.SIGTERM})"],
            "envFrom": [{"configMapRef": {"name": ADVICE}}],
            "resources": {
                "requests": {"cpu": "100m", "memory": "64Mi"},
                "limits": {"cpu": "500m", "memory": "256Mi"},
            },
        },
    )


def _run(
    cluster: Cluster, namespace: str, best: tuple[int, int], capsys: pytest.CaptureFixture[str]
) -> int:
    code = publish(cluster, namespace, best, "--restart", f"deployment/{SERVING}")
    capsys.readouterr()
    return code


def _rolled_out(cluster: Cluster, namespace: str) -> bool:
    dep = cluster.get(namespace, "deployment", SERVING) or {}
    st = dep.get("status", {})
    want = dep.get("spec", {}).get("replicas", 1)
    return (
        st.get("observedGeneration") == dep.get("metadata", {}).get("generation")
        and st.get("updatedReplicas") == want
        and st.get("availableReplicas") == want
        and st.get("replicas") == want
    )


def _pod_env(cluster: Cluster, namespace: str) -> dict[str, str]:
    (pod,) = [
        p
        for p in cluster.items(namespace, "pods", "-l", f"app={SERVING}")
        if not p["metadata"].get("deletionTimestamp")
    ]
    out = cluster.kubectl("-n", namespace, "exec", pod["metadata"]["name"], "--", "env")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def _generation(cluster: Cluster, namespace: str) -> int:
    return int((cluster.get(namespace, "deployment", SERVING) or {})["metadata"]["generation"])


def test_advice_reaches_the_pods_and_only_a_change_rolls_them(
    cluster: Cluster, advisor_image: str, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # the first advice comes before its consumer (an envFrom of a missing ConfigMap stops the pod)
    assert publish(cluster, namespace, (1, 1)) == 0
    capsys.readouterr()
    cluster.apply(namespace, _serving(advisor_image))
    wait_for(
        lambda: _rolled_out(cluster, namespace),
        180,
        "the serving Deployment",
        lambda: cluster.describe(namespace),
    )
    first = (cluster.get(namespace, "configmap", ADVICE) or {})["data"]
    env = _pod_env(cluster, namespace)
    assert {k: env.get(k) for k in first} == first

    # the first run that restarts stamps the advice's hash on the pod template (one rollout, as
    # `kubectl rollout restart` would); the same advice again patches nothing and rolls nothing
    assert _run(cluster, namespace, (1, 1), capsys) == 0
    wait_for(
        lambda: _rolled_out(cluster, namespace),
        180,
        "the stamped Deployment",
        lambda: cluster.describe(namespace),
    )
    before = _generation(cluster, namespace)
    assert _run(cluster, namespace, (1, 1), capsys) == 0
    assert (cluster.get(namespace, "configmap", ADVICE) or {})["data"] == first
    assert _generation(cluster, namespace) == before

    # other advice: the Deployment rolls and its new pods read the new values
    assert _run(cluster, namespace, (2, 1), capsys) == 0
    second = (cluster.get(namespace, "configmap", ADVICE) or {})["data"]
    assert second != first
    assert _generation(cluster, namespace) > before
    wait_for(
        lambda: _rolled_out(cluster, namespace),
        180,
        "the restarted Deployment",
        lambda: cluster.describe(namespace),
    )
    wait_for(
        lambda: (
            _pod_env(cluster, namespace).get("TF_NUM_INTRAOP_THREADS")
            == second["TF_NUM_INTRAOP_THREADS"]
        ),
        60,
        "the new pod's environment",
    )

    # status audits the Deployment as the cluster has it
    status = cluster.advisor("status", "--namespace", namespace, "--format", "json")
    assert status.returncode in (0, 1), status.stderr
    listed = json.dumps(json.loads(status.stdout))
    assert SERVING in listed and ADVICE in listed, status.stdout
