"""Earlier days for production's judge, made from what the real cluster measured.

The judge compares an after-window with the same hours on 7-14 earlier days, which no CI run
has. The days are therefore made from the real series of the before-phase, read raw from the
Prometheus that scraped them (cAdvisor's counters of the serving container, kube-state-metrics'
owner and start-time series of its pod and ReplicaSet), with their labels as scraped: each day
replays the before-phase's own scrape-to-scrape increments, starting at a different one, across
the hours the after-windows will lie in, shifted back by whole days. The after-windows are the
live scrape. No pytest here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from testkit.realprom import openmetrics

DAY_S = 86400
#: the families copied, and their OpenMetrics type (a counter's family drops ``_total``)
FAMILIES = {
    "container_cpu_cfs_periods_total": "counter",
    "container_cpu_cfs_throttled_periods_total": "counter",
    "container_cpu_usage_seconds_total": "counter",
    "kube_pod_owner": "gauge",
    "kube_replicaset_owner": "gauge",
    "kube_pod_start_time": "gauge",
}


def selector(namespace: str, seconds: int) -> str:
    """Every copied series in ``namespace``, raw, over the last ``seconds``."""
    names = "|".join(FAMILIES)
    return f'{{__name__=~"{names}",namespace="{namespace}"}}[{seconds}s]'


def _labels(metric: Mapping[str, str]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(metric.items()) if k != "__name__" and v != "")
    return "{" + inner + "}"


def days(
    series: Sequence[Mapping[str, Any]],
    *,
    pod: str,
    replicaset: str,
    start: float,
    end: float,
    back: Sequence[int],
    interval_s: int = 5,
) -> str:
    """OpenMetrics for the days ``back`` (whole days before) over ``[start, end]`` (unix
    seconds, today's clock), from ``series`` (a range query's matrix) of ``pod``, its container
    ``model`` and ``replicaset``."""
    families: dict[str, list[str]] = {name: [] for name in FAMILIES}
    for one in series:
        metric = one["metric"]
        name = metric["__name__"]
        mine = (
            metric.get("replicaset") == replicaset
            if name == "kube_replicaset_owner"
            else metric.get("pod") == pod
            and (name.startswith("kube_") or metric.get("container") == "model")
        )
        if not mine:
            continue
        values = [(float(t), float(v)) for t, v in one["values"]]
        for n, d in enumerate(back):
            shift = d * DAY_S
            span = (start - shift, end - shift)
            families[name] += _day(
                name, values, metric, span=span, offset=n, shift=shift, interval_s=interval_s
            )
    return openmetrics(
        (name.removesuffix("_total") if FAMILIES[name] == "counter" else name, FAMILIES[name],
         lines)
        for name, lines in families.items()
        if lines
    )  # fmt: skip


def _day(
    name: str,
    values: list[tuple[float, float]],
    metric: Mapping[str, str],
    *,
    span: tuple[float, float],
    offset: int,
    shift: float,
    interval_s: int,
) -> list[str]:
    labels = _labels(metric)
    if FAMILIES[name] == "gauge":
        times = range(int(span[0]), int(span[1]), interval_s)
        # a start time is a time: the day's pod started as many days before as the day is
        value = values[-1][1] - shift if name == "kube_pod_start_time" else values[-1][1]
        return [f"{name}{labels} {value:.3f} {t}" for t in times]
    # cAdvisor stamps its own samples (every 10-15 s, whatever the scrape interval): each
    # increment is replayed over the time it took
    steps = [(tb - ta, max(0.0, b - a)) for (ta, a), (tb, b) in pairwise(values) if tb > ta]
    if not steps:
        return []
    total, at, out = values[0][1], span[0], []
    i = offset * 7
    while at < span[1]:
        took, grew = steps[i % len(steps)]
        at, total, i = at + took, total + grew, i + 1
        out.append(f"{name}{labels} {total:.6f} {at:.3f}")
    return out
