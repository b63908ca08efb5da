"""The advice's consumers: which containers read an advice, and whether it still fits them.

Pure functions over the Kubernetes objects ``advisor.cluster.inventory`` lists, read once into
the views of ``advisor.models.kube`` where they are listed, so every check is tested without a
cluster. May import: ``advisor.recommend`` (the advice as
parsed), the constants of ``advisor.cluster.workloads``, ``advisor.models`` and ``advisor.errors``;
``status`` in ``advisor.pipeline`` joins them with the cluster's lists.
"""
