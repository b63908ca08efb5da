"""A strict fake Kubernetes API server for ConfigMaps, over real HTTP on 127.0.0.1.

No real API server can run on the test machine (see the shared REAL-PARTS notes), so the writer is
driven through the official ``kubernetes`` client against this one. It does what the real server
does for the requests the advisor may send, in the real order (authentication, fault injection
where priority-and-fairness would answer 429, authorization, namespace, validation, storage):

- bearer-token authentication (401), authorization from the rules of deploy/rbac.yaml (403), with
  the create-on-apply check: a server-side apply PATCH that creates is authorized as ``patch``
  and then as ``create`` with the name;
- v1 ConfigMaps, GET, POST, PUT, DELETE and server-side apply with field ownership, ``dryRun=All``
  and validation (testkit/fakeapi/configmaps.py);
- strictness: unknown paths 404, unknown methods 405, other content types 415, unknown query
  parameters 400;
- faults: a status (429 with Retry-After, 500/503, ...) for the next N requests, a never-answering
  mode, and a hook that runs between two requests to simulate a concurrent writer;
- lists of ConfigMaps, Pods, ServiceAccounts, Deployments, StatefulSets and DaemonSets
  (namespaced, and across all namespaces when ``cluster_rules`` from a ClusterRole allow it) and
  of Namespaces (testkit/fakeapi/scope.py) with label and field selectors, pages and
  metadata-only answers, as strict as a real server (testkit/fakeapi/lists.py);
- apps/v1 Deployments, StatefulSets and DaemonSets, GET, PATCH and DELETE
  (testkit/fakeapi/apps.py); Pods are only listed;
- batch/v1 Jobs, GET, POST and DELETE (testkit/fakeapi/jobs.py), and lists of them, with
  validating admission on create as a test sets it up (testkit/fakeapi/admission.py: a
  ResourceQuota on count/jobs.batch, an admission webhook's denial, Pod Security warnings);
- core/v1 Events, POST and lists (testkit/fakeapi/events.py);
- v1 PersistentVolumeClaims, GET (testkit/fakeapi/claims.py), and lists of them;
- the garbage collector (testkit/fakeapi/garbage.py): a Job whose owner is deleted, or
  never existed, goes away as on a real cluster.

Every request is recorded (method, path, query, content type, body) for assertions
(testkit/fakeapi/recorded.py); testkit/fakeapi/transport.py is the HTTP side.
"""

from __future__ import annotations

import copy
import itertools
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from testkit.fakeapi import apps, claims, configmaps, events, garbage, jobs, lists, scope, transport
from testkit.fakeapi.admission import JobQuota, PolicyDenial, WebhookDenial
from testkit.fakeapi.errors import ApiError
from testkit.fakeapi.rbac import SERVICE_ACCOUNT, Rule, role_rules
from testkit.fakeapi.recorded import Recorded, check_query, require_json
from testkit.fakeapi.transport import refused_port

__all__ = ["FakeApiServer", "Fault", "Recorded", "refused_port"]


@dataclass
class Fault:
    status: int
    times: int
    retry_after: str | None = None
    method: str | None = None


class FakeApiServer:
    """Start with ``with FakeApiServer(...) as api:``; ``api.kubeconfig`` is a real kubeconfig."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        namespaces: tuple[str, ...] = ("ml",),
        role_namespace: str = "ml",
        rules: list[Rule] | None = None,
        cluster_rules: list[Rule] | None = None,
        configmap_name: str | None = None,
        token: str = "s3cret-token",
        service_account: str = SERVICE_ACCOUNT,
    ) -> None:
        self.namespaces = set(namespaces)
        self.role_namespace = role_namespace
        self.rules = rules if rules is not None else role_rules(configmap_name=configmap_name)
        #: rules granted in every namespace (a ClusterRole through a ClusterRoleBinding)
        self.cluster_rules = cluster_rules or []
        self.token = token
        #: who the token is: the ServiceAccount ``rules`` were bound to (403 messages name it)
        self.user = f"system:serviceaccount:{role_namespace}:{service_account}"
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self.hang_next = 0
        #: called (with the server) before each write is processed; tests use it to race
        self.before_write: Callable[[FakeApiServer], None] | None = None
        self._rv = itertools.count(1000)
        self.configmaps = configmaps.ConfigMaps(
            lambda: str(next(self._rv)),
            authorize=self._authorize,
            namespace_exists=self._namespace_exists,
        )
        self.workloads = apps.Workloads(lambda: str(next(self._rv)))
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self._jobs = jobs.Jobs(lambda: str(next(self._rv)))
        self.claims = claims.Claims(lambda: str(next(self._rv)))
        self._events = events.Events(lambda: str(next(self._rv)))
        #: the Namespaces' labels and the ServiceAccounts (testkit/fakeapi/scope.py)
        self.scope = scope.Scope(lambda: str(next(self._rv)))
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._tmp = tmp_path
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), transport.handler_for(self))
        self._httpd.daemon_threads = True
        # a short poll: stop() waits for it, once per test
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.kubeconfig = self.write_kubeconfig(tmp_path / "kubeconfig", token=token)

    # ---------------------------------------------------------------------------------------------
    # lifecycle and test helpers

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeApiServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def write_kubeconfig(self, path: Path, *, token: str, server: str | None = None) -> Path:
        return transport.write_kubeconfig(path, token=token, server=server or self.url)

    def inject(
        self, status: int, times: int = 1, retry_after: str | None = None, method: str | None = None
    ) -> None:
        """The next ``times`` requests (of ``method``, if given) get ``status``."""
        with self._lock:
            self.faults.append(Fault(status, times, retry_after, method))

    def hang(self, times: int = 1) -> None:
        """The next ``times`` requests are read and never answered (until the server stops)."""
        with self._lock:
            self.hang_next += times

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self.configmaps.get(namespace, name)

    def put(self, obj: dict[str, Any], manager: str = "kubectl") -> dict[str, Any]:
        """Store ``obj`` as if another client had created or replaced it (a seed or a race)."""
        with self._lock:
            return self.configmaps.put(obj, manager)

    def put_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        """A Namespace that exists (requests in it are accepted), with ``labels``."""
        with self._lock:
            self.namespaces.add(name)
            self.scope.label(name, labels or {})

    def put_service_account(self, namespace: str, name: str) -> dict[str, Any]:
        with self._lock:
            return self.scope.put_service_account(namespace, name)

    def put_workload(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a Deployment/StatefulSet (``apps.workload(...)``) as created by someone else."""
        with self._lock:
            return self.workloads.put(obj)

    def put_pod(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a Pod (``pods.pod_of(...)``, ``pods.bare_pod(...)``) as the cluster made it."""
        with self._lock:
            obj = copy.deepcopy(obj)
            meta = obj["metadata"]
            meta.setdefault("uid", str(uuid.uuid4()))
            meta["resourceVersion"] = str(next(self._rv))
            self.pods[(meta["namespace"], meta["name"])] = obj
            return copy.deepcopy(obj)

    def workload(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self.workloads.get(resource, namespace, name)

    def delete_workload(
        self, resource: str, namespace: str, name: str, propagation: str = "Background"
    ) -> dict[str, Any]:
        """Delete a Deployment/StatefulSet as another client would (``kubectl delete``): its
        Jobs go with it (Background, apps/v1's default), or stay without the reference (Orphan)."""
        with self._lock:
            removed = self.workloads.remove(resource, namespace, name)
            if removed is None:
                raise KeyError(f"no {resource}/{name} in {namespace}")
            self._deleted(removed, propagation)
            return removed

    def put_job(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a Job (``jobs.job(...)``) as created by someone else, validated as a POST is."""
        with self._lock:
            try:
                return self._jobs.put(obj)
            except ApiError as exc:
                raise ValueError(f"not a valid Job: {exc.message}") from None

    def put_claim(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a PersistentVolumeClaim (``claims.claim(...)``), validated as a create is."""
        with self._lock:
            try:
                return self.claims.put(obj)
            except ApiError as exc:
                raise ValueError(f"not a valid PersistentVolumeClaim: {exc.message}") from None

    def job(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._jobs.get(namespace, name)

    def jobs(self) -> list[dict[str, Any]]:
        """Every stored Job, in (namespace, name) order."""
        with self._lock:
            return copy.deepcopy(self._jobs.all())

    def set_job_running(self, namespace: str, name: str, active: int = 1) -> dict[str, Any]:
        """``status.active`` as the Job controller reports it while the pod runs."""
        with self._lock:
            return self._jobs.set_running(namespace, name, active)

    def set_job_condition(
        self,
        namespace: str,
        name: str,
        type: str = "Complete",
        *,
        reason: str | None = None,
        message: str | None = None,
        failed: int | None = None,
    ) -> dict[str, Any]:
        """A finished Job as the Job controller leaves it (``jobs.Jobs.set_condition``)."""
        with self._lock:
            return self._jobs.set_condition(
                namespace, name, type, reason=reason, message=message, failed=failed
            )

    def add_job_quota(self, namespace: str, jobs: int, name: str = "jobs") -> None:
        """A ResourceQuota ``name`` with ``hard: {count/jobs.batch: jobs}`` in ``namespace``."""
        with self._lock:
            self._jobs.admission.quotas.append(JobQuota(name, namespace, jobs))

    def deny_jobs(self, denial: WebhookDenial | PolicyDenial) -> None:
        """A validating admission webhook, or a ValidatingAdmissionPolicy, that denies the Job
        creates ``denial`` applies to."""
        with self._lock:
            self._jobs.admission.denials.append(denial)

    def warn_pod_security(self, namespace: str, text: str) -> None:
        """Pod Security admission's warning on every Job created in ``namespace`` (the real
        plugin's text, e.g. ``would violate PodSecurity "restricted:latest": ...``)."""
        with self._lock:
            self._jobs.admission.pod_security_warnings.append((namespace, text))

    def events(self) -> list[dict[str, Any]]:
        """Every stored Event, in (namespace, name) order."""
        with self._lock:
            return copy.deepcopy(self._events.all())

    def collect_garbage(self) -> list[dict[str, Any]]:
        """Run the garbage collector now (it also runs before every request); what it deleted."""
        with self._lock:
            return garbage.collect(self._dependents(), self._lookup)

    def writes(self) -> list[Recorded]:
        return [r for r in self.requests if r.method != "GET"]

    def record(self, request: Recorded) -> bool:
        """Record ``request``; whether it is one of the ``hang`` ones, never answered."""
        with self._lock:
            self.requests.append(request)
            hang = self.hang_next > 0
            if hang:
                self.hang_next -= 1
            return hang

    def wait_stopped(self) -> None:
        """Until the server stops (where a hanging request waits)."""
        self._stopping.wait()

    # ---------------------------------------------------------------------------------------------
    # request handling

    def handle(
        self, request: Recorded, auth: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(status, body, extra headers) for one request; raising ApiError gives a Status."""
        self.collect_garbage()
        if auth != f"Bearer {self.token}":
            raise ApiError(401, "Unauthorized", "Unauthorized")
        self._inject_fault(request)
        item, listing = configmaps.ITEM.match(request.path), lists.collection(request.path)
        workload = apps.ITEM.match(request.path)
        job = jobs.ITEM.match(request.path)
        claim = claims.ITEM.match(request.path)
        if not item and not listing and not workload and not job and not claim:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        check_query(request)
        if request.method != "GET" and self.before_write is not None:
            self.before_write(self)
        if workload:
            return self._handle_workload(request, workload)
        if job:
            return self._handle_job(request, job.group(1), job.group(2))
        if claim:
            with self._lock:
                return self.claims.handle(request, claim, self._authorize)
        if listing is not None and listing[1] in ("jobs", "events") and request.method == "POST":
            return self._create_in(request, listing[1], listing[2])
        if listing is not None and request.method != "POST":
            if request.method != "GET":
                raise ApiError(405, "MethodNotAllowed", f"{request.method} is not allowed")
            return self._list(request, *listing)
        return self._handle_configmap(request, item, listing)

    def _inject_fault(self, request: Recorded) -> None:
        """The injected fault this request gets, if any (where priority-and-fairness answers)."""
        with self._lock:
            for fault in self.faults:
                if fault.times > 0 and fault.method in (None, request.method):
                    fault.times -= 1
                    headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                    raise transport.FaultError(fault.status, headers)

    def _handle_configmap(
        self,
        request: Recorded,
        item: re.Match[str] | None,
        listing: tuple[str, str, str | None] | None,
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """One ConfigMap by name, or a POST to a namespace's ConfigMaps."""
        if item is not None:
            namespace, name = item.group(1), item.group(2)
        else:
            assert listing is not None
            _, resource, where = listing
            if resource != "configmaps" or where is None:
                raise ApiError(405, "MethodNotAllowed", f"{request.method} is not allowed")
            namespace, name = where, ""
        with self._lock:
            return self.configmaps.handle(request, namespace, name)

    def _handle_workload(
        self, request: Recorded, workload: re.Match[str]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """A request for one Deployment, StatefulSet or DaemonSet."""
        with self._lock:
            if request.method == "DELETE":
                removed, policy, response = self.workloads.delete(
                    request, workload, self._authorize
                )
                if removed is not None:
                    self._deleted(removed, policy)
                return 200, response, {}
            return self.workloads.handle(request, workload, self._authorize)

    def _handle_job(
        self, request: Recorded, namespace: str | None, name: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """A request for one Job, or a POST to a namespace's Jobs (not to all namespaces')."""
        if namespace is None:
            raise ApiError(405, "MethodNotAllowed", f"{request.method} is not allowed")
        with self._lock:
            return self._jobs.handle(
                request,
                namespace,
                name,
                authorize=self._authorize,
                namespace_exists=self._namespace_exists,
                deleted=self._deleted,
            )

    def _create_in(
        self, request: Recorded, resource: str, namespace: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """A POST to a namespace's Jobs or Events (never to all namespaces')."""
        if resource == "jobs":
            return self._handle_job(request, namespace, None)
        if namespace is None:
            raise ApiError(405, "MethodNotAllowed", f"{request.method} is not allowed")
        require_json(request)
        with self._lock:
            self._authorize("create", namespace, None, "", "events")
            self._namespace_exists(namespace)
            return self._events.create(request, namespace)

    def _deleted(self, obj: dict[str, Any], propagation: str) -> None:
        """After ``obj`` was removed: its dependents go (Background, Foreground) or lose the
        reference (Orphan)."""
        if propagation == "Orphan":
            garbage.orphan(self._dependents(), obj["metadata"]["uid"])
        else:
            garbage.collect(self._dependents(), self._lookup)

    def _dependents(self) -> list[garbage.Dependents]:
        """What the collector looks after: Jobs, and the pods of Jobs."""
        next_rv = lambda: str(next(self._rv))  # noqa: E731
        return [
            garbage.Dependents(self._jobs.store, next_rv=next_rv),
            garbage.Dependents(self.pods, frozenset({("batch", "Job")}), next_rv),
        ]

    def _lookup(self, group: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A stored object by kind and name (the collector's view of the owners)."""
        if (group, kind) == ("", "ConfigMap"):
            stored = self.configmaps.store.get((namespace, name))
            return stored.obj if stored else None
        if (group, kind) == ("", "Pod"):
            return self.pods.get((namespace, name))
        if (group, kind) == ("batch", "Job"):
            return self._jobs.store.get((namespace, name))
        resource = {v: k for k, v in apps.KINDS.items()}.get(kind)
        return self.workloads.get(resource, namespace, name) if resource else None

    def _authorize(
        self,
        verb: str,
        namespace: str | None,
        name: str | None,
        group: str = "",
        resource: str = "configmaps",
    ) -> None:
        """RBAC: the Role's rules in its namespace, the ClusterRole's everywhere; a request
        across all namespaces (``namespace`` None) only by the ClusterRole."""
        in_role = namespace == self.role_namespace and any(
            rule.allows(verb, group, resource, name) for rule in self.rules
        )
        allowed = in_role or any(
            rule.allows(verb, group, resource, name) for rule in self.cluster_rules
        )
        if not allowed:
            qualified = f"{resource}.{group}" if group else resource
            target = f'{qualified} "{name}" is forbidden' if name else f"{qualified} is forbidden"
            scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
            raise ApiError(
                403,
                "Forbidden",
                f'{target}: User "{self.user}" cannot {verb} resource "{resource}" in API group '
                f'"{group}" {scope}',
                {"name": name or "", "group": group, "kind": resource},
            )

    def _namespace_exists(self, namespace: str) -> None:
        if namespace not in self.namespaces:
            raise ApiError(
                404,
                "NotFound",
                f'namespaces "{namespace}" not found',
                {"name": namespace, "kind": "namespaces"},
            )

    def _list(
        self, request: Recorded, group: str, resource: str, namespace: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            self._authorize("list", namespace, None, group, resource)
            if resource == "configmaps":
                objects = self.configmaps.all()
            elif resource == "pods":
                objects = list(self.pods.values())
            elif resource == "jobs":
                objects = self._jobs.all()
            elif resource == "events":
                objects = self._events.all()
            elif resource == claims.RESOURCE:
                objects = self.claims.all()
            elif resource in scope.RESOURCES:
                objects = self.scope.objects(resource, self.namespaces)
            else:
                objects = self.workloads.all(resource)
            body = lists.serve(
                objects,
                group=group,
                resource=resource,
                namespace=namespace,
                query=request.query,
                accept=request.accept,
                resource_version=str(next(self._rv)),
            )
        return 200, body, {}
