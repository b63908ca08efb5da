"""Where the incumbent comes from, and when a stored advice is not one: ``run`` reads what it
will replace (the ConfigMap, else ``--output``, else ``--env-file``), ``calibrate`` takes
``--incumbent``; an advice that is not ours, does not validate, or was measured for another node
shape, CPU limit, model or objective is ignored with a note.

The end-to-end tests run the real CLI in-process with the real search over the fake cost model
(no TensorFlow) on a simulated node, against files and the strict fake API server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import main
from advisor.keys import (
    DATA_CHANGED_ANNOTATION,
    HASH_ANNOTATION,
    LABEL_MANAGED_BY,
    PROVENANCE_ANNOTATION,
)
from advisor.models import (
    CalibrationOptions,
    CalibrationResult,
    InputsSource,
    NodeProfile,
    SubjectInfo,
)
from advisor.pipeline import Instruments
from advisor.pipeline.drift import installed_tf_version
from advisor.pipeline.incumbent import from_configmap, from_env_file
from advisor.pipeline.sweep import sweep
from advisor.recommend import build_recommendation, render_configmap
from advisor.render.words import note_text
from testkit.fakeapi.samples import calibration_result
from testkit.fakeapi.server import FakeApiServer
from tests.support.search_fakes import FakeClock, FakeTrials
from tests.support.search_fakes import node as simulated_node

NAME, NS = "tf-advice", "ml"


def stored(node: NodeProfile, intra: int = 2, inter: int = 1, **options: Any) -> dict[str, Any]:
    """A ConfigMap as ``run`` writes it, measured on ``node`` with this TF."""
    result = calibration_result(intra, inter, node=node).model_copy(
        update={"tf_version": installed_tf_version(), **options}
    )
    return render_configmap(build_recommendation(result, advisor_version="0.1.0"), NAME, NS)


NODE = simulated_node(8, quota=4.0)
OPTIONS = CalibrationOptions()


def test_our_advice_for_this_node_is_the_incumbent() -> None:
    held = from_configmap(stored(NODE, 2, 1), "the store", NODE, OPTIONS)
    assert held.notes == ()
    assert held.incumbent is not None
    assert held.incumbent.counts == (2, 1)
    assert held.incumbent.source == "the store"


@pytest.mark.parametrize(
    ("node", "options", "says"),
    [
        (simulated_node(4, quota=4.0), OPTIONS, "affinity: calibrated with 8 CPUs"),
        (simulated_node(8, quota=2.0), OPTIONS, "CPU quota: calibrated 4 CPUs, here 2 CPUs"),
        (NODE, CalibrationOptions(model_path="/models/m.keras"), "model: measured on the built-in"),
        (NODE, CalibrationOptions(concurrency=4), "concurrency: measured 1, this run 4"),
        (NODE, CalibrationOptions(objective="throughput"), "objective: measured for latency"),
    ],
)
def test_advice_measured_for_something_else_is_not_the_incumbent(
    node: NodeProfile, options: CalibrationOptions, says: str
) -> None:
    held = from_configmap(stored(NODE), "the store", node, options)
    assert held.incumbent is None
    (typed,) = held.notes
    note = note_text(typed)
    assert "the store was measured for something else" in note and says in note
    assert note.endswith("TF's default is the incumbent")


def test_advice_measured_with_another_input_shape_is_not_the_incumbent() -> None:
    sample = calibration_result(2, 1, node=NODE).subject
    subject = sample.model_copy(
        update={"inputs": {"input_ids": "int32[1,128]", "attention_mask": "int32[1,128]"}}
    )
    obj = stored(NODE, subject=subject)
    same = CalibrationOptions(input_shape="input_ids=128;attention_mask=128")
    assert from_configmap(obj, "the store", NODE, same).incumbent is not None
    longer = CalibrationOptions(input_shape="input_ids=256;attention_mask=128")
    held = from_configmap(obj, "the store", NODE, longer)
    assert held.incumbent is None
    assert "input shape: measured input_ids=128, this run input_ids=256" in note_text(held.notes[0])


def test_replayed_shapes_compare_by_their_dimensions_the_batch_left_out() -> None:
    sample = calibration_result(2, 1, node=NODE).subject
    replayed = {"input_ids": "int32[1-8,128]", "mask": "int32[1,1-4]", "ids": "int32[rank 1-2]"}
    obj = stored(NODE, subject=sample.model_copy(update={"inputs": replayed}))
    same = CalibrationOptions(input_shape="input_ids=128")
    assert from_configmap(obj, "the store", NODE, same).incumbent is not None
    other = CalibrationOptions(input_shape="input_ids=128;mask=4;ids=3")
    note = note_text(from_configmap(obj, "the store", NODE, other).notes[0])
    assert "input shape: measured mask=1-4, this run mask=4" in note
    assert "input shape: measured ids=int32[rank 1-2], this run ids=3" in note
    assert "input_ids" not in note


def test_advice_from_another_tf_version_is_not_the_incumbent() -> None:
    obj = stored(NODE, tf_version="1.0.0")
    held = from_configmap(obj, "the store", NODE, OPTIONS)
    assert held.incumbent is None
    assert "TensorFlow: calibrated with 1.0.0" in note_text(held.notes[0])


def test_advice_that_is_not_ours_or_does_not_validate_is_not_the_incumbent() -> None:
    foreign = stored(NODE)
    del foreign["metadata"]["labels"][LABEL_MANAGED_BY]
    held = from_configmap(foreign, "the store", NODE, OPTIONS)
    assert held.incumbent is None
    assert "was not written by tf-thread-advisor" in note_text(held.notes[0])

    broken = stored(NODE)
    broken["metadata"]["annotations"][PROVENANCE_ANNOTATION] = "{"
    held = from_configmap(broken, "the store", NODE, OPTIONS)
    assert held.incumbent is None
    assert "does not validate" in note_text(held.notes[0])


def test_an_env_file_gives_its_values_checked_against_this_node(tmp_path: Path) -> None:
    env = tmp_path / "advice.env"
    env.write_text("TF_NUM_INTRAOP_THREADS=3\nTF_NUM_INTEROP_THREADS=2\nOMP_NUM_THREADS=3\n")
    held = from_env_file(env, NODE)
    assert held.incumbent is not None
    assert held.incumbent.counts == (3, 2)
    assert "carries no provenance" in note_text(held.notes[0])
    env.write_text("TF_NUM_INTRAOP_THREADS=300\nTF_NUM_INTEROP_THREADS=2\n")
    held = from_env_file(env, NODE)
    assert held.incumbent is None
    assert "not a thread count up to 16" in note_text(held.notes[0])


# --------------------------------------------------------------------------------------------------
# end to end: the CLI, a simulated node, the real search over the cost model


class Simulated(list[dict[str, Any]]):
    """The incumbent each sweep was given, and ``main`` with the simulated node and sweep."""

    def __init__(self, instruments: Instruments) -> None:
        super().__init__()
        self.instruments = instruments

    def main(self, argv: list[str]) -> int:
        return main(argv, instruments=self.instruments)


@pytest.fixture
def simulated() -> Simulated:
    """``run``/``calibrate`` on NODE (8 CPUs under a 4-CPU quota) where every setting measures
    10 ms give or take 3% and TF's default 30 ms: nothing can beat a stored advice beyond noise."""

    def simulated_sweep(
        options: CalibrationOptions, node: NodeProfile, **kwargs: Any
    ) -> CalibrationResult:
        held = kwargs.get("incumbent")
        given.append({"incumbent": held})
        clock = FakeClock()
        trials = FakeTrials(
            clock=clock,
            usable=4.0,
            affinity=8,
            flat_p99=10.0,
            baseline_factor=3.0,
            noise=0.03,
            overhead_s=0.3,
            seed=len(given),
        )
        return sweep(options, node, trial_fn=trials, clock=clock, **kwargs)

    given = Simulated(Instruments(probe=lambda _root: NODE, sweep=simulated_sweep))
    return given  # filled by the sweeps as they run


def configmap(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def test_run_keeps_the_advice_in_its_output_file(
    tmp_path: Path, simulated: Simulated, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "advice.yaml"
    assert simulated.main(["run", "--output", str(out)]) == 0
    first = configmap(out)
    # as if written a while ago: the time its data last changed must survive an unchanged run
    first["metadata"]["annotations"][DATA_CHANGED_ANNOTATION] = "2026-01-02T03:04:05Z"
    out.write_text(yaml.safe_dump(first))
    assert simulated.main(["run", "--output", str(out)]) == 0
    second = configmap(out)
    # the second sweep raced the first one's advice and kept it: the same data and hash
    held = simulated[1]["incumbent"]
    assert held is not None and held.source == f"--output {out}"
    assert second["data"] == first["data"]
    hashes = [c["metadata"]["annotations"][HASH_ANNOTATION] for c in (first, second)]
    assert hashes[0] == hashes[1]
    prov = [
        yaml.safe_load(c["metadata"]["annotations"][PROVENANCE_ANNOTATION]) for c in (first, second)
    ]
    assert prov[1]["incumbent"]["kept"] is True
    assert second["metadata"]["annotations"][DATA_CHANGED_ANNOTATION] == "2026-01-02T03:04:05Z"
    err = capsys.readouterr().err
    assert "in force before:" in err and "against TF's default:" in err


def test_run_with_force_does_not_race_the_stored_advice(
    tmp_path: Path, simulated: Simulated, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "advice.yaml"
    out.write_text(yaml.safe_dump(stored(NODE, 3, 3)))
    assert simulated.main(["run", "--output", str(out), "--force"]) == 0
    assert simulated[0]["incumbent"] is None
    assert "--force: the stored advice is not the incumbent" in capsys.readouterr().err


def test_run_keeps_the_advice_in_the_cluster(tmp_path: Path, simulated: Simulated) -> None:
    with FakeApiServer(tmp_path, configmap_name=NAME) as api:
        argv = ["run", "--configmap", NAME, "--namespace", NS, "--kubeconfig", str(api.kubeconfig)]
        assert simulated.main(argv) == 0
        first = api.get(NS, NAME)
        assert simulated.main(argv) == 0
        second = api.get(NS, NAME)
    assert first is not None and second is not None
    held = simulated[1]["incumbent"]
    assert held is not None and held.source == f"configmaps/{NAME} in namespace {NS}"
    assert second["data"] == first["data"]


def test_calibrate_races_the_incumbent_it_is_given(
    tmp_path: Path, simulated: Simulated, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in-force.yaml"
    path.write_text(yaml.safe_dump(stored(NODE, 3, 3)))
    assert simulated.main(["calibrate", "--incumbent", str(path), "--format", "json"]) == 0
    held = simulated[0]["incumbent"]
    assert held is not None and held.counts == (3, 3)
    out, err = capsys.readouterr()
    assert '"kept": true' in out
    assert "in force before: 3/3" in err


@pytest.mark.parametrize(("content", "code"), [(None, 2), ("kind: [", 6)])
def test_an_incumbent_file_that_cannot_be_used_is_an_error_before_the_sweep(
    tmp_path: Path,
    simulated: Simulated,
    capsys: pytest.CaptureFixture[str],
    content: str | None,
    code: int,
) -> None:
    path = tmp_path / "in-force.yaml"
    if content is not None:
        path.write_text(content)
    assert simulated.main(["calibrate", "--incumbent", str(path)]) == code
    assert simulated == []  # no sweep ran
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "in-force.yaml" in err[0]


def test_advice_measured_on_other_inputs_is_not_the_incumbent(tmp_path: Path) -> None:
    """Replayed requests and synthesised inputs are different measurements of one model."""
    model = tmp_path / "m"
    warmup = model / "assets.extra" / "tf_serving_warmup_requests"
    warmup.parent.mkdir(parents=True)
    warmup.write_bytes(b"records")
    replayed = SubjectInfo(
        kind="savedmodel",
        path=str(model),
        inputs_source=InputsSource(kind="warmup", file=str(warmup), requests=2),
    )
    obj = stored(NODE, subject=replayed)
    same = CalibrationOptions(model_path=str(model))
    assert from_configmap(obj, "the store", NODE, same).incumbent is not None
    synthesised = CalibrationOptions(model_path=str(model), requests="none")
    held = from_configmap(obj, "the store", NODE, synthesised)
    assert held.incumbent is None
    assert "inputs: measured on the warmup file, this run synthesised inputs" in note_text(
        held.notes[0]
    )


def test_a_requests_file_named_another_way_is_the_same_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stored advice names the file as the run read it (``r.json``); ``./r.json`` this time
    is the same file, so the same inputs."""
    model = tmp_path / "m"
    model.mkdir()
    (tmp_path / "r.json").write_text('{"instances": [1]}')
    monkeypatch.chdir(tmp_path)
    replayed = SubjectInfo(
        kind="savedmodel",
        path=str(model),
        inputs_source=InputsSource(kind="file", file="r.json", requests=1),
    )
    obj = stored(NODE, subject=replayed)
    dotted = CalibrationOptions(model_path=str(model), requests="./r.json")
    assert from_configmap(obj, "the store", NODE, dotted).incumbent is not None
