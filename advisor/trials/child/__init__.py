"""The trial child: the only code that imports TensorFlow.

It runs as its own program (``python -m advisor.trials.child.trial``, or forked from
``advisor.trials.child.forkserver``), reads one request, measures, and writes one answer. May
import: ``advisor.trials.environment`` (the names of the variables it is given),
``advisor.trials.wire`` (the request it reads), ``advisor.probe`` (its throttling counters),
``advisor.models``, ``advisor.errors`` and ``advisor.atomic`` (its answer, written whole).
"""
