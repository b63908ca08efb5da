"""How a thread setting reaches TensorFlow: the environment variables it reads at start-up, in
both directions (a setting to the variables a consumer's pod or a trial child gets, and the
variables read back to the setting they hold).

TensorFlow reads ``TF_NUM_INTRAOP_THREADS`` and ``TF_NUM_INTEROP_THREADS`` once, when its runtime
starts; OMP_NUM_THREADS follows the intra-op count, since oneDNN/OpenMP kernels in TF CPU builds
size their team from it. TF's default is no variable at all: TF then sizes both pools from the
affinity mask. The advice's ConfigMap, the env file, the trial child's environment, the
benchmark's consumers and every reader of a stored advice go through these two functions. A
second runtime would be a module beside this one with its own names and the same two functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.models.setting import ThreadSetting

#: the env names the advice sets; a ConfigMap's ``data`` holds exactly these (and, where the
#: sweep decided it, TF_ENABLE_ONEDNN_OPTS) and nothing else, so ``envFrom`` injects nothing a
#: consumer did not ask for
ENV_INTRA_OP = "TF_NUM_INTRAOP_THREADS"
ENV_INTER_OP = "TF_NUM_INTEROP_THREADS"
ENV_OMP = "OMP_NUM_THREADS"
ADVICE_ENV_NAMES: tuple[str, ...] = (ENV_INTRA_OP, ENV_INTER_OP, ENV_OMP)


def setting_env(setting: ThreadSetting) -> dict[str, str]:
    """The variables that give TensorFlow ``setting``, in ``ADVICE_ENV_NAMES`` order: none for
    TF's default (whoever starts the process must remove inherited ones)."""
    if setting.intra is None or setting.inter is None:
        return {}
    return {
        ENV_INTRA_OP: str(setting.intra),
        ENV_INTER_OP: str(setting.inter),
        ENV_OMP: str(setting.intra),
    }


def env_setting(env: Mapping[str, Any]) -> ThreadSetting:
    """The setting the two thread variables of ``env`` hold; KeyError (one is missing),
    TypeError or ValueError (not a count, or out of range) when they hold none. OMP_NUM_THREADS
    follows the intra-op count and is not read back."""
    return ThreadSetting(int(env[ENV_INTRA_OP]), int(env[ENV_INTER_OP]))
