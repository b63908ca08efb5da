"""A model path that is a TF Serving base path is measured at the version TF Serving serves (its
highest), through ``calibrate`` and ``run``: the sweep, the incumbent check and the provenance
all see the version directory, so a new version is a new model; in fleet mode the model copy
carries every version with what it holds. The sweep is the cost model (no TF); the model trees
are fixture directories."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from advisor import errors
from advisor.cli import main
from advisor.fleet.naming import MODEL_MOUNT
from advisor.fleet.optin import read_ask
from advisor.models import CalibrationOptions, CalibrationResult, NodeProfile
from advisor.pipeline import (
    CalibrateRequest,
    Instruments,
    RunRequest,
    calibrate_only,
    prepare_run,
    run_advisor,
)
from advisor.pipeline.sweep import sweep
from advisor.recommend import parse_configmap
from advisor.trials.modelfile import served_version
from tests.support.fleet_workloads import arg, container, copier, deployment, derive
from tests.support.search_fakes import FakeClock, FakeTrials, tripwire
from tests.support.search_fakes import node as simulated_node

NODE = simulated_node(4, quota=2.0)


def cost_model(seen: list[CalibrationOptions]) -> Instruments:
    """NODE and the real sweep over the cost model; ``seen`` gets the options each sweep got."""

    def simulated_sweep(
        options: CalibrationOptions, node: NodeProfile, **kwargs: Any
    ) -> CalibrationResult:
        seen.append(options)
        clock = FakeClock()
        trials = FakeTrials(clock=clock, usable=node.effective_cpus, affinity=4)
        return sweep(options, node, trial_fn=trials, clock=clock, **kwargs)

    return Instruments(probe=lambda _root: NODE, sweep=simulated_sweep)


def version(base: Path, number: str) -> Path:
    """A version directory TF Serving would load (the sweep here never reads its content)."""
    path = base / number
    (path / "variables").mkdir(parents=True)
    (path / "saved_model.pb").write_bytes(b"")
    (path / "assets.extra").mkdir()
    (path / "assets.extra" / "tf_serving_warmup_requests").write_bytes(b"")
    return path


def test_calibrate_measures_the_highest_version_and_says_so(tmp_path: Path) -> None:
    base = tmp_path / "models" / "m"
    version(base, "1")
    served = version(base, "2")
    (base / "tmp-upload").mkdir()  # not a number: TF Serving ignores it, and so does this
    seen: list[CalibrationOptions] = []
    request = CalibrateRequest(options=CalibrationOptions(model_path=str(base), budget_s=60.0))
    result = calibrate_only(request, instruments=cost_model(seen))
    assert [o.model_path for o in seen] == [str(served)]
    assert result.subject.path == str(served)
    assert result.notes[0] == (
        f"{base} is a TF Serving base path: its highest version, 2, was measured ({served}), "
        "the one TF Serving serves by default"
    )


def advice_of(output: Path) -> Any:
    return parse_configmap(yaml.safe_load(output.read_text()), str(output)).recommendation


def test_a_new_version_is_a_new_model_for_the_advice_in_force(tmp_path: Path) -> None:
    base = tmp_path / "m"
    first = version(base, "1")
    output = tmp_path / "advice.yaml"
    seen: list[CalibrationOptions] = []

    def run() -> CalibrationResult:
        options = CalibrationOptions(model_path=str(base), budget_s=60.0)
        prepared = prepare_run(RunRequest(options=options, output=str(output)), cost_model(seen))
        result = prepared.measure()
        prepared.publish(result)
        return result

    run()
    assert advice_of(output).provenance.subject.path == str(first)
    # the same version again: the stored advice is the incumbent, raced, not ignored
    again = run()
    assert again.incumbent is not None, again.notes
    assert not [n for n in again.notes if "this run measures" in n]
    assert advice_of(output).provenance.subject.path == str(first)
    # version 2 shipped: measured, and the advice measured on version 1 is not kept by inertia
    second = version(base, "2")
    shipped = run()
    assert advice_of(output).provenance.subject.path == str(second)
    assert shipped.notes[0].startswith(f"{base} is a TF Serving base path: its highest version, 2")
    (ignored,) = [n for n in shipped.notes if "this run measures" in n]
    assert f"model: measured on {first}, this run measures {second}" in ignored
    assert [o.model_path for o in seen] == [str(first), str(first), str(second)]


def test_a_broken_highest_version_stops_calibrate_and_run_before_probing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "m"
    version(base, "1")
    (base / "2" / "variables").mkdir(parents=True)  # still being written: no saved_model.pb
    nothing = Instruments(probe=tripwire("probed"), sweep=tripwire("measured"))
    options = CalibrationOptions(model_path=str(base))
    with pytest.raises(errors.ModelError, match=r"highest version, 2, is not a SavedModel"):
        calibrate_only(CalibrateRequest(options=options), instruments=nothing)
    output = tmp_path / "advice.yaml"
    with pytest.raises(errors.ModelError, match=r"highest version, 2, is not a SavedModel"):
        run_advisor(RunRequest(options=options, output=str(output)), instruments=nothing)
    assert not output.exists()
    code = main(["run", "--model", str(base), "--output", str(output)], instruments=nothing)
    err = capsys.readouterr().err
    assert code == errors.ModelError.exit_code, err
    assert f"{base}: a TF Serving base path (versions 1, 2)" in err
    assert "Traceback" not in err and not output.exists()


# --------------------------------------------------------------------------------------------------
# Fleet mode: the copy the derived init container makes carries what the run reads


def test_the_derived_copy_carries_the_versions_and_what_each_holds(tmp_path: Path) -> None:
    """The init container's own command, run on a tree shaped as TF Serving's (a version reached
    through a symlink, as a volume's ..data links are): every version directory arrives with
    its assets.extra warmup file and a request file beside it, and the copy resolves to the
    highest version, as the Job's run reads it."""
    served_root = tmp_path / "serving"
    base = served_root / "models" / "resnet"
    version(base, "1")
    real = version(tmp_path / "store", "7")
    (real / "requests.jsonl").write_text('{"instances": [[0.5]]}\n')
    base.joinpath("7").symlink_to(real, target_is_directory=True)
    workload = deployment(container(image="tensorflow/serving:2.19.0"))
    del workload["metadata"]["annotations"]["tf-thread-advisor.io/model"]
    job = derive(workload, read_ask(workload["metadata"]["annotations"]))
    command = copier(job)["command"]
    assert command == ["cp", "-RL", "/models/model", f"{MODEL_MOUNT}/"]
    # the same command, with the container's paths moved under tmp_path
    shutil.move(str(base), str(served_root / "models" / "model"))
    copy_dir = tmp_path / "copy"
    copy_dir.mkdir()
    subprocess.run(
        [*command[:2], str(served_root) + command[2], f"{copy_dir}/"], check=True, timeout=60
    )
    (model_arg,) = arg(job, "--model")
    copied = copy_dir / PurePosixPath(model_arg).relative_to(MODEL_MOUNT)
    for number in ("1", "7"):
        assert (copied / number / "saved_model.pb").is_file()
        warmup = copied / number / "assets.extra" / "tf_serving_warmup_requests"
        assert warmup.is_file() and not warmup.is_symlink()
    assert (copied / "7" / "requests.jsonl").read_text() == '{"instances": [[0.5]]}\n'
    assert not (copied / "7").is_symlink()
    found = served_version(str(copied))
    assert found is not None and (found.version, found.path) == (7, str(copied / "7"))
