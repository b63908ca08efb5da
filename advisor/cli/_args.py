"""Flags more than one subcommand takes, defined once, and how the CLI spells the options the
layers below name in their messages (``errors.Opt``: the Python name; here: the flag)."""

from __future__ import annotations

import argparse
import dataclasses
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from advisor.cli._parser import Arguments, Parser
from advisor.errors import AdvisorError, UsageError
from advisor.models import OPTIONS
from advisor.models.times import parse_duration

#: options whose flag is not the Python name with dashes (``env_file`` -> ``--env-file``): the
#: calibration options' as the option table spells them, and these
_FLAGS = {
    **{option.field: option.flag for option in OPTIONS},
    "cluster_timeout_s": "--cluster-timeout",
    "image_pull_secrets": "--image-pull-secret",
    "startup_allowance_s": "--startup-allowance",
    "node_labels": "--node-label",
    "annotations": "--configmap-annotation",
    "spec_fields": "--spec-field",
    "force=True": "--force",
    "consumers=False": "--no-consumers",
    "file": "FILE|-",
}


def flag(option: str) -> str:
    """The flag (or argument) for an option the pipeline names by its Python name."""
    return _FLAGS.get(option) or "--" + option.replace("_", "-")


def spelled(exc: AdvisorError) -> str:
    """The error's message as the command line says it: options named by their flags."""
    return exc.spelled(flag)


def default_of(model: type[Any], field: str) -> Any:
    """``model``'s default for ``field`` (a pydantic model or a dataclass): a flag's default is
    read from where the rule lives, never copied."""
    if issubclass(model, BaseModel):
        return model.model_fields[field].get_default(call_default_factory=True)
    (found,) = (f for f in dataclasses.fields(model) if f.name == field)
    if found.default_factory is not dataclasses.MISSING:
        return found.default_factory()
    return found.default


def _host_root_dir(value: str) -> Path:
    # A mistyped --host-root would otherwise read as "nothing readable" (a probe error, exit 3)
    # and send people looking at the node instead of at the flag.
    path = Path(value)
    if not path.is_dir():
        problem = "is not a directory" if path.exists() else "does not exist"
        raise argparse.ArgumentTypeError(f"{value}: {problem}")
    return path


def add_host_root(parser: Arguments) -> None:
    """``--host-root``: where the probe reads /proc and /sys (fixture trees in tests)."""
    parser.add_argument(
        "--host-root",
        type=_host_root_dir,
        default=Path("/"),
        metavar="DIR",
        help="read /proc and /sys below DIR instead of / (for fixture trees; default /)",
    )


def add_global_flags(parser: Parser) -> None:
    """``--debug``, ``--log-format``, ``--log-level``: before the subcommand or after it (each
    subcommand takes them too, see ``Parser.add_global_options_to_commands``)."""
    parser.add_global_argument(
        "--debug",
        action="store_true",
        default=False,
        help="print full tracebacks for unexpected errors",
    )
    parser.add_global_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="log lines on stderr as plain text (default) or one JSON object per line",
    )
    parser.add_global_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        default="info",
        help="least severe log lines shown on stderr (default info; results go to stdout)",
    )


def add_kubeconfig(parser: Arguments) -> None:
    """``--kubeconfig``: which cluster to talk to (advisor.cluster.connect's order otherwise)."""
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        type=Path,
        help="kubeconfig to use (default: in-cluster ServiceAccount, else $KUBECONFIG)",
    )


def pairs(items: list[str], flag: str) -> dict[str, str]:
    """``K=V`` words as a dict; the keys and values are checked by the pipeline."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"{flag} {item!r}: must be KEY=VALUE")
        pairs[key] = value
    return pairs


def duration(text: str) -> timedelta:
    """A ``--max-age`` or ``--startup-allowance`` value: ``30d``, ``12h``, ``15m``, ``1d12h``."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} {exc}") from None


#: environment variables the Prometheus flags default to (the chart and the fleet component set
#: them from values or a Secret)
PROMETHEUS_ENV = {
    "url": "TFTA_PROMETHEUS_URL",
    "token_file": "TFTA_PROMETHEUS_TOKEN_FILE",
    "ca_file": "TFTA_PROMETHEUS_CA_FILE",
    "headers": "TFTA_PROMETHEUS_HEADERS",
    "selector": "TFTA_PROMETHEUS_SELECTOR",
}


def add_prometheus(parser: Arguments) -> None:
    """``--prometheus-url`` and its auth, for the commands that read production metrics."""
    env = os.environ.get
    parser.add_argument(
        "--prometheus-url",
        metavar="URL",
        default=env(PROMETHEUS_ENV["url"]) or None,
        help="read the serving pods' metrics from the Prometheus HTTP API at URL (Prometheus, "
        f"Thanos, Mimir, VictoriaMetrics; default ${PROMETHEUS_ENV['url']}; none: not read)",
    )
    parser.add_argument(
        "--prometheus-token-file",
        metavar="PATH",
        type=Path,
        default=env(PROMETHEUS_ENV["token_file"]) or None,
        help="send the bearer token in PATH, read for every request "
        f"(default ${PROMETHEUS_ENV['token_file']})",
    )
    parser.add_argument(
        "--prometheus-ca-file",
        metavar="PATH",
        type=Path,
        default=env(PROMETHEUS_ENV["ca_file"]) or None,
        help=f"trust the CA certificates in PATH for https (default ${PROMETHEUS_ENV['ca_file']})",
    )
    parser.add_argument(
        "--prometheus-header",
        metavar="K=V",
        action="append",
        default=[h for h in (env(PROMETHEUS_ENV["headers"]) or "").split(",") if h.strip()],
        help="send this header too, e.g. X-Scope-OrgID=team-a for Mimir or Cortex; repeatable "
        f"(default: ${PROMETHEUS_ENV['headers']}, comma-separated)",
    )
    parser.add_argument(
        "--prometheus-selector",
        metavar="MATCHERS",
        default=env(PROMETHEUS_ENV["selector"]) or None,
        help="label matchers added to every selector the advisor writes, e.g. "
        "'cluster=\"prod-eu\"' where one Prometheus holds several clusters "
        f"(default ${PROMETHEUS_ENV['selector']})",
    )
    parser.add_argument(
        "--prometheus-timeout",
        metavar="S",
        type=float,
        default=10.0,
        help="bound on one Prometheus request, seconds (default 10); three of them bound all "
        "retries of one query",
    )
    parser.add_argument(
        "--window",
        metavar="DURATION",
        type=duration,
        default=None,
        help="length of the before and after windows of the production figures (default 24h)",
    )
    parser.add_argument(
        "--warm-up",
        metavar="DURATION",
        type=duration,
        default=None,
        help="time after a rollout onto new advice that no production window covers: the "
        "model server's warm-up (default 10m)",
    )


def prometheus_settings(args: argparse.Namespace) -> Any:
    """The pipeline's checked Prometheus settings from the parsed flags (None without a URL)."""
    headers = pairs([h.strip() for h in args.prometheus_header], "--prometheus-header")
    given = (args.prometheus_url, args.prometheus_token_file, args.prometheus_ca_file)
    if not any((*given, headers, args.prometheus_selector)):
        return None  # no Prometheus: its pipeline and client are not even imported
    from advisor.pipeline.prometheus_settings import prometheus_settings as settings

    return settings(
        args.prometheus_url,
        token_file=args.prometheus_token_file,
        ca_file=args.prometheus_ca_file,
        headers=headers,
        timeout_s=args.prometheus_timeout,
        selector=args.prometheus_selector,
    )
