"""``cleanup``: delete the named advice ConfigMaps the advisor wrote (the uninstall hook).

Only the ConfigMaps named, and of those only the ones carrying the advisor's labels: one of the
same name that someone else wrote is kept and reported, one that is gone already is fine
(``advisor.cluster.cleanup``). Someone waits on it (``helm uninstall``, or a person), so an API
server that cannot be connected to is given up after seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.pipeline.source import check_names

if TYPE_CHECKING:
    from advisor.cluster.cleanup import CleanupOutcome


def cleanup(
    configmaps: Sequence[str],
    namespace: str,
    *,
    kubeconfig: Path | None = None,
    dry_run: bool = False,
) -> list[CleanupOutcome]:
    """Each of ``configmaps`` in ``namespace`` deleted if it is an advice (``dry_run``: asked of
    the API server only); the outcome of each, in order. Names are checked before any call."""
    from advisor.cluster import RetryPolicy, connect
    from advisor.cluster.cleanup import delete_advice

    check_names(namespace=namespace)
    for name in configmaps:
        check_names(configmap=name)
    return delete_advice(
        connect(kubeconfig),
        namespace,
        list(configmaps),
        policy=RetryPolicy.interactive(),
        dry_run=dry_run,
    )
