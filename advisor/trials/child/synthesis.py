"""Inputs synthesised for a model: values from what its graph says, in the shapes its signature
and ``--input-shape`` give, within a size cap.

Imports tensorflow: only the trial child (through ``advisor.trials.child.subjects``) imports it.

The rules (documented for users in the error messages):
- shapes as ``advisor.trials.child.shapes`` makes them (the batch first, ``--input-shape`` for
  the other unknown dimensions);
- floats are uniform in [0, 1), booleans are random; integers that index a table (an embedding,
  a gather) are spread over its rows, those looked up in a vocabulary drawn from its keys, others
  are small non-negative values (0..3); strings are serialized tf.Examples built from the
  graph's parse spec (``advisor.trials.child.graph``), or categories from its vocabulary;
- what cannot be synthesised meaningfully (raw text, image bytes) is refused in one line that
  names the model's warmup file and ``--requests``, the ways to give the model what it really
  serves; exotic dtypes are refused too;
- all inputs together may hold ``decl.MAX_INPUT_BYTES`` (refused as a batch-size problem).

Everything is drawn from one fixed-seed generator (``SEED``): every trial runs the same
computation. ``Synthesis.detail()`` says what was read, for the provenance.
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from advisor.errors import ModelError
from advisor.models.input_shape import format_input_shapes
from advisor.trials.child.decl import MAX_INPUT_BYTES, TensorDecl
from advisor.trials.child.graph import Feature, GraphFacts, Source
from advisor.trials.child.shapes import check_input_shapes, concrete_shape
from advisor.trials.requestfile import WARMUP_FILE

#: one seed for weights and inputs: every trial must run the very same computation.
SEED = 20240601

#: integers nothing in the graph bounds are drawn from [0, INT_HIGH): small enough to be valid
#: ids/indices for most models
INT_HIGH = 4

#: var-len and ragged features get from 1 to this many values per example
MAX_FEATURE_VALUES = 4
#: a dense feature of unknown length (FixedLenSequenceFeature) gets this many rows
SEQUENCE_ROWS = 3


def synthesise(
    declared: Sequence[TensorDecl],
    batch_size: int,
    *,
    where: str = "built-in model",
    graph: GraphFacts | None = None,
    input_shapes: Mapping[str, tuple[int, ...]] | None = None,
    model_path: str | None = None,
) -> tuple[dict[str, Any], str | None]:
    """Fixed-seed tensors for each declared input, by the rules in the module docstring, and
    what they were synthesised from (``Synthesis.detail``)."""
    rng = np.random.default_rng(SEED)
    given = dict(input_shapes or {})
    check_input_shapes(declared, given, where)
    shapes = {d.name: concrete_shape(d, batch_size, where, given.get(d.name)) for d in declared}
    total = 0
    for d in declared:
        itemsize = tf.as_dtype(d.dtype).size
        total += int(np.prod(shapes[d.name], dtype=np.int64)) * itemsize
    _check_size(total, batch_size, where)
    maker = Synthesis(graph, rng, where=where, model_path=model_path, input_shapes=given)
    values = {d.name: maker.values(d, shapes[d.name]) for d in declared}
    # strings (serialized tf.Examples) are sized once made
    _check_size(total + sum(_string_bytes(v) for v in values.values()), batch_size, where)
    return {name: tf.constant(v) for name, v in values.items()}, maker.detail()


def _check_size(total: int, batch_size: int, where: str) -> None:
    if total > MAX_INPUT_BYTES:
        raise ModelError(
            f"{where}: batch size {batch_size} makes the inputs {total / 2**30:.1f} GiB; "
            f"limit {MAX_INPUT_BYTES // 2**30} GiB"
        )


def _string_bytes(values: Any) -> int:
    if getattr(getattr(values, "dtype", None), "kind", "") != "O":
        return 0
    return sum(len(v) for v in values.reshape(-1))


def describe_tensors(tensors: dict[str, Any]) -> dict[str, str]:
    """name -> "float32[1,224,224,3]", as the tensors were really fed."""
    return {
        name: f"{t.dtype.name}[{','.join(str(int(d)) for d in t.shape)}]"
        for name, t in tensors.items()
    }


def requests_hint(model_path: str | None) -> str:
    """How to give a model what it really serves: its warmup file (a SavedModel's, as TF Serving
    replays it) or ``--requests``. Short: the line naming the model ends with it."""
    if model_path is None:
        return "give recorded requests with --requests FILE"
    return f"give recorded requests: the model's {WARMUP_FILE} or --requests FILE"


class Synthesis:
    """Values for one model's inputs from what its graph says, noting what it used."""

    def __init__(
        self,
        facts: GraphFacts | None,
        rng: np.random.Generator,
        *,
        where: str,
        model_path: str | None = None,
        input_shapes: Mapping[str, tuple[int, ...]] | None = None,
    ) -> None:
        self.facts = facts or GraphFacts()
        self.rng = rng
        self.where = where
        self.model_path = model_path
        self.input_shapes = dict(input_shapes or {})
        self._parsed: dict[str, int] = {}
        self._tables: dict[str, int] = {}
        self._vocabularies: dict[str, int] = {}

    def values(self, d: TensorDecl, shape: tuple[int, ...]) -> Any:
        """A numpy array of ``shape`` for input ``d``; ModelError for what means nothing made up."""
        dtype = tf.as_dtype(d.dtype)
        slot: tuple[Source, str] = ("input", d.name)
        if dtype == tf.string:
            return self._strings(d, shape)
        if dtype.is_bool:
            return self.rng.random(shape) < 0.5
        if dtype.is_floating:
            return self.rng.random(shape).astype(dtype.as_numpy_dtype)
        if dtype.is_integer:
            return self._integers(slot, d.name, shape, int(n_max(dtype))).astype(
                dtype.as_numpy_dtype
            )
        raise ModelError(
            f"{self.where}: input {d.name!r} has dtype {dtype.name}, which cannot be synthesised"
        )

    def _integers(self, slot: tuple[Source, str], label: str, shape: Any, top: int) -> Any:
        keys = self.facts.vocab.get(slot)
        if keys is not None and keys.dtype.kind in "iu":
            self._vocabularies[label] = len(keys)
            return self.rng.choice(keys, size=shape)
        rows = self.facts.rows.get(slot)
        if rows is not None:
            rows = min(rows, top)
            self._tables[label] = rows
            return spread(rows, shape, self.rng)
        return self.rng.integers(0, INT_HIGH, size=shape)

    def _strings(self, d: TensorDecl, shape: tuple[int, ...]) -> Any:
        slot: tuple[Source, str] = ("input", d.name)
        features = self.facts.parse_specs.get(d.name)
        if features is not None:
            for feature in features:
                if ("feature", feature.key) in self.facts.images:
                    raise ModelError(
                        f"{self.where}: tf.Example feature {feature.key!r} of input {d.name!r} "
                        "is encoded image bytes, which cannot be synthesised meaningfully; "
                        f"{requests_hint(self.model_path)}"
                    )
            self._parsed[d.name] = len(features)
            count = int(np.prod(shape, dtype=np.int64))
            examples = [self._example(features) for _ in range(count)]
            return np.array(examples, dtype=object).reshape(shape)
        if slot in self.facts.images:
            raise ModelError(
                f"{self.where}: input {d.name!r} is encoded image bytes (decoded in the graph), "
                f"which cannot be synthesised meaningfully; {requests_hint(self.model_path)}"
            )
        if slot in self.facts.categories:
            return np.array(self._words(slot, d.name, int(np.prod(shape))), dtype=object).reshape(
                shape
            )
        raise ModelError(
            f"{self.where}: input {d.name!r} is raw text (not parsed as tf.Example nor looked "
            f"up as a category), which cannot be synthesised meaningfully; "
            f"{requests_hint(self.model_path)}"
        )

    def _words(self, slot: tuple[Source, str], label: str, count: int) -> list[bytes]:
        keys = self.facts.vocab.get(slot)
        if keys is not None and keys.dtype.kind in "SOU":
            self._vocabularies[label] = len(keys)
            chosen = self.rng.choice(keys, size=count)
            return [k if isinstance(k, bytes) else str(k).encode() for k in chosen]
        letters = np.array(list(string.ascii_lowercase))
        return [
            "".join(self.rng.choice(letters, size=int(self.rng.integers(3, 9)))).encode()
            for _ in range(count)
        ]

    def _example(self, features: Sequence[Feature]) -> bytes:
        example = tf.train.Example()
        for feature in features:
            slot: tuple[Source, str] = ("feature", feature.key)
            if feature.kind == "dense":
                shape = feature.shape
                rows = SEQUENCE_ROWS if shape and shape[0] is None else 1
                count = rows * math.prod(int(d or 1) for d in shape[1 if rows > 1 else 0 :])
            else:
                count = int(self.rng.integers(1, MAX_FEATURE_VALUES + 1))
            target = example.features.feature[feature.key]
            if feature.dtype == "string":
                target.bytes_list.value.extend(self._words(slot, feature.key, count))
            elif feature.dtype == "int64":
                values = self._integers(slot, feature.key, (count,), 2**63 - 1)
                target.int64_list.value.extend(int(v) for v in values)
            else:
                target.float_list.value.extend(float(v) for v in self.rng.random(count))
        return bytes(example.SerializeToString())

    def detail(self) -> str | None:
        """What synthesis read, for the provenance (``InputsSource.detail``): ``parse spec (5
        features), table sizes (user_id<1000000), input-shape input_ids=128``; None where it read
        nothing but the signature."""
        parts = []
        if self._parsed:
            if len(self._parsed) == 1:
                (count,) = self._parsed.values()
                parts.append(f"parse spec ({count} features)")
            else:
                inner = ", ".join(f"{k}: {v} features" for k, v in sorted(self._parsed.items()))
                parts.append(f"parse spec ({inner})")
        if self._tables:
            inner = ", ".join(f"{k}<{v}" for k, v in sorted(self._tables.items()))
            parts.append(f"table sizes ({inner})")
        if self._vocabularies:
            inner = ", ".join(f"{k}: {v} keys" for k, v in sorted(self._vocabularies.items()))
            parts.append(f"vocabularies ({inner})")
        if self.input_shapes:
            parts.append(f"input-shape {format_input_shapes(self.input_shapes)}")
        return ", ".join(parts) or None


def n_max(dtype: Any) -> int:
    """The largest value of an integer dtype."""
    return int(tf.as_dtype(dtype).max)


def spread(rows: int, shape: Any, rng: np.random.Generator) -> Any:
    """Integers in [0, rows) spread over the whole range (one per stratum, shuffled): even a
    handful of ids reaches across a 1M-row table, and every trial draws the same ones."""
    count = int(np.prod(shape, dtype=np.int64))
    if count == 0:
        return np.zeros(shape, dtype=np.int64)
    positions = ((np.arange(count) + rng.random(count)) * (rows / count)).astype(np.int64)
    return rng.permutation(np.minimum(positions, rows - 1)).reshape(shape)
