"""Which Gateway API features an object uses, by the names the conformance suite gives them.

The names are the suite's (kubernetes-sigs/gateway-api ``pkg/features``), so a route's needs compare with an
implementation's report (``cluster/gatewayimplementations.py``) and its GatewayClass's
``status.supportedFeatures``. Only features a manifest shows are found (a route's match types, filters,
timeouts, retry, rule names, parentRef ports; the appProtocol of the Service a backendRef names; a Gateway's
addresses, infrastructure, client certificates; route kinds beyond HTTPRoute). Core features are never
listed: every conformant implementation has them.

What an implementation does with a feature it lacks is the API's where the API says it
(kubernetes-sigs/gateway-api ``apis/v1/httproute_types.go``): an unsupported filter ``type``, ``method``,
redirect ``scheme`` or ``statusCode``, or path modifier ``type`` MUST set the route's ``Accepted`` condition to
False with reason ``UnsupportedValue`` — ``refused`` applies that, per parent, to every feature of a filter or a
match the implementation's report does not claim, and to route kinds outside its conformance profiles, so
such a route is routed nowhere on that implementation. Where the API is silent (a rule's ``name``,
``timeouts``, ``retry``, a backend's ``appProtocol``), an implementation that lacks the feature serves the
route without it: ``IGNORED`` features are reported (doctor, ``gateway check``) but do not refuse the route.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..cluster.gatewayimplementations import Implementation
from ..model.kinds import BY_KIND, ROUTE_KINDS

_REDIRECT_CODES = {303: "HTTPRoute303RedirectStatusCode", 307: "HTTPRoute307RedirectStatusCode",
                   308: "HTTPRoute308RedirectStatusCode"}
_APP_PROTOCOLS = {"kubernetes.io/h2c": "HTTPRouteBackendProtocolH2C",
                  "kubernetes.io/ws": "HTTPRouteBackendProtocolWebSocket",
                  "kubernetes.io/wss": "HTTPRouteBackendProtocolWebSocket"}


# Fields the API does not tell an implementation to refuse: without the feature, the route is served without it.
IGNORED: frozenset[str] = frozenset({
    "HTTPRouteNamedRouteRule", "HTTPRouteRequestTimeout", "HTTPRouteBackendTimeout", "HTTPRouteRetry",
    "HTTPRouteRetryBackendTimeout", "HTTPRouteRetryConnectionError", "HTTPRouteBackendProtocolH2C",
    "HTTPRouteBackendProtocolWebSocket",
    # A Gateway's own fields: the doctor warns (GatewayFeatureUnsupported); no route is refused for them.
    "GatewayStaticAddresses", "GatewayInfrastructurePropagation", "GatewayPort8080",
    "GatewayFrontendClientCertificateValidation", "GatewayBackendClientCertificate",
})


@dataclass(frozen=True, slots=True)
class FeatureUse:
    feature: str  # the conformance suite's name
    where: str  # the field path that uses it


def raw_rule(route: Any, index: int) -> Mapping[str, Any]:
    """Rule ``index`` of a route as written (fields the typed model does not read: timeouts, retry)."""
    return _raw_rule(route, index)


def _raw_rule(route: Any, index: int) -> Mapping[str, Any]:
    rules = ((route.raw or {}).get("spec") or {}).get("rules") or []
    if isinstance(rules, list) and index < len(rules) and isinstance(rules[index], Mapping):
        return rules[index]
    return {}


def _filters(filters: Any, where: str) -> list[FeatureUse]:
    out: list[FeatureUse] = []
    mirrors = 0
    for i, f in enumerate(filters):
        path = f"{where}.filters[{i}]"
        if f.type == "ResponseHeaderModifier":
            out.append(FeatureUse("HTTPRouteResponseHeaderModification", path))
        elif f.type == "RequestRedirect" and f.request_redirect is not None:
            rr = f.request_redirect
            if rr.status_code in _REDIRECT_CODES:
                out.append(FeatureUse(_REDIRECT_CODES[rr.status_code], f"{path}.requestRedirect.statusCode"))
            if rr.port is not None:
                out.append(FeatureUse("HTTPRoutePortRedirect", f"{path}.requestRedirect.port"))
            if rr.scheme is not None:
                out.append(FeatureUse("HTTPRouteSchemeRedirect", f"{path}.requestRedirect.scheme"))
            if rr.path is not None:
                out.append(FeatureUse("HTTPRoutePathRedirect", f"{path}.requestRedirect.path"))
        elif f.type == "URLRewrite" and f.url_rewrite is not None:
            if f.url_rewrite.hostname is not None:
                out.append(FeatureUse("HTTPRouteHostRewrite", f"{path}.urlRewrite.hostname"))
            if f.url_rewrite.path is not None:
                out.append(FeatureUse("HTTPRoutePathRewrite", f"{path}.urlRewrite.path"))
        elif f.type == "RequestMirror":
            mirrors += 1
            out.append(FeatureUse("HTTPRouteRequestMirror", path))
            mirror = (f.raw or {}).get("requestMirror") or {}
            if isinstance(mirror, Mapping) and ("percent" in mirror or "fraction" in mirror):
                out.append(FeatureUse("HTTPRouteRequestPercentageMirror", f"{path}.requestMirror"))
            if mirrors == 2:
                out.append(FeatureUse("HTTPRouteRequestMultipleMirrors", path))
        elif f.type == "CORS":
            out.append(FeatureUse("HTTPRouteCORS", path))
    return out


def route_features(route: Any, services: Mapping[str, Any] | None = None) -> list[FeatureUse]:
    """The extended features ``route`` uses, in the order of its fields (first use of each)."""
    kind = str(route.kind)
    out: list[FeatureUse] = []
    if kind in ("GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute"):
        out.append(FeatureUse(kind, "kind"))
    for i, ref in enumerate(route.parent_refs):
        if ref.port is not None and kind == "HTTPRoute":
            out.append(FeatureUse("HTTPRouteParentRefPort", f"spec.parentRefs[{i}].port"))
    for rule in route.rules:
        where = f"spec.rules[{rule.index}]"
        raw = _raw_rule(route, rule.index)
        if kind == "HTTPRoute" and rule.name:
            out.append(FeatureUse("HTTPRouteNamedRouteRule", f"{where}.name"))
        for m, match in enumerate(getattr(rule, "matches", ()) if kind == "HTTPRoute" else ()):
            if match.query_params:
                out.append(FeatureUse("HTTPRouteQueryParamMatching", f"{where}.matches[{m}].queryParams"))
            if match.method:
                out.append(FeatureUse("HTTPRouteMethodMatching", f"{where}.matches[{m}].method"))
        if kind == "HTTPRoute":
            out.extend(_filters(rule.filters, where))
            timeouts = raw.get("timeouts") or {}
            if isinstance(timeouts, Mapping):
                if timeouts.get("request") is not None:
                    out.append(FeatureUse("HTTPRouteRequestTimeout", f"{where}.timeouts.request"))
                if timeouts.get("backendRequest") is not None:
                    out.append(FeatureUse("HTTPRouteBackendTimeout", f"{where}.timeouts.backendRequest"))
            if raw.get("retry") is not None:
                out.append(FeatureUse("HTTPRouteRetry", f"{where}.retry"))
        for b in rule.backend_refs:
            bwhere = f"{where}.backendRefs[{b.index}]"
            if kind == "HTTPRoute" and any(f.type == "RequestHeaderModifier" for f in b.filters):
                out.append(FeatureUse("HTTPRouteBackendRequestHeaderModification", f"{bwhere}.filters"))
            if services is not None and b.group == "" and b.kind == "Service" and b.port is not None:
                svc = services.get(f"{b.namespace or route.namespace}/{b.name}")
                port = next((p for p in getattr(svc, "ports", ()) if p.port == b.port), None)
                feature = _APP_PROTOCOLS.get(getattr(port, "app_protocol", None) or "")
                if feature is not None and kind == "HTTPRoute":
                    out.append(FeatureUse(feature, f"{bwhere} (Service {svc.key} port {b.port} appProtocol)"))
    seen: set[str] = set()
    return [u for u in out if not (u.feature in seen or seen.add(u.feature))]


def gateway_features(gateway: Any) -> list[FeatureUse]:
    out: list[FeatureUse] = []
    if gateway.addresses:
        out.append(FeatureUse("GatewayStaticAddresses", "spec.addresses"))
    infra = ((gateway.raw or {}).get("spec") or {}).get("infrastructure")
    if isinstance(infra, Mapping) and (infra.get("labels") or infra.get("annotations")):
        out.append(FeatureUse("GatewayInfrastructurePropagation", "spec.infrastructure"))
    if any(li.port == 8080 for li in gateway.listeners):
        out.append(FeatureUse("GatewayPort8080", "spec.listeners[].port"))
    if gateway.frontend_validation:
        out.append(FeatureUse("GatewayFrontendClientCertificateValidation", "spec.tls.frontend"))
    if gateway.backend_client_certificate is not None:
        out.append(FeatureUse("GatewayBackendClientCertificate", "spec.tls.backend"))
    return out


def refused(uses: list[FeatureUse], impl: Implementation) -> list[FeatureUse]:
    """The unsupported uses that make ``impl`` refuse the route (``Accepted: False``, ``UnsupportedValue``)."""
    return [u for u in unsupported(uses, impl) if u.feature not in IGNORED]


def ignored(uses: list[FeatureUse], impl: Implementation) -> list[FeatureUse]:
    """The unsupported uses ``impl`` serves the route without (timeouts, retries, rule names, appProtocol)."""
    return [u for u in unsupported(uses, impl) if u.feature in IGNORED]


def unsupported(uses: list[FeatureUse], impl: Implementation) -> list[FeatureUse]:
    """The uses ``impl`` does not serve (route kinds by conformance profile, the rest by its report)."""
    out = []
    for u in uses:
        ok = impl.serves_kind(u.feature) if u.where == "kind" else impl.supports(u.feature)
        if not ok:
            out.append(u)
    return out


@dataclass(frozen=True, slots=True)
class ObjectFeatures:
    subject: str  # "HTTPRoute default/backend", "Gateway default/eg"
    uses: tuple[FeatureUse, ...]

    def missing(self, impl: Implementation) -> list[FeatureUse]:
        return unsupported(list(self.uses), impl)


def used_features(state: Any) -> list[ObjectFeatures]:
    """Every Gateway and route of ``state`` with the extended features it uses, Gateways first, then routes by
    kind and namespace/name: what ``knetsim gateway check`` compares with each implementation's report."""
    out = [ObjectFeatures(f"Gateway {key}", tuple(gateway_features(state.gateways[key])))
           for key in sorted(state.gateways)]
    for kind in sorted(ROUTE_KINDS):
        routes = getattr(state, str(BY_KIND[kind].collection))
        for key in sorted(routes):
            out.append(ObjectFeatures(f"{kind} {key}", tuple(route_features(routes[key], state.services))))
    return out
