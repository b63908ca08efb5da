"""A model's declared inputs and outputs, as the loaders read them and synthesis fills them,
and the cap on what the inputs fed to them may hold (synthesised or replayed).

Apart from both (``subjects`` loads models, ``synthesis`` makes their inputs) so that neither
imports the other for it. Imports no TensorFlow itself; it lives among the trial child's modules,
which are its only readers.
"""

from __future__ import annotations

from dataclasses import dataclass

#: inputs larger than this (all inputs together; for replayed requests, all requests together)
#: are refused: synthesised, as a batch-size problem; replayed, naming the request file
MAX_INPUT_BYTES = 1 << 30


@dataclass(frozen=True)
class TensorDecl:
    """A declared input or output: name, dtype name and shape (None = unknown dim/rank)."""

    name: str
    dtype: str
    shape: tuple[int | None, ...] | None

    def describe(self) -> str:
        if self.shape is None:
            return f"{self.dtype}[unknown rank]"
        dims = ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype}[{dims}]"
