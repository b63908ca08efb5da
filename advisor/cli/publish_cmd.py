"""``run`` (probe, calibrate, publish: the Job's entry point), ``validate`` and ``check``.

``run`` finds every problem it can before the sweep (names, output paths, cluster config, RBAC and
namespace through a server-side dry run, the budget guard), because a Job that measures for minutes
and then cannot write has wasted the node. After the sweep the whole Recommendation is validated
with the same rules ``validate`` uses, and only then are files and the ConfigMap written, each in
one step (files: temp + rename; the ConfigMap: one server-side apply).
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from advisor import __version__
from advisor.cli._args import add_host_root
from advisor.cli._output import emit
from advisor.errors import (
    CheckMismatchError,
    ClusterRejectedError,
    InterruptedRunError,
    InvalidAdviceError,
    OutputError,
    UsageError,
)
from advisor.models import (
    ADVICE_ENV_NAMES,
    ENV_INTRA_OP,
    THREAD_VALUE_PATTERN,
    NodeProfile,
    Provenance,
    over_cap,
    thread_cap,
)
from advisor.recommend import (
    DEFAULT_CONFIGMAP_NAME,
    ParsedAdvice,
    build_recommendation,
    configmap_yaml,
    describe,
    dns1123_label_problem,
    dns1123_subdomain_problem,
    env_file_text,
    load_configmap_yaml,
    node_label_problem,
    parse_configmap,
    render_configmap,
)

log = logging.getLogger("advisor.publish")

#: the Downward API env the Job sets (metadata.namespace); ``run`` writes there by default
POD_NAMESPACE_ENV = "TFTA_POD_NAMESPACE"
#: TF distributions whose version ``check`` compares, first installed wins
TF_DISTRIBUTIONS = ("tensorflow-cpu", "tensorflow", "tensorflow-intel", "tf-nightly-cpu")
#: quotas closer than this (in CPUs) are the same quota (CFS rounding)
QUOTA_TOLERANCE = 0.01


def register(subparsers: Any) -> None:
    from advisor.cli.calibrate_cmd import add_calibration_arguments

    run_parser = subparsers.add_parser(
        "run",
        help="probe, calibrate and publish the advice (the Job's entry point)",
        description="Measure thread settings on this node and publish them: as a ConfigMap in the "
        "cluster (--configmap/--namespace), as ConfigMap YAML (--output), as an env file "
        "(--env-file), in any combination; with none of them the ConfigMap YAML goes to stdout. "
        "Names, output paths and cluster access are checked before the sweep. An existing advice "
        "measured with a bigger --budget is kept (exit 13) unless --force.",
    )
    add_calibration_arguments(run_parser)
    publish = run_parser.add_argument_group("publishing")
    publish.add_argument("--configmap", metavar="NAME", help="write the advice to this ConfigMap")
    publish.add_argument(
        "--namespace",
        metavar="NS",
        help=f"namespace of the ConfigMap (default: ${POD_NAMESPACE_ENV}, set by the Job)",
    )
    publish.add_argument(
        "--output", metavar="FILE", help="write the ConfigMap YAML to FILE ('-' for stdout)"
    )
    publish.add_argument(
        "--env-file", metavar="FILE", type=Path, help="write KEY=VALUE lines (docker --env-file)"
    )
    publish.add_argument(
        "--force",
        action="store_true",
        help="replace a stored advice even if it was measured with a bigger budget or not by us",
    )
    publish.add_argument(
        "--node-label",
        metavar="K=V",
        action="append",
        default=[],
        help="record a node label in the provenance (repeatable; reading Node objects would need "
        "cluster-wide RBAC)",
    )
    _add_cluster_arguments(publish)
    run_parser.add_argument(
        "--cluster-timeout",
        metavar="S",
        type=float,
        default=60.0,
        help="bound on all API retries of one cluster operation, seconds (default 60)",
    )
    add_host_root(run_parser)
    run_parser.set_defaults(func=run)

    validate_parser = subparsers.add_parser(
        "validate",
        help="check a ConfigMap (file, stdin or in the cluster) against the advice model",
        description="Exit 0 and print 'ok: ...' when the ConfigMap holds a valid advice (env "
        "names and values, provenance, content hash); otherwise exit 6 with one line.",
    )
    validate_parser.add_argument("file", nargs="?", metavar="FILE|-", help="ConfigMap YAML")
    validate_parser.add_argument("--configmap", metavar="NAME", help="fetch this ConfigMap")
    validate_parser.add_argument("--namespace", metavar="NS", help="namespace of --configmap")
    _add_cluster_arguments(validate_parser)
    validate_parser.set_defaults(func=validate)

    check_parser = subparsers.add_parser(
        "check",
        help="compare this node with the one the advice was measured on",
        description="Probe this node and compare it with the advice's provenance (from "
        "--configmap-file or --configmap) and with the advice env of this process: CPUs, "
        "quota, CPU model, TF version, thread counts. Differences are warnings on stderr; with "
        "--strict they exit 11.",
    )
    source = check_parser.add_mutually_exclusive_group()
    source.add_argument("--configmap-file", metavar="FILE", help="ConfigMap YAML ('-' = stdin)")
    source.add_argument("--configmap", metavar="NAME", help="fetch this ConfigMap")
    check_parser.add_argument("--namespace", metavar="NS", help="namespace of --configmap")
    check_parser.add_argument("--strict", action="store_true", help="exit 11 on any difference")
    _add_cluster_arguments(check_parser)
    add_host_root(check_parser)
    check_parser.set_defaults(func=check)


def _add_cluster_arguments(parser: Any) -> None:
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        type=Path,
        help="kubeconfig to use (default: in-cluster ServiceAccount, else $KUBECONFIG)",
    )


# --------------------------------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Targets:
    name: str
    namespace: str | None
    to_cluster: bool
    output: str | None
    env_file: Path | None
    node_labels: dict[str, str]


def _targets(args: argparse.Namespace, env: Mapping[str, str]) -> _Targets:
    """Every name and path of ``run``, checked before anything runs."""
    from advisor.cli.calibrate_cmd import check_output_path

    namespace = args.namespace or env.get(POD_NAMESPACE_ENV) or None
    if args.configmap is not None:
        problem = dns1123_subdomain_problem(args.configmap)
        if problem:
            raise UsageError(f"--configmap {args.configmap!r} {problem}")
        if namespace is None:
            raise UsageError(f"--configmap needs --namespace (or ${POD_NAMESPACE_ENV})")
    if namespace is not None:
        problem = dns1123_label_problem(namespace)
        if problem:
            raise UsageError(f"--namespace {namespace!r} {problem}")
    if args.cluster_timeout <= 0 or not math.isfinite(args.cluster_timeout):
        raise UsageError(f"--cluster-timeout must be a positive number, got {args.cluster_timeout}")
    labels: dict[str, str] = {}
    for item in args.node_label:
        key, sep, value = item.partition("=")
        problem = node_label_problem(key, value) if sep else "must be KEY=VALUE"
        if problem:
            raise UsageError(f"--node-label {item!r}: {problem}")
        labels[key] = value
    if args.output not in (None, "-"):
        check_output_path("--output", Path(args.output))
    if args.env_file is not None:
        check_output_path("--env-file", args.env_file)
    return _Targets(
        name=args.configmap or DEFAULT_CONFIGMAP_NAME,
        namespace=namespace,
        to_cluster=args.configmap is not None,
        output=args.output,
        env_file=args.env_file,
        node_labels=labels,
    )


@dataclass(frozen=True)
class _StagedFile:
    """A file's new content, complete on disk next to it, not yet in its place."""

    path: Path
    tmp: Path
    flag: str

    def commit(self) -> None:
        try:
            self.tmp.replace(self.path)
        except OSError as exc:
            self.discard()
            raise OutputError(
                f"{self.flag} {self.path}: cannot write it ({exc.strerror or exc})"
            ) from None

    def discard(self) -> None:
        self.tmp.unlink(missing_ok=True)


def stage_file(path: Path, text: str, flag: str) -> _StagedFile:
    """Temp file in the same folder, to be renamed by ``commit``: a reader never sees half a
    file, and a run that fails later (the cluster write) leaves the old file as it was.
    A symlink is followed: the rename replaces the file it points to, not the link."""
    tmp_name = None
    try:
        target = Path(os.path.realpath(path))
        with tempfile.NamedTemporaryFile(
            "w", dir=target.parent, prefix=f".{target.name}.", suffix=".tmp", delete=False
        ) as tmp:
            tmp_name = tmp.name
            tmp.write(text)
            tmp.flush()
            os.fsync(tmp.fileno())
        Path(tmp_name).chmod(0o644)
    except OSError as exc:
        if tmp_name is not None:
            Path(tmp_name).unlink(missing_ok=True)
        raise OutputError(f"{flag} {path}: cannot write it ({exc.strerror or exc})") from None
    return _StagedFile(target, Path(tmp_name), flag)


def run(args: argparse.Namespace) -> int:
    from advisor.calibrate import calibrate
    from advisor.cli.calibrate_cmd import options_from_args, progress_reporter
    from advisor.probe import probe_node

    options = options_from_args(args)
    targets = _targets(args, os.environ)
    writer = None
    if targets.to_cluster:
        from advisor.cluster import ConfigMapWriter, RetryPolicy, connect

        assert targets.namespace is not None  # _targets refuses --configmap without one
        writer = ConfigMapWriter(
            connect(args.kubeconfig),
            targets.name,
            targets.namespace,
            policy=RetryPolicy(total_s=args.cluster_timeout),
        )
        existing = writer.preflight(budget_s=options.budget_s, force=args.force)
        log.info(
            "cluster access ok: %s (%s), %s",
            writer.where,
            writer.connection.source,
            "exists" if existing else "will be created",
        )

    node = probe_node(args.host_root)
    with progress_reporter(log_format=args.log_format) as progress:
        result = calibrate(options, node, progress=progress)

    rec = build_recommendation(result, advisor_version=__version__, node_labels=targets.node_labels)
    configmap = render_configmap(rec, targets.name, targets.namespace)
    # the same rules `validate` applies: what is published always validates
    if parse_configmap(configmap, "the new advice").recommendation != rec:
        raise InvalidAdviceError("the rendered ConfigMap does not read back as the same advice")
    text = configmap_yaml(configmap)

    # Files are staged first (a full disk fails before the cluster is touched) and put in place
    # only after the cluster write succeeded: a failed run leaves every output as it was.
    staged: list[_StagedFile] = []
    phase = "staging"
    try:
        if targets.output not in (None, "-"):
            staged.append(stage_file(Path(targets.output), text, "--output"))
        if targets.env_file is not None:
            staged.append(stage_file(targets.env_file, env_file_text(rec), "--env-file"))
        if writer is not None:
            phase = "writing"
            outcome = writer.publish(configmap, budget_s=options.budget_s, force=args.force)
            phase = "written"
            log.info(
                "%s %s (resourceVersion %s): %s",
                outcome.action,
                writer.where,
                outcome.resource_version,
                " ".join(f"{k}={v}" for k, v in rec.env.items()),
            )
        for item in staged:
            item.commit()
            log.info("%s written to %s", item.flag, item.path)
    except InterruptedRunError as exc:
        # The handler's "nothing was published" is only true before the cluster write began.
        if writer is not None and phase != "staging":
            message = _interrupted_at_publish(str(exc), phase, writer.where)
            raise InterruptedRunError(message) from None
        raise
    finally:
        for item in staged:
            item.discard()
    nothing_else = targets.output is None and targets.env_file is None and writer is None
    if targets.output == "-" or nothing_else:
        emit(text)
    return 0


def _interrupted_at_publish(message: str, phase: str, where: str) -> str:
    signal_part = message.split(";", 1)[0]
    if phase == "writing":
        return (
            f"{signal_part} while writing {where}: it holds the previous or the new advice (one "
            "apply, never a mix); no --output/--env-file was written"
        )
    return f"{signal_part} after {where} was written; --output/--env-file may be the old ones"


# --------------------------------------------------------------------------------------------------
# validate and check: reading an advice back
# --------------------------------------------------------------------------------------------------


def _read_text(path: str, flag: str) -> tuple[str, str]:
    source = "stdin" if path == "-" else path
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{flag} {source}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise InvalidAdviceError(f"{source}: not UTF-8 text") from None
    return text, source


def _fetch(args: argparse.Namespace) -> ParsedAdvice:
    from advisor.cluster import ConfigMapWriter, connect

    namespace = args.namespace or os.environ.get(POD_NAMESPACE_ENV)
    if not namespace:
        raise UsageError(f"--configmap needs --namespace (or ${POD_NAMESPACE_ENV})")
    for flag, value, problem in (
        ("--configmap", args.configmap, dns1123_subdomain_problem(args.configmap)),
        ("--namespace", namespace, dns1123_label_problem(namespace)),
    ):
        if problem:
            raise UsageError(f"{flag} {value!r} {problem}")
    writer = ConfigMapWriter(connect(args.kubeconfig), args.configmap, namespace)
    obj = writer.read()
    if obj is None:
        raise ClusterRejectedError(f"{writer.where}: not found")
    return parse_configmap(obj, writer.where)


def _parse_file(path: str, flag: str) -> ParsedAdvice:
    text, source = _read_text(path, flag)
    return parse_configmap(load_configmap_yaml(text, source), source)


def validate(args: argparse.Namespace) -> int:
    if (args.file is None) == (args.configmap is None):
        raise UsageError("validate needs exactly one of FILE|- or --configmap NAME")
    if args.file is not None and (args.namespace or args.kubeconfig):
        raise UsageError("--namespace and --kubeconfig only apply with --configmap")
    parsed = _fetch(args) if args.configmap else _parse_file(args.file, "validate")
    emit(f"ok: {describe(parsed)}\n")
    return 0


def installed_tf_version() -> str | None:
    """The installed TensorFlow's version from package metadata (importing TF takes seconds)."""
    for dist in TF_DISTRIBUTIONS:
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return None


def provenance_differences(
    prov: Provenance, node: NodeProfile, tf_version: str | None
) -> list[str]:
    """How this node differs from the calibrated one, in the terms that change the advice."""
    found = []
    if len(prov.affinity_cpus) != len(node.affinity_cpus):
        found.append(
            f"affinity: calibrated with {len(prov.affinity_cpus)} CPUs, "
            f"this process has {len(node.affinity_cpus)}"
        )
    if (prov.quota_cpus is None) != (node.quota_cpus is None) or (
        prov.quota_cpus is not None
        and node.quota_cpus is not None
        and abs(prov.quota_cpus - node.quota_cpus) > QUOTA_TOLERANCE
    ):
        found.append(
            f"CPU quota: calibrated {_quota(prov.quota_cpus)}, here {_quota(node.quota_cpus)}"
        )
    here_model = node.topology.cpu_model
    if prov.cpu_model and here_model and prov.cpu_model != here_model:
        found.append(f"CPU model: calibrated on {prov.cpu_model!r}, here {here_model!r}")
    if prov.tf_version and tf_version and prov.tf_version != tf_version:
        found.append(f"TensorFlow: calibrated with {prov.tf_version}, installed {tf_version}")
    return found


def env_differences(
    env: Mapping[str, str], node: NodeProfile, advice: Mapping[str, str] | None
) -> list[str]:
    """The advice env of this process against the advice (if given) and against this node."""
    found = []
    cap = thread_cap(len(node.affinity_cpus))
    usable = max(1, math.ceil(node.effective_cpus))
    for name in ADVICE_ENV_NAMES:
        value = env.get(name)
        if value is None:
            if advice is not None:
                found.append(f"{name} is not set in this process (the advice says {advice[name]})")
            continue
        if advice is not None and value != advice[name]:
            found.append(f"{name}={value} in this process, but the advice says {advice[name]}")
        if not re.fullmatch(THREAD_VALUE_PATTERN, value):
            found.append(f"{name}={value!r} is not a positive integer")
        elif over_cap(value, cap):
            found.append(f"{name}={value} exceeds {cap}, the cap for this process's CPUs")
        elif name == ENV_INTRA_OP and int(value) > usable:
            found.append(
                f"{name}={value} is more than the {usable} CPU(s) this container can use "
                f"(effective {node.effective_cpus:g}): expect throttling"
            )
    return found


def _quota(value: float | None) -> str:
    return "none" if value is None else f"{value:g} CPUs"


def check(args: argparse.Namespace) -> int:
    from advisor.probe import probe_node

    parsed: ParsedAdvice | None = None
    if args.configmap_file is not None:
        parsed = _parse_file(args.configmap_file, "--configmap-file")
    elif args.configmap is not None:
        parsed = _fetch(args)
    elif not any(name in os.environ for name in ADVICE_ENV_NAMES):
        raise UsageError(
            "nothing to check: give --configmap-file, --configmap, or run with the advice env "
            f"({', '.join(ADVICE_ENV_NAMES)})"
        )
    node = probe_node(args.host_root)
    differences = []
    if parsed is not None:
        differences += provenance_differences(
            parsed.recommendation.provenance, node, installed_tf_version()
        )
    in_env = any(name in os.environ for name in ADVICE_ENV_NAMES)
    if in_env or parsed is None:
        advice = parsed.recommendation.env if parsed is not None else None
        differences += env_differences(os.environ, node, advice)
    subject = describe(parsed) if parsed is not None else "the advice env of this process"
    if not differences:
        emit(f"ok: this node matches {subject}\n")
        return 0
    if args.strict:
        raise CheckMismatchError(
            f"{len(differences)} difference(s) from {subject}: " + "; ".join(differences)
        )
    for line in differences:
        print(f"warning: {line}", file=sys.stderr)
    emit(f"ok with {len(differences)} warning(s): {subject}\n")
    return 0
