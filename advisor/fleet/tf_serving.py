"""The model a TensorFlow Serving container names itself, read from its pod template: for a
workload without the ``tf-thread-advisor.io/model`` annotation.

TF Serving takes its model from ``--model_base_path`` (``--model_name`` names it, it places
nothing), or serves every model a ``--model_config_file`` lists. The official image
(``tensorflow/serving``) runs an entrypoint that passes ``--model_name=${MODEL_NAME}
--model_base_path=${MODEL_BASE_PATH}/${MODEL_NAME}`` and then the container's args, with
``MODEL_BASE_PATH=/models`` and ``MODEL_NAME=model`` set in the image: ``/models/model`` unless the
pod's env changes them, and a ``--model_base_path`` in the args wins, as the last value of a
flag does.

What is read: the container's ``command`` and ``args`` (a shell string too, as ``sh -c``
scripts pass them), its ``env`` entries with a literal ``value``, and ``$(VAR)`` references to
them, as the kubelet expands them. What is not: a ``--model_config_file`` (a file in the image
or a volume, which the planner cannot open), env set through ``envFrom`` or ``valueFrom``, shell
variables: each is a one-line reason to set the annotation instead.

The base path is what the advice is measured for; the Job copies it whole and measures the
version TF Serving serves from it (its highest, ``advisor.trials.modelfile``).

Pure: the container's view in, a path or a DeriveError out.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from advisor.fleet.errors import DeriveError
from advisor.keys import ANN_MODEL
from advisor.models.kube import Container

#: TF Serving's flags about its model
BASE_PATH_FLAG = "--model_base_path"
CONFIG_FILE_FLAG = "--model_config_file"
#: the official image's env, read by its entrypoint, and the values the image sets
BASE_PATH_ENV = "MODEL_BASE_PATH"
NAME_ENV = "MODEL_NAME"
IMAGE_ENV = {BASE_PATH_ENV: "/models", NAME_ENV: "model"}
#: the official image's repository, on any registry (a mirror keeps the path) and with any tag
OFFICIAL_IMAGE = "tensorflow/serving"
#: the official image's entrypoint, when a pod names it in ``command``
ENTRYPOINT = "/usr/bin/tf_serving_entrypoint.sh"
#: the server's binary: a command that runs it is a TF Serving container
BINARY = "tensorflow_model_server"
_REFERENCE = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")


@dataclass(frozen=True)
class ServedModel:
    """The model base path a TF Serving container serves, and how it names it (for a reason)."""

    path: str
    #: ``--model_base_path`` or ``MODEL_BASE_PATH/MODEL_NAME``
    named_by: str


def tokens(container: Container) -> list[str]:
    """The words of the container's command and args, a shell string split as the shell would."""
    words: list[str] = []
    for part in [*container.command, *container.args]:
        text = str(part)
        try:  # a shell string (sh -c "tensorflow_model_server --model_base_path=...")
            words += shlex.split(text)
        except ValueError:
            words += text.split()
    return words


def flag_values(container: Container, flag: str) -> list[str]:
    """Every value the container's command and args give ``flag`` (``--flag=X`` or ``--flag
    X``), in order: the last is the one the server keeps."""
    words = tokens(container)
    values = []
    for index, word in enumerate(words):
        name, equals, value = word.partition("=")
        if name != flag:
            continue
        if equals:
            values.append(value)
        elif index + 1 < len(words):
            values.append(words[index + 1])
    return values


def served_model(container: Container) -> ServedModel | None:
    """The base path the container serves when it is TF Serving and says which; None when it is
    not recognisably TF Serving. DeriveError when it is, but names its model where the planner
    cannot read it (a config file, env from elsewhere, shell variables)."""
    name = container.label
    env = {str(e.get("name")): e for e in container.env}
    if configs := flag_values(container, CONFIG_FILE_FLAG):
        raise DeriveError(
            f"container {name} serves the models its {CONFIG_FILE_FLAG} lists ({configs[-1]}), a "
            f"file plan cannot read: set annotation {ANN_MODEL} to the model's base "
            "path or version directory"
        )
    if base_paths := flag_values(container, BASE_PATH_FLAG):
        where = f"container {name}'s {BASE_PATH_FLAG}"
        return ServedModel(_expanded(base_paths[-1], env, where), BASE_PATH_FLAG)
    if not _runs_official_entrypoint(container, env):
        if BINARY in tokens(container):
            raise DeriveError(
                f"container {name} runs {BINARY} without {BASE_PATH_FLAG} or "
                f"{CONFIG_FILE_FLAG}: it serves no model"
            )
        return None
    parts = []
    for variable in (BASE_PATH_ENV, NAME_ENV):
        entry = env.get(variable)
        if entry is None:
            parts.append(IMAGE_ENV[variable])
        elif "value" in entry:
            parts.append(_expanded(str(entry["value"]), env, f"container {name}'s env {variable}"))
        else:
            raise DeriveError(
                f"container {name}'s env {variable} comes from a reference (valueFrom) plan does "
                f"not read: set annotation {ANN_MODEL} to the model's base path"
            )
    base, model = parts
    return ServedModel(f"{base.rstrip('/')}/{model}", f"{BASE_PATH_ENV}/{NAME_ENV}")


def _runs_official_entrypoint(container: Container, env: Mapping[str, Any]) -> bool:
    """The container runs the official image's entrypoint: its own ``command`` names it, or it
    keeps the image's and the image is the official one or is given the entrypoint's env."""
    command = container.command
    if command:
        return [str(word) for word in command] in ([ENTRYPOINT], ["tf_serving_entrypoint.sh"])
    # the repository without digest or tag (a registry's port, host:5000/..., is no tag)
    head, _, last = (container.image or "").split("@", 1)[0].rpartition("/")
    repository = f"{head}/{last.split(':', 1)[0]}" if head else last.split(":", 1)[0]
    official = repository == OFFICIAL_IMAGE or repository.endswith("/" + OFFICIAL_IMAGE)
    return official or BASE_PATH_ENV in env or NAME_ENV in env


def _expanded(text: str, env: Mapping[str, Any], where: str) -> str:
    """``text`` with the kubelet's ``$(VAR)`` expansion from the container's literal env values
    (``$$`` is a ``$``); DeriveError when a reference or a shell variable is left."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "\0"
        entry = env.get(match.group(1))
        if entry is None or "value" not in entry:
            raise DeriveError(
                f"{where} is {text!r}: $({match.group(1)}) is not a value of the container's env "
                f"that plan can read: set annotation {ANN_MODEL}"
            )
        return str(entry["value"])

    expanded = _REFERENCE.sub(one, text)
    if "$" in expanded:
        raise DeriveError(
            f"{where} is {text!r}: a shell variable plan cannot resolve: set annotation {ANN_MODEL}"
        )
    return expanded.replace("\0", "$")
