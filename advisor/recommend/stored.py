"""A listed ConfigMap and the advice it carries, parsed once: what ``plan`` decides from and
``status`` shows.

A plan asks one ConfigMap's advice for every container that reads it (two may share one), and
production asks it again; a status shows it and judges each of its consumers by it. Each asks
this object, which parses the ConfigMap (``parse_configmap``, the rules every write obeys) when
first asked and keeps the outcome: the advice, or why it is not one, until told to let it go
(``forget``: a plan lets each go once its last reader is decided). The advice it replaced
(``previous``) is read the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from advisor.errors import InvalidAdviceError
from advisor.keys import APP_NAME
from advisor.models.kube import KubeConfigMap, read_once
from advisor.recommend.parse import ParsedAdvice, parse_configmap
from advisor.recommend.previous import Previous, previous_advice


@dataclass(frozen=True)
class StoredAdvice:
    """One ConfigMap as listed, and the advice in it once asked for."""

    configmap: KubeConfigMap
    #: what a message about its advice names it as (``ConfigMap``; None: ``ConfigMap NAME``)
    named_as: str | None = "ConfigMap"

    @classmethod
    def read(cls, obj: Any, source: str | None = "ConfigMap") -> StoredAdvice:
        return cls(KubeConfigMap.read(obj), source)

    @property
    def source(self) -> str:
        """What a message about its advice names it as."""
        return f"ConfigMap {self.name}" if self.named_as is None else self.named_as

    @property
    def name(self) -> str:
        return self.configmap.name

    @property
    def ours(self) -> bool:
        """Labelled as the advisor's (managed by it), whether or not its advice validates."""
        return bool(self.configmap.managed_by == APP_NAME)

    @read_once
    def outcome(self) -> ParsedAdvice | InvalidAdviceError:
        """The advice, or the error saying why the ConfigMap holds none that validates."""
        try:
            return parse_configmap(self.configmap.raw, self.source)
        except InvalidAdviceError as exc:
            return exc

    @property
    def parsed(self) -> ParsedAdvice | None:
        """The advice; None when it does not validate."""
        outcome = self.outcome
        return outcome if isinstance(outcome, ParsedAdvice) else None

    def forget(self) -> None:
        """Let the parsed advice go (nobody asks it again): the next ask parses it again."""
        self.__dict__.pop("outcome", None)

    @read_once
    def previous(self) -> Previous | None:
        """The advice this one replaced, as the ConfigMap keeps it (None: none, or unreadable)."""
        return previous_advice(self.configmap.raw)


def by_name(objects: Iterable[Any], source: str | None = None) -> dict[str, StoredAdvice]:
    """The listed ConfigMaps by name, each named in messages as ``ConfigMap NAME`` (``source``
    None) or as ``source``."""
    out = {}
    for obj in objects:
        view = KubeConfigMap.read(obj)
        out[view.name] = StoredAdvice(view, source)
    return out
