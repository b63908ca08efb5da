"""The Prometheus stand-in's answers for the A/B comparison's scene: each workload's throttling,
usage and p99 before and after its advice's data changed, and the per-pod throttling plan's
suggestions read."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from advisor.prometheus.queries import PERIODS, POD_START, THROTTLED, USAGE
from testkit.fakeapi.pods import TEMPLATE_HASH
from testkit.fakeprom import Answer, matrix, ranged, vector
from testkit.outputs_ab.fixed import MEASURED, NOW

#: throttled share of the pods' CFS periods (before the advice's data changed, after), by workload
THROTTLING = {
    "web-better": (0.41, 0.03),
    "web-worse": (0.05, 0.40),
    "web-same": (0.20, 0.22),
    "web-slow": (0.10, 0.10),
    "regressed": (0.05, 0.40),
    "regressed-optout": (0.05, 0.40),
    "helped": (0.40, 0.05),
}
#: p99 seconds (before, after) for the workload with a latency query
P99 = {"web-slow": (0.110, 0.190)}
#: throttled share per pod over the window, for plan's suggestions
BY_POD = {f"hot-{TEMPLATE_HASH}-a1": 0.50, f"c-{TEMPLATE_HASH}-a1": 0.60, "gone-pod": 0.90}
STEP_PERIODS = 3000.0
PERIODS_PER_WINDOW = 86400.0
#: when the pods of the before-window started (the advice the current one replaced took effect)
BEFORE_PODS_STARTED = (NOW - timedelta(days=9)).timestamp() + 60


def answer(endpoint: str, form: Mapping[str, str]) -> Answer:
    """Prometheus's answer to one query of the scene: by the workload the query names (quoted)
    and the side of the advice's data change each step falls on; constant on each side, so
    the answers depend on the query alone."""
    query = form["query"]
    if query.startswith("sum by (pod, container)"):
        throttled = THROTTLED in query
        return vector(
            *(
                ({"pod": pod, "container": "server"}, PERIODS_PER_WINDOW * (t if throttled else 1))
                for pod, t in BY_POD.items()
            )
        )
    if endpoint == "query":
        return vector(({}, 3.0)) if query.startswith("count(kube_pod_owner") else vector()
    if query.startswith(f"min({POD_START}"):
        return ranged(form, lambda t: BEFORE_PODS_STARTED)
    names = [n for n in THROTTLING if f'"{n}"' in query]
    if not names:
        return matrix()
    (name,) = names
    changed = MEASURED.timestamp()

    def value(t: float) -> float:
        after = t > changed
        if query.startswith("p99_seconds"):
            return P99.get(name, (0.1, 0.1))[after]
        if USAGE in query:
            return 1.5 if after else 2.5
        share = THROTTLING[name][after]
        return share * STEP_PERIODS if THROTTLED in query else STEP_PERIODS

    if not query.startswith("p99_seconds") and not any(
        m in query for m in (USAGE, THROTTLED, PERIODS)
    ):
        return matrix()
    return ranged(form, value)
