"""The status result the status and format tests render."""

from __future__ import annotations

import pytest

from advisor.models import AdviceStatus, NearBestRange, ServingTarget, StatusResult
from tests.unit.render.samples import HOSTILE, advice, reader


@pytest.fixture
def result() -> StatusResult:
    """Three advice: read by two containers (one with problems), nobody, and a missing one
    whose reader's failed calibration has a reason from the cluster."""
    small = reader(
        "web-small",
        2.0,
        ("cpu-limit-differs", "its CPU limit is 2, the advice was measured under 4"),
        ("resize-restarts-nothing", "no resizePolicy restarts it on a CPU resize"),
    )
    within = NearBestRange(intra=[2, 3], inter=[1, 1], settings=2, band=0.05)
    return StatusResult(
        rows=[
            advice("spare", consumers=[], unused=True),
            advice(
                "tf-advice",
                consumers=[reader("web-ok", 4.0), small],
                unused=False,
                within_noise=within,
                range=within.describe(),
                target=ServingTarget(workload="deployment/web-ok", container="server"),
            ),
            AdviceStatus(
                name="wanted",
                namespace="ml",
                error="no ConfigMap wanted in namespace ml, but 1 container(s) require it",
                consumers=[reader("web-new", 4.0, ("advice-missing", HOSTILE))],
                unused=False,
                missing=True,
                calibration_job="tfta-web-new-0a1b2c3d4e",
                calibration_state="failed",
                calibration_reason=HOSTILE,
            ),
        ]
    )
