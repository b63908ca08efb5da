"""A TF Serving container without the model annotation names its model itself: its
``--model_base_path`` (last one wins, ``$(VAR)`` expanded from its env), or the official image's
``MODEL_BASE_PATH``/``MODEL_NAME`` env (the image's ``/models`` and ``model`` when the pod leaves
them); a ``--model_config_file``, env from elsewhere and shell variables are reasons to annotate;
object storage stays skipped. The Job copies the base path and names it in the spec."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from advisor.fleet.decide import decide
from advisor.fleet.derive import DeriveError
from advisor.fleet.optin import FIELD_ANNOTATION, Defaults, read_ask
from advisor.fleet.spec import MODEL_PATH
from advisor.fleet.tf_serving import ServedModel, served_model
from advisor.keys import ANN_MODEL
from advisor.models.kube import Container, KubeWorkload
from advisor.render.plan_reasons import plan_reason_text
from tests.support.fleet_workloads import SETTINGS, advisor, arg, container, copier, deployment
from tests.support.fleet_workloads import derive as derive_with

OFFICIAL = "tensorflow/serving:2.19.0"


def served(**fields: Any) -> ServedModel | None:
    return served_model(Container.read(container(**fields)))


def problem(**fields: Any) -> str:
    with pytest.raises(DeriveError) as caught:
        served_model(Container.read(container(**fields)))
    message = str(caught.value)
    assert "\n" not in message
    return message


def env(**values: str) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in values.items()]


# --------------------------------------------------------------------------------------------------
# What the container says


@pytest.mark.parametrize(
    "fields",
    [
        {"args": ["--port=8500", "--model_name=resnet", "--model_base_path=/models/resnet"]},
        {"args": ["--model_base_path", "/models/resnet"]},
        {"command": ["tensorflow_model_server", "--model_base_path=/models/resnet"]},
        {
            "command": ["/bin/sh", "-c"],
            "args": [
                "exec tensorflow_model_server --rest_api_port=8501 "
                "--model_base_path='/models/resnet'"
            ],
        },
        # the official image passes its own first: the args' value is the last, the one kept
        {"image": OFFICIAL, "args": ["--model_base_path=/models/resnet"]},
        {"args": ["--model_base_path=/models/old", "--model_base_path=/models/resnet"]},
        {"args": ["--model_base_path=$(ROOT)/resnet"], "env": env(ROOT="/models")},
    ],
    ids=["args", "args-space", "command", "shell", "official-image", "last-wins", "expanded"],
)
def test_model_base_path_names_the_model(fields: dict[str, Any]) -> None:
    assert served(**fields) == ServedModel("/models/resnet", "--model_base_path")


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"image": OFFICIAL}, "/models/model"),
        ({"image": "docker.io/tensorflow/serving@sha256:" + "0" * 64}, "/models/model"),
        ({"image": "mirror.example.com:5000/tensorflow/serving"}, "/models/model"),
        ({"image": OFFICIAL, "env": env(MODEL_NAME="resnet")}, "/models/resnet"),
        ({"image": OFFICIAL, "env": env(MODEL_BASE_PATH="/srv/", MODEL_NAME="r")}, "/srv/r"),
        # the env alone says the official entrypoint reads it (an image built FROM it)
        ({"env": env(MODEL_NAME="resnet")}, "/models/resnet"),
        (
            {"command": ["/usr/bin/tf_serving_entrypoint.sh"], "env": env(MODEL_NAME="m")},
            "/models/m",
        ),
        # --model_name names the model; the entrypoint's base path is still MODEL_NAME's
        ({"image": OFFICIAL, "args": ["--model_name=resnet"]}, "/models/model"),
    ],
    ids=["image", "digest", "mirror-port", "name", "base-and-name", "env-only", "entry", "flag"],
)
def test_the_official_images_env_names_the_model(fields: dict[str, Any], path: str) -> None:
    assert served(**fields) == ServedModel(path, "MODEL_BASE_PATH/MODEL_NAME")


@pytest.mark.parametrize(
    "fields",
    [
        {},  # registry.example.com/resnet-serving: not known to be TF Serving
        {"image": "tensorflow/serving-like:1"},
        {"image": "example.com/nottensorflow/serving:1"},
        # its own command: the official entrypoint (and its env) is not what runs
        {"image": OFFICIAL, "command": ["python", "serve.py"]},
    ],
    ids=["other-image", "prefix", "other-owner", "own-command"],
)
def test_a_container_not_known_as_tf_serving_names_nothing(fields: dict[str, Any]) -> None:
    assert served(**fields) is None


def test_a_model_config_file_is_a_reason_to_annotate() -> None:
    message = problem(args=["--model_config_file=/config/models.config"], image=OFFICIAL)
    assert message == (
        "container server serves the models its --model_config_file lists "
        "(/config/models.config), a file plan cannot read: set annotation "
        f"{ANN_MODEL} to the model's base path or version directory"
    )


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        (
            {"args": ["--model_base_path=$(ROOT)/m"]},
            "--model_base_path is '$(ROOT)/m': $(ROOT) is not a value of the container's env",
        ),
        (
            {
                "args": ["--model_base_path=$(ROOT)/m"],
                "env": [{"name": "ROOT", "valueFrom": {"configMapKeyRef": {"name": "c"}}}],
            },
            "$(ROOT) is not a value",
        ),
        (
            {"command": ["sh", "-c", "tensorflow_model_server --model_base_path=$BASE/m"]},
            "--model_base_path is '$BASE/m': a shell variable plan cannot resolve",
        ),
        (
            {"image": OFFICIAL, "env": [{"name": "MODEL_NAME", "valueFrom": {"fieldRef": {}}}]},
            "env MODEL_NAME comes from a reference (valueFrom) plan does not read",
        ),
        (
            {"command": ["tensorflow_model_server", "--port=8500"]},
            "runs tensorflow_model_server without --model_base_path or --model_config_file",
        ),
    ],
    ids=["undefined", "value-from", "shell", "env-value-from", "no-model"],
)
def test_what_plan_cannot_read_is_named(fields: dict[str, Any], says: str) -> None:
    message = problem(**fields)
    assert says in message, message
    assert message.startswith("container server")


def test_a_literal_dollar_is_kept() -> None:
    found = served(args=["--model_base_path=/models/$$x"])
    assert found == ServedModel("/models/$x", "--model_base_path")


# --------------------------------------------------------------------------------------------------
# The Job of a workload without the annotation


def unannotated(*containers: dict[str, Any]) -> dict[str, Any]:
    workload = deployment(*containers)
    del workload["metadata"]["annotations"][ANN_MODEL]
    return workload


def derive(workload: dict[str, Any]) -> Any:
    return derive_with(workload, read_ask(workload["metadata"]["annotations"]))


def test_the_job_copies_and_measures_the_base_path_the_server_names() -> None:
    job = derive(unannotated(container(image=OFFICIAL, env=env(MODEL_NAME="resnet"))))
    # the whole base path is copied: the Job resolves its highest version when it runs
    assert copier(job)["command"] == ["cp", "-RL", "/models/resnet", "/tfta-model/"]
    assert arg(job, "--model") == ["/tfta-model/resnet"]
    assert arg(job, "--serving-model-path") == ["/models/resnet"]
    assert job.target.model_path == "/models/resnet"
    assert "--model=/tfta-model/resnet" in advisor(job)["args"]


def test_a_request_file_is_read_inside_the_base_path_the_job_copies() -> None:
    """The requests annotation (or plan's --requests) names a file relative to the model the Job
    copies, which the server names where the Job is derived: not refused for want of the model
    annotation when the ask is read."""
    workload = unannotated(container(image=OFFICIAL, env=env(MODEL_NAME="resnet")))
    workload["metadata"]["annotations"][FIELD_ANNOTATION["requests"]] = "requests.jsonl"
    job = derive(workload)
    assert arg(job, "--requests") == ["/tfta-model/resnet/requests.jsonl"]
    plan_default = unannotated(container(image=OFFICIAL, env=env(MODEL_NAME="resnet")))
    ask = read_ask(plan_default["metadata"]["annotations"], Defaults(requests="r.json"))
    assert ask.model_path is None
    assert ask.options.requests == "r.json"


def test_the_annotation_wins_over_what_the_server_says() -> None:
    workload = deployment(container(args=["--model_base_path=/models/other"]))
    job = derive(workload)
    assert job.target.model_path == "/models/resnet/1"


def test_the_base_path_is_in_the_spec_so_a_new_name_is_a_new_job() -> None:
    first = derive(unannotated(container(image=OFFICIAL, env=env(MODEL_NAME="a"))))
    second = derive(unannotated(container(image=OFFICIAL, env=env(MODEL_NAME="b"))))
    assert first.name != second.name
    # the record leaves the model path to the target (plan compares it in its own words)
    assert MODEL_PATH not in first.target.spec
    assert (first.target.model_path, second.target.model_path) == ("/models/a", "/models/b")


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"image": OFFICIAL, "env": env(MODEL_BASE_PATH="gs://bucket")}, "object storage (gs://)"),
        ({"args": ["--model_base_path=s3://bucket/m"]}, "object storage (s3://)"),
        ({"args": ["--model_base_path=models/m"]}, "must be an absolute path below '/'"),
        ({}, f"annotation {ANN_MODEL} is required"),
    ],
    ids=["env-gs", "flag-s3", "relative", "not-tf-serving"],
)
def test_what_cannot_be_copied_is_skipped_with_its_reason(
    fields: dict[str, Any], says: str
) -> None:
    with pytest.raises(DeriveError) as caught:
        derive(unannotated(container(**fields)))
    assert says in str(caught.value), str(caught.value)


def test_plan_calibrates_an_unannotated_tf_serving_workload_and_skips_the_rest() -> None:
    tf_serving = unannotated(container(image=OFFICIAL))
    other = unannotated(container())
    other["metadata"]["name"] = "other"
    for obj in (tf_serving, other):
        name = obj["metadata"]["name"]
        obj["metadata"]["annotations"]["tf-thread-advisor.io/configmap"] = f"advice-{name}"
    decided = decide(
        [KubeWorkload.read(obj) for obj in (tf_serving, other)],
        {},
        [],
        defaults=Defaults(),
        settings=SETTINGS,
        now=datetime(2026, 1, 1, tzinfo=timezone.utc),
    )
    verdicts = {str(p.workload): (p.decision, plan_reason_text(p.reason)) for p in decided}
    assert verdicts["deployment/resnet"][0] == "calibrate", verdicts
    assert verdicts["deployment/other"][0] == "skipped"
    assert f"annotation {ANN_MODEL} is required" in verdicts["deployment/other"][1]
