"""TF Serving's ``PredictionLog`` (the records of a warmup file) and the requests in it, defined
here over TensorFlow's own ``TensorProto`` and ``Example``.

Why not ``tensorflow-serving-api``: it requires the ``tensorflow`` distribution, so beside
``tensorflow-cpu`` pip would install a second TensorFlow over the first's files; the product
cannot depend on it, and a warmup file, the input used by default, would need a manual
``pip install --no-deps`` after ``pip install .``. Why built at import from ``descriptor_pb2``
rather than checked-in ``protoc`` output: generated code checks the protobuf runtime it was
generated for (6.31's refuses an older one, and TensorFlow 2.16 pins protobuf below 5), while a
descriptor built at run time works with whichever protobuf TensorFlow brought.

The messages are wire-compatible with TF Serving's (``tensorflow_serving/apis/*.proto``): the
same field numbers, types and oneof names, which is all binary parsing reads. They live in a
package of their own (``tf_thread_advisor.serving``), so the official protos, where installed in
the same process, do not clash with them in the default descriptor pool. Only what a replay reads
is declared: the requests. The responses and log metadata are not (their bytes parse as unknown
fields), and the streamed and session-run logs are empty messages, so ``WhichOneof`` still names
them. tests/system/test_serving_protos.py holds every field here to the official descriptors.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, wrappers_pb2
from tensorflow.core.example import example_pb2
from tensorflow.core.framework import tensor_pb2

_FILE = "tf_thread_advisor/serving.proto"
_PACKAGE = "tf_thread_advisor.serving"

_F = descriptor_pb2.FieldDescriptorProto
_STRING, _MESSAGE = _F.TYPE_STRING, _F.TYPE_MESSAGE
_ONE, _MANY = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

#: a field: (name, number, type, label, message type or None, oneof or None); a message type
#: with a dot is TensorFlow's or protobuf's, without one a message of this file
Field = tuple[str, int, int, int, str | None, str | None]

_TENSOR = "." + tensor_pb2.TensorProto.DESCRIPTOR.full_name
_EXAMPLE = "." + example_pb2.Example.DESCRIPTOR.full_name
_INT64_VALUE = "." + wrappers_pb2.Int64Value.DESCRIPTOR.full_name

_MESSAGES: dict[str, tuple[Field, ...]] = {
    # model.proto
    "ModelSpec": (
        ("name", 1, _STRING, _ONE, None, None),
        ("version", 2, _MESSAGE, _ONE, _INT64_VALUE, "version_choice"),
        ("version_label", 4, _STRING, _ONE, None, "version_choice"),
        ("signature_name", 3, _STRING, _ONE, None, None),
    ),
    # predict.proto (``inputs`` is its map<string, TensorProto>: see _map_entry)
    "PredictRequest": (
        ("model_spec", 1, _MESSAGE, _ONE, "ModelSpec", None),
        ("inputs", 2, _MESSAGE, _MANY, "PredictRequest.InputsEntry", None),
        ("output_filter", 3, _STRING, _MANY, None, None),
    ),
    # input.proto
    "ExampleList": (("examples", 1, _MESSAGE, _MANY, _EXAMPLE, None),),
    "ExampleListWithContext": (
        ("examples", 1, _MESSAGE, _MANY, _EXAMPLE, None),
        ("context", 2, _MESSAGE, _ONE, _EXAMPLE, None),
    ),
    "Input": (
        ("example_list", 1, _MESSAGE, _ONE, "ExampleList", "kind"),
        ("example_list_with_context", 2, _MESSAGE, _ONE, "ExampleListWithContext", "kind"),
    ),
    # classification.proto, regression.proto, inference.proto
    "ClassificationRequest": (
        ("model_spec", 1, _MESSAGE, _ONE, "ModelSpec", None),
        ("input", 2, _MESSAGE, _ONE, "Input", None),
    ),
    "RegressionRequest": (
        ("model_spec", 1, _MESSAGE, _ONE, "ModelSpec", None),
        ("input", 2, _MESSAGE, _ONE, "Input", None),
    ),
    "InferenceTask": (
        ("model_spec", 1, _MESSAGE, _ONE, "ModelSpec", None),
        ("method_name", 2, _STRING, _ONE, None, None),
    ),
    "MultiInferenceRequest": (
        ("tasks", 1, _MESSAGE, _MANY, "InferenceTask", None),
        ("input", 2, _MESSAGE, _ONE, "Input", None),
    ),
    # prediction_log.proto
    "ClassifyLog": (("request", 1, _MESSAGE, _ONE, "ClassificationRequest", None),),
    "RegressLog": (("request", 1, _MESSAGE, _ONE, "RegressionRequest", None),),
    "PredictLog": (("request", 1, _MESSAGE, _ONE, "PredictRequest", None),),
    "PredictStreamedLog": (),
    "MultiInferenceLog": (("request", 1, _MESSAGE, _ONE, "MultiInferenceRequest", None),),
    "SessionRunLog": (),
    "PredictionLog": (
        ("classify_log", 2, _MESSAGE, _ONE, "ClassifyLog", "log_type"),
        ("regress_log", 3, _MESSAGE, _ONE, "RegressLog", "log_type"),
        ("predict_log", 6, _MESSAGE, _ONE, "PredictLog", "log_type"),
        ("predict_streamed_log", 7, _MESSAGE, _ONE, "PredictStreamedLog", "log_type"),
        ("multi_inference_log", 4, _MESSAGE, _ONE, "MultiInferenceLog", "log_type"),
        ("session_run_log", 5, _MESSAGE, _ONE, "SessionRunLog", "log_type"),
    ),
}


def _message(name: str, fields: tuple[Field, ...]) -> descriptor_pb2.DescriptorProto:
    message = descriptor_pb2.DescriptorProto(name=name)
    oneofs: list[str] = []
    for field_name, number, kind, label, type_name, oneof in fields:
        field = message.field.add(name=field_name, number=number, type=kind, label=label)
        if type_name is not None:
            field.type_name = type_name if type_name.startswith(".") else f".{_PACKAGE}.{type_name}"
        if oneof is not None:
            if oneof not in oneofs:
                oneofs.append(oneof)
                message.oneof_decl.add(name=oneof)
            field.oneof_index = oneofs.index(oneof)
    return message


def _map_entry() -> descriptor_pb2.DescriptorProto:
    """PredictRequest's ``map<string, TensorProto> inputs`` as protoc spells a map: a nested
    entry message of ``key`` and ``value`` marked ``map_entry``."""
    entry = _message(
        "InputsEntry",
        (
            ("key", 1, _STRING, _ONE, None, None),
            ("value", 2, _MESSAGE, _ONE, _TENSOR, None),
        ),
    )
    entry.options.map_entry = True
    return entry


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(name=_FILE, package=_PACKAGE, syntax="proto3")
    proto.dependency.extend(
        [
            tensor_pb2.DESCRIPTOR.name,
            example_pb2.DESCRIPTOR.name,
            wrappers_pb2.DESCRIPTOR.name,
        ]
    )
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add()
        message.CopyFrom(_message(name, fields))
        if name == "PredictRequest":
            message.nested_type.add().CopyFrom(_map_entry())
    return proto


def _message_class(full_name: str) -> Any:
    descriptor = descriptor_pool.Default().FindMessageTypeByName(full_name)
    get = getattr(message_factory, "GetMessageClass", None)
    if get is not None:
        return get(descriptor)
    # protobuf before 4.22 (TensorFlow 2.16 allows 3.20): the factory's older spelling
    return message_factory.MessageFactory().GetPrototype(descriptor)


def _load() -> None:
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(_FILE)
    except KeyError:
        pool.Add(_file())


_load()

#: one record of a warmup file (TF Serving's ``tensorflow.serving.PredictionLog``)
PredictionLog: Any = _message_class(f"{_PACKAGE}.PredictionLog")
