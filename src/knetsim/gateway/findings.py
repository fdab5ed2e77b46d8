"""Gateway API problems for the doctor, read off the controller's own translation.

Every finding comes from a condition the controller sets (so the doctor and ``kubectl get -o
yaml`` never disagree), names the object and field, says what the Gateway does about it, and
carries a fix that can be pasted: a ``kubectl patch`` with the exact JSON pointer, or the
ReferenceGrant to apply.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from ..cluster.gatewayinfra import EG_CONTROLLER, OWNING_NAME
from ..cluster.state import ClusterState
from ..model.gatewayapi import GROUP, HTTPRoute
from ..model.labels import edit_distance
from .translate import GatewayContext, ParentStatus, ResolvedBackend, RouteContext, translate


@dataclass(frozen=True, slots=True)
class GatewayFinding:
    code: str
    severity: str  # "error" | "warning" | "info"
    subject: str  # "HTTPRoute default/backend"
    field: str
    message: str
    fix: str
    layer: str = "gateway"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _closest(name: str, names: list[str]) -> str | None:
    scored = sorted((edit_distance(name, n), n) for n in names if n != name)
    return scored[0][1] if scored and scored[0][0] <= max(2, len(name) // 3) else None


def _patch(kind: str, namespace: str, name: str, ops: list[dict[str, Any]]) -> str:
    ns = f"-n {namespace} " if namespace else ""
    return f"kubectl {ns}patch {kind} {name} --type json -p '{json.dumps(ops, separators=(',', ':'))}'"


def gateway_findings(state: ClusterState, namespace: str | None = None) -> list[GatewayFinding]:
    """Problems of every Gateway and HTTPRoute (of ``namespace``, if given), sorted by subject and field."""
    t = translate(state)
    out: list[GatewayFinding] = []
    for key in sorted(state.gateways):
        gw = state.gateways[key]
        if namespace is not None and gw.namespace != namespace:
            continue
        gctx = t.gateways.get(key)
        if gctx is None:
            out.append(_unclaimed_gateway(state, key))
        else:
            out.extend(_gateway(gctx))
    for rc in t.routes_of("HTTPRoute"):
        if namespace is not None and rc.route.namespace != namespace:
            continue
        out.extend(_route(state, t.gateways, rc))
    out.sort(key=lambda f: (f.subject, f.field, f.code))
    return out


def _unclaimed_gateway(state: ClusterState, key: str) -> GatewayFinding:
    gw = state.gateways[key]
    gc = state.gateway_classes.get(gw.class_name)
    subject = f"Gateway {key}"
    ours = sorted(c.name for c in state.gateway_classes.values() if c.controller_name == EG_CONTROLLER)
    if gc is None:
        fix = (_patch("gateway", gw.namespace, gw.name, [{"op": "replace", "path": "/spec/gatewayClassName",
                                                          "value": ours[0]}]) if ours else
               "create the GatewayClass: kubectl apply -f - <<EOF\napiVersion: gateway.networking.k8s.io/v1\n"
               f"kind: GatewayClass\nmetadata:\n  name: {gw.class_name}\nspec:\n  controllerName: "
               f"{EG_CONTROLLER}\nEOF")
        return GatewayFinding("GatewayClassNotFound", "error", subject, "spec.gatewayClassName",
                              f"GatewayClass {gw.class_name!r} does not exist: no controller programs this Gateway "
                              "(its status stays Accepted: Unknown, Pending)", fix)
    if gc.controller_name != EG_CONTROLLER:
        return GatewayFinding("GatewayClassOtherController", "warning", subject, "spec.gatewayClassName",
                              f"GatewayClass {gc.name} names controller {gc.controller_name!r}; knetsim runs "
                              f"{EG_CONTROLLER} only, so nothing programs this Gateway here",
                              f"use a class of {EG_CONTROLLER}" + (f" ({', '.join(ours)})" if ours else ""))
    return GatewayFinding("GatewayClassNotAccepted", "error", subject, "spec.gatewayClassName",
                          f"GatewayClass {gc.name} is not accepted: Envoy Gateway accepts only the oldest class "
                          f"naming {EG_CONTROLLER} ({', '.join(ours)})",
                          _patch("gateway", gw.namespace, gw.name,
                                 [{"op": "replace", "path": "/spec/gatewayClassName", "value": ours[0]}]))


def _gateway(gctx: GatewayContext) -> list[GatewayFinding]:
    gw = gctx.gateway
    subject = f"Gateway {gw.key}"
    out = []
    for i, lc in enumerate(gctx.listeners):
        if lc.programmed:
            continue
        bad = [c for c in lc.conditions.values() if c.status == "False" or (c.type == "Conflicted" and c.ok)]
        detail = "; ".join(f"{c.type} {c.status} {c.reason}: {c.message}" for c in bad)
        code = {"UnsupportedProtocol": "GatewayListenerUnsupportedProtocol",
                "InvalidRouteKinds": "GatewayListenerInvalidRouteKinds",
                "InvalidCertificateRef": "GatewayListenerCertificate", "RefNotPermitted": "GatewayListenerCertificate",
                "HostnameConflict": "GatewayListenerConflict", "ProtocolConflict": "GatewayListenerConflict",
                }.get(bad[0].reason if bad else "", "GatewayListenerInvalid")
        fix = {"GatewayListenerUnsupportedProtocol": "protocol must be HTTP, HTTPS, TLS, TCP or UDP",
               "GatewayListenerInvalidRouteKinds": "list kinds the protocol supports in allowedRoutes.kinds "
                                                   "(HTTPRoute, GRPCRoute for HTTP/HTTPS), or remove kinds",
               "GatewayListenerCertificate": "create the TLS Secret (kubectl create secret tls NAME --cert --key) "
                                             "in the Gateway's namespace, or a ReferenceGrant for another namespace",
               "GatewayListenerConflict": "give each listener on a port a distinct hostname, one protocol per port",
               }.get(code, "see the listener's conditions: kubectl describe gateway")
        out.append(GatewayFinding(code, "error", subject, f"spec.listeners[{i}]",
                                  f"listener {lc.name} is not programmed, so no route attached to it receives "
                                  f"traffic: {detail}", fix))
    programmed = gctx.conditions.get("Programmed")
    if programmed is not None and not programmed.ok:
        fix = ("the LoadBalancer pool is exhausted or the proxy Service is missing: free an address "
               "(kubectl get svc -A | grep LoadBalancer)" if programmed.reason == "AddressNotAssigned" else
               f"kubectl -n envoy-gateway-system describe pods -l {OWNING_NAME}={gw.name}")
        out.append(GatewayFinding("GatewayNotProgrammed", "error", subject, "status.conditions[Programmed]",
                                  f"{programmed.reason}: {programmed.message}: nothing answers on the Gateway", fix))
    return out


def _route(state: ClusterState, gateways: dict[str, GatewayContext], rc: RouteContext) -> list[GatewayFinding]:
    route = rc.route
    subject = f"HTTPRoute {route.key}"
    out: list[GatewayFinding] = []
    for ref, why in rc.unclaimed:
        near = _closest(ref.name, sorted(k.split("/", 1)[1] for k in gateways
                                         if k.startswith(f"{ref.namespace or route.namespace}/")))
        fix = (_patch("httproute", route.namespace, route.name, [{"op": "replace", "path": f"/spec/parentRefs/"
                                                                 f"{ref.index}/name", "value": near}])
               if near else "point parentRefs at a Gateway of an accepted GatewayClass (kubectl get gateway -A)")
        out.append(GatewayFinding("HTTPRouteParentNotFound", "error", subject, f"spec.parentRefs[{ref.index}]",
                                  f"{why}: the route has no status from any controller and serves no traffic", fix))
    for ps in rc.parents:
        accepted = ps.conditions.get("Accepted")
        if accepted is not None and not accepted.ok:
            out.append(_not_accepted(state, gateways[ps.gateway], rc, ps, accepted.reason, accepted.message))
        partial = ps.conditions.get("PartiallyInvalid")
        if partial is not None:
            out.append(GatewayFinding("HTTPRoutePartiallyInvalid", "warning", subject, "spec.rules",
                                      f"{partial.message}: requests those rules would match fall through to other "
                                      "rules or get 404", "fix or remove the dropped rules"))
    if rc.parents and any(not p.conditions.is_false("Accepted") for p in rc.parents):
        for rule in route.rules:
            for b in rc.backends.get(rule.index, ()):
                finding = _backend(state, route, rule.index, b)
                if finding is not None:
                    out.append(finding)
    return out


def _not_accepted(state: ClusterState, gctx: GatewayContext, rc: RouteContext, ps: ParentStatus, reason: str,
                  message: str) -> GatewayFinding:
    route, ref, gw = rc.route, ps.ref, gctx.gateway
    subject = f"HTTPRoute {route.key}"
    field = f"spec.parentRefs[{ref.index}]"
    listeners = ", ".join(f"{lc.name} ({lc.listener.port}/{lc.listener.protocol}"
                          f"{', ' + lc.listener.hostname if lc.listener.hostname else ''})" for lc in gctx.listeners)
    pointer = f"/spec/parentRefs/{ref.index}"
    if reason == "NoMatchingParent":
        wanted = " and ".join(x for x in (f"sectionName {ref.section_name}" if ref.section_name else "",
                                          f"port {ref.port}" if ref.port is not None else "") if x)
        ops: list[dict[str, Any]] = []
        names = [lc.name for lc in gctx.listeners]
        if ref.section_name and ref.section_name not in names:
            near = _closest(ref.section_name, names)
            ops.append({"op": "replace", "path": f"{pointer}/sectionName", "value": near} if near
                       else {"op": "remove", "path": f"{pointer}/sectionName"})
        if ref.port is not None and all(lc.listener.port != ref.port for lc in gctx.listeners):
            ops.append({"op": "remove", "path": f"{pointer}/port"})
        fix = _patch("httproute", route.namespace, route.name, ops) if ops else f"match a listener: {listeners}"
        return GatewayFinding("HTTPRouteNoMatchingParent", "error", subject, field,
                              f"{wanted} matches no listener of Gateway {gw.key} (listeners: {listeners}): "
                              f"{message}", fix)
    if reason == "NotAllowedByListeners":
        lc = next((lc for lc in gctx.listeners if (ref.section_name is None or lc.name == ref.section_name)), None)
        why = ""
        fix = "allow the route in the listener's allowedRoutes"
        if lc is not None:
            if not lc.allows_kind("HTTPRoute"):
                kinds = ", ".join(k.kind for k in lc.supported_kinds) or "none"
                why = f"listener {lc.name} allows kinds {kinds}, not HTTPRoute"
                fix = "attach to an HTTP or HTTPS listener, or list kind HTTPRoute in its allowedRoutes.kinds"
            else:
                how = lc.listener.namespaces_from
                why = (f"listener {lc.name} allows routes from namespaces {how}"
                       + (f" (namespace {gw.namespace} only)" if how == "Same" else "")
                       + f"; this route is in {route.namespace}")
                fix = (_patch("gateway", gw.namespace, gw.name, [{"op": "add", "path": f"/spec/listeners/"
                                                                  f"{lc.listener.index}/allowedRoutes",
                                                                  "value": {"namespaces": {"from": "All"}}}])
                       + f" (or from: Selector with a label of namespace {route.namespace}, or move the route to "
                       f"{gw.namespace})")
        return GatewayFinding("HTTPRouteNotAllowedByListeners", "error", subject, field,
                              f"Gateway {gw.key}: {why or message}", fix)
    if reason == "NoMatchingListenerHostname":
        hosts = sorted({lc.listener.hostname or "*" for lc in gctx.listeners
                        if ref.section_name is None or lc.name == ref.section_name})
        fix = (_patch("httproute", route.namespace, route.name, [{"op": "add", "path": "/spec/hostnames/-",
                                                                 "value": next(h for h in hosts if h != "*")}])
               if any(h != "*" for h in hosts) else "remove spec.hostnames or add one the listener accepts")
        return GatewayFinding("HTTPRouteListenerHostnameMismatch", "error", subject, "spec.hostnames",
                              f"route hostnames {list(route.hostnames)} do not intersect the hostnames of Gateway "
                              f"{gw.key}'s listeners ({', '.join(hosts)}): the route is not accepted there "
                              "(a Gateway API wildcard *.example.com matches any number of labels, but never "
                              "example.com itself)", fix)
    return GatewayFinding("HTTPRouteNotAccepted", "error", subject, "spec.rules", f"{reason}: {message}",
                          "fix the rule's filters (kubectl describe httproute shows the condition)")


def _backend(state: ClusterState, route: HTTPRoute, rule: int, b: ResolvedBackend) -> GatewayFinding | None:
    subject = f"HTTPRoute {route.key}"
    field = f"spec.rules[{rule}].backendRefs[{b.ref.index}]"
    pointer = f"/spec/rules/{rule}/backendRefs/{b.ref.index}"
    if b.valid:
        if b.ready_endpoints == 0:
            return GatewayFinding("HTTPRouteBackendNoEndpoints", "warning", subject, field,
                                  f"Service {b.service} has no ready endpoints for port {b.port}: Envoy answers 503 "
                                  "(no healthy upstream) for the requests sent there",
                                  f"knetsim endpoints {b.ref.name} -n {b.namespace}")
        return None
    if b.reason == "RefNotPermitted":
        grant = ("kubectl apply -f - <<EOF\napiVersion: gateway.networking.k8s.io/v1\nkind: ReferenceGrant\n"
                 f"metadata:\n  name: allow-{route.namespace}-httproutes\n  namespace: {b.namespace}\nspec:\n"
                 f"  from:\n  - group: {GROUP}\n    kind: HTTPRoute\n    namespace: {route.namespace}\n  to:\n"
                 f"  - group: \"\"\n    kind: Service\n    name: {b.ref.name}\nEOF")
        return GatewayFinding("ReferenceGrantMissing", "error", subject, f"{field}.namespace",
                              f"{b.problem} A cross-namespace backendRef needs a ReferenceGrant in namespace "
                              f"{b.namespace} (the target's) that lists HTTPRoutes of {route.namespace}: "
                              "requests routed there get 500", grant)
    if b.reason == "BackendNotFound":
        names = sorted(s.name for s in state.services.values() if s.namespace == b.namespace)
        near = _closest(b.ref.name, names)
        fix = (_patch("httproute", route.namespace, route.name, [{"op": "replace", "path": f"{pointer}/name",
                                                                 "value": near}]) if near
               else f"create Service {b.service}, or name one of: {', '.join(names) or 'none'}")
        return GatewayFinding("HTTPRouteBackendNotFound", "error", subject, f"{field}.name",
                              f"{b.problem}: requests routed there get 500", fix)
    if b.reason == "PortNotFound":
        svc = state.services[b.service]
        by_target = next((p for p in svc.ports if str(p.target_port) == str(b.port)), None)
        ports = ", ".join(str(p.port) for p in svc.ports) or "none"
        if by_target is not None:
            return GatewayFinding("HTTPRouteBackendTargetPort", "error", subject, f"{field}.port",
                                  f"port {b.port} is the targetPort of Service {b.service} port {by_target.port}: a "
                                  "backendRef names the Service's port, not the container's; requests routed there "
                                  "get 500", _patch("httproute", route.namespace, route.name,
                                                    [{"op": "replace", "path": f"{pointer}/port",
                                                      "value": by_target.port}]))
        fix = (_patch("httproute", route.namespace, route.name, [{"op": "replace", "path": f"{pointer}/port",
                                                                 "value": svc.ports[0].port}])
               if len(svc.ports) == 1 else f"use one of the Service's ports ({ports})")
        return GatewayFinding("HTTPRouteBackendPortMissing", "error", subject, f"{field}.port",
                              f"{b.problem} (ports: {ports}): requests routed there get 500", fix)
    return GatewayFinding("HTTPRouteBackendInvalid", "error", subject, field,
                          f"{b.reason}: {b.problem}: requests routed there get 500",
                          "reference a Service (group \"\", kind Service) with a port")
