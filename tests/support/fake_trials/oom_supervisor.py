"""Run one ``hog`` fake trial from inside a fresh memory cgroup: ``python oom_supervisor.py GROUP``.

The runner looks for OOM kills in its own memory cgroup (in a pod, the container's), so this
process joins GROUP (a v1 memory cgroup the test made, with a small limit) before it starts the
trial; the child inherits the group and the kernel's OOM killer ends it there. Prints the
TrialResult as JSON.
"""

from __future__ import annotations

import sys
from pathlib import Path

from advisor.calibrate.spec import SubjectSpec, TrialSpec
from advisor.models import ThreadSetting
from advisor.trials.runner import run_trial

FAKE = Path(__file__).resolve().parent / "fake_trial.py"


def main(group: Path) -> None:
    (group / "tasks").write_text("0\n")  # "0" moves the writing process itself
    result = run_trial(
        TrialSpec(ThreadSetting(1, 1), warmup_s=0.1, measure_s=0.1),
        SubjectSpec(None),
        deadline_s=120,
        program=[sys.executable, str(FAKE), "hog"],
    )
    print(result.model_dump_json())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
