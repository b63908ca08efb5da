"""The commands compared, each with the rights it runs with (testkit/outputs_ab/scene.py's
``RIGHTS``) and whether it writes to the cluster.

Every output format a command offers is taken from the advisor's registry of formats
(``advisor.render.formats.names``), so a format added there is compared without a change here.
In an argument, ``{prom}`` is the scene's Prometheus stand-in, ``{scene}`` the folder of the
scene's files (``files.py``) and ``{probe}`` the probe's fixture trees
(tests/unit/probe/fixtures). ``calibrate`` and ``run`` measure with TensorFlow and are left out
but for what they do before measuring: their help and their refusals of bad flags.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from advisor.render import formats
from advisor.render.plan import PlanView
from advisor.render.status import StatusView
from advisor.render.summaries import NodeView
from testkit import REPO
from testkit.outputs_ab.fixed import ML, TEAMS, WEB

PROBE_TREES = REPO / "tests" / "unit" / "probe" / "fixtures"
WINDOW = ("--window", "12h")
PROM = ("--prometheus-url", "{prom}")


@dataclass(frozen=True)
class Command:
    """``tf-thread-advisor ARGV``; ``rights``: the key of the rules it runs with (None: it
    needs no cluster, and gets no ``--kubeconfig``); ``writes``: run against a fresh server per
    side, whose objects are compared too; ``stdin``: the scene file it reads on standard input;
    ``code``: the exit code the scene is built to give it (the base's differing says the scene
    no longer shows what it was meant to, as a status that cannot list would); ``setup``: a key
    of the scene's ``SETUPS`` (admission that refuses or warns), applied to a fresh scene per
    side as for a command that writes."""

    argv: tuple[str, ...]
    rights: str | None = None
    writes: bool = False
    stdin: str | None = None
    code: int = 0
    setup: str | None = None

    @property
    def label(self) -> str:
        marks = [m for m in (self.rights, self.setup, "writes" if self.writes else None) if m]
        return " ".join(self.argv) + "".join(f"  [{m}]" for m in marks)


def _plan(
    *argv: str,
    rights: str = "planner",
    writes: bool = False,
    code: int = 17,
    setup: str | None = None,
) -> Command:
    """plan, by default in a namespace with a failed calibration (exit 17 after the output)."""
    image = ("--image", "registry.example.com/tf-thread-advisor:1")
    return Command(("plan", *argv, *image), rights, writes, code=code, setup=setup)


def _status(*argv: str, rights: str = "reader", code: int = 0) -> Command:
    return Command(("status", *argv), rights, code=code)


def plan_commands() -> Iterator[Command]:
    for name in formats.names(PlanView):
        yield _plan("-A", "--format", name)
        yield _plan("--namespace", ML, "--format", name)
        yield _plan(
            "--namespace", ML, "--format", name, *PROM, *WINDOW, rights="planner+production"
        )
    yield _plan("--namespace", ML)  # the default format
    # other defaults: the failed Job measured another spec, so its workload is calibrated again
    yield _plan("-A", "--format", "json", "--objective", "throughput", "--concurrency", "2", code=0)
    yield _plan(
        "--namespace", ML, "--format", "json", "--objective", "slo", "--p99-ms", "30", code=0
    )
    yield _plan(
        "--namespace", ML, "--format", "json", "--batch-size", "4", "--budget", "120", code=0
    )
    yield _plan("--namespace", ML, "--format", "json", "--max-age", "30d")
    yield _plan("--namespace", ML, "--max-running", "3")
    yield _plan("--namespace", TEAMS[1], "--max-age", "12h", code=0)
    yield _plan("-A", "--print-jobs")
    yield _plan(
        "--namespace",
        ML,
        "--print-jobs",
        "--image-pull-secret",
        "regcred",
        "--priority-class",
        "batch-low",
        "--configmap-annotation",
        "reloader.stakater.com/match=true",
        "--startup-allowance",
        "45m",
        "--image-pull-policy",
        "Always",
        "--service-account",
        "tf-thread-advisor-calibration",
    )
    yield _plan("--namespace", ML, "--print-jobs", "--restart", "--trial-mode", "fork", code=0)
    yield _plan("-A", "--dry-run=server", "--format", "json")
    yield _plan("--namespace", ML, "--dry-run=server")
    yield _plan("--namespace", ML, "--log-level", "debug")
    yield _plan("--namespace", ML, "--format", "json", "--log-format", "json")
    yield _plan(
        "--namespace", ML, *PROM, *WINDOW, "--max-reverts", "0", rights="planner+production"
    )
    yield _plan("--namespace", ML, *PROM, "--window", "30h", rights="planner+production")
    yield _plan(
        "--namespace", ML, *PROM, *WINDOW, "--suggest-throttled", "55", rights="planner+production"
    )
    # refused: by the API server, the Role, or the flags
    # without the production Role: a warning that production was not judged, the plan goes on
    yield _plan("--namespace", ML, *PROM, *WINDOW)
    yield _plan("-A", rights="reader", code=8)
    yield _plan("--namespace", "nowhere", code=0)
    yield _plan("--namespace", ML, "--max-running", "0", code=2)
    yield _plan("-A", "--namespace", ML, code=2)
    yield _plan("--namespace", ML, "--objective", "fastest", code=2)
    yield _plan("--namespace", ML, "--apply", "--dry-run=server", code=2)
    yield _plan("--namespace", ML, "--max-age", "soon", code=2)
    yield _plan(
        "--namespace",
        ML,
        "--prometheus-url",
        "http://127.0.0.1:1",
        *WINDOW,
        rights="planner+production",
    )
    yield _plan("--namespace", ML, "--format", "json", "--restart-forbidden")
    yield _plan("--namespace", "quiet", code=0)
    yield _plan("--namespace", WEB, code=0)
    # what admission says: a quota, a webhook, a policy, Pod Security's warning
    yield _plan("--namespace", ML, "--dry-run=server", "--format", "json", setup="job-quota")
    yield _plan("--namespace", ML, "--dry-run=server", "--max-running", "5", setup="pod-security")
    yield _plan("--namespace", ML, "--apply", "--max-running", "9", setup="job-quota", writes=True)
    yield _plan(
        "--namespace", ML, "--apply", "--max-running", "9", setup="webhook-denial", writes=True
    )
    yield _plan(
        "--namespace", ML, "--apply", "--format", "json", setup="policy-denial", writes=True
    )
    # writing: Jobs, Events, reverted advice
    yield _plan("--namespace", ML, "--apply", writes=True)
    yield _plan("-A", "--apply", "--max-running", "2", "--format", "json", writes=True)
    yield _plan("--namespace", ML, "--apply", "--retry-failed", "--no-events", writes=True, code=0)
    yield _plan("--namespace", ML, "--apply", "--print-jobs", writes=True)
    yield _plan(
        "--namespace",
        ML,
        "--apply",
        *PROM,
        *WINDOW,
        "--format",
        "json",
        rights="planner+production",
        writes=True,
    )
    yield _plan(
        "--namespace",
        ML,
        "--apply",
        *PROM,
        *WINDOW,
        "--max-reverts",
        "1",
        rights="planner+production",
        writes=True,
    )


def status_commands() -> Iterator[Command]:
    for name in formats.names(StatusView):
        yield _status("-A", "--format", name)
        yield _status("--namespace", WEB, "--format", name, rights="reader-role")
        yield _status("--namespace", WEB, "--format", name, *PROM, *WINDOW)
        yield _status("--namespace", ML, "--format", name)
    yield _status("--namespace", WEB, "--max-age", "12h", rights="reader-role")
    yield _status("--namespace", WEB, "--format", "json", "--max-age", "30d")
    yield _status("--namespace", WEB, "--fail-on-problems", code=16)
    yield _status("--namespace", WEB, "--format", "csv", "--no-consumers")
    yield _status("--namespace", WEB, "--no-consumers", rights="configmaps-only")
    yield _status("--namespace", WEB, rights="configmaps-only", code=8)
    yield _status("-A", "--format", "json", rights="reader-without-jobs")
    yield _status("-A", rights="reader-role", code=8)
    yield _status("--namespace", WEB, *PROM, "--window", "30h")
    yield _status("--namespace", WEB, "--format", "json", *PROM, "--window", "30h")
    yield _status("--namespace", WEB, "--prometheus-url", "http://127.0.0.1:1", *WINDOW)
    yield _status("--namespace", WEB, *PROM, "--no-consumers", code=2)
    yield _status("--namespace", "nowhere")
    yield _status("--namespace", WEB, "--max-age", "a while", code=2)
    yield _status("--namespace", TEAMS[0], "--format", "markdown")
    yield _status("--namespace", ML, "--format", "json", *PROM, *WINDOW)
    yield _status("--namespace", "quiet")
    yield _status("--namespace", WEB, "--log-format", "json", "--log-level", "debug")


def probe_commands() -> Iterator[Command]:
    for name in formats.names(NodeView):
        yield Command(("probe", "--format", name, "--host-root", "{probe}/v1"))
        yield Command(("probe", "--format", name, "--host-root", "{probe}/nested-v2"))
    for tree in sorted(p.name for p in PROBE_TREES.iterdir() if p.is_dir()):
        argv = ("probe", "--format", "json", "--host-root", f"{{probe}}/{tree}")
        yield Command(argv, code=3 if tree == "no-affinity" else 0)
    yield Command(("probe", "--host-root", "{probe}/not-there"), code=2)


def file_commands() -> Iterator[Command]:
    """validate and check, of the scene's files and of ConfigMaps in the cluster."""
    yield Command(("validate", "{scene}/advice.yaml"))
    for name in ("no-provenance", "bad-value", "bad-hash", "not-yaml", "list"):
        yield Command(("validate", f"{{scene}}/{name}.yaml"), code=6)
    yield Command(("validate", "-"), stdin="advice")
    yield Command(("validate", "{scene}/missing.yaml"), code=2)
    yield Command(("validate", "--configmap", "tf-advice", "--namespace", WEB), "reader")
    yield Command(("validate", "--configmap", "app-config", "--namespace", WEB), "reader", code=6)
    yield Command(("validate", "--configmap", "nope", "--namespace", WEB), "reader", code=10)
    yield Command(("validate", "--configmap", "tf-advice", "--namespace", WEB), "planner")
    for tree in ("v1", "v2", "nested-v1", "two-sockets"):
        yield Command(
            ("check", "--configmap-file", "{scene}/advice.yaml", "--host-root", f"{{probe}}/{tree}")
        )
    yield Command(
        (
            "check",
            "--configmap-file",
            "{scene}/advice.yaml",
            "--strict",
            "--host-root",
            "{probe}/v1",
        ),
        code=11,
    )
    yield Command(("check", "--configmap-file", "-", "--host-root", "{probe}/v2"), stdin="advice")
    yield Command(
        ("check", "--configmap", "tf-advice", "--namespace", WEB, "--host-root", "{probe}/v2"),
        "reader",
    )
    yield Command(("check", "--host-root", "{probe}/v1"), code=2)
    yield Command(("check", "--configmap-file", "{scene}/bad-value.yaml"), code=6)


def cleanup_commands() -> Iterator[Command]:
    names = ("--configmap", "spare", "--configmap", "app-config", "--configmap", "gone")
    yield Command(("cleanup", "--namespace", WEB, *names, "--dry-run"), "cleanup")
    yield Command(("cleanup", "--namespace", WEB, *names), "cleanup", writes=True)
    yield Command(("cleanup", "--namespace", WEB, *names), "configmaps-only", writes=True, code=8)
    yield Command(("cleanup", "--namespace", WEB), code=2)


def plumbing_commands() -> Iterator[Command]:
    """Help, version and the refusals that come before any measuring or cluster call."""
    yield Command(("--help",))
    yield Command(("--version",))
    for command in ("probe", "calibrate", "run", "validate", "check", "status", "plan", "cleanup"):
        yield Command((command, "--help"))
    for argv in (
        ("plna", "-A"),
        ("status", "--formt", "json"),
        ("--bugdet", "30", "run"),
        ("run", "--namespace", "x"),
        ("run", "--objective", "slo"),
        ("run", "--budget", "-1"),
        ("calibrate", "--objective", "fastest"),
        ("calibrate", "--batch-size", "4", "--requests", "x.jsonl"),
    ):
        yield Command(argv, code=2)


def all_commands() -> list[Command]:
    return [
        *plumbing_commands(),
        *probe_commands(),
        *file_commands(),
        *status_commands(),
        *plan_commands(),
        *cleanup_commands(),
    ]
