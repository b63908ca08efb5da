"""advisor.kubenames: the names and label values Kubernetes accepts (DNS-1123 subdomains and
labels, label keys and values)."""

from __future__ import annotations

import pytest

from advisor.kubenames import dns1123_label_problem, dns1123_subdomain_problem, label_problem


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("tf-advice", True),
        ("a.b-c.d", True),
        ("a" * 253, True),  # Kubernetes limits the whole name only
        ("a" * 254, False),
        (".".join(["a" * 63] * 3) + ".b", True),
        ("Tf", False),
        ("-a", False),
        ("a..b", False),
        ("", False),
    ],
)
def test_dns1123_subdomain(name: str, ok: bool) -> None:
    assert (dns1123_subdomain_problem(name) is None) is ok


@pytest.mark.parametrize(
    ("name", "ok"), [("ml", True), ("a" * 63, True), ("a" * 64, False), ("a.b", False)]
)
def test_dns1123_label(name: str, ok: bool) -> None:
    assert (dns1123_label_problem(name) is None) is ok


def test_node_label_rules() -> None:
    assert label_problem("topology.kubernetes.io/zone", "eu-west-1a") is None
    assert label_problem("pool", "") is None
    assert label_problem("pool", "a b") is not None
    assert label_problem("Bad_Prefix/x", "y") is not None
