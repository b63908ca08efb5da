"""What a trial child is started with: the program and the environment a consumer's pod would have.

A child gets its setting the way a consumer will, through TF_NUM_INTRAOP_THREADS,
TF_NUM_INTEROP_THREADS and OMP_NUM_THREADS in its environment (all three removed for the
TF-default baseline), and TF_ENABLE_ONEDNN_OPTS only where a trial measures a value of it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from advisor.models import ONEDNN, TENSORFLOW, OnednnValue, ThreadSetting

#: the parent's pid, for the child to check that it was not orphaned before it asked to die with it
PARENT_PID_ENV = "TFTA_TRIAL_PARENT_PID"


#: TF's C++ logging at WARNING and above only; its INFO lines (oneDNN banners) are noise here.
QUIET_TF_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "KERAS_BACKEND": "tensorflow"}


def trial_program() -> tuple[str, ...]:
    """The real trial child, run by the same interpreter as the parent."""
    return (sys.executable, "-m", "advisor.trials.child.trial")


def trial_env(
    setting: ThreadSetting,
    base: Mapping[str, str] | None = None,
    onednn: OnednnValue | None = None,
) -> dict[str, str]:
    """The child's environment: ``base`` without any inherited advice key, plus this setting
    (and ``onednn``, when the trial measures one).

    Inherited values are removed first, the oneDNN switch with the thread variables: the advisor
    may itself run in a pod that already mounts an earlier advice, and the baseline must be TF's
    own default in both.
    """
    # the variables the advice sets, exactly: what a consumer's pod gets
    inherited = os.environ if base is None else base
    env = TENSORFLOW.without_advice(inherited)
    env.update(TENSORFLOW.setting_env(setting))
    if onednn is not None:
        env[ONEDNN.name] = onednn
    for key, value in QUIET_TF_ENV.items():
        env.setdefault(key, value)
    # The child must run this very package, installed or not.
    package_root = str(Path(__file__).resolve().parents[2])
    paths = [package_root, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env
