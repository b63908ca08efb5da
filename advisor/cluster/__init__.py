"""Talking to a cluster: a thin layer over the official ``kubernetes`` client.

Only this package talks to an API server. It reads and server-side-applies ONE ConfigMap (all the
Role in deploy/rbac.yaml allows), patches the pod templates of the workloads named for a restart
(a second, opt-in rule), and lists advice ConfigMaps and the workloads and pods that may read
them, read-only, for ``status``. For ``plan`` it lists the opted-in Deployments and
StatefulSets, the ConfigMaps, claims and calibration Jobs of one namespace (``plan_lists``),
creates Jobs (deletes a failed one only to retry it, when asked: ``jobs``) and records Events on
the workloads (``events``): the planner's own Role (deploy/components/fleet, the rules a 403 names
in ``planner_role``). Every HTTP outcome becomes a typed advisor error, every call is retried
within one bound (``http.request``), every list is paged (``http.list_all``); every request is
sent without the client's generated API classes (``rest``).
"""

from advisor.cluster.config import Connection, connect
from advisor.cluster.writer import ConfigMapWriter, PublishOutcome
from advisor.retry import RetryPolicy

__all__ = ["ConfigMapWriter", "Connection", "PublishOutcome", "RetryPolicy", "connect"]
