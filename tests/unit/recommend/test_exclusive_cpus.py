"""Whether the advice was measured on CPUs of its own (the static CPU manager's exclusive
cores), as the probe's affinity mask and quota tell it, and how it rides in the ConfigMap."""

from __future__ import annotations

import json

import pytest

from advisor.keys import PROVENANCE_ANNOTATION
from advisor.models.node import DownwardAPI
from advisor.recommend import build_recommendation, parse_configmap, render_configmap
from advisor.recommend.build import cpus_exclusive
from testkit.fakeapi.samples import FIXED_NOW, calibration_result, node_profile


@pytest.mark.parametrize(
    ("affinity", "quota", "logical", "exclusive"),
    [
        (2, 2.0, 8, True),  # static CPU manager: the mask is the whole-CPU limit
        (8, 2.0, 8, False),  # shared pool: every CPU of the node, under a quota
        (4, 4.0, 4, False),  # the whole node: nothing to tell it from a shared one
        (2, 1.5, 8, False),  # a fractional limit never gets exclusive CPUs
        (3, 2.0, 8, False),  # a cpuset, but not the limit's
        (2, None, 8, None),  # no quota to compare with
    ],
)
def test_exclusive_is_a_mask_as_large_as_the_whole_cpu_limit(
    affinity: int, quota: float | None, logical: int, exclusive: bool | None
) -> None:
    node = node_profile(affinity=affinity, quota=quota, logical=logical)
    assert cpus_exclusive(node) is exclusive


@pytest.mark.parametrize(
    ("affinity", "limit", "exclusive"),
    [
        (1, 1.0, True),  # 1.34's kubelet: exclusive CPUs, no CFS quota, the limit from the pod
        (2, 1.0, False),  # the shared pool of a 2-CPU node with a limit of 1
        (1, 1.5, False),  # a fractional limit
        (1, None, None),  # no quota and no Downward API limit: nothing to tell by
    ],
)
def test_without_a_quota_the_pods_own_cpu_limit_tells(
    affinity: int, limit: float | None, exclusive: bool | None
) -> None:
    node = node_profile(affinity=affinity, quota=None, logical=2)
    node = node.model_copy(update={"downward_api": DownwardAPI(cpu_limit_cpus=limit)})
    assert cpus_exclusive(node) is exclusive


def test_it_rides_in_the_provenance_and_older_advice_without_it_still_parses() -> None:
    result = calibration_result(node=node_profile(affinity=2, quota=2.0, logical=8))
    rec = build_recommendation(result, advisor_version="0.1.0", now=FIXED_NOW)
    assert rec.provenance.cpus_exclusive is True
    cm = render_configmap(rec, "advice", "ml")
    stored = json.loads(cm["metadata"]["annotations"][PROVENANCE_ANNOTATION])
    assert stored["cpus_exclusive"] is True
    assert parse_configmap(cm).recommendation == rec
    del stored["cpus_exclusive"]
    cm["metadata"]["annotations"][PROVENANCE_ANNOTATION] = json.dumps(stored)
    assert parse_configmap(cm).recommendation.provenance.cpus_exclusive is None
