"""``translate(state)``: the Gateway controller's one pass — routing table and status from the same decisions.

Envoy Gateway's translator (``internal/gatewayapi/translator.go``) is the model, step by step:

1. GatewayClasses: the controller claims those naming ``gateway.envoyproxy.io/gatewayclass-controller``
   and accepts the oldest (``cluster/gatewayinfra.class_verdicts``). Objects of other controllers
   get no status from knetsim (their own controller would write it).
2. Gateways of an accepted class: each listener is validated (protocol, allowed route kinds,
   namespace selector, TLS certificate references, port/protocol/hostname conflicts) and gets
   ``supportedKinds`` and conditions; the Gateway gets ``Accepted`` from its listeners and
   ``Programmed`` plus ``addresses`` from its proxy (the LoadBalancer Service and pods
   ``gatewayinfra`` created).
3. HTTPRoutes, per parentRef that names one of those Gateways: the listeners selected by
   ``sectionName``/``port`` (none: ``NoMatchingParent``), those that allow the route's kind and
   namespace (none: ``NotAllowedByListeners``), the rules (unsupported filters drop a rule:
   ``PartiallyInvalid``, or ``Accepted: False`` when every rule is dropped), the backendRefs
   (``ResolvedRefs: False`` with ``RefNotPermitted``, ``BackendNotFound``, ``InvalidKind``...),
   and the hostname intersection with each listener (none: ``NoMatchingListenerHostname``).
   Where the route attaches, the listener's ``attachedRoutes`` counts it and — if the listener
   is programmed — its rules join that listener's routing table. A rule is never routed while
   its route is reported as not accepted there: both come from the same code.

Messages are Envoy Gateway's where it has one; condition types and reasons are ``conditions``'
constants, and ``grants.reference_permitted`` is the pure ReferenceGrant check.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..cluster.gatewayinfra import (
    EG_CONTROLLER,
    EG_NAMESPACE,
    OWNING_NAME,
    OWNING_NAMESPACE,
    PROTOCOL_KINDS,
    ClassVerdict,
    class_verdicts,
    proxy_name,
)
from ..cluster.state import ClusterState
from ..model.gatewayapi import (
    GROUP,
    BackendRef,
    Gateway,
    GatewayClass,
    HTTPRoute,
    Listener,
    ParentRef,
    RouteGroupKind,
    RouteMatch,
    RouteRule,
)
from ..model.labels import Selector
from ..model.objects import Service
from . import hostnames
from .conditions import Conditions, Reason, Type
from .grants import ReferenceFrom, ReferenceTo, reference_permitted

ROUTE_KIND = "HTTPRoute"
SUPPORTED_FILTERS = ("RequestHeaderModifier", "ResponseHeaderModifier", "RequestRedirect", "URLRewrite",
                     "RequestMirror", "CORS")
REDIRECT_CODES = (301, 302, 303, 307, 308)


# --- what the pass produces ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResolvedBackend:
    ref: BackendRef
    namespace: str
    service: str  # namespace/name
    port: int | None
    weight: int
    reason: str | None  # None when valid; else the ResolvedRefs reason
    problem: str | None  # the message
    target_port: str | None = None
    ready_endpoints: int = 0

    @property
    def valid(self) -> bool:
        return self.reason is None

    def describe(self) -> str:
        return f"{self.service}:{self.port if self.port is not None else '<no port>'}"


@dataclass(frozen=True, slots=True)
class RouteEntry:
    """One match of one rule, attached to one listener: a row of the listener's routing table."""

    route: HTTPRoute
    rule: RouteRule
    match_index: int
    match: RouteMatch
    hostnames: tuple[str, ...]  # the route's hostnames as intersected with the listener's; () = every host
    backends: tuple[ResolvedBackend, ...]


@dataclass(slots=True)
class ListenerContext:
    listener: Listener
    supported_kinds: list[RouteGroupKind] = field(default_factory=list)
    conditions: Conditions = field(default_factory=Conditions)
    attached_routes: int = 0
    entries: list[RouteEntry] = field(default_factory=list)
    _index: tuple[dict[str, list[int]], list[tuple[str, int]], list[int]] | None = None

    def entries_for(self, host: str) -> list[RouteEntry]:
        """The entries whose hostnames may match ``host`` (normalized), in table order.

        Indexed once (exact names, wildcard suffixes, entries for every host), so a Gateway with a
        thousand routes examines only the few that name the request's host.
        """
        if self._index is None:
            exact: dict[str, list[int]] = {}
            wild: list[tuple[str, int]] = []
            anyhost: list[int] = []
            for i, e in enumerate(self.entries):
                if not e.hostnames:
                    anyhost.append(i)
                for h in dict.fromkeys(e.hostnames):
                    if hostnames.is_wildcard(h):
                        wild.append((h, i))
                    else:
                        exact.setdefault(h, []).append(i)
            self._index = (exact, wild, anyhost)
        exact, wild, anyhost = self._index
        found = {*exact.get(host, ()), *anyhost, *(i for h, i in wild if hostnames.matches(h, host))}
        return [self.entries[i] for i in sorted(found)]

    @property
    def name(self) -> str:
        return self.listener.name

    @property
    def programmed(self) -> bool:
        c = self.conditions.get(Type.PROGRAMMED)
        return c is not None and c.ok

    def allows_kind(self, kind: str) -> bool:
        return any(k.group == GROUP and k.kind == kind for k in self.supported_kinds)


@dataclass(slots=True)
class GatewayContext:
    gateway: Gateway
    listeners: list[ListenerContext] = field(default_factory=list)
    conditions: Conditions = field(default_factory=Conditions)
    addresses: list[str] = field(default_factory=list)
    proxy_service: str | None = None  # namespace/name of the LoadBalancer Service
    proxy_pods: list[str] = field(default_factory=list)  # ready proxy pods
    proxy_pods_total: int = 0

    def listener(self, name: str) -> ListenerContext | None:
        return next((lc for lc in self.listeners if lc.name == name), None)


@dataclass(slots=True)
class ParentStatus:
    ref: ParentRef
    gateway: str  # namespace/name
    conditions: Conditions = field(default_factory=Conditions)
    listeners: list[str] = field(default_factory=list)  # listener names the route attached to


@dataclass(slots=True)
class RouteContext:
    route: HTTPRoute
    parents: list[ParentStatus] = field(default_factory=list)
    dropped: dict[int, tuple[str, str]] = field(default_factory=dict)  # rule index → (reason, message)
    backends: dict[int, tuple[ResolvedBackend, ...]] = field(default_factory=dict)  # rule index → backends
    unclaimed: list[tuple[ParentRef, str]] = field(default_factory=list)  # parentRefs knetsim does not serve


@dataclass(slots=True)
class Translation:
    classes: dict[str, tuple[GatewayClass, ClassVerdict]]
    gateways: dict[str, GatewayContext]
    routes: dict[str, RouteContext]

    def parent_statuses(self, gateway: str) -> list[tuple[RouteContext, ParentStatus]]:
        return [(rc, ps) for rc in self.routes.values() for ps in rc.parents if ps.gateway == gateway]


_CACHE: weakref.WeakKeyDictionary[ClusterState, Translation] = weakref.WeakKeyDictionary()


def translate(state: ClusterState) -> Translation:
    """The controller's view of ``state`` (computed once per state: the state is read-only)."""
    cached = _CACHE.get(state)
    if cached is None:
        cached = _translate(state)
        _CACHE[state] = cached
    return cached


def _translate(state: ClusterState) -> Translation:
    verdicts = class_verdicts(list(state.gateway_classes.values()))
    classes = {name: (state.gateway_classes[name], verdicts[name]) for name in sorted(state.gateway_classes)}
    gateways: dict[str, GatewayContext] = {}
    for key in sorted(state.gateways):
        gw = state.gateways[key]
        verdict = verdicts.get(gw.class_name)
        if verdict is None or not verdict.accepted:
            continue  # not ours, or our class was not accepted: Envoy Gateway leaves it alone
        gateways[key] = _gateway(state, gw)
    routes: dict[str, RouteContext] = {}
    for key in sorted(state.http_routes):
        routes[key] = _route(state, state.http_routes[key], gateways)
    return Translation(classes, gateways, routes)


# --- gateways ---------------------------------------------------------------------------------


def _gateway(state: ClusterState, gw: Gateway) -> GatewayContext:
    ctx = GatewayContext(gw)
    for listener in gw.listeners:
        ctx.listeners.append(_listener(state, gw, listener))
    _conflicts(ctx)
    for lc in ctx.listeners:
        _finish_listener(lc)
    accepted = [lc for lc in ctx.listeners if not lc.conditions.is_false(Type.ACCEPTED)]
    rejected = sorted(lc.name for lc in ctx.listeners if lc.conditions.is_false(Type.ACCEPTED))
    if not rejected:
        ctx.conditions.set(Type.ACCEPTED, True, Reason.ACCEPTED, "The Gateway has been scheduled by Envoy Gateway")
    elif accepted:
        ctx.conditions.set(Type.ACCEPTED, True, Reason.LISTENERS_NOT_VALID,
                           f"Listeners not valid: {', '.join(rejected)}")
    else:
        ctx.conditions.set(Type.ACCEPTED, False, Reason.LISTENERS_NOT_VALID,
                           f"No listeners are valid: {', '.join(rejected)}")
    name = proxy_name(gw.namespace, gw.name)
    svc = state.services.get(f"{EG_NAMESPACE}/{name}")
    if svc is not None:
        ctx.proxy_service = svc.key
        ctx.addresses = list(svc.load_balancer_ips)
    pods = [p for p in state.pods_in(EG_NAMESPACE)
            if p.labels.get(OWNING_NAME) == gw.name and p.labels.get(OWNING_NAMESPACE) == gw.namespace]
    ctx.proxy_pods_total = len(pods)
    ctx.proxy_pods = [p.key for p in pods if p.ready and p.phase == "Running"]
    if not ctx.addresses:
        ctx.conditions.set(Type.PROGRAMMED, False, Reason.ADDRESS_NOT_ASSIGNED,
                           "No addresses have been assigned to the Gateway")
    elif not ctx.proxy_pods:
        ctx.conditions.set(Type.PROGRAMMED, False, Reason.NO_RESOURCES, "Envoy replicas unavailable")
    else:
        ctx.conditions.set(Type.PROGRAMMED, True, Reason.PROGRAMMED, f"Address assigned to the Gateway, "
                           f"{len(ctx.proxy_pods)}/{ctx.proxy_pods_total} envoy replicas available")
    return ctx


def _listener(state: ClusterState, gw: Gateway, listener: Listener) -> ListenerContext:
    lc = ListenerContext(listener)
    cond = lc.conditions
    kinds = PROTOCOL_KINDS.get(listener.protocol)
    if kinds is None:
        cond.set(Type.ACCEPTED, False, Reason.UNSUPPORTED_PROTOCOL,
                 f"Protocol {listener.protocol} is unsupported, must be HTTP, HTTPS, TCP or UDP.")
        return lc
    if listener.kinds is None or not listener.kinds:
        lc.supported_kinds = [RouteGroupKind(GROUP, k) for k in kinds]
    else:
        supported = []
        for k in listener.kinds:
            if k.group != GROUP:
                cond.set(Type.RESOLVED_REFS, False, Reason.INVALID_ROUTE_KINDS,
                         f"Group is not supported, group must be {GROUP}")
            elif k.kind in kinds:
                supported.append(k)
        for k in listener.kinds:
            if k.group == GROUP and k.kind not in kinds:
                shown = [s.kind for s in supported] or list(kinds)
                cond.set(Type.RESOLVED_REFS, False, Reason.INVALID_ROUTE_KINDS,
                         f"{k.kind} is not supported, kind must be one of [{' '.join(shown)}]")
        lc.supported_kinds = supported
    if listener.namespaces_from == "Selector":
        if listener.namespace_selector is None:
            cond.set(Type.PROGRAMMED, False, Reason.INVALID,
                     "The allowedRoutes.namespaces.selector field must be specified "
                     "when allowedRoutes.namespaces.from is set to \"Selector\".")
        else:
            try:
                Selector.from_label_selector(listener.namespace_selector)
            except Exception as exc:  # a malformed selector: the listener is invalid, say why
                cond.set(Type.PROGRAMMED, False, Reason.INVALID,
                         f"The allowedRoutes.namespaces.selector could not be parsed: {exc}.")
    if listener.protocol == "HTTPS" or (listener.protocol == "TLS" and listener.tls_mode != "Passthrough"):
        _certificates(state, gw, listener, cond)
    return lc


def _certificates(state: ClusterState, gw: Gateway, listener: Listener, cond: Conditions) -> None:
    if not listener.certificate_refs:
        cond.set(Type.PROGRAMMED, False, Reason.INVALID, "Listener must have at least 1 TLS certificate ref")
        return
    for ref in listener.certificate_refs:
        ns = ref.namespace or gw.namespace
        if ref.group not in ("", "core") or ref.kind != "Secret":
            cond.set(Type.RESOLVED_REFS, False, Reason.INVALID_CERTIFICATE_REF,
                     f"Certificate ref {ref.kind} {ns}/{ref.name} is not a Secret (group \"\", kind Secret).")
            return
        if not reference_permitted(ReferenceFrom.gateway_api("Gateway", gw.namespace),
                                   ReferenceTo.core("Secret", ns, ref.name), state.reference_grants.values()):
            cond.set(Type.RESOLVED_REFS, False, Reason.REF_NOT_PERMITTED,
                     f"Certificate ref to secret {ns}/{ref.name} not permitted by any ReferenceGrant.")
            return
        if not _secret_exists(state, ns, ref.name):
            cond.set(Type.RESOLVED_REFS, False, Reason.INVALID_CERTIFICATE_REF,
                     f"Secret {ns}/{ref.name} does not exist.")
            return


def _secret_exists(state: ClusterState, namespace: str, name: str) -> bool:
    if ("Secret", f"{namespace}/{name}") in state.others:
        return True
    # A Secret manifest without a namespace lands in the namespace of `-n`, which the state does not record.
    other = state.others.get(("Secret", name))
    return other is not None and not other.namespace


def _conflicts(ctx: GatewayContext) -> None:
    valid = [lc for lc in ctx.listeners if not lc.conditions and lc.listener.protocol in PROTOCOL_KINDS]
    by_port: dict[int | None, list[ListenerContext]] = {}
    for lc in valid:
        by_port.setdefault(lc.listener.port, []).append(lc)
    for listeners in by_port.values():
        # HTTPS and TLS share the TLS stack (getProtocolForListener); UDP coexists with anything.
        protocols = {"HTTPS" if lc.listener.protocol == "TLS" else lc.listener.protocol for lc in listeners
                     if lc.listener.protocol != "UDP"}
        if len(protocols) > 1:
            names = sorted(f"{ctx.gateway.key}/{lc.name}" for lc in listeners if lc.listener.protocol != "UDP")
            for lc in listeners:
                if lc.listener.protocol != "UDP":
                    lc.conditions.set(Type.CONFLICTED, True, Reason.PROTOCOL_CONFLICT,
                                      "All listeners for a given port must use a compatible protocol, conflicting "
                                      f"listeners: {', '.join(names)}")
    seen: set[tuple[str, str, int | None]] = set()
    for lc in valid:
        ident = (lc.listener.protocol, (lc.listener.hostname or "").lower(), lc.listener.port)
        if ident in seen and not lc.conditions:
            lc.conditions.set(Type.CONFLICTED, True, Reason.HOSTNAME_CONFLICT,
                              "Port, protocol and hostname tuple must be unique for every listener")
        seen.add(ident)


def _finish_listener(lc: ListenerContext) -> None:
    """validateListenerConditions: a clean listener is programmed; any problem makes it not programmed."""
    cond = lc.conditions
    if not cond:
        cond.set(Type.PROGRAMMED, True, Reason.PROGRAMMED,
                 "Sending translated listener configuration to the data plane")
        cond.set(Type.ACCEPTED, True, Reason.ACCEPTED, "Listener has been successfully translated")
        cond.set(Type.RESOLVED_REFS, True, Reason.RESOLVED_REFS, "Listener references have been resolved")
        return
    only = list(cond.values())
    if len(only) == 1 and only[0].type == "ResolvedRefs" and only[0].reason in ("InvalidCertificateRef",
                                                                                  "RefNotPermitted"):
        cond.set(Type.ACCEPTED, True, Reason.ACCEPTED, "Listener has been successfully translated")
        cond.set(Type.PROGRAMMED, False, Reason.INVALID, "Listener is invalid, see other Conditions for details.")
        return
    if "Programmed" not in cond:
        cond.set(Type.PROGRAMMED, False, Reason.INVALID, "Listener is invalid, see other Conditions for details.")
    if "ResolvedRefs" not in cond:
        cond.set(Type.RESOLVED_REFS, True, Reason.RESOLVED_REFS, "Listener references have been resolved")


# --- routes -----------------------------------------------------------------------------------


def _namespace_allowed(state: ClusterState, gw: Gateway, listener: Listener, namespace: str) -> bool:
    if listener.namespaces_from == "All":
        return True
    if listener.namespaces_from == "Selector":
        if listener.namespace_selector is None:
            return False
        try:
            selector = Selector.from_label_selector(listener.namespace_selector)
        except Exception:
            return False
        return selector.matches(state.namespace_labels(namespace))
    return namespace == gw.namespace  # Same (and any value the schema would have refused)


def _route(state: ClusterState, route: HTTPRoute, gateways: Mapping[str, GatewayContext]) -> RouteContext:
    rc = RouteContext(route)
    _rules(state, rc)
    seen: set[tuple[object, ...]] = set()
    for ref in route.parent_refs:
        ns = ref.namespace or route.namespace
        key = f"{ns}/{ref.name}"
        if ref.group != GROUP or ref.kind != "Gateway":
            rc.unclaimed.append((ref, f"parentRef kind {ref.group or 'core'}/{ref.kind} is not a Gateway; knetsim "
                                      "simulates Gateway parents only"))
            continue
        gctx = gateways.get(key)
        if gctx is None:
            rc.unclaimed.append((ref, unclaimed_reason(state, key)))
            continue
        ident = (key, ref.section_name, ref.port)
        if ident in seen:
            continue  # the same parent twice: one status entry
        seen.add(ident)
        rc.parents.append(_parent(state, rc, ref, gctx))
    return rc


def unclaimed_reason(state: ClusterState, key: str) -> str:
    gw = state.gateways.get(key)
    if gw is None:
        return f"Gateway {key} does not exist"
    gc = state.gateway_classes.get(gw.class_name)
    if gc is None:
        return f"Gateway {key} names GatewayClass {gw.class_name!r}, which does not exist: no controller serves it"
    if gc.controller_name != EG_CONTROLLER:
        return (f"Gateway {key} belongs to GatewayClass {gc.name} of controller {gc.controller_name!r}, which knetsim "
                f"does not run (it simulates {EG_CONTROLLER})")
    return (f"Gateway {key}'s GatewayClass {gc.name} is not accepted (another older GatewayClass names the same "
            "controller)")


def _parent(state: ClusterState, rc: RouteContext, ref: ParentRef, gctx: GatewayContext) -> ParentStatus:
    ps = ParentStatus(ref, gctx.gateway.key)
    route = rc.route
    selected = [lc for lc in gctx.listeners
                if (ref.section_name is None or lc.name == ref.section_name)
                and (ref.port is None or lc.listener.port == ref.port)]
    allowed = [lc for lc in selected if lc.allows_kind(ROUTE_KIND)
               and _namespace_allowed(state, gctx.gateway, lc.listener, route.namespace)]
    if not selected:
        ps.conditions.set(Type.ACCEPTED, False, Reason.NO_MATCHING_PARENT, "No listeners match this parent ref")
    elif not allowed:
        ps.conditions.set(Type.ACCEPTED, False, Reason.NOT_ALLOWED_BY_LISTENERS,
                          "No listeners included by this parent ref allowed this attachment.")
    else:
        ps.conditions.set(Type.ACCEPTED, True, Reason.ACCEPTED, "Route is accepted")
    live_rules = [r for r in route.rules if r.index not in rc.dropped]
    if rc.dropped and not ps.conditions.is_false(Type.ACCEPTED):
        reason, message = next(iter(rc.dropped.values()))
        if not live_rules:
            ps.conditions.set(Type.ACCEPTED, False, reason, message)
        else:
            ps.conditions.set(Type.PARTIALLY_INVALID, True, reason,
                              f"Dropped Rule(s) [{' '.join(str(i) for i in sorted(rc.dropped))}]: {message}")
    failure = next(((rule, b) for rule in live_rules for b in rc.backends.get(rule.index, ()) if not b.valid), None)
    if failure is not None:
        rule, b = failure
        ps.conditions.set(Type.RESOLVED_REFS, False, b.reason or "",
                          f"Failed to process route rule {rule.index} backendRef {b.ref.index}: {b.problem}")
    else:
        ps.conditions.set(Type.RESOLVED_REFS, True, Reason.RESOLVED_REFS,
                          "Resolved all the Object references for the Route")
    if ps.conditions.is_false(Type.ACCEPTED):
        return ps
    attached: list[tuple[ListenerContext, tuple[str, ...]]] = []
    for lc in allowed:
        hosts = _intersection(lc.listener.hostname, route.hostnames)
        if hosts is not None:
            attached.append((lc, hosts))
    if not attached:
        ps.conditions.set(Type.ACCEPTED, False, Reason.NO_MATCHING_LISTENER_HOSTNAME,
                          "There were no hostname intersections between the HTTPRoute and this parent ref's "
                          "Listener(s).")
        return ps
    for lc, hosts in attached:
        lc.attached_routes += 1
        ps.listeners.append(lc.name)
        if not lc.programmed:
            continue
        for rule in live_rules:
            for i, match in enumerate(rule.matches):
                lc.entries.append(RouteEntry(route, rule, i, match, hosts, rc.backends.get(rule.index, ())))
    return ps


def _intersection(listener_host: str | None, route_hosts: tuple[str, ...]) -> tuple[str, ...] | None:
    """The route's effective hostnames on the listener: () for any host, None when they do not meet."""
    if not route_hosts:
        return () if listener_host is None else (listener_host.lower(),)
    out: list[str] = []
    for h in route_hosts:
        both = hostnames.intersect(listener_host, h)
        if both is not False and both is not None and both not in out:
            out.append(str(both))
    return tuple(out) if out else None


def _rules(state: ClusterState, rc: RouteContext) -> None:
    for rule in rc.route.rules:
        problem = _rule_problem(rule)
        if problem is not None:
            rc.dropped[rule.index] = problem
            continue
        rc.backends[rule.index] = tuple(_backend(state, rc.route, b) for b in rule.backend_refs)


def _rule_problem(rule: RouteRule) -> tuple[str, str] | None:
    filters = [*rule.filters, *(f for b in rule.backend_refs for f in b.filters)]
    for f in filters:
        if f.type not in SUPPORTED_FILTERS:
            return Reason.UNSUPPORTED_VALUE, f"Unsupported filter type: {f.type}"
    types = [f.type for f in rule.filters]
    if "RequestRedirect" in types and "URLRewrite" in types:
        return Reason.INCOMPATIBLE_FILTERS, ("May specify either httpRouteFilterRequestRedirect or "
                                       "httpRouteFilterRequestRewrite, but not both")
    for f in rule.filters:
        modifier = (f.request_redirect.path if f.request_redirect else None) or (
            f.url_rewrite.path if f.url_rewrite else None)
        if f.request_redirect is not None and f.request_redirect.status_code not in REDIRECT_CODES:
            return Reason.UNSUPPORTED_VALUE, (f"Status code {f.request_redirect.status_code} is not supported, "
                                              "must be one of 301, 302, 303, 307 or 308")
        if modifier is None:
            continue
        if modifier.type not in ("ReplaceFullPath", "ReplacePrefixMatch"):
            return Reason.UNSUPPORTED_VALUE, f"Unsupported path modifier type: {modifier.type}"
        if modifier.type == "ReplacePrefixMatch" and (len(rule.matches) != 1
                                                      or rule.matches[0].path.type != "PathPrefix"):
            return Reason.UNSUPPORTED_VALUE, ("When using ReplacePrefixMatch, exactly one PathPrefix match must be "
                                        "specified")
    return None


def _backend(state: ClusterState, route: HTTPRoute, ref: BackendRef) -> ResolvedBackend:
    ns = ref.namespace or route.namespace
    key = f"{ns}/{ref.name}"

    def bad(reason: str, problem: str) -> ResolvedBackend:
        return ResolvedBackend(ref, ns, key, ref.port, ref.weight, reason, problem)

    if ref.group not in ("", "core"):
        return bad(Reason.INVALID_KIND,
                   "Group is invalid, only the core API group (specified by omitting the group field "
                   "or setting it to an empty string), multicluster.x-k8s.io and gateway.envoyproxy.io are supported")
    if ref.kind != "Service":
        return bad(Reason.INVALID_KIND,
                   "Kind is invalid, only Service, MCS ServiceImport and Envoy Gateway Backend are "
                   "supported" + (" (knetsim simulates Service backends only)" if ref.kind in ("ServiceImport",
                                                                                               "Backend") else ""))
    if not reference_permitted(ReferenceFrom.gateway_api(ROUTE_KIND, route.namespace),
                               ReferenceTo(ref.group, ref.kind, ns, ref.name), state.reference_grants.values()):
        return bad(Reason.REF_NOT_PERMITTED, f"Backend ref to Service {key} not permitted by any ReferenceGrant.")
    if ref.port is None:
        return bad(Reason.PORT_NOT_SPECIFIED,
                   "A valid port number corresponding to a port on the Service must be specified")
    svc = state.services.get(key)
    if svc is None:
        return bad(Reason.BACKEND_NOT_FOUND, f"service {key} not found")
    if svc.type == "ExternalName":
        return bad(Reason.UNSUPPORTED_VALUE,
                   f"Service {key} is of type ExternalName, which is not supported as a backend; "
                   "use an Envoy Gateway Backend resource with an FQDN endpoint instead")
    sp = next((p for p in svc.ports if p.port == ref.port and p.protocol == "TCP"), None)
    if sp is None:
        return bad(Reason.PORT_NOT_FOUND, f"TCP Port {ref.port} not found on Service {key}")
    return ResolvedBackend(ref, ns, key, ref.port, ref.weight, None, None, str(sp.target_port),
                           _ready_endpoints(state, svc, sp.name))


def _ready_endpoints(state: ClusterState, svc: Service, port_name: str) -> int:
    count = 0
    for es in state.slices_for(svc):
        if not any(p.name == port_name and p.port for p in es.ports):
            continue
        count += sum(len(e.addresses) for e in es.endpoints if e.ready)
    return count
