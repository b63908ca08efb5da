"""The shapes synthesised inputs take: the rules that need no TensorFlow.

Imports no TensorFlow (an import contract holds it to that), so its rules are tested in the
fast tier (tests/unit/trials/test_shapes.py):
- the first dimension, when unknown, is the batch: it is filled from ``batch_size``; when it is
  fixed, ``batch_size`` must equal it (a model exported for batch 8 cannot be fed batch 1);
- any other unknown dimension, or an unknown rank, takes its size from ``--input-shape``, and
  is refused without it: a guess (1? 224?) would measure a different model than the one served.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from advisor.errors import ModelError
from advisor.trials.child.decl import TensorDecl


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
