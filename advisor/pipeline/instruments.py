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


def probe_node(host_root: Path, /) -> NodeProfile:
    """``advisor.probe.probe_node``, imported when first called: ``plan``, ``status`` and the
    other commands that measure nothing do not import the probe and the trials."""
    from advisor.probe import probe_node as probe

    return probe(host_root)


def sweep(
    options: CalibrationOptions,
    node: NodeProfile,
    /,
    *,
    progress: ProgressFn | None = None,
    incumbent: Incumbent | None = None,
) -> CalibrationResult:
    """``advisor.pipeline.sweep.sweep``, imported when first called (as ``probe_node``)."""
    from advisor.pipeline.sweep import sweep as measure

    return measure(options, node, progress=progress, incumbent=incumbent)


@dataclass(frozen=True)
class Instruments:
    """The probe and the sweep a command uses (the real ones by default)."""

    probe: Probe = probe_node
    sweep: Sweep = sweep
