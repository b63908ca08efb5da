"""Reading Prometheus: the serving pods' own metrics, for before-and-after verdicts on an advice.

Only this package talks to Prometheus (``client``); ``promql`` builds query text from cluster
values with every value escaped. It shares the retry policies of ``advisor.retry`` with the API
server's client, and nothing else of ``advisor.cluster``.
"""

from advisor.prometheus.client import (
    PartialAnswer,
    PrometheusClient,
    PrometheusError,
    PrometheusUnavailable,
    QueryFailed,
    QueryRefused,
    QueryTimedOut,
    Sample,
    Series,
    Settings,
)

__all__ = [
    "PartialAnswer",
    "PrometheusClient",
    "PrometheusError",
    "PrometheusUnavailable",
    "QueryFailed",
    "QueryRefused",
    "QueryTimedOut",
    "Sample",
    "Series",
    "Settings",
]
