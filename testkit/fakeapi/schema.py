"""Decoding a request body as the API server does, against the kind's schema: the official
client's models (``kubernetes.client.models``) are generated from the server's OpenAPI, so their
``attribute_map``/``openapi_types`` are the fields and types a real server knows.

- a value of the wrong JSON type is a 400 (``cannot unmarshal``), whatever ``fieldValidation``
  says, as Go's decoder refuses it; ``null`` is the zero value, as there;
- a field the schema does not declare is handled per ``fieldValidation``: ``Strict`` refuses it
  (400 ``strict decoding error``), ``Warn`` (the server's default when the parameter is absent)
  drops it and says so in a ``Warning`` header, ``Ignore`` drops it silently;
- quantities (``resources.limits`` and the like) accept a number as well as a string, as the
  ``Quantity`` type does; an unparseable quantity is a 400.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from testkit.fakeapi.errors import ApiError

#: fields whose values are ``resource.Quantity`` (the client types them as strings)
QUANTITY_FIELDS = frozenset({"limits", "requests", "overhead", "sizeLimit", "divisor"})
QUANTITY = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+)?$")
_SUFFIX = {
    "": 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}
FIELD_VALIDATION = ("Ignore", "Warn", "Strict")


class DecodeError(Exception):
    """A 400: the body cannot be decoded into the kind."""


@dataclass
class Decoded:
    obj: dict[str, Any]
    #: the undeclared fields dropped, as dotted paths
    unknown: list[str] = field(default_factory=list)


def quantity(value: Any) -> float:
    """A Quantity's value (cpu ``500m`` is 0.5, memory ``1Gi`` is 2**30); DecodeError when the
    text is not one."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DecodeError(f"quantities must be a string or a number, not {value!r}")
    text = str(value)
    match = QUANTITY.match(text)
    if match is None:
        raise DecodeError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' ({text!r})"
        )
    number, suffix = float(match.group(1)), match.group(2) or ""
    if suffix[:1] in ("e", "E"):
        return number * 10.0 ** int(suffix[1:])
    return number * _SUFFIX[suffix]


def decode(body: dict[str, Any], model: str, kind: str) -> Decoded:
    """``body`` checked against the client model ``model`` (``V1Job``); undeclared fields
    removed and listed; DecodeError (400) on a wrong type."""
    obj = copy.deepcopy(body)
    unknown: list[str] = []
    _walk(obj, model, "", unknown, kind)
    return Decoded(obj, unknown)


def _model(name: str) -> Any:
    from kubernetes.client import models

    return getattr(models, name)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _mismatch(value: Any, path: str, go_type: str, kind: str) -> DecodeError:
    return DecodeError(
        f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal '
        f"{_json_type(value)} into Go struct field .{path} of type {go_type}"
    )


def _walk(value: Any, type_name: str, path: str, unknown: list[str], kind: str) -> None:
    """Check ``value`` (in place: undeclared keys of objects are removed) against
    ``type_name``, an ``openapi_types`` entry."""
    if value is None:
        return
    if type_name.startswith("List["):
        if not isinstance(value, list):
            raise _mismatch(value, path, "[]" + type_name[5:-1], kind)
        for index, item in enumerate(value):
            _walk(item, type_name[5:-1], f"{path}[{index}]", unknown, kind)
    elif type_name.startswith("Dict[str, "):
        if not isinstance(value, dict):
            raise _mismatch(value, path, "map[string]" + type_name[10:-1], kind)
        for key, item in value.items():
            if path.rpartition(".")[2] in QUANTITY_FIELDS:
                _quantity(item, f"{path}.{key}")
            else:
                _walk(item, type_name[10:-1], f"{path}.{key}", unknown, kind)
    elif type_name in _SCALARS:
        _scalar(value, type_name, path, kind)
    else:
        _object(value, type_name, path, unknown, kind)


#: openapi scalar type -> (accepted Python types, the Go type a mismatch names)
_SCALARS: dict[str, tuple[tuple[type, ...], str]] = {
    "object": ((object,), "interface{}"),  # IntOrString, RawExtension: anything
    "str": ((str,), "string"),
    "datetime": ((str,), "string"),
    "int": ((int,), "int32"),
    "bool": ((bool,), "bool"),
}


def _scalar(value: Any, type_name: str, path: str, kind: str) -> None:
    if path.rpartition(".")[2] in QUANTITY_FIELDS:
        _quantity(value, path)
        return
    accepted, go_type = _SCALARS[type_name]
    # a JSON true is no int32 (Python's bool is an int)
    if not isinstance(value, accepted) or (type_name == "int" and isinstance(value, bool)):
        raise _mismatch(value, path, go_type, kind)


def _object(value: Any, type_name: str, path: str, unknown: list[str], kind: str) -> None:
    model = _model(type_name)
    if not isinstance(value, dict):
        raise _mismatch(value, path, type_name, kind)
    declared = {json: attr for attr, json in model.attribute_map.items()}
    for key in list(value):
        where = f"{path}.{key}" if path else key
        if key not in declared:
            unknown.append(where)
            del value[key]
            continue
        _walk(value[key], model.openapi_types[declared[key]], where, unknown, kind)


def _quantity(value: Any, path: str) -> None:
    try:
        quantity(value)
    except DecodeError as exc:
        raise DecodeError(f"{path}: {exc}") from None


def decode_request(
    body: Any,
    query: dict[str, str],
    headers: dict[str, str],
    *,
    api_version: str,
    kind: str,
    model: str,
) -> dict[str, Any]:
    """A create's body as the API server decodes it: an object of ``api_version``/``kind``,
    checked against the client model ``model`` under the request's ``fieldValidation``
    (``Warn`` by default: an undeclared field dropped and named in ``headers``' Warning); an
    ApiError 400 otherwise."""
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "the request body is not an object")
    if body.get("apiVersion") != api_version or body.get("kind") != kind:
        raise ApiError(
            400,
            "BadRequest",
            f"the API version in the data ({body.get('apiVersion')}) and kind "
            f"({body.get('kind')}) do not match the expected {api_version} {kind}",
        )
    validation = query.get("fieldValidation", "Warn")
    if validation not in FIELD_VALIDATION:
        raise ApiError(
            400,
            "BadRequest",
            f'fieldValidation: Unsupported value: "{validation}": supported values: '
            '"Ignore", "Strict", "Warn"',
        )
    try:
        decoded = decode(body, model, kind)
    except DecodeError as exc:
        raise ApiError(400, "BadRequest", str(exc)) from None
    if decoded.unknown and validation == "Strict":
        unknown = ", ".join(f'unknown field "{path}"' for path in decoded.unknown)
        raise ApiError(400, "BadRequest", f"strict decoding error: {unknown}")
    if decoded.unknown and validation == "Warn":
        headers["Warning"] = ", ".join(
            f'299 - "unknown field \\"{path}\\""' for path in decoded.unknown
        )
    return decoded.obj
