"""Recommendation building, ConfigMap rendering, validation rules and the YAML round trip."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from advisor.errors import InvalidAdviceError
from advisor.keys import DATA_CHANGED_ANNOTATION, HASH_ANNOTATION, PROVENANCE_ANNOTATION
from advisor.models import (
    MAX_PROVENANCE_TRIALS,
    TENSORFLOW,
    NearBest,
    Recommendation,
    thread_cap,
)
from advisor.recommend import (
    build_recommendation,
    configmap_yaml,
    content_hash,
    env_file_text,
    load_configmap_yaml,
    parse_configmap,
    provenance_json,
    render_configmap,
)
from testkit.fakeapi.samples import (
    FIXED_NOW,
    calibration_result,
    node_profile,
    recommendation,
    trial,
)
from tests.support.real_parts import missing_real_part


def test_env_follows_the_calibration_and_omp_follows_intra() -> None:
    rec = recommendation(3, 2)
    assert rec.env == {
        "TF_NUM_INTRAOP_THREADS": "3",
        "TF_NUM_INTEROP_THREADS": "2",
        "OMP_NUM_THREADS": "3",
    }
    assert rec.provenance.node_name == "node-a"  # from the Downward API the probe saw
    assert rec.provenance.trials_total == 2
    assert rec.provenance.created_at == FIXED_NOW


def test_configmap_data_is_exactly_the_env_and_labels_are_standard() -> None:
    rec = recommendation(2, 1, node_labels={"node.kubernetes.io/instance-type": "c6i.4xlarge"})
    cm = render_configmap(rec, "tf-advice", "ml")
    assert cm["data"] == rec.env
    assert list(cm["data"]) == list(TENSORFLOW.thread_names)
    assert cm["metadata"]["namespace"] == "ml"
    labels = cm["metadata"]["labels"]
    assert labels["app.kubernetes.io/name"] == "tf-thread-advisor"
    assert labels["app.kubernetes.io/managed-by"] == "tf-thread-advisor"
    assert labels["app.kubernetes.io/component"] == "thread-advice"
    assert labels["app.kubernetes.io/version"] == "0.1.0"
    annotations = cm["metadata"]["annotations"]
    assert annotations[HASH_ANNOTATION] == content_hash(rec.env)
    provenance = json.loads(annotations[PROVENANCE_ANNOTATION])
    assert provenance["node_labels"] == {"node.kubernetes.io/instance-type": "c6i.4xlarge"}
    assert provenance["workload"]["kind"] == "builtin"
    assert " " not in annotations[PROVENANCE_ANNOTATION].replace("Test CPU @ 2.0GHz", "")


def test_yaml_round_trip_gives_back_the_same_recommendation() -> None:
    rec = recommendation(4, 2)
    text = configmap_yaml(render_configmap(rec, "tf-advice", "ml"))
    parsed = parse_configmap(load_configmap_yaml(text, "stdin"))
    assert parsed.recommendation == rec
    assert (parsed.name, parsed.namespace) == ("tf-advice", "ml")
    assert parsed.managed_by == "tf-thread-advisor"
    # the data values must stay strings in YAML, or the API server refuses the object
    assert yaml.safe_load(text)["data"]["TF_NUM_INTRAOP_THREADS"] == "4"


def test_json_round_trip_of_the_model() -> None:
    rec = recommendation(2, 2)
    assert Recommendation.model_validate_json(rec.model_dump_json()) == rec


def test_env_file_lines() -> None:
    assert env_file_text(recommendation(3, 1)) == (
        "TF_NUM_INTRAOP_THREADS=3\nTF_NUM_INTEROP_THREADS=1\nOMP_NUM_THREADS=3\n"
    )


def test_content_hash_depends_on_data_only() -> None:
    a = recommendation(2, 1)
    b = recommendation(2, 1, budget_s=300.0)
    c = recommendation(2, 2)
    assert content_hash(a.env) == content_hash(b.env)
    assert content_hash(a.env) != content_hash(c.env)
    assert content_hash(a.env).startswith("sha256:") and len(content_hash(a.env)) == 71


@pytest.mark.parametrize(
    ("affinity", "cap"),
    [
        (1, 4),  # the floor: a 1-CPU pod may still be advised 2 inter-op threads
        (2, 4),  # twice the mask meets the floor
        (3, 6),  # the first count above the floor
        (8, 16),
        (511, 1022),
        (512, 1024),  # twice the mask meets the ceiling
        (513, 1024),
        (4096, 1024),
    ],
)
def test_thread_cap_known_values(affinity: int, cap: int) -> None:
    assert thread_cap(affinity) == cap


def test_thread_cap_never_shrinks_and_always_allows_one_thread_per_cpu() -> None:
    caps = [thread_cap(n) for n in range(1, 1100)]
    assert caps == sorted(caps)
    for n, cap in enumerate(caps, start=1):
        # one thread per usable CPU is always allowed (up to the ceiling of 1024); more than
        # twice as many never is, unless the floor of 4 allows them
        assert min(n, 1024) <= cap <= max(2 * n, 4)


def test_counts_above_the_cap_are_refused() -> None:
    node = node_profile(affinity=2, quota=None, logical=2)
    ok = build_recommendation(
        calibration_result(4, 4, node=node), advisor_version="0.1.0", now=FIXED_NOW
    )
    assert ok.intra_op_threads == 4
    with pytest.raises(InvalidAdviceError, match="TF_NUM_INTRAOP_THREADS=5 exceeds 4"):
        build_recommendation(
            calibration_result(5, 1, node=node), advisor_version="0.1.0", now=FIXED_NOW
        )


def _cm() -> dict[str, Any]:
    return render_configmap(recommendation(2, 1), "tf-advice", "ml")


def _with(change: Any) -> dict[str, Any]:
    cm = copy.deepcopy(_cm())
    change(cm)
    return cm


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda cm: cm["data"].update(TF_NUM_INTRAOP_THREADS="0"), "not a positive integer"),
        (lambda cm: cm["data"].update(TF_NUM_INTRAOP_THREADS="02"), "not a positive integer"),
        (lambda cm: cm["data"].update(TF_NUM_INTEROP_THREADS="-1"), "not a positive integer"),
        (lambda cm: cm["data"].update(TF_NUM_INTEROP_THREADS=" 2"), "not a positive integer"),
        (lambda cm: cm["data"].update(OMP_NUM_THREADS=4), "must be a string"),
        (lambda cm: cm["data"].update({"BAD-NAME": "1"}), "not a valid environment variable"),
        (lambda cm: cm["data"].update(EXTRA="1"), "unexpected EXTRA"),
        (lambda cm: cm["data"].pop("OMP_NUM_THREADS"), "missing OMP_NUM_THREADS"),
        (lambda cm: cm["data"].update(TF_NUM_INTRAOP_THREADS="40000"), "exceeds 8"),
        (lambda cm: cm["data"].update(TF_NUM_INTRAOP_THREADS="9" * 5000), "exceeds 8"),
        (lambda cm: cm["metadata"].update(name="Tf_Advice"), "metadata.name 'Tf_Advice'"),
        (lambda cm: cm["metadata"].update(namespace="a.b"), "metadata.namespace 'a.b'"),
        (lambda cm: cm.update(kind="Secret"), "kind ConfigMap"),
        (lambda cm: cm.update(binaryData={"x": "eA=="}), "binaryData must be empty"),
        (lambda cm: cm["metadata"]["annotations"].pop(PROVENANCE_ANNOTATION), "is missing"),
        (
            lambda cm: cm["metadata"]["annotations"].update({PROVENANCE_ANNOTATION: "{"}),
            "is not JSON",
        ),
        (
            lambda cm: cm["metadata"]["annotations"].update(
                {PROVENANCE_ANNOTATION: json.dumps({"objective": "latency"})}
            ),
            "provenance.logical_cpus: Field required",
        ),
        (
            lambda cm: cm["metadata"]["annotations"].update({HASH_ANNOTATION: "sha256:00"}),
            "edited by hand",
        ),
    ],
)
def test_invalid_configmaps_give_one_line(change: Any, message: str) -> None:
    with pytest.raises(InvalidAdviceError, match=message) as info:
        parse_configmap(_with(change), "cm.yaml")
    assert "\n" not in str(info.value)


def test_hand_edited_value_fails_on_the_hash_even_when_in_range() -> None:
    cm = _with(lambda cm: cm["data"].update(TF_NUM_INTEROP_THREADS="2"))
    with pytest.raises(InvalidAdviceError, match="content-hash"):
        parse_configmap(cm)


def test_unknown_provenance_field_is_an_error() -> None:
    def add_field(cm: dict[str, Any]) -> None:
        prov = json.loads(cm["metadata"]["annotations"][PROVENANCE_ANNOTATION])
        prov["nodename"] = "typo"
        cm["metadata"]["annotations"][PROVENANCE_ANNOTATION] = json.dumps(prov)

    with pytest.raises(InvalidAdviceError, match="nodename: Extra inputs are not permitted"):
        parse_configmap(_with(add_field))


def test_server_fields_in_metadata_are_accepted() -> None:
    cm = _with(
        lambda cm: cm["metadata"].update(
            resourceVersion="42", uid="u-1", managedFields=[{"manager": "x"}]
        )
    )
    assert parse_configmap(cm).resource_version == "42"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [", "not valid YAML at line"),
        ("", "found 0"),
        ("a: 1\n---\nb: 2\n", "found 2"),
    ],
)
def test_yaml_problems(text: str, message: str) -> None:
    with pytest.raises(InvalidAdviceError, match=message):
        load_configmap_yaml(text, "x.yaml")


def test_render_refuses_bad_names() -> None:
    with pytest.raises(InvalidAdviceError, match="ConfigMap name 'Bad_Name'"):
        render_configmap(recommendation(), "Bad_Name", "ml")
    with pytest.raises(InvalidAdviceError, match="namespace 'ML'"):
        render_configmap(recommendation(), "ok", "ML")


def test_many_trials_are_truncated_and_the_annotation_stays_small() -> None:
    trials = [trial(None, None, 20.0)] + [
        trial(1 + i % 4, 1 + i % 2, 10.0 + i, reason="x" * 500, round=i // 100) for i in range(3000)
    ]
    rec = build_recommendation(
        calibration_result(2, 1, trials=trials), advisor_version="0.1.0", now=FIXED_NOW
    )
    assert rec.provenance.trials_total == 3001
    assert len(rec.provenance.trials) == MAX_PROVENANCE_TRIALS
    assert rec.provenance.trials[0].setting.intra is None  # the baseline is kept
    assert rec.provenance.trials[-1].p99_ms == 10.0 + 2999  # and the last rounds
    cm = render_configmap(rec, "tf-advice")
    size = len(cm["metadata"]["annotations"][PROVENANCE_ANNOTATION])
    assert size < 64 * 1024, size


@pytest.mark.parametrize("version", ["1.30", "1.35"])
def test_rendered_configmap_passes_the_upstream_schema(version: str) -> None:
    try:
        import kubernetes_validate
    except ImportError:
        missing_real_part("kubernetes-validate is not installed (pip install -e '.[dev]')")
    cm = render_configmap(recommendation(2, 1, node_labels={"pool": "cpu"}), "tf-advice", "ml")
    kubernetes_validate.validate(yaml.safe_load(configmap_yaml(cm)), version, strict=True)
    broken = copy.deepcopy(cm)
    broken["data"]["TF_NUM_INTRAOP_THREADS"] = 2  # an int: the schema wants strings
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, version, strict=True)


def test_input_nested_too_deep_to_parse_is_invalid_advice_not_a_crash() -> None:
    # Python's parsers recurse: a hostile or broken file must still be one invalid-advice line
    with pytest.raises(InvalidAdviceError, match=r"cm\.yaml: nested too deeply"):
        load_configmap_yaml("a: " + "[" * 20000 + "]" * 20000 + "\n", "cm.yaml")
    cm = render_configmap(recommendation(), "tf-advice", "ml")
    cm["metadata"]["annotations"][PROVENANCE_ANNOTATION] = "[" * 200000 + "]" * 200000
    with pytest.raises(InvalidAdviceError, match="provenance is nested too deeply"):
        parse_configmap(cm, "cm.yaml")


def near(intra: int, inter: int, p99: float, *, default: bool = False) -> NearBest:
    return NearBest(intra=intra, inter=inter, default=default, p99_ms=p99, cv=0.02, windows=4)


def test_the_range_within_noise_rides_in_the_provenance_compactly_and_reads_back() -> None:
    settings = [near(2, 1, 9.5)] + [near(2 + i % 5, 1 + i % 3, 9.6) for i in range(50)]
    result = calibration_result(2, 1).model_copy(
        update={
            "near_best": [*settings, near(4, 4, 9.7, default=True)],
            "noise_band": 0.0512345,
            "gain": 1.0,
            "gain_within_noise": True,
        }
    )
    rec = build_recommendation(result, advisor_version="0.1.0", now=FIXED_NOW)
    span = rec.provenance.near_best
    assert span is not None
    assert (span.intra, span.inter, span.settings, span.default) == ([2, 6], [1, 4], 52, True)
    assert span.band == 0.051
    assert span.describe() == "intra 2-6, inter 1-4 (52 settings, TF's default among them)"
    assert rec.provenance.gain_within_noise
    # bounds, not the list: the annotation does not grow with the range
    stored = json.loads(provenance_json(rec))
    assert stored["near_best"] == {
        "intra": [2, 6],
        "inter": [1, 4],
        "settings": 52,
        "default": True,
        "band": 0.051,
    }
    parsed = parse_configmap(render_configmap(rec, "tf-advice", "ml"))
    assert parsed.recommendation.provenance.near_best == span


def test_older_advice_without_the_range_or_the_noise_flag_still_validates() -> None:
    cm = render_configmap(recommendation(2, 1), "tf-advice", "ml")
    prov = json.loads(cm["metadata"]["annotations"][PROVENANCE_ANNOTATION])
    prov.pop("gain_within_noise")
    assert "near_best" not in prov  # none recorded: not written at all
    cm["metadata"]["annotations"][PROVENANCE_ANNOTATION] = json.dumps(prov)
    parsed = parse_configmap(cm, "old.yaml").recommendation.provenance
    assert parsed.near_best is None
    assert parsed.gain_within_noise is False


def test_the_node_selector_is_recorded_and_absent_when_not_given() -> None:

    pool = {"node.kubernetes.io/instance-type": "c7i.4xlarge"}
    rec = recommendation(2, 1, node_selector=pool, node_labels={"zone": "a"})
    assert rec.provenance.node_selector == pool
    assert rec.provenance.node_labels == {**pool, "zone": "a"}  # a selector's pairs are labels
    cm = render_configmap(rec, "tf-advice", "ml")
    assert parse_configmap(cm).recommendation == rec
    # without one, the provenance does not name the field: older readers still parse it
    plain = render_configmap(recommendation(2, 1), "tf-advice", "ml")
    assert "node_selector" not in plain["metadata"]["annotations"][PROVENANCE_ANNOTATION]
    # the data-changed time starts as the time the advice was built
    assert cm["metadata"]["annotations"][DATA_CHANGED_ANNOTATION] == "2026-11-21T08:00:00Z"
    assert parse_configmap(cm).data_changed_at == FIXED_NOW


@pytest.mark.parametrize("bad", ["yesterday", "2026-11-21T08:00:00", "", "2026-13-01T00:00:00Z"])
def test_a_data_changed_time_that_does_not_parse_is_invalid(bad: str) -> None:

    cm = render_configmap(recommendation(2, 1), "tf-advice", "ml")
    cm["metadata"]["annotations"][DATA_CHANGED_ANNOTATION] = bad
    with pytest.raises(InvalidAdviceError, match="data-changed-at"):
        parse_configmap(cm)
    del cm["metadata"]["annotations"][DATA_CHANGED_ANNOTATION]
    assert parse_configmap(cm).data_changed_at is None  # older advice: none recorded


def test_the_serving_target_rides_in_the_provenance_and_reads_back() -> None:
    from advisor.models import ServingTarget

    target = ServingTarget(
        workload="deployment/web",
        container="server",
        image="registry.example.com/web:1.2",
        model_path="/models/resnet",
        cpu_from="request",
        spec_hash="3f9a1c",
        spec={"limits.memory": "2Gi", "tolerations": "#0a1b2c3d4e"},
    )
    rec = recommendation(2, 1, target=target)
    assert rec.provenance.target == target
    cm = render_configmap(rec, "tf-advice", "ml")
    stored = json.loads(cm["metadata"]["annotations"][PROVENANCE_ANNOTATION])
    assert stored["target"] == target.model_dump(mode="json")
    # through YAML, as validate and status read it
    parsed = parse_configmap(load_configmap_yaml(configmap_yaml(cm), "cm.yaml"))
    assert parsed.recommendation == rec
    assert parsed.recommendation.provenance.target == target


def test_a_target_names_what_it_knows_and_defaults_to_the_limit() -> None:
    from advisor.models import ServingTarget

    bare = ServingTarget(workload="statefulset/db", container="db")
    rec = recommendation(2, 1, target=bare)
    cm = render_configmap(rec, "tf-advice", "ml")
    stored = json.loads(cm["metadata"]["annotations"][PROVENANCE_ANNOTATION])
    # no nulls in the annotation: what was not given is not written
    assert stored["target"] == {
        "workload": "statefulset/db",
        "container": "db",
        "cpu_from": "limit",
    }
    target = parse_configmap(cm).recommendation.provenance.target
    assert target is not None
    assert (target.cpu_from, target.image, target.spec_hash) == ("limit", None, None)


def test_advice_without_a_target_is_written_and_read_as_before() -> None:
    cm = render_configmap(recommendation(2, 1), "tf-advice", "ml")
    prov = json.loads(cm["metadata"]["annotations"][PROVENANCE_ANNOTATION])
    # not named at all, so a reader that predates the field parses it too
    assert "target" not in prov
    assert parse_configmap(cm, "old.yaml").recommendation.provenance.target is None


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ({"container": "server"}, "target.workload"),
        ({"workload": "deployment/web", "container": ""}, "target.container"),
        ({"workload": "deployment/web", "container": "s", "cpu_from": "quota"}, "cpu_from"),
        ({"workload": "deployment/web", "container": "s", "replicas": 2}, "replicas"),
    ],
)
def test_a_stored_target_that_does_not_validate_is_invalid_advice(
    target: dict[str, Any], message: str
) -> None:
    cm = render_configmap(recommendation(2, 1), "tf-advice", "ml")
    prov = json.loads(cm["metadata"]["annotations"][PROVENANCE_ANNOTATION])
    prov["target"] = target
    cm["metadata"]["annotations"][PROVENANCE_ANNOTATION] = json.dumps(prov)
    with pytest.raises(InvalidAdviceError, match=message):
        parse_configmap(cm)
