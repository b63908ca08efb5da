"""TensorFlow as a ``Runtime``: the environment variables it reads at start-up.

TensorFlow reads ``TF_NUM_INTRAOP_THREADS`` and ``TF_NUM_INTEROP_THREADS`` once, when its runtime
starts; OMP_NUM_THREADS follows the intra-op count, since oneDNN/OpenMP kernels in TF CPU builds
size their team from it. TF's default is no variable at all: TF then sizes both pools from the
affinity mask. The advice's ConfigMap data holds exactly these three and, where the sweep decided
it, ``TF_ENABLE_ONEDNN_OPTS``, and nothing else, so ``envFrom`` injects nothing a consumer did not
ask for.
"""

from __future__ import annotations

from typing import Literal

from advisor.models.runtime import Knob, Runtime

#: oneDNN's graph optimisations in TF CPU builds: read once, at ``import tensorflow``, so the
#: sweep measures each value in a process (and fork server) of its own. Only "0" and "1" mean
#: anything to TF.
OnednnValue = Literal["0", "1"]
ONEDNN_VALUES: tuple[OnednnValue, ...] = ("0", "1")
ONEDNN = Knob("TF_ENABLE_ONEDNN_OPTS", ONEDNN_VALUES)

TENSORFLOW = Runtime(
    name="TensorFlow",
    intra_op="TF_NUM_INTRAOP_THREADS",
    inter_op="TF_NUM_INTEROP_THREADS",
    follow_intra=("OMP_NUM_THREADS",),
    knobs=(ONEDNN,),
)
