"""Typed, read-only views of the Gateway API kinds knetsim simulates (gateway.networking.k8s.io).

The ten kinds of the standard channel of v1.6.1: GatewayClass, Gateway, HTTPRoute, GRPCRoute,
TLSRoute, TCPRoute, UDPRoute, ListenerSet, BackendTLSPolicy and ReferenceGrant (v1; v1beta1 of the
four that still serve it is read the same way: the fields knetsim uses did not change). The kinds, their
collections and these views are declared in the catalog (``model/apis/catalog.py``); their types, with the
defaults and rules of the CRDs, are ``model/apis/gateway_v1.py``.

The types are the model: every object that reaches a view was admitted (the offline build admits its input,
snapshots included; the live registry admits every write), so the CRDs' defaults are already in it and the
views read them as they are, adding none of their own. What they do add is what the schema leaves open (a
Gateway without ``allowedListeners`` admits no ListenerSet; a rule without backends has none). They still never
trust a shape: a field of the wrong type, or a defaulted field missing from an object that skipped admission,
is read as absent and reported in ``problems`` (the object's field path and what was wrong), so odd input
degrades instead of crashing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .apis.catalog import DEFINITIONS, GATEWAY_GROUP
from .kinds import ROUTE_KINDS as ROUTE_KINDS  # re-exported: the route kinds, with their model
from .kinds import view_of
from .loader import BUILTIN, Source
from .objects import Meta, Object

GROUP = GATEWAY_GROUP
# The kinds are declared in the catalog (model/apis/catalog.py), each once; these are derived from it.
KINDS = tuple(d.kind for d in DEFINITIONS if d.group == GATEWAY_GROUP)
SERVED_VERSIONS = ("v1", "v1beta1")


class _Reader:
    """Reads a manifest defensively, collecting what had the wrong shape."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def as_map(self, value: Any, path: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if isinstance(value, Mapping):
            return value
        self.problems.append(f"{path}: expected an object, got {type(value).__name__}")
        return {}

    def as_list(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if isinstance(value, list):
            return value
        self.problems.append(f"{path}: expected a list, got {type(value).__name__}")
        return []

    def as_str(self, value: Any, path: str, default: str | None = None) -> str | None:
        if value is None:
            return default
        if isinstance(value, str):
            return value
        self.problems.append(f"{path}: expected a string, got {type(value).__name__}")
        return default

    def defaulted(self, value: Any, path: str) -> str:
        """A string the CRD gives a default, so that every admitted object has it: read as it is. Absent only on
        an object that skipped admission (one built by hand), which is reported and read as empty."""
        if value is None:
            self.problems.append(f"{path}: Required value (the CRD defaults it: the object was not admitted)")
            return ""
        return self.as_str(value, path) or ""

    def defaulted_int(self, value: Any, path: str) -> int | None:
        """An integer the CRD gives a default (as ``defaulted``); None when absent or of the wrong type."""
        if value is None:
            self.problems.append(f"{path}: Required value (the CRD defaults it: the object was not admitted)")
            return None
        return self.as_int(value, path)

    def as_int(self, value: Any, path: str, default: int | None = None) -> int | None:
        if value is None:
            return default
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        self.problems.append(f"{path}: expected an integer, got {type(value).__name__}")
        return default


def _meta(kind: str, raw: Mapping[str, Any]) -> Meta:
    meta = raw.get("metadata")
    return Meta.parse(kind, meta if isinstance(meta, Mapping) else {})


def _generation(raw: Mapping[str, Any]) -> int:
    meta = raw.get("metadata")
    value = meta.get("generation") if isinstance(meta, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


# --- GatewayClass ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GatewayClass(Object):
    controller_name: str = ""
    description: str = ""
    parameters_ref: Mapping[str, Any] | None = None
    generation: int = 1
    problems: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> GatewayClass:
        r = _Reader()
        spec = r.as_map(raw.get("spec"), "spec")
        params = spec.get("parametersRef")
        return cls("GatewayClass", _meta("GatewayClass", raw), raw, source,
                   controller_name=r.as_str(spec.get("controllerName"), "spec.controllerName", "") or "",
                   description=r.as_str(spec.get("description"), "spec.description", "") or "",
                   parameters_ref=params if isinstance(params, Mapping) else None,
                   generation=_generation(raw), problems=tuple(r.problems))


# --- Gateway --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RouteGroupKind:
    group: str
    kind: str


@dataclass(frozen=True, slots=True)
class SecretObjectRef:
    group: str
    kind: str
    name: str
    namespace: str | None


@dataclass(frozen=True, slots=True)
class Listener:
    index: int
    name: str
    port: int | None
    protocol: str
    hostname: str | None
    tls_mode: str | None  # Terminate | Passthrough; None without a tls block
    certificate_refs: tuple[SecretObjectRef, ...]
    namespaces_from: str  # All | Same | Selector (or whatever was written: an invalid value)
    namespace_selector: Mapping[str, Any] | None
    kinds: tuple[RouteGroupKind, ...] | None  # None: the protocol's default kinds


@dataclass(frozen=True, slots=True)
class GatewayAddress:
    type: str
    value: str


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """A reference to an object by group, kind and name (and namespace, where the API allows one)."""

    index: int
    group: str
    kind: str
    name: str
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class FrontendValidation:
    """``spec.tls.frontend``: the client certificates a listener port requires (mutual TLS)."""

    port: int | None  # None: the default for every HTTPS/TLS-terminating port without its own entry
    ca_refs: tuple[ObjectRef, ...]
    mode: str  # AllowValidOnly | AllowInsecureFallback
    path: str  # the field path, for messages


@dataclass(frozen=True, slots=True)
class Gateway(Object):
    class_name: str = ""
    listeners: tuple[Listener, ...] = ()
    addresses: tuple[GatewayAddress, ...] = ()
    generation: int = 1
    problems: tuple[str, ...] = ()
    allowed_listeners_from: str = "None"  # All | Same | Selector | None: which ListenerSets may attach
    allowed_listeners_selector: Mapping[str, Any] | None = None
    frontend_validation: tuple[FrontendValidation, ...] = ()
    backend_client_certificate: SecretObjectRef | None = None

    def frontend_validation_for(self, port: int | None) -> FrontendValidation | None:
        """The per-port entry for ``port``, else the default (GEP-91)."""
        return next((v for v in self.frontend_validation if v.port is not None and v.port == port),
                    next((v for v in self.frontend_validation if v.port is None), None))

    def listener(self, name: str) -> Listener | None:
        return next((li for li in self.listeners if li.name == name), None)

    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> Gateway:
        r = _Reader()
        spec = r.as_map(raw.get("spec"), "spec")
        listeners = []
        for i, item in enumerate(r.as_list(spec.get("listeners"), "spec.listeners")):
            listener = _listener(r, item, i)
            if listener is not None:
                listeners.append(listener)
        addresses = []
        for i, item in enumerate(r.as_list(spec.get("addresses"), "spec.addresses")):
            a = r.as_map(item, f"spec.addresses[{i}]")
            value = r.as_str(a.get("value"), f"spec.addresses[{i}].value")
            if value:
                addresses.append(GatewayAddress(r.as_str(a.get("type"), f"spec.addresses[{i}].type", "IPAddress")
                                                or "IPAddress", value))
        allowed = r.as_map(r.as_map(spec.get("allowedListeners"), "spec.allowedListeners").get("namespaces"),
                           "spec.allowedListeners.namespaces")
        selector = allowed.get("selector")
        tls = r.as_map(spec.get("tls"), "spec.tls")
        frontend = r.as_map(tls.get("frontend"), "spec.tls.frontend")
        validations = []
        default = _frontend_validation(r, r.as_map(frontend.get("default"), "spec.tls.frontend.default"), None,
                                       "spec.tls.frontend.default.validation")
        if default is not None:
            validations.append(default)
        for i, item in enumerate(r.as_list(frontend.get("perPort"), "spec.tls.frontend.perPort")):
            entry = r.as_map(item, f"spec.tls.frontend.perPort[{i}]")
            port = r.as_int(entry.get("port"), f"spec.tls.frontend.perPort[{i}].port")
            v = _frontend_validation(r, r.as_map(entry.get("tls"), f"spec.tls.frontend.perPort[{i}].tls"), port,
                                     f"spec.tls.frontend.perPort[{i}].tls.validation")
            if v is not None and port is not None:
                validations.append(v)
        backend = r.as_map(tls.get("backend"), "spec.tls.backend")
        client = r.as_map(backend.get("clientCertificateRef"), "spec.tls.backend.clientCertificateRef")
        client_name = r.as_str(client.get("name"), "spec.tls.backend.clientCertificateRef.name")
        client_ref = SecretObjectRef(r.as_str(client.get("group"), "group", "") or "",
                                     r.as_str(client.get("kind"), "kind", "Secret") or "Secret", client_name,
                                     r.as_str(client.get("namespace"), "namespace")) if client_name else None
        return cls("Gateway", _meta("Gateway", raw), raw, source,
                   class_name=r.as_str(spec.get("gatewayClassName"), "spec.gatewayClassName", "") or "",
                   listeners=tuple(listeners), addresses=tuple(addresses), generation=_generation(raw),
                   problems=tuple(r.problems),
                   allowed_listeners_from=r.as_str(allowed.get("from"), "spec.allowedListeners.namespaces.from",
                                                   "None") or "None",
                   allowed_listeners_selector=selector if isinstance(selector, Mapping) else None,
                   frontend_validation=tuple(validations), backend_client_certificate=client_ref)


def _frontend_validation(r: _Reader, holder: Mapping[str, Any], port: int | None,
                         path: str) -> FrontendValidation | None:
    raw = r.as_map(holder.get("validation"), path)
    if not raw:
        return None
    refs = tuple(ref for j, item in enumerate(r.as_list(raw.get("caCertificateRefs"), f"{path}.caCertificateRefs"))
                 if (ref := _object_ref(r, item, j, f"{path}.caCertificateRefs", "", "ConfigMap")) is not None)
    mode = r.defaulted(raw.get("mode"), f"{path}.mode")
    return FrontendValidation(port, refs, mode, path)


def _object_ref(r: _Reader, item: Any, j: int, where: str, group: str, kind: str) -> ObjectRef | None:
    path = f"{where}[{j}]"
    m = r.as_map(item, path)
    name = r.as_str(m.get("name"), f"{path}.name")
    if not name:
        return None
    return ObjectRef(j, r.as_str(m.get("group"), f"{path}.group", group) or "",
                     r.as_str(m.get("kind"), f"{path}.kind", kind) or kind, name,
                     r.as_str(m.get("namespace"), f"{path}.namespace") or None)


def _listener(r: _Reader, item: Any, i: int) -> Listener | None:
    path = f"spec.listeners[{i}]"  # a Gateway's listener and a ListenerSet's entry have the same shape
    raw = r.as_map(item, path)
    if not raw:
        return None
    tls = r.as_map(raw.get("tls"), f"{path}.tls")
    refs = []
    for j, ref in enumerate(r.as_list(tls.get("certificateRefs"), f"{path}.tls.certificateRefs")):
        ref_map = r.as_map(ref, f"{path}.tls.certificateRefs[{j}]")
        name = r.as_str(ref_map.get("name"), f"{path}.tls.certificateRefs[{j}].name")
        if name:
            refs.append(SecretObjectRef(r.as_str(ref_map.get("group"), "group", "") or "",
                                        r.as_str(ref_map.get("kind"), "kind", "Secret") or "Secret", name,
                                        r.as_str(ref_map.get("namespace"), "namespace")))
    allowed = r.as_map(raw.get("allowedRoutes"), f"{path}.allowedRoutes")
    namespaces = r.as_map(allowed.get("namespaces"), f"{path}.allowedRoutes.namespaces")
    selector = namespaces.get("selector")
    kinds: list[RouteGroupKind] | None = None
    if allowed.get("kinds") is not None:
        kinds = []
        for j, k in enumerate(r.as_list(allowed.get("kinds"), f"{path}.allowedRoutes.kinds")):
            km = r.as_map(k, f"{path}.allowedRoutes.kinds[{j}]")
            kind = r.as_str(km.get("kind"), f"{path}.allowedRoutes.kinds[{j}].kind")
            if kind:
                kinds.append(RouteGroupKind(r.defaulted(km.get("group"), f"{path}.allowedRoutes.kinds[{j}].group"),
                                            kind))
    hostname = r.as_str(raw.get("hostname"), f"{path}.hostname")
    return Listener(
        index=i,
        name=r.as_str(raw.get("name"), f"{path}.name", "") or "",
        port=r.as_int(raw.get("port"), f"{path}.port"),
        protocol=r.as_str(raw.get("protocol"), f"{path}.protocol", "") or "",
        hostname=hostname or None,
        tls_mode=r.defaulted(tls.get("mode"), f"{path}.tls.mode") if tls else None,
        certificate_refs=tuple(refs),
        namespaces_from=r.defaulted(namespaces.get("from"), f"{path}.allowedRoutes.namespaces.from"),
        namespace_selector=selector if isinstance(selector, Mapping) else None,
        kinds=tuple(kinds) if kinds is not None else None,
    )


# --- HTTPRoute ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParentRef:
    index: int
    group: str
    kind: str
    namespace: str | None
    name: str
    section_name: str | None
    port: int | None
    raw: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PathMatch:
    type: str  # Exact | PathPrefix | RegularExpression
    value: str


@dataclass(frozen=True, slots=True)
class ValueMatch:
    """A header or query parameter match."""

    type: str  # Exact | RegularExpression
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class RouteMatch:
    path: PathMatch
    headers: tuple[ValueMatch, ...] = ()
    query_params: tuple[ValueMatch, ...] = ()
    method: str | None = None


@dataclass(frozen=True, slots=True)
class HeaderModifier:
    set: tuple[tuple[str, str], ...] = ()
    add: tuple[tuple[str, str], ...] = ()
    remove: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PathModifier:
    type: str  # ReplaceFullPath | ReplacePrefixMatch
    replace_full_path: str | None = None
    replace_prefix_match: str | None = None


@dataclass(frozen=True, slots=True)
class RequestRedirect:
    scheme: str | None = None
    hostname: str | None = None
    path: PathModifier | None = None
    port: int | None = None
    status_code: int = 302


@dataclass(frozen=True, slots=True)
class URLRewrite:
    hostname: str | None = None
    path: PathModifier | None = None


@dataclass(frozen=True, slots=True)
class Filter:
    type: str
    request_header_modifier: HeaderModifier | None = None
    response_header_modifier: HeaderModifier | None = None
    request_redirect: RequestRedirect | None = None
    url_rewrite: URLRewrite | None = None
    raw: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class BackendRef:
    index: int
    group: str
    kind: str
    name: str
    namespace: str | None
    port: int | None
    weight: int
    filters: tuple[Filter, ...] = ()


@dataclass(frozen=True, slots=True)
class RouteRule:
    index: int
    name: str | None
    matches: tuple[RouteMatch, ...]
    filters: tuple[Filter, ...]
    backend_refs: tuple[BackendRef, ...]


@dataclass(frozen=True, slots=True)
class HTTPRoute(Object):
    parent_refs: tuple[ParentRef, ...] = ()
    hostnames: tuple[str, ...] = ()
    rules: tuple[RouteRule, ...] = ()
    generation: int = 1
    problems: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> HTTPRoute:
        r = _Reader()
        spec = r.as_map(raw.get("spec"), "spec")
        parents = _parent_refs(r, spec)
        hostnames = _hostnames(r, spec)
        rules = tuple(_rule(r, item, i) for i, item in enumerate(r.as_list(spec.get("rules"), "spec.rules")))
        return cls("HTTPRoute", _meta("HTTPRoute", raw), raw, source, parent_refs=parents, hostnames=hostnames,
                   rules=rules, generation=_generation(raw), problems=tuple(r.problems))


def _parent_ref(r: _Reader, item: Any, i: int, where: str) -> ParentRef | None:
    path = f"{where}[{i}]"
    raw = r.as_map(item, path)
    name = r.as_str(raw.get("name"), f"{path}.name")
    if not name:
        return None
    return ParentRef(i, r.defaulted(raw.get("group"), f"{path}.group"), r.defaulted(raw.get("kind"), f"{path}.kind"),
                     r.as_str(raw.get("namespace"), f"{path}.namespace") or None, name,
                     r.as_str(raw.get("sectionName"), f"{path}.sectionName") or None,
                     r.as_int(raw.get("port"), f"{path}.port"), raw)


def _rule(r: _Reader, item: Any, i: int) -> RouteRule:
    path = f"spec.rules[{i}]"
    raw = r.as_map(item, path)
    matches = tuple(_match(r, m, f"{path}.matches[{j}]")
                    for j, m in enumerate(r.as_list(raw.get("matches"), f"{path}.matches")))
    filters = tuple(f for j, item in enumerate(r.as_list(raw.get("filters"), f"{path}.filters"))
                    if (f := _filter(r, item, f"{path}.filters[{j}]")) is not None)
    backends = _backend_refs(r, raw.get("backendRefs"), path, with_filters=True)
    return RouteRule(i, r.as_str(raw.get("name"), f"{path}.name") or None, matches, filters, backends)


def _match(r: _Reader, item: Any, path: str) -> RouteMatch:
    raw = r.as_map(item, path)
    p = r.as_map(raw.get("path"), f"{path}.path")
    path_match = PathMatch(r.defaulted(p.get("type"), f"{path}.path.type"),
                           r.defaulted(p.get("value"), f"{path}.path.value"))

    def values(field: str) -> tuple[ValueMatch, ...]:
        out = []
        for j, v in enumerate(r.as_list(raw.get(field), f"{path}.{field}")):
            vm = r.as_map(v, f"{path}.{field}[{j}]")
            name = r.as_str(vm.get("name"), f"{path}.{field}[{j}].name")
            value = r.as_str(vm.get("value"), f"{path}.{field}[{j}].value")
            if name and value is not None:
                out.append(ValueMatch(r.defaulted(vm.get("type"), f"{path}.{field}[{j}].type"), name, value))
        return tuple(out)

    return RouteMatch(path_match, values("headers"), values("queryParams"),
                      r.as_str(raw.get("method"), f"{path}.method") or None)


def _header_modifier(r: _Reader, raw: Any, path: str) -> HeaderModifier | None:
    m = r.as_map(raw, path)
    if not m:
        return None

    def pairs(field: str) -> tuple[tuple[str, str], ...]:
        out = []
        for j, item in enumerate(r.as_list(m.get(field), f"{path}.{field}")):
            im = r.as_map(item, f"{path}.{field}[{j}]")
            name = r.as_str(im.get("name"), f"{path}.{field}[{j}].name")
            value = r.as_str(im.get("value"), f"{path}.{field}[{j}].value", "")
            if name:
                out.append((name, value or ""))
        return tuple(out)

    remove = tuple(n for j, n in enumerate(r.as_list(m.get("remove"), f"{path}.remove"))
                   if r.as_str(n, f"{path}.remove[{j}]"))
    return HeaderModifier(pairs("set"), pairs("add"), remove)


def _path_modifier(r: _Reader, raw: Any, path: str) -> PathModifier | None:
    m = r.as_map(raw, path)
    if not m:
        return None
    return PathModifier(r.as_str(m.get("type"), f"{path}.type", "") or "",
                        r.as_str(m.get("replaceFullPath"), f"{path}.replaceFullPath"),
                        r.as_str(m.get("replacePrefixMatch"), f"{path}.replacePrefixMatch"))


def _filter(r: _Reader, item: Any, path: str) -> Filter | None:
    raw = r.as_map(item, path)
    ftype = r.as_str(raw.get("type"), f"{path}.type")
    if not ftype:
        return None
    redirect = None
    if isinstance(raw.get("requestRedirect"), Mapping):
        rr = raw["requestRedirect"]
        status = r.defaulted_int(rr.get("statusCode"), f"{path}.requestRedirect.statusCode")
        redirect = RequestRedirect(r.as_str(rr.get("scheme"), f"{path}.requestRedirect.scheme"),
                                   r.as_str(rr.get("hostname"), f"{path}.requestRedirect.hostname") or None,
                                   _path_modifier(r, rr.get("path"), f"{path}.requestRedirect.path"),
                                   r.as_int(rr.get("port"), f"{path}.requestRedirect.port"),
                                   status if status is not None else 0)
    rewrite = None
    if isinstance(raw.get("urlRewrite"), Mapping):
        uw = raw["urlRewrite"]
        rewrite = URLRewrite(r.as_str(uw.get("hostname"), f"{path}.urlRewrite.hostname") or None,
                             _path_modifier(r, uw.get("path"), f"{path}.urlRewrite.path"))
    return Filter(ftype,
                  _header_modifier(r, raw.get("requestHeaderModifier"), f"{path}.requestHeaderModifier"),
                  _header_modifier(r, raw.get("responseHeaderModifier"), f"{path}.responseHeaderModifier"),
                  redirect, rewrite, raw)


# --- GRPCRoute ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GRPCMethodMatch:
    type: str  # Exact | RegularExpression
    service: str | None  # None: any service
    method: str | None  # None: any method


@dataclass(frozen=True, slots=True)
class GRPCRouteMatch:
    method: GRPCMethodMatch | None = None  # None: every method of every service
    headers: tuple[ValueMatch, ...] = ()


@dataclass(frozen=True, slots=True)
class GRPCRouteRule:
    index: int
    name: str | None
    matches: tuple[GRPCRouteMatch, ...]
    filters: tuple[Filter, ...]
    backend_refs: tuple[BackendRef, ...]


@dataclass(frozen=True, slots=True)
class GRPCRoute(Object):
    parent_refs: tuple[ParentRef, ...] = ()
    hostnames: tuple[str, ...] = ()
    rules: tuple[GRPCRouteRule, ...] = ()
    generation: int = 1
    problems: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> GRPCRoute:
        r = _Reader()
        spec = r.as_map(raw.get("spec"), "spec")
        rules_raw = r.as_list(spec.get("rules"), "spec.rules") if "rules" in spec else [{}]
        rules = []
        for i, item in enumerate(rules_raw):
            path = f"spec.rules[{i}]"
            rule = r.as_map(item, path)
            matches_raw = r.as_list(rule.get("matches"), f"{path}.matches") if rule.get("matches") is not None else [{}]
            rules.append(GRPCRouteRule(
                i, r.as_str(rule.get("name"), f"{path}.name") or None,
                tuple(_grpc_match(r, m, f"{path}.matches[{j}]") for j, m in enumerate(matches_raw)),
                tuple(f for j, f_raw in enumerate(r.as_list(rule.get("filters"), f"{path}.filters"))
                      if (f := _filter(r, f_raw, f"{path}.filters[{j}]")) is not None),
                _backend_refs(r, rule.get("backendRefs"), path, with_filters=True)))
        return cls("GRPCRoute", _meta("GRPCRoute", raw), raw, source, parent_refs=_parent_refs(r, spec),
                   hostnames=_hostnames(r, spec), rules=tuple(rules), generation=_generation(raw),
                   problems=tuple(r.problems))


def _grpc_match(r: _Reader, item: Any, path: str) -> GRPCRouteMatch:
    raw = r.as_map(item, path)
    method = None
    if raw.get("method") is not None:
        m = r.as_map(raw.get("method"), f"{path}.method")
        method = GRPCMethodMatch(r.defaulted(m.get("type"), f"{path}.method.type"),
                                 r.as_str(m.get("service"), f"{path}.method.service") or None,
                                 r.as_str(m.get("method"), f"{path}.method.method") or None)
    headers = []
    for j, v in enumerate(r.as_list(raw.get("headers"), f"{path}.headers")):
        vm = r.as_map(v, f"{path}.headers[{j}]")
        name = r.as_str(vm.get("name"), f"{path}.headers[{j}].name")
        value = r.as_str(vm.get("value"), f"{path}.headers[{j}].value")
        if name and value is not None:
            headers.append(ValueMatch(r.defaulted(vm.get("type"), f"{path}.headers[{j}].type"), name, value))
    return GRPCRouteMatch(method, tuple(headers))


# --- TLSRoute, TCPRoute, UDPRoute ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StreamRule:
    """A rule of a TLSRoute, TCPRoute or UDPRoute: backends only (no matches; v1 allows one rule)."""

    index: int
    name: str | None
    backend_refs: tuple[BackendRef, ...]


@dataclass(frozen=True, slots=True)
class StreamRoute(Object):
    """TLSRoute, TCPRoute and UDPRoute share this shape; only a TLSRoute has hostnames (SNI)."""

    parent_refs: tuple[ParentRef, ...] = ()
    hostnames: tuple[str, ...] = ()
    rules: tuple[StreamRule, ...] = ()
    generation: int = 1
    problems: tuple[str, ...] = ()

    @classmethod
    def parse_kind(cls, kind: str, raw: dict[str, Any], source: Source = BUILTIN) -> StreamRoute:
        r = _Reader()
        spec = r.as_map(raw.get("spec"), "spec")
        rules = []
        for i, item in enumerate(r.as_list(spec.get("rules"), "spec.rules")):
            path = f"spec.rules[{i}]"
            rule = r.as_map(item, path)
            rules.append(StreamRule(i, r.as_str(rule.get("name"), f"{path}.name") or None,
                                    _backend_refs(r, rule.get("backendRefs"), path, with_filters=False)))
        return cls(kind, _meta(kind, raw), raw, source, parent_refs=_parent_refs(r, spec),
                   hostnames=_hostnames(r, spec) if kind == "TLSRoute" else (), rules=tuple(rules),
                   generation=_generation(raw), problems=tuple(r.problems))


def _parent_refs(r: _Reader, spec: Mapping[str, Any]) -> tuple[ParentRef, ...]:
    return tuple(p for i, item in enumerate(r.as_list(spec.get("parentRefs"), "spec.parentRefs"))
                 if (p := _parent_ref(r, item, i, "spec.parentRefs")) is not None)


def _hostnames(r: _Reader, spec: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(h for i, h in enumerate(r.as_list(spec.get("hostnames"), "spec.hostnames"))
                 if r.as_str(h, f"spec.hostnames[{i}]"))


def _backend_refs(r: _Reader, value: Any, path: str, *, with_filters: bool) -> tuple[BackendRef, ...]:
    backends = []
    for j, b in enumerate(r.as_list(value, f"{path}.backendRefs")):
        bpath = f"{path}.backendRefs[{j}]"
        bm = r.as_map(b, bpath)
        name = r.as_str(bm.get("name"), f"{bpath}.name")
        if not name:
            r.problems.append(f"{bpath}.name: Required value")
            continue
        weight = r.defaulted_int(bm.get("weight"), f"{bpath}.weight")
        bfilters = tuple(f for k, item in enumerate(r.as_list(bm.get("filters"), f"{bpath}.filters"))
                         if (f := _filter(r, item, f"{bpath}.filters[{k}]")) is not None) if with_filters else ()
        backends.append(BackendRef(j, r.as_str(bm.get("group"), f"{bpath}.group") or "",
                                   r.defaulted(bm.get("kind"), f"{bpath}.kind"), name,
                                   r.as_str(bm.get("namespace"), f"{bpath}.namespace") or None,
                                   r.as_int(bm.get("port"), f"{bpath}.port"),
                                   weight if weight is not None and weight >= 0 else 0, bfilters))
    return tuple(backends)


# --- ListenerSet ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListenerSet(Object):
    """Listeners for a Gateway, kept apart from it (GEP-1713): ``spec.parentRef`` names the Gateway."""

    parent: ParentRef | None = None
    listeners: tuple[Listener, ...] = ()
    generation: int = 1
    problems: tuple[str, ...] = ()

    def listener(self, name: str) -> Listener | None:
        return next((li for li in self.listeners if li.name == name), None)

    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> ListenerSet:
        r = _Reader()
        spec = r.as_map(raw.get("spec"), "spec")
        parent_raw = r.as_map(spec.get("parentRef"), "spec.parentRef")
        name = r.as_str(parent_raw.get("name"), "spec.parentRef.name")
        parent = None
        if name:
            parent = ParentRef(0, r.defaulted(parent_raw.get("group"), "spec.parentRef.group"),
                               r.defaulted(parent_raw.get("kind"), "spec.parentRef.kind"),
                               r.as_str(parent_raw.get("namespace"), "spec.parentRef.namespace") or None, name,
                               None, None, parent_raw)
        listeners = tuple(li for i, item in enumerate(r.as_list(spec.get("listeners"), "spec.listeners"))
                          if (li := _listener(r, item, i)) is not None)
        return cls("ListenerSet", _meta("ListenerSet", raw), raw, source, parent=parent, listeners=listeners,
                   generation=_generation(raw), problems=tuple(r.problems))


# --- BackendTLSPolicy -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PolicyTargetRef:
    index: int
    group: str
    kind: str
    name: str
    section_name: str | None


@dataclass(frozen=True, slots=True)
class SubjectAltName:
    type: str  # Hostname | URI
    value: str


@dataclass(frozen=True, slots=True)
class BackendTLSPolicy(Object):
    """How the Gateway's proxy verifies the TLS of a backend (GEP-1897)."""

    target_refs: tuple[PolicyTargetRef, ...] = ()
    ca_refs: tuple[ObjectRef, ...] = ()
    well_known_ca: str | None = None  # "System" (the proxy's trust store)
    hostname: str = ""  # the SNI sent and the name the certificate must carry
    subject_alt_names: tuple[SubjectAltName, ...] = ()
    options: Mapping[str, str] | None = None
    generation: int = 1
    problems: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> BackendTLSPolicy:
        r = _Reader()
        spec = r.as_map(raw.get("spec"), "spec")
        targets = []
        for i, item in enumerate(r.as_list(spec.get("targetRefs"), "spec.targetRefs")):
            path = f"spec.targetRefs[{i}]"
            m = r.as_map(item, path)
            name = r.as_str(m.get("name"), f"{path}.name")
            if name:
                targets.append(PolicyTargetRef(i, r.as_str(m.get("group"), f"{path}.group", "") or "",
                                               r.as_str(m.get("kind"), f"{path}.kind", "") or "", name,
                                               r.as_str(m.get("sectionName"), f"{path}.sectionName") or None))
        validation = r.as_map(spec.get("validation"), "spec.validation")
        cas = tuple(ref for j, item in enumerate(r.as_list(validation.get("caCertificateRefs"),
                                                           "spec.validation.caCertificateRefs"))
                    if (ref := _object_ref(r, item, j, "spec.validation.caCertificateRefs", "", "")) is not None)
        sans = []
        for j, item in enumerate(r.as_list(validation.get("subjectAltNames"), "spec.validation.subjectAltNames")):
            path = f"spec.validation.subjectAltNames[{j}]"
            m = r.as_map(item, path)
            san_type = r.as_str(m.get("type"), f"{path}.type", "") or ""
            value = r.as_str(m.get("hostname" if san_type == "Hostname" else "uri"), path)
            if value:
                sans.append(SubjectAltName(san_type, value))
        options = spec.get("options")
        return cls("BackendTLSPolicy", _meta("BackendTLSPolicy", raw), raw, source, target_refs=tuple(targets),
                   ca_refs=cas,
                   well_known_ca=r.as_str(validation.get("wellKnownCACertificates"),
                                          "spec.validation.wellKnownCACertificates") or None,
                   hostname=r.as_str(validation.get("hostname"), "spec.validation.hostname", "") or "",
                   subject_alt_names=tuple(sans),
                   options={str(k): str(v) for k, v in options.items()} if isinstance(options, Mapping) else None,
                   generation=_generation(raw), problems=tuple(r.problems))


# --- ReferenceGrant -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GrantFrom:
    group: str
    kind: str
    namespace: str


@dataclass(frozen=True, slots=True)
class GrantTo:
    group: str
    kind: str
    name: str | None  # None: every object of the kind in the grant's namespace


@dataclass(frozen=True, slots=True)
class ReferenceGrant(Object):
    from_: tuple[GrantFrom, ...] = ()
    to: tuple[GrantTo, ...] = ()
    problems: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> ReferenceGrant:
        r = _Reader()
        spec = r.as_map(raw.get("spec"), "spec")
        froms, tos = [], []
        for i, item in enumerate(r.as_list(spec.get("from"), "spec.from")):
            m = r.as_map(item, f"spec.from[{i}]")
            kind = r.as_str(m.get("kind"), f"spec.from[{i}].kind")
            ns = r.as_str(m.get("namespace"), f"spec.from[{i}].namespace")
            if kind and ns:
                froms.append(GrantFrom(r.as_str(m.get("group"), f"spec.from[{i}].group", "") or "", kind, ns))
        for i, item in enumerate(r.as_list(spec.get("to"), "spec.to")):
            m = r.as_map(item, f"spec.to[{i}]")
            kind = r.as_str(m.get("kind"), f"spec.to[{i}].kind")
            if kind:
                tos.append(GrantTo(r.as_str(m.get("group"), f"spec.to[{i}].group", "") or "", kind,
                                   r.as_str(m.get("name"), f"spec.to[{i}].name") or None))
        return cls("ReferenceGrant", _meta("ReferenceGrant", raw), raw, source, from_=tuple(froms), to=tuple(tos),
                   problems=tuple(r.problems))


# Each kind's parser, from its declared view (model.kinds.view_of).
PARSERS = {kind: view_of(kind) for kind in KINDS}
