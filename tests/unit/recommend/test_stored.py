"""A listed ConfigMap's advice, parsed when first asked for and kept: the advice, or the error
naming the ConfigMap as its reader does; the replaced advice read the same way."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

import pytest

from advisor.errors import InvalidAdviceError
from advisor.keys import LABEL_MANAGED_BY, PROVENANCE_ANNOTATION
from advisor.recommend import ParsedAdvice, parse
from advisor.recommend.previous import keep_previous
from advisor.recommend.stored import StoredAdvice, by_name
from testkit.fakeapi.samples import advice_configmap

MEASURED = datetime(2026, 11, 1, 8, tzinfo=timezone.utc)


def test_the_advice_is_parsed_once_and_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    stored = StoredAdvice.read(advice_configmap("tf-advice", "ml", measured=MEASURED))
    calls: list[object] = []
    real = parse.parse_configmap

    def counted(obj: object, source: str = "ConfigMap") -> ParsedAdvice:
        calls.append(obj)
        return real(obj, source)

    monkeypatch.setattr("advisor.recommend.stored.parse_configmap", counted)
    first, again = stored.parsed, stored.parsed
    assert first is again and first is not None
    assert (first.name, first.namespace, first.recommendation.intra_op_threads) == (
        "tf-advice",
        "ml",
        2,
    )
    assert len(calls) == 1


def test_an_invalid_advice_is_its_error_named_as_the_reader_names_it() -> None:
    obj = advice_configmap("tf-advice", "ml", measured=MEASURED)
    del obj["metadata"]["annotations"][PROVENANCE_ANNOTATION]
    stored = StoredAdvice.read(obj, "ConfigMap tf-advice")
    assert stored.parsed is None
    assert isinstance(stored.outcome, InvalidAdviceError)
    assert str(stored.outcome) == (
        f"ConfigMap tf-advice (ml/tf-advice): annotation {PROVENANCE_ANNOTATION} is missing"
    )
    # the listing names each by its own name unless told otherwise
    found = by_name([obj, advice_configmap("other", "ml", measured=MEASURED)])
    assert list(found) == ["tf-advice", "other"]
    assert [s.source for s in found.values()] == ["ConfigMap tf-advice", "ConfigMap other"]
    assert by_name([obj], "ConfigMap")["tf-advice"].source == "ConfigMap"


def test_ours_is_the_label_whether_or_not_it_validates() -> None:
    obj = advice_configmap("tf-advice", "ml", measured=MEASURED)
    foreign = copy.deepcopy(obj)
    foreign["metadata"]["labels"][LABEL_MANAGED_BY] = "helm"
    broken = copy.deepcopy(obj)
    broken["data"] = {"junk": "1"}
    assert [StoredAdvice.read(o).ours for o in (obj, foreign, broken)] == [True, False, True]
    assert StoredAdvice.read(broken).parsed is None
    # a ConfigMap the API server sent with a malformed metadata block is nobody's
    assert not StoredAdvice.read({"kind": "ConfigMap", "metadata": "junk"}).ours


def test_the_replaced_advice_is_read_from_the_configmap() -> None:
    old = advice_configmap("tf-advice", "ml", measured=MEASURED)
    new = advice_configmap("tf-advice", "ml", measured=MEASURED + timedelta(days=1))
    assert StoredAdvice.read(old).previous is None
    old["data"] = {**old["data"], "OMP_NUM_THREADS": "3"}
    kept = StoredAdvice.read(keep_previous(new, old)).previous
    assert kept is not None and kept.data["OMP_NUM_THREADS"] == "3"
