"""The HTTP side: a Kubernetes-compatible REST API over the store, for the real kubectl.

Request handling is written as plain methods over parsed requests; aiohttp only carries
bytes. Every failure leaves as a ``metav1.Status`` with the API server's code and reason
(400/401/404/405/409/413/415/422); an unexpected exception is logged and answered as a
400 Status naming it, never as a 500 (kubectl and clients retry 5xx, hiding the problem).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from ..cluster.build import admit
from ..cluster.config import ClusterConfig
from ..cluster.naming import random_suffix
from ..cluster.services import allocate_services
from ..model.fielderr import CAUSE_REASON, ErrorType, FieldError
from ..model.kinds import BY_KIND as CORE_KINDS
from ..model.labels import Selector
from ..model.loader import Document, Source
from . import controllers, openapi, patch, resources, tables
from .resources import BY_PATH, Resource
from .store import Change, Key, Store, Stored, Watcher, Write

log = logging.getLogger("knetsim.apiserver")

MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's limit for one object (etcd's 1.5 MiB plus headroom)
DISCOVERY_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
PROTOBUF = "application/vnd.kubernetes.protobuf"
# Kinds whose registry strategy sets metadata.generation (Services, Namespaces, ConfigMaps... have none).
GENERATION_KINDS = {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod", "Ingress",
                    "IngressClass", "NetworkPolicy", "EndpointSlice"}
ENDPOINTS_WARNING = "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            out["details"] = self.details
        return out


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _qualified(r: Resource) -> str:
    return f"{r.plural}.{r.group}" if r.group else r.plural


def not_found(r: Resource, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{_qualified(r)} "{name}" not found',
                    {"name": name, "group": r.group, "kind": r.plural})


def invalid(r: Resource, name: str, errors: list[FieldError]) -> ApiError:
    kind = f"{r.kind}.{r.group}" if r.group else r.kind
    text = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    causes = [{"reason": CAUSE_REASON.get(e.type, "FieldValueInvalid"), "message": e.body(), "field": e.path}
              for e in errors]
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {text}',
                    {"name": name, "group": r.group, "kind": r.kind, "causes": causes})


def drop_type_dependent_fields(body: dict[str, Any], old: dict[str, Any]) -> None:
    """The registry's dropTypeDependentFields: changing a Service's type clears the fields the new type
    may not have, as long as the client left them as they were (an explicit new value is still validated)."""
    spec, ospec = body.get("spec"), old.get("spec") or {}
    if not isinstance(spec, dict):
        return
    new_type, old_type = spec.get("type", "ClusterIP"), ospec.get("type", "ClusterIP")
    if new_type == old_type:
        return

    def unchanged(field: str) -> bool:
        return field in spec and spec.get(field) == ospec.get(field)

    if new_type == "ExternalName":
        for field in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"):
            if unchanged(field):
                spec.pop(field)
    external = new_type in ("NodePort", "LoadBalancer") or bool(spec.get("externalIPs"))
    if new_type not in ("NodePort", "LoadBalancer") or (
            new_type == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is False):
        old_node_ports = [p.get("nodePort") for p in ospec.get("ports") or []]
        ports = spec.get("ports") or []
        if [p.get("nodePort") for p in ports if isinstance(p, dict)][:len(old_node_ports)] == \
                old_node_ports[:len(ports)]:
            for p in ports:
                if isinstance(p, dict):
                    p.pop("nodePort", None)
    if not (new_type == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local") and \
            unchanged("healthCheckNodePort"):
        spec.pop("healthCheckNodePort")
    if not external and unchanged("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy")
    if new_type != "LoadBalancer":
        for field in ("allocateLoadBalancerNodePorts", "loadBalancerClass"):
            if unchanged(field):
                spec.pop(field)


def check_resource_version(r: Resource, name: str, want: Any, current: int) -> None:
    """An update's optimistic-concurrency precondition: malformed is 400, stale is 409."""
    if not want:
        return
    if not str(want).isdigit():
        raise ApiError(400, "BadRequest", f"invalid resource version: {want!r}")
    if int(want) != int(current):
        raise conflict(r, name)


def conflict(r: Resource, name: str) -> ApiError:
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {_qualified(r)} "{name}": the object has '
                    "been modified; please apply your changes to the latest version and try again",
                    {"name": name, "group": r.group, "kind": r.plural})


@dataclass
class Target:
    """A parsed resource URL."""

    resource: Resource
    namespace: str
    name: str
    sub: str


def parse_field_selector(text: str) -> list[tuple[str, str, bool]]:
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "!=" in part:
            k, v = part.split("!=", 1)
            out.append((k.strip(), v.strip(), False))
        elif "==" in part:
            k, v = part.split("==", 1)
            out.append((k.strip(), v.strip(), True))
        elif "=" in part:
            k, v = part.split("=", 1)
            out.append((k.strip(), v.strip(), True))
        else:
            raise ApiError(400, "BadRequest", f"invalid selector: '{text}'; can't understand '{part}'")
    return out


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    node: Any = obj
    for p in path.split("."):
        if not isinstance(node, Mapping):
            return ""
        node = node.get(p)
    return "" if node is None else str(node)


def make_filter(label_selector: str, field_selector: str) -> Callable[[Mapping[str, Any]], bool]:
    sel = None
    if label_selector:
        try:
            sel = Selector.parse(label_selector)
        except Exception as exc:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {exc}") from exc
    fields = parse_field_selector(field_selector) if field_selector else []

    def accept(obj: Mapping[str, Any]) -> bool:
        if sel is not None and not sel.matches((obj.get("metadata") or {}).get("labels") or {}):
            return False
        return all((_field_value(obj, k) == v) == eq for k, v, eq in fields)
    return accept


class ApiServer:
    def __init__(self, state_dir: str | Path, config: ClusterConfig | None = None, token: str | None = None) -> None:
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.config = config or ClusterConfig()
        self.token = token
        self.store = Store(self.state_dir / "store.db")
        self._writes = 0
        self._reconciled = 0
        self._reconcile_task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        self._wakeup = asyncio.Event()
        self._last_cost = 0.0
        self._nodes: list[Any] | None = None
        self.state: Any = None  # the last ClusterState the controllers computed
        self.exec_handlers: dict[str, Callable[..., Any]] = {}
        # Called with each new ClusterState (DNS server, ingress entry).
        self.state_listeners: list[Callable[[Any], None]] = []
        self.closing = False

    # --- controllers ---------------------------------------------------------------

    def reconcile_now(self) -> None:
        """Run the controllers once over the stored objects and commit their plan."""
        target = self._writes
        p = controllers.plan(self.store.objects, self.config, now_rfc3339(), self.store.meta, self._nodes)
        if p.writes or p.meta:
            self.store.commit(p.writes, p.meta)
        if p.state is not None:
            self._nodes = list(p.state.nodes.values())
            self.state = p.state
            for fn in self.state_listeners:
                try:
                    fn(p.state)
                except Exception:
                    log.exception("state listener failed")
        self._reconciled = target

    def mark_dirty(self) -> None:
        """Ask the controllers for a rebuild (the kubelet reports a pod status change)."""
        self._mark_dirty()

    def _mark_dirty(self) -> None:
        self._writes += 1
        if self._reconcile_task is None or self._reconcile_task.done():
            self._reconcile_task = asyncio.get_running_loop().create_task(self._reconcile_loop())

    async def _reconcile_loop(self) -> None:
        while self._reconciled < self._writes and not self.closing:
            # Coalesce a burst of writes into one rebuild: wait as long as the last rebuild took
            # (at most 0.2 s), so rebuilding never takes more than about half of the server's time.
            # A reader that needs the result (settle) cuts the wait short.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), min(0.2, self._last_cost))
            self._wakeup.clear()
            started = time.perf_counter()
            try:
                self.reconcile_now()
            except Exception:
                log.exception("reconcile failed")
                self._reconciled = self._writes
            self._last_cost = time.perf_counter() - started
            self._settled.set()
            self._settled = asyncio.Event()

    async def settle(self) -> None:
        """Wait until the controllers have seen every write acknowledged so far."""
        target = self._writes
        while self._reconciled < target and not self.closing:
            self._wakeup.set()
            if self._reconcile_task is None or self._reconcile_task.done():
                self._reconcile_task = asyncio.get_running_loop().create_task(self._reconcile_loop())
            await self._settled.wait()

    # --- aiohttp plumbing ----------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY, middlewares=[self._middleware])
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        return app

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
        try:
            if request.path not in ("/healthz", "/readyz", "/livez") and self.token is not None:
                auth = request.headers.get("Authorization", "")
                if not secrets.compare_digest(auth.encode(), f"Bearer {self.token}".encode()):
                    raise ApiError(401, "Unauthorized", "Unauthorized")
            resp: web.StreamResponse = await handler(request)
            if request.get("warning") and not resp.prepared:
                resp.headers["Warning"] = f'299 - "{request["warning"]}"'
            return resp
        except ApiError as exc:
            return self._json(exc.status(), exc.code)
        except web.HTTPRequestEntityTooLarge:
            return self._json(ApiError(413, "RequestEntityTooLarge",
                                       f"the request body is too large (limit {MAX_BODY} bytes)").status(), 413)
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except web.HTTPException as exc:
            return self._json(ApiError(exc.status if exc.status < 500 else 400, exc.reason, exc.text or exc.reason)
                              .status(), exc.status if exc.status < 500 else 400)
        except Exception as exc:
            log.exception("unexpected error on %s %s", request.method, request.path_qs)
            return self._json(ApiError(400, "BadRequest", f"knetsim could not process the request: "
                                                          f"{type(exc).__name__}: {exc}").status(), 400)

    @staticmethod
    def _json(body: Any, status: int = 200, content_type: str = "application/json") -> web.Response:
        return web.Response(body=json.dumps(body, separators=(",", ":")).encode(), status=status,
                            headers={"Content-Type": content_type})

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        method = request.method
        if path in ("/healthz", "/readyz", "/livez"):
            return web.Response(text="ok")
        if path == "/version":
            return self._json(resources.SERVER_VERSION)
        if path in ("/api", "/apis"):
            if method != "GET":
                raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on {path}")
            if "apidiscovery.k8s.io" in request.headers.get("Accept", ""):
                return self._json(resources.aggregated_discovery(path == "/api"), content_type=DISCOVERY_V2)
            return self._json(resources.api_versions() if path == "/api" else resources.api_group_list())
        if path == "/openapi/v2":
            if "protobuf" not in request.headers.get("Accept", ""):
                raise ApiError(406, "NotAcceptable", "knetsim serves /openapi/v2 as protobuf only (" +
                               openapi.OPENAPI_V2_PROTOBUF + "); JSON clients use /openapi/v3")
            return web.Response(body=openapi.v2_document(), headers={"Content-Type": openapi.OPENAPI_V2_PROTOBUF})
        if path == "/openapi/v3":
            return self._json(openapi.index())
        if path.startswith("/openapi/v3/"):
            gv = path[len("/openapi/v3/"):].split("/")
            group, version = ("", gv[1]) if gv[0] == "api" and len(gv) == 2 else (
                (gv[1], gv[2]) if gv[0] == "apis" and len(gv) == 3 else ("?", "?"))
            if (group, version) not in resources.group_versions():
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            data, _ = openapi.gv_document(group, version)
            return web.Response(body=data, headers={"Content-Type": "application/json",
                                                    "Cache-Control": "public, immutable"})
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 2:
            if len(parts) == 2:
                g = resources.api_group(parts[1])
                if g is None:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                return self._json(g)
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            rl = resources.resource_list(group, version)
            if rl is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return self._json(rl)
        target = self._target(group, version, rest)
        if target.resource.kind == "Endpoints":
            # kube-apiserver >= 1.33 warns on every v1 Endpoints request; kubectl prints "Warning: ...".
            request["warning"] = ENDPOINTS_WARNING
        return await self._resource(request, target)

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
            namespace, rest = rest[1], rest[2:]
        plural = rest[0]
        r = BY_PATH.get((group, version, plural))
        if r is None or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in r.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if namespace and not r.namespaced:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return Target(r, namespace if r.namespaced else "", name, sub)

    async def _resource(self, request: web.Request, t: Target) -> web.StreamResponse:
        m = request.method
        q = request.query
        if t.sub in ("exec", "attach", "portforward"):
            handler = self.exec_handlers.get("portforward" if t.sub == "portforward" else "ws")
            if handler is None:
                raise ApiError(400, "BadRequest", f"{t.sub} is not available")
            return await handler(self, request, t)  # type: ignore[no-any-return]
        if t.sub == "log":
            return await self._log(request, t)
        if m == "GET" and not t.name:
            if q.get("watch") in ("true", "1"):
                return await self._watch(request, t)
            await self.settle()
            return self._list(request, t)
        if m == "GET":
            # Objects the controllers create or complete; Services are allocated at write time, and
            # `kubectl apply` GETs every object it applies, which must not wait for a rebuild.
            if t.resource.kind in ("Pod", "ReplicaSet", "EndpointSlice", "Endpoints"):
                await self.settle()
            obj = self._get(t)
            if t.sub == "scale":
                return self._json(self._scale(t.resource, obj))
            return self._json(self._out(request, t.resource, obj))
        if m == "POST" and not t.name:
            body = await self._read_body(request, t.resource)
            return await self._create(request, t, body)
        if m == "PUT" and t.name:
            body = await self._read_body(request, t.resource if t.sub != "scale" else None)
            return await self._update(request, t, body)
        if m == "PATCH" and t.name:
            return await self._patch(request, t)
        if m == "DELETE" and t.name:
            return await self._delete(request, t)
        if m == "DELETE":
            return await self._delete_collection(request, t)
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    # --- bodies ----------------------------------------------------------------------

    async def _read_body(self, request: web.Request, r: Resource | None) -> dict[str, Any]:
        raw = await request.read()
        ctype = request.headers.get("Content-Type", "application/json").split(";")[0].strip()
        return decode_body(raw, ctype, r)

    def _out(self, request: web.Request, r: Resource, obj: dict[str, Any]) -> Any:
        accept = request.headers.get("Accept", "")
        if "as=Table" in accept:
            return tables.table(r.kind, [obj], str(self.store.rv), request.query.get("includeObject", "Metadata"))
        return obj

    # --- reads -----------------------------------------------------------------------

    def _get(self, t: Target) -> dict[str, Any]:
        stored = self.store.get((t.resource.kind, t.namespace, t.name))
        if stored is None:
            raise not_found(t.resource, t.name)
        return stored.body

    def _list(self, request: web.Request, t: Target) -> web.Response:
        q = request.query
        accept = make_filter(q.get("labelSelector", ""), q.get("fieldSelector", ""))
        items = [s.body for s in self.store.list(t.resource.kind, t.namespace) if accept(s.body)]
        rv = str(self.store.rv)
        if "as=Table" in request.headers.get("Accept", ""):
            return self._json(tables.table(t.resource.kind, items, rv, q.get("includeObject", "Metadata")))
        return self._json({"kind": f"{t.resource.kind}List", "apiVersion": t.resource.api_version,
                           "metadata": {"resourceVersion": rv}, "items": items})

    async def _watch(self, request: web.Request, t: Target) -> web.StreamResponse:
        q = request.query
        accept = make_filter(q.get("labelSelector", ""), q.get("fieldSelector", ""))
        name_filter = t.name
        as_table = "as=Table" in request.headers.get("Accept", "")
        include = q.get("includeObject", "Metadata")
        timeout = float(q.get("timeoutSeconds") or 1800)

        def visible(obj: Mapping[str, Any] | None) -> bool:
            if obj is None:
                return False
            meta = obj.get("metadata") or {}
            if t.namespace and meta.get("namespace", "") != t.namespace:
                return False
            if name_filter and meta.get("name") != name_filter:
                return False
            return accept(obj)

        watcher = Watcher(t.resource.kind, t.namespace, visible)
        self.store.subscribe(watcher)
        try:
            rv_text = q.get("resourceVersion", "")
            initial: list[tuple[str, dict[str, Any]]] = []
            if rv_text in ("", "0"):
                await self.settle()
                start = self.store.rv
                initial = [("ADDED", s.body) for s in self.store.list(t.resource.kind, t.namespace) if visible(s.body)]
            else:
                try:
                    start = int(rv_text)
                except ValueError as exc:
                    raise ApiError(400, "BadRequest", f"invalid resource version: {rv_text}") from exc
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            headers_sent = [False]

            async def send(kind: str, obj: dict[str, Any]) -> None:
                if as_table and kind != "ERROR":
                    body: Any = tables.table(t.resource.kind, [obj], obj["metadata"].get("resourceVersion", ""),
                                             include, headers=not headers_sent[0])
                    headers_sent[0] = True
                else:
                    body = obj
                await resp.write(json.dumps({"type": kind, "object": body}, separators=(",", ":")).encode() + b"\n")

            try:
                return await self._stream(initial, send, rv_text, t, start, visible, watcher, timeout, request, resp)
            except ConnectionResetError:
                return resp
        finally:
            self.store.unsubscribe(watcher)

    async def _stream(self, initial: list[tuple[str, dict[str, Any]]], send: Callable[..., Any], rv_text: str,
                      t: Target, start: int, visible: Callable[..., bool], watcher: Watcher, timeout: float,
                      request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
        if True:
            for kind, obj in initial:
                await send(kind, obj)
            if rv_text not in ("", "0"):
                history = self.store.since(t.resource.kind, start)
                if history is None:
                    await send("ERROR", ApiError(410, "Expired", f"too old resource version: {start} "
                                                                 f"({self.store.oldest_rv})").status())
                    return resp
                for c in history:
                    ev = _filtered(c, visible)
                    if ev:
                        await send(*ev)
                    start = c.rv
                start = max(start, max((c.rv for c in history), default=start))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while not self.closing:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    change = await asyncio.wait_for(watcher.queue.get(), min(remaining, 30))
                except TimeoutError:
                    if request.transport is None or request.transport.is_closing():
                        break
                    continue
                if change is None:
                    break
                if change.rv <= start:
                    continue
                ev = _filtered(change, visible)
                if ev:
                    await send(*ev)
            return resp

    async def _log(self, request: web.Request, t: Target) -> web.StreamResponse:
        if request.method != "GET" or not t.name:
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        await self.settle()
        self._get(t)
        handler = self.exec_handlers.get("log")
        if handler is None:
            return web.Response(text="", content_type="text/plain")
        return await handler(request, t.namespace, t.name)  # type: ignore[no-any-return]

    # --- writes ----------------------------------------------------------------------

    def _check_namespace(self, r: Resource, namespace: str) -> None:
        if r.namespaced and self.store.get(("Namespace", "", namespace)) is None:
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found',
                           {"name": namespace, "kind": "namespaces"})

    def _admit(self, r: Resource, body: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        """Defaulting and validation by the core; Service addresses allocated as the registry does."""
        name = body["metadata"].get("name", "")
        if r.kind == "Service" and old is not None:
            drop_type_dependent_fields(body, old)
        if r.kind in CORE_KINDS:
            admitted, errors = admit([Document(Source("<request>", 1), body)], body["metadata"].get("namespace")
                                     or "default")
            field_errors = [e.error for e in errors if isinstance(e.error, FieldError)]
            if field_errors:
                raise invalid(r, name, field_errors)
            if errors:
                raise ApiError(400, "BadRequest", "; ".join(str(e.error) for e in errors))
            body = admitted[0].body
        if r.kind == "Service":
            self._allocate(r, body, old)
        return body

    def _allocate(self, r: Resource, body: dict[str, Any], old: dict[str, Any] | None) -> None:
        spec = body.setdefault("spec", {})
        if old is not None:
            # Allocated values a client left out are kept (the registry's patchAllocatedValues).
            ospec = old.get("spec") or {}
            if not spec.get("clusterIP") and ospec.get("clusterIP") and spec.get("type") != "ExternalName":
                spec["clusterIP"] = ospec["clusterIP"]
                spec["clusterIPs"] = ospec.get("clusterIPs") or [ospec["clusterIP"]]
            elif ospec.get("clusterIP") and spec.get("clusterIP") != ospec.get("clusterIP") and \
                    spec.get("type") != "ExternalName" and ospec.get("type") != "ExternalName":
                raise invalid(r, body["metadata"]["name"], [FieldError(
                    "spec.clusterIPs[0]", ErrorType.INVALID, spec.get("clusterIP"), "may not change once set")])
            old_ports = {(p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
                         for p in ospec.get("ports") or []}
            for p in spec.get("ports") or []:
                if not p.get("nodePort") and old_ports.get((p.get("port"), p.get("protocol", "TCP"))) and \
                        spec.get("type") in ("NodePort", "LoadBalancer"):
                    p["nodePort"] = old_ports[(p.get("port"), p.get("protocol", "TCP"))]
            if not spec.get("healthCheckNodePort") and ospec.get("healthCheckNodePort") and \
                    spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local":
                spec["healthCheckNodePort"] = ospec["healthCheckNodePort"]
            if old.get("status") and spec.get("type") == ospec.get("type"):
                body["status"] = json.loads(json.dumps(old["status"]))
        key = (body["metadata"]["namespace"], body["metadata"]["name"])
        others = [(json.loads(json.dumps(s.body)), Source("<store>", 1)) for s in self.store.list("Service")
                  if (s.body["metadata"]["namespace"], s.body["metadata"]["name"]) != key]
        mine = (body, Source("<request>", 1))
        failures = allocate_services([*others, mine], self.config, live=lambda b: b is not body)
        mine_errors = [f.error for f in failures if f.subject == f"Service {key[0]}/{key[1]}"]
        if mine_errors:
            raise invalid(r, key[1], mine_errors)

    def _prepare_create(self, t: Target, body: dict[str, Any]) -> dict[str, Any]:
        r = t.resource
        meta = body.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        if body.get("kind", r.kind) != r.kind or body.get("apiVersion", r.api_version) != r.api_version:
            raise ApiError(400, "BadRequest", f"the API version in the data ({body.get('apiVersion')}) does not match "
                           f"the expected API version ({r.api_version})" if body.get("apiVersion") != r.api_version
                           else f"the kind in the data ({body.get('kind')}) does not match the expected kind "
                                f"({r.kind})")
        body["kind"], body["apiVersion"] = r.kind, r.api_version
        if r.namespaced:
            ns = meta.get("namespace") or t.namespace or "default"
            if t.namespace and meta.get("namespace") and meta["namespace"] != t.namespace:
                raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the "
                                                  "namespace sent on the request")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            base = str(meta["generateName"])
            for i in range(100):
                candidate = base + random_suffix(base, uuid.uuid4().hex, str(i))
                if self.store.get((r.kind, meta.get("namespace", ""), candidate)) is None:
                    meta["name"] = candidate
                    break
        for f in ("resourceVersion", "uid", "creationTimestamp", "deletionTimestamp", "managedFields", "selfLink"):
            meta.pop(f, None)
        if r.simulated and r.kind not in ("Node", "Namespace"):
            body.pop("status", None)
        return body

    async def _create(self, request: web.Request, t: Target, body: dict[str, Any],
                      status_code: int = 201) -> web.Response:
        r = t.resource
        body = self._prepare_create(t, body)
        meta = body["metadata"]
        ns = meta.get("namespace", "")
        if r.kind == "Namespace":
            body.setdefault("status", {"phase": "Active"})
        admitted = self._admit(r, body, None)
        name = admitted["metadata"].get("name", "")
        self._check_namespace(r, ns)
        key = (r.kind, ns, name)
        if self.store.get(key) is not None:
            raise ApiError(409, "AlreadyExists", f'{_qualified(r)} "{name}" already exists',
                           {"name": name, "group": r.group, "kind": r.plural})
        meta = admitted["metadata"]
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if r.kind in GENERATION_KINDS:
            meta["generation"] = 1
        if r.kind == "Job":
            _job_selector(admitted)
        if r.kind == "Pod":
            # Kubelet-era fields the client cannot set; the controllers fill status.
            admitted.pop("status", None)
        if request.query.get("dryRun") == "All":
            return self._json(admitted, status_code)
        self.store.commit([Write(key, admitted, "user")])
        self._mark_dirty()
        stored = self.store.get(key)
        return self._json(stored.body if stored else admitted, status_code)

    def _merge_update(self, t: Target, old: Stored, new: dict[str, Any]) -> dict[str, Any]:
        r = t.resource
        meta = new.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        if meta.get("name") and meta["name"] != t.name:
            raise ApiError(400, "BadRequest", f'the name of the object ({meta["name"]}) does not match the name on '
                                              f'the URL ({t.name})')
        meta["name"] = t.name
        if r.namespaced:
            meta["namespace"] = t.namespace
        new["kind"], new["apiVersion"] = r.kind, r.api_version
        old_meta = old.body["metadata"]
        for f in ("uid", "creationTimestamp"):
            if f in old_meta:
                meta[f] = old_meta[f]
        if t.sub == "status":
            merged = json.loads(json.dumps(old.body))
            merged["status"] = new.get("status")
            return merged
        if r.simulated and "status" in old.body:
            new["status"] = json.loads(json.dumps(old.body["status"]))
        elif r.simulated:
            new.pop("status", None)
        new = self._admit(r, new, old.body)
        gen = int(old_meta.get("generation", 1) or 1)
        if {k: v for k, v in new.items() if k not in ("metadata", "status")} != \
                {k: v for k, v in old.body.items() if k not in ("metadata", "status")}:
            gen += 1
        if r.kind in GENERATION_KINDS:
            new["metadata"]["generation"] = gen
        return new

    async def _commit_update(self, request: web.Request, t: Target, old: Stored, new: dict[str, Any]) -> web.Response:
        key = (t.resource.kind, t.namespace, t.name)
        comparable = dict(new, metadata={k: v for k, v in new["metadata"].items() if k != "resourceVersion"})
        old_cmp = dict(old.body, metadata={k: v for k, v in old.body["metadata"].items() if k != "resourceVersion"})
        if request.query.get("dryRun") == "All" or comparable == old_cmp:
            new["metadata"]["resourceVersion"] = str(old.rv)
            return self._json(new if request.query.get("dryRun") == "All" else old.body)
        self.store.commit([Write(key, new, "user")])
        self._mark_dirty()
        stored = self.store.get(key)
        return self._json(stored.body if stored else new)

    async def _update(self, request: web.Request, t: Target, body: dict[str, Any]) -> web.Response:
        key = (t.resource.kind, t.namespace, t.name)
        old = self.store.get(key)
        if old is None:
            raise not_found(t.resource, t.name)
        want = (body.get("metadata") or {}).get("resourceVersion") if isinstance(body.get("metadata"), dict) else None
        check_resource_version(t.resource, t.name, want, old.rv)
        if t.sub == "scale":
            replicas = (body.get("spec") or {}).get("replicas")
            return await self._set_replicas(request, t, old, replicas)
        new = self._merge_update(t, old, body)
        if t.sub == "scale":
            return self._json(self._scale(t.resource, new))
        return await self._commit_update(request, t, old, new)

    async def _set_replicas(self, request: web.Request, t: Target, old: Stored, replicas: Any) -> web.Response:
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise invalid(t.resource, t.name, [FieldError("spec.replicas", ErrorType.INVALID, replicas,
                                                          "must be greater than or equal to 0")])
        new = json.loads(json.dumps(old.body))
        new["spec"]["replicas"] = replicas
        sub_t = Target(t.resource, t.namespace, t.name, "")
        new = self._merge_update(sub_t, old, new)
        await self._commit_update(request, sub_t, old, new)
        stored = self.store.get((t.resource.kind, t.namespace, t.name))
        return self._json(self._scale(t.resource, stored.body if stored else new))

    def _scale(self, r: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        sel = Selector.from_label_selector(spec.get("selector") or {}).formatted()
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                             if k in meta},
                "spec": {"replicas": spec.get("replicas", 1)},
                "status": {"replicas": status.get("replicas", 0), "selector": sel}}

    async def _patch(self, request: web.Request, t: Target) -> web.Response:
        ctype = request.headers.get("Content-Type", "").split(";")[0].strip()
        raw = await request.read()
        r = t.resource
        key = (r.kind, t.namespace, t.name)
        old = self.store.get(key)
        try:
            if ctype == "application/apply-patch+yaml":
                doc = yaml.safe_load(raw.decode()) if raw.strip() else None
            else:
                doc = json.loads(raw) if raw.strip() else None
        except (ValueError, yaml.YAMLError) as exc:
            raise ApiError(400, "BadRequest", f"error decoding patch: {exc}") from exc
        if ctype == "application/apply-patch+yaml":
            if not isinstance(doc, dict):
                raise ApiError(400, "BadRequest", "apply patch must be an object")
            if old is None:
                if t.sub:
                    raise not_found(r, t.name)
                doc.setdefault("metadata", {}).setdefault("name", t.name)
                return await self._create(request, Target(r, t.namespace, "", ""), doc, 201)
        if old is None:
            raise not_found(r, t.name)
        base: Any = self._scale(r, old.body) if t.sub == "scale" else old.body
        try:
            if ctype == "application/json-patch+json":
                result = patch.json_patch(base, doc)
            elif ctype == "application/merge-patch+json":
                result = patch.merge_patch(base, doc)
            elif ctype in ("application/strategic-merge-patch+json", "application/apply-patch+yaml"):
                if not isinstance(doc, dict):
                    raise patch.PatchError("strategic merge patch must be an object")
                schema = patch.schema_for_kind("Scale" if t.sub == "scale" else r.kind,
                                               "autoscaling" if t.sub == "scale" else r.group, r.version)
                result = patch.strategic_merge(base, doc, schema)
            else:
                raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                                   "accepted media types include: application/json-patch+json, "
                                   "application/merge-patch+json, application/apply-patch+yaml")
        except patch.PatchError as exc:
            raise ApiError(422, "Invalid", str(exc)) from exc
        if not isinstance(result, dict):
            raise ApiError(422, "Invalid", "the patch did not produce an object")
        if t.sub == "scale":
            return await self._set_replicas(request, t, old, (result.get("spec") or {}).get("replicas"))
        check_resource_version(r, t.name, (result.get("metadata") or {}).get("resourceVersion"), old.rv)
        new = self._merge_update(t, old, result)
        return await self._commit_update(request, t, old, new)

    async def _delete_options(self, request: web.Request) -> dict[str, Any]:
        """DeleteOptions: kubectl sends them in the body (dryRun, preconditions, propagationPolicy), not the query."""
        options: dict[str, Any] = {}
        raw = await request.read()
        if raw.strip():
            ctype = request.headers.get("Content-Type", "application/json").split(";")[0].strip()
            try:
                decoded = decode_body(raw, ctype, None)
            except ApiError:
                decoded = {}
            if isinstance(decoded, dict):
                options = decoded
        if request.query.get("dryRun"):
            options["dryRun"] = request.query.getall("dryRun")
        if request.query.get("propagationPolicy"):
            options["propagationPolicy"] = request.query["propagationPolicy"]
        return options

    async def _delete(self, request: web.Request, t: Target) -> web.Response:
        r = t.resource
        key = (r.kind, t.namespace, t.name)
        old = self.store.get(key)
        if old is None:
            raise not_found(r, t.name)
        options = await self._delete_options(request)
        pre = options.get("preconditions") or {}
        if pre.get("resourceVersion") and str(pre["resourceVersion"]) != str(old.rv):
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {_qualified(r)} "{t.name}": '
                           f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                           f"ResourceVersion in object meta: {old.rv}", {"name": t.name, "kind": r.plural})
        if pre.get("uid") and pre["uid"] != old.body["metadata"].get("uid"):
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {_qualified(r)} "{t.name}": '
                           f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
                           f"{old.body['metadata'].get('uid', '')}", {"name": t.name, "kind": r.plural})
        if "All" in (options.get("dryRun") or []):
            return self._json(old.body)
        writes = [Write(key, None)]
        if options.get("propagationPolicy") == "Orphan" or options.get("orphanDependents"):
            # Dependents stay, released from their owner (the garbage collector's orphan finalizer).
            uid = old.body["metadata"].get("uid")
            for k in sorted(self.store.objects):
                dep = self.store.objects[k]
                refs = (dep.body.get("metadata") or {}).get("ownerReferences") or []
                if uid and any(ref.get("uid") == uid for ref in refs):
                    body = json.loads(json.dumps(dep.body))
                    body["metadata"]["ownerReferences"] = [ref for ref in refs if ref.get("uid") != uid]
                    if not body["metadata"]["ownerReferences"]:
                        del body["metadata"]["ownerReferences"]
                    writes.append(Write(k, body, "user" if dep.managed != "system" else dep.managed))
        if r.kind == "Namespace":
            writes += [Write(k, None) for k in sorted(self.store.objects) if k[1] == t.name and k[0] != "Namespace"]
        self.store.commit(writes)
        self._mark_dirty()
        return self._json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                           "details": {"name": t.name, "group": r.group, "kind": r.plural,
                                       "uid": old.body["metadata"].get("uid", "")}})

    async def _delete_collection(self, request: web.Request, t: Target) -> web.Response:
        q = request.query
        accept = make_filter(q.get("labelSelector", ""), q.get("fieldSelector", ""))
        items = [s for s in self.store.list(t.resource.kind, t.namespace) if accept(s.body)]
        keys = [(t.resource.kind, s.body["metadata"].get("namespace", ""), s.body["metadata"]["name"]) for s in items]
        options = await self._delete_options(request)
        if "All" not in (options.get("dryRun") or []):
            self.store.commit([Write(k, None) for k in keys])
            self._mark_dirty()
        return self._json({"kind": f"{t.resource.kind}List", "apiVersion": t.resource.api_version,
                           "metadata": {"resourceVersion": str(self.store.rv)}, "items": [s.body for s in items]})

    # --- used by exec -----------------------------------------------------------------

    def set_pod_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        key: Key = ("Pod", namespace, name)
        old = self.store.get(key)
        if old is None:
            return
        new = json.loads(json.dumps(old.body))
        new["status"] = status
        self.store.commit([Write(key, new, old.managed)])

    async def close(self) -> None:
        self.closing = True
        if self._reconcile_task is not None:
            self._reconcile_task.cancel()
            with contextlib.suppress(BaseException):
                await self._reconcile_task
        self.store.close()


def _job_selector(job: dict[str, Any]) -> None:
    """The Job strategy's generateSelector: without ``manualSelector`` the selector is the Job's
    uid, and the template carries it (what ``kubectl logs job/NAME`` and describe select by)."""
    spec = job.setdefault("spec", {})
    if spec.get("manualSelector"):
        return
    meta = job["metadata"]
    uid, name = meta["uid"], meta["name"]
    template_meta = spec.setdefault("template", {}).setdefault("metadata", {})
    labels = template_meta.setdefault("labels", {})
    for key, value in (("batch.kubernetes.io/controller-uid", uid), ("batch.kubernetes.io/job-name", name),
                       ("controller-uid", uid), ("job-name", name)):
        labels.setdefault(key, value)
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}


def _filtered(c: Change, visible: Callable[[Mapping[str, Any] | None], bool]) -> tuple[str, dict[str, Any]] | None:
    """A change as a filtered watch sees it: entering the selection is ADDED, leaving it DELETED."""
    was, now = visible(c.old), visible(c.new) if c.type != "DELETED" else False
    if c.type == "DELETED":
        return ("DELETED", c.obj) if was else None
    if now and not was:
        return ("ADDED", c.new)  # type: ignore[return-value]
    if now and was:
        return ("MODIFIED", c.new)  # type: ignore[return-value]
    if was and not now:
        return ("DELETED", c.new)  # type: ignore[return-value]
    return None


def decode_body(raw: bytes, ctype: str, r: Resource | None) -> dict[str, Any]:
    if not raw.strip():
        raise ApiError(400, "BadRequest", "the request body is empty")
    if ctype == PROTOBUF:
        from . import proto
        try:
            body = proto.decode(raw)
        except proto.ProtoError as exc:
            raise ApiError(415 if exc.unsupported else 400, "UnsupportedMediaType" if exc.unsupported
                           else "BadRequest", str(exc)) from exc
    elif ctype in ("application/yaml", "application/apply-patch+yaml"):
        try:
            body = yaml.safe_load(raw.decode("utf-8"))
        except (UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ApiError(400, "BadRequest", f"error decoding YAML: {exc}") from exc
    elif ctype in ("application/json", "", "*/*"):
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, ValueError) as exc:
            raise ApiError(400, "BadRequest", f"error decoding JSON: couldn't get version/kind; json parse error: "
                                              f"{exc}") from exc
    else:
        raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - accepted "
                                                    f"media types include: application/json, application/yaml, "
                                                    f"{PROTOBUF}")
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "the request body must be a JSON object")
    return body

