"""``--input-shape``: the sizes of an input's dimensions after the batch, where the signature
leaves them unknown (a BERT-style encoder's sequence length, an image model's side).

The syntax is ``NAME=D1[,D2...]``, several inputs separated by ``;``:
``input_ids=128;attention_mask=128`` or ``image=224,224,3``. The dimensions are those after the
batch (the first dimension stays ``--batch-size``'s). Commas belong to one input's dimensions,
so inputs need another separator; ``;`` is also what a Kubernetes annotation or a Job's argument
carries without quoting.

Pure parsing, checked where the options are made (a typo is a usage error before any child
starts); whether the names and ranks fit the model is the trial child's question, which alone
reads the signature. The canonical spelling (names sorted, no spaces) is what the options, the
calibration spec and the Job's argument hold, so two spellings of one shape are one spec.
"""

from __future__ import annotations

from collections.abc import Mapping

#: one dimension's largest size: TensorFlow's int32 shape limit; the synthesis memory cap
#: refuses anything that large long before
MAX_DIM = 2**31 - 1

#: separates inputs; ``,`` separates one input's dimensions
INPUT_SEPARATOR = ";"

InputShapes = dict[str, tuple[int, ...]]


def parse_input_shapes(text: str) -> InputShapes:
    """``"a=1,2;b=3"`` -> ``{"a": (1, 2), "b": (3,)}``; ValueError (one line, naming the part
    at fault) for anything else."""
    shapes: InputShapes = {}
    for entry in (part.strip() for part in text.split(INPUT_SEPARATOR)):
        if not entry:
            continue
        name, equals, dims_text = (piece.strip() for piece in entry.partition("="))
        if not equals or not name:
            raise ValueError(
                f"{entry!r} is not NAME=D1[,D2...] (several inputs: separated by "
                f"{INPUT_SEPARATOR!r})"
            )
        if name in shapes:
            raise ValueError(f"input {name!r} is given twice")
        shapes[name] = _dims(name, dims_text)
    if not shapes:
        raise ValueError("names no input: expected NAME=D1[,D2...]")
    return shapes


def format_input_shapes(shapes: Mapping[str, tuple[int, ...]]) -> str:
    """The canonical spelling: names sorted, no spaces (``parse_input_shapes`` reads it back)."""
    return INPUT_SEPARATOR.join(
        f"{name}={','.join(str(d) for d in dims)}" for name, dims in sorted(shapes.items())
    )


def canonical_input_shapes(text: str) -> str:
    """``text`` checked and spelled canonically; ValueError as ``parse_input_shapes``."""
    return format_input_shapes(parse_input_shapes(text))


def _dims(name: str, text: str) -> tuple[int, ...]:
    words = [word.strip() for word in text.split(",")]
    if not text or any(not word for word in words):
        raise ValueError(f"input {name!r}: {text!r} is not a list of dimensions D1[,D2...]")
    dims = []
    for word in words:
        if not word.isdecimal() or not 1 <= int(word) <= MAX_DIM:
            raise ValueError(
                f"input {name!r}: dimension {word!r} must be a whole number from 1 to {MAX_DIM}"
            )
        dims.append(int(word))
    return tuple(dims)


__all__ = [
    "INPUT_SEPARATOR",
    "MAX_DIM",
    "InputShapes",
    "canonical_input_shapes",
    "format_input_shapes",
    "parse_input_shapes",
]
