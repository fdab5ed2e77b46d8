"""``route(state, gateway, request)``: which HTTPRoute rule and backend a Gateway gives one HTTP request.

The request reaches the Gateway's address on a port. From there, as Envoy Gateway programs Envoy:

1. the listeners on that port whose protocol is the request's (HTTP, or HTTPS for https), of
   those that are programmed; none → nothing accepts the connection (``no-listener``);
2. the listener whose hostname matches the Host most specifically (exact, longest wildcard,
   none) — listener isolation: only the routes attached to that listener are consulted; no
   listener hostname matches → 404;
3. every match of every rule attached there, filtered by the route's effective hostnames,
   path, method, headers and query parameters, and ordered by the spec's precedence
   (``matching.py``); nothing matches → 404 (``not-found``);
4. the winning rule: a RequestRedirect answers itself (``redirect``, 30x with ``Location``);
   no backendRefs, a backend whose reference is invalid, or only zero weights → 500
   (``invalid-backend``); otherwise one backend is picked by weight, deterministically from
   the request (a real proxy picks at random: the *share* is what matters), its Service must
   have ready endpoints (else Envoy's ``no healthy upstream``, 503: ``no-endpoints``), and the
   request is ``proxied`` after the rule's and the backendRef's filters (header modifiers, URL
   rewrite), with the response header modifiers recorded.

Every other candidate rule is listed with why it lost.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..cluster.gatewayimplementations import Reply
from ..cluster.state import ClusterState
from ..model import saferegex
from ..model.gatewayapi import HeaderModifier
from ..model.http import COMPARED_RESPONSE_HEADERS, HTTPRequest, HTTPRequestError, RouteAnswer, plain
from . import envoypolicies, extensions, features, hostnames, resilience
from .backendtls import BackendHandshake
from .conditions import Type
from .handshake import TLSHandshake, handshake
from .listeners import ListenerContext
from .matching import (
    apply_header_modifier,
    hostname_rank,
    match_rank,
    match_request,
    modify_path,
    normalize_path,
    query_values,
    redirect_location,
    why_lower,
)
from .mirrors import MirroredCopy, mirrored_copies
from .translate import GatewayContext, ResolvedBackend, RouteEntry, translate, unclaimed_reason
from .upstream import backend_handshake, choose_endpoint, envoy_tls_failure, ready_endpoints, weighted_pick

PROXIED = "proxied"
REDIRECT = "redirect"
NOT_FOUND = "not-found"
INVALID_BACKEND = "invalid-backend"
NO_ENDPOINTS = "no-endpoints"
NO_LISTENER = "no-listener"
NOT_PROGRAMMED = "not-programmed"
NO_CONTROLLER = "no-controller"
TLS_FAILED = "tls-failed"
MISDIRECTED = "misdirected"
PASSED_THROUGH = "passed-through"
BACKEND_TLS_FAILED = "backend-tls-failed"


class GatewayRouteError(ValueError):
    """The question cannot be asked: no such Gateway, or a malformed request (exit code 2)."""


@dataclass(frozen=True, slots=True)
class BackendChoice:
    service: str  # namespace/name
    port: int | None
    weight: int
    valid: bool
    problem: str | None = None
    target_port: str | None = None
    ready_endpoints: int | None = None

    @classmethod
    def of(cls, b: ResolvedBackend) -> BackendChoice:
        return cls(b.service, b.port, b.weight, b.valid, b.problem, b.target_port,
                   b.ready_endpoints if b.valid else None)


@dataclass(frozen=True, slots=True)
class MatchRef:
    route: str  # namespace/name
    rule: int
    rule_name: str | None
    match: int
    hostname: str | None  # the route hostname that matched the Host (None: the route names none)
    path_type: str
    path: str


@dataclass(frozen=True, slots=True)
class Redirect:
    status: int
    location: str


@dataclass(frozen=True, slots=True)
class UpstreamRequest:
    method: str
    host: str
    path: str
    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class Candidate:
    route: str
    rule: int | None
    match: int | None
    listener: str | None
    path: str | None  # "PathPrefix /api", for the table
    backends: str
    verdict: str  # chosen | host-mismatch | path-mismatch | method-mismatch | header-mismatch | query-mismatch
    #              | lower-precedence | other-listener | not-accepted | dropped-rule | not-attached
    reason: str


@dataclass(frozen=True, slots=True)
class GatewayRouteResult:
    request: HTTPRequest
    gateway: str
    outcome: str
    http_status: int | None
    summary: str
    address: str | None = None
    listener: str | None = None
    proxy_pod: str | None = None
    backends: tuple[BackendChoice, ...] = ()
    backend: BackendChoice | None = None
    match: MatchRef | None = None
    redirect: Redirect | None = None
    upstream_request: UpstreamRequest | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    response_headers_removed: tuple[str, ...] = ()
    candidates: tuple[Candidate, ...] = ()
    notes: tuple[str, ...] = ()
    tls: TLSHandshake | None = None
    backend_tls: BackendHandshake | None = None
    policy: envoypolicies.Decision | None = None  # Envoy Gateway's policies and CORS filter, where any applies
    # The implementation's own answer where the spec leaves it open (route miss, no ready endpoint, invalid
    # backend): its body and content type, for the trace and the live listeners.
    reply: Reply | None = None
    mirrors: tuple[MirroredCopy, ...] = ()  # the RequestMirror copies of a proxied request
    # Objects that reach this request on its implementation but that knetsim does not simulate (extensions.py):
    # "Kind ns/name (why)", also among the notes.
    unsimulated: tuple[str, ...] = ()

    @property
    def proxied(self) -> bool:
        return self.outcome == PROXIED

    def to_dict(self) -> dict[str, Any]:
        out = {
            "outcome": self.outcome,
            "http_status": self.http_status,
            "backends": plain(self.backends),
            "backend": plain(self.backend),
            "match": plain(self.match),
            "redirect": plain(self.redirect),
            "upstream_request": plain(self.upstream_request),
            "response_headers": dict(self.response_headers),
            "response_headers_removed": list(self.response_headers_removed),
            "candidates": plain(self.candidates),
            "request": self.request.to_dict(),
            "gateway": self.gateway,
            "address": self.address,
            "listener": self.listener,
            "proxy_pod": self.proxy_pod,
            "summary": self.summary,
            "notes": list(self.notes),
            "tls": self.tls.to_dict() if self.tls is not None else None,
            "backend_tls": self.backend_tls.to_dict() if self.backend_tls is not None else None,
            "policies": self.policy.to_dict() if self.policy is not None else None,
            "mirrors": [m.to_dict() for m in self.mirrors],
        }
        return out

    def answer(self) -> RouteAnswer:
        """What a client observes: status, backend (and the weights of a split), Location, what the backend
        receives (path, Host, X-Forwarded-Prefix), the CORS and authentication headers, the certificate served."""
        backend = None
        if self.backend is not None and self.outcome in (PROXIED, NO_ENDPOINTS):
            backend = f"{self.backend.service}:{self.backend.port}"
        upstream = self.upstream_request.path if self.upstream_request and backend is not None else None
        upstream_headers: dict[str, str] = {}
        if self.upstream_request is not None and backend is not None:
            upstream_headers["host"] = self.upstream_request.host.split(":", 1)[0]
            if "x-forwarded-prefix" in self.upstream_request.headers:
                upstream_headers["x-forwarded-prefix"] = self.upstream_request.headers["x-forwarded-prefix"]
        valid = [b for b in self.backends if b.valid and b.weight]
        shares: dict[str, float] = {}
        if len(valid) > 1 and backend is not None:
            total = sum(b.weight for b in valid)
            shares = {f"{b.service}:{b.port}": b.weight / total for b in valid}
        headers = {k: v for k, v in self.response_headers.items() if k in COMPARED_RESPONSE_HEADERS}
        certificate = None
        if self.tls is not None and self.tls.certificate_from and self.tls.mode == "terminate":
            certificate = self.tls.certificate_from.removeprefix("Secret ")
        burst = self.policy.burst if self.policy is not None else None
        return RouteAnswer(self.http_status, backend, self.redirect.location if self.redirect else None, upstream,
                           self.summary, headers, upstream_headers, shares, burst, certificate)


# --- the route ----------------------------------------------------------------------------


def route(state: ClusterState, gateway: str, request: HTTPRequest, *, explain: bool = True, sni: str | None = None,
          client_chain: Sequence[Any] | None = None, burst: int | None = None) -> GatewayRouteResult:
    """Route ``request`` through Gateway ``namespace/name``. Raises GatewayRouteError for a missing Gateway.

    ``explain=False`` lists only the candidates whose hostnames accept the request (the rest lose on
    the host anyway): what bulk callers — the live front door, traces, the migration check — need.
    An https request first has a TLS handshake (``handshake.py``) with ``sni`` (default: the Host,
    unless it is an address) and ``client_chain`` (parsed certificates, leaf first). Once a rule matches,
    Envoy Gateway's policies run (``envoypolicies.py``); ``burst`` asks what that many requests at once
    from the same client get from its local rate limit.
    """
    key, t, gctx, failed = _gateway(state, gateway)
    if failed is not None:
        return GatewayRouteResult(request, key, failed[0], None, failed[1], **(failed[2]))
    assert gctx is not None
    base: dict[str, Any] = {"address": gctx.addresses[0] if gctx.addresses else None,
                            "proxy_pod": gctx.proxy_pods[0] if gctx.proxy_pods else None}
    port = request.effective_port
    protocol = "HTTPS" if request.scheme == "https" else "HTTP"
    on_port = [lc for lc in gctx.listeners if lc.listener.port == port]
    target = f"{request.method} {request.url}"
    if not on_port:
        ports = ", ".join(sorted({f"{lc.listener.port}/{lc.listener.protocol}" for lc in gctx.listeners})) or "none"
        return GatewayRouteResult(request, key, NO_LISTENER, None,
                                  f"{target}: Gateway {key} has no listener on port {port} (listeners: {ports}): "
                                  "the connection is refused", **base)
    speaks = ("HTTPS", "TLS") if protocol == "HTTPS" else ("HTTP",)
    same = [lc for lc in on_port if lc.listener.protocol in speaks]
    if not same:
        other = on_port[0].listener.protocol
        return GatewayRouteResult(request, key, NO_LISTENER, None,
                                  f"{target}: port {port} of Gateway {key} is a {other} listener, not {protocol}: "
                                  "the request fails before HTTP routing", **base)
    served = [lc for lc in same if lc.programmed]
    if not served:
        why = "; ".join(f"{lc.label}: {_bad_condition(lc)}" for lc in same)
        return GatewayRouteResult(request, key, NO_LISTENER, None,
                                  f"{target}: no programmed {protocol} listener on port {port} ({why})", **base)
    host = hostnames.normalize(request.host)
    sni_listener = None
    if protocol == "HTTPS":
        sent = sni if sni is not None else (None if _is_address(host) else host)
        hs, chain = handshake(on_port, port, sent, client_chain, t.now)
        base["tls"] = hs
        if chain is None:
            return GatewayRouteResult(request, key, TLS_FAILED, None, f"{target}: TLS handshake fails: {hs.error}",
                                      **base)
        if chain.listener.protocol == "TLS":
            how = "forwards the encrypted bytes" if hs.mode == "passthrough" else \
                "terminates TLS and forwards the bytes"
            return GatewayRouteResult(request, key, PASSED_THROUGH, None,
                                      f"{target}: SNI {sent} selects TLS listener {chain.listener.label} (TLSRoute "
                                      f"{hs.route}): Envoy {how} to the route's backend without reading HTTP "
                                      "(knetsim route --protocol tls shows where)", listener=chain.listener.label,
                                      **base)
        sni_listener = chain.listener
        served = [lc for lc in served if lc.listener.protocol == "HTTPS"]
    by_host = [lc for lc in served if hostnames.matches(lc.listener.hostname, host)]
    if not by_host:
        names = ", ".join(f"{lc.label} ({lc.listener.hostname})" for lc in served)
        return GatewayRouteResult(request, key, NOT_FOUND, gctx.implementation.route_miss.status,
                                  f"{target}: no listener on port {port} accepts host {host} (listeners: {names}): "
                                  f"{answers(gctx, gctx.implementation.route_miss)}",
                                  reply=gctx.implementation.route_miss,
                                  candidates=tuple(_other_listeners(gctx, None, port) if explain else ()), **base)
    chosen_listener = max(by_host, key=lambda lc: hostnames.specificity(lc.listener.hostname))
    if sni_listener is not None and chosen_listener is not sni_listener:
        hs = base["tls"]
        return GatewayRouteResult(request, key, MISDIRECTED, 421,
                                  f"{target}: the connection's SNI {hs.sni} selected listener {sni_listener.label}, "
                                  f"but Host {host} belongs to listener {chosen_listener.label}: Envoy answers 421 "
                                  "Misdirected Request (the client must open a connection for that host)",
                                  listener=sni_listener.label, **base)
    result = _route_listener(state, t, gctx, chosen_listener, request, host, base, explain)
    kind = "GRPCRoute" if result.match is not None and result.match.path_type == "GRPCRoute" else "HTTPRoute"
    return with_policies(state, result, chosen_listener.name, kind, burst)


def with_policies(state: ClusterState, result: GatewayRouteResult, listener: str | None, route_kind: str,
                  burst: int | None = None) -> GatewayRouteResult:
    """The result once Envoy Gateway's filters have run: their own answer (a preflight, 401, 403, 413, 500)
    instead of the router's, or their headers (CORS) added to it."""
    if result.match is None:
        return result
    gctx = translate(state).gateways.get(result.gateway)
    impl = gctx.implementation if gctx is not None else None
    reads = impl is None or resilience.reads_envoy_policies(impl)
    if impl is not None:
        result = _named_extensions(state, result, impl, listener, route_kind, reads)
    decision = envoypolicies.decide(state, result.gateway, listener, route_kind, result.match.route,
                                    result.match.rule, result.match.rule_name, result.request, burst=burst,
                                    read_policies=reads)
    if decision is None:
        return result
    headers = {**result.response_headers, **decision.headers}
    if not decision.answered:
        unverified = [step for step in decision.steps if envoypolicies.UNVERIFIED in step]
        if unverified:
            return replace(result, policy=decision, response_headers=headers,
                           summary=f"{result.summary} (unverified: the auth service's answer is assumed, see the "
                                   "notes)",
                           notes=(*result.notes, *unverified))
        return replace(result, policy=decision, response_headers=headers)
    assert decision.outcome is not None and decision.status is not None
    return replace(result, outcome=decision.outcome, http_status=decision.status, redirect=None,
                   summary=f"{result.request.method} {result.request.url} → {route_kind} {result.match.route} rule "
                           f"{result.match.rule} → {decision.why}",
                   response_headers=headers, policy=decision)


def _named_extensions(state: ClusterState, result: GatewayRouteResult, impl: Any, listener: str | None,
                      route_kind: str, reads_envoy: bool) -> GatewayRouteResult:
    """What could change this answer that knetsim reads but does not simulate, named on it: the rule's timeouts
    and retry (resilience.py), the implementation's own extension objects that target the route, its Gateway
    or a backend Service (extensions.py), and Envoy Gateway's policies on an implementation that does not read
    them."""
    assert result.match is not None
    route_key, rule = result.match.route, result.match.rule
    route_obj = state.http_routes.get(route_key) if route_kind == "HTTPRoute" else None
    raw = features.raw_rule(route_obj, rule) if route_obj is not None and rule is not None else {}
    in_force = envoypolicies.attached(state, result.gateway, listener, route_kind, route_key,
                                      result.match.rule_name) if reads_envoy else envoypolicies.Attached()
    traffic = in_force.traffic
    notes = list(result.notes)
    notes.extend(extensions.unsimulated_fields(in_force))
    if result.proxied or result.outcome == NO_ENDPOINTS:
        retry = resilience.plan(state, impl, result.gateway, listener, route_kind, route_key, rule or 0,
                                result.match.rule_name, raw)
        if retry is not None and not any(n.startswith(retry.source) for n in notes):
            notes.append(f"{retry.describe()} (knetsim's endpoints connect and answer at once and alike: no retry "
                         "changes this answer)")
        for limit in resilience.timeouts(raw, traffic, impl):
            notes.append(f"{limit.strip()}: in force, not reached (knetsim's endpoints connect and answer at once)")
        if isinstance(raw.get("retry"), dict) and not impl.supports("HTTPRouteRetry"):
            notes.append(f"the rule's retry is ignored: {impl.title} does not claim HTTPRouteRetry")
        for name, feature in (("request", "HTTPRouteRequestTimeout"), ("backendRequest", "HTTPRouteBackendTimeout")):
            if isinstance((raw.get("timeouts") or {}).get(name), str) and not impl.supports(feature):
                notes.append(f"the rule's timeouts.{name} is ignored: {impl.title} does not claim {feature}")
    backends = [b.service for b in result.backends]
    unsimulated = [f"{label} {why}" for label, why in
                   extensions.unsimulated(state, impl, result.gateway, route_kind, route_key, backends)]
    if not reads_envoy:
        unsimulated.extend(f"{label} is Envoy Gateway's: {impl.title} does not read it, so it does not apply"
                           for label in extensions.envoy_policies_targeting(state, result.gateway, route_kind,
                                                                            route_key))
    notes.extend(unsimulated)
    if notes == list(result.notes):
        return result
    return replace(result, notes=tuple(notes), unsimulated=tuple(unsimulated))


def answers(gctx: GatewayContext, reply: Any) -> str:
    """``Envoy answers 503 (no healthy upstream)``: the implementation's own reply where the spec leaves it open
    (cluster/gatewayimplementations.py)."""
    body = reply.body.strip()
    short = f" ({body})" if body and len(body) <= 60 and "<" not in body else ""
    return f"{gctx.implementation.proxy_word} answers {reply.status}{short}"


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _gateway(state: ClusterState, gateway: str) -> tuple[str, Any, GatewayContext | None,
                                                         tuple[str, str, dict[str, Any]] | None]:
    """The Gateway's context, or the outcome that stops every connection to it (not ours, not programmed)."""
    ns, _, name = gateway.rpartition("/")
    key = f"{ns or 'default'}/{name}"
    if key not in state.gateways:
        known = ", ".join(sorted(state.gateways)) or "none"
        raise GatewayRouteError(f"Gateway {key} not found (Gateways: {known})")
    t = translate(state)
    gctx = t.gateways.get(key)
    if gctx is None:
        return key, t, None, (NO_CONTROLLER, f"no controller programs Gateway {key}: {unclaimed_reason(state, key)}",
                              {})
    base = {"address": gctx.addresses[0] if gctx.addresses else None,
            "proxy_pod": gctx.proxy_pods[0] if gctx.proxy_pods else None}
    programmed = gctx.conditions.get(Type.PROGRAMMED)
    if programmed is None or not programmed.ok:
        why = programmed.message if programmed else "not programmed"
        return key, t, gctx, (NOT_PROGRAMMED, f"Gateway {key} is not programmed ({why}): nothing answers on its "
                                              "address", base)
    return key, t, gctx, None


def _bad_condition(lc: ListenerContext) -> str:
    bad = [c for c in lc.conditions.values() if c.status == "False" or c.type == "Conflicted"]
    return "; ".join(f"{c.type} {c.status} ({c.reason}: {c.message})" for c in bad) or "not programmed"


def _entry_text(entry: RouteEntry) -> str:
    return f"{entry.match.path.type} {entry.match.path.value}"


def _backends_text(backends: tuple[ResolvedBackend, ...]) -> str:
    if not backends:
        return "-"
    return ",".join(f"{b.service}:{b.port}" + (f"@{b.weight}" if len(backends) > 1 else "") for b in backends)


def _other_listeners(gctx: GatewayContext, chosen: ListenerContext | None, port: int) -> list[Candidate]:
    out = []
    for lc in gctx.listeners:
        if lc is chosen:
            continue
        for e in lc.entries:
            if chosen is None:
                why = (f"attached to listener {lc.label} (hostname {lc.listener.hostname or '*'}, port "
                       f"{lc.listener.port}), which does not accept this request")
            elif lc.listener.port != port:
                why = f"attached to listener {lc.label} on port {lc.listener.port}; the request arrives on {port}"
            else:
                why = (f"attached to listener {lc.label} (hostname {lc.listener.hostname or '*'}); listener "
                       f"{chosen.label} (hostname {chosen.listener.hostname or '*'}) matches the host more "
                       "specifically and only its routes are consulted")
            out.append(Candidate(e.route.key, e.rule.index, e.match_index, lc.label, _entry_text(e),
                                 _backends_text(e.backends), "other-listener", why))
    return out


def _route_listener(state: ClusterState, t: Any, gctx: GatewayContext, lc: ListenerContext, request: HTTPRequest,
                    host: str, base: dict[str, Any], explain: bool) -> GatewayRouteResult:
    key = gctx.gateway.key
    target = f"{request.method} {request.url}"
    try:
        path = normalize_path(request.path_only)
    except ValueError as exc:  # pragma: no cover - HTTPRequest already checks the leading slash
        raise GatewayRouteError(str(exc)) from None
    query = query_values(request)
    notes: list[str] = []
    if path != request.path_only:
        notes.append(f"Envoy matches the normalized path {path}")
    candidates: list[Candidate] = []
    matching: list[tuple[tuple[Any, ...], RouteEntry, str | None]] = []
    for e in lc.entries if explain else lc.entries_for(host):
        matched_host: str | None = None
        if e.hostnames:
            hits = [h for h in e.hostnames if hostnames.matches(h, host)]
            if not hits:
                candidates.append(Candidate(e.route.key, e.rule.index, e.match_index, lc.label, _entry_text(e),
                                            _backends_text(e.backends), "host-mismatch",
                                            "; ".join(hostnames.mismatch_reason(h, host) for h in e.hostnames)))
                continue
            matched_host = max(hits, key=hostname_rank)
        result = match_request(e.match, request, path, query)
        if not result.matched:
            verdict = f"{result.part}-mismatch"
            candidates.append(Candidate(e.route.key, e.rule.index, e.match_index, lc.label, _entry_text(e),
                                        _backends_text(e.backends), verdict, result.reason))
            continue
        matching.append((_precedence(e, matched_host), e, matched_host))
    matching.sort(key=lambda m: m[0])
    winner = matching[0] if matching else None
    for prec, e, _h in matching:
        if winner is not None and e is winner[1]:
            candidates.append(Candidate(e.route.key, e.rule.index, e.match_index, lc.label, _entry_text(e),
                                        _backends_text(e.backends), "chosen", "highest precedence of the matches"))
        elif winner is not None:
            candidates.append(Candidate(e.route.key, e.rule.index, e.match_index, lc.label, _entry_text(e),
                                        _backends_text(e.backends), "lower-precedence",
                                        _why(winner, (prec, e, _h))))
    if explain:
        candidates.extend(_other_listeners(gctx, lc, request.effective_port))
        candidates.extend(_not_attached(t, key, lc))
    candidates.sort(key=lambda c: (c.verdict != "chosen", c.route, c.rule if c.rule is not None else -1,
                                   c.match if c.match is not None else -1, c.listener or ""))
    base = {**base, "listener": lc.label, "candidates": tuple(candidates)}
    if winner is None and lc.grpc_entries:
        shared = _grpc_table(state, t, gctx, lc, request, path, host, base, notes)
        if shared is not None:
            return shared
    if winner is None:
        return GatewayRouteResult(request, key, NOT_FOUND, gctx.implementation.route_miss.status,
                                  f"{target}: no rule attached to listener {lc.label} of Gateway {key} matches: "
                                  f"{answers(gctx, gctx.implementation.route_miss)}", notes=tuple(notes),
                                  reply=gctx.implementation.route_miss, **base)
    _prec, entry, matched_host = winner
    match_ref = MatchRef(entry.route.key, entry.rule.index, entry.rule.name, entry.match_index, matched_host,
                         entry.match.path.type, entry.match.path.value)
    where = (f"HTTPRoute {entry.route.key} rule {entry.rule.index}"
             f"{f' ({entry.rule.name})' if entry.rule.name else ''} match {entry.match_index} "
             f"({entry.match.path.type} {entry.match.path.value})")
    prefix = entry.match.path.value if entry.match.path.type == "PathPrefix" else None
    backends = tuple(BackendChoice.of(b) for b in entry.backends)
    base = {**base, "match": match_ref, "backends": backends}
    resp_headers: dict[str, str] = {}
    removed: list[str] = []
    for f in entry.rule.filters:
        if f.response_header_modifier is not None:
            _record(resp_headers, removed, f.response_header_modifier)
    redirect = next((f.request_redirect for f in entry.rule.filters if f.request_redirect is not None), None)
    if redirect is not None:
        new_path = modify_path(redirect.path, path, prefix) if redirect.path else path
        location = redirect_location(request, lc.listener.port or request.effective_port, lc.listener.protocol,
                                     scheme=redirect.scheme, hostname=redirect.hostname, port=redirect.port,
                                     path=new_path)
        return GatewayRouteResult(request, key, REDIRECT, redirect.status_code,
                                  f"{target} → {where} → RequestRedirect {redirect.status_code} to {location}",
                                  redirect=Redirect(redirect.status_code, location), response_headers=resp_headers,
                                  response_headers_removed=tuple(removed), notes=tuple(notes), **base)
    if not entry.backends:
        return GatewayRouteResult(request, key, INVALID_BACKEND, 500,
                                  f"{target} → {where}, which has no backendRefs and no redirect: Envoy answers 500",
                                  notes=tuple(notes), **base)
    total = sum(b.weight for b in entry.backends)
    if total == 0:
        return GatewayRouteResult(request, key, INVALID_BACKEND, 500,
                                  f"{target} → {where}: every backendRef has weight 0, so no backend receives "
                                  "traffic: Envoy answers 500", notes=tuple(notes), **base)
    chosen = _pick(entry.backends, total, request)
    choice = BackendChoice.of(chosen)
    share = f" (weight {chosen.weight} of {total})" if len(entry.backends) > 1 else ""
    invalid = [b for b in entry.backends if not b.valid]
    if invalid and chosen.valid and len(entry.backends) > 1:
        notes.append(f"{sum(b.weight for b in invalid)} of {total} weight goes to invalid backends "
                     f"({', '.join(b.describe() for b in invalid)}): that share of requests gets 500")
    if not chosen.valid:
        return GatewayRouteResult(request, key, INVALID_BACKEND, 500,
                                  f"{target} → {where} → backend {chosen.describe()}{share} is invalid "
                                  f"({chosen.reason}: {chosen.problem}): Envoy answers 500",
                                  backend=choice, notes=tuple(notes), **base)
    upstream = _upstream(request, path, prefix, entry, chosen)
    for f in chosen.ref.filters:
        if f.response_header_modifier is not None:
            _record(resp_headers, removed, f.response_header_modifier)
    common = {"backend": choice, "upstream_request": upstream, "response_headers": resp_headers,
              "response_headers_removed": tuple(removed), "notes": tuple(notes), **base}
    if chosen.ready_endpoints == 0:
        return GatewayRouteResult(request, key, NO_ENDPOINTS, gctx.implementation.no_healthy_backend.status,
                                  f"{target} → {where} → Service {chosen.describe()}{share} has no ready endpoints: "
                                  f"{answers(gctx, gctx.implementation.no_healthy_backend)}",
                                  reply=gctx.implementation.no_healthy_backend, **common)
    if chosen.tls is not None:
        endpoints = ready_endpoints(state, chosen)
        endpoint = choose_endpoint(endpoints, _ident(request))
        backend_hs = backend_handshake(state, chosen, endpoint, t.now, gctx.backend_client_chain) \
            if endpoint is not None else None
        if backend_hs is not None and not backend_hs.verdict.ok and endpoint is not None:
            backend_hs = _retried_handshake(state, t, gctx, lc, entry, chosen, endpoints, endpoint, backend_hs,
                                            notes)
            common["notes"] = tuple(notes)
        if backend_hs is not None:
            common["backend_tls"] = backend_hs
            if not backend_hs.verdict.ok:
                return GatewayRouteResult(request, key, BACKEND_TLS_FAILED, 503,
                                          f"{target} → {where} → Service {chosen.describe()}{share}: BackendTLSPolicy "
                                          f"{chosen.tls.policy} (SNI {chosen.tls.sni}) {backend_hs.failure()}: Envoy "
                                          f"answers 503 ({envoy_tls_failure(backend_hs)})", **common)
    mirrored = ""
    if any(f.type == "RequestMirror" for f in entry.rule.filters):
        # The copies go out beside the primary request; the client gets the primary's answer (mirrors.py).
        common["mirrors"] = mirrored_copies(state, entry.route, entry.rule.filters, _ident(request))
        sent = [m.backend for m in common["mirrors"] if m.sent]
        mirrored = f" (mirrored to {', '.join(sent)})" if sent else ""
    return GatewayRouteResult(request, key, PROXIED, None,
                              f"{target} → {where} → Service {chosen.describe()}{share}{mirrored}", **common)


def _retried_handshake(state: ClusterState, t: Any, gctx: GatewayContext, lc: ListenerContext, entry: RouteEntry,
                       chosen: Any, endpoints: list[Any], first: Any, failed: Any, notes: list[str]) -> Any:
    """A failed TLS handshake with the chosen endpoint is a connection failure: where the retry in force retries
    those (resilience.py), the request goes to the next ready endpoints (never one already tried) until a
    handshake succeeds or the retries run out; the last handshake is the answer's."""
    retry = resilience.plan(state, gctx.implementation, gctx.gateway.key, lc.name, "HTTPRoute", entry.route.key,
                            entry.rule.index, entry.rule.name, features.raw_rule(entry.route, entry.rule.index))
    if retry is None:
        return failed
    if not retry.on_connect_failure:
        notes.append(f"{retry.describe()}: a failed TLS handshake is not retried")
        return failed
    start = endpoints.index(first)
    others = [endpoints[(start + i) % len(endpoints)] for i in range(1, len(endpoints))][:retry.retries]
    tried = [first.describe()]
    hs = failed
    for endpoint in others:
        hs = backend_handshake(state, chosen, endpoint, t.now, gctx.backend_client_chain)
        if hs is None:
            return failed
        tried.append(endpoint.describe())
        if hs.verdict.ok:
            notes.append(f"{retry.describe()}: the TLS handshake with {first.describe()} failed "
                         f"({failed.failure()}); retried on {endpoint.describe()}, which succeeded")
            return hs
    notes.append(f"{retry.describe()}: the TLS handshake failed with every endpoint tried ({', '.join(tried)})"
                 + ("" if len(others) == len(endpoints) - 1 else f"; {len(endpoints) - len(tried)} more not tried"))
    return hs


# --- the route table HTTPRoutes share with GRPCRoutes -------------------------------------------------


# What Envoy Gateway's regular expressions put where a method match leaves the service or method out
# (validServiceName, validMethodName; its (?i) spelled out as both cases).
_GRPC_SERVICE_NAME = r"\.?[A-Za-z_][A-Za-z_0-9]*(\.[A-Za-z_][A-Za-z_0-9]*)*"
_GRPC_METHOD_NAME = r"[A-Za-z_][A-Za-z_0-9]*"


def grpc_path_matches(method: Any, path: str) -> tuple[int, int] | None:
    """Whether a GRPCRoute method match takes an HTTP request for ``path`` as Envoy Gateway translates it
    (``processGRPCRouteMethodExact/RegularExpression``): service and method → exact ``/svc/method``;
    service → a path-separated prefix ``/svc``; method → a ``:path`` suffix ``/method``; regular expressions → a
    full-path regex; no method match → any path. The rank (bigger wins): exact 3, regex 2, else 1, then length."""
    if method is None:
        return (1, 0)
    service, name = method.service, method.method
    if method.type == "RegularExpression":
        pattern = f"/{service or _GRPC_SERVICE_NAME}/{name or _GRPC_METHOD_NAME}"
        rx = saferegex.compiled(pattern)
        try:
            return (2, len(pattern)) if rx is not None and saferegex.fullmatch(rx, path) is not None else None
        except saferegex.RegexTimeout:
            return None
    if service and name:
        return (3, len(path)) if path == f"/{service}/{name}" else None
    if name:
        return (1, len(name) + 1) if path.endswith(f"/{name}") else None
    # A path-separated prefix: /svc and /svc/..., never /svcx.
    return (1, len(service) + 1) if service and (path == f"/{service}" or path.startswith(f"/{service}/")) else None


def _grpc_table(state: ClusterState, t: Any, gctx: GatewayContext, lc: ListenerContext, request: HTTPRequest,
                path: str, host: str, base: dict[str, Any], notes: list[str]) -> GatewayRouteResult | None:
    """No HTTPRoute rule takes the request: Envoy Gateway puts HTTPRoute and GRPCRoute rules in one route table,
    and it matches a GRPCRoute rule by its path (what a gRPC call's ``/pkg.Service/Method`` is) and headers."""
    found: list[tuple[tuple[Any, ...], Any, str | None]] = []
    for e in lc.grpc_entries:
        matched_host = None
        if e.hostnames:
            hits = [h for h in e.hostnames if hostnames.matches(h, host)]
            if not hits:
                continue
            matched_host = max(hits, key=hostname_rank)
        rank = grpc_path_matches(e.match.method, path)
        if rank is None or not all(_header_value_matches(h, request.header(h.name)) for h in e.match.headers):
            continue
        h = hostname_rank(matched_host)
        created = e.route.meta.creation_timestamp
        found.append(((-h[0], -h[1], -rank[0], -rank[1], -len(e.match.headers), created is None, created or "",
                       e.route.key, e.rule.index, e.match_index), e, matched_host))
    if not found:
        return None
    found.sort(key=lambda f: f[0])
    _rank, entry, matched_host = found[0]
    key, target = gctx.gateway.key, f"{request.method} {request.url}"
    m = entry.match.method
    text = "any method" if m is None else f"{m.type} {m.service or '*'}/{m.method or '*'}"
    match_ref = MatchRef(entry.route.key, entry.rule.index, entry.rule.name, entry.match_index, matched_host,
                         "GRPCRoute", text)
    where = f"GRPCRoute {entry.route.key} rule {entry.rule.index} match {entry.match_index} ({text})"
    notes = [*notes, "no HTTPRoute rule matches; Envoy Gateway puts GRPCRoute rules in the same route table and "
                     "matches them by path"]
    backends = tuple(BackendChoice.of(b) for b in entry.backends)
    common: dict[str, Any] = {**base, "match": match_ref, "backends": backends, "notes": tuple(notes)}
    chosen = weighted_pick(entry.backends, _ident(request)) if entry.backends else None
    if chosen is None or not chosen.valid:
        why = "has no backend with a weight" if chosen is None else f"backend {chosen.describe()} is invalid"
        return GatewayRouteResult(request, key, INVALID_BACKEND, 500, f"{target} → {where}, which {why}: Envoy "
                                  "answers 500", backend=BackendChoice.of(chosen) if chosen else None, **common)
    headers = {n.lower(): v for n, v in request.headers if n.lower() != "host"}
    for f in (*entry.rule.filters, *chosen.ref.filters):
        if f.request_header_modifier is not None:
            apply_header_modifier(headers, f.request_header_modifier)
    query = f"?{request.query}" if request.query else ""
    common.update(backend=BackendChoice.of(chosen),
                  upstream_request=UpstreamRequest(request.method, request.host, path + query, dict(sorted(
                      headers.items()))))
    if chosen.ready_endpoints == 0:
        return GatewayRouteResult(request, key, NO_ENDPOINTS, gctx.implementation.no_healthy_backend.status,
                                  f"{target} → {where} → Service {chosen.describe()} has no ready endpoints: "
                                  f"{answers(gctx, gctx.implementation.no_healthy_backend)}",
                                  reply=gctx.implementation.no_healthy_backend, **common)
    return GatewayRouteResult(request, key, PROXIED, None, f"{target} → {where} → Service {chosen.describe()}",
                              **common)


def _header_value_matches(match: Any, value: str | None) -> bool:
    if value is None:
        return False
    if match.type == "RegularExpression":
        rx = saferegex.compiled(match.value)
        try:
            return rx is not None and saferegex.fullmatch(rx, value) is not None
        except saferegex.RegexTimeout:
            return False
    return bool(value == match.value)


def _precedence(e: RouteEntry, matched_host: str | None) -> tuple[Any, ...]:
    """Sort key: smaller wins (the spec's order, each criterion negated where bigger wins)."""
    h = hostname_rank(matched_host)
    m = match_rank(e.match)
    created = e.route.meta.creation_timestamp
    return (-h[0], -h[1], *(-x for x in m), created is None, created or "", e.route.key, e.rule.index,
            e.match_index)


_Ranked = tuple[tuple[Any, ...], RouteEntry, str | None]


def _why(winner: _Ranked, loser: _Ranked) -> str:
    (_, we, wh), (_, le, lh) = winner, loser
    w_host, l_host = hostname_rank(wh), hostname_rank(lh)
    if w_host != l_host:
        return (f"route hostname {wh} is more specific than {lh or '<none>'} (precedence goes to the longest "
                "matching hostname)")
    reason = why_lower(we.match, le.match)
    if reason:
        return reason
    if we.route.key != le.route.key:
        wc, lcr = we.route.meta.creation_timestamp, le.route.meta.creation_timestamp
        if wc != lcr:
            return (f"equally specific; HTTPRoute {we.route.key} is older ({wc or 'no timestamp'} vs "
                    f"{lcr or 'no timestamp: counted as now'})")
        return f"equally specific and as old; {we.route.key} comes first in namespace/name order"
    if we.rule.index != le.rule.index:
        return f"equally specific; rule {we.rule.index} comes first in the route"
    return f"equally specific; match {we.match_index} comes first in the rule"


def _not_attached(t: Any, gateway: str, lc: ListenerContext) -> list[Candidate]:
    out = []
    for rc, ps in t.parent_statuses(gateway):
        accepted = ps.conditions.get(Type.ACCEPTED)
        if accepted is not None and accepted.ok:
            for index, (reason, message) in sorted(rc.dropped.items()):
                out.append(Candidate(rc.route.key, index, None, None, None, "-", "dropped-rule",
                                     f"{reason}: {message}"))
            continue
        reason = f"{accepted.reason}: {accepted.message}" if accepted else "not accepted"
        for rule in rc.route.rules:
            out.append(Candidate(rc.route.key, rule.index, None, None, None,
                                 _backends_text(rc.backends.get(rule.index, ())), "not-accepted",
                                 f"parentRef {ps.ref.name} is not accepted ({reason})"))
    return out


def _ident(request: HTTPRequest) -> str:
    return f"{request.method} {request.url} " + "|".join(f"{n.lower()}={v}" for n, v in sorted(request.headers))


def _pick(backends: tuple[ResolvedBackend, ...], total: int, request: HTTPRequest) -> ResolvedBackend:
    """A weighted pick, fixed per request (hash of method, URL and headers) instead of Envoy's random one."""
    chosen = weighted_pick(backends, _ident(request))
    assert chosen is not None  # the caller checked total > 0
    return chosen


def _record(headers: dict[str, str], removed: list[str], modifier: HeaderModifier) -> None:
    apply_header_modifier(headers, modifier)
    removed.extend(name.lower() for name in modifier.remove)


def _upstream(request: HTTPRequest, path: str, prefix: str | None, entry: RouteEntry,
              chosen: ResolvedBackend) -> UpstreamRequest:
    headers = {n.lower(): v for n, v in request.headers if n.lower() != "host"}
    host = request.host
    new_path = path
    for f in (*entry.rule.filters, *chosen.ref.filters):
        if f.request_header_modifier is not None:
            apply_header_modifier(headers, f.request_header_modifier)
        if f.url_rewrite is not None:
            if f.url_rewrite.hostname:
                host = f.url_rewrite.hostname
            if f.url_rewrite.path is not None:
                new_path = modify_path(f.url_rewrite.path, new_path, prefix)
    query = f"?{request.query}" if request.query else ""
    return UpstreamRequest(request.method, host, new_path + query, dict(sorted(headers.items())))


def request_from(host: str, path: str = "/", *, method: str = "GET", scheme: str = "http", port: int | None = None,
                 headers: tuple[tuple[str, str], ...] = ()) -> HTTPRequest:
    """An HTTPRequest, with construction errors as GatewayRouteError."""
    try:
        return HTTPRequest(host, path, method.upper(), scheme, port, headers)
    except HTTPRequestError as exc:
        raise GatewayRouteError(str(exc)) from None
