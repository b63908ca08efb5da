"""A stand-in for ``python -m advisor.trials.child.trial`` that misbehaves on purpose.

    python fake_trial.py MODE [ARG] --request FILE --result FILE

Modes: ok (noisy output, then a valid answer), env (reports the thread variables it was given as
a failure reason; ARG, comma-separated, names other variables to report instead), hang (starts a
grandchild, writes both pids to ARG, sleeps forever), crash (traceback on stderr, exit 3),
garbage / not_object / invalid / silent (bad or no answer), sigkill, sigsegv (dies by that
signal), requests_error (an inspection's answer: the request file cannot be replayed), hog
(allocates 4 GiB: for a memory-limited cgroup).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

THREAD_ENV = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS")

OK_ANSWER = {
    "status": "ok",
    "measure_s": 1.0,
    "requests": 100,
    "p50_ms": 2.0,
    "p90_ms": 3.0,
    "p99_ms": 4.0,
    "max_ms": 5.0,
    "throughput_rps": 100.0,
    "cpu_time_s": 0.9,
    "threads": 7,
    "nr_throttled": 3,
    "throttled_time_ms": 12.5,
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("arg", nargs="?")
    parser.add_argument("--request", required=True, type=Path)
    parser.add_argument("--result", required=True, type=Path)
    args = parser.parse_args()
    json.loads(args.request.read_text())  # the runner must always hand over a readable request
    mode = args.mode
    if mode == "ok":
        # What TF and user code may print: none of it may be taken for the answer.
        print('{"status": "failed", "reason": "stdout is not the channel"}', flush=True)
        print("W0000 tensorflow noise", file=sys.stderr, flush=True)
        args.result.write_text(json.dumps(OK_ANSWER))
    elif mode == "env":
        names = args.arg.split(",") if args.arg else THREAD_ENV
        seen = {key: os.environ.get(key) for key in names}
        args.result.write_text(json.dumps({"status": "failed", "reason": json.dumps(seen)}))
    elif mode == "hang":
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        Path(args.arg).write_text(f"{os.getpid()} {grandchild.pid}")
        time.sleep(3600)
    elif mode == "crash":
        print("Traceback (most recent call last):", file=sys.stderr)
        print("RuntimeError: the model exploded", file=sys.stderr, flush=True)
        return 3
    elif mode in ("garbage", "requests_error"):
        args.result.write_text(_fixed_answer(mode, args.request))
    elif mode == "not_object":
        args.result.write_text("[1, 2, 3]")
    elif mode == "invalid":
        args.result.write_text(json.dumps({**OK_ANSWER, "p99_ms": -4.0}))
    elif mode == "silent":
        print("loaded the model, then forgot to answer", flush=True)
    elif mode == "hog":
        # Grow 64 MiB at a time (each page touched) until the memory cgroup's OOM killer acts.
        hoard = [b"x" * (64 << 20) for _ in range(64)]
        print(f"still alive holding {len(hoard) * 64} MiB", flush=True)
        return 9
    elif mode == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "sigsegv":
        signal.signal(signal.SIGSEGV, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGSEGV)
    else:
        raise SystemExit(f"unknown mode {mode}")
    return 0


def _fixed_answer(mode: str, request: Path) -> str:
    if mode == "requests_error":
        # an inspection whose requests to replay cannot be: the line, as the child words it
        reason = f"{json.loads(request.read_text())['requests']}: record 2: bad"
        return json.dumps({"status": "requests_error", "reason": reason})
    return "this is {not json"


if __name__ == "__main__":
    sys.exit(main())
