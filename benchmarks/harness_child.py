"""The benchmark's own measurement child: one process = one thread setting, kept alive for rounds.

Why a separate harness: the benchmark judges the advisor, so it must not time models with the
advisor's trial code. It shares only the built-in model's *definition* (so "builtin" means the same
network); loading, input synthesis and the request loop are written here. It returns raw latencies:
the judge (benchmarks/figures.py) takes their percentiles with the advisor's one definition, so a
p99 is the same statistic in a trial and in the benchmark's tables.

Thread settings come from the environment (TF_NUM_INTRAOP_THREADS / TF_NUM_INTEROP_THREADS, unset =
TF defaults), exactly how a Deployment receives the advice through the ConfigMap. TF reads them
once at start-up, which is why each setting is its own process; the process stays alive between
measurements so rounds can interleave settings without paying the ~3 s TF import every time.

A TF Serving model version (``--serving DIR``) is fed its own warmup requests
(``assets.extra/tf_serving_warmup_requests``), read here with TF Serving's protos and nothing of
the advisor's request reader: each request keeps its batch and shapes, goes to the signature it
names (Classify and Regress requests: their examples serialized, to the signature's one input),
and the requests are sent in the file's order, from the first one again in every window, so
every setting is timed on the same sequence. A latency is one request's.

Protocol: the real stdout carries one JSON object per line (everything libraries print goes to
stderr). After ``{"ready": ...}`` it reads commands from stdin, one JSON object per line:
``{"cmd": "measure", "window_s": 1.0, "warmup_s": 0.2, "concurrency": 1}`` or ``{"cmd": "quit"}``.

Usage (from the checkout's root, as benchmarks/pool.py starts it):
    python -m benchmarks.harness_child serve (--builtin | --model DIR | --serving DIR)
        [--batch-size N]
    python -m benchmarks.harness_child build --shape NAME --out DIR
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

Infer = Callable[[], Any]


def _protocol_stream() -> TextIO:
    """Keep the real stdout for the protocol and point fd 1 at stderr for everything else."""
    sys.stdout.flush()
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    return proto


def _synthesize(spec: Any, batch_size: int) -> Any:
    import tensorflow as tf

    dims = [batch_size if d is None else int(d) for d in spec.shape.as_list()]
    if spec.dtype.is_floating:
        return tf.random.stateless_normal(dims, seed=(6, 1), dtype=spec.dtype)
    return tf.zeros(dims, dtype=spec.dtype)


def _load_savedmodel(path: str, batch_size: int) -> tuple[Infer, dict[str, str]]:
    import tensorflow as tf

    loaded = tf.saved_model.load(path)
    fn = loaded.signatures["serving_default"]
    _, kwargs_spec = fn.structured_input_signature
    inputs = {name: _synthesize(spec, batch_size) for name, spec in kwargs_spec.items()}
    shapes = {name: f"{t.dtype.name}{t.shape.as_list()}" for name, t in inputs.items()}
    return (lambda: fn(**inputs)), shapes


#: where TF Serving reads a model version's warmup requests
WARMUP_RELPATH = "assets.extra/tf_serving_warmup_requests"


class Replay:
    """A model version's warmup requests, sent in the file's order, round and round."""

    def __init__(self, calls: list[Infer]) -> None:
        self.calls = calls
        self.sent = itertools.count()

    def restart(self) -> None:
        """From the first request again (every window starts on the same sequence)."""
        self.sent = itertools.count()

    def __call__(self) -> Any:
        # next() on a count is atomic under the GIL: concurrent callers take distinct requests
        return self.calls[next(self.sent) % len(self.calls)]()


def _feed(log: Any, loaded: Any) -> tuple[Any, dict[str, Any]]:
    """One PredictionLog as TF Serving would run it: the signature and its input tensors."""
    import tensorflow as tf

    kind = log.WhichOneof("log_type")
    if kind == "predict_log":
        request = log.predict_log.request
        feed = {name: tf.constant(tf.make_ndarray(t)) for name, t in request.inputs.items()}
    elif kind in {"classify_log", "regress_log"}:
        request = getattr(log, kind).request
        examples = [e.SerializeToString() for e in request.input.example_list.examples]
        feed = {"": tf.constant(examples)}
    else:
        raise ValueError(f"warmup record of kind {kind!r} is not replayed by this harness")
    fn = loaded.signatures[request.model_spec.signature_name or "serving_default"]
    if "" in feed:  # Classify/Regress: TF Serving feeds the one string input, whatever its name
        (name,) = fn.structured_input_signature[1]
        feed = {name: feed[""]}
    return fn, feed


def _load_serving(version_dir: str) -> tuple[Replay, dict[str, str], dict[str, Any]]:
    """The version's warmup requests, ready to send; the first one's inputs (name -> dtype and
    shape, as the other subjects describe theirs) and how many requests of which batches."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    loaded = tf.saved_model.load(version_dir)
    calls: list[Infer] = []
    batches: list[int] = []
    shapes: dict[str, str] = {}
    path = Path(version_dir) / WARMUP_RELPATH
    for raw in tf.data.TFRecordDataset(str(path)):
        fn, feed = _feed(prediction_log_pb2.PredictionLog.FromString(raw.numpy()), loaded)
        calls.append(functools.partial(fn, **feed))
        batches.append(int(next(iter(feed.values())).shape[0]))
        if not shapes:
            shapes = {name: f"{t.dtype.name}{t.shape.as_list()}" for name, t in feed.items()}
    if not calls:
        raise ValueError(f"{path}: no warmup requests")
    for call in calls:  # every signature and shape traced before anything is timed
        call()
    return Replay(calls), shapes, {"count": len(calls), "batch_sizes": batches}


def _load_builtin(batch_size: int) -> tuple[Infer, dict[str, str]]:
    """The advisor's built-in network, loaded the way its trial child loads it; only the timing
    around ``request()`` is ours."""
    from advisor.trials.child.subjects import load_subject

    loaded = load_subject("builtin", None, "serving_default", batch_size)
    return loaded.request, dict(loaded.inputs)


def measure(
    infer: Infer,
    window_s: float,
    warmup_s: float,
    concurrency: int,
    restart: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Closed loop: ``concurrency`` callers, each sending the next request when one returns.
    ``restart`` (replayed requests) is called between the warm-up and the window."""
    warm_end = time.perf_counter() + warmup_s
    while time.perf_counter() < warm_end:
        infer()
    if restart is not None:
        restart()
    latencies: list[list[float]] = [[] for _ in range(concurrency)]
    completed = [0] * concurrency
    start = time.perf_counter()
    deadline = start + window_s
    usage0 = resource.getrusage(resource.RUSAGE_SELF)

    def worker(slot: int) -> None:
        mine = latencies[slot]
        while True:
            t0 = time.perf_counter()
            if t0 >= deadline:
                return
            infer()
            t1 = time.perf_counter()
            mine.append((t1 - t0) * 1000.0)
            if t1 <= deadline:
                completed[slot] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(1, concurrency)]
    for t in threads:
        t.start()
    worker(0)
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    return {
        "latencies_ms": [round(x, 4) for lat in latencies for x in lat],
        "completed": sum(completed),
        "window_s": window_s,
        "wall_s": round(wall, 4),
        "cpu_s": round(cpu, 4),
        "threads": threading.active_count(),
        "os_threads": sum(1 for _ in Path("/proc/self/task").iterdir()),
    }


def serve(args: argparse.Namespace) -> int:
    proto = _protocol_stream()
    started = time.perf_counter()
    import tensorflow as tf  # noqa: F401  (imported first so load_s includes TF's start-up)

    replay: Replay | None = None
    requests: dict[str, Any] | None = None
    if args.serving:
        replay, shapes, requests = _load_serving(args.serving)
        infer: Infer = replay
    elif args.model:
        infer, shapes = _load_savedmodel(args.model, args.batch_size)
    else:
        infer, shapes = _load_builtin(args.batch_size)
    infer()  # trace and initialise the thread pools before saying ready
    threads = sum(1 for _ in Path("/proc/self/task").iterdir())
    ready = {"ready": True, "pid": os.getpid(), "inputs": shapes, "os_threads": threads}
    if requests is not None:
        ready["requests"] = requests
    ready["load_s"] = round(time.perf_counter() - started, 3)
    proto.write(json.dumps(ready) + "\n")
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd.get("cmd") == "quit":
            break
        if cmd.get("cmd") == "measure":
            result = measure(
                infer,
                float(cmd["window_s"]),
                float(cmd["warmup_s"]),
                int(cmd["concurrency"]),
                restart=None if replay is None else replay.restart,
            )
            proto.write(json.dumps(result) + "\n")
        else:
            proto.write(json.dumps({"error": f"unknown command {cmd!r}"}) + "\n")
    proto.flush()
    # TF's interpreter teardown takes seconds and proves nothing here; 17 of them add up.
    os._exit(0)


def build(args: argparse.Namespace) -> int:
    proto = _protocol_stream()
    from benchmarks.shapes import build_savedmodel

    path = build_savedmodel(args.shape, Path(args.out))
    proto.write(json.dumps({"built": str(path)}) + "\n")
    return 0


def main() -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_serve = sub.add_parser("serve")
    which = p_serve.add_mutually_exclusive_group(required=True)
    which.add_argument("--builtin", action="store_true")
    which.add_argument("--model")
    which.add_argument("--serving", help="a TF Serving model version: replay its warmup file")
    p_serve.add_argument("--batch-size", type=int, default=1)
    p_serve.set_defaults(func=serve)
    p_build = sub.add_parser("build")
    p_build.add_argument("--shape", required=True)
    p_build.add_argument("--out", required=True)
    p_build.set_defaults(func=build)
    args = parser.parse_args()
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
