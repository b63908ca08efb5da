"""The advice's consumers: which containers read an advice, and whether it still fits them.

Pure functions over the Kubernetes objects ``advisor.cluster.inventory`` lists, read once into
the views of ``advisor.models.kube`` where they are listed, so every check is tested without a
cluster. May import: ``advisor.recommend`` (the advice as parsed), ``advisor.models``,
``advisor.keys`` and ``advisor.errors``; never a cluster or Prometheus client (an import-linter
contract): ``status`` in ``advisor.pipeline`` joins them with the cluster's lists.
"""
