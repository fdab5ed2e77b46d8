"""``route_grpc(state, gateway, call)``: which GRPCRoute rule and backend a Gateway gives one gRPC call.

A gRPC call is an HTTP/2 POST of ``/<service>/<method>`` with ``content-type: application/grpc``. It
reaches the Gateway on an HTTP listener (cleartext HTTP/2, h2c) or, over TLS, an HTTPS listener (the
handshake of ``handshake.py`` first). Then, as the API specifies (GRPCRoute, GEP-1016):

1. the listener whose hostname matches the ``:authority`` most specifically (listener isolation);
2. every match of every GRPCRoute rule attached there, filtered by the route's hostnames, the method
   match (``Exact``: the service and/or method named; ``RegularExpression``: full matches) and the
   header matches; a rule without matches takes every call;
3. precedence: the most characters in a matching non-wildcard hostname, then in any matching
   hostname, then in the matching service, then in the method, then the most header matches; ties go
   to the oldest route, then ``namespace/name``, then the first rule and match;
4. the winning rule's backend by weight, its filters applied to the request metadata.

No GRPCRoute rule matches: Envoy Gateway translates HTTPRoute and GRPCRoute rules into one route table,
so an HTTPRoute rule matching ``POST /<service>/<method>`` takes the call (knetsim then answers with
the HTTP router's result); else Envoy answers HTTP 404, which a gRPC client reports as status 12
UNIMPLEMENTED. 500 is 13 INTERNAL, 503 is 14 UNAVAILABLE (the gRPC mapping of HTTP statuses).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..cluster.state import ClusterState
from ..model import saferegex
from ..model.gatewayapi import GRPCRouteMatch
from ..model.http import HTTPRequest, HTTPRequestError, plain
from . import envoypolicies, extensions, hostnames, resilience
from .backendtls import BackendHandshake
from .handshake import TLSHandshake, handshake
from .listeners import ListenerContext
from .matching import apply_header_modifier, hostname_rank
from .mirrors import MirroredCopy, mirrored_copies
from .router import (
    BACKEND_TLS_FAILED,
    INVALID_BACKEND,
    MISDIRECTED,
    NO_ENDPOINTS,
    NO_LISTENER,
    NOT_FOUND,
    PASSED_THROUGH,
    PROXIED,
    TLS_FAILED,
    BackendChoice,
    Candidate,
    GatewayRouteError,
    _gateway,
    _is_address,
    route,
)
from .translate import GRPCEntry, ResolvedBackend, translate
from .upstream import backend_handshake, choose_endpoint, envoy_tls_failure, ready_endpoints, weighted_pick

# The gRPC status a client reports when the proxy answers with an HTTP status itself
# (grpc/doc/http-grpc-status-mapping.md), and for a refused connection.
GRPC_STATUS = {404: 12, 500: 13, 503: 14, 421: 14, None: 14, 400: 13, 401: 16, 403: 7, 429: 14, 502: 14, 504: 14}
GRPC_STATUS_NAMES = {0: "OK", 2: "UNKNOWN", 7: "PERMISSION_DENIED", 12: "UNIMPLEMENTED", 13: "INTERNAL",
                     14: "UNAVAILABLE", 16: "UNAUTHENTICATED"}


@dataclass(frozen=True, slots=True)
class GRPCCall:
    """One gRPC call: ``:authority``, ``/<service>/<method>``, metadata; ``tls`` for a TLS connection."""

    authority: str
    service: str
    method: str
    metadata: tuple[tuple[str, str], ...] = ()
    port: int | None = None  # None: 80, or 443 over TLS
    tls: bool = False

    def __post_init__(self) -> None:
        if not self.service or not self.method or "/" in self.service or "/" in self.method:
            raise HTTPRequestError(f"gRPC method {self.service}/{self.method} is not of the form "
                                   "package.Service/Method")

    @classmethod
    def parse(cls, authority: str, full_method: str, **kwargs: Any) -> GRPCCall:
        """``pkg.Service/Method`` (a leading ``/`` is allowed)."""
        service, sep, method = full_method.lstrip("/").partition("/")
        if not sep:
            raise HTTPRequestError(f"gRPC method {full_method!r} is not of the form package.Service/Method")
        return cls(authority, service, method, **kwargs)

    @property
    def path(self) -> str:
        return f"/{self.service}/{self.method}"

    @property
    def effective_port(self) -> int:
        return self.port if self.port is not None else (443 if self.tls else 80)

    def header(self, name: str) -> str | None:
        lower = name.lower()
        return next((v for n, v in self.metadata if n.lower() == lower), None)

    def http_request(self) -> HTTPRequest:
        """The HTTP/2 request carrying the call, as HTTPRoute rules see it."""
        headers = (("content-type", "application/grpc"), *self.metadata)
        return HTTPRequest(self.authority, self.path, "POST", "https" if self.tls else "http", self.port, headers)

    def to_dict(self) -> dict[str, Any]:
        return {"authority": self.authority, "service": self.service, "method": self.method,
                "metadata": {n.lower(): v for n, v in self.metadata}, "port": self.effective_port,
                "tls": self.tls}


@dataclass(frozen=True, slots=True)
class GRPCMatchRef:
    route: str
    rule: int
    rule_name: str | None
    match: int
    hostname: str | None
    method: str  # "Exact echo.Echo/Say", "any", ...


@dataclass(frozen=True, slots=True)
class GRPCRouteResult:
    call: GRPCCall
    gateway: str
    outcome: str
    grpc_status: int | None  # what the proxy itself answers (None: the backend answers)
    http_status: int | None
    summary: str
    address: str | None = None
    listener: str | None = None
    proxy_pod: str | None = None
    route_kind: str = "GRPCRoute"
    match: GRPCMatchRef | None = None
    backends: tuple[BackendChoice, ...] = ()
    backend: BackendChoice | None = None
    upstream_metadata: dict[str, str] = field(default_factory=dict)
    response_metadata: dict[str, str] = field(default_factory=dict)
    candidates: tuple[Candidate, ...] = ()
    notes: tuple[str, ...] = ()
    tls: TLSHandshake | None = None
    backend_tls: BackendHandshake | None = None
    policy: envoypolicies.Decision | None = None  # Envoy Gateway's policies, where any applies
    mirrors: tuple[MirroredCopy, ...] = ()  # the RequestMirror copies of a proxied call (mirrors.py)

    @property
    def proxied(self) -> bool:
        return self.outcome == PROXIED

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "grpc_status": self.grpc_status,
                "grpc_status_name": GRPC_STATUS_NAMES.get(self.grpc_status) if self.grpc_status is not None else None,
                "http_status": self.http_status, "route_kind": self.route_kind, "match": plain(self.match),
                "backends": plain(self.backends), "backend": plain(self.backend),
                "upstream_metadata": dict(self.upstream_metadata), "response_metadata": dict(self.response_metadata),
                "candidates": plain(self.candidates), "call": self.call.to_dict(), "gateway": self.gateway,
                "address": self.address, "listener": self.listener, "proxy_pod": self.proxy_pod,
                "summary": self.summary, "notes": list(self.notes),
                "tls": self.tls.to_dict() if self.tls else None,
                "backend_tls": self.backend_tls.to_dict() if self.backend_tls else None,
                "policies": self.policy.to_dict() if self.policy else None,
                "mirrors": [m.to_dict() for m in self.mirrors]}


def method_text(match: GRPCRouteMatch) -> str:
    m = match.method
    if m is None:
        return "any method"
    return f"{m.type} {m.service or '*'}/{m.method or '*'}"


def match_call(match: GRPCRouteMatch, call: GRPCCall) -> str | None:
    """None when ``match`` takes the call, else why not."""
    m = match.method
    if m is not None:
        if m.type == "RegularExpression":
            if m.service and not saferegex.envoy_full_match(m.service, call.service):
                return f"service {call.service} does not match the regular expression {m.service}"
            if m.method and not saferegex.envoy_full_match(m.method, call.method):
                return f"method {call.method} does not match the regular expression {m.method}"
        else:
            if m.service and m.service != call.service:
                hint = " (service names are case-sensitive)" if m.service.lower() == call.service.lower() else ""
                return f"service {m.service} is required, the call is to {call.service}{hint}"
            if m.method and m.method != call.method:
                hint = " (method names are case-sensitive)" if m.method.lower() == call.method.lower() else ""
                return f"method {m.method} is required, the call is to {call.method}{hint}"
    seen: set[str] = set()
    for h in match.headers:
        if h.name.lower() in seen:
            continue
        seen.add(h.name.lower())
        value = call.header(h.name)
        ok = value is not None and (saferegex.envoy_full_match(h.value, value) if h.type == "RegularExpression"
                                    else value == h.value)
        if not ok:
            have = "absent" if value is None else repr(value)
            return f"metadata {h.name} must be {h.value!r}; it is {have}"
    return None


def _precedence(e: GRPCEntry, matched_host: str | None) -> tuple[Any, ...]:
    """GEP-1016's order (smaller wins): hostname, service and method characters, header matches, age, name."""
    h = hostname_rank(matched_host)
    m = e.match.method
    exact = m is not None and m.type == "Exact"
    service = len(m.service or "") if exact and m is not None else 0
    method = len(m.method or "") if exact and m is not None else 0
    created = e.route.meta.creation_timestamp
    return (-h[0], -h[1], -service, -method, -len({x.name.lower() for x in e.match.headers}), created is None,
            created or "", e.route.key, e.rule.index, e.match_index)


def _backends_text(backends: tuple[ResolvedBackend, ...]) -> str:
    if not backends:
        return "-"
    return ",".join(f"{b.service}:{b.port}" + (f"@{b.weight}" if len(backends) > 1 else "") for b in backends)


def route_grpc(state: ClusterState, gateway: str, call: GRPCCall, *, sni: str | None = None,
               client_chain: Sequence[Any] | None = None) -> GRPCRouteResult:
    """Route one gRPC call through Gateway ``namespace/name``; raises GatewayRouteError for a missing Gateway."""
    key, t, gctx, failed = _gateway(state, gateway)
    if failed is not None:
        return GRPCRouteResult(call, key, failed[0], GRPC_STATUS[None], None, failed[1], **failed[2])
    assert gctx is not None
    base: dict[str, Any] = {"address": gctx.addresses[0] if gctx.addresses else None,
                            "proxy_pod": gctx.proxy_pods[0] if gctx.proxy_pods else None}
    port = call.effective_port
    target = f"gRPC {call.path} to {call.authority}:{port}"
    protocol = "HTTPS" if call.tls else "HTTP"
    on_port = [lc for lc in gctx.listeners if lc.port == port]
    served = [lc for lc in on_port if lc.protocol in ((protocol, "TLS") if call.tls else (protocol,)) and lc.programmed]
    if not served:
        what = ", ".join(f"{lc.label} ({lc.protocol}{'' if lc.programmed else ', not programmed'})" for lc in on_port)
        return GRPCRouteResult(call, key, NO_LISTENER, GRPC_STATUS[None], None,
                               f"{target}: no programmed {protocol} listener on port {port} of Gateway {key} "
                               f"({what or 'no listener at all'}): the connection fails (UNAVAILABLE)", **base)
    host = hostnames.normalize(call.authority)
    sni_listener: ListenerContext | None = None
    if call.tls:
        sent = sni if sni is not None else (None if _is_address(host) else host)
        hs, chain = handshake(on_port, port, sent, client_chain, t.now)
        base["tls"] = hs
        if chain is None:
            return GRPCRouteResult(call, key, TLS_FAILED, GRPC_STATUS[None], None,
                                   f"{target}: TLS handshake fails: {hs.error} (UNAVAILABLE)", **base)
        if chain.listener.protocol == "TLS":
            return GRPCRouteResult(call, key, PASSED_THROUGH, None, None,
                                   f"{target}: SNI {sent} selects TLS listener {chain.listener.label}: the call goes "
                                   f"to TLSRoute {hs.route}'s backend unread", listener=chain.listener.label, **base)
        sni_listener = chain.listener
        served = [lc for lc in served if lc.protocol == "HTTPS"]
    by_host = [lc for lc in served if hostnames.matches(lc.hostname, host)]
    if not by_host:
        return GRPCRouteResult(call, key, NOT_FOUND, GRPC_STATUS[404], 404,
                               f"{target}: no listener on port {port} accepts authority {host}: Envoy answers 404 "
                               "(UNIMPLEMENTED)", **base)
    lc = max(by_host, key=lambda x: hostnames.specificity(x.hostname))
    if sni_listener is not None and lc is not sni_listener:
        return GRPCRouteResult(call, key, MISDIRECTED, GRPC_STATUS[421], 421,
                               f"{target}: the connection's SNI selected listener {sni_listener.label}, the authority "
                               f"{host} listener {lc.label}: Envoy answers 421 Misdirected Request", listener=lc.label,
                               **base)
    return _with_policies(state, _route_listener(state, t.now, key, lc, call, host, base,
                                                  gctx.backend_client_chain), lc.name)


def _with_policies(state: ClusterState, result: GRPCRouteResult, listener: str) -> GRPCRouteResult:
    """Envoy Gateway's policies on a call a GRPCRoute rule took: their own answer in gRPC terms (Envoy turns a
    local reply to a gRPC request into the gRPC status of its HTTP status), or the call goes on."""
    if result.match is None or result.route_kind != "GRPCRoute":
        return result
    gctx = translate(state).gateways.get(result.gateway)
    impl = gctx.implementation if gctx is not None else None
    reads = impl is None or resilience.reads_envoy_policies(impl)
    if impl is not None:
        # Never silent: what reaches the call on its implementation but is not simulated is named on it.
        named = [f"{label} {why}" for label, why in extensions.unsimulated(
            state, impl, result.gateway, "GRPCRoute", result.match.route, [b.service for b in result.backends])]
        if not reads:
            named.extend(f"{label} is Envoy Gateway's: {impl.title} does not read it, so it does not apply"
                         for label in extensions.envoy_policies_targeting(state, result.gateway, "GRPCRoute",
                                                                          result.match.route))
        if named:
            result = replace(result, notes=(*result.notes, *named))
    decision = envoypolicies.decide(state, result.gateway, listener, "GRPCRoute", result.match.route,
                                    result.match.rule, result.match.rule_name, result.call.http_request(),
                                    read_policies=reads)
    if decision is None:
        return result
    if not decision.answered or decision.status is None or decision.outcome is None:
        return replace(result, policy=decision)
    code = GRPC_STATUS.get(decision.status, 2)
    return replace(result, outcome=decision.outcome, grpc_status=code, http_status=decision.status, policy=decision,
                   summary=f"gRPC {result.call.path} to {result.call.authority} → GRPCRoute {result.match.route} rule "
                           f"{result.match.rule} → {decision.why} ({GRPC_STATUS_NAMES.get(code, code)})")


def _route_listener(state: ClusterState, now: Any, key: str, lc: ListenerContext, call: GRPCCall, host: str,
                    base: dict[str, Any], client_chain: tuple[Any, ...] = ()) -> GRPCRouteResult:
    target = f"gRPC {call.path} to {call.authority}"
    candidates: list[Candidate] = []
    matching: list[tuple[tuple[Any, ...], GRPCEntry, str | None]] = []
    for e in lc.grpc_entries:
        matched_host = None
        if e.hostnames:
            hits = [h for h in e.hostnames if hostnames.matches(h, host)]
            if not hits:
                candidates.append(Candidate(e.route.key, e.rule.index, e.match_index, lc.label, method_text(e.match),
                                            _backends_text(e.backends), "host-mismatch",
                                            "; ".join(hostnames.mismatch_reason(h, host) for h in e.hostnames)))
                continue
            matched_host = max(hits, key=hostname_rank)
        why = match_call(e.match, call)
        if why is not None:
            verdict = "header-mismatch" if why.startswith("metadata") else "method-mismatch"
            candidates.append(Candidate(e.route.key, e.rule.index, e.match_index, lc.label, method_text(e.match),
                                        _backends_text(e.backends), verdict, why))
            continue
        matching.append((_precedence(e, matched_host), e, matched_host))
    matching.sort(key=lambda m: m[0])
    for i, (_prec, e, _h) in enumerate(matching):
        candidates.append(Candidate(e.route.key, e.rule.index, e.match_index, lc.label, method_text(e.match),
                                    _backends_text(e.backends), "chosen" if i == 0 else "lower-precedence",
                                    "highest precedence of the matches" if i == 0 else
                                    "GEP-1016 precedence (hostname, service, method, headers, age) ranks it lower"))
    candidates.sort(key=lambda c: (c.verdict != "chosen", c.route, c.rule if c.rule is not None else -1,
                                   c.match if c.match is not None else -1))
    base = {**base, "listener": lc.label, "candidates": tuple(candidates)}
    if not matching:
        http = route(state, key, call.http_request(), explain=False,
                     sni=(base.get("tls").sni if base.get("tls") else None))
        if http.match is not None:
            return GRPCRouteResult(call, key, http.outcome, None if http.proxied else GRPC_STATUS.get(
                http.http_status, 2), http.http_status,
                f"{target}: no GRPCRoute rule matches; HTTPRoute {http.match.route} rule {http.match.rule} matches "
                f"POST {call.path} and takes the call: {http.summary}", route_kind="HTTPRoute",
                backends=http.backends, backend=http.backend,
                upstream_metadata=dict(http.upstream_request.headers) if http.upstream_request else {},
                notes=("Envoy Gateway puts HTTPRoute and GRPCRoute rules in one route table",), policy=http.policy,
                **base)
        return GRPCRouteResult(call, key, NOT_FOUND, GRPC_STATUS[404], 404,
                               f"{target}: no GRPCRoute rule attached to listener {lc.label} matches: Envoy answers "
                               "404 (UNIMPLEMENTED)", **base)
    _prec, entry, matched_host = matching[0]
    match_ref = GRPCMatchRef(entry.route.key, entry.rule.index, entry.rule.name, entry.match_index, matched_host,
                             method_text(entry.match))
    where = (f"GRPCRoute {entry.route.key} rule {entry.rule.index}"
             f"{f' ({entry.rule.name})' if entry.rule.name else ''} match {entry.match_index} "
             f"({method_text(entry.match)})")
    base = {**base, "match": match_ref, "backends": tuple(BackendChoice.of(b) for b in entry.backends)}
    response: dict[str, str] = {}
    for f in entry.rule.filters:
        if f.response_header_modifier is not None:
            apply_header_modifier(response, f.response_header_modifier)
    if not entry.backends:
        return GRPCRouteResult(call, key, INVALID_BACKEND, GRPC_STATUS[500], 500,
                               f"{target} → {where}, which has no backendRefs: Envoy answers 500 (INTERNAL)",
                               response_metadata=response, **base)
    ident = f"{call.path} {call.authority} " + "|".join(f"{n.lower()}={v}" for n, v in sorted(call.metadata))
    chosen = weighted_pick(entry.backends, ident)
    if chosen is None:
        return GRPCRouteResult(call, key, INVALID_BACKEND, GRPC_STATUS[500], 500,
                               f"{target} → {where}: every backendRef has weight 0: Envoy answers 500 (INTERNAL)",
                               response_metadata=response, **base)
    choice = BackendChoice.of(chosen)
    if not chosen.valid:
        return GRPCRouteResult(call, key, INVALID_BACKEND, GRPC_STATUS[500], 500,
                               f"{target} → {where} → backend {chosen.describe()} is invalid ({chosen.reason}: "
                               f"{chosen.problem}): Envoy answers 500 (INTERNAL)", backend=choice,
                               response_metadata=response, **base)
    metadata = {n.lower(): v for n, v in call.metadata}
    for f in (*entry.rule.filters, *chosen.ref.filters):
        if f.request_header_modifier is not None:
            apply_header_modifier(metadata, f.request_header_modifier)
    for f in chosen.ref.filters:
        if f.response_header_modifier is not None:
            apply_header_modifier(response, f.response_header_modifier)
    common = {"backend": choice, "upstream_metadata": dict(sorted(metadata.items())),
              "response_metadata": response, **base}
    if chosen.ready_endpoints == 0:
        return GRPCRouteResult(call, key, NO_ENDPOINTS, GRPC_STATUS[503], 503,
                               f"{target} → {where} → Service {chosen.describe()} has no ready endpoints: Envoy "
                               "answers 503 (UNAVAILABLE: no healthy upstream)", **common)
    if chosen.tls is not None:
        endpoint = choose_endpoint(ready_endpoints(state, chosen), ident)
        backend_hs = backend_handshake(state, chosen, endpoint, now, client_chain) if endpoint is not None else None
        if backend_hs is not None:
            common["backend_tls"] = backend_hs
            if not backend_hs.verdict.ok:
                return GRPCRouteResult(call, key, BACKEND_TLS_FAILED, GRPC_STATUS[503], 503,
                                       f"{target} → {where} → Service {chosen.describe()}: BackendTLSPolicy "
                                       f"{chosen.tls.policy} {backend_hs.failure()} (UNAVAILABLE: "
                                       f"{envoy_tls_failure(backend_hs)})",
                                       **common)
    mirrored = ""
    if any(f.type == "RequestMirror" for f in entry.rule.filters):
        # GRPCRoute's RequestMirror (GRPC_FILTERS): the call is copied to each mirror, its answer ignored.
        common["mirrors"] = mirrored_copies(state, entry.route, entry.rule.filters, ident)
        sent = [m.backend for m in common["mirrors"] if m.sent]
        mirrored = f" (mirrored to {', '.join(sent)})" if sent else ""
    return GRPCRouteResult(call, key, PROXIED, None, None,
                           f"{target} → {where} → Service {chosen.describe()}{mirrored}", **common)


def call_from(authority: str, full_method: str, *, metadata: tuple[tuple[str, str], ...] = (), port: int | None = None,
              tls: bool = False) -> GRPCCall:
    """A GRPCCall, with construction errors as GatewayRouteError."""
    try:
        return GRPCCall.parse(authority, full_method, metadata=metadata, port=port, tls=tls)
    except HTTPRequestError as exc:
        raise GatewayRouteError(str(exc)) from None
