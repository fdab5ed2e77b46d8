"""``translate(state)``: the Gateway controller's one pass — routing tables and status from the same decisions.

Envoy Gateway's translator (``internal/gatewayapi/translator.go``) is the model, step by step:

1. GatewayClasses: the controller claims those naming a controllerName a profile of
   ``cluster/gatewayimplementations.py`` declares (Envoy Gateway's ``gateway.envoyproxy.io/gatewayclass-controller``
   and eight others) and accepts the oldest per controller (``cluster/gatewayinfra.class_verdicts``); each
   Gateway is translated as its class's implementation (``GatewayContext.implementation``: infrastructure,
   the features a route may use, open replies). Objects of other controllers get no status from knetsim
   (their own controller would write it).
2. Gateways of an accepted class, with the listeners of the ListenerSets they allow (``allowedListeners``;
   ListenerSets in precedence order: oldest first, then ``namespace/name``): each listener is validated,
   conflicts are resolved (the Gateway's own listeners win), and closing conditions set
   (``listeners.py``); the Gateway gets ``Accepted`` from its listeners, ``Programmed`` plus
   ``addresses`` from its proxy (the LoadBalancer Service and pods ``gatewayinfra`` created), and
   ``attachedListenerSets``; each ListenerSet its own status.
3. Routes of every kind (HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute, oldest first), per
   parentRef that names one of those Gateways or an attached ListenerSet: the listeners selected by
   ``sectionName``/``port`` (none: ``NoMatchingParent``), those that allow the route's kind and namespace
   (none: ``NotAllowedByListeners``), the rules (dropped rules: ``PartiallyInvalid``, or ``Accepted:
   False`` when none is left), the backendRefs (``ResolvedRefs: False`` with ``RefNotPermitted``,
   ``BackendNotFound``, ``InvalidKind``, ``InvalidBackendTLS``...) and the hostname intersection with
   each listener (HTTP, gRPC, TLS; none: ``NoMatchingListenerHostname``). Where the route attaches, the
   listener's ``attachedRoutes`` counts it and — if the listener is programmed — its rules join that
   listener's routing table (a TCP or UDP listener forwards to its oldest route only). A rule is never
   routed while its route is reported as not accepted there: both come from the same code.
4. BackendTLSPolicies (``backendtls.py``) are resolved before the routes and gain an ancestor for every
   route parentRef whose backends they cover.

Messages are Envoy Gateway's where it has one; condition types and reasons are ``conditions``'
constants, and ``grants.reference_permitted`` is the pure ReferenceGrant check. The translation never
changes the state: it is a fresh set of contexts, cached per (read-only) state.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from ..cluster.gatewayimplementations import (
    ENVOY_GATEWAY,
    IMPLEMENTATIONS,
    Implementation,
    channel_in_force,
    for_controller,
)
from ..cluster.gatewayimplementations import parameters_problem as impl_parameters_problem
from ..cluster.gatewayimplementations import proxy_service_name as impl_service_name
from ..cluster.gatewayinfra import (
    ClassVerdict,
    class_verdicts,
    proxy_labels,
    proxy_objects_namespace,
)
from ..cluster.state import ClusterState
from ..model import saferegex
from ..model.gatewayapi import (
    GROUP,
    BackendRef,
    Gateway,
    GatewayClass,
    GRPCRoute,
    GRPCRouteMatch,
    GRPCRouteRule,
    HTTPRoute,
    ListenerSet,
    ParentRef,
    RouteMatch,
    RouteRule,
    StreamRoute,
)
from ..model.kinds import BY_KIND, ROUTE_KINDS
from ..model.objects import Object, Service
from . import features, hostnames, listeners
from .backendtls import BackendTLS, Policies, PolicyContext, ancestor_ref
from .conditions import Conditions, Reason, Type
from .grants import ReferenceFrom, ReferenceTo, reference_permitted
from .listeners import ListenerContext, parse_selector

ROUTE_KIND = "HTTPRoute"
# Where the state keeps each route kind (their declarations: model/apis/catalog.py).
ROUTE_COLLECTIONS = {kind: BY_KIND[kind].collection for kind in ROUTE_KINDS}
SUPPORTED_FILTERS = ("RequestHeaderModifier", "ResponseHeaderModifier", "RequestRedirect", "URLRewrite",
                     "RequestMirror", "CORS")
GRPC_FILTERS = ("RequestHeaderModifier", "ResponseHeaderModifier", "RequestMirror")
REDIRECT_CODES = (301, 302, 303, 307, 308)
INVALID_BACKEND_TLS = "InvalidBackendTLS"  # Envoy Gateway's RouteReasonInvalidBackendTLS
INVALID_RULE = "InvalidRule"  # Envoy Gateway's reason for a TCP/UDPRoute without exactly one rule

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
    port_name: str = ""
    protocol: str = "TCP"
    tls: BackendTLS | None = None  # a BackendTLSPolicy makes the proxy originate TLS

    @property
    def valid(self) -> bool:
        return self.reason is None

    def describe(self) -> str:
        return f"{self.service}:{self.port if self.port is not None else '<no port>'}"


@dataclass(frozen=True, slots=True)
class RouteEntry:
    """One match of one HTTPRoute rule, attached to one listener: a row of the listener's routing table."""

    route: HTTPRoute
    rule: RouteRule
    match_index: int
    match: RouteMatch
    hostnames: tuple[str, ...]  # the route's hostnames as intersected with the listener's; () = every host
    backends: tuple[ResolvedBackend, ...]


@dataclass(frozen=True, slots=True)
class GRPCEntry:
    """One match of one GRPCRoute rule on one listener."""

    route: GRPCRoute
    rule: GRPCRouteRule
    match_index: int
    match: GRPCRouteMatch
    hostnames: tuple[str, ...]
    backends: tuple[ResolvedBackend, ...]


@dataclass(frozen=True, slots=True)
class StreamEntry:
    """A TLSRoute, TCPRoute or UDPRoute forwarding a listener's connections (TLS: those whose SNI matches)."""

    route: StreamRoute
    hostnames: tuple[str, ...]  # SNI names (TLSRoute, intersected with the listener's); () = any
    backends: tuple[ResolvedBackend, ...]


@dataclass(slots=True)
class GatewayContext:
    gateway: Gateway
    listeners: list[ListenerContext] = field(default_factory=list)
    conditions: Conditions = field(default_factory=Conditions)
    addresses: list[str] = field(default_factory=list)
    proxy_service: str | None = None  # namespace/name of the LoadBalancer Service
    proxy_pods: list[str] = field(default_factory=list)  # ready proxy pods
    proxy_pods_total: int = 0
    attached_listener_sets: int = 0
    listener_sets: list[str] = field(default_factory=list)  # namespace/name of the ListenerSets naming it
    # The certificate the proxy presents to a backend it speaks TLS to (spec.tls.backend), once it resolves.
    backend_client_chain: tuple[Any, ...] = ()
    # The implementation its GatewayClass names (cluster/gatewayimplementations.py): infrastructure, features,
    # the replies the spec leaves open.
    implementation: Implementation = ENVOY_GATEWAY

    def listener(self, name: str) -> ListenerContext | None:
        return next((lc for lc in self.listeners if lc.name == name and not lc.from_listener_set), None)

    @property
    def own_listeners(self) -> list[ListenerContext]:
        return [lc for lc in self.listeners if not lc.from_listener_set]


@dataclass(slots=True)
class ListenerSetContext:
    listener_set: ListenerSet
    gateway: str | None  # namespace/name of the Gateway it names, when knetsim's controller serves it
    conditions: Conditions = field(default_factory=Conditions)
    listeners: list[ListenerContext] = field(default_factory=list)

    @property
    def attached(self) -> bool:
        return bool(self.listeners) and self.conditions.is_true(Type.ACCEPTED)


@dataclass(slots=True)
class ParentStatus:
    ref: ParentRef
    gateway: str  # namespace/name of the Gateway (also for a ListenerSet parent)
    conditions: Conditions = field(default_factory=Conditions)
    listeners: list[str] = field(default_factory=list)  # listener names the route attached to
    listener_set: str | None = None  # namespace/name, when the parentRef names a ListenerSet


@dataclass(slots=True)
class RouteContext:
    route: Any  # HTTPRoute | GRPCRoute | StreamRoute
    parents: list[ParentStatus] = field(default_factory=list)
    dropped: dict[int, tuple[str, str]] = field(default_factory=dict)  # rule index → (reason, message)
    backends: dict[int, tuple[ResolvedBackend, ...]] = field(default_factory=dict)  # rule index → backends
    unclaimed: list[tuple[ParentRef, str]] = field(default_factory=list)  # parentRefs knetsim does not serve
    shadowed: list[str] = field(default_factory=list)  # TCP/UDP listeners an older route already forwards

    @property
    def kind(self) -> str:
        return str(self.route.kind)


@dataclass(slots=True)
class Translation:
    classes: dict[str, tuple[GatewayClass, ClassVerdict]]
    gateways: dict[str, GatewayContext]
    routes: dict[tuple[str, str], RouteContext]  # (kind, namespace/name)
    listener_sets: dict[str, ListenerSetContext] = field(default_factory=dict)
    policies: dict[str, PolicyContext] = field(default_factory=dict)
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    def route(self, kind: str, key: str) -> RouteContext | None:
        return self.routes.get((kind, key))

    def routes_of(self, kind: str) -> list[RouteContext]:
        return [rc for (k, _), rc in self.routes.items() if k == kind]

    def parent_statuses(self, gateway: str, kind: str | None = ROUTE_KIND) -> list[tuple[RouteContext, ParentStatus]]:
        return [(rc, ps) for (k, _), rc in self.routes.items() if kind is None or k == kind
                for ps in rc.parents if ps.gateway == gateway]


_CACHE: weakref.WeakKeyDictionary[ClusterState, Translation] = weakref.WeakKeyDictionary()


def translate(state: ClusterState) -> Translation:
    """The controller's view of ``state`` (computed once per state: the state is read-only, so the cache — a
    module-level weak map, gone with the state — never serves a stale answer)."""
    cached = _CACHE.get(state)
    if cached is None:
        cached = _translate(state, datetime.now(UTC))
        _CACHE[state] = cached
    return cached


def _age(obj: Object) -> tuple[bool, str, str, str]:
    """Oldest first, then namespace/name: the order Envoy Gateway's provider sorts objects in."""
    ts = obj.meta.creation_timestamp
    return (ts is None, ts or "", obj.namespace, obj.name)


def parameters_problem(state: ClusterState, impl: Implementation, ref: Mapping[str, Any] | None,
                       namespace: str | None) -> str | None:
    """Why a ``parametersRef`` is invalid, None when it is absent or resolves
    (``cluster.gatewayimplementations.parameters_problem``, the referent looked up among the kept objects)."""
    return impl_parameters_problem(impl, ref, namespace,
                                   lambda kind, ns, name: listeners.find_object(state, kind, ns, name) is not None)


def _class_parameters(state: ClusterState, verdicts: dict[str, ClassVerdict]) -> dict[str, ClassVerdict]:
    """The accepted classes whose ``parametersRef`` does not resolve are not accepted (InvalidParameters)."""
    out = dict(verdicts)
    for name, verdict in verdicts.items():
        gc = state.gateway_classes.get(name)
        if gc is None or not verdict.accepted or verdict.implementation is None:
            continue
        ref = gc.parameters_ref
        problem = parameters_problem(state, verdict.implementation, ref,
                                     str(ref.get("namespace") or "") or None if ref else None)
        if problem is not None:
            out[name] = ClassVerdict(False, "InvalidParameters", problem, True, verdict.implementation)
    return out


def _translate(state: ClusterState, now: datetime) -> Translation:
    verdicts = _class_parameters(state, class_verdicts(list(state.gateway_classes.values())))
    # Each implementation as it runs with the CRDs in force (a report per channel: Cilium).
    channel = channel_in_force(o.raw for o in state.objects_of("CustomResourceDefinition"))
    verdicts = {name: replace(v, implementation=v.implementation.for_channel(channel))
                if v.implementation is not None else v for name, v in verdicts.items()}
    classes = {name: (state.gateway_classes[name], verdicts[name]) for name in sorted(state.gateway_classes)}
    gateways: dict[str, GatewayContext] = {}
    for key in sorted(state.gateways):
        gw = state.gateways[key]
        verdict = verdicts.get(gw.class_name)
        if verdict is None or not verdict.accepted:
            continue  # not ours, or our class was not accepted: Envoy Gateway leaves it alone
        gateways[key] = GatewayContext(gw, [ListenerContext(li, gw) for li in gw.listeners],
                                       implementation=verdict.implementation or ENVOY_GATEWAY)
    frontends: dict[str, dict[str | None, listeners.FrontendValidation]] = {k: {} for k in gateways}
    for key, gctx in gateways.items():
        for lc in gctx.listeners:
            _validate(state, gctx, lc, now, frontends[key])
    sets = _listener_sets(state, gateways)
    for key, gctx in gateways.items():
        for lc in gctx.listeners:
            if lc.from_listener_set:
                _validate(state, gctx, lc, now, frontends[key])
        listeners.conflicts(gctx.listeners)
        for lc in gctx.listeners:
            listeners.finish(lc)
        listeners.overlapping_tls(gctx.listeners)
        _gateway_status(state, gctx, frontends[key])
    for lsc in sets.values():
        _listener_set_status(lsc, gateways)
    policies = Policies(state, now)
    routes: dict[tuple[str, str], RouteContext] = {}
    for kind, collection in ROUTE_COLLECTIONS.items():
        objs: Mapping[str, Any] = getattr(state, collection)
        for route in sorted(objs.values(), key=_age):
            routes[(kind, route.key)] = _route(state, route, gateways, sets, policies)
    # A conflicted policy reports the ancestors of the policy it yields to (ProcessBackendTLSPolicyStatus).
    for pctx in policies.contexts.values():
        if pctx.conflict is not None and pctx.conflict in policies.contexts:
            for ancestor in policies.contexts[pctx.conflict].ancestors:
                pctx.add_ancestor(ancestor.ref)
    return Translation(classes, gateways, dict(sorted(routes.items())), sets, policies.contexts, now)


def _validate(state: ClusterState, gctx: GatewayContext, lc: ListenerContext, now: datetime,
              frontends: dict[str | None, listeners.FrontendValidation]) -> None:
    if lc.protocol == "HTTPS":
        # Frontend (client certificate) validation applies to HTTPS listeners only, per the API contract.
        lc.frontend = listeners.frontend_for(state, gctx.gateway, lc.port, now, frontends)
    listeners.validate(state, lc, now)
    # A protocol whose route kind the implementation's report does not claim (GKE: HTTP only; Traefik: no
    # TCPRoute) is one it does not serve: the listener is refused as an unknown protocol would be.
    impl = gctx.implementation
    kind = {"TLS": "TLSRoute", "TCP": "TCPRoute", "UDP": "UDPRoute"}.get(lc.protocol)
    if kind is not None and lc.spec_valid and not impl.serves_kind(kind):
        lc.supported_kinds = []
        lc.conditions.set(Type.ACCEPTED, False, Reason.UNSUPPORTED_PROTOCOL,
                          f"Protocol {lc.protocol} is unsupported by {impl.title} {impl.report.version} (its "
                          f"conformance report claims no {kind}).")
        lc.spec_valid = False


# --- gateways and ListenerSets -------------------------------------------------------------------


def _gateway_status(state: ClusterState, gctx: GatewayContext,
                    frontends: dict[str | None, listeners.FrontendValidation]) -> None:
    gw = gctx.gateway
    own = gctx.own_listeners
    rejected = sorted(lc.name for lc in own if lc.conditions.is_false(Type.ACCEPTED))
    impl = gctx.implementation
    if not rejected:
        gctx.conditions.set(Type.ACCEPTED, True, Reason.ACCEPTED, f"The Gateway has been scheduled by {impl.title}")
    elif len(rejected) < len(own):
        gctx.conditions.set(Type.ACCEPTED, True, Reason.LISTENERS_NOT_VALID,
                            f"Listeners not valid: {', '.join(rejected)}")
    else:
        gctx.conditions.set(Type.ACCEPTED, False, Reason.LISTENERS_NOT_VALID,
                            f"No listeners are valid: {', '.join(rejected)}")
    spec_infra = (gw.raw.get("spec") or {}).get("infrastructure") if isinstance(gw.raw, Mapping) else None
    params = spec_infra.get("parametersRef") if isinstance(spec_infra, Mapping) else None
    problem = parameters_problem(state, impl, params if isinstance(params, Mapping) else None, gw.namespace)
    if problem is not None:
        # gateway_types.go: the Gateway SHOULD be rejected; nothing is programmed for it.
        gctx.conditions.set(Type.ACCEPTED, False, "InvalidParameters", problem)
        gctx.conditions.set(Type.PROGRAMMED, False, Reason.INVALID, problem)
        return
    infra = impl.infrastructure
    if infra.naming == "none":
        # A load balancer outside the cluster (GKE): programmed by the cloud, at the address asked for if any.
        gctx.addresses = [a.value for a in gw.addresses if a.type == "IPAddress"]
        gctx.conditions.set(Type.PROGRAMMED, True, Reason.PROGRAMMED,
                            f"Programmed: {impl.proxy_word} outside the cluster serves the Gateway")
        if gw.frontend_validation or gw.backend_client_certificate is not None:
            _gateway_tls_status(state, gctx, frontends)
        return
    namespace = proxy_objects_namespace(impl, gw.namespace)
    name = impl_service_name(impl, gw.namespace, gw.name, gw.class_name)
    svc = state.services.get(f"{namespace}/{name}")
    if svc is not None:
        gctx.proxy_service = svc.key
        gctx.addresses = list(svc.load_balancer_ips)
    if infra.shared_proxy_namespace is not None:
        pod_namespace, wanted = infra.shared_proxy_namespace, dict(infra.shared_proxy_labels)
    else:
        pod_namespace, wanted = namespace, proxy_labels(impl, gw)
    pods = [p for p in state.pods_in(pod_namespace) if all(p.labels.get(k) == v for k, v in wanted.items())]
    gctx.proxy_pods_total = len(pods)
    gctx.proxy_pods = [p.key for p in pods if p.ready and p.phase == "Running"]
    replicas = "envoy" if impl.key == ENVOY_GATEWAY.key else impl.proxy_word
    if not gctx.addresses:
        gctx.conditions.set(Type.PROGRAMMED, False, Reason.ADDRESS_NOT_ASSIGNED,
                            "No addresses have been assigned to the Gateway")
    elif not gctx.proxy_pods:
        gctx.conditions.set(Type.PROGRAMMED, False, Reason.NO_RESOURCES, f"{impl.proxy_word} replicas unavailable")
    else:
        gctx.conditions.set(Type.PROGRAMMED, True, Reason.PROGRAMMED, f"Address assigned to the Gateway, "
                            f"{len(gctx.proxy_pods)}/{gctx.proxy_pods_total} {replicas} replicas available")
    if gw.frontend_validation or gw.backend_client_certificate is not None:
        _gateway_tls_status(state, gctx, frontends)


def _gateway_tls_status(state: ClusterState, gctx: GatewayContext,
                        frontends: dict[str | None, listeners.FrontendValidation]) -> None:
    """``ProcessGatewayTLS``: the Gateway's own ResolvedRefs for ``spec.tls``."""
    gw = gctx.gateway
    ok = True
    for validation in gw.frontend_validation:
        resolved = frontends.get(validation.path) or listeners.frontend_for(state, gw, validation.port,
                                                                            datetime.now(UTC), frontends)
        if resolved is not None and resolved.error is not None:
            what = "default frontend CA certs" if validation.port is None else "frontend CA certs"
            gctx.conditions.set(Type.RESOLVED_REFS, False, "InvalidParameters",
                                f"Failed to get {what} for gateway: {resolved.error}")
            ok = False
    if any(v.mode == "AllowInsecureFallback" for v in gw.frontend_validation):
        gctx.conditions.set(Type.INSECURE_FRONTEND_VALIDATION_MODE, True, Reason.CONFIGURATION_CHANGED,
                            "Gateway is using AllowInsecureFallback frontend validation mode.")
    ref = gw.backend_client_certificate
    if ref is not None:
        ns = ref.namespace or gw.namespace
        if ref.kind != "Secret" or ref.group != "":
            what = f"group: {ref.group}" if ref.kind == "Secret" else f"kind: {ref.kind}"
            gctx.conditions.set(Type.RESOLVED_REFS, False, Reason.INVALID_CLIENT_CERTIFICATE_REF,
                                "Invalid backend client certificate reference for gateway: invalid client "
                                f"certificate reference {what}")
            ok = False
        elif ns != gw.namespace and not reference_permitted(ReferenceFrom.gateway_api("Gateway", gw.namespace),
                                                            ReferenceTo.core("Secret", ns, ref.name),
                                                            state.reference_grants.values()):
            gctx.conditions.set(Type.RESOLVED_REFS, False, Reason.REF_NOT_PERMITTED,
                                "invalid cross-namespace reference to backend client certificate")
            ok = False
        else:
            secret = listeners.find_object(state, "Secret", ns, ref.name)
            crt, key = (b"", b"") if secret is None else _tls_pair(secret)
            if secret is None:
                gctx.conditions.set(Type.RESOLVED_REFS, False, Reason.INVALID_CLIENT_CERTIFICATE_REF,
                                    "failed to get backend client certs for gateway")
                ok = False
            elif not crt or not key:
                gctx.conditions.set(Type.RESOLVED_REFS, False, Reason.INVALID_CLIENT_CERTIFICATE_REF,
                                    f"invalid backend client cert secret for gateway: secret {ns}/{ref.name} must "
                                    "contain 'tls.crt' and 'tls.key' fields")
                ok = False
            else:
                gctx.backend_client_chain = _client_chain(f"{ns}/{ref.name}", crt, key)
    if ok:
        gctx.conditions.set(Type.RESOLVED_REFS, True, Reason.RESOLVED_REFS,
                            "Successfully resolved all TLS references for the gateway")


def _tls_pair(secret: Object) -> tuple[bytes, bytes]:
    from .certs import tls_secret_pair

    return tls_secret_pair(secret.raw)


def _client_chain(name: str, crt: bytes, key: bytes) -> tuple[Any, ...]:
    """The chain of a backend client certificate Secret; () where it does not parse or its key does not match
    (Envoy then presents none)."""
    from .certs import CertificateError, serving_pair

    try:
        return tuple(serving_pair(name, crt, key, None).chain)
    except CertificateError:
        return ()


def _listener_set_allowed(state: ClusterState, gw: Gateway, ls: ListenerSet) -> bool:
    """``isListenerSetAllowed``: ``allowedListeners`` (default: none) decides which namespaces may attach."""
    how = gw.allowed_listeners_from
    if how == "All":
        return True
    if how == "Same":
        return gw.namespace == ls.namespace
    if how == "Selector" and gw.allowed_listeners_selector is not None:
        selector, _problem = parse_selector(gw.allowed_listeners_selector)
        return selector is not None and state.namespaces.get(ls.namespace) is not None and selector.matches(
            state.namespace_labels(ls.namespace))
    return False


def _listener_sets(state: ClusterState, gateways: dict[str, GatewayContext]) -> dict[str, ListenerSetContext]:
    """``ProcessListenerSets``: attach the allowed ListenerSets' listeners to their Gateways, oldest first."""
    out: dict[str, ListenerSetContext] = {}
    for ls in sorted(state.listener_sets.values(), key=_age):
        parent = ls.parent
        if parent is None or parent.group != GROUP or parent.kind != "Gateway":
            out[ls.key] = ListenerSetContext(ls, None)
            continue
        key = f"{parent.namespace or ls.namespace}/{parent.name}"
        gctx = gateways.get(key)
        if gctx is not None and not gctx.implementation.supports("ListenerSet"):
            gctx = None  # its report claims no ListenerSet (Traefik, Kong, GKE): it never reads one
        lsc = ListenerSetContext(ls, key if gctx is not None else None)
        out[ls.key] = lsc
        if gctx is None:
            continue  # not a Gateway of knetsim's controller: no status from it
        gctx.listener_sets.append(ls.key)
        own = gctx.own_listeners
        if own and all(lc.conditions.is_false(Type.ACCEPTED) for lc in own):
            message = f"Parent Gateway {key} not accepted"
            lsc.conditions.set(Type.ACCEPTED, False, Reason.PARENT_NOT_ACCEPTED, message)
            lsc.conditions.set(Type.PROGRAMMED, False, Reason.PROGRAMMED, "Not Programmed")
            continue
        if not _listener_set_allowed(state, gctx.gateway, ls):
            lsc.conditions.set(Type.ACCEPTED, False, Reason.NOT_ALLOWED,
                               f"ListenerSet attachment from namespace {ls.namespace} not allowed by Gateway {key}")
            lsc.conditions.set(Type.PROGRAMMED, False, Reason.NOT_ALLOWED, "Not Programmed")
            continue
        for listener in ls.listeners:
            lc = ListenerContext(listener, gctx.gateway, ls)
            lsc.listeners.append(lc)
            gctx.listeners.append(lc)
    return out


def _listener_set_status(lsc: ListenerSetContext, gateways: dict[str, GatewayContext]) -> None:
    """``ProcessListenerSetStatus``: Accepted/Programmed from the entries, and the Gateway's count."""
    if lsc.gateway is None or lsc.conditions.is_false(Type.ACCEPTED):
        return
    accepted = [lc.conditions.is_true(Type.ACCEPTED) for lc in lsc.listeners]
    programmed = [lc.conditions.is_true(Type.PROGRAMMED) for lc in lsc.listeners]
    if accepted and all(accepted):
        lsc.conditions.set(Type.ACCEPTED, True, Reason.ACCEPTED, "All listeners are accepted")
    elif any(accepted):
        lsc.conditions.set(Type.ACCEPTED, True, Reason.LISTENERS_NOT_VALID, "Some listeners are invalid")
    else:
        lsc.conditions.set(Type.ACCEPTED, False, Reason.LISTENERS_NOT_VALID, "No listeners are accepted")
    if programmed and all(programmed):
        lsc.conditions.set(Type.PROGRAMMED, True, Reason.PROGRAMMED, "All listeners are programmed")
    elif any(programmed):
        lsc.conditions.set(Type.PROGRAMMED, True, Reason.PROGRAMMED, "Some listeners are not programmed")
    else:
        lsc.conditions.set(Type.PROGRAMMED, False, Reason.LISTENERS_NOT_VALID, "No listeners are programmed")
    if lsc.conditions.is_true(Type.ACCEPTED):
        gateways[lsc.gateway].attached_listener_sets += 1


# --- routes -----------------------------------------------------------------------------------------


def _route(state: ClusterState, route: Any, gateways: Mapping[str, GatewayContext],
           sets: Mapping[str, ListenerSetContext], policies: Policies) -> RouteContext:
    rc = RouteContext(route)
    _rules(state, rc, policies)
    seen: set[tuple[object, ...]] = set()
    for ref in route.parent_refs:
        ns = ref.namespace or route.namespace
        key = f"{ns}/{ref.name}"
        if ref.group != GROUP or ref.kind not in ("Gateway", "ListenerSet"):
            rc.unclaimed.append((ref, f"parentRef kind {ref.group or 'core'}/{ref.kind} is not a Gateway or a "
                                      "ListenerSet; knetsim simulates those parents only"))
            continue
        if ref.kind == "ListenerSet":
            lsc = sets.get(key)
            if lsc is None or lsc.gateway is None or not lsc.listeners:
                rc.unclaimed.append((ref, listener_set_unclaimed_reason(state, key, lsc)))
                continue
            gctx = gateways[lsc.gateway]
            candidates = lsc.listeners
        else:
            gctx = gateways.get(key)
            if gctx is None:
                rc.unclaimed.append((ref, unclaimed_reason(state, key)))
                continue
            candidates = gctx.own_listeners
        ident = (ref.kind, key, ref.section_name, ref.port)
        if ident in seen:
            continue  # the same parent twice: one status entry
        seen.add(ident)
        ps = _parent(state, rc, ref, gctx, candidates)
        if ref.kind == "ListenerSet":
            ps.listener_set = key
        rc.parents.append(ps)
    _policy_ancestors(rc, policies)
    return rc


def unclaimed_reason(state: ClusterState, key: str) -> str:
    gw = state.gateways.get(key)
    if gw is None:
        return f"Gateway {key} does not exist"
    gc = state.gateway_classes.get(gw.class_name)
    if gc is None:
        return f"Gateway {key} names GatewayClass {gw.class_name!r}, which does not exist: no controller serves it"
    if for_controller(gc.controller_name) is None:
        return (f"Gateway {key} belongs to GatewayClass {gc.name} of controller {gc.controller_name!r}, which knetsim "
                f"does not simulate (it simulates {', '.join(i.title for i in IMPLEMENTATIONS)})")
    return (f"Gateway {key}'s GatewayClass {gc.name} is not accepted (another older GatewayClass names the same "
            "controller)")


def listener_set_unclaimed_reason(state: ClusterState, key: str, lsc: ListenerSetContext | None) -> str:
    if lsc is None:
        return f"ListenerSet {key} does not exist"
    parent = lsc.listener_set.parent
    if lsc.gateway is None:
        if parent is None:
            return f"ListenerSet {key} has no parentRef"
        gw_key = f"{parent.namespace or lsc.listener_set.namespace}/{parent.name}"
        gw = state.gateways.get(gw_key)
        gc = state.gateway_classes.get(gw.class_name) if gw is not None else None
        impl = for_controller(gc.controller_name) if gc is not None else None
        if impl is not None and not impl.supports("ListenerSet"):
            return (f"ListenerSet {key} names Gateway {gw_key}, whose implementation {impl.title} "
                    f"{impl.report.version} does not support ListenerSet (its conformance report does not claim it)")
        return f"ListenerSet {key} names Gateway {gw_key}: {unclaimed_reason(state, gw_key)}"
    accepted = lsc.conditions.get(Type.ACCEPTED)
    why = f"{accepted.reason}: {accepted.message}" if accepted is not None else "it has no listeners"
    return f"ListenerSet {key} is not attached to Gateway {lsc.gateway} ({why})"


def _parent(state: ClusterState, rc: RouteContext, ref: ParentRef, gctx: GatewayContext,
            candidates: list[ListenerContext]) -> ParentStatus:
    ps = ParentStatus(ref, gctx.gateway.key)
    route, kind = rc.route, rc.kind
    selected = [lc for lc in candidates if (ref.section_name is None or lc.name == ref.section_name)
                and (ref.port is None or lc.port == ref.port)]
    allowed = [lc for lc in selected if lc.allows_kind(kind) and lc.allows_namespace(state, route.namespace)]
    if not selected:
        ps.conditions.set(Type.ACCEPTED, False, Reason.NO_MATCHING_PARENT, "No listeners match this parent ref")
    elif not allowed:
        ps.conditions.set(Type.ACCEPTED, False, Reason.NOT_ALLOWED_BY_LISTENERS,
                          "No listeners included by this parent ref allowed this attachment.")
    else:
        ps.conditions.set(Type.ACCEPTED, True, Reason.ACCEPTED, "Route is accepted")
    if kind in ("TCPRoute", "UDPRoute") and len(route.rules) != 1 and not ps.conditions.is_false(Type.ACCEPTED):
        ps.conditions.set(Type.ACCEPTED, False, INVALID_RULE, "One and only one rule is supported")
        return ps
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
        where = f"route rule {rule.index} backendRef {b.ref.index}" if kind in ("HTTPRoute", "GRPCRoute") \
            else f"backendRef {b.ref.index}"
        ps.conditions.set(Type.RESOLVED_REFS, False, b.reason or "", f"Failed to process {where}: {b.problem}")
    else:
        ps.conditions.set(Type.RESOLVED_REFS, True, Reason.RESOLVED_REFS,
                          "Resolved all the Object references for the Route")
    if not ps.conditions.is_false(Type.ACCEPTED):
        _refuse_unsupported(state, ps, route, gctx.implementation)
    if ps.conditions.is_false(Type.ACCEPTED):
        return ps
    attached: list[tuple[ListenerContext, tuple[str, ...]]] = []
    for lc in allowed:
        if kind in ("TCPRoute", "UDPRoute"):
            attached.append((lc, ()))
            continue
        hosts = _intersection(lc.hostname, route.hostnames)
        if hosts is not None:
            attached.append((lc, hosts))
    if not attached:
        ps.conditions.set(Type.ACCEPTED, False, Reason.NO_MATCHING_LISTENER_HOSTNAME,
                          f"There were no hostname intersections between the {kind} and this parent ref's "
                          "Listener(s).")
        return ps
    for lc, hosts in attached:
        lc.attached_routes += 1
        ps.listeners.append(lc.name)
        if not lc.programmed:
            continue
        _attach(rc, lc, hosts, live_rules)
    return ps


def _refuse_unsupported(state: ClusterState, ps: ParentStatus, route: Any, impl: Implementation) -> None:
    """An extended feature the implementation's report does not claim: ``Accepted: False``, ``UnsupportedValue``
    (the API's rule for an unsupported filter type or redirect value, applied to every extended feature)."""
    missing = features.refused(features.route_features(route, state.services), impl)
    if missing:
        used = ", ".join(f"{u.feature} ({u.where})" for u in missing)
        ps.conditions.set(Type.ACCEPTED, False, Reason.UNSUPPORTED_VALUE,
                          f"{impl.title} {impl.report.version} does not support {used}")


def _attach(rc: RouteContext, lc: ListenerContext, hosts: tuple[str, ...], live_rules: list[Any]) -> None:
    kind = rc.kind
    if kind == "HTTPRoute":
        for rule in live_rules:
            for i, match in enumerate(rule.matches):
                lc.entries.append(RouteEntry(rc.route, rule, i, match, hosts, rc.backends.get(rule.index, ())))
    elif kind == "GRPCRoute":
        for rule in live_rules:
            for i, gmatch in enumerate(rule.matches):
                lc.grpc_entries.append(GRPCEntry(rc.route, rule, i, gmatch, hosts, rc.backends.get(rule.index, ())))
    elif kind == "TLSRoute":
        backends = tuple(b for rule in live_rules for b in rc.backends.get(rule.index, ()))
        lc.streams.append(StreamEntry(rc.route, hosts, backends))
    elif lc.streams:
        # One route per TCP/UDP listener (Envoy Gateway keeps the oldest; the others stay Accepted).
        rc.shadowed.append(lc.name)
    else:
        lc.streams.append(StreamEntry(rc.route, (), rc.backends.get(live_rules[0].index, ()) if live_rules else ()))


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


def _rules(state: ClusterState, rc: RouteContext, policies: Policies) -> None:
    kind = rc.kind
    for rule in rc.route.rules:
        problem = _http_rule_problem(rule) if kind == "HTTPRoute" else _grpc_rule_problem(rule) \
            if kind == "GRPCRoute" else None
        if problem is not None:
            rc.dropped[rule.index] = problem
            continue
        rc.backends[rule.index] = tuple(_backend(state, rc.route, b, policies) for b in rule.backend_refs)


def _http_rule_problem(rule: RouteRule) -> tuple[str, str] | None:
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


def _grpc_rule_problem(rule: GRPCRouteRule) -> tuple[str, str] | None:
    for f in rule.filters:
        if f.type not in GRPC_FILTERS:
            return Reason.UNSUPPORTED_VALUE, f"Unsupported filter type: {f.type}"
    for b in rule.backend_refs:
        if any(f.type not in ("RequestHeaderModifier", "ResponseHeaderModifier") for f in b.filters):
            return Reason.UNSUPPORTED_VALUE, ("Specific filter is not supported within BackendRef, only "
                                              "RequestHeaderModifier and ResponseHeaderModifier are supported")
    for match in rule.matches:
        patterns = [h.value for h in match.headers if h.type == "RegularExpression"]
        if match.method is not None and match.method.type == "RegularExpression":
            patterns += [p for p in (match.method.service, match.method.method) if p]
        for pattern in patterns:
            if saferegex.compiled(pattern) is None:
                return Reason.UNSUPPORTED_VALUE, (f"failed to process route rule {rule.index}: error parsing regexp: "
                                                  f"invalid regular expression {pattern!r}")
    return None


def resolve_backend(state: ClusterState, route: Any, ref: BackendRef) -> ResolvedBackend:
    """A backendRef outside a rule's ``backendRefs`` (a RequestMirror filter's) resolved as a rule's would be."""
    return _backend(state, route, ref, Policies(state, translate(state).now))


def _backend(state: ClusterState, route: Any, ref: BackendRef, policies: Policies) -> ResolvedBackend:
    ns = ref.namespace or route.namespace
    key = f"{ns}/{ref.name}"
    protocol = "UDP" if route.kind == "UDPRoute" else "TCP"

    def bad(reason: str, problem: str) -> ResolvedBackend:
        return ResolvedBackend(ref, ns, key, ref.port, ref.weight, reason, problem, protocol=protocol)

    if ref.group not in ("", "core"):
        return bad(Reason.INVALID_KIND, "Group is invalid, only the core API group (specified by omitting the group "
                   "field or setting it to an empty string), multicluster.x-k8s.io and gateway.envoyproxy.io are "
                   "supported")
    if ref.kind != "Service":
        return bad(Reason.INVALID_KIND, "Kind is invalid, only Service, MCS ServiceImport and Envoy Gateway Backend "
                   "are supported" + (" (knetsim simulates Service backends only)" if ref.kind in ("ServiceImport",
                                                                                                  "Backend") else ""))
    if not reference_permitted(ReferenceFrom.gateway_api(route.kind, route.namespace),
                               ReferenceTo(ref.group, ref.kind, ns, ref.name), state.reference_grants.values()):
        return bad(Reason.REF_NOT_PERMITTED, f"Backend ref to Service {key} not permitted by any ReferenceGrant.")
    if ref.port is None:
        return bad(Reason.PORT_NOT_SPECIFIED,
                   "A valid port number corresponding to a port on the Service must be specified")
    svc = state.services.get(key)
    if svc is None:
        return bad(Reason.BACKEND_NOT_FOUND, f"service {key} not found")
    if svc.type == "ExternalName":
        return bad(Reason.UNSUPPORTED_VALUE, f"Service {key} is of type ExternalName, which is not supported as a "
                   "backend; use an Envoy Gateway Backend resource with an FQDN endpoint instead")
    sp = next((p for p in svc.ports if p.port == ref.port and p.protocol == protocol), None)
    if sp is None:
        return bad(Reason.PORT_NOT_FOUND, f"{protocol} Port {ref.port} not found on Service {key}")
    tls = None
    if ref.weight > 0 and route.kind != "UDPRoute":
        policy = policies.for_backend(ns, ref.name, sp.name)
        if policy is not None and policy.error is not None and policy.conflict is None:
            return ResolvedBackend(ref, ns, key, ref.port, ref.weight, INVALID_BACKEND_TLS, policy.error[2],
                                   str(sp.target_port), _ready_endpoints(state, svc, sp.name), sp.name, protocol)
        if policy is not None and policy.conflict is None:
            tls = policy.bundle
    return ResolvedBackend(ref, ns, key, ref.port, ref.weight, None, None, str(sp.target_port),
                           _ready_endpoints(state, svc, sp.name), sp.name, protocol, tls)


def _ready_endpoints(state: ClusterState, svc: Service, port_name: str) -> int:
    count = 0
    for es in state.slices_for(svc):
        if not any(p.name == port_name and p.port for p in es.ports):
            continue
        count += sum(len(e.addresses) for e in es.endpoints if e.ready)
    return count


def _policy_ancestors(rc: RouteContext, policies: Policies) -> None:
    """Every parentRef of the route becomes an ancestor of the policies its backends fall under."""
    covered: list[PolicyContext] = []
    for rule in rc.route.rules:
        for b in rc.backends.get(rule.index, ()):
            if b.reason not in (None, INVALID_BACKEND_TLS) or b.weight == 0:
                continue  # no Service port was resolved: no policy can apply
            policy = policies.for_backend(b.namespace, b.ref.name, b.port_name)
            if policy is not None and policy not in covered:
                covered.append(policy)
    for policy in covered:
        for ps in rc.parents:
            policy.add_ancestor(ancestor_ref(ps.ref))
