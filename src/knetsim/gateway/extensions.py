"""An implementation's own extension objects (its ``extension_kinds``: kgateway's TrafficPolicy, GKE's
GCPBackendPolicy, ...) that reach a request: read untyped, never simulated, always named.

knetsim simulates Envoy Gateway's SecurityPolicy, BackendTrafficPolicy and ClientTrafficPolicy
(``envoypolicies.py``) on Envoy Gateway only. Every other extension object in the cluster whose target is the
route that answered, its Gateway or a Service the route sends to (GEP-713 ``targetRef``/``targetRefs``) could
change the answer on the implementation that reads it; knetsim does not know how, so the answer says so
instead of pretending the object is not there. An Envoy Gateway policy on a Gateway of another
implementation is named too: that implementation does not read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..cluster.gatewayimplementations import Implementation
from ..cluster.state import ClusterState
from ..model.objects import Object
from .envoypolicies import EG_GROUP, POLICY_KINDS, Attached

GW_GROUP = "gateway.networking.k8s.io"


def _refs(raw: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = raw.get("spec")
    if not isinstance(spec, Mapping):
        return []
    refs = [r for r in spec.get("targetRefs") or () if isinstance(r, Mapping)]
    if isinstance(spec.get("targetRef"), Mapping):
        refs.append(spec["targetRef"])
    return refs


def _group(obj: Object) -> str:
    api = str(obj.raw.get("apiVersion") or "")
    return api.split("/", 1)[0] if "/" in api else ""


def _hits(obj: Object, gateway: str, route_kind: str, route: str, services: Iterable[str]) -> str | None:
    """What ``obj`` targets among the Gateway, the route and the Services (None: none of them)."""
    wanted = {("Gateway", gateway), (route_kind, route), *(("Service", s) for s in services)}
    for ref in _refs(obj.raw):
        kind = str(ref.get("kind") or "")
        namespace = str(ref.get("namespace") or obj.namespace)
        key = f"{namespace}/{ref.get('name') or ''}"
        if (kind, key) in wanted:
            return f"{kind} {key}"
    return None


def _objects(state: ClusterState, group: str, kind: str) -> list[Object]:
    return sorted((o for o in state.objects_of(kind) if _group(o) == group), key=lambda o: o.key)


def unsimulated(state: ClusterState, impl: Implementation, gateway: str, route_kind: str, route: str,
                services: Iterable[str]) -> list[tuple[str, str]]:
    """(``Kind ns/name``, why) for each of ``impl``'s extension objects that reaches the request and that knetsim
    does not simulate."""
    services = tuple(services)
    out = []
    for entry in impl.extension_kinds:
        group, _, kind = entry.partition("/")
        if group == EG_GROUP and kind in POLICY_KINDS:
            continue  # simulated (envoypolicies.py)
        for obj in _objects(state, group, kind):
            target = _hits(obj, gateway, route_kind, route, services)
            if target is not None:
                out.append((f"{kind} {obj.key}", f"({group}) targets {target}: {impl.title} applies it to this "
                                                 "request; knetsim reads it but does not simulate it, so this answer "
                                                 "leaves it out"))
    return out


def envoy_policies_targeting(state: ClusterState, gateway: str, route_kind: str, route: str) -> list[str]:
    """``Kind ns/name`` of each Envoy Gateway policy that targets the Gateway or the route."""
    return [f"{kind} {obj.key}" for kind in POLICY_KINDS for obj in _objects(state, EG_GROUP, kind)
            if _hits(obj, gateway, route_kind, route, ()) is not None]


# The fields of Envoy Gateway's policies envoypolicies.py and resilience.py simulate; any other field of a policy
# in force (jwt, oidc, apiKeyAuth, loadBalancer, circuitBreaker, healthCheck, a global rate limit ...) is named.
SIMULATED_FIELDS = {
    "SecurityPolicy": frozenset({"targetRefs", "targetRef", "targetSelectors", "cors", "extAuth", "basicAuth",
                                 "authorization"}),
    "BackendTrafficPolicy": frozenset({"targetRefs", "targetRef", "targetSelectors", "requestBuffer", "rateLimit",
                                       "retry", "timeout"}),
    "ClientTrafficPolicy": frozenset({"targetRefs", "targetRef", "targetSelectors", "clientIPDetection"}),
}


def unsimulated_fields(policies: Attached) -> list[str]:
    """``Kind ns/name fields a, b: read, not simulated`` for each Envoy Gateway policy in force with fields knetsim
    does not run (a global rate limit too: only the local one is)."""
    out = []
    for policy in (policies.security, policies.traffic, policies.client):
        if policy is None:
            continue
        fields = sorted(k for k in policy.spec if k not in SIMULATED_FIELDS.get(policy.kind, frozenset()))
        rate = policy.spec.get("rateLimit")
        if isinstance(rate, dict) and rate.get("global") is not None:
            fields.append("rateLimit.global")
        if fields:
            out.append(f"{policy.label} {', '.join(fields)}: in force on Envoy Gateway; knetsim reads but does not "
                       "simulate these fields, so this answer leaves them out")
    return out
