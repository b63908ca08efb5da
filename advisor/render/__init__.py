"""What a person reads: the text table, the sentences in the objective's terms, the heatmap and
the report file; and every ``--format`` a command offers (``formats``, over each result's
``View``: ``status``, ``plan``, ``summaries``).

May import: ``advisor.models``, ``advisor.errors`` and ``advisor.objectives`` (the objective's
terms); no decision code (``advisor.calibrate``: the result carries every statistic and verdict it
shows), no process, cluster or pipeline code (import-linter checks it), so every renderer is a
pure function of a result.
"""
