"""The e2e tier: the real single-node cluster of testkit/realcluster, brought up once a session
(built from the official sources on first use, cached outside the checkout), the advisor's image
imported into its containerd, and taken down at the end unless TFTA_E2E_KEEP=1.

Root only (network namespace, cgroups, mounts): elsewhere the tier skips with the reason, and fails
on CI (tests/support/real_parts.py).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from testkit.realcluster import cluster as realcluster
from testkit.realcluster import images as realimages
from testkit.realcluster import layout as L
from tests.e2e.cluster import ADVISOR_IMAGE, Cluster
from tests.support.images import PODMAN, build_image, podman_missing
from tests.support.real_parts import missing_real_part


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # production's workload is set up first and judged late, so that its minutes of after-window
    # pass while the other tests run; the test that takes the cluster down and checks what is
    # left runs last
    first = [i for i in items if i.get_closest_marker("e2e_first")]
    late = [i for i in items if i.get_closest_marker("e2e_late")]
    last = [i for i in items if i.get_closest_marker("e2e_last")]
    rest = [i for i in items if i not in (*first, *late, *last)]
    items[:] = [*first, *rest, *late, *last]


def pytest_configure(config: pytest.Config) -> None:
    for name, what in (
        ("e2e_first", "runs before every other e2e test"),
        ("e2e_late", "runs after every other e2e test but the last"),
        ("e2e_last", "runs after every other e2e test (takes the cluster down)"),
    ):
        config.addinivalue_line("markers", f"{name}: {what}")


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    if os.geteuid() != 0:
        missing_real_part("the real cluster runs as root (network namespace, cgroups, mounts)")
    if not realcluster.status()["ready"] and realcluster.leftovers():
        # what an earlier run left (a machine restarted under it, a run killed): start afresh
        realcluster.down(log=lambda m: None)
    try:
        kubeconfig = realcluster.up(log=lambda m: print(f"realcluster: {m}"))
    except realcluster.ClusterError as exc:
        realcluster.down(log=lambda m: None)
        pytest.fail(f"the real cluster did not come up: {exc}")
    yield Cluster(kubeconfig)
    if os.environ.get("TFTA_E2E_KEEP") != "1" and realcluster.NETNS_PATH.exists():
        realcluster.down(log=lambda m: None)


@pytest.fixture(scope="session")
def advisor_image(cluster: Cluster) -> str:
    """The advisor's image (`make image`, podman), imported into the node's containerd."""
    why = podman_missing()
    if why:
        missing_real_part(why)
    if os.environ.get("TFTA_E2E_REUSE_IMAGE") == "1" and _podman_has(ADVISOR_IMAGE):
        # iterating on the e2e tests alone: the image as the last build left it
        tag = ADVISOR_IMAGE
    else:
        tag = build_image()
    assert tag == ADVISOR_IMAGE, tag
    realimages.import_from_podman(L.layout(), tag, PODMAN)
    return tag


def _podman_has(ref: str) -> bool:
    return (
        subprocess.run(
            [*PODMAN, "image", "exists", ref], capture_output=True, check=False
        ).returncode
        == 0
    )


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[str]:
    """A namespace of the test's own, Pod Security `restricted` enforced, deleted afterwards."""
    name = cluster.namespace("e2e")
    yield name
    cluster.delete_namespace(name)
