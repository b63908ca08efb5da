"""`down` leaves nothing behind: no process, mount, cgroup, network namespace (and with it the
bridge, the veths and kube-proxy's iptables chains), no chain on the host, no data directory.
Runs after every other e2e test (the e2e_last marker); the next session's `up` starts afresh."""

from __future__ import annotations

import subprocess

import pytest

from testkit.realcluster import cluster as realcluster
from tests.e2e.cluster import Cluster

pytestmark = [pytest.mark.e2e, pytest.mark.e2e_last]


def _host_iptables() -> str:
    return "\n".join(
        subprocess.run(
            ["iptables-save", "-t", table], capture_output=True, text=True, check=False
        ).stdout
        for table in ("nat", "filter", "mangle")
    )


def test_down_leaves_nothing_behind(cluster: Cluster) -> None:
    # kube-proxy's chains exist, inside the cluster's namespace only
    inside = subprocess.run(
        ["nsenter", f"--net={realcluster.NETNS_PATH}", "iptables-save", "-t", "nat"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "KUBE-SERVICES" in inside
    assert "KUBE-" not in _host_iptables()
    realcluster.down(log=lambda m: None)
    assert realcluster.leftovers() == []
    assert "KUBE-" not in _host_iptables()
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    assert "cni0" not in links and "tfta0" not in links
