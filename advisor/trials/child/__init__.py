"""The trial child: the only code that imports TensorFlow.

It runs as its own program (``python -m advisor.trials.child.trial``, or forked from
``advisor.trials.child.forkserver``), reads one request, measures, and writes one answer. May
import: ``advisor.trials.environment`` (the names of the variables it is given),
``advisor.trials.wire`` (the request it reads and the answer's form),
``advisor.trials.requestfile`` (the requests to replay, as the parent chose them),
``advisor.probe`` (its throttling counters), ``advisor.calibrate.percentile``, ``advisor.models``
(the subject and its inputs' source, as the parent reads them), ``advisor.errors`` and
``advisor.atomic`` (its answer, written whole).

Its modules by job: ``trial`` and ``forkserver`` (the programs), ``subjects`` (the loaders),
``builtin`` (the built-in model), ``loaded`` (what a loader returns), ``graph`` (what a model's
graph says of its inputs), ``shapes`` and ``decl`` (the shapes synthesised inputs take; no
TensorFlow), ``synthesis`` (their values), ``records``, ``rest`` (REST bodies; no TensorFlow),
``requests`` (PredictionLog, and every record bound to its signature) and ``replay``.
"""
