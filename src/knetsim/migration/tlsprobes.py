"""The TLS half of ``migrate check``: TLS handshakes and gRPC calls, through ingress-nginx and through the Gateway.

What an HTTP request cannot show is sent as what clients really send:

* **a TLS handshake** per SNI either side terminates or passes through on 443 — every ``spec.tls`` host,
  every ``ssl-passthrough`` host of a controller running ``--enable-ssl-passthrough``, every HTTPS and
  TLS listener hostname and TLSRoute hostname (a wildcard as one label below it). ingress-nginx's side
  is ``ingress.tls_connection`` (its TCP proxy passes the host's connections to the Service of ``/``,
  else nginx terminates with the host's certificate or its fake one); the Gateway's is
  ``gateway.streams.route_stream(..., "tls", 443, sni=...)`` (the filter chain the SNI selects). Compared:
  the backend a passed-through connection reaches, and the certificate the client is served — the
  Secret a terminating side names (``ns/name``, or ``fake``), the backend pods' own where the
  connection is passed through, or none when the handshake fails;
* **a gRPC call** over TLS per method a gRPC host routes — the paths of Ingresses with
  ``backend-protocol: GRPC``/``GRPCS`` (``/pkg.Service[/Method]``; ``/`` any call) and the method
  matches of GRPCRoutes, plus a call to a service neither names. ingress-nginx routes the HTTP/2 POST
  by its path (``ingress.route_request``); the Gateway with ``gateway.grpc.route_grpc``. Compared: the
  status the proxy answers itself (404 is UNIMPLEMENTED to the client), the backend, the certificate.
  ingress-nginx's port 80 speaks no HTTP/2, so gRPC clients of ingress-nginx use TLS: calls are sent
  over TLS only.

Plain https requests to a passed-through host are left to these probes (what follows a passed-through
handshake is the backend's own business). A gRPC host's paths are also sent as plain https requests: a
host may mix gRPC and HTTP locations, and Envoy Gateway matches GRPCRoute rules by path in the same route
table as HTTPRoute rules (``gateway.router``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..cluster.state import ClusterState
from ..gateway import GatewayRouteError, translate
from ..gateway.backendtls import pod_certificate
from ..gateway.grpc import GRPC_STATUS, GRPC_STATUS_NAMES, call_from, route_grpc
from ..gateway.streams import route_stream
from ..ingress import RouteError, RouteResult, route_request, tls_connection
from ..ingress.passthrough import passthrough_server
from ..ingress.router import controller_view
from ..model.http import HTTPRequest, RouteAnswer
from ..network.gateway import gateway_for_host

NO_HANDSHAKE = "none (the handshake fails)"
UNNAMED_SERVICE = "knetsim.Unnamed/Probe"
GRPC_HEADERS = (("content-type", "application/grpc"), ("te", "trailers"))
_GRPC_PATH = re.compile(r"^/([A-Za-z_][\w.]*)(?:/([A-Za-z_]\w*))?/?$")


@dataclass(frozen=True, slots=True)
class Probe:
    """One TLS handshake (``tls``) or gRPC call (``grpc``) the check sends to port 443 of both sides."""

    protocol: str
    host: str  # the SNI, and a call's :authority
    method: str | None = None  # a gRPC call's pkg.Service/Method

    @property
    def scheme(self) -> str:
        return self.protocol

    def describe(self) -> str:
        if self.protocol == "grpc":
            return f"gRPC {self.method} to {self.host}:443 (TLS)"
        return f"TLS handshake with SNI {self.host}"


def _label(host: str) -> str:
    """A name a wildcard covers (one label), or the host itself."""
    return "x" + host[1:] if host.startswith("*.") else host


def passthrough_hosts(state: ClusterState) -> set[str]:
    """Hosts whose TLS either side forwards unread: ingress-nginx's passthrough servers, the Gateways' TLS
    listener and TLSRoute names."""
    out: set[str] = set()
    view = controller_view(state)
    if view.model is not None and view.selection.controller is not None:
        out.update(name for name in view.model.servers
                   if passthrough_server(view.model, view.selection.controller, name) is not None)
    for gctx in translate(state).gateways.values():
        for lc in gctx.listeners:
            if lc.protocol != "TLS":
                continue
            names = [h for e in lc.streams for h in e.hostnames] or ([lc.hostname] if lc.hostname else [])
            out.update(_label(h.lower()) for h in names)
    return out


def _grpc_ingress_paths(state: ClusterState) -> dict[str, list[str]]:
    """host → the paths of the Ingresses ingress-nginx serves with backend-protocol GRPC or GRPCS."""
    model = controller_view(state).model
    out: dict[str, list[str]] = {}
    if model is None:
        return out
    for ing in model.ordered:
        anns = model.annotations.get(ing.key)
        if anns is None or anns.backend.protocol not in ("GRPC", "GRPCS") or anns.canary.enabled:
            continue
        for rule in ing.rules:
            if rule.host:
                out.setdefault(rule.host.lower(), []).extend(p.path or "/" for p in rule.paths)
    return out


def grpc_hosts(state: ClusterState) -> set[str]:
    """Hosts whose https requests are gRPC calls: a gRPC Ingress's hosts, and the GRPCRoutes' hostnames."""
    hosts = set(_grpc_ingress_paths(state))
    for route in state.grpc_routes.values():
        hosts.update(_label(h.lower()) for h in route.hostnames)
    return hosts


def _calls(state: ClusterState) -> dict[str, set[str]]:
    calls: dict[str, set[str]] = {}
    for host, paths in _grpc_ingress_paths(state).items():
        for path in paths:
            found = _GRPC_PATH.match(path)
            if path == "/" or found is None:
                calls.setdefault(host, set()).add("grpc.health.v1.Health/Check")
            else:
                calls.setdefault(host, set()).add(f"{found.group(1)}/{found.group(2) or 'Probe'}")
    for route in state.grpc_routes.values():
        for host in route.hostnames:
            wanted = calls.setdefault(_label(host.lower()), set())
            for rule in route.rules:
                for match in rule.matches or ():
                    method = match.method
                    if method is None or method.type != "Exact":
                        wanted.add("grpc.health.v1.Health/Check")
                        continue
                    wanted.add(f"{method.service or 'knetsim.Any'}/{method.method or 'Probe'}")
                if not rule.matches:
                    wanted.add("grpc.health.v1.Health/Check")
    for wanted in calls.values():
        wanted.add(UNNAMED_SERVICE)
    return calls


def tls_hosts(state: ClusterState) -> set[str]:
    """Every SNI either side serves on 443."""
    out = set(passthrough_hosts(state))
    for ing in state.ingresses.values():
        out.update(_label(h.lower()) for t in ing.tls for h in t.hosts)
    for gctx in translate(state).gateways.values():
        for lc in gctx.listeners:
            if lc.protocol in ("HTTPS", "TLS") and lc.port == 443 and lc.hostname:
                out.add(_label(lc.hostname.lower()))
    return out


def probes(state: ClusterState) -> list[Probe]:
    out = [Probe("tls", host) for host in sorted(tls_hosts(state))]
    calls = _calls(state)
    out.extend(Probe("grpc", host, method) for host in sorted(calls) for method in sorted(calls[host]))
    return out


def backend_certificate(state: ClusterState, service: str) -> str:
    """What the pods behind a Service present to a client whose handshake reaches them: the Secret they all
    mount, or each pod's own."""
    svc = state.services.get(service)
    sources: set[str] = set()
    for es in state.slices_for(svc) if svc is not None else ():
        for e in es.endpoints:
            if e.ready and e.target_ref and e.target_ref[0] == "Pod":
                pod = state.pods.get(f"{e.target_ref[1]}/{e.target_ref[2]}")
                if pod is not None:
                    sources.add(pod_certificate(state, pod).source)
    if not sources:
        return NO_HANDSHAKE
    if len(sources) == 1 and not next(iter(sources)).startswith("derived"):
        return f"{next(iter(sources))} (the backend pods' own)"
    return "each backend pod's own"


# --- ingress-nginx's side -----------------------------------------------------------------------


def _passed(state: ClusterState, result: RouteResult) -> RouteAnswer:
    backend = result.backend
    if backend is None or not backend.routable or backend.service is None:
        return RouteAnswer(None, None, None, None, result.summary, certificate=NO_HANDSHAKE)
    return RouteAnswer(None, f"{backend.service}:{backend.port}", None, None, result.summary,
                       certificate=backend_certificate(state, backend.service))


def ingress_answer(state: ClusterState, probe: Probe, class_name: str | None = None) -> RouteAnswer:
    if probe.protocol == "tls":
        found = tls_connection(state, probe.host, class_name)
        if isinstance(found, RouteResult):
            return _passed(state, found)
        if found.certificate is None:
            return RouteAnswer(None, None, None, None, found.detail, certificate=NO_HANDSHAKE)
        served = "fake" if found.certificate == "fake" else found.secret
        return RouteAnswer(None, None, None, None, f"TLS to {probe.host}: {found.detail}", certificate=served)
    try:
        result = route_request(state, HTTPRequest(probe.host, f"/{probe.method}", "POST", "https", None,
                                                  GRPC_HEADERS), class_name)
    except RouteError as exc:
        return RouteAnswer(None, None, None, None, str(exc))
    if result.outcome == "passed-through":
        return _passed(state, result)
    answer = result.answer()
    status = answer.status
    text = f"{answer.explanation}" + (f" ({GRPC_STATUS_NAMES.get(GRPC_STATUS.get(status, 2), '')})"
                                      if status is not None else "")
    return RouteAnswer(status, answer.backend, None, None, text, certificate=answer.certificate)


# --- the Gateway's side --------------------------------------------------------------------------


def _gateway_for(state: ClusterState, host: str, gateway: str | None) -> str | None:
    if gateway is not None:
        return gateway
    return gateway_for_host(state, host, 443, "https", ingress_first=False) or \
        gateway_for_host(state, host, 443, "tcp", ingress_first=False)


def _served(tls: Any) -> str | None:
    if tls is None:
        return None
    if not tls.ok:
        return NO_HANDSHAKE
    return tls.certificate_from.removeprefix("Secret ") if tls.certificate_from and tls.mode == "terminate" else None


def gateway_answer(state: ClusterState, probe: Probe, gateway: str | None = None) -> tuple[RouteAnswer, str | None]:
    name = _gateway_for(state, probe.host, gateway)
    if name is None:
        return RouteAnswer(None, None, None, None, f"{probe.describe()}: no Gateway listens for {probe.host} on 443",
                           certificate=NO_HANDSHAKE), None
    try:
        if probe.protocol == "tls":
            stream = route_stream(state, name, "tls", 443, sni=probe.host)
            if stream.tls is None or not stream.tls.ok:
                return RouteAnswer(None, None, None, None, stream.summary, certificate=NO_HANDSHAKE), name
            if stream.route is None:  # an HTTPS listener: the proxy terminates and routes HTTP
                return RouteAnswer(None, None, None, None, stream.summary, certificate=_served(stream.tls)), name
            backend = stream.backend
            if not stream.proxied or backend is None:
                return RouteAnswer(None, None, None, None, stream.summary, certificate=NO_HANDSHAKE), name
            served = backend_certificate(state, backend.service) if stream.tls.mode == "passthrough" \
                else _served(stream.tls)
            return RouteAnswer(None, f"{backend.service}:{backend.port}", None, None, stream.summary,
                               certificate=served), name
        assert probe.method is not None
        result = route_grpc(state, name, call_from(probe.host, probe.method, tls=True))
    except GatewayRouteError as exc:
        return RouteAnswer(None, None, None, None, str(exc)), name
    if result.outcome == "passed-through":
        stream = route_stream(state, name, "tls", 443, sni=probe.host)
        backend = stream.backend
        return RouteAnswer(None, f"{backend.service}:{backend.port}" if backend and stream.proxied else None, None,
                           None, result.summary, certificate=backend_certificate(state, backend.service)
                           if backend and stream.proxied else NO_HANDSHAKE), name
    certificate = _served(result.tls)
    if result.outcome in ("no-listener", "not-programmed", "no-controller"):
        certificate = NO_HANDSHAKE  # nothing on 443 completes a handshake for this name
    if result.proxied and result.backend is not None:
        return RouteAnswer(None, f"{result.backend.service}:{result.backend.port}", None, None, result.summary,
                           certificate=certificate), name
    if result.http_status is None:
        return RouteAnswer(None, None, None, None, result.summary, certificate=certificate), name
    return RouteAnswer(result.http_status, None, None, None, result.summary, certificate=certificate), name
