"""What a person reads: the text table, the sentences in the objective's terms, the heatmap and
the report file; and every ``--format`` a command offers (``formats``, over each result's
``View``: ``status``, ``plan``, ``summaries``).

May import: ``advisor.models`` (and ``advisor.models_status``), ``advisor.errors`` and the
results of the decisions in ``advisor.calibrate`` (aggregated statistics, the objective's terms);
no process, cluster or pipeline code (import-linter checks it), so every renderer is a pure
function of a result.
"""
