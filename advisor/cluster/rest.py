"""The REST calls of the cluster client, sent through the official client's ``ApiClient`` (its
configuration, credentials, TLS and connection pool) without its generated API classes.

Why: since client 37 each generated API class imports every model of its API group when it is
imported (most of a second of CPU for the three ``plan`` uses, as measured in docs/benchmark.md,
"Fleet planning"), while the advisor reads and writes plain dicts and never builds a model. A call
here is the request the generated method sends: its path, its query parameters under their wire
names and in its order, ``Accept: application/json``, with a body the Content-Type the method would
choose (JSON; a server-side apply's, a strategic merge patch's; none for a delete's options), the
client's user agent and credentials. A non-2xx answer raises the client's ``ApiException`` as the
generated method does with ``_preload_content=False``, which ``http.request`` judges; the body is
sent as it is, unchecked by the client's models (the API server is the judge of an object).

Clients before 37 (the legacy generator, no ``param_serialize``) are called through their own
``ApiClient.call_api``, which takes the same parts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

JSON = "application/json"


@dataclass(frozen=True)
class Resource:
    """One API resource: ``v1`` ``configmaps``, ``apps/v1`` ``deployments``."""

    api_version: str
    resource: str

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """Its REST path: of every namespace (no ``namespace``), of one, or one object of it."""
        root = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        scope = f"/namespaces/{quote(namespace, safe='')}" if namespace else ""
        one = f"/{quote(name, safe='')}" if name else ""
        return f"{root}{scope}/{self.resource}{one}"


def wire_name(parameter: str) -> str:
    """A generated method's parameter as the API names it: ``label_selector`` is
    ``labelSelector``, ``_continue`` is ``continue``."""
    head, *rest = parameter.lstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def send(
    api_client: Any,
    method: str,
    path: str,
    *,
    query: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    body: Any = None,
    content_type: str | None = JSON,
    timeout: Any = None,
) -> Any:
    """One request; the raw urllib3 response of a 2xx answer (its ``status``, ``data`` and
    ``headers``), else the client's ApiException. A body is sent as ``content_type`` (None: no
    Content-Type header, as the generated delete methods send their DeleteOptions)."""
    typed = body is not None and content_type is not None
    header_params = {"Accept": JSON, **({"Content-Type": content_type} if typed else {})}
    header_params.update(headers or {})
    query_params = [(key, value) for key, value in (query or {}).items() if value is not None]
    if not hasattr(api_client, "param_serialize"):
        return api_client.call_api(
            path,
            method,
            query_params=query_params,
            header_params=header_params,
            body=body,
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
            _preload_content=False,
            _request_timeout=timeout,
        )
    from kubernetes.client.exceptions import ApiException

    serialized = api_client.param_serialize(
        method=method,
        resource_path=path,
        query_params=query_params,
        header_params=header_params,
        body=body,
        auth_settings=["BearerToken"],
    )
    answer = api_client.call_api(*serialized, _request_timeout=timeout)
    if not 200 <= answer.status <= 299:
        answer.read()
        raise ApiException.from_response(http_resp=answer, body=None, data=None)
    return answer.response


def lister(api_client: Any, resource: Resource, everywhere: bool = False) -> Callable[..., Any]:
    """The list of ``resource`` as ``http.list_all`` calls a generated list method: with its
    namespace (unless ``everywhere``), the method's parameters (``label_selector``, ``limit``,
    ``_continue``) and ``_headers``, ``_request_timeout``; always raw."""

    def call(*scope: str, **params: Any) -> Any:
        namespace = None if everywhere else scope[0]
        timeout = params.pop("_request_timeout", None)
        headers = params.pop("_headers", None)
        params.pop("_preload_content", None)
        query = {wire_name(key): value for key, value in params.items()}
        return send(
            api_client,
            "GET",
            resource.path(namespace),
            query=query,
            headers=headers,
            timeout=timeout,
        )

    return call


def kind_resource(api_version: str, kind: str) -> Resource:
    """The resource of a kind whose plural is its name in lower case with an ``s``
    (``ConfigMap``: ``configmaps``; ``PersistentVolumeClaim``: ``persistentvolumeclaims``)."""
    return Resource(api_version, f"{kind.lower()}s")
