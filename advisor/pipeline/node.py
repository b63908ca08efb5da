"""``probe``: what a TF process started here really has to run on, through the command's probe.

The probe itself is ``advisor.probe``; the commands reach it through their ``Instruments`` so a
caller (a test, an embedder) can give a fixture node or a failing probe, and the CLI stays above
the host-file readers.
"""

from __future__ import annotations

from pathlib import Path

from advisor.models import NodeProfile
from advisor.pipeline.instruments import Instruments


def profile_node(
    host_root: Path = Path("/"), instruments: Instruments | None = None
) -> NodeProfile:
    """The node profile below ``host_root`` (a fixture tree in tests; ``/`` for real)."""
    return (instruments or Instruments()).probe(host_root)
