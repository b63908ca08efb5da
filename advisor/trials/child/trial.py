"""The trial child: ``python -m advisor.trials.child.trial --request FILE --result FILE``.

One process per setting, because TensorFlow reads TF_NUM_INTRAOP_THREADS/TF_NUM_INTEROP_THREADS once
when it starts and never again: the parent (``advisor.trials.runner``) puts the setting in this
process's environment, exactly as a Deployment's ``envFrom`` would, and never imports TF itself.

The request file holds an ``advisor.trials.wire.TrialRequest`` as JSON; one that does not
validate is one line on stderr and exit code 2, with no answer. The answer goes to the
``--result`` file as one JSON object, written atomically, so that TF's log noise on
stdout/stderr cannot corrupt it:

- mode ``trial`` -> ``{"status": "ok", "measure_s", "requests", "p50_ms", "p90_ms",
  "p99_ms", "max_ms", "throughput_rps", "cpu_time_s", "threads", "nr_throttled",
  "throttled_time_ms", "involuntary_switches_per_request", "peak_rss_mib"}`` or
  ``{"status": "failed", "reason"}``;
- mode ``inspect`` -> ``{"status": "ok", "info": {SubjectInfo fields}}`` or
  ``{"status": "model_error", "reason"}`` or ``{"status": "requests_error", "reason"}`` (the
  requests to replay cannot be).

``requests`` counts requests, each timed for the percentiles; ``throughput_rps`` counts what each
request counts for (``LoadedSubject.request``): replayed requests their examples (rows) per
second, since their batches differ; synthesised inputs, all of one batch size, requests per second.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from advisor.atomic import write_atomically
from advisor.calibrate.percentile import percentile
from advisor.errors import first_error, one_line
from advisor.models import SubjectInfo
from advisor.probe import read_throttling
from advisor.probe.proc_status import read_peak_rss_mib, read_thread_count
from advisor.trials.environment import PARENT_PID_ENV, QUIET_TF_ENV
from advisor.trials.wire import TrialRequest, inspection_answer

if TYPE_CHECKING:
    from advisor.trials.child.loaded import LoadedSubject

#: prctl(2) option: the signal this process gets when its parent dies
_PR_SET_PDEATHSIG = 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m advisor.trials.child.trial")
    parser.add_argument("--request", required=True, type=Path)
    parser.add_argument("--result", required=True, type=Path)
    args = parser.parse_args(argv)
    die_with_parent()
    # Before tensorflow is imported (by subjects): later is too late for both. The runner sets
    # them already; this covers a child started by hand.
    for key, value in QUIET_TF_ENV.items():
        os.environ.setdefault(key, value)
    try:
        request = TrialRequest.model_validate_json(args.request.read_bytes())
    except ValidationError as exc:
        # the parent's fault, not the setting's: one line in the log, no answer
        print(f"the trial request does not validate: {first_error(exc)}", file=sys.stderr)
        return 2
    answer = _inspect(request) if request.mode == "inspect" else _trial(request)
    write_atomically(args.result, json.dumps(answer))
    return 0


def die_with_parent() -> None:
    """Ask the kernel for SIGKILL when the parent dies, and exit if it already has.

    The child leads its own session (so a deadline kills its whole group), which also means no
    signal aimed at the parent reaches it: a parent killed outright (SIGKILL, the OOM killer)
    runs no cleanup and would leave it measuring for minutes, orphaned.
    """
    parent = os.environ.get(PARENT_PID_ENV, "")
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent's own cleanup has to do
        return
    # The runner itself, not getppid(): a wrapper program (a shell that forks) may sit between.
    if parent.isdecimal():
        try:
            os.kill(int(parent), 0)
        except ProcessLookupError:
            os._exit(1)  # the runner died before the request above: nobody awaits an answer
        except OSError:
            pass  # it exists (EPERM): alive


def _inspect(request: TrialRequest) -> dict[str, Any]:
    from advisor.errors import ModelError, RequestsError

    try:
        loaded = _load(request)
    except ModelError as exc:
        return {"status": "model_error", "reason": str(exc)}
    except RequestsError as exc:
        return {"status": "requests_error", "reason": str(exc)}
    import tensorflow as tf

    return inspection_answer(
        SubjectInfo(
            model_format=loaded.model_format,
            path=request.path,
            signature=loaded.signature,
            signature_digest=loaded.signature_digest,
            inputs=loaded.inputs,
            batch_size=request.batch_size,
            concurrency=request.concurrency,
            tf_version=tf.__version__,
            inputs_source=loaded.inputs_source,
        )
    )


def _trial(request: TrialRequest) -> dict[str, Any]:
    try:
        loaded = _load(request)
        if request.loaded_marker:
            # Loaded and ready to measure: a child that dies or hangs from here on is a fault
            # of the trial, not of the way it was started (the runner falls back on the latter).
            Path(request.loaded_marker).touch()
        return _measure(
            loaded.request,
            concurrency=request.concurrency,
            # never None in a trial request (its validator), but typed for an inspection too
            warmup_s=request.warmup_s or 0.0,
            measure_s=request.measure_s or 0.0,
            min_requests=request.min_requests,
            max_measure_s=request.max_measure_s,
        )
    except Exception as exc:
        return {"status": "failed", "reason": one_line(f"{type(exc).__name__}: {exc}")}


def _load(request: TrialRequest) -> LoadedSubject:
    from advisor.trials.child import subjects

    return subjects.load_subject(
        request.model_format,
        request.path,
        request.signature,
        request.batch_size,
        request.replay,
        input_shape=request.input_shape,
    )


def _measure(
    call: Callable[[], int],
    *,
    concurrency: int,
    warmup_s: float,
    measure_s: float,
    min_requests: int = 0,
    max_measure_s: float | None = None,
) -> dict[str, Any]:
    """Warm up, then keep ``concurrency`` requests in flight and time each one.

    The window lasts ``measure_s``, and longer (up to ``max_measure_s``) until ``min_requests``
    have completed: a p99 is only as good as the number of requests behind it.

    Context switches come from getrusage(RUSAGE_SELF), which sums every thread of the process:
    /proc/self/status (and psutil's ``num_ctx_switches``, which reads it) counts the main thread
    alone, while TF computes on its pool threads (measured here: 0.5 involuntary switches per
    request there against 38 for the whole process). Peak memory is VmHWM, not ``ru_maxrss``,
    which a spawned child inherits from its parent (see ``advisor.probe.proc_status``).
    """
    _run_for(call, concurrency, warmup_s)
    threads = read_thread_count()
    throttling_before = read_throttling()
    usage_before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    rows = [0]
    latencies = _run_for(
        call, concurrency, measure_s, min_requests=min_requests, max_s=max_measure_s, rows=rows
    )
    window = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    throttling_after = read_throttling()
    cpu = _cpu_seconds(usage) - _cpu_seconds(usage_before)
    switches = usage.ru_nivcsw - usage_before.ru_nivcsw
    latencies.sort()
    answer: dict[str, Any] = {
        "status": "ok",
        "measure_s": window,
        "requests": len(latencies),
        "p50_ms": percentile(latencies, 50) * 1e3,
        "p90_ms": percentile(latencies, 90) * 1e3,
        "p99_ms": percentile(latencies, 99) * 1e3,
        "max_ms": latencies[-1] * 1e3,
        "throughput_rps": rows[0] / window,
        "cpu_time_s": max(cpu, 0.0),
        "threads": threads,
        "nr_throttled": None,
        "throttled_time_ms": None,
        "involuntary_switches_per_request": switches / len(latencies),
        "peak_rss_mib": read_peak_rss_mib(),
    }
    if throttling_before is not None and throttling_after is not None:
        window_counters = throttling_after.since(throttling_before)
        answer["nr_throttled"] = window_counters.nr_throttled
        answer["throttled_time_ms"] = window_counters.throttled_time_ms
    return answer


def _run_for(
    call: Callable[[], int],
    concurrency: int,
    seconds: float,
    *,
    min_requests: int = 0,
    max_s: float | None = None,
    rows: list[int] | None = None,
) -> list[float]:
    """Latencies (s) of requests issued by ``concurrency`` loops until ``seconds`` have passed
    and ``min_requests`` have completed, or ``max_s`` has passed, whichever comes first; the
    examples they carried are added to ``rows[0]``.

    Each loop issues at least one request, so even a window shorter than one request measures
    something. TF releases the GIL while it computes, so the loops really overlap.
    """
    begin_all = time.perf_counter()
    end = begin_all + seconds
    hard_end = begin_all + max(seconds, max_s or 0.0)
    done = [0]
    latencies: list[float] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def loop() -> None:
        mine: list[float] = []
        examples = 0
        try:
            while True:
                begin = time.perf_counter()
                examples += call()
                finished = time.perf_counter()
                mine.append(finished - begin)
                done[0] += 1  # a racy count is fine: it only decides when to stop
                if finished >= hard_end or (finished >= end and done[0] >= min_requests):
                    break
        except BaseException as exc:
            errors.append(exc)
        with lock:
            latencies.extend(mine)
            if rows is not None:
                rows[0] += examples

    if concurrency == 1:
        loop()
    else:
        workers = [threading.Thread(target=loop, daemon=True) for _ in range(concurrency)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    if errors:
        raise errors[0]
    return latencies


def _cpu_seconds(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    code = main()
    # Skip interpreter teardown: TF's thread pools and atexit hooks take about a second to wind
    # down, which every trial would pay, and the answer is already on disk.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
