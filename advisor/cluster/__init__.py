"""Writing the advice to a cluster: a thin layer over the official ``kubernetes`` client.

Only this package talks to an API server. It reads and server-side-applies ONE ConfigMap, which is
all the Role in deploy/rbac.yaml allows, and turns every HTTP outcome into a typed advisor error.
"""

from advisor.cluster.config import Connection, connect
from advisor.cluster.retry import RetryPolicy
from advisor.cluster.writer import ConfigMapWriter, PublishOutcome

__all__ = ["ConfigMapWriter", "Connection", "PublishOutcome", "RetryPolicy", "connect"]
