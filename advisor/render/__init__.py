"""What a person reads: the text table, the sentences in the objective's terms, the heatmap and
the report file.

May import: ``advisor.models``, ``advisor.errors`` and the results of the decisions in
``advisor.calibrate`` (aggregated statistics, the objective's terms); no process, cluster or
pipeline code (import-linter checks it), so every renderer is a pure function of a result.
"""
