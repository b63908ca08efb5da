"""What is the same in every server the A/B comparison builds, and on both sides of it: the
clock (``NOW``, what ``datetime.now`` says on both sides; ``server_clock``, the fake server's),
the ids the fake server draws (``same_ids``), and the namespaces' names."""

from __future__ import annotations

import contextlib
import random
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import SupportsIndex

#: the one clock of the comparison: what ``datetime.now`` says on both sides
NOW = datetime(2026, 11, 28, 0, 0, 0, tzinfo=timezone.utc)
#: when most advice here was measured (and its data last changed)
MEASURED = NOW - timedelta(days=1)
HOME = "ml-platform"
TEAMS = tuple(f"team-{i:02d}" for i in range(5))
ML, WEB, QUIET = "ml", "web", "quiet"
NAMESPACES = (HOME, *TEAMS, ML, WEB, QUIET)


@contextlib.contextmanager
def same_ids(seed: int) -> Iterator[None]:
    """``uuid.uuid4`` and ``random`` (the fake's uids, generated names and Event names) drawn
    from ``seed`` until the block ends: two servers built (and written to) the same way hold the
    same ids."""
    draw = random.Random(seed)
    real_uuid4 = uuid.uuid4
    uuid.uuid4 = lambda: uuid.UUID(int=draw.getrandbits(128), version=4)
    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        uuid.uuid4 = real_uuid4
        random.setstate(state)


_REAL_GMTIME = time.gmtime
#: the times of the ``server_clock`` blocks entered, innermost last
_server_times: list[float] = []


def _gmtime(secs: float | SupportsIndex | None = None) -> time.struct_time:
    return _REAL_GMTIME(_server_times[-1] if secs is None else secs)


@contextlib.contextmanager
def server_clock(when: datetime = NOW) -> Iterator[None]:
    """The fake server (which stamps creationTimestamp and conditions with ``time.gmtime()``,
    in this process) reads ``when`` as the time until the block ends; a nested block's time
    holds inside it, and the real clock is back once the outermost ends."""
    _server_times.append(when.timestamp())
    time.gmtime = _gmtime
    try:
        yield
    finally:
        _server_times.pop()
        if not _server_times:
            time.gmtime = _REAL_GMTIME
