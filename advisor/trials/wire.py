"""The parent/child contract: what the parent asks a trial child to do (the request file's one
message) and how the child answers an inspection.

It lives beside the trials, read by the child and written by the runner, so that both import it
and neither imports the other (the child is started as a program).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from advisor.models import ModelFormat, RequestsOrigin, StrictModel, SubjectInfo
from advisor.trials.requestfile import RequestsSource


class TrialRequest(StrictModel):
    """What the parent asks one trial child to do, in its request file (as JSON).

    ``inspect`` loads the model and describes it; ``trial`` measures it, and needs the
    window's lengths. A forked child touches ``loaded_marker`` once the model is loaded, so
    the parent can tell a child that failed to start from a trial that failed.
    """

    mode: Literal["trial", "inspect"]
    #: sent as ``kind``, the key every child has read
    model_format: ModelFormat = Field(alias="kind")
    path: str | None = Field(default=None, description="model path; null for builtin")
    signature: str = Field(min_length=1)
    batch_size: int = Field(ge=1)
    input_shape: str | None = Field(
        default=None, description="--input-shape, canonical: NAME=D1[,D2...];..."
    )
    concurrency: int = Field(ge=1)
    warmup_s: float | None = Field(default=None, ge=0)
    measure_s: float | None = Field(default=None, ge=0)
    min_requests: int = Field(default=0, ge=0)
    max_measure_s: float | None = Field(default=None, ge=0)
    loaded_marker: str | None = None
    #: the requests to replay (``advisor.trials.requestfile``); None: inputs are synthesised
    requests: str | None = None
    requests_origin: RequestsOrigin | None = None

    @model_validator(mode="after")
    def _a_trial_has_its_window(self) -> TrialRequest:
        if self.mode == "trial" and (self.warmup_s is None or self.measure_s is None):
            raise ValueError("a trial request needs warmup_s and measure_s")
        return self

    @staticmethod
    def replaying(source: RequestsSource | None) -> dict[str, str]:
        """The fields that carry the requests to replay (none: inputs are synthesised)."""
        if source is None:
            return {}
        return {"requests": source.path, "requests_origin": source.origin}

    @property
    def replay(self) -> RequestsSource | None:
        """The requests to replay, as the parent chose them; None: synthesise inputs."""
        if self.requests is None:
            return None
        return RequestsSource(self.requests, self.requests_origin or "file")


def inspection_answer(info: SubjectInfo) -> dict[str, Any]:
    """The child's answer to an inspection: the subject under ``SubjectInfo``'s stored keys
    (``kind`` for its format), the fields the child set and no others, so the answer holds the
    keys it always held (the parent fills the rest with their defaults)."""
    return {"status": "ok", "info": info.model_dump(mode="json", exclude_unset=True)}
