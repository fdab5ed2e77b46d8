"""The HTTP side: a Kubernetes-compatible REST API over the store, for the real kubectl.

Request handling is written as plain methods over parsed requests; aiohttp only carries
bytes. Every failure of the client's making leaves as a ``metav1.Status`` with the API server's code
and reason (400/401/404/405/409/410/413/415/422), its query parameters and DeleteOptions checked as
the API server checks them (``requestoptions``, ``deleteoptions``); lists page as it pages
(``paging``). An unexpected exception is a bug in knetsim: it is answered as a 500 InternalError, as
kube-apiserver answers a panic, with its traceback in the daemon log (what a client breaks, a
connection or a request no parser takes, is one line: ``httplog``), so a client error and a server
bug can always be told apart.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml
from aiohttp import web

from ..cluster.config import ClusterConfig
from ..model import versions
from ..model.jsonvalue import merge_patch
from ..model.labels import Selector
from ..model.loader import InputTooHostile, load_yaml_documents, loads_json_bounded
from ..model.schema import GoNumber, json_object_pairs
from ..model.strategy import Propagation
from . import deleteoptions, discovery, openapi, paging, patch, requestoptions, resources, tables
from .errors import ApiError, internal, no_such_path, not_found
from .registry import (
    BEING_DELETED,
    DeleteOptions,
    Registry,
    Target,
    WriteOptions,
    Written,
    as_served,
)
from .resources import BY_PATH, Resource
from .store import Change, Store, Watcher

log = logging.getLogger("knetsim.apiserver")

MAX_BODY = 3 * 1024 * 1024  # kube-apiserver's limit for one object (etcd's 1.5 MiB plus headroom)
__all__ = ["ApiError", "ApiServer", "Target"]
PROTOBUF = "application/vnd.kubernetes.protobuf"


WARNINGS = web.RequestKey("warnings", list)  # Warning headers of this request (unknown fields, deprecations)
FRESHNESS_WAIT = 3.0  # seconds, the watch cache's blockTimeout
DEFAULT_WATCH_SECONDS = 1800  # minRequestTimeout; kube-apiserver picks 1800-3600 s at random


def watch_timeout(text: str | None) -> float:
    """``timeoutSeconds`` as the API server parses it: a base-10 int64 (strconv.ParseInt), 0 = the default.

    A negative value ends the watch at once, as an already expired context does."""
    if text is None or text == "":
        return DEFAULT_WATCH_SECONDS
    body = text[1:] if text[:1] in "+-" else text
    if not body.isascii() or not body.isdigit():
        raise ApiError(400, "BadRequest", f'strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise ApiError(400, "BadRequest", f'strconv.ParseInt: parsing "{text}": value out of range')
    return DEFAULT_WATCH_SECONDS if value == 0 else float(value)


def add_warnings(resp: web.StreamResponse, warnings: Any) -> None:
    """One ``Warning: 299 - "..."`` header per warning (RFC 7234 quoted-string), as kubectl prints them."""
    for text in dict.fromkeys(warnings):
        escaped = str(text).replace("\\", "\\\\").replace('"', '\\"')
        # A field name may hold any character; a header may not hold a control character.
        escaped = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped)
        resp.headers.add("Warning", f'299 - "{escaped}"')


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


@dataclass(frozen=True)
class Mount:
    """A page served beside the API under its own prefix, with its own way to authenticate (a browser
    cannot send a bearer token): the server asks it before refusing a request without one."""

    handles: Callable[[str], bool]
    authorized: Callable[[web.Request, str | None], bool]
    handle: Callable[[web.Request, Any, str | None], Awaitable[web.StreamResponse]]


class NodeConnection(Protocol):
    """How kube-apiserver reaches the kubelet for a pod's streams: exec and attach, port-forward, logs
    (upstream proxies them to the node's address). The daemon connects the simulated node's; without
    one these subresources answer 400, and logs are empty."""

    async def exec(self, server: ApiServer, request: web.Request, target: Target) -> web.StreamResponse:
        """``exec`` and ``attach``."""

    async def port_forward(self, server: ApiServer, request: web.Request, target: Target) -> web.StreamResponse: ...

    async def log(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse: ...


class ProxyConnection(Protocol):
    """How kube-apiserver's ``services/NAME:PORT/proxy/PATH`` and ``pods/NAME:PORT/proxy/PATH`` reach what they
    name (``kubectl proxy``, ``kubectl get --raw``): the daemon connects the simulated network's; without one
    they answer 503."""

    async def proxy(self, server: ApiServer, request: web.Request, resource: str, namespace: str, name: str,
                    path: str) -> web.StreamResponse: ...


def proxy_target(group: str, rest: list[str], raw_path: str) -> tuple[str, str, str, str] | None:
    """(resource, namespace, ``[scheme:]name[:port]``, path) of a core-group proxy subresource request, or None.
    The path keeps what follows ``/proxy`` as the client sent it (a trailing slash included)."""
    if group != "":
        return None
    if len(rest) >= 5 and rest[0] == "namespaces" and rest[2] in ("services", "pods") and rest[4] == "proxy":
        resource, namespace, name = rest[2], rest[1], rest[3]
    elif len(rest) >= 3 and rest[0] == "nodes" and rest[2] == "proxy":
        resource, namespace, name = "nodes", "", rest[1]
    else:
        return None
    _, _, after = raw_path.partition(f"/{name}/proxy")
    return resource, namespace, name, after or "/"


class ApiServer:
    def __init__(self, state_dir: str | Path, config: ClusterConfig | None = None, token: str | None = None) -> None:
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.config = config or ClusterConfig()
        self.token = token
        self.store = Store(self.state_dir / "store.db")
        self.registry = Registry(self.store, self.config)
        # Awaited before reads that must see what the controllers make of every write acknowledged so
        # far (lists, pods, slices, logs, exec); daemon.wire adds the controller manager's settle.
        self.consistency: list[Callable[[], Awaitable[None]]] = []
        # The cluster as a ClusterState (daemon.wire: the ClusterView), for the explorer and the tools.
        self.state_source: Callable[[], Any] | None = None
        self.node: NodeConnection | None = None
        self.proxy: ProxyConnection | None = None
        # Pages served beside the API with their own authentication (daemon.wire mounts the explorer).
        self.mounts: list[Mount] = []
        # Called with each new ClusterState (DNS server, kubelet, kernel mode).
        self.state_listeners: list[Callable[[Any], None]] = []
        self.closing = False
        # The Kubernetes minor this server is (the cluster config's kubernetesVersion): every request is
        # admitted, warned of and answered as that version's API server does (model/versions.py).
        self.kubernetes_version = versions.parse(self.config.kubernetes_version)

    def _crd_served(self) -> list[Resource]:
        """What clients' CRDs make served (customresources.CustomDefinitions.served), for discovery."""
        return list(self.registry.custom.served.values())

    @property
    def state(self) -> Any:
        return self.state_source() if self.state_source is not None else None

    async def settle(self) -> None:
        """Wait until the controllers have seen every write acknowledged so far (500 if they failed)."""
        for hook in self.consistency:
            try:
                await hook()
            except ApiError:
                raise
            except Exception as exc:
                raise internal(exc) from exc

    # --- aiohttp plumbing ----------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY, middlewares=[self._middleware])
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        return app

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
        try:
            if request.path not in ("/healthz", "/readyz", "/livez") and self.token is not None:
                # A header's bytes that are no UTF-8 arrive as lone surrogates: compared as the bytes they were.
                auth = request.headers.get("Authorization", "").encode("utf-8", "surrogateescape")
                if not secrets.compare_digest(auth, f"Bearer {self.token}".encode()) \
                        and not any(m.authorized(request, self.token) for m in self.mounts):
                    raise ApiError(401, "Unauthorized", "Unauthorized")
            with versions.using(self.kubernetes_version):
                resp: web.StreamResponse = await handler(request)
            if not resp.prepared:
                add_warnings(resp, request.get(WARNINGS, ()))
            return resp
        except ApiError as exc:
            resp = self._json(exc.status(), exc.code)
            add_warnings(resp, request.get(WARNINGS, ()))
            return resp
        except web.HTTPRequestEntityTooLarge:
            return self._json(ApiError(413, "RequestEntityTooLarge",
                                       f"the request body is too large (limit {MAX_BODY} bytes)").status(), 413)
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except web.HTTPException as exc:
            return self._json(ApiError(exc.status, exc.reason, exc.text or exc.reason).status(), exc.status)
        except Exception as exc:
            # A bug in knetsim, not the client's fault: 500 as kube-apiserver answers a panic, the
            # traceback in the daemon log.
            if request.writer is not None and request.writer.output_size > 0:
                # The answer has begun (a watch, a stream): no Status can follow it; the connection ends.
                log.exception("internal error on %s %s after the response began", request.method,
                              request.path_qs)
                if request.transport is not None:
                    request.transport.close()
                raise ConnectionResetError("the response had begun") from None
            log.exception("internal error on %s %s", request.method, request.path_qs)
            error = internal(exc)
            return self._json(error.status(), error.code)

    @staticmethod
    def _json(body: Any, status: int = 200, content_type: str = "application/json") -> web.Response:
        return web.Response(body=json.dumps(body, separators=(",", ":")).encode(), status=status,
                            headers={"Content-Type": content_type})

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        for mount in self.mounts:
            if mount.handles(request.path):
                return await mount.handle(request, self.state, self.token)
        path = request.path.rstrip("/") or "/"
        method = request.method
        if path in ("/healthz", "/readyz", "/livez"):
            return web.Response(text="ok")
        if path == "/version":
            return self._json(resources.server_version())
        if path in ("/api", "/apis"):
            if method != "GET":
                raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on {path}")
            return self._discovery(request, core=path == "/api")
        if path == "/openapi/v2":
            if "protobuf" not in request.headers.get("Accept", ""):
                raise ApiError(406, "NotAcceptable", "knetsim serves /openapi/v2 as protobuf only (" +
                               openapi.OPENAPI_V2_PROTOBUF + "); JSON clients use /openapi/v3")
            return web.Response(body=openapi.v2_document(), headers={"Content-Type": openapi.OPENAPI_V2_PROTOBUF})
        if path == "/openapi/v3":
            return self._json(openapi.index(self.config.cni))
        if path.startswith("/openapi/v3/"):
            gv = path[len("/openapi/v3/"):].split("/")
            group, version = ("", gv[1]) if gv[0] == "api" and len(gv) == 2 else (
                (gv[1], gv[2]) if gv[0] == "apis" and len(gv) == 3 else ("?", "?"))
            if (group, version) not in resources.group_versions(self.config.cni):
                raise no_such_path()
            data, _ = openapi.gv_document(group, version)
            return web.Response(body=data, headers={"Content-Type": "application/json",
                                                    "Cache-Control": "public, immutable"})
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 2:
            if len(parts) == 2:
                g = resources.api_group(parts[1], self.config.cni, self._crd_served())
                if g is None:
                    raise no_such_path()
                return self._json(g)
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise no_such_path()
        if not rest:
            rl = resources.resource_list(group, version, self.config.cni, self._crd_served())
            if rl is None:
                raise no_such_path()
            return self._json(rl)
        proxied = proxy_target(group, rest, request.raw_path.split("?", 1)[0]) if version == "v1" else None
        if proxied is not None:
            if self.proxy is None:
                raise ApiError(503, "ServiceUnavailable", "the proxy subresource is not available")
            if request.method in ("GET", "HEAD") and request.raw_path.split("?", 1)[0].endswith("/proxy"):
                # An empty path is redirected to one ending in "/" for GET and HEAD (the "hack for issue 4958" of
                # k8s.io/apimachinery/pkg/util/proxy/upgradeaware.go proxyRedirectsforRootPath); other verbs
                # reach the backend's "/". The proxy e2e test checks the 301 (test/e2e/network/proxy.go).
                query = f"?{request.query_string}" if request.query_string else ""
                return web.Response(status=301, headers={"Location": f"{request.path}/{query}"})
            await self.settle()
            return await self.proxy.proxy(self, request, *proxied)
        target = self._target(group, version, rest)
        deprecation = self.registry.strategy(target.resource).deprecation
        if deprecation:
            # kube-apiserver warns on every request of a deprecated API (v1 Endpoints since 1.33); kubectl
            # prints "Warning: ...".
            request.setdefault(WARNINGS, []).append(deprecation)
        return await self._resource(request, target)

    def _discovery(self, request: web.Request, core: bool) -> web.Response:
        """``/api`` or ``/apis``: the aggregated list or the plain document, as the Accept header negotiates
        (discovery.py); ``Vary: Accept`` so that caches keep the two apart, as kube-apiserver says."""
        choice = discovery.negotiate(request.headers.get("Accept", ""))
        if choice.aggregated is not None:
            body = resources.aggregated_discovery(core, choice.aggregated, self.config.cni,
                                                   self._crd_served())
        else:
            body = resources.api_versions() if core else resources.api_group_list(self.config.cni, self._crd_served())
        if choice.media_type == "application/yaml":
            resp = web.Response(body=yaml.safe_dump(body, sort_keys=False).encode(),
                                headers={"Content-Type": "application/yaml"})
        else:
            resp = self._json(body, content_type=choice.content_type)
        resp.headers["Vary"] = "Accept"
        return resp

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
            namespace, rest = rest[1], rest[2:]
        plural = rest[0]
        r = BY_PATH.get((group, version, plural))
        if r is None or not r.served_with(self.config.cni):
            r = self.registry.custom.served.get((group, version, plural))  # a client's CRD serves it, or none
        if r is None or len(rest) > 3:
            raise no_such_path()
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in r.subresources:
            raise no_such_path()
        if namespace and not r.namespaced:
            raise no_such_path()
        return Target(r, namespace if r.namespaced else "", name, sub)

    async def _resource(self, request: web.Request, t: Target) -> web.StreamResponse:
        m = request.method
        q = request.query
        if t.sub in ("exec", "attach", "portforward"):
            if self.node is None:
                raise ApiError(400, "BadRequest", f"{t.sub} is not available")
            if t.sub == "portforward":
                return await self.node.port_forward(self, request, t)
            return await self.node.exec(self, request, t)
        if t.sub == "log":
            return await self._log(request, t)
        if m == "GET" and not t.name:
            options = requestoptions.list_options(q)
            if options.watch:
                return await self._watch(request, t)
            await self.settle()
            return await self._list(request, t, options)
        if m == "GET":
            # Objects the controllers create or complete; Services are allocated at write time, and
            # `kubectl apply` GETs every object it applies, which must not wait for a rebuild.
            if t.resource.kind in ("Pod", "ReplicaSet", "EndpointSlice", "Endpoints", "Namespace"):
                await self.settle()
            obj = self._get(t)
            if t.sub == "scale":
                return self._json(self.registry.scale_of(obj))
            return self._json(self._out(request, t.resource, obj))
        if m in ("POST", "PUT", "PATCH"):
            self._options(request)  # the handlers validate the options before they read the body
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
            return tables.table(r.key_kind, [obj], str(self.store.rv), request.query.get("includeObject", "Metadata"),
                                columns=r.printer_columns)
        return as_served(r, obj)

    # --- reads -----------------------------------------------------------------------

    def _get(self, t: Target) -> dict[str, Any]:
        stored = self.store.get((t.resource.key_kind, t.namespace, t.name))
        if stored is None:
            raise not_found(t.resource, t.name)
        return stored.body

    async def _list(self, request: web.Request, t: Target, options: requestoptions.ListOptions) -> web.Response:
        """A list, or one page of it (``paging``): at the current resourceVersion, or at the one a continue
        token or an exact resourceVersion names."""
        accept = make_filter(options.label_selector, options.field_selector)
        kind = t.resource.key_kind
        start, rv, exact = "", self.store.rv, False
        if options.continue_token:
            start, token_rv = paging.decode_continue(options.continue_token)
            if options.resource_version not in ("", "0"):
                raise ApiError(400, "BadRequest", "specifying resource version is not allowed when using continue")
            if token_rv != paging.LATEST:
                rv, exact = token_rv, True
        else:
            wanted = requestoptions.parse_resource_version(options.resource_version)
            if wanted > self.store.rv:
                await self._wait_for_resource_version(wanted)
            # An exact match, or the legacy form of one: a resourceVersion with a limit (the storage's rule).
            if options.resource_version_match == "Exact" or (
                    not options.resource_version_match and options.limit > 0 and wanted > 0):
                rv, exact = wanted, True
        if exact:
            objects = paging.objects_at(self.store, kind, t.namespace, rv)
            if objects is None:
                if options.continue_token:
                    raise ApiError(410, "Expired", paging.INCONSISTENT_CONTINUE,
                                   metadata={"continue": paging.encode_continue(paging.LATEST, start)})
                raise ApiError(410, "Expired", paging.EXPIRED_LIST)
        else:
            objects = [s.body for s in self.store.list(kind, t.namespace)]
        chunk = paging.page(objects, accept, rv=rv, limit=options.limit, start=start,
                            across_namespaces=t.resource.namespaced and not t.namespace,
                            selective=bool(options.label_selector or options.field_selector),
                            store=self.store, kind=kind, namespace=t.namespace)
        items = [as_served(t.resource, o) for o in chunk.items]
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if chunk.continue_token:
            meta["continue"] = chunk.continue_token
        if chunk.remaining is not None:
            meta["remainingItemCount"] = chunk.remaining
        if "as=Table" in request.headers.get("Accept", ""):
            table = tables.table(kind, items, str(rv), options.include_object or "Metadata",
                                 columns=t.resource.printer_columns)
            table["metadata"] = meta
            return self._json(table)
        return self._json({"kind": f"{t.resource.kind}List", "apiVersion": t.resource.api_version, "metadata": meta,
                           "items": items})

    async def _watch(self, request: web.Request, t: Target) -> web.StreamResponse:
        q = request.query
        accept = make_filter(q.get("labelSelector", ""), q.get("fieldSelector", ""))
        name_filter = t.name
        as_table = "as=Table" in request.headers.get("Accept", "")
        include = q.get("includeObject", "Metadata")
        timeout = watch_timeout(q.get("timeoutSeconds"))

        def visible(obj: Mapping[str, Any] | None) -> bool:
            if obj is None:
                return False
            meta = obj.get("metadata") or {}
            if t.namespace and meta.get("namespace", "") != t.namespace:
                return False
            if name_filter and meta.get("name") != name_filter:
                return False
            return accept(obj)

        watcher = Watcher(t.resource.key_kind, t.namespace, visible)
        self.store.subscribe(watcher)
        try:
            rv_text = q.get("resourceVersion", "")
            initial: list[tuple[str, dict[str, Any]]] = []
            if rv_text in ("", "0"):
                await self.settle()
                start = self.store.rv
                initial = [("ADDED", s.body) for s in self.store.list(t.resource.key_kind, t.namespace)
                           if visible(s.body)]
            else:
                start = requestoptions.parse_resource_version(rv_text)
                await self._wait_for_resource_version(start)
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            headers_sent = [False]

            async def send(kind: str, obj: dict[str, Any]) -> None:
                if as_table and kind != "ERROR":
                    body: Any = tables.table(t.resource.key_kind, [obj], obj["metadata"].get("resourceVersion", ""),
                                             include, headers=not headers_sent[0],
                                             columns=t.resource.printer_columns)
                    headers_sent[0] = True
                else:
                    body = as_served(t.resource, obj) if kind != "ERROR" else obj
                await resp.write(json.dumps({"type": kind, "object": body}, separators=(",", ":")).encode() + b"\n")

            try:
                return await self._stream(initial, send, rv_text, t, start, visible, watcher, timeout, request, resp)
            except ConnectionResetError:
                return resp
        finally:
            self.store.unsubscribe(watcher)

    async def _wait_for_resource_version(self, rv: int) -> None:
        """The watch cache's waitUntilFreshAndBlock: a resourceVersion the store has not reached yet is
        waited for (3 s), then refused with 504 "Too large resource version"; clients relist on it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FRESHNESS_WAIT
        while self.store.rv < rv and loop.time() < deadline and not self.closing:
            await asyncio.sleep(0.05)
        if self.store.rv < rv:
            raise ApiError(504, "Timeout", f"Timeout: Too large resource version: {rv}, current: {self.store.rv}",
                           {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                            "retryAfterSeconds": 1})

    async def _stream(self, initial: list[tuple[str, dict[str, Any]]], send: Callable[..., Any], rv_text: str,
                      t: Target, start: int, visible: Callable[..., bool], watcher: Watcher, timeout: float,
                      request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
        for kind, obj in initial:
            await send(kind, obj)
        if rv_text not in ("", "0"):
            history = self.store.since(t.resource.key_kind, start)
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
        if self.node is None:
            return web.Response(text="", content_type="text/plain")
        return await self.node.log(request, t.namespace, t.name)

    # --- writes ----------------------------------------------------------------------

    def _options(self, request: web.Request) -> WriteOptions:
        """The write's Create/Update/PatchOptions from the query (``requestoptions``), by the request's verb."""
        kind = {"POST": "CreateOptions", "PUT": "UpdateOptions"}.get(request.method, "PatchOptions")
        apply = request.headers.get("Content-Type", "").split(";")[0].strip() == "application/apply-patch+yaml"
        return requestoptions.write_options(request.query, kind, apply=apply and kind == "PatchOptions")

    def _respond(self, request: web.Request, written: Written, status: int = 200,
                 r: Resource | None = None) -> web.Response:
        request.setdefault(WARNINGS, []).extend(written.warnings)
        return self._json(as_served(r, written.obj) if r is not None else written.obj, status)

    async def _create(self, request: web.Request, t: Target, body: dict[str, Any],
                      status_code: int = 201) -> web.Response:
        try:
            written = self.registry.create(t, body, self._options(request))
        except ApiError as exc:
            if exc.reason != "AlreadyExists" or not exc.message.startswith(BEING_DELETED):
                raise
            # The object of that name is still being deleted: the controllers (the garbage collector,
            # the namespace controller) finish that in the same breath, so wait for them once, as reads do.
            await self.settle()
            written = self.registry.create(t, body, self._options(request))
        return self._respond(request, written, status_code, t.resource)

    async def _update(self, request: web.Request, t: Target, body: dict[str, Any]) -> web.Response:
        old = self.store.get((t.resource.key_kind, t.namespace, t.name))
        if old is None:
            raise not_found(t.resource, t.name)
        if t.sub == "scale":
            return self._json(self.registry.update_scale(t, old, body, self._options(request)))
        return self._respond(request, self.registry.update(t, old, body, self._options(request)), r=t.resource)

    async def _patch(self, request: web.Request, t: Target) -> web.Response:
        ctype = request.headers.get("Content-Type", "").split(";")[0].strip()
        raw = await request.read()
        r = t.resource
        key = (r.key_kind, t.namespace, t.name)
        old = self.store.get(key)
        doc = parse_body(raw, ctype) if raw.strip() else None
        if ctype == "application/apply-patch+yaml":
            if not isinstance(doc, dict):
                raise ApiError(400, "BadRequest", "apply patch must be an object")
            if old is None:
                if t.sub:
                    raise not_found(r, t.name)
                meta = doc.setdefault("metadata", {})
                if isinstance(meta, dict):  # anything else is the decoder's 400 (ObjectMeta is an object)
                    meta.setdefault("name", t.name)
                return await self._create(request, Target(r, t.namespace, "", ""), doc, 201)
        if old is None:
            raise not_found(r, t.name)
        base: Any = self.registry.scale_of(old.body) if t.sub == "scale" else old.body
        try:
            if ctype == "application/json-patch+json":
                result = patch.json_patch(base, doc)
            elif ctype == "application/merge-patch+json":
                result = merge_patch(base, doc)
            elif ctype == "application/strategic-merge-patch+json" and (r.crd or r.from_client_crd):
                # Custom resources have no patch strategies: kube-apiserver refuses the media type.
                raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                                   "accepted media types include: application/json-patch+json, "
                                   "application/merge-patch+json, application/apply-patch+yaml")
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
            return self._json(self.registry.update_scale(t, old, result, self._options(request)))
        return self._respond(request, self.registry.update(t, old, result, self._options(request), patched=True),
                             r=t.resource)

    async def _delete_options(self, request: web.Request) -> DeleteOptions:
        """DeleteOptions, decoded and validated as the API server does (``deleteoptions``): from the body kubectl
        sends, else the query."""
        raw = await request.read()
        ctype = request.headers.get("Content-Type", "application/json").split(";")[0].strip()
        options = deleteoptions.decode(decode_body(raw, ctype, None) if raw.strip() else None, request.query)
        pre = options.get("preconditions") or {}
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"  # the deprecated field
        return DeleteOptions(dry_run=deleteoptions.is_dry_run(options),
                             propagation=Propagation(policy) if policy else None,
                             precondition_uid=pre.get("uid"),
                             precondition_resource_version=pre.get("resourceVersion"))

    async def _delete(self, request: web.Request, t: Target) -> web.Response:
        deleted = self.registry.delete(t, await self._delete_options(request))
        if deleted.pending:
            return self._json(as_served(t.resource, deleted.obj))
        r = t.resource
        return self._json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                           "details": {"name": t.name, "group": r.group, "kind": r.plural,
                                       "uid": deleted.obj["metadata"].get("uid", "")}})

    async def _delete_collection(self, request: web.Request, t: Target) -> web.Response:
        q = request.query
        accept = make_filter(q.get("labelSelector", ""), q.get("fieldSelector", ""))
        items = [s for s in self.store.list(t.resource.key_kind, t.namespace) if accept(s.body)]
        options = await self._delete_options(request)
        deleted = []
        for stored in items:
            meta = stored.body["metadata"]
            one = Target(t.resource, str(meta.get("namespace") or ""), str(meta["name"]), "")
            try:
                deleted.append(self.registry.delete(one, options).obj)
            except ApiError as exc:
                if exc.code != 404:  # gone meanwhile: upstream's DeleteCollection skips that, and answers any other
                    raise

        return self._json({"kind": f"{t.resource.kind}List", "apiVersion": t.resource.api_version,
                           "metadata": {"resourceVersion": str(self.store.rv)}, "items": deleted})

    async def close(self) -> None:
        self.closing = True
        self.store.close()


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


def parse_body(raw: bytes, ctype: str) -> Any:
    """A request body as the API server's decoders read it: JSON with duplicate keys marked and
    fractional literals kept (model.schema), YAML with aliases bounded; hostile input is a 400."""
    try:
        if ctype in ("application/yaml", "application/apply-patch+yaml"):
            docs = load_yaml_documents(raw.decode("utf-8"))
            return docs[0] if docs else None
        return loads_json_bounded(raw, object_pairs_hook=json_object_pairs, parse_float=GoNumber)
    except InputTooHostile as exc:
        raise ApiError(400, "BadRequest", f"the request body could not be decoded: {exc}") from None
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ApiError(400, "BadRequest", f"error decoding YAML: {exc}") from None
    except ValueError as exc:
        raise ApiError(400, "BadRequest", f"couldn't get version/kind; json parse error: {exc}") from None


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
    elif ctype in ("application/yaml", "application/apply-patch+yaml", "application/json", "", "*/*"):
        body = parse_body(raw, ctype)
    else:
        raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - accepted "
                                                    f"media types include: application/json, application/yaml, "
                                                    f"{PROTOBUF}")
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "the request body must be a JSON object")
    return body
