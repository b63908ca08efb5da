"""What the commands measure with: the node probe and the sweep, passed in rather than looked up.

Every pipeline function that probes or measures takes an ``Instruments`` (the real probe and sweep
when none is given), and the CLI's ``main`` passes on the one it was given. A caller that wants
other ones says so where it calls: the tests' tripwires ("the sweep must not start"), a fixture
node, the real sweep over fake trial programs (``partial(sweep, programs=...)``), an
embedder's own sweep. Nothing in the package is replaced behind its back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from advisor.models import CalibrationOptions, CalibrationResult, Incumbent, NodeProfile, ProgressFn
from advisor.pipeline.sweep import sweep
from advisor.probe import probe_node


class Probe(Protocol):
    """Profiles the node a TF process started here runs on (``advisor.probe.probe_node``)."""

    def __call__(self, host_root: Path, /) -> NodeProfile: ...


class Sweep(Protocol):
    """Measures thread settings on ``node`` and picks the advice (``advisor.pipeline.sweep``)."""

    def __call__(
        self,
        options: CalibrationOptions,
        node: NodeProfile,
        /,
        *,
        progress: ProgressFn | None = ...,
        incumbent: Incumbent | None = ...,
    ) -> CalibrationResult: ...


@dataclass(frozen=True)
class Instruments:
    """The probe and the sweep a command uses (the real ones by default)."""

    probe: Probe = probe_node
    sweep: Sweep = sweep
