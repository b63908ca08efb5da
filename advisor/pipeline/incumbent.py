"""The advice in force before a run: read from what the run will replace, used only if it fits.

Change only on evidence needs something to keep. ``run`` reads the stored advice from where it
will write (the ConfigMap, else the ``--output`` file, else the ``--env-file``); ``calibrate``
takes ``--incumbent FILE``. The sweep then races it as a named arm and keeps it unless a setting
beats it beyond noise.

A stored advice is ignored, with a note, when it is not ours, does not validate, or was measured
for something other than what this run measures: another node shape, CPU limit, CPU model or TF
version (``check``'s comparisons), another model, inputs (synthesised, the warmup file, a
requests file), batch, concurrency or objective. Such an advice
was never shown to be good here, so keeping it would be inertia, not evidence; TF's default is
then the incumbent, as it is when nothing is stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.calibrate.spec import SubjectSpec
from advisor.errors import InvalidAdviceError, RequestsError
from advisor.keys import APP_NAME
from advisor.models import (
    ONEDNN,
    ONEDNN_VALUES,
    TENSORFLOW,
    CalibrationOptions,
    Incumbent,
    InputsKind,
    NodeProfile,
    OnednnValue,
    Provenance,
    SubjectInfo,
    fits_cap,
    format_of,
    thread_cap,
)
from advisor.models.fed_input import FedInput, dim_text
from advisor.models.input_shape import parse_input_shapes
from advisor.models.notes import AdviceIgnored, BadThreadValue, NoProvenance, Note
from advisor.pipeline.drift import installed_tf_version, provenance_differences
from advisor.pipeline.source import read_advice_file
from advisor.recommend import ParsedAdvice, load_configmap_yaml, parse_configmap
from advisor.recommend.measured_for import option_changes
from advisor.trials.requestfile import requests_source


@dataclass(frozen=True)
class IncumbentChoice:
    """The incumbent for a run (None: TF's default) and what a person should know about why."""

    incumbent: Incumbent | None = None
    #: what a person should know (``advisor.render.words.note_text`` words each)
    notes: tuple[Note, ...] = ()


def subject_differences(prov: Provenance, options: CalibrationOptions) -> list[str]:
    """How what this run measures differs from what the stored advice was measured for."""
    found = []
    work = prov.subject
    model = options.model_path or "the built-in model"
    stored = work.path or "the built-in model"
    if stored != model:
        found.append(f"model: measured on {stored}, this run measures {model}")
    elif work.model_format == "savedmodel" and work.signature not in (None, options.signature):
        found.append(f"signature: measured {work.signature}, this run {options.signature}")
    changed = option_changes(prov, options)
    if (change := changed.get("batch size")) is not None:
        found.append(f"batch size: measured {change.was}, this run {change.now}")
    measured_inputs, these_inputs = _fed(work), _fed_asked(options)
    if measured_inputs != these_inputs:
        found.append(f"inputs: measured on {measured_inputs}, this run {these_inputs}")
    if (change := changed.get("concurrency")) is not None:
        found.append(f"concurrency: measured {change.was}, this run {change.now}")
    found += _input_shape_differences(work.inputs, options.input_shape)
    if "objective" in changed or "p99 bound (ms)" in changed:
        found.append(
            f"objective: measured for {_objective(prov.objective, prov.p99_slo_ms)}, this run "
            f"{_objective(options.objective, options.p99_slo_ms)}"
        )
    return found


@dataclass(frozen=True)
class _Fed:
    """Where a calibration's inputs come from, as stored advice and this run are compared:
    synthesised, the warmup file, or a requests file by its name."""

    kind: InputsKind
    file: str | None = None

    def __str__(self) -> str:
        if self.kind == "synthesised":
            return "synthesised inputs"
        return "the warmup file" if self.kind == "warmup" else f"requests file {self.file}"


def _fed(work: SubjectInfo) -> _Fed:
    """Where the stored advice's inputs came from (older advice: synthesised)."""
    source = work.inputs_source
    if source is None or source.kind == "synthesised":
        return _Fed("synthesised")
    return _Fed("warmup") if source.kind == "warmup" else _Fed("file", source.file)


def _fed_asked(options: CalibrationOptions) -> _Fed:
    """Where this run's inputs will come from: decided as the run decides it
    (``requests_source``), so a file is named as the stored advice names it (``./r.json`` is
    ``r.json``) and the warmup default is the run's own rule."""
    # batch size and input shape left at their defaults: only where the inputs come from is asked
    subject = SubjectSpec(model_path=options.model_path, requests=options.requests)
    try:
        source = requests_source(subject, format_of(options.model_path))
    except RequestsError:
        # a file the run will refuse before any trial: named as the run would have named it
        if options.requests_file is not None:
            return _Fed("file", str(Path(options.requests_file)))
        return _Fed("warmup")
    if source is None:
        return _Fed("synthesised")
    return _Fed("warmup") if source.origin == "warmup" else _Fed("file", source.path)


def _input_shape_differences(inputs: Mapping[str, FedInput], input_shape: str | None) -> list[str]:
    """Where ``--input-shape`` gives an input other dimensions than it was measured with (an
    example's: the batch left out). An input this run names that the advice does not record
    is no difference here (the signature's digest tells a model that changed)."""
    if input_shape is None:
        return []
    found = []
    for name, dims in parse_input_shapes(input_shape).items():
        fed = inputs.get(name)
        if fed is None:
            continue
        measured = fed.example_dims
        if measured != dims:
            # an input of no known dimensions (its rank varied over replayed requests) is shown
            # as it was described
            was = fed.text if measured is None else ",".join(dim_text(d) for d in measured)
            found.append(
                f"input shape: measured {name}={was}, this run {name}={','.join(map(str, dims))}"
            )
    return found


def _objective(name: str, slo: float | None) -> str:
    return name if slo is None else f"{name} (p99 <= {slo:g} ms)"


def from_advice(
    parsed: ParsedAdvice, source: str, node: NodeProfile, options: CalibrationOptions
) -> IncumbentChoice:
    """A validated advice as the incumbent, unless it is not ours or was measured for another
    node, limit, TF version, model or objective."""
    if parsed.managed_by != APP_NAME:
        return IncumbentChoice(notes=(AdviceIgnored(source, "not ours"),))
    prov = parsed.recommendation.provenance
    differences = provenance_differences(prov, node, installed_tf_version())
    differences += subject_differences(prov, options)
    if differences:
        return IncumbentChoice(notes=(AdviceIgnored(source, "elsewhere", "; ".join(differences)),))
    rec = parsed.recommendation
    onednn = rec.env.get(ONEDNN.name)
    return IncumbentChoice(
        Incumbent(
            setting=rec.setting,
            onednn=_onednn(onednn),
            source=source,
        )
    )


def _onednn(value: str | None) -> OnednnValue | None:
    for known in ONEDNN_VALUES:
        if value == known:
            return known
    return None


def from_configmap(
    obj: Any, source: str, node: NodeProfile, options: CalibrationOptions
) -> IncumbentChoice:
    """A stored ConfigMap (as read from the cluster or a file) as the incumbent, if it fits."""
    try:
        parsed = parse_configmap(obj, source)
    except InvalidAdviceError as exc:
        return IncumbentChoice(notes=(AdviceIgnored(source, "invalid", str(exc)),))
    return from_advice(parsed, source, node, options)


def stored_configmap(path: Path, source: str) -> tuple[Any, str | None]:
    """The YAML document a run will replace (``--output``), or None and why it cannot be read:
    both the incumbent and the carried-over data-changed time are read through here."""
    try:
        return load_configmap_yaml(path.read_text(encoding="utf-8"), source), None
    except (OSError, UnicodeDecodeError, InvalidAdviceError) as exc:
        return None, str(exc)


def from_configmap_file(
    path: Path, source: str, node: NodeProfile, options: CalibrationOptions
) -> IncumbentChoice:
    """The ConfigMap YAML a run will replace (``--output``) as the incumbent, if it fits; a file
    that cannot be read or parsed is noted and left to be replaced."""
    obj, problem = stored_configmap(path, source)
    if problem is not None:
        return IncumbentChoice(notes=(AdviceIgnored(source, "unusable", problem),))
    return from_configmap(obj, source, node, options)


def read_incumbent(path: str, node: NodeProfile, options: CalibrationOptions) -> IncumbentChoice:
    """A ConfigMap YAML a person named as the incumbent: unreadable (UsageError) or invalid
    (InvalidAdviceError) is an error before the sweep, since they asked for it; a valid one
    measured for something else is noted and not used, as a stored one would be."""
    parsed = read_advice_file(path, "incumbent")
    # the source is kept with the result (and a published advice's provenance) as people read it
    return from_advice(parsed, f"--incumbent {path}", node, options)


def from_env_file(path: Path, node: NodeProfile) -> IncumbentChoice:
    """The thread values of an env file ``run`` wrote, if they are sane for this node.

    An env file has no provenance, so only its values can be checked: the note says so.
    """
    source = f"--env-file {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return IncumbentChoice(notes=(AdviceIgnored(source, "unreadable", str(exc)),))
    env = _env_lines(text)
    cap = thread_cap(len(node.affinity_cpus))
    for name in (TENSORFLOW.intra_op, TENSORFLOW.inter_op):
        value = env.get(name)
        if value is None or not fits_cap(value, cap):
            return IncumbentChoice(notes=(BadThreadValue(source, name, value, cap),))
    return IncumbentChoice(
        Incumbent(
            setting=TENSORFLOW.env_setting(env),
            onednn=_onednn(env.get(ONEDNN.name)),
            source=source,
        ),
        notes=(NoProvenance(source),),
    )


def _env_lines(text: str) -> Mapping[str, str]:
    env = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and not key.startswith("#"):
            env[key.strip()] = value.strip()
    return env
