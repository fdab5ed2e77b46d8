"""The conversion for an implementation other than Envoy Gateway: its own extension objects where it has an
equivalent of what ``features.py`` writes as Envoy Gateway's policies, a note for everything else.

``convert`` writes the Envoy Gateway form first (its policies carry every annotation without a standard
equivalent); ``for_implementation`` then rewrites each policy for the implementation the user runs, as
ingress2gateway's emitters do (kubernetes-sigs/ingress2gateway ``pkg/i2gw/emitters``; facts and field names
only):

==================  =========================================================================================
kgateway            the body limit as a ``TrafficPolicy`` (``gateway.kgateway.dev/v1alpha1``) ``buffer.
                    maxRequestSize`` on the same targets (its emitter's ``EmitBuffer``)
agentgateway        nothing: its ``AgentgatewayPolicy`` has no body limit for HTTPRoute targets (its emitter
                    drops it with a warning)
GKE                 session affinity (ingress-nginx's cookie affinity) as a ``GCPBackendPolicy``
                    (``networking.gke.io/v1``) per backend Service: ``default.sessionAffinity`` type
                    ``GENERATED_COOKIE`` with ``cookieTtlSec`` (its emitter's ``BuildGCPBackendPolicySession
                    AffinityConfig``)
every other one     nothing of Envoy Gateway's: each policy field is named with the annotation it came from
==================  =========================================================================================

A field an implementation has no equivalent for is named with the annotation it carries and why. The
standard CORS filter is kept only where the implementation's report claims ``HTTPRouteCORS``: elsewhere the
API tells the implementation to refuse the whole route (``UnsupportedValue``), so the filter is removed and
named instead.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from ..cluster.gatewayimplementations import AGENTGATEWAY, GKE, KGATEWAY, Implementation
from . import features

KGATEWAY_API = "gateway.kgateway.dev/v1alpha1"
GKE_API = "networking.gke.io/v1"

# Which ingress-nginx annotations (or ConfigMap keys) each Envoy Gateway policy field carries (features.py).
FIELD_SOURCES: dict[str, str] = {
    "authorization": "whitelist-source-range / denylist-source-range",
    "basicAuth": "auth-type basic, auth-secret",
    "extAuth": "auth-url",
    "cors": "enable-cors",
    "rateLimit": "limit-rps / limit-rpm",
    "requestBuffer": "proxy-body-size",
    "loadBalancer": "affinity cookie / upstream-hash-by",
    "retry": "proxy-next-upstream / proxy-next-upstream-tries",
    "timeout": "proxy-connect-timeout",
    "clientIPDetection": "use-forwarded-headers (ConfigMap)",
}

# (severity, message) notes, keyed by the Ingress ("ns/name") or the policy they come from.
Noted = list[tuple[str, str, str]]  # (subject, field, message)


def _source(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    converted = (meta.get("annotations") or {}).get("knetsim.io/converted-from", "")
    if converted.startswith("Ingress "):
        return converted.removeprefix("Ingress ")
    # A Gateway-wide policy carries the controller's ConfigMap for every Ingress of the namespace.
    return f"{meta.get('namespace', '')}/* (the controller's ConfigMap)"


def _lost(obj: dict[str, Any], fields: list[str], impl: Implementation, why: str) -> tuple[str, str, str]:
    named = "; ".join(f"{f} ({FIELD_SOURCES.get(f, f)})" for f in fields)
    return (_source(obj), "metadata.annotations", f"{named}: written for Envoy Gateway as {obj['kind']} "
            f"{obj['metadata']['name']}, which {impl.title} does not read; not converted ({why})")


def _policy_fields(obj: dict[str, Any]) -> list[str]:
    return [k for k in obj.get("spec", {}) if k not in ("targetRefs", "targetRef")]


def _kgateway(obj: dict[str, Any], _routes: dict[tuple[str, str], dict[str, Any]], impl: Implementation
              ) -> tuple[list[dict[str, Any]], Noted]:
    spec = obj["spec"]
    made: list[dict[str, Any]] = []
    notes: Noted = []
    rest = _policy_fields(obj)
    if obj["kind"] == "BackendTrafficPolicy" and "requestBuffer" in spec:
        rest.remove("requestBuffer")
        made.append({"apiVersion": KGATEWAY_API, "kind": "TrafficPolicy",
                     "metadata": copy.deepcopy(obj["metadata"]),
                     "spec": {"targetRefs": copy.deepcopy(spec["targetRefs"]),
                              "buffer": {"maxRequestSize": spec["requestBuffer"]["limit"]}}})
        notes.append((_source(obj), "metadata.annotations", f"requestBuffer ({FIELD_SOURCES['requestBuffer']}): "
                      f"kgateway TrafficPolicy {obj['metadata']['name']} buffer.maxRequestSize "
                      f"{spec['requestBuffer']['limit']}"))
    if rest:
        notes.append(_lost(obj, rest, impl, "knetsim writes for kgateway only what ingress2gateway's kgateway "
                                            "emitter writes, the body limit, and cannot check the rest"))
    return made, notes


def _agentgateway(obj: dict[str, Any], _routes: dict[tuple[str, str], dict[str, Any]], impl: Implementation
                  ) -> tuple[list[dict[str, Any]], Noted]:
    fields = _policy_fields(obj)
    notes: Noted = []
    if "requestBuffer" in fields:
        fields.remove("requestBuffer")
        notes.append(_lost(obj, ["requestBuffer"], impl, "AgentgatewayPolicy has no body size limit for HTTPRoute "
                                                         "targets"))
    if fields:
        notes.append(_lost(obj, fields, impl, "ingress2gateway's agentgateway emitter writes no AgentgatewayPolicy "
                                              "for it, and knetsim cannot check one"))
    return [], notes


def _gke(obj: dict[str, Any], routes: dict[tuple[str, str], dict[str, Any]], impl: Implementation
         ) -> tuple[list[dict[str, Any]], Noted]:
    spec = obj["spec"]
    fields = _policy_fields(obj)
    made: list[dict[str, Any]] = []
    notes: Noted = []
    hashing = (spec.get("loadBalancer") or {}).get("consistentHash") or {}
    if obj["kind"] == "BackendTrafficPolicy" and hashing.get("type") == "Cookie":
        fields.remove("loadBalancer")
        namespace = obj["metadata"]["namespace"]
        affinity: dict[str, Any] = {"type": "GENERATED_COOKIE"}
        ttl = (hashing.get("cookie") or {}).get("ttl")
        if isinstance(ttl, str) and ttl.endswith("s") and ttl[:-1].isdigit():
            affinity["cookieTtlSec"] = int(ttl[:-1])
        for service in _services(spec, namespace, routes):
            made.append({"apiVersion": GKE_API, "kind": "GCPBackendPolicy",
                         "metadata": {"name": f"{service}-affinity", "namespace": namespace,
                                      "annotations": dict(obj["metadata"].get("annotations") or {})},
                         "spec": {"default": {"sessionAffinity": dict(affinity)},
                                  "targetRef": {"group": "", "kind": "Service", "name": service}}})
        notes.append((_source(obj), "metadata.annotations", "affinity cookie: GCPBackendPolicy sessionAffinity "
                      "GENERATED_COOKIE on each backend Service (the load balancer names the cookie GCLB, not "
                      f"{(hashing.get('cookie') or {}).get('name', 'INGRESSCOOKIE')}, and the affinity is the "
                      "Service's on every route, not this route's)"))
    if fields:
        notes.append(_lost(obj, fields, impl, "ingress2gateway's GKE emitter writes only session affinity, health "
                                              "checks and SSL or Cloud Armor policies from GKE's own annotations"))
    return made, notes


def _services(spec: dict[str, Any], namespace: str, routes: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for ref in spec.get("targetRefs") or ():
        route = routes.get((namespace, ref.get("name", "")))
        for rule in (route or {}).get("spec", {}).get("rules") or ():
            names.extend(b["name"] for b in rule.get("backendRefs") or () if b.get("name"))
    return sorted(set(names))


def _none(obj: dict[str, Any], _routes: dict[tuple[str, str], dict[str, Any]], impl: Implementation
          ) -> tuple[list[dict[str, Any]], Noted]:
    own = ", ".join(impl.extension_kinds) or "none"
    return [], [_lost(obj, _policy_fields(obj), impl, f"ingress2gateway has no emitter for {impl.title}; its own "
                                                      f"kinds ({own}) are not written by knetsim")]


_EMITTERS: dict[str, Callable[..., tuple[list[dict[str, Any]], Noted]]] = {
    KGATEWAY.key: _kgateway, AGENTGATEWAY.key: _agentgateway, GKE.key: _gke}


def for_implementation(objects: list[dict[str, Any]], impl: Implementation) -> tuple[list[dict[str, Any]], Noted]:
    """The objects of an Envoy Gateway conversion rewritten for ``impl``: its extension objects in place of Envoy
    Gateway's policies, the CORS filter kept only where it is claimed; and a note per thing changed or lost."""
    emit = _EMITTERS.get(impl.key, _none)
    routes = {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects
              if o.get("kind") == "HTTPRoute"}
    out: list[dict[str, Any]] = []
    extra: list[dict[str, Any]] = []
    notes: Noted = []
    for obj in objects:
        if obj.get("apiVersion") == features.EG_API:
            made, more = emit(obj, routes, impl)
            extra.extend(made)
            notes.extend(more)
            continue
        if obj.get("kind") == "HTTPRoute" and not impl.supports("HTTPRouteCORS"):
            notes.extend(_without_cors(obj, impl))
        out.append(obj)
    unique = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in reversed(extra)}
    return [*out, *(unique[k] for k in sorted(unique))], notes


def _without_cors(route: dict[str, Any], impl: Implementation) -> Noted:
    removed = False
    for rule in route["spec"].get("rules") or ():
        kept = [f for f in rule.get("filters") or () if f.get("type") != "CORS"]
        if len(kept) != len(rule.get("filters") or ()):
            removed = True
            if kept:
                rule["filters"] = kept
            else:
                rule.pop("filters", None)
    if not removed:
        return []
    return [(_source(route), f"metadata.annotations[{features.PREFIX}enable-cors]",
             f"enable-cors: {impl.title} does not claim HTTPRouteCORS, so a CORS filter would make it refuse HTTPRoute "
             f"{route['metadata']['name']} (UnsupportedValue); not converted (browsers get no CORS headers)")]
