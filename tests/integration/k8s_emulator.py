"""A Kubernetes API server emulator for the gateway tests: kmock's ``KubernetesEmulator`` over real HTTP, gaps closed.

``PortalKubernetesEmulator`` adds, and only adds, what the Kubernetes gateway needs from an API server:

- **server-side apply**: ``PATCH`` with ``application/apply-patch+yaml`` parses the body as YAML (JSON included),
  requires ``fieldManager``, checks the body's name against the URL, creates a missing object (201) and otherwise
  merges the body in (200); a no-op apply leaves the object and its ``resourceVersion`` untouched;
- **Namespace URLs** (``/api/v1/namespaces/<name>``) are read as the Namespace object, not as a namespace prefix;
- **Kueue's CRDs** (``kueue.x-k8s.io/v1beta2``: ResourceFlavor, ClusterQueue, LocalQueue, WorkloadPriorityClass) in
  API discovery, or not (``serve_kueue=False``: a cluster without Kueue installed); likewise the Prometheus
  Operator's PrometheusRule and ServiceMonitor (``monitoring.coreos.com/v1``), JobSet and KAI's Queue;
- **label and field selectors** on lists: equality (``k=v``, ``k==v``, ``k!=v``) and existence (``k``, ``!k``);
  set-based selectors (``in``, ``notin``) answer 400 rather than a wrong list;
- **lists** carry ``kind`` (``PodList``) and ``apiVersion``; objects get ``uid``, ``creationTimestamp`` and a
  ``resourceVersion`` that grows when an apply changes them;
- **the Eviction API**: ``POST .../pods/<name>/eviction`` deletes the pod (201), or answers 404 when there is none;
  no PodDisruptionBudget is evaluated (inject a 429 with ``fail`` to play one that forbids it);
- **injected failures** (``fail``): the next matching requests answer a ``Status`` with a chosen code and message
  before any state changes, as an API server, an admission webhook or a proxy in front of one would;
- **injected slowness** (``delay``): the next matching requests are held (for ``seconds``, or until the test
  calls ``Delay.release()``) and then served as usual, as a slow API server or webhook would; ``Delay.arrived`` lets a
  test act (kill the client, say) while one is in flight. When its client goes away a held request is abandoned and
  changes nothing (kmock serves through aiohttp's test server, which cancels the handlers of closed connections),
  unless it was made with ``outlive_client=True``: then it is served anyway, late, as a real API server finishes a
  write it had begun.

What it cannot prove, so a real cluster (kind, or a staging cluster) still has to:

- **field ownership**: there are no ``managedFields``; an apply is a plain JSON merge, so a field the portal stops
  rendering stays here, where a real server would remove it; lists are replaced whole, never merged by key;
- **conflicts**: no field-manager conflicts exist, so ``force=true`` is accepted and never exercised; a 409 appears
  only when injected;
- **admission and validation**: no schema validation, defaulting, quota, LimitRange, PodSecurity or webhooks; any
  object is stored as sent (the manifests are validated offline by ``kubernetes-validate`` in the manifest tests);
- **controllers and the scheduler**: nothing creates pods, events or node status; tests inject them (``put``);
- **garbage collection**: ``propagationPolicy`` is ignored; deleting a Job or a Namespace leaves its pods here.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import re
import threading
import uuid
from collections.abc import Awaitable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import aiohttp.web
import attrs
import kmock
import yaml
from kmock import action, method

T = TypeVar("T")
APPLY_PATCH = "application/apply-patch+yaml"
# kind -> (group, version, plural, namespaced): what the portal renders and the gateway reads.
KINDS: dict[str, tuple[str, str, str, bool]] = {
    "Namespace": ("", "v1", "namespaces", False),
    "Node": ("", "v1", "nodes", False),
    "Pod": ("", "v1", "pods", True),
    "Event": ("", "v1", "events", True),
    "ConfigMap": ("", "v1", "configmaps", True),
    "Service": ("", "v1", "services", True),
    "ResourceQuota": ("", "v1", "resourcequotas", True),
    "LimitRange": ("", "v1", "limitranges", True),
    "Deployment": ("apps", "v1", "deployments", True),
    "Job": ("batch", "v1", "jobs", True),
    "PodDisruptionBudget": ("policy", "v1", "poddisruptionbudgets", True),
    "NetworkPolicy": ("networking.k8s.io", "v1", "networkpolicies", True),
    "PriorityClass": ("scheduling.k8s.io", "v1", "priorityclasses", False),
    "ResourceClaimTemplate": ("resource.k8s.io", "v1", "resourceclaimtemplates", True),
    "ResourceSlice": ("resource.k8s.io", "v1", "resourceslices", False),
}
# Kueue's CRDs (v1beta2), served unless the emulated cluster is told it has no Kueue installed.
KUEUE_KINDS: dict[str, tuple[str, str, str, bool]] = {
    "ResourceFlavor": ("kueue.x-k8s.io", "v1beta2", "resourceflavors", False),
    "ClusterQueue": ("kueue.x-k8s.io", "v1beta2", "clusterqueues", False),
    "LocalQueue": ("kueue.x-k8s.io", "v1beta2", "localqueues", True),
    "WorkloadPriorityClass": ("kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", False),
    "Topology": ("kueue.x-k8s.io", "v1beta2", "topologies", False),
    "Workload": ("kueue.x-k8s.io", "v1beta2", "workloads", True),
}
# The Prometheus Operator's CRDs, served with Kueue's (a cluster with a monitoring namespace has them).
PROMETHEUS_OPERATOR_KINDS: dict[str, tuple[str, str, str, bool]] = {
    "PrometheusRule": ("monitoring.coreos.com", "v1", "prometheusrules", True),
    "ServiceMonitor": ("monitoring.coreos.com", "v1", "servicemonitors", True),
    # JobSet (multi-pod training) and the KAI Scheduler's queues, served with Kueue's as well.
    "JobSet": ("jobset.x-k8s.io", "v1alpha2", "jobsets", True),
    "Queue": ("scheduling.run.ai", "v2", "queues", False),
}
VERBS = {"get", "list", "watch", "create", "patch", "delete"}
_NAMESPACE_URL = re.compile(r"^/api/v1/namespaces/([^/]+)$")
_EVICTION_URL = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction$")
_NAMESPACE_ACTIONS = {method.GET: action.FETCH, method.PATCH: action.UPDATE, method.DELETE: action.DELETE}


def resource_of(kind: str) -> kmock.resource:
    """The emulator's resource for a kind."""
    group, version, plural, _ = {**KINDS, **KUEUE_KINDS, **PROMETHEUS_OPERATOR_KINDS}[kind]
    return kmock.resource(group, version, plural)


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    """A ``Status`` object as the API server answers failures."""
    return {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


@dataclass
class Delay:
    """An injected pause; ``arrived`` is set when a held request comes in, ``done`` when it was served or abandoned.

    ``outcome`` is the HTTP status the held request was answered with, or None while held or when it was abandoned.
    """

    method: str
    path: str
    seconds: float
    times: int
    outlive_client: bool = False
    arrived: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    outcome: int | None = None

    def release(self) -> None:
        """Serve the held requests now rather than when ``seconds`` have passed."""
        self.released.set()


@dataclass
class _Failure:
    method: str
    path: str
    code: int
    reason: str
    message: str
    times: int


@attrs.define(kw_only=True)
class PortalKubernetesEmulator(kmock.KubernetesEmulator):
    """kmock's emulator plus server-side apply, Namespace URLs, selectors, typed lists and injected failures."""

    _failures: list[_Failure] = attrs.field(factory=list, init=False)
    _delays: list[Delay] = attrs.field(factory=list, init=False)
    _outliving: set[asyncio.Task[aiohttp.web.StreamResponse]] = attrs.field(factory=set, init=False)
    _versions: Iterator[int] = attrs.field(factory=lambda: itertools.count(1), init=False)
    # Whether Kueue's CRDs are installed: API discovery lists them and their URLs serve.
    serve_kueue: bool = True

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        kinds = {**KINDS, **KUEUE_KINDS, **PROMETHEUS_OPERATOR_KINDS} if self.serve_kueue else KINDS
        for kind, (group, version, plural, namespaced) in kinds.items():
            info = kmock.ResourceInfo(kind=kind, namespaced=namespaced, verbs=VERBS)
            self.resources[kmock.resource(group, version, plural)] = info

    def fail(self, verb: str, path: str, code: int, message: str, *, reason: str = "", times: int = 1) -> None:
        """Answer the next ``times`` requests ``verb path`` (path without query) with a Status of ``code``."""
        self._failures.append(_Failure(verb.upper(), path, code, reason or f"Injected{code}", message, times))

    def delay(self, verb: str, path: str, seconds: float, *, times: int = 1, outlive_client: bool = False) -> Delay:
        """Hold the next ``times`` requests ``verb path`` (path without query) for ``seconds``, then serve them."""
        delay = Delay(verb.upper(), path, seconds, times, outlive_client)
        self._delays.append(delay)
        return delay

    def release_all(self) -> None:
        """Stop holding requests (the server is going away)."""
        for delay in self._delays:
            delay.release()

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        for delay in self._delays:
            if delay.times > 0 and (delay.method, delay.path) == (request.method.value, request.url.path):
                delay.times -= 1
                delay.arrived.set()
                if not delay.outlive_client:
                    return await self._hold(delay, request)
                # Shielded: the client's disconnect cancels only this handler, not the held request.
                held = asyncio.ensure_future(self._hold(delay, request))
                self._outliving.add(held)
                held.add_done_callback(self._outliving.discard)
                return await asyncio.shield(held)
        return await self._handle_now(request)

    async def _hold(self, delay: Delay, request: kmock.Request) -> aiohttp.web.StreamResponse:
        try:
            deadline = asyncio.get_running_loop().time() + delay.seconds
            while not delay.released.is_set() and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.02)
            response = await self._handle_now(request)
            delay.outcome = response.status
            return response
        finally:
            delay.done.set()

    async def _handle_now(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        found = _NAMESPACE_URL.match(request.url.path)
        if found:
            namespaces = kmock.resource("", "v1", "namespaces")
            action_ = _NAMESPACE_ACTIONS.get(request.method)
            fixed = attrs.evolve(request, resource=namespaces, namespace=None, name=found[1], action=action_)
            # kmock's views find requests by identity in its request log, so the corrected one replaces the parsed one.
            self._requests[:] = [fixed if seen is request else seen for seen in self._requests]
            request = fixed
        for failure in self._failures:
            if failure.times > 0 and (failure.method, failure.path) == (request.method.value, request.url.path):
                failure.times -= 1
                body = status_body(failure.code, failure.reason, failure.message)
                return aiohttp.web.json_response(body, status=failure.code)
        eviction = _EVICTION_URL.match(request.url.path)
        if eviction and request.method == method.POST:
            return await self._evict(eviction[1], eviction[2])
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        if request.method == method.PATCH and content_type == APPLY_PATCH and request.name and request.resource:
            return await self._apply(request)
        return await super()._handle(request)

    async def _apply(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        """Server-side apply as a merge: create the object when missing, merge the body in otherwise."""
        try:
            body = yaml.safe_load(request.text)
        except yaml.YAMLError as error:
            return _refuse(400, "BadRequest", f"error decoding YAML: {error}")
        if not isinstance(body, dict):
            return _refuse(400, "BadRequest", "the apply body is not an object")
        if not request.params.get("fieldManager"):
            return _refuse(400, "BadRequest", "PATCH apply requires fieldManager to be set")
        meta = body.setdefault("metadata", {})
        if meta.get("name") != request.name:
            message = f"the name of the object ({meta.get('name')}) does not match the name on the URL ({request.name})"
            return _refuse(400, "BadRequest", message)
        if request.namespace is not None:
            meta.setdefault("namespace", request.namespace)
        key = (request.resource, request.namespace, request.name)
        async with self._lock:
            existing = self._objects[key] if key in self._objects else None  # noqa: SIM401 (ObjectsArray has no get)
            if existing is None or existing.deleted:
                stamp = {"uid": str(uuid.uuid4()), "creationTimestamp": _now(), "resourceVersion": self._version()}
                created = {**body, "metadata": {**meta, **stamp}}
                if existing is None:
                    self._objects[key] = created
                else:
                    existing.create(created)
                code, event, obj = 201, "ADDED", self._objects[key]
            else:
                before = existing.raw
                changed = [
                    f for f in _IMMUTABLE.get(request.resource.plural, ()) if f in body and body[f] != before.get(f)
                ]
                if changed:
                    message = f"{request.name}: {changed[0]}: Forbidden: may not be changed in an update."
                    return _refuse(422, "Invalid", message)
                existing.patch(copy.deepcopy(body))
                if existing.raw == before:
                    del existing.history[-1]  # a no-op apply writes nothing, as a real server
                else:
                    del existing.history[-1]
                    existing.patch({**body, "metadata": {**meta, "resourceVersion": self._version()}})
                code, event, obj = 200, "MODIFIED", existing
            raw = obj.raw
            await self._buses[request.resource].put({"type": event, "object": raw})
        return aiohttp.web.json_response(raw, status=code)

    async def _evict(self, namespace: str, name: str) -> aiohttp.web.StreamResponse:
        """An approved eviction: the pod is deleted, as the API server does when no budget forbids it."""
        pods = kmock.resource("", "v1", "pods")
        key = (pods, namespace, name)
        async with self._lock:
            if key not in self._objects or self._objects[key].deleted:
                return _refuse(404, "NotFound", f'pods "{name}" not found')
            raw = self._objects[key].raw
            self._objects[key].delete()
            await self._buses[pods].put({"type": "DELETED", "object": raw})
        body = {"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Success", "code": 201}
        return aiohttp.web.json_response(body, status=201)

    async def _serve_list(self, request: kmock.Request) -> dict[str, Any]:
        """The stock list, filtered by label and field selectors, with ``kind`` and ``apiVersion``."""
        listing = dict(await super()._serve_list(request))
        items = listing.get("items", [])
        for param, lookup in (("labelSelector", _label), ("fieldSelector", _field)):
            selector = request.params.get(param, "")
            if selector:
                items = [item for item in items if _selects(selector, item, lookup)]
        listing["items"] = items
        assert request.resource is not None  # a list request always names its resource
        info = self.resources[request.resource]
        group, version = request.resource.group, request.resource.version
        listing["apiVersion"] = f"{group}/{version}" if group else version
        listing["kind"] = f"{info.kind}List"
        return listing

    def _version(self) -> str:
        return str(next(self._versions))


class SelectorError(kmock.KubernetesError):
    """A selector the emulator does not evaluate: answered 400 so no test trusts a wrong list."""


# Fields the real API server refuses to update in place (ValidatePriorityClassUpdate).
_IMMUTABLE = {"priorityclasses": ("value", "preemptionPolicy")}


def _refuse(code: int, reason: str, message: str) -> aiohttp.web.Response:
    return aiohttp.web.json_response(status_body(code, reason, message), status=code)


def _now() -> str:
    return datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _label(item: Mapping[str, Any], key: str) -> str | None:
    return ((item.get("metadata") or {}).get("labels") or {}).get(key)


def _field(item: Mapping[str, Any], key: str) -> str | None:
    value: Any = item
    for part in key.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return None if value is None else str(value)


def _selects(selector: str, item: Mapping[str, Any], lookup: Any) -> bool:
    """Whether an item matches an equality- or existence-based selector."""
    for term in (part.strip() for part in selector.split(",") if part.strip()):
        if re.search(r"\s(not)?in\s*\(", term) or "(" in term:
            raise SelectorError(status=400, reason="BadRequest", message=f"set-based selector not emulated: {term}")
        if "!=" in term:
            key, value = (side.strip() for side in term.split("!=", 1))
            if lookup(item, key) == value:
                return False
        elif "=" in term:
            key, value = (side.strip() for side in term.replace("==", "=").split("=", 1))
            if lookup(item, key) != value:
                return False
        elif term.startswith("!"):
            if lookup(item, term[1:].strip()) is not None:
                return False
        elif lookup(item, term) is None:
            return False
    return True


class EmulatedCluster:
    """The emulator on a loopback port, served from a background thread with its own event loop, for sync tests."""

    def __init__(self, *, serve_kueue: bool = True) -> None:
        self._serve_kueue = serve_kueue
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="k8s-emulator", daemon=True)
        self.emulator: PortalKubernetesEmulator
        self._server: kmock.Server

    @classmethod
    @contextlib.contextmanager
    def running(cls, *, serve_kueue: bool = True) -> Iterator[EmulatedCluster]:
        """Start the emulator (with Kueue's CRDs unless told otherwise), hand it over, and stop it however it ends."""
        cluster = cls(serve_kueue=serve_kueue)
        cluster._thread.start()
        try:
            cluster._run(cluster._enter())
            yield cluster
        finally:
            with contextlib.suppress(Exception):
                cluster._run(cluster._exit())
            cluster._loop.call_soon_threadsafe(cluster._loop.stop)
            cluster._thread.join(timeout=10)
            cluster._loop.close()

    @property
    def url(self) -> str:
        """The API server's base URL, e.g. ``http://127.0.0.1:40123``."""
        return str(self._server.url).rstrip("/")

    @property
    def requests(self) -> list[kmock.Request]:
        """Every request served so far, in order."""
        return self._locked(lambda _: list(self.emulator._requests))

    def put(self, obj: Mapping[str, Any]) -> None:
        """Store an object as a controller, the scheduler or a kubelet would have written it."""
        meta = obj["metadata"]
        key = (resource_of(obj["kind"]), meta.get("namespace"), meta["name"])
        self._locked(lambda objects: objects.__setitem__(key, copy.deepcopy(dict(obj))))

    def edit(self, kind: str, name: str, changes: Mapping[str, Any], namespace: str | None = None) -> None:
        """Merge changes into a stored object, as ``kubectl edit`` by someone else would."""
        self._locked(lambda objects: objects[resource_of(kind), namespace, name].patch(copy.deepcopy(dict(changes))))

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """A stored object's current state, or None when it does not exist."""

        def read(objects: kmock.ObjectsArray) -> dict[str, Any] | None:
            key = (resource_of(kind), namespace, name)
            return None if key not in objects or objects[key].deleted else copy.deepcopy(objects[key].raw)

        return self._locked(read)

    def fail(self, verb: str, path: str, code: int, message: str, *, reason: str = "", times: int = 1) -> None:
        """Make the next ``times`` matching requests fail (see ``PortalKubernetesEmulator.fail``)."""
        self._locked(lambda _: self.emulator.fail(verb, path, code, message, reason=reason, times=times))

    def delay(self, verb: str, path: str, seconds: float, *, times: int = 1, outlive_client: bool = False) -> Delay:
        """Hold the next ``times`` matching requests (see ``PortalKubernetesEmulator.delay``)."""
        return self._locked(
            lambda _: self.emulator.delay(verb, path, seconds, times=times, outlive_client=outlive_client)
        )

    def labelled(self, key: str, value: str) -> list[dict[str, Any]]:
        """Every stored (not deleted) object, of any kind, whose label ``key`` is ``value``."""

        def read(objects: kmock.ObjectsArray) -> list[dict[str, Any]]:
            found = (obj.raw for obj in objects.values() if not obj.deleted)
            return [copy.deepcopy(raw) for raw in found if _label(raw, key) == value]

        return self._locked(read)

    def _locked(self, change: Any) -> Any:
        async def under_lock() -> Any:
            async with self.emulator._lock:
                return change(self.emulator.objects)

        return self._run(under_lock())

    def _run(self, coroutine: Awaitable[T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=30)  # type: ignore[arg-type]

    async def _enter(self) -> None:
        self.emulator = PortalKubernetesEmulator(serve_kueue=self._serve_kueue)
        await self.emulator.__aenter__()
        self._server = kmock.Server(self.emulator)
        await self._server.__aenter__()

    async def _exit(self) -> None:
        self.emulator.release_all()
        if self.emulator._outliving:  # held requests that outlived their clients finish before the loop stops
            await asyncio.wait(list(self.emulator._outliving), timeout=5)
        await self._server.__aexit__(None, None, None)
        await self.emulator.__aexit__(None, None, None)
