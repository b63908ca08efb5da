"""Inputs synthesised from what the model's graph says about them, not from the signature alone.

Imports tensorflow: only the trial child (through ``advisor.trials.child.subjects``) imports it.

A signature says dtypes and shapes; the graph behind it says what the values mean, and a model
fed values it never sees in production measures a different computation (the same four rows of
a 1M-row table, strings it refuses). So before synthesising, ``read_graph`` follows every input
through the signature's graph and the functions it calls (``StatefulPartitionedCall`` and the
like, control-flow branches too) and notes where it goes:

- into the ``serialized`` input of ``ParseExample``/``ParseExampleV2``/``ParseSingleExample``:
  the input takes serialized ``tf.Example``s, built from the parse spec found there (every
  dense feature with its dtype and shape, var-len and ragged features with a few values each);
- into the indices of a gather (``ResourceGather``, ``GatherV2`` on axis 0, what
  ``tf.nn.embedding_lookup`` and Keras' ``Embedding`` become) on a variable or constant whose
  first dimension is the table's size: integers spread over ``[0, rows)``;
- into the keys of a lookup table (``LookupTableFindV2``, however the table was initialised:
  constants, an asset vocabulary file): values drawn from the table's own keys, read from the
  loaded table itself;
- into an image decoder (``DecodeJpeg``, ``DecodePng``, ``DecodeImage``...): encoded image bytes;
- a string input that is none of the above, nor a category (hashed or looked up as it is), is
  raw text.

Parse features are followed the same way, so a feature looked up in a vocabulary gets its keys
and an id feature its table's range. What cannot be synthesised meaningfully (raw text, image
bytes) is refused in one line that names the model's warmup file and ``--requests``, the ways to
give the model what it really serves.

Everything is drawn from the caller's fixed-seed generator: every trial runs the same
computation. ``Synthesis.description()`` says what was read, for the provenance.
"""

from __future__ import annotations

import math
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import tensorflow as tf

from advisor.errors import ModelError
from advisor.models.input_shape import format_input_shapes
from advisor.trials.requestfile import WARMUP_FILE

if TYPE_CHECKING:
    from advisor.trials.child.decl import TensorDecl


#: integers nothing in the graph bounds are drawn from [0, INT_HIGH): small enough to be valid
#: ids/indices for most models
INT_HIGH = 4

#: var-len and ragged features get from 1 to this many values per example
MAX_FEATURE_VALUES = 4
#: a dense feature of unknown length (FixedLenSequenceFeature) gets this many rows
SEQUENCE_ROWS = 3

_PARSE_OPS = frozenset({"ParseExample", "ParseExampleV2", "ParseSingleExample"})
_IMAGE_OPS = frozenset(
    {
        "DecodeJpeg",
        "DecodeAndCropJpeg",
        "DecodePng",
        "DecodeImage",
        "DecodeBmp",
        "DecodeGif",
        "DecodeWebP",
    }
)
_LOOKUP_OPS = frozenset({"LookupTableFindV2", "LookupTableFind"})
#: a string looked up as it is in these is a category, not text
_HASH_OPS = frozenset({"StringToHashBucketFast", "StringToHashBucketStrong", "StringToHashBucket"})
#: calls whose function's arguments are the call's inputs, one for one, outputs likewise
_CALL_OPS = frozenset({"StatefulPartitionedCall", "PartitionedCall"})
#: control flow: the branches' (or bodies') arguments are the op's inputs after ``skip`` of them
_FLOW_OPS: dict[str, tuple[tuple[str, ...], int]] = {
    "If": (("then_branch", "else_branch"), 1),
    "StatelessIf": (("then_branch", "else_branch"), 1),
    "While": (("cond", "body"), 0),
    "StatelessWhile": (("cond", "body"), 0),
    "Case": (("branches",), 1),
    "StatelessCase": (("branches",), 1),
}
#: carry their input's shape, not its values
_SHAPE_OPS = frozenset({"Shape", "ShapeN", "Size", "Rank"})
#: move values without changing them: a string that reaches a lookup only through these is
#: looked up as it was given
_PASS_OPS = frozenset(
    {
        "Identity",
        "IdentityN",
        "Snapshot",
        "Reshape",
        "ExpandDims",
        "Squeeze",
        "StridedSlice",
        "Slice",
        "ConcatV2",
        "Pack",
        "Unpack",
        "Transpose",
        "Tile",
        "GatherV2",
        "SparseReshape",
        "SparseFillEmptyRows",
        "Unique",
        "Placeholder",
    }
    | _CALL_OPS
)
#: follow a value back to the variable or constant it was read from
_READ_OPS = frozenset({"Identity", "Snapshot", "ReadVariableOp"})

Source = Literal["input", "feature"]


@dataclass(frozen=True)
class _Label:
    """A value that came from a signature input or a parse feature; ``direct``: unchanged."""

    source: Source
    name: str
    direct: bool = True


Labels = frozenset[_Label]
_NONE: Labels = frozenset()


@dataclass(frozen=True)
class Feature:
    """One feature of a tf.Example parse spec."""

    key: str
    kind: Literal["dense", "varlen", "ragged"]
    dtype: str
    #: a dense feature's shape per example (None: a FixedLenSequenceFeature's unknown length)
    shape: tuple[int | None, ...] = ()


@dataclass(frozen=True)
class _Origin:
    """Where a table comes from: a captured resource (read at run time) or a constant's shape."""

    handle: Any = None
    shape: tuple[int, ...] | None = None


@dataclass
class GraphFacts:
    """What the graph says about the inputs (and parse features), by ``(source, name)``."""

    #: input name -> the features of the tf.Examples it takes
    parse_specs: dict[str, list[Feature]] = field(default_factory=dict)
    #: reach an image decoder
    images: set[tuple[Source, str]] = field(default_factory=set)
    #: the smallest table each one indexes (rows)
    rows: dict[tuple[Source, str], int] = field(default_factory=dict)
    #: the keys of a lookup table each one is looked up in
    vocab: dict[tuple[Source, str], np.ndarray] = field(default_factory=dict)
    #: looked up or hashed as given: a category, not text
    categories: set[tuple[Source, str]] = field(default_factory=set)


def read_graph(function: Any, declared: Sequence[TensorDecl]) -> GraphFacts:
    """Follow each input of ``function`` (a ConcreteFunction; its first inputs are ``declared``,
    in order) through its graph and the functions it calls.

    Only integers and strings have values the graph can say anything about: a model of float
    inputs alone is not read (a big graph takes a tenth of a second, paid by every trial)."""
    if not any(tf.as_dtype(d.dtype).is_integer or d.dtype == "string" for d in declared):
        return GraphFacts()
    input_names = [d.name for d in declared]
    graph = function.graph
    try:
        captures = {internal.op.name: external for external, internal in graph.captures}
        inputs = {t.op.name: name for t, name in zip(function.inputs, input_names, strict=False)}
        graph_def = graph.as_graph_def()
        reader = _Reader(graph_def.library, captures)
        reader.run_top(graph_def.node, inputs)
    except Exception:  # a graph this reader cannot follow says nothing: the signature's rules
        return GraphFacts()
    return reader.facts


class _Body:
    """A graph's or a function's nodes, and how its tensor references read."""

    def __init__(self, nodes: Iterable[Any], args: Sequence[str], rets: Sequence[str]) -> None:
        self.nodes = list(nodes)
        self.by_name = {n.name: n for n in self.nodes}
        self.args = list(args)
        self.rets = list(rets)
        self.top = not args and not rets

    def split(self, ref: str) -> tuple[str, str | None, int]:
        """``node:N`` (a graph) or ``node:out:i`` / ``arg`` (a function) -> name, out, index."""
        parts = ref.split(":")
        if self.top:
            return parts[0], None, int(parts[1]) if len(parts) > 1 else 0
        if len(parts) == 1:
            return parts[0], None, 0
        return parts[0], parts[1], int(parts[2]) if len(parts) > 2 else 0


@dataclass
class _Frame:
    body: _Body
    arg_labels: dict[str, Labels]
    arg_origins: dict[str, _Origin | None]
    labels: dict[str, Labels] = field(default_factory=dict)
    #: per-output labels of parse ops and calls: (out name or None, index) -> labels
    outputs: dict[str, dict[tuple[str | None, int], Labels]] = field(default_factory=dict)


class _Reader:
    def __init__(self, library: Any, captures: Mapping[str, Any]) -> None:
        self.functions = {f.signature.name: f for f in library.function}
        self.captures = captures
        self.facts = GraphFacts()
        self._memo: dict[tuple[Any, ...], list[Labels]] = {}
        self._active: set[str] = set()
        self._runtime: dict[tuple[int, str], Any] = {}

    # ---------------------------------------------------------------------------------------------
    # walking

    def run_top(self, nodes: Iterable[Any], inputs: Mapping[str, str]) -> None:
        body = _Body(nodes, (), ())
        frame = _Frame(body, {}, {})
        for node in body.nodes:
            if node.op == "Placeholder" and node.name in inputs:
                frame.labels[node.name] = frozenset({_Label("input", inputs[node.name])})
        self._settle(frame)

    def _call(self, name: str, labels: list[Labels], origins: list[_Origin | None]) -> list[Labels]:
        """Analyse function ``name`` with its arguments' labels; its outputs' labels."""
        function = self.functions.get(name)
        if function is None or name in self._active:
            return []
        key = (name, tuple(labels), tuple(_origin_key(o) for o in origins))
        if key in self._memo:
            return self._memo[key]
        arg_names = [a.name for a in function.signature.input_arg]
        rets = [function.ret[a.name] for a in function.signature.output_arg]
        body = _Body(function.node_def, arg_names, rets)
        frame = _Frame(
            body,
            dict(zip(arg_names, labels, strict=False)),
            dict(zip(arg_names, origins, strict=False)),
        )
        self._active.add(name)
        try:
            self._settle(frame)
        finally:
            self._active.discard(name)
        result = [self._labels(frame, ref) for ref in rets]
        self._memo[key] = result
        return result

    def _settle(self, frame: _Frame) -> None:
        """Label every node from its inputs until nothing changes (node order is usually, not
        always, topological), then note where the labelled values end up."""
        for _ in range(64):
            changed = False
            for node in frame.body.nodes:
                if frame.body.top and node.op == "Placeholder":
                    continue
                new = self._node_labels(frame, node)
                if new != frame.labels.get(node.name, _NONE):
                    frame.labels[node.name] = new
                    changed = True
            if not changed:
                break
        for node in frame.body.nodes:
            self._note(frame, node)

    def _data_inputs(self, node: Any) -> list[str]:
        return [ref for ref in node.input if not ref.startswith("^")]

    def _labels(self, frame: _Frame, ref: str) -> Labels:
        name, out, index = frame.body.split(ref)
        if name in frame.arg_labels:
            return frame.arg_labels[name]
        per_output = frame.outputs.get(name)
        if per_output is not None and (out, index) in per_output:
            return per_output[(out, index)]
        return frame.labels.get(name, _NONE)

    def _node_labels(self, frame: _Frame, node: Any) -> Labels:
        inputs = self._data_inputs(node)
        if node.op in _SHAPE_OPS:
            return _NONE
        if node.op in _PARSE_OPS:
            spec = _parse_spec(frame, node)
            if spec is None:
                return _union(self._labels(frame, r) for r in inputs[:1])
            features, outputs = spec
            frame.outputs[node.name] = {
                slot: frozenset({_Label("feature", key)}) for slot, key in outputs.items()
            }
            return frozenset(_Label("feature", f.key) for f in features)
        if node.op in _CALL_OPS:
            labels = [self._labels(frame, r) for r in inputs]
            origins = [self._origin(frame, r) for r in inputs]
            results = self._call(node.attr["f"].func.name, labels, origins)
            frame.outputs[node.name] = {}
            for index, result in enumerate(results):
                frame.outputs[node.name][(None, index)] = result
                frame.outputs[node.name][("output", index)] = result
            return _union(results)
        if node.op in _FLOW_OPS:
            attrs, skip = _FLOW_OPS[node.op]
            labels = [self._labels(frame, r) for r in inputs[skip:]]
            origins = [self._origin(frame, r) for r in inputs[skip:]]
            for attr in attrs:
                value = node.attr[attr]
                names = [f.name for f in value.list.func] or [value.func.name]
                for branch in names:
                    self._call(branch, labels, origins)
        merged = _union(self._labels(frame, r) for r in inputs)
        if node.op in _PASS_OPS:
            return merged
        return frozenset(_Label(lab.source, lab.name, False) for lab in merged)

    def _origin(self, frame: _Frame, ref: str) -> _Origin | None:
        """The variable, table or constant a resource or a read value comes from."""
        name, _out, _index = frame.body.split(ref)
        node = frame.body.by_name.get(name)
        for _ in range(64):
            if node is None or node.op not in _READ_OPS or not node.input:
                break
            name, _out, _index = frame.body.split(node.input[0])
            node = frame.body.by_name.get(name)
        if name in frame.arg_origins:
            return frame.arg_origins[name]
        if node is None:
            return None
        dims: Any = None
        if node.op == "Const":
            dims = node.attr["value"].tensor.tensor_shape.dim
        elif node.op in ("VarHandleOp", "VariableV2"):
            dims = node.attr["shape"].shape.dim
        if dims is not None:
            return _Origin(shape=tuple(int(d.size) for d in dims))
        if frame.body.top and node.op == "Placeholder" and name in self.captures:
            return _Origin(handle=self.captures[name])
        return None

    # ---------------------------------------------------------------------------------------------
    # what the values meet

    def _note(self, frame: _Frame, node: Any) -> None:
        inputs = self._data_inputs(node)
        if not inputs:
            return
        first = self._labels(frame, inputs[0])
        facts = self.facts
        if node.op in _PARSE_OPS:
            self._note_parse(frame, node, first)
        elif node.op in _IMAGE_OPS:
            facts.images.update((lab.source, lab.name) for lab in first)
        elif node.op in _HASH_OPS:
            facts.categories.update((lab.source, lab.name) for lab in first if lab.direct)
        elif node.op in _LOOKUP_OPS and len(inputs) >= 2:
            self._note_lookup(frame, node, inputs)
        elif node.op in ("ResourceGather", "GatherV2", "Gather") and len(inputs) >= 2:
            self._note_gather(frame, node, inputs)

    def _note_parse(self, frame: _Frame, node: Any, serialized: Labels) -> None:
        spec = _parse_spec(frame, node)
        if spec is None:
            return
        for label in serialized:
            if label.source == "input":
                known = self.facts.parse_specs.setdefault(label.name, [])
                have = {f.key for f in known}
                known.extend(f for f in spec[0] if f.key not in have)

    def _note_lookup(self, frame: _Frame, node: Any, inputs: Sequence[str]) -> None:
        keys = self._table_keys(frame, node, inputs[0])
        for label in self._labels(frame, inputs[1]):
            if label.direct:
                self.facts.categories.add((label.source, label.name))
            if keys is not None and len(keys):
                self.facts.vocab.setdefault((label.source, label.name), keys)

    def _note_gather(self, frame: _Frame, node: Any, inputs: Sequence[str]) -> None:
        if node.op == "GatherV2" and _const_value(frame, inputs[2:3]) not in (0, None):
            return  # gathers along another axis: its size is not a table's
        rows = self._rows(self._origin(frame, inputs[0]))
        if rows is None or rows < 1:
            return
        for label in self._labels(frame, inputs[1]):
            slot = (label.source, label.name)
            self.facts.rows[slot] = min(rows, self.facts.rows.get(slot, rows))

    def _rows(self, origin: _Origin | None) -> int | None:
        if origin is None:
            return None
        if origin.shape is not None:
            return origin.shape[0] if origin.shape and origin.shape[0] > 0 else None
        shape = self._read(origin.handle, "shape", lambda h: tf.raw_ops.VariableShape(input=h))
        return int(shape[0]) if shape is not None and len(shape) else None

    def _table_keys(self, frame: _Frame, node: Any, ref: str) -> np.ndarray | None:
        origin = self._origin(frame, ref)
        if origin is None or origin.handle is None:
            return None
        key_type = tf.as_dtype(node.attr["Tin"].type)
        value_type = tf.as_dtype(node.attr["Tout"].type)

        def export(handle: Any) -> Any:
            keys, _ = tf.raw_ops.LookupTableExportV2(
                table_handle=handle, Tkeys=key_type, Tvalues=value_type
            )
            return keys

        keys = self._read(origin.handle, "keys", export)
        return None if keys is None else np.sort(keys.reshape(-1))

    def _read(self, handle: Any, what: str, read: Any) -> Any:
        """A value read from a loaded resource at run time (once), None if it cannot be."""
        key = (id(handle), what)
        if key not in self._runtime:
            try:
                self._runtime[key] = np.asarray(read(handle).numpy())
            except Exception:  # not that kind of resource: nothing to learn from it
                self._runtime[key] = None
        return self._runtime[key]


def _origin_key(origin: _Origin | None) -> Any:
    """An origin as a memo key: the same resource (a tensor handle is not hashable) or shape."""
    if origin is None:
        return None
    return (None if origin.handle is None else id(origin.handle), origin.shape)


def _union(groups: Iterable[Labels]) -> Labels:
    out: set[_Label] = set()
    for group in groups:
        out |= group
    return frozenset(out)


def _const_value(frame: _Frame, refs: Sequence[str]) -> Any:
    """The value of the constant behind ``refs[0]`` (through Identity), None if it is none."""
    if not refs:
        return None
    ref = refs[0]
    for _ in range(16):
        name, _out, _index = frame.body.split(ref)
        node = frame.body.by_name.get(name)
        if node is None:
            return None
        if node.op == "Identity" and node.input:
            ref = node.input[0]
            continue
        if node.op != "Const":
            return None
        value = tf.make_ndarray(node.attr["value"].tensor)
        if value.dtype.kind in "SO":
            return [v.decode() if isinstance(v, bytes) else str(v) for v in value.reshape(-1)]
        return value.item() if value.size == 1 and value.ndim == 0 else value
    return None


_Slot = tuple[str | None, int]


def _parse_spec(frame: _Frame, node: Any) -> tuple[list[Feature], dict[_Slot, str]] | None:
    """The features a parse op reads, and which of its outputs holds which feature's values;
    None when its keys are not constants of the graph."""
    attr = node.attr
    inputs = [r for r in node.input if not r.startswith("^")]
    dense_types = [tf.as_dtype(t).name for t in attr["Tdense"].list.type]
    sparse_types = [tf.as_dtype(t).name for t in attr["sparse_types"].list.type]
    dense_shapes = [
        tuple(None if d.size < 0 else int(d.size) for d in s.dim)
        for s in attr["dense_shapes"].list.shape
    ]
    ragged_types: list[str] = []
    if node.op == "ParseExampleV2":
        sparse_keys = _const_value(frame, inputs[2:3])
        dense_keys = _const_value(frame, inputs[3:4])
        ragged_keys = _const_value(frame, inputs[4:5])
        ragged_types = [tf.as_dtype(t).name for t in attr["ragged_value_types"].list.type]
    elif node.op == "ParseExample":
        n_sparse, n_dense = int(attr["Nsparse"].i), int(attr["Ndense"].i)
        sparse_keys = [_first(_const_value(frame, [r])) for r in inputs[2 : 2 + n_sparse]]
        dense_keys = [
            _first(_const_value(frame, [r])) for r in inputs[2 + n_sparse : 2 + n_sparse + n_dense]
        ]
        ragged_keys = []
    else:  # ParseSingleExample: the keys are attributes
        sparse_keys = [k.decode() for k in attr["sparse_keys"].list.s]
        dense_keys = [k.decode() for k in attr["dense_keys"].list.s]
        ragged_keys = []
    keys = (sparse_keys, dense_keys, ragged_keys)
    if any(not isinstance(k, list) or None in k for k in keys):
        return None
    if (len(sparse_keys), len(dense_keys), len(ragged_keys)) != (
        len(sparse_types),
        len(dense_types),
        len(ragged_types),
    ):
        return None
    features = [Feature(k, "varlen", t) for k, t in zip(sparse_keys, sparse_types, strict=True)]
    features += [
        Feature(k, "dense", t, s)
        for k, t, s in zip(dense_keys, dense_types, dense_shapes, strict=False)
    ]
    features += [Feature(k, "ragged", t) for k, t in zip(ragged_keys, ragged_types, strict=True)]
    outputs: dict[_Slot, str] = {}
    flat = 0
    groups = (
        ("sparse_indices", sparse_keys),
        ("sparse_values", sparse_keys),
        ("sparse_shapes", sparse_keys),
        ("dense_values", dense_keys),
        ("ragged_values", ragged_keys),
        ("ragged_row_splits", ragged_keys),
    )
    for out_name, group in groups:
        for index, key in enumerate(group):
            outputs[(out_name, index)] = key
            outputs[(None, flat)] = key
            flat += 1
    return features, outputs


def _first(value: Any) -> str | None:
    if isinstance(value, list) and len(value) == 1:
        return str(value[0])
    return None


# --------------------------------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------------------------------


def check_input_shapes(
    declared: Sequence[TensorDecl], given: Mapping[str, tuple[int, ...]], where: str
) -> None:
    """``--input-shape`` names only inputs the signature has, whose shapes it leaves open, and
    every input with an unknown dimension after the batch (all of them named at once)."""
    by_name = {d.name: d for d in declared}
    for name in given:
        d = by_name.get(name)
        if d is None:
            known = ", ".join(sorted(by_name)) or "none"
            raise ModelError(
                f"{where}: --input-shape names input {name!r}, which the signature lacks "
                f"(its inputs: {known})"
            )
        if d.shape is not None and None not in d.shape[1:]:
            raise ModelError(
                f"{where}: --input-shape names input {name!r}, whose shape {d.describe()} has "
                "no unknown dimension after the batch: give only inputs with unknown dimensions"
            )
    missing = [
        d for d in declared if d.name not in given and (d.shape is None or None in d.shape[1:])
    ]
    if missing:
        what = ", ".join(f"{d.name!r} {d.describe()}" for d in missing)
        example = ";".join(f"{d.name}={_placeholder_dims(d)}" for d in missing)
        # the remedy first: a long line is clipped at its end
        inputs = "input" if len(missing) == 1 else "inputs"
        raise ModelError(
            f"{where}: give the unknown dimensions after the batch with --input-shape "
            f"'{example}' ({inputs} {what})"
        )


def _placeholder_dims(d: TensorDecl) -> str:
    if d.shape is None:
        return "D1[,D2...]"
    return ",".join(f"D{i}" if dim is None else str(dim) for i, dim in enumerate(d.shape) if i)


def concrete_shape(
    d: TensorDecl, batch_size: int, where: str, given: tuple[int, ...] | None = None
) -> tuple[int, ...]:
    """The shape ``d`` is synthesised with: the first dimension is the batch (``batch_size``
    where unknown; a fixed one must equal it), the others are the signature's or, where it
    leaves them unknown, ``given`` (``--input-shape``, the dimensions after the batch)."""
    shape = d.shape
    if shape is None:
        if given is None:
            raise ModelError(
                f"{where}: input {d.name!r} has an unknown rank; give its dimensions after the "
                f"batch with --input-shape {d.name}=D1[,D2...]"
            )
        shape = (None, *([None] * len(given)))
    if given is not None and len(given) != len(shape) - 1:
        raise ModelError(
            f"{where}: --input-shape {d.name}={','.join(map(str, given))} gives {len(given)} "
            f"dimension(s) after the batch; input {d.name!r} {d.describe()} has {len(shape) - 1}"
        )
    dims: list[int] = []
    for index, dim in enumerate(shape):
        if index == 0:
            if dim is None:
                dims.append(batch_size)
                continue
            if dim != batch_size:
                raise ModelError(
                    f"{where}: input {d.name!r} {d.describe()} has a fixed batch dimension {dim}; "
                    f"use batch size {dim} (asked for {batch_size})"
                )
            dims.append(dim)
            continue
        wanted = None if given is None else given[index - 1]
        if dim is None and wanted is None:
            raise ModelError(
                f"{where}: input {d.name!r} {d.describe()} has an unknown dimension {index}; "
                f"give its size with --input-shape {d.name}=D1[,D2...] (the dimensions after "
                "the batch)"
            )
        if dim is not None and wanted is not None and wanted != dim:
            raise ModelError(
                f"{where}: --input-shape {d.name}={','.join(map(str, given or ()))}: dimension "
                f"{index} of input {d.name!r} {d.describe()} is {dim}, not {wanted}"
            )
        dims.append(dim if dim is not None else int(wanted or 0))
    return tuple(dims)


# --------------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------------


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

    def description(self) -> str | None:
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


__all__ = [
    "INT_HIGH",
    "Feature",
    "GraphFacts",
    "Synthesis",
    "check_input_shapes",
    "concrete_shape",
    "read_graph",
    "requests_hint",
    "spread",
]
