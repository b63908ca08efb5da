"""Kubernetes' rules for names, label values and annotation keys, as one-line reasons.

Each rule returns why a value breaks it (None when it does not), so the caller names the flag or
field in its own error. They sit at the bottom of the layers, importing nothing of the package:
the advice's ConfigMap (``advisor.recommend``), the cluster code, fleet mode's decisions (which
may not import the cluster code) and the pipeline's checks of the flags all ask them, and the
cluster code is above ``advisor.recommend`` and fleet mode, so it cannot be their home.
"""

from __future__ import annotations

import re

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def dns1123_label_problem(value: str) -> str | None:
    """Why ``value`` is not a DNS-1123 label (namespaces), or None when it is one."""
    if not value:
        return "must not be empty"
    if len(value) > 63:
        return f"is {len(value)} characters long, at most 63 are allowed"
    if not _DNS1123_LABEL.match(value):
        return "must be lowercase letters, digits and '-', starting and ending alphanumeric"
    return None


def dns1123_subdomain_problem(value: str) -> str | None:
    """Why ``value`` is not a DNS-1123 subdomain (ConfigMap names), or None when it is one."""
    if not value:
        return "must not be empty"
    if len(value) > 253:
        return f"is {len(value)} characters long, at most 253 are allowed"
    for part in value.split("."):
        if not _DNS1123_LABEL.match(part):
            return (
                "must be lowercase letters, digits, '-' and '.', "
                "each dot-separated part starting and ending alphanumeric"
            )
    return None


def qualified_key_problem(key: str, what: str) -> str | None:
    """Why ``key`` is not a qualified name with an optional DNS-subdomain prefix (label and
    annotation keys), naming it as ``what``'s key; None when it is one."""
    prefix, _, name = key.rpartition("/")
    if prefix and dns1123_subdomain_problem(prefix):
        return f"{what} key prefix {prefix!r} is not a DNS subdomain"
    if len(name) > 63 or not _QUALIFIED_NAME.match(name):
        return f"{what} key {key!r} is not a valid qualified name"
    return None


def label_problem(key: str, value: str) -> str | None:
    """Why ``key=value`` cannot be a Kubernetes label, or None when it can."""
    return qualified_key_problem(key, "label") or label_value_problem(value)


def label_value_problem(value: str) -> str | None:
    """Why ``value`` cannot be a Kubernetes label value, or None when it can."""
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        return f"label value {value!r} is not a valid label value"
    return None


def as_label_value(text: str) -> str:
    """``text`` squeezed into a label value (a version like ``0.1.0+dev`` has a '+')."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "-", text)[:63]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", cleaned)
