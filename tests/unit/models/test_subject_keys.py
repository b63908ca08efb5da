"""The subject (the model under test) keeps its stored and printed key, ``workload``: a result's
JSON and an advice's provenance write it under that key alone, and stored advice reads back."""

from __future__ import annotations

from advisor.models import CalibrationResult, Provenance, SubjectInfo
from testkit.fakeapi.samples import calibration_result, recommendation


def test_a_result_prints_its_subject_under_the_workload_key() -> None:
    result = calibration_result(2, 1)
    for dumped in (result.model_dump(), result.model_dump(mode="json")):
        assert "subject" not in dumped
        assert dumped["workload"]["kind"] == "builtin"
        assert "model_format" not in dumped["workload"]
    assert '"workload":{"kind":"builtin"' in result.model_dump_json()
    assert CalibrationResult.model_validate(result.model_dump(mode="json")) == result


def test_stored_provenance_reads_back_by_its_key_and_writes_it_again() -> None:
    stored = recommendation(2, 1).provenance.model_dump(mode="json")
    assert "subject" not in stored and stored["workload"]["kind"] == "builtin"
    read = Provenance.model_validate(stored)
    assert read.subject == SubjectInfo(model_format="builtin")
    assert read.model_dump(mode="json") == stored
