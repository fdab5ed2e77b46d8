"""The proxy's upstream side: which backend of a weighted rule, which endpoint of its Service, and the TLS
the proxy speaks to it.

A real proxy picks at random; knetsim picks from a hash of what identifies the request or connection,
so one question always gets one answer and the shares over many follow the weights. Envoy Gateway
routes to the EndpointSlice endpoints itself (no ClusterIP, no kube-proxy on this leg).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..cluster.state import ClusterState
from .backendtls import BackendHandshake, verify_backend
from .translate import ResolvedBackend


def _point(ident: str, total: int) -> int:
    return int.from_bytes(hashlib.sha256(ident.encode()).digest()[:8], "big") % total


def weighted_pick(backends: tuple[ResolvedBackend, ...], ident: str) -> ResolvedBackend | None:
    """One backend by weight (None when every weight is 0), fixed for ``ident``."""
    total = sum(b.weight for b in backends)
    if total == 0:
        return None
    point = _point(ident, total)
    for b in backends:
        if point < b.weight:
            return b
        point -= b.weight
    return backends[-1]  # pragma: no cover - the weights add up to total


@dataclass(frozen=True, slots=True)
class Endpoint:
    pod: str  # namespace/name
    ip: str
    port: int

    def describe(self) -> str:
        return f"{self.pod} {self.ip}:{self.port}"

    def to_dict(self) -> dict[str, Any]:
        return {"pod": self.pod, "ip": self.ip, "port": self.port}


def ready_endpoints(state: ClusterState, backend: ResolvedBackend) -> list[Endpoint]:
    """The ready endpoints of the backend's Service port, sorted by address."""
    svc = state.services.get(backend.service)
    if svc is None:
        return []
    out = []
    for es in state.slices_for(svc):
        port = next((p for p in es.ports if p.name == backend.port_name and p.port), None)
        if port is None or port.port is None:
            continue
        for e in es.endpoints:
            if not e.ready or not e.addresses:
                continue
            pod = f"{e.target_ref[1]}/{e.target_ref[2]}" if e.target_ref and e.target_ref[0] == "Pod" else ""
            out.append(Endpoint(pod, e.addresses[0], port.port))
    return sorted(set(out), key=lambda e: (e.ip, e.port, e.pod))


def choose_endpoint(endpoints: list[Endpoint], ident: str) -> Endpoint | None:
    return endpoints[_point(ident, len(endpoints))] if endpoints else None


def backend_handshake(state: ClusterState, backend: ResolvedBackend, endpoint: Endpoint, now: datetime,
                      client_chain: Sequence[Any] | None = None) -> BackendHandshake | None:
    """The proxy's TLS handshake with ``endpoint`` when a BackendTLSPolicy covers the backend (else None),
    presenting ``client_chain`` (the Gateway's backend client certificate) where the pod asks for one."""
    if backend.tls is None:
        return None
    pod = state.pods.get(endpoint.pod)
    if pod is None:
        return None
    return verify_backend(state, backend.tls, pod, now, client_chain)


def envoy_tls_failure(hs: BackendHandshake) -> str:
    """Envoy's words for a failed handshake with a backend (the 503 body)."""
    reason = hs.refused_by_pod or ENVOY_TLS_VERIFY_FAILED.rsplit("transport failure reason: ", 1)[1]
    return ("upstream connect error or disconnect/reset before headers. reset reason: remote connection failure, "
            f"transport failure reason: {reason}")


ENVOY_TLS_VERIFY_FAILED = ("upstream connect error or disconnect/reset before headers. reset reason: remote connection "
                           "failure, transport failure reason: TLS_error:|268435581:SSL routines:OPENSSL_internal:"
                           "CERTIFICATE_VERIFY_FAILED")
