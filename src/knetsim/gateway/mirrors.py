"""RequestMirror: the copy of a request the proxy sends to another backend, whose answer nobody waits for.

The API (kubernetes-sigs/gateway-api ``apis/v1/httproute_types.go``, ``HTTPRequestMirrorFilter``): the request is
sent to the mirror's ``backendRef`` as well; "responses from the mirror are ignored" — the client gets the
primary backend's answer. ``percent`` (0-100) or ``fraction`` (``numerator``/``denominator``, 100 by default)
mirrors only that share of the requests (HTTPRouteRequestPercentageMirror); several mirror filters send one copy
each (HTTPRouteRequestMultipleMirrors). The conformance tests (``httproute-request-mirror.go``,
``httproute-request-multiple-mirrors.go``) check the mirror backend's log for the request: the copy carries the
path and headers the rule's filters gave the primary request.

Which requests a percentage mirrors is fixed per request here (a hash of what identifies it), as knetsim's
weighted picks are, so one question has one answer; over many requests the share is the one written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..cluster.state import ClusterState
from ..model.gatewayapi import BackendRef, Filter
from .translate import resolve_backend
from .upstream import Endpoint, choose_endpoint, ready_endpoints


@dataclass(frozen=True, slots=True)
class MirroredCopy:
    backend: str  # namespace/name:port of the mirror's Service
    percent: float  # the share of the rule's requests that are mirrored
    sent: bool  # whether this request is copied (its share, a valid backend with a ready endpoint)
    why: str
    endpoint: Endpoint | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "percent": self.percent, "sent": self.sent, "why": self.why,
                "endpoint": self.endpoint.to_dict() if self.endpoint is not None else None}


def _percent(mirror: Mapping[str, Any]) -> float:
    if isinstance(mirror.get("percent"), int):
        return float(mirror["percent"])
    fraction = mirror.get("fraction")
    if isinstance(fraction, Mapping) and isinstance(fraction.get("numerator"), int):
        denominator = fraction.get("denominator") if isinstance(fraction.get("denominator"), int) else 100
        return 100.0 * fraction["numerator"] / denominator if denominator else 0.0
    return 100.0


def _within(percent: float, ident: str) -> bool:
    if percent >= 100:
        return True
    point = int.from_bytes(hashlib.sha256(f"mirror {ident}".encode()).digest()[:8], "big") % 10000
    return point < percent * 100


def mirrored_copies(state: ClusterState, route: Any, filters: tuple[Filter, ...], ident: str
                    ) -> tuple[MirroredCopy, ...]:
    """One entry per RequestMirror filter of the rule, in order, for the request ``ident`` names."""
    out = []
    for f in filters:
        if f.type != "RequestMirror":
            continue
        mirror = (f.raw or {}).get("requestMirror")
        ref_raw = mirror.get("backendRef") if isinstance(mirror, Mapping) else None
        if not isinstance(mirror, Mapping) or not isinstance(ref_raw, Mapping):
            continue
        port = ref_raw.get("port")
        ref = BackendRef(0, str(ref_raw.get("group") or ""), str(ref_raw.get("kind") or "Service"),
                         str(ref_raw.get("name") or ""), ref_raw.get("namespace"),
                         port if isinstance(port, int) else None, 1)
        backend = resolve_backend(state, route, ref)
        percent = _percent(mirror)
        label = backend.describe()
        if not backend.valid:
            out.append(MirroredCopy(label, percent, False, f"mirror {label} is invalid ({backend.reason}: "
                                    f"{backend.problem}): no copy is sent"))
            continue
        if not _within(percent, ident):
            out.append(MirroredCopy(label, percent, False, f"this request is outside the {percent:g}% mirrored"))
            continue
        endpoint = choose_endpoint(ready_endpoints(state, backend), f"mirror {ident}")
        if endpoint is None:
            out.append(MirroredCopy(label, percent, False, f"mirror {label} has no ready endpoint: the copy is lost"))
            continue
        out.append(MirroredCopy(label, percent, True, f"a copy goes to {label} → {endpoint.describe()}; its answer "
                                "is ignored", endpoint))
    return tuple(out)
