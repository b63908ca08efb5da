"""One API call and its outcome, without a server: the answer's body, the typed error of a final
answer, the retry loop over a call that raises what the client raises, and a paged list.

``call`` stands for a client method: it returns what the client returns with
``_preload_content=False`` or raises the client's ApiException and urllib3's errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from advisor.cluster.http import (
    Response,
    Target,
    final_error,
    list_all,
    namespace_missing,
    parse_json,
    request,
    with_kind,
)
from advisor.cluster.rest import Resource, kind_resource, wire_name
from advisor.errors import (
    ClusterRejectedError,
    ClusterUnreachableError,
    ForbiddenError,
    Opt,
)
from advisor.retry import Deadline, RetryPolicy
from tests.unit.cluster.fakes import CONNECTION, FakeClock, Raw

TARGET = Target("configmaps/tf-advice", "ml", "the Role must allow patch on configmaps")


# --------------------------------------------------------------------------------------------------
# the answer


@pytest.mark.parametrize(
    ("data", "body"),
    [
        (b'{"kind": "Status", "code": 404}', {"kind": "Status", "code": 404}),
        ('{"a": 1}', {"a": 1}),
        (b"", None),
        (None, None),
        (b"[1, 2]", None),  # JSON, but not an object
        (b'"text"', None),
        (b"<html>502 Bad Gateway</html>", None),  # a proxy's page
        (b"\xff\xfe", None),
    ],
)
def test_parse_json_gives_an_object_or_none(data: bytes | str | None, body: Any) -> None:
    assert parse_json(data) == body


def test_message_and_reason_are_strings_or_empty() -> None:
    full = Response(409, {"message": "changed", "reason": "Conflict"}, {})
    assert (full.message, full.reason) == ("changed", "Conflict")
    odd = Response(409, {"message": 3, "reason": ["Conflict"]}, {})
    assert (odd.message, odd.reason) == ("", "")
    assert (Response(502, None, {}).message, Response(502, None, {}).reason) == ("", "")


@pytest.mark.parametrize(
    ("status", "body", "missing"),
    [
        (404, {"details": {"kind": "namespaces", "name": "ml"}}, True),
        (404, {"details": {"kind": "configmaps", "name": "tf-advice"}}, False),
        (404, {"details": None}, False),
        (404, None, False),
        (403, {"details": {"kind": "namespaces"}}, False),
    ],
)
def test_namespace_missing_is_a_404_about_the_namespace(
    status: int, body: dict[str, Any] | None, missing: bool
) -> None:
    assert namespace_missing(Response(status, body, {})) is missing


# --------------------------------------------------------------------------------------------------
# the typed error of a final answer


def error(status: int, body: dict[str, Any] | None, target: Target = TARGET) -> Exception:
    resp = Response(status, body, {})
    return final_error(
        resp, "patch", "patch configmaps/tf-advice in namespace ml", CONNECTION, target
    )


def test_401_is_forbidden_naming_the_server_and_where_the_credentials_came_from() -> None:
    found = error(401, {"message": "Unauthorized"})
    assert isinstance(found, ForbiddenError) and found.exit_code == 8
    assert str(found) == (
        "patch configmaps/tf-advice in namespace ml: the API server at https://k8s.example:6443 "
        "rejected the credentials (401 Unauthorized; from /tmp/kubeconfig)"
    )


def test_403_names_the_verb_the_server_denied_and_the_rule_to_add() -> None:
    message = (
        'configmaps "tf-advice" is forbidden: User "system:serviceaccount:ml:tfta" cannot get '
        'resource "configmaps" in API group "" in the namespace "ml"'
    )
    found = error(403, {"message": message})
    assert isinstance(found, ForbiddenError)
    # the server said get, though we were patching: its word is the one to grant
    assert str(found) == (
        "forbidden: cannot get configmaps/tf-advice in namespace ml; "
        "the Role must allow patch on configmaps"
    )
    # without the server's wording, the verb attempted
    assert str(error(403, None)).startswith("forbidden: cannot patch configmaps/tf-advice")


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        # a ResourceQuota's admission, as the API server words it
        (
            'jobs.batch "web-calibrate-1a2b" is forbidden: exceeded quota: jobs, requested: '
            "count/jobs.batch=1, used: count/jobs.batch=2, limited: count/jobs.batch=2",
            "Forbidden",
        ),
        # an admission webhook (Gatekeeper answers 403 Forbidden)
        (
            'admission webhook "validation.gatekeeper.sh" denied the request: '
            '[k8srequiredlabels] you must provide labels: {"owner"}',
            "Forbidden",
        ),
        # a webhook's own words that happen to mention a user: still not the authorizer's form
        ('admission webhook "x" denied the request: User "bob" may not do this', ""),
    ],
)
def test_a_403_of_admission_is_the_objects_refusal_not_the_roles(message: str, reason: str) -> None:
    found = error(403, {"message": message, "reason": reason})
    assert isinstance(found, ClusterRejectedError)
    assert str(found) == (
        f"patch configmaps/tf-advice in namespace ml: refused with HTTP 403: {message}"
    )


def test_only_the_authorizers_403_is_the_roles() -> None:
    rbac = (
        'jobs.batch is forbidden: User "system:serviceaccount:ml:tf-thread-advisor-planner" '
        'cannot create resource "jobs" in API group "batch" in the namespace "ml"'
    )
    assert Response(403, {"reason": "Forbidden", "message": rbac}, {}).authorizer_denied
    # with the authorizer's reason appended (an RBAC role it could not find)
    assert Response(
        403, {"message": rbac + ': RBAC: role.rbac.authorization.k8s.io "x" not found'}, {}
    ).authorizer_denied
    assert Response(403, None, {}).authorizer_denied  # no Status: before the API server's handlers
    assert not Response(403, {"message": "exceeded quota: q"}, {}).authorizer_denied
    assert not Response(404, {"message": rbac}, {}).authorizer_denied


@pytest.mark.parametrize(
    ("header", "warnings"),
    [
        (None, ()),
        ("", ()),
        (
            '299 - "would violate PodSecurity \\"restricted:latest\\": allowPrivilegeEscalation '
            '!= false (container \\"copy\\" must set '
            'securityContext.allowPrivilegeEscalation=false)"',
            (
                'would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
                '(container "copy" must set securityContext.allowPrivilegeEscalation=false)',
            ),
        ),
        # two Warning headers, joined by the client; a comma inside the text stays in it
        (
            '299 - "unknown field \\"spec.x\\"", 299 - "a, b"',
            ('unknown field "spec.x"', "a, b"),
        ),
        ('299 - "a backslash \\\\ stays one"', ("a backslash \\ stays one",)),
        ("not a warning at all", ()),
    ],
)
def test_warnings_are_the_texts_of_the_warning_headers(
    header: str | None, warnings: tuple[str, ...]
) -> None:
    headers = {} if header is None else {"Warning": header}
    assert Response(201, {}, headers).warnings == warnings


def test_a_403_rule_with_an_option_keeps_it_for_the_cli_to_spell() -> None:
    target = Target("pods", "(all)", ("run it with ", Opt("consumers=False")))
    found = error(403, None, target)
    assert isinstance(found, ForbiddenError)
    assert found.spelled(lambda opt: "--no-consumers") == (
        "forbidden: cannot patch pods in namespace (all); run it with --no-consumers"
    )


def test_404_is_rejected_naming_the_namespace_the_object_or_the_server_message() -> None:
    namespace = error(404, {"details": {"kind": "namespaces"}, "message": "namespaces not found"})
    assert isinstance(namespace, ClusterRejectedError) and namespace.exit_code == 10
    assert str(namespace) == "patch configmaps/tf-advice in namespace ml: namespace ml not found"
    named = Target("deployments/web", "ml", "rule", not_found="no deployment named web in ml")
    assert str(error(404, {"details": {"kind": "deployments"}}, named)) == (
        "no deployment named web in ml"
    )
    # a target without its own wording: the server's
    assert str(error(404, {"message": 'configmaps "x" not found'})).endswith(
        'refused with HTTP 404: configmaps "x" not found'
    )


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ({"message": "data: Too long", "reason": "Invalid"}, "data: Too long"),
        ({"reason": "Invalid"}, "Invalid"),
        (None, "no message"),
    ],
)
def test_other_refusals_carry_the_status_and_the_best_words_there_are(
    body: dict[str, Any] | None, text: str
) -> None:
    found = error(422, body)
    assert isinstance(found, ClusterRejectedError)
    assert (
        str(found) == f"patch configmaps/tf-advice in namespace ml: refused with HTTP 422: {text}"
    )


# --------------------------------------------------------------------------------------------------
# the retry loop


class Calls:
    """A call that gives ``outcomes`` in turn (a Raw to return, an exception to raise) and
    records the timeout of each attempt."""

    def __init__(self, *outcomes: Raw | Exception) -> None:
        self.outcomes = list(outcomes)
        self.timeouts: list[float] = []

    def __call__(self, timeout: float) -> Raw:
        self.timeouts.append(timeout)
        outcome = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def api_error(status: int, body: dict[str, Any] | None = None, **headers: str) -> ApiException:
    """What the client raises for a non-2xx answer (``Retry_After``: the Retry-After header)."""
    exc = ApiException(
        status=status, reason="Reason", body=None if body is None else json.dumps(body)
    )
    exc.headers = {k.replace("_", "-"): v for k, v in headers.items()}
    return exc


def refused() -> urllib3.exceptions.NewConnectionError:
    return urllib3.exceptions.NewConnectionError(
        None,  # type: ignore[arg-type]
        "Failed to establish a new connection: [Errno 111] Connection refused",
    )


def run(call: Callable[[float], Raw], policy: RetryPolicy) -> Response:
    return request(CONNECTION, policy, Deadline(policy), "get configmaps/tf-advice", call)


def test_an_answer_is_returned_with_its_body_and_headers() -> None:
    clock = FakeClock()
    call = Calls(Raw(200, b'{"metadata": {"name": "x"}}', {"Warning": "deprecated"}))
    resp = run(call, clock.policy())
    assert (resp.status, resp.body, dict(resp.headers)) == (
        200,
        {"metadata": {"name": "x"}},
        {"Warning": "deprecated"},
    )
    assert (call.timeouts, clock.slept) == ([10.0], [])


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422])
def test_a_4xx_other_than_429_is_returned_for_the_caller_to_judge(status: int) -> None:
    clock = FakeClock()
    call = Calls(api_error(status, {"message": "no", "reason": "Why"}), Raw(200))
    resp = run(call, clock.policy())
    assert (resp.status, resp.message, resp.reason) == (status, "no", "Why")
    assert len(call.timeouts) == 1 and clock.slept == []


def test_5xx_and_dropped_connections_are_retried_with_backoff() -> None:
    clock = FakeClock()
    dropped = urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104))
    call = Calls(api_error(503), dropped, api_error(500), Raw(200, b"{}"))
    assert run(call, clock.policy()).status == 200
    assert clock.slept == [0.5, 1.0, 2.0]
    assert len(call.timeouts) == 4


def test_429_waits_what_the_server_asks() -> None:
    clock = FakeClock()
    call = Calls(api_error(429, Retry_After="7"), api_error(429), Raw(200))
    assert run(call, clock.policy()).status == 200
    # the second 429 says nothing: our backoff for a second attempt
    assert clock.slept == [7.0, 1.0]


def test_a_retry_after_beyond_the_deadline_gives_up_at_once_saying_so() -> None:
    clock = FakeClock()
    call = Calls(api_error(429, Retry_After="120"))
    with pytest.raises(ClusterUnreachableError) as caught:
        run(call, clock.policy(total_s=60.0))
    assert clock.slept == []
    assert str(caught.value) == (
        "get configmaps/tf-advice at https://k8s.example:6443: gave up after 1 attempt(s) "
        "within 60s; last: HTTP 429 Reason (server asked to retry after 120s)"
    )


def test_a_server_that_keeps_failing_is_given_up_before_the_deadline() -> None:
    clock = FakeClock()
    policy = clock.policy(total_s=20.0, request_timeout_s=4.0)
    call = Calls(api_error(500, {"reason": "InternalError"}))
    with pytest.raises(ClusterUnreachableError) as caught:
        run(call, policy)
    # waits 0.5, 1, 2, 4, 8 (15.5 s); the next 8 s wait plus a quarter request timeout (1 s)
    # does not fit in the 4.5 s left
    assert clock.slept == [0.5, 1.0, 2.0, 4.0, 8.0]
    assert str(caught.value).endswith(
        "gave up after 6 attempt(s) within 20s; last: HTTP 500 InternalError"
    )
    # each attempt is given the request timeout, or what is left of the deadline if less
    assert call.timeouts == [4.0] * 6


def test_no_answer_in_time_names_the_timeout_each_attempt_had() -> None:
    clock = FakeClock()
    timeouts: list[float] = []

    def slow(timeout: float) -> Raw:
        timeouts.append(timeout)
        clock.now += timeout  # waiting for an answer that never comes costs the whole timeout
        raise urllib3.exceptions.ReadTimeoutError(None, "/api", "Read timed out.")  # type: ignore[arg-type]

    with pytest.raises(ClusterUnreachableError) as caught:
        run(slow, clock.policy(total_s=5.0, request_timeout_s=2.5))
    # 2.5 s, a 0.5 s wait, then only 2 s are left for the second attempt, and nothing after it
    assert timeouts == [2.5, 2.0]
    assert str(caught.value).endswith(
        "gave up after 2 attempt(s) within 5s; last: no answer within 2.0s"
    )


def test_a_refused_connection_ends_an_interactive_command_in_three_attempts() -> None:
    clock = FakeClock()
    call = Calls(refused())
    with pytest.raises(ClusterUnreachableError) as caught:
        run(call, clock.policy(unreachable_s=3.0))
    assert clock.slept == [0.5, 1.0]
    text = str(caught.value)
    assert text.startswith(
        "get configmaps/tf-advice at https://k8s.example:6443: cannot reach the API server, "
        "gave up after 3 attempt(s) in 1.5s; last: cannot connect (NewConnectionError: "
    )
    assert text.endswith("Connection refused)")


def test_the_jobs_policy_rides_out_refused_connections_until_its_deadline() -> None:
    clock = FakeClock()
    call = Calls(refused(), refused(), refused(), refused(), Raw(200))
    assert run(call, clock.policy()).status == 200  # unreachable_s None: 1.5 s is nothing
    assert clock.slept == [0.5, 1.0, 2.0, 4.0]


def test_an_answer_between_refusals_starts_the_unreachable_count_again() -> None:
    clock = FakeClock()
    # refused, refused (1.5 s), then a 503: the server is there; then refused again
    call = Calls(refused(), refused(), api_error(503), refused(), refused(), Raw(200))
    assert run(call, clock.policy(unreachable_s=3.0, max_delay_s=1.0)).status == 200
    assert clock.slept == [0.5, 1.0, 1.0, 1.0, 1.0]


# --------------------------------------------------------------------------------------------------
# paged lists


class Pages:
    """A list method answering page after page; records the parameters of each call."""

    def __init__(self, *pages: Raw | Exception) -> None:
        self.pages = list(pages)
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def __call__(self, *scope: Any, **params: Any) -> Raw:
        self.calls.append((scope, params))
        page = self.pages.pop(0)
        if isinstance(page, Exception):
            raise page
        return page


def page(items: list[Any], token: str | None = None) -> Raw:
    return Raw.of(200, {"items": items, "metadata": {"continue": token} if token else {}})


def listed(method: Callable[..., Any], *scope: Any, **params: Any) -> list[dict[str, Any]]:
    policy = FakeClock().policy()
    return list_all(
        CONNECTION,
        policy,
        Deadline(policy),
        "list configmaps in namespace ml",
        method,
        *scope,
        target=Target("configmaps", "ml", "a Role allowing list"),
        **params,
    )


def test_a_list_follows_continue_tokens_and_keeps_only_objects() -> None:
    method = Pages(
        page([{"metadata": {"name": "a"}}, "junk"], "t1"),
        page([{"metadata": {"name": "b"}}, None], "t2"),
        page([{"metadata": {"name": "c"}}]),
    )
    found = listed(method, "ml", page_size=2, label_selector="app=x", field_selector=None)
    assert [item["metadata"]["name"] for item in found] == ["a", "b", "c"]
    scopes = [scope for scope, _ in method.calls]
    assert scopes == [("ml",)] * 3
    tokens = [params.get("_continue") for _, params in method.calls]
    assert tokens == [None, "t1", "t2"]
    first = method.calls[0][1]
    # a None parameter is not sent; every page is bounded and read raw
    assert "field_selector" not in first
    assert (first["limit"], first["label_selector"], first["_preload_content"]) == (
        2,
        "app=x",
        False,
    )
    assert first["_request_timeout"] == 10.0


def test_a_page_without_items_or_metadata_ends_the_list() -> None:
    assert listed(Pages(Raw.of(200, {}))) == []
    assert listed(Pages(Raw(200))) == []  # an empty body


def test_a_refused_page_is_the_targets_typed_error() -> None:
    method = Pages(page([{"metadata": {"name": "a"}}], "t1"), api_error(403))
    with pytest.raises(
        ForbiddenError, match=r"^forbidden: cannot list configmaps in namespace ml; "
    ):
        listed(method, "ml")


def test_a_5xx_page_is_retried_where_it_failed() -> None:
    method = Pages(page([{"n": 1}], "t1"), api_error(503), page([{"n": 2}]))
    assert listed(method, "ml") == [{"n": 1}, {"n": 2}]
    assert [params.get("_continue") for _, params in method.calls] == [None, "t1", "t1"]


@pytest.mark.parametrize(
    ("resource", "namespace", "name", "path"),
    [
        (Resource("v1", "configmaps"), "ml", None, "/api/v1/namespaces/ml/configmaps"),
        (Resource("v1", "configmaps"), None, None, "/api/v1/configmaps"),
        (Resource("v1", "namespaces"), None, None, "/api/v1/namespaces"),
        (
            Resource("apps/v1", "statefulsets"),
            "ml",
            None,
            "/apis/apps/v1/namespaces/ml/statefulsets",
        ),
        (Resource("batch/v1", "jobs"), "ml", "j-1", "/apis/batch/v1/namespaces/ml/jobs/j-1"),
        (
            kind_resource("v1", "PersistentVolumeClaim"),
            "ml",
            None,
            "/api/v1/namespaces/ml/persistentvolumeclaims",
        ),
    ],
)
def test_a_resource_has_the_rest_path_the_generated_methods_use(
    resource: Resource, namespace: str | None, name: str | None, path: str
) -> None:
    assert resource.path(namespace, name) == path


@pytest.mark.parametrize(
    ("parameter", "wire"),
    [
        ("label_selector", "labelSelector"),
        ("_continue", "continue"),
        ("limit", "limit"),
        ("dry_run", "dryRun"),
        ("field_validation", "fieldValidation"),
        ("propagation_policy", "propagationPolicy"),
    ],
)
def test_a_parameter_is_sent_under_the_apis_name(parameter: str, wire: str) -> None:
    assert wire_name(parameter) == wire


def test_listed_items_get_their_api_version_and_kind_back_and_keep_their_own() -> None:
    items = [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}, "spec": {}}]
    found = with_kind(items, "apps/v1", "Deployment")
    assert found == [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "b"}, "spec": {}},
    ]
    assert items[0] == {"metadata": {"name": "a"}}  # the listed items are left as they are
