"""The graph reader: what a signature's graph says about the values its inputs take.

Imports tensorflow: only the trial child (through ``advisor.trials.child.subjects``) imports it.

A signature says dtypes and shapes; the graph behind it says what the values mean, and a model
fed values it never sees in production measures a different computation (the same four rows of
a 1M-row table, strings it refuses). So before synthesising (``advisor.trials.child.synthesis``),
``read_graph`` follows every input through the signature's graph and the functions it calls
(``StatefulPartitionedCall`` and the like, control-flow branches too) and notes where it goes:

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
and an id feature its table's range. One job over some 500 lines: the walk, the op tables it
walks by and the parse-spec reader are one graph reading, and none is used apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import tensorflow as tf

if TYPE_CHECKING:
    from advisor.trials.child.decl import TensorDecl

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
