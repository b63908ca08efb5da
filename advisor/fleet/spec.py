"""The calibration spec: everything about a workload container that changes what its calibration
measures, and nothing else. One definition feeds both the calibration Job's name (its hash) and
``plan``'s ``fits``: a change here is a new Job and a ``calibrate`` naming the field, a change
elsewhere (replicas, labels, the restart annotation, the advice ConfigMap's extra annotations, the
advisor image) is neither.

The fields: the node pool (``nodeSelector``, the required node affinity terms), the tolerations,
the runtime class, the serving container's requests and limits (memory too), the pod-level
resources, the serving image, the model path and the volume it is copied from, every calibration
option (objective, concurrency, batch size, p99 bound, budget) and ``run``'s flags that change the
measurement (trial mode, the oneDNN sweep).

The advice records the spec it was measured for (``ServingTarget.spec``) as a compact record: a
short value as it is (``limits.memory: 2Gi``), a long one as ``#`` and a hash, so the ConfigMap
stays small and a reason still reads "memory limit changed (2Gi -> 4Gi)" (``SpecChanged``, worded by
``advisor.render.plan``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from advisor.fleet.naming import hash_of
from advisor.fleet.optin import CalibrationAsk
from advisor.models import OPTION, OPTIONS, plan_options
from advisor.models.kube import Container, PodSpec, mapping
from advisor.models.option_table import PlanScope
from advisor.models.plan import SpecChanged

#: the record's keys (the resources' are ``requests.<name>``, ``limits.<name>`` and the same
#: behind ``pod.``)
NODE_SELECTOR = "node-selector"
NODE_AFFINITY = "node-affinity"
TOLERATIONS = "tolerations"
RUNTIME_CLASS = "runtime-class"
IMAGE = "image"
MODEL_PATH = "model-path"
MODEL_VOLUME = "model-volume"
#: every option plan takes is in the spec under its key (its flag without the dashes)
OBJECTIVE = OPTION["objective"].key
CONCURRENCY = OPTION["concurrency"].key
BATCH_SIZE = OPTION["batch_size"].key
P99_MS = OPTION["p99_slo_ms"].key
RUN_FLAGS = "run-flags"
POD = "pod."

#: how a reason names each key
_LABELS = {
    NODE_SELECTOR: "node selector",
    NODE_AFFINITY: "required node affinity",
    TOLERATIONS: "tolerations",
    RUNTIME_CLASS: "runtime class",
    IMAGE: "serving image",
    MODEL_PATH: "model path",
    MODEL_VOLUME: "model volume",
    **{o.key: o.spec_label for o in OPTIONS if o.plan is not None},
    RUN_FLAGS: "run flags",
}

#: what the provenance records on its own (the target's image and model path, the options it
#: was measured with), and ``plan`` compares in its own words: the record leaves them out
RECORDED_ELSEWHERE = frozenset({IMAGE, MODEL_PATH, OBJECTIVE, CONCURRENCY, BATCH_SIZE, P99_MS})
#: compared in their own words too (the quota measured, the pool required), where they differ
CPU_KEYS = frozenset({"requests.cpu", "limits.cpu", "pod.requests.cpu", "pod.limits.cpu"})

#: ``run`` flags that change nothing measured (what the advice ConfigMap carries besides)
_NOT_MEASURED_FLAGS = ("--configmap-annotation",)
#: a recorded value longer than this is kept as its hash
READABLE_LIMIT = 40
HASHED = "#"


def calibration_spec(
    *,
    pod: PodSpec,
    container: Container,
    ask: CalibrationAsk,
    model_path: str,
    model_volume: Any,
    extra_args: Sequence[str],
) -> dict[str, Any]:
    """The spec of one calibration: key -> value, plain data; what is not set is left out."""
    spec: dict[str, Any] = {}
    _put(spec, NODE_SELECTOR, pod.selector)
    _put(spec, NODE_AFFINITY, pod.required_node_affinity.get("nodeSelectorTerms"))
    _put(spec, TOLERATIONS, pod.tolerations)
    _put(spec, RUNTIME_CLASS, pod.runtime_class)
    spec.update(_resources("", container.resources))
    spec.update(_resources(POD, pod.resources))
    _put(spec, IMAGE, container.image)
    _put(spec, MODEL_PATH, model_path)
    _put(spec, MODEL_VOLUME, model_volume)
    # the options of the workload (its annotations over plan's defaults) ...
    for key, name in _keys("workload"):
        _put(spec, key, getattr(ask.options, name))
    # ... and those plan passes to every Job's run
    run_options, run_flags = _run_options(tuple(extra_args))
    spec.update(run_options)
    _put(spec, RUN_FLAGS, list(run_flags))
    return spec


@functools.cache
def _keys(scope: PlanScope) -> tuple[tuple[str, str], ...]:
    """The spec key and the ``CalibrationOptions`` field of each option ``plan`` takes in
    ``scope``, in its order: read once, as ``calibration_spec`` asks per workload."""
    return tuple((option.key, option.field) for option in plan_options(scope))


@functools.lru_cache(maxsize=16)
def _run_options(extra_args: tuple[str, ...]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The options plan passes to every Job's run, read back from its arguments (absent: run's
    default), and its other flags that change the measurement: the same for every workload of a
    plan, so read once (the caller copies what it keeps)."""
    flags = [a for a in extra_args if not a.startswith(_NOT_MEASURED_FLAGS)]
    options: dict[str, Any] = {}
    taken: list[str] = []
    for option in plan_options("job"):
        if option.parse == "switch":
            given = [a for a in flags if a == option.flag]
            options[option.key] = bool(given)
        else:
            given = [a for a in flags if a.startswith(f"{option.flag}=")]
            options[option.key] = given[-1].partition("=")[2] if given else option.default
        taken += given
    return options, tuple(a for a in flags if a not in taken)


def spec_hash(spec: Mapping[str, Any], *, workload: str, container: str, configmap: str) -> str:
    """The hash a calibration Job's name ends with: its spec, and what it is written for (two
    workloads of one spec are two Jobs)."""
    return hash_of({"for": [workload, container, configmap], "spec": dict(spec)})


def spec_record(spec: Mapping[str, Any]) -> dict[str, str]:
    """The compact record the advice keeps of ``spec``: a short value readable, a long one as
    ``#`` and its hash; what the provenance holds anyway left out."""
    record = {}
    for key, value in spec.items():
        if key in RECORDED_ELSEWHERE:
            continue
        text = _readable(value)
        fits = text is not None and len(text) <= READABLE_LIMIT and not text.startswith(HASHED)
        record[key] = text if fits and text is not None else HASHED + hash_of(value)
    return record


def spec_changes(recorded: Mapping[str, str], current: Mapping[str, str]) -> list[SpecChanged]:
    """Every field of the spec that differs, in a stable order (by key)."""
    out = []
    for key in sorted({*recorded, *current}):
        was, now = recorded.get(key), current.get(key)
        if was == now:
            continue
        readable = HASHED not in ((was or "")[:1], (now or "")[:1])
        out.append(SpecChanged(key, label_of(key), was, now, readable=readable))
    return out


def label_of(key: str) -> str:
    """``limits.memory`` -> memory limit, ``pod.requests.cpu`` -> pod-level CPU request."""
    if key in _LABELS:
        return _LABELS[key]
    pod, rest = (True, key[len(POD) :]) if key.startswith(POD) else (False, key)
    kind, _, name = rest.partition(".")
    if kind in ("requests", "limits") and name:
        shown = "CPU" if name == "cpu" else name
        return f"{'pod-level ' if pod else ''}{shown} {kind[:-1]}"
    return key


def _resources(prefix: str, value: Any) -> dict[str, str]:
    """``requests.memory: 2Gi``...; ``claims`` are the serving pod's own and measure nothing."""
    out = {}
    resources = mapping(value)
    for kind in ("requests", "limits"):
        amounts = resources.get(kind)
        if isinstance(amounts, dict):
            for name in sorted(amounts):
                out[f"{prefix}{kind}.{name}"] = str(amounts[name])
    return out


#: what a spec leaves out (``_put``)
_UNSET: tuple[Any, ...] = (None, "", [], {})


def _put(spec: dict[str, Any], key: str, value: Any) -> None:
    if value not in _UNSET:
        spec[key] = value


def _readable(value: Any) -> str | None:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if math.isfinite(value) and value.is_integer() else repr(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return ",".join(f"{k}={v}" for k, v in sorted(value.items()))
    return None
