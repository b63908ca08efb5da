"""The command line: parse, call, print. No logic lives here beyond turning errors into exit codes.

Each subcommand lives in its own module (``COMMANDS``) exposing ``register(subparsers)``; the
module sets ``func`` on its parser, a callable taking the parsed namespace and the
``Instruments`` and returning an exit code. What the commands do is ``advisor.pipeline``'s. A
command line that starts with a command imports that command's module alone.

``main(argv, instruments=...)`` is the one seam for a caller that drives the command line with
another probe or sweep (the tests' tripwires and fake sweeps): they reach the pipeline as given.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import signal
import sys
import traceback
from collections.abc import Sequence

from advisor import __version__
from advisor.cli import _logging, _output
from advisor.cli._args import add_global_flags, spelled
from advisor.cli._parser import Parser
from advisor.errors import AdvisorError, InterruptedRunError, UsageError
from advisor.pipeline import Instruments

PROG = "tf-thread-advisor"

#: allocations (less deallocations) between two collections of the youngest generation; the
#: default is 700. Measured on plan over 2,000 workloads: 10,000 and more all save the same
#: 0.1-0.2 s, so the figure is not a fine tuning
_YOUNG_COLLECTION_EVERY = 50_000


def build_parser(command: str | None = None) -> Parser:
    """The whole command line; with ``command`` (one of ``COMMANDS``), that command alone: its
    module is the only one imported."""
    parser = Parser(
        prog=PROG,
        description="Measure TensorFlow intra-op/inter-op thread settings for this node and "
        "publish them as a ConfigMap.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    add_global_flags(parser)
    commands = parser.add_commands(dest="command", metavar="COMMAND")
    for name in COMMANDS if command is None else [command]:
        importlib.import_module(f"{__name__}.{COMMANDS[name]}").register(commands)
    parser.add_global_options_to_commands("global options")
    return parser


#: each subcommand and the module that registers it, in the order ``--help`` lists them; add a
#: new one here
COMMANDS = {
    "probe": "probe_cmd",
    "calibrate": "calibrate_cmd",
    "run": "run_cmd",
    "validate": "validate_cmd",
    "check": "check_cmd",
    "status": "status_cmd",
    "plan": "plan_cmd",
    "cleanup": "cleanup_cmd",
}


def _parse(words: list[str]) -> argparse.Namespace:
    """``words`` parsed. Words that start with a command are parsed by that command's parser
    alone (the others' modules, their pipelines' names and their flags are never built), which
    reads them as the whole parser does; anything it refuses is parsed again by the whole
    parser, whose message (and guesses among every command's flags) is the one given."""
    if words and words[0] in COMMANDS:
        with contextlib.suppress(UsageError):
            return build_parser(words[0]).parse_args(words)
    return build_parser().parse_args(words)


def main(argv: Sequence[str] | None = None, *, instruments: Instruments | None = None) -> int:
    """Entry point; returns the process exit code (see ``advisor.errors.EXIT_CODES``).

    ``instruments``: the probe and sweep the commands use (the real ones by default).
    """
    words = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in words
    as_json = _json_requested(words)
    previous = _install_signal_handlers()
    try:
        if argv is None:
            _tune_the_collector()
        args = _parse(words)
        _logging.configure(args.log_format, args.log_level)
        if argv is None:
            _spare_the_modules()
        code: int = args.func(args, instruments or Instruments())
        _output.emit("")  # short results still sit in the buffer: fail here, not at exit
        return code
    except AdvisorError as exc:
        return _fail(exc.exit_code, spelled(exc), debug, as_json)
    except KeyboardInterrupt:
        message = "interrupted; nothing was published"
        return _fail(InterruptedRunError.exit_code, message, debug, as_json)
    except BrokenPipeError:
        return 1
    except Exception as exc:  # the last-resort handler: one line, never a traceback by default
        detail = f"{type(exc).__name__}: {exc}"
        message = f"internal error: {detail} (rerun with --debug for details)"
        return _fail(1, message, debug, as_json)
    finally:
        # Run as the program (no argv) and interrupted: stay deaf to further signals until the
        # process exits, or a late repeat kills it by signal (exit 143) instead of code 130.
        if argv is not None or signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
            _restore_signal_handlers(previous)


def _json_requested(words: Sequence[str]) -> bool:
    """``--log-format json`` among the words, read before (and even if) parsing fails."""
    for index, word in enumerate(words):
        if word == "--log-format=json":
            return True
        if word == "--log-format" and words[index + 1 : index + 2] == ["json"]:
            return True
    return False


def _on_termination(signum: int, _frame: object) -> None:
    # A Job hitting activeDeadlineSeconds or a node drain sends SIGTERM. Raising here unwinds the
    # main thread through every ``finally`` (trial children are killed there), and nothing that
    # runs after the sweep, i.e. publishing, is reached. A second signal (kubelet and a user's
    # Ctrl-C, or an impatient repeat) must not interrupt that cleanup: later ones are ignored
    # until main() restores the handlers.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    raise InterruptedRunError.by_signal(signal.Signals(signum).name)


_HandlerMap = dict[signal.Signals, object]


def _tune_the_collector() -> None:
    """Collect the youngest generation less often. A process runs one command, which builds
    many objects and few cycles (``plan`` reads thousands of workloads into dicts and views, and
    the command's modules are imported as its words are parsed): at the default threshold the
    collector walked them every 700 allocations, a fifth of plan's decisions. Collections stay
    on; the trials run in processes of their own. Only the program does this: an embedder's or
    the tests' process keeps its collector as it is."""
    gc.set_threshold(_YOUNG_COLLECTION_EVERY, *gc.get_threshold()[1:])


def _spare_the_modules() -> None:
    """Keep the collector off what the imports built, once the command's modules are in: they
    (pydantic's schemas and validators among them) live as long as the process, and every full
    collection would walk them again while the command builds its objects."""
    gc.freeze()


def _install_signal_handlers() -> _HandlerMap:
    previous: _HandlerMap = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            previous[sig] = signal.signal(sig, _on_termination)
        except ValueError:  # not the main thread (e.g. embedded use): leave handlers alone
            break
    return previous


def _restore_signal_handlers(previous: _HandlerMap) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)  # type: ignore[arg-type]


def _fail(code: int, message: str, debug: bool, as_json: bool = False) -> int:
    # a usage error's traceback would only show argparse's insides
    if debug and code != UsageError.exit_code:
        traceback.print_exc(file=sys.stderr)
    # only our own handlers: logging.shutdown() would close every handler in the process (an
    # embedding program's, pytest's, absl's once TF is imported) and crash it on a closed stream
    _logging.flush()
    first_line = " ".join(message.split())
    if as_json:
        # under --log-format json every stderr line is a JSON object, the final error included
        print(_logging.error_json(first_line, code), file=sys.stderr)
    else:
        print(f"{PROG}: error: {first_line}", file=sys.stderr)
    return code
