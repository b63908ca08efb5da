"""The stored and wire forms of a ``ThreadSetting``: models hold the setting, JSON the flat keys.

Results, advice and the trial child's answers have always written a setting as two flat keys
(``intra``/``inter`` or ``intra_op_threads``/``inter_op_threads``, null for TF's default), first in
their object, and older ones must still load; the models here hold a ``ThreadSetting`` instead,
read from and written as exactly those keys:

- ``FlatSetting``: ``setting``, stored as the two keys (null: TF's default);
- ``SpelledSetting``: an advice's setting, which is never TF's default but the counts TF picks;
- ``MeasuredSetting``: a setting as measured (``setting``, possibly TF's default) beside the counts
  it ran with (``runs``: for TF's default, what TF picked), stored as ``intra``/``inter`` (the
  counts) and ``default``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from advisor.models.base import StrictModel
from advisor.models.setting import ThreadSetting


def _front(keys: dict[str, Any], rest: dict[str, Any]) -> dict[str, Any]:
    """``keys`` first, as the stored form always had them, then the rest in field order."""
    return {**keys, **rest}


class FlatSetting(StrictModel):
    """A model whose ``setting`` is stored as two flat keys, null for TF's default."""

    #: the stored names of the intra-op and inter-op counts
    setting_keys: ClassVar[tuple[str, str]] = ("intra", "inter")

    setting: ThreadSetting = Field(description="intra/inter; both null: TF's default")

    @classmethod
    def stored_keys(cls) -> tuple[str, ...]:
        """The keys of the stored form, in its order."""
        return (*cls.setting_keys, *(name for name in cls.model_fields if name != "setting"))

    @model_validator(mode="before")
    @classmethod
    def _read_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "setting" in data:
            return data
        intra_key, inter_key = cls.setting_keys
        data = dict(data)
        data["setting"] = {"intra": data.pop(intra_key, None), "inter": data.pop(inter_key, None)}
        return data

    @model_serializer(mode="wrap")
    def _write_keys(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        setting = out.pop("setting", None)
        if setting is None:
            return out
        names = dict(zip(("intra", "inter"), self.setting_keys, strict=True))
        return _front({names[k]: v for k, v in setting.items()}, out)


class SpelledSetting(FlatSetting):
    """A ``FlatSetting`` that is never TF's default: an advice carries the counts TF picks."""

    @model_validator(mode="after")
    def _spelled_out(self) -> SpelledSetting:
        if self.setting.is_default:
            raise ValueError("the setting must be spelled out (both counts), not TF's default")
        return self

    @property
    def counts(self) -> tuple[int, int]:
        """(intra, inter), both set."""
        intra, inter = self.setting.intra, self.setting.inter
        assert intra is not None and inter is not None  # spelled out, validated
        return intra, inter


class MeasuredSetting(StrictModel):
    """A setting as measured and the counts it ran with, stored as ``intra``/``inter`` (the
    counts) and ``default`` (the setting is TF's default)."""

    #: ``default`` when a stored object leaves it out (None: it may not)
    default_when_missing: ClassVar[bool | None] = False

    setting: ThreadSetting = Field(description="as measured: TF's default, or the counts")
    runs: ThreadSetting = Field(
        description="the counts it ran with: the setting's own, or what TF picked for its default"
    )

    @model_validator(mode="before")
    @classmethod
    def _read_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "setting" in data or "runs" in data:
            return data
        data = dict(data)
        runs = {"intra": data.pop("intra", None), "inter": data.pop("inter", None)}
        default = data.pop("default", cls.default_when_missing)
        if default is not None and not isinstance(default, bool):
            raise ValueError(f"default: {default!r} is not a boolean")
        data["runs"] = runs
        data["setting"] = None if default is None else ThreadSetting() if default else runs
        return data

    @model_validator(mode="after")
    def _runs_its_setting(self) -> MeasuredSetting:
        if self.runs.is_default:
            raise ValueError("the counts it ran with must be spelled out, not TF's default")
        if not self.setting.is_default and self.setting != self.runs:
            raise ValueError(f"{self.setting.label} cannot have run as {self.runs.label}")
        return self

    @model_serializer(mode="wrap")
    def _write_keys(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        out.pop("setting", None)
        runs = out.pop("runs", None) or {}
        return _front({**runs, "default": self.setting.is_default}, out)

    @property
    def counts(self) -> tuple[int, int]:
        """(intra, inter) as it ran, both set."""
        intra, inter = self.runs.intra, self.runs.inter
        assert intra is not None and inter is not None  # spelled out, validated
        return intra, inter

    @classmethod
    def measured_as(cls, setting: ThreadSetting, affinity_cpus: int) -> dict[str, ThreadSetting]:
        """``setting`` and ``runs`` for ``setting`` measured with ``affinity_cpus`` CPUs in the
        affinity mask (fields for a constructor)."""
        return {"setting": setting, "runs": setting.spelled_out(affinity_cpus)}
