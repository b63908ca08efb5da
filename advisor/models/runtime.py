"""How a thread setting reaches a runtime: the environment variables it reads at start-up, in
both directions, the keys an advice for it may hold, and their validation against the CPU cap.

A runtime is data: the two pool variables, the variables that follow the intra-op count, and
its extra knobs (variables with a few meaningful values, swept apart from the threads). Every
place that writes or reads an advice's environment (the ConfigMap and env file, the trial
child's environment, ``check``, the incumbent, the mounts and shadowing checks, the benchmark's
consumers) takes it from the one instance of its runtime: TensorFlow's is
``advisor.models.tf_env.TENSORFLOW``. A second runtime is a module beside that one holding its
own instance.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.models.setting import MAX_THREADS, ThreadSetting

#: thread counts as env values: a plain positive decimal, no sign, no leading zero, no spaces.
THREAD_VALUE_PATTERN = r"^[1-9][0-9]*$"

#: the smallest thread cap any node gets, so a 1-CPU pod may still be advised 2 inter-op threads
#: (they mostly wait) without failing validation.
MIN_THREAD_CAP = 4


def thread_cap(affinity_count: int) -> int:
    """The largest thread count the advice may carry for a process with this affinity.

    Rule: ``min(MAX_THREADS, max(2 * len(affinity_cpus), MIN_THREAD_CAP))``. TF itself sizes its
    pools from the affinity mask, so a count above twice that mask is never a measured optimum,
    only a typo or an advice copied from a bigger node.
    """
    return min(MAX_THREADS, max(2 * affinity_count, MIN_THREAD_CAP))


def over_cap(value: str, cap: int) -> bool:
    """A thread value (``THREAD_VALUE_PATTERN``) above ``cap``; longer than the cap's digits is
    above it without ``int()``, which refuses strings of more than 4300 digits."""
    return len(value) > len(str(cap)) or int(value) > cap


def fits_cap(value: str, cap: int) -> bool:
    """``value`` is a thread count (``THREAD_VALUE_PATTERN``) up to ``cap``."""
    return bool(re.fullmatch(THREAD_VALUE_PATTERN, value)) and not over_cap(value, cap)


@dataclass(frozen=True)
class Knob:
    """An environment variable beside the threads with a few values that mean anything to the
    runtime (TensorFlow's oneDNN switch): an advice sets it only where a sweep decided it."""

    name: str
    values: tuple[str, ...]

    def value_problem(self, value: str) -> str | None:
        """Why ``value`` cannot be advised, or None."""
        if value in self.values:
            return None
        return f"{self.name}={value!r} must be {' or '.join(self.values)}"


@dataclass(frozen=True)
class Runtime:
    """One runtime's thread environment."""

    name: str
    #: the variable the intra-op pool is sized from
    intra_op: str
    #: the variable the inter-op pool is sized from
    inter_op: str
    #: variables set to the intra-op count too (OpenMP's team size), never read back
    follow_intra: tuple[str, ...] = ()
    knobs: tuple[Knob, ...] = ()
    #: every variable a thread setting is given through, in the order an advice lists them:
    #: exactly what an advice for a setting holds (besides any knob)
    thread_names: tuple[str, ...] = field(init=False)
    #: every key an advice may hold: the thread variables and the knobs
    advice_keys: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        names = (self.intra_op, self.inter_op, *self.follow_intra)
        object.__setattr__(self, "thread_names", names)
        object.__setattr__(
            self, "advice_keys", frozenset((*names, *(knob.name for knob in self.knobs)))
        )

    def setting_env(self, setting: ThreadSetting) -> dict[str, str]:
        """The variables that give the runtime ``setting``, in ``thread_names`` order: none for
        its default (whoever starts the process must remove inherited ones: ``without_advice``)."""
        if setting.intra is None or setting.inter is None:
            return {}
        return {
            self.intra_op: str(setting.intra),
            self.inter_op: str(setting.inter),
            **dict.fromkeys(self.follow_intra, str(setting.intra)),
        }

    def env_setting(self, env: Mapping[str, Any]) -> ThreadSetting:
        """The setting the two pool variables of ``env`` hold; KeyError (one is missing),
        TypeError or ValueError (not a count, or out of range) when they hold none. The variables
        that follow the intra-op count are not read back."""
        return ThreadSetting(int(env[self.intra_op]), int(env[self.inter_op]))

    def without_advice(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` without any key an advice may set: what a process measured at the runtime's
        defaults starts from, whatever advice the parent's pod mounts."""
        return {k: v for k, v in env.items() if k not in self.advice_keys}

    def env_names(self, env: Mapping[str, str]) -> tuple[str, ...]:
        """The advice keys ``env`` sets, in a stable order: the thread variables, then knobs."""
        return self.thread_names + tuple(k.name for k in self.knobs if k.name in env)

    def thread_value_problem(self, name: str, value: str, cap: int, cap_for: str) -> str | None:
        """Why ``value`` of the thread variable ``name`` cannot be advised under ``cap`` (the cap
        ``cap_for``: the CPUs it was computed from, as the message says them), or None."""
        if not re.fullmatch(THREAD_VALUE_PATTERN, value):
            return f"{name}={value!r} is not a positive integer"
        if over_cap(value, cap):
            return f"{name}={value} exceeds {cap}, the cap for {cap_for}"
        return None

    def advice_problem(self, env: Mapping[str, str], affinity_count: int) -> str | None:
        """Why ``env`` is not an advice for a process with ``affinity_count`` CPUs in its mask,
        or None: every thread variable and no other key but the knobs, each knob at one of its
        values, every thread count a positive integer under the cap."""
        for knob in self.knobs:
            value = env.get(knob.name)
            if value is not None and (problem := knob.value_problem(value)) is not None:
                return problem
        missing = [n for n in self.thread_names if n not in env]
        extra = sorted(set(env) - self.advice_keys)
        if missing or extra:
            return (
                f"env must hold exactly {', '.join(self.thread_names)}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unexpected {', '.join(extra)}" if extra else "")
            )
        cap = thread_cap(affinity_count)
        cap_for = f"{affinity_count} affinity CPUs (max(2 x CPUs, {MIN_THREAD_CAP}))"
        for name in self.thread_names:
            problem = self.thread_value_problem(name, env[name], cap, cap_for)
            if problem is not None:
                return problem
        return None
