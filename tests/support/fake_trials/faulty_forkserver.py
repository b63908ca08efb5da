"""The real trial server with one fault, chosen by TFTA_FAULT in its environment.

- ``no-start``: exits before it is ready;
- ``hang``: a child forked for a trial (not for inspection) hangs before it loads the model;
- ``crash``: such a child dies of SIGSEGV before it loads the model.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

from advisor.trials.child import forkserver

FAULT = os.environ.get("TFTA_FAULT", "")
if FAULT == "no-start":
    print("faulty server: refusing to start", flush=True)
    sys.exit(3)

_real_child = forkserver._child


def _faulty_child(message: dict[str, Any]) -> int:
    with open(message["request"], encoding="utf-8") as handle:
        mode = json.load(handle).get("mode")
    if mode == "trial" and FAULT in {"hang", "crash"}:
        os.setsid()  # as the real child does first, so its deadline can kill it
        if FAULT == "hang":
            time.sleep(3600)
        os.kill(os.getpid(), signal.SIGSEGV)
    return _real_child(message)


forkserver._child = _faulty_child
os._exit(forkserver.main())
