"""``knetsim migrate check``: one generated request set through the Ingress side and the Gateway side.

Both sides live in one cluster (the old manifests and the new ones applied together, as during a
real migration): the Ingress side is ingress-nginx (``knetsim.ingress``), the Gateway side the
Gateway that serves each request's host (``network.gateway.gateway_for_host``: the Gateway naming
the host, else one accepting every host) or the one given. Every request whose status, backend (or
weights), path or Host received, Location, CORS and authentication headers, or certificate on https
differs is listed with both explanations.

The request set covers every host and every path boundary either side defines:

* hosts: each Ingress rule host and HTTPRoute/listener hostname (a wildcard as one label, two
  labels and its bare domain), plus a host neither names;
* paths, per path ``P`` of a rule: ``P``, ``P`` with and without a trailing slash, a child
  ``P/x``, the element edge ``Px`` (``/apix`` is not under ``/api``), ``P`` in upper case, its
  parent, ``/`` and a path nothing names — so Exact vs Prefix, element-wise prefixes, trailing
  slashes, case and default backends all show;
* schemes: http everywhere, https for TLS hosts (and http for them: ingress-nginx redirects);
* the cases every annotation decides on (``ingress.probes``): client addresses inside and outside
  source ranges, credentials, CORS requests and preflights, canary headers and cookies, bodies at and
  over the size limit — and, for a rate-limited path, a burst of 100 requests from one client;
* on port 443, a TLS handshake per SNI and gRPC calls over TLS per method a gRPC host routes
  (``tlsprobes.py``): the backend a passed-through connection reaches, the certificate served, the
  status a gRPC client gets.

The Ingress side is ingress-nginx as ``knetsim.ingress`` runs it (annotations included); the Gateway
side is the Gateway's answer with Envoy Gateway's policies applied (``gateway.envoypolicies``). A weighted
split is compared by its shares, not by the backend one request drew. On https the certificate is the
Secret each side names: ingress-nginx's for the host (or its fake one), the matching HTTPS listener's
``certificateRefs`` (exact hostname, then the longest wildcard, then a listener without hostname).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..cluster.state import ClusterState
from ..gateway import GatewayRouteError, translate
from ..gateway import route as gateway_route
from ..ingress import RouteError, probes, route_request
from ..ingress.annotations.values import PREFIX
from ..ingress.router import controller_view
from ..model.http import HTTPRequest, RouteAnswer
from ..network.gateway import gateway_for_host
from . import tlsprobes

UNNAMED_HOST = probes.UNNAMED_HOST
NGINX = PREFIX
BURST = 100


@dataclass(frozen=True, slots=True)
class Comparison:
    request: HTTPRequest | tlsprobes.Probe
    ingress: RouteAnswer
    gateway: RouteAnswer
    gateway_name: str | None
    burst: int | None = None  # the request sent this many times at once, from one client
    # The weighted backends (service:port, weight) of the HTTPRoute rule that answered: a request's own
    # backend is one pick, the split is what a weight change changes.
    gateway_split: tuple[tuple[str, int], ...] = ()

    @property
    def same(self) -> bool:
        return self.ingress.same_as(self.gateway)

    @property
    def differences(self) -> list[str]:
        return self.ingress.differences(self.gateway)

    def describe(self) -> str:
        return self.request.describe() + (f" ×{self.burst} at once" if self.burst else "")

    def to_dict(self) -> dict[str, Any]:
        return {"request": self.describe(), "same": self.same, "differences": self.differences,
                "ingress": self.ingress.to_dict(), "gateway": self.gateway.to_dict(),
                "gateway_name": self.gateway_name}


@dataclass(frozen=True, slots=True)
class Caveat:
    subject: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"subject": self.subject, "message": self.message}


@dataclass(slots=True)
class CheckResult:
    comparisons: list[Comparison] = field(default_factory=list)
    caveats: list[Caveat] = field(default_factory=list)

    @property
    def differences(self) -> list[Comparison]:
        return [c for c in self.comparisons if not c.same]

    def to_dict(self) -> dict[str, Any]:
        return {"requests": len(self.comparisons), "differences": [c.to_dict() for c in self.differences],
                "caveats": [c.to_dict() for c in self.caveats],
                "same": [c.describe() for c in self.comparisons if c.same]}


def _hosts(state: ClusterState) -> set[str]:
    names: set[str] = set()
    for ing in state.ingresses.values():
        names.update(r.host.lower() for r in ing.rules if r.host)
        names.update(h.lower() for t in ing.tls for h in t.hosts)
    for rt in state.http_routes.values():
        names.update(h.lower() for h in rt.hostnames)
    for gw in state.gateways.values():
        names.update(li.hostname.lower() for li in gw.listeners if li.hostname)
    return names


def _paths(state: ClusterState) -> set[str]:
    raw: set[str] = {"/"}
    for ing in state.ingresses.values():
        raw.update(p.path or "/" for r in ing.rules for p in r.paths)
    for rt in state.http_routes.values():
        raw.update(m.path.value for rule in rt.rules for m in rule.matches if m.path.type != "RegularExpression")
    return raw


def requests(state: ClusterState) -> list[HTTPRequest]:
    tls = {h.lower() for ing in state.ingresses.values() for t in ing.tls for h in t.hosts}
    tls |= {(li.hostname or "").lower() for gw in state.gateways.values() for li in gw.listeners
            if li.protocol == "HTTPS" and li.hostname}
    # A passed-through host's https is the backend's own business: TLS handshakes ask it (tlsprobes.py). A gRPC
    # host's https paths are still sent (a host may mix gRPC and HTTP locations); its calls are added there too.
    probed = tlsprobes.passthrough_hosts(state)
    tls -= probed
    out = []
    paths = probes.path_probes(_paths(state))
    for host in probes.host_probes(_hosts(state)):
        schemes = ("http", "https") if host in tls else ("http",)
        for scheme in schemes:
            out.extend(HTTPRequest(host, p, "GET", scheme) for p in paths)
    model = controller_view(state).model
    if model is not None:
        seen = {_key(r) for r in out}
        for request in probes.requests(state, model):
            if request.scheme == "https" and request.host.lower() in probed:
                continue
            if _key(request) not in seen:
                seen.add(_key(request))
                out.append(request)
    return out


def _key(request: HTTPRequest) -> tuple[object, ...]:
    return (request.host, request.path, request.method, request.scheme, request.headers, request.client_ip,
            request.body_size)


def burst_requests(state: ClusterState) -> list[HTTPRequest]:
    """One request per rate-limited Ingress path: sent as a burst of ``BURST`` from one client."""
    model = controller_view(state).model
    out: list[HTTPRequest] = []
    if model is None:
        return out
    for server in sorted(model.servers.values(), key=lambda s: s.name):
        done: set[str] = set()
        for loc in server.locations:
            if loc.ingress is None or loc.rule is None or loc.ingress.key in done:
                continue
            if loc.annotations.limits.rate_limited:
                done.add(loc.ingress.key)
                host = server.name if not server.name.startswith("*.") else "x." + server.name[2:]
                path = loc.ingress_path if not probes.is_regex(loc.ingress_path) else \
                    probes.literal_prefix(loc.ingress_path) or "/"
                scheme = "https" if server.certificate is not None else "http"
                out.append(HTTPRequest(host if host != "_" else probes.UNNAMED_HOST, path, "GET", scheme))
    return out


def _gateway_answer(state: ClusterState, request: HTTPRequest, gateway: str | None, burst: int | None = None,
                    unsimulated: dict[str, list[str]] | None = None
                    ) -> tuple[RouteAnswer, str | None, tuple[tuple[str, int], ...]]:
    name = gateway or gateway_for_host(state, request.host, request.effective_port, request.scheme,
                                       ingress_first=False)
    if name is None:
        programmed = [k for k, g in translate(state).gateways.items() if g.conditions.is_true("Programmed")]
        why = ("no Gateway accepts this host on port "
               f"{request.effective_port}/{request.scheme}" if programmed else "no programmed Gateway")
        return RouteAnswer(None, None, None, None, f"{request.method} {request.url}: {why}"), None, ()
    try:
        result = gateway_route(state, name, request, explain=False, burst=burst)
    except GatewayRouteError as exc:
        return RouteAnswer(None, None, None, None, str(exc)), name, ()
    if burst is not None:
        n, through, status = result.policy.burst if result.policy is not None and result.policy.burst else \
            (burst, burst, 0)
        return RouteAnswer(None, None, None, None, f"{request.method} {request.url} ×{n}: Envoy's local rate limit "
                           f"lets {through} through" + (f", the rest get {status}" if through < n else ""),
                           burst=(n, through, status)), name, ()
    # The weighted backends of the rule that answered: a request's own backend is one pick, the split is what a
    # weight change changes.
    split = tuple((f"{b.service}:{b.port}", b.weight) for b in result.backends) if result.redirect is None else ()
    if unsimulated is not None:
        for what in result.unsimulated:
            unsimulated.setdefault(what, []).append(request.describe())
    return result.answer(), name, split


def compare(state: ClusterState, request: HTTPRequest, gateway: str | None = None,
            class_name: str | None = None, unsimulated: dict[str, list[str]] | None = None) -> Comparison:
    """One request through the Ingress side and the Gateway side (``check`` asks this of every request);
    ``unsimulated`` collects what the Gateway's answer names as read but not simulated, with the request."""
    try:
        ing = route_request(state, request, class_name).answer()
    except RouteError as exc:
        ing = RouteAnswer(None, None, None, None, str(exc))
    gw, name, split = _gateway_answer(state, request, gateway, unsimulated=unsimulated)
    return Comparison(request, ing, gw, name, gateway_split=split)


def check(state: ClusterState, gateway: str | None = None, class_name: str | None = None) -> CheckResult:
    result = CheckResult()
    # What the Gateway side's answers name as read but not simulated (gateway/extensions.py): each becomes a
    # caveat listing the requests whose answers it could change.
    unsimulated: dict[str, list[str]] = {}
    result.comparisons.extend(compare(state, req, gateway, class_name, unsimulated) for req in requests(state))
    for req in burst_requests(state):
        try:
            routed = route_request(state, req, class_name, burst=BURST)
            ing = RouteAnswer(None, None, None, None, routed.summary, burst=routed.answer().burst)
        except RouteError as exc:
            ing = RouteAnswer(None, None, None, None, str(exc))
        gw, name, _ = _gateway_answer(state, req, gateway, burst=BURST)
        result.comparisons.append(Comparison(req, ing, gw, name, BURST))
    for probe in tlsprobes.probes(state):
        gw, name = tlsprobes.gateway_answer(state, probe, gateway)
        result.comparisons.append(Comparison(probe, tlsprobes.ingress_answer(state, probe, class_name), gw, name))
    result.caveats.extend(caveats(state))
    for what, asked in sorted(unsimulated.items()):
        shown = ", ".join(dict.fromkeys(asked[:5])) + (f" and {len(asked) - 5} more" if len(asked) > 5 else "")
        result.caveats.append(Caveat(" ".join(what.split()[:2]), f"{what}: it could change the answers to {shown}"))
    return result


def caveats(state: ClusterState) -> list[Caveat]:
    """What the comparison cannot measure."""
    out = []
    if tlsprobes.tls_hosts(state):
        out.append(Caveat("TLS", "an SNI no host names: ingress-nginx completes the handshake with its self-signed "
                          "fake certificate (then 404), Envoy Gateway closes the connection (no filter chain): a "
                          "client that verifies certificates fails on both; not sent"))
    view = controller_view(state)
    model = view.model
    for key in sorted(state.ingresses):
        ing = state.ingresses[key]
        subject = f"Ingress {key}"
        regex_paths = sorted({p.path for r in ing.rules for p in r.paths if probes.is_regex(p.path or "")})
        if regex_paths:
            out.append(Caveat(subject, f"regex paths {', '.join(regex_paths)}: only their literal start and its "
                              "children are sent; HTTPRoute RegularExpression is implementation-specific (Envoy: "
                              "whole path, RE2)"))
        anns = model.annotations.get(key) if model is not None else None
        if anns is None:
            continue
        if anns.affinity.enabled or anns.backend.hash_by:
            out.append(Caveat(subject, "session affinity and upstream-hash-by pick an endpoint, not a route: not "
                              "compared (both sides reach the same Service)"))
        if anns.unsimulated:
            out.append(Caveat(subject, f"annotations not simulated on either side: {', '.join(anns.unsimulated)}"))
        if anns.snippets.present():
            out.append(Caveat(subject, "snippets are arbitrary nginx configuration: not simulated"))
    return out
