"""``route_stream(state, gateway, protocol, port)``: where a Gateway sends a TLS, TCP or UDP connection.

As Envoy Gateway programs Envoy for the stream listeners:

* **TCP** / **UDP**: the port's TCP (UDP) listener forwards every connection (datagram) to its route —
  the oldest TCPRoute (UDPRoute) attached, whose backend is picked by weight; no listener: the
  connection is refused (UDP: the datagram is dropped, ICMP port unreachable);
* **TLS**: the SNI selects a filter chain (``handshake.py``): on a Passthrough listener the TLSRoute
  whose hostnames match, and the encrypted bytes go to its backend, whose own TLS server answers the
  handshake (the client is served the backend pod's certificate); on a Terminate listener the proxy
  completes the handshake with the listener's certificate and forwards the decrypted stream to the
  TLSRoute's (or TCPRoute's) backend — in TLS again when a BackendTLSPolicy covers it.

A backend without a ready endpoint, or an invalid one, makes Envoy close the accepted connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..cluster.state import ClusterState
from ..model.http import plain
from . import hostnames
from .backendtls import BackendHandshake, pod_certificate
from .handshake import TLSHandshake, handshake
from .listeners import ListenerContext
from .router import (
    BACKEND_TLS_FAILED,
    INVALID_BACKEND,
    NO_ENDPOINTS,
    NO_LISTENER,
    PROXIED,
    TLS_FAILED,
    BackendChoice,
    GatewayRouteError,
    _gateway,
)
from .translate import StreamEntry
from .upstream import Endpoint, backend_handshake, choose_endpoint, ready_endpoints, weighted_pick

PROTOCOLS = ("tls", "tcp", "udp")


@dataclass(frozen=True, slots=True)
class StreamRouteResult:
    protocol: str  # tls | tcp | udp
    gateway: str
    port: int
    outcome: str
    summary: str
    address: str | None = None
    listener: str | None = None
    proxy_pod: str | None = None
    route: str | None = None  # "TLSRoute ns/name"
    backends: tuple[BackendChoice, ...] = ()
    backend: BackendChoice | None = None
    endpoint: Endpoint | None = None
    tls: TLSHandshake | None = None
    backend_tls: BackendHandshake | None = None
    notes: tuple[str, ...] = ()

    @property
    def proxied(self) -> bool:
        return self.outcome == PROXIED

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "protocol": self.protocol, "port": self.port, "route": self.route,
                "backends": plain(self.backends), "backend": plain(self.backend),
                "endpoint": self.endpoint.to_dict() if self.endpoint else None, "gateway": self.gateway,
                "address": self.address, "listener": self.listener, "proxy_pod": self.proxy_pod,
                "summary": self.summary, "notes": list(self.notes), "tls": self.tls.to_dict() if self.tls else None,
                "backend_tls": self.backend_tls.to_dict() if self.backend_tls else None}


def route_stream(state: ClusterState, gateway: str, protocol: str, port: int, *, sni: str | None = None,
                 client_chain: Sequence[Any] | None = None, client: str = "") -> StreamRouteResult:
    """One connection (``protocol`` tls, tcp or udp) to ``port`` of Gateway ``namespace/name``.

    ``client`` identifies the connection for the weighted and endpoint picks (the live listeners pass the
    client's address and port); raises GatewayRouteError for a missing Gateway or an unknown protocol.
    """
    if protocol not in PROTOCOLS:
        raise GatewayRouteError(f"protocol {protocol!r} is not one of {', '.join(PROTOCOLS)}")
    key, t, gctx, failed = _gateway(state, gateway)
    if failed is not None:
        return StreamRouteResult(protocol, key, port, failed[0], failed[1], **failed[2])
    assert gctx is not None
    base: dict[str, Any] = {"address": gctx.addresses[0] if gctx.addresses else None,
                            "proxy_pod": gctx.proxy_pods[0] if gctx.proxy_pods else None}
    target = f"{protocol.upper()} {base['address'] or key}:{port}"
    on_port = [lc for lc in gctx.listeners if lc.port == port]
    wanted = {"tls": ("TLS", "HTTPS"), "tcp": ("TCP",), "udp": ("UDP",)}[protocol]
    served = [lc for lc in on_port if lc.protocol in wanted and lc.programmed]
    if not served:
        what = ", ".join(f"{lc.label} ({lc.protocol}{'' if lc.programmed else ', not programmed'})" for lc in on_port)
        fate = "the datagram is dropped (ICMP port unreachable)" if protocol == "udp" else "the connection is refused"
        return StreamRouteResult(protocol, key, port, NO_LISTENER,
                                 f"{target}: Gateway {key} has no programmed {'/'.join(wanted)} listener on port "
                                 f"{port} ({what or 'no listener at all'}): {fate}", **base)
    if protocol == "tls":
        hs, chain = handshake(on_port, port, hostnames.normalize(sni) if sni else None, client_chain, t.now)
        if chain is None:
            return StreamRouteResult(protocol, key, port, TLS_FAILED, f"{target}: TLS handshake fails: {hs.error}",
                                     tls=hs, **base)
        lc = chain.listener
        if lc.protocol == "HTTPS":
            return StreamRouteResult(protocol, key, port, PROXIED,
                                     f"{target}: SNI {hs.sni} selects HTTPS listener {lc.label}: the proxy terminates "
                                     "TLS and speaks HTTP (knetsim route --protocol https routes the request)",
                                     listener=lc.label, tls=hs, **base)
        entry = chain.entry
        return _forward(state, t.now, key, protocol, port, lc, entry, hs, base, client or (hs.sni or ""),
                        gctx.backend_client_chain)
    lc = served[0]
    if not lc.streams:
        return StreamRouteResult(protocol, key, port, NO_ENDPOINTS,
                                 f"{target}: listener {lc.label} has no {protocol.upper()}Route attached: Envoy "
                                 "closes the connection", listener=lc.label, **base)
    return _forward(state, t.now, key, protocol, port, lc, lc.streams[0], None, base, client)


def _forward(state: ClusterState, now: Any, key: str, protocol: str, port: int, lc: ListenerContext,
             entry: StreamEntry, hs: TLSHandshake | None, base: dict[str, Any], ident: str,
             client_chain: tuple[Any, ...] = ()) -> StreamRouteResult:
    route = f"{entry.route.kind} {entry.route.key}"
    target = f"{protocol.upper()} {base['address'] or key}:{port}"
    fields: dict[str, Any] = {"listener": lc.label, "route": route,
                              "backends": tuple(BackendChoice.of(b) for b in entry.backends), **base}
    notes = []
    if len(lc.streams) > 1 and protocol != "tls":
        notes.append(f"{len(lc.streams) - 1} other route(s) attach to listener {lc.label}; Envoy forwards to the "
                     "oldest only")
    chosen = weighted_pick(entry.backends, f"{key}:{port} {ident}") if entry.backends else None
    if chosen is None:
        return StreamRouteResult(protocol, key, port, INVALID_BACKEND,
                                 f"{target} → {route}: no backend with a weight: Envoy closes the connection", tls=hs,
                                 notes=tuple(notes), **fields)
    if not chosen.valid:
        # The connection reaches no backend (conformance tlsroute-invalid-backendref-nonexistent.go: rejected), so
        # the answer names none: the invalid reference stays in ``backends`` with its problem.
        return StreamRouteResult(protocol, key, port, INVALID_BACKEND,
                                 f"{target} → {route} → backend {chosen.describe()} is invalid ({chosen.reason}: "
                                 f"{chosen.problem}): Envoy closes the connection", tls=hs, notes=tuple(notes),
                                 **fields)
    fields["backend"] = BackendChoice.of(chosen)
    endpoint = choose_endpoint(ready_endpoints(state, chosen), f"{key}:{port} {ident}")
    if endpoint is None:
        return StreamRouteResult(protocol, key, port, NO_ENDPOINTS,
                                 f"{target} → {route} → Service {chosen.describe()} has no ready endpoints: Envoy "
                                 "closes the connection", tls=hs, notes=tuple(notes), **fields)
    fields["endpoint"] = endpoint
    if hs is not None and hs.mode == "passthrough":
        pod = state.pods.get(endpoint.pod)
        if pod is not None:
            serving = pod_certificate(state, pod)
            info = serving.info
            hs = TLSHandshake(hs.sni, hs.listener, hs.mode, hs.route, info, f"backend pod {pod.key}",
                              info.covers(hs.sni) if hs.sni else None)
            notes.append("passthrough: the backend pod's TLS server answers the handshake with its own certificate")
    # The proxy originates TLS to the backend only where it terminated the client's (a BackendTLSPolicy).
    backend_hs = backend_handshake(state, chosen, endpoint, now, client_chain) \
        if hs is not None and hs.mode == "terminate" else None
    if backend_hs is not None:
        fields["backend_tls"] = backend_hs
        if not backend_hs.verdict.ok:
            return StreamRouteResult(protocol, key, port, BACKEND_TLS_FAILED,
                                     f"{target} → {route} → Service {chosen.describe()}: BackendTLSPolicy "
                                     f"{chosen.tls.policy if chosen.tls else ''} {backend_hs.failure()}: Envoy "
                                     "closes the connection",
                                     tls=hs, notes=tuple(notes), **fields)
    return StreamRouteResult(protocol, key, port, PROXIED,
                             f"{target} → {route} → Service {chosen.describe()} → {endpoint.describe()}", tls=hs,
                             notes=tuple(notes), **fields)

