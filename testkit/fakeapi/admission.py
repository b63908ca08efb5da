"""Validating admission for the fake's Job creates, in the real server's order: after the Job
validated (422 comes first) and before storage (409 AlreadyExists comes last), dry runs included.

- Pod Security admission: on a Job it never refuses, it warns (``Warning: 299 - "would violate
  PodSecurity ..."``), as the real plugin does for pod controllers; the fake does not evaluate
  the profiles, so a test gives the warning text the real plugin writes;
- admission webhooks: a denial a test configures (the webhook's name, the code it answers, often
  403 or 400, its reason and message), as the API server wraps it: ``admission webhook "NAME"
  denied the request: MESSAGE``, a code below 400 made 400;
- ValidatingAdmissionPolicy (CEL, in the API server): a denial a test configures, as the server
  words it (``ValidatingAdmissionPolicy 'P' with binding 'B' denied request: MESSAGE``), 422
  ``Invalid`` unless the policy's validation names another reason;
- ResourceQuota on ``count/jobs.batch``: a create past the hard limit is 403 ``exceeded quota``,
  counted against the Jobs of the namespace; a dry run is checked the same way and, like every
  dry run, changes no usage.

The warnings come with the answer, a refusal's too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from testkit.fakeapi.errors import ApiError

QUOTA_RESOURCE = "count/jobs.batch"


@dataclass(frozen=True)
class JobQuota:
    """A ResourceQuota ``name`` in ``namespace`` with ``hard: {count/jobs.batch: jobs}``."""

    name: str
    namespace: str
    jobs: int


@dataclass(frozen=True)
class WebhookDenial:
    """What a validating webhook answers for the Jobs ``applies`` to (all, by default)."""

    webhook: str
    message: str
    code: int = 403
    reason: str = ""
    applies: Callable[[dict[str, Any]], bool] = lambda _job: True

    def error(self, headers: dict[str, str]) -> ApiError:
        return ApiError(
            max(self.code, 400),
            self.reason,
            f'admission webhook "{self.webhook}" denied the request: {self.message}',
            headers=headers,
        )


@dataclass(frozen=True)
class PolicyDenial:
    """What a ValidatingAdmissionPolicy bound with ``validationActions: [Deny]`` answers for the
    Jobs ``applies`` to."""

    policy: str
    binding: str
    message: str
    code: int = 422
    reason: str = "Invalid"
    applies: Callable[[dict[str, Any]], bool] = lambda _job: True

    def error(self, headers: dict[str, str]) -> ApiError:
        return ApiError(
            self.code,
            self.reason,
            f"ValidatingAdmissionPolicy '{self.policy}' with binding '{self.binding}' denied "
            f"request: {self.message}",
            headers=headers,
        )


@dataclass
class Admission:
    quotas: list[JobQuota] = field(default_factory=list)
    denials: list[WebhookDenial | PolicyDenial] = field(default_factory=list)
    #: (namespace, the warning's text) for every Job created there
    pod_security_warnings: list[tuple[str, str]] = field(default_factory=list)

    def admit_job(self, obj: dict[str, Any], used: int) -> dict[str, str]:
        """The headers to answer with (its warnings), or ApiError carrying them; ``used``: the
        Jobs the namespace holds now."""
        meta = obj["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        texts = [text for where, text in self.pod_security_warnings if where == namespace]
        headers = {"Warning": ", ".join(warning(t) for t in texts)} if texts else {}
        for denial in self.denials:
            if denial.applies(obj):
                raise denial.error(headers)
        for quota in self.quotas:
            if quota.namespace == namespace and used + 1 > quota.jobs:
                raise ApiError(
                    403,
                    "Forbidden",
                    f'jobs.batch "{name}" is forbidden: exceeded quota: {quota.name}, '
                    f"requested: {QUOTA_RESOURCE}=1, used: {QUOTA_RESOURCE}={used}, "
                    f"limited: {QUOTA_RESOURCE}={quota.jobs}",
                    {"name": name, "group": "batch", "kind": "jobs"},
                    headers=headers,
                )
        return headers


def warning(text: str) -> str:
    """One ``Warning`` header value as the API server writes it (RFC 7234, agent ``-``)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{escaped}"'
