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

from ..cluster.gatewayimplementations import IMPLEMENTATIONS, for_controller, supported_by
from ..cluster.gatewayinfra import EG_CONTROLLER
from ..cluster.state import ClusterState
from ..model.gatewayapi import GROUP
from ..model.labels import edit_distance
from . import features
from .backendtls import PolicyContext, verify_backend
from .conditions import Type
from .listeners import ListenerContext
from .translate import (
    GatewayContext,
    ListenerSetContext,
    ParentStatus,
    ResolvedBackend,
    RouteContext,
    Translation,
    translate,
)


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


def _fate(kind: str) -> str:
    """What a broken backend costs, per route kind."""
    if kind in ("TCPRoute", "TLSRoute", "UDPRoute"):
        return "connections sent there are closed"
    return "requests routed there get 500"


def _protocols_for(kind: str) -> str:
    return {"HTTPRoute": "HTTP, HTTPS", "GRPCRoute": "HTTP, HTTPS", "TLSRoute": "TLS",
            "TCPRoute": "TCP, TLS Terminate", "UDPRoute": "UDP"}.get(kind, "?")


def _patch(kind: str, namespace: str, name: str, ops: list[dict[str, Any]]) -> str:
    ns = f"-n {namespace} " if namespace else ""
    return f"kubectl {ns}patch {kind} {name} --type json -p '{json.dumps(ops, separators=(',', ':'))}'"


# cert-manager's ingress-shim and gateway-shim issue a certificate into the Secret an annotated Ingress's
# spec.tls[].secretName or Gateway listener's certificateRefs names (cert-manager docs, "Securing Ingress
# Resources" / "Annotated Gateway resource"); kubernetes.io/tls-acme: "true" asks for the default issuer.
CERT_MANAGER_ANNOTATIONS = ("cert-manager.io/cluster-issuer", "cert-manager.io/issuer", "kubernetes.io/tls-acme")


def cert_manager_issuer(state: ClusterState, annotations: Any, namespace: str, secret: str) -> str:
    """What makes cert-manager issue Secret ``namespace/secret`` ("" when nothing does): an annotation of the
    object that names it, or a cert-manager Certificate whose spec.secretName it is."""
    for name in CERT_MANAGER_ANNOTATIONS:
        value = str(annotations.get(name) or "")
        if value and (name != "kubernetes.io/tls-acme" or value.lower() == "true"):
            return f"annotation {name}: {value}"
    for (kind, key), obj in state.others.items():
        if kind == "Certificate" and obj.namespace == namespace and isinstance(obj.raw.get("spec"), dict) \
                and obj.raw["spec"].get("secretName") == secret:
            return f"Certificate {key}"
    return ""


def gateway_findings(state: ClusterState, namespace: str | None = None) -> list[GatewayFinding]:
    """Problems of every Gateway, ListenerSet, route and BackendTLSPolicy (of ``namespace``, if given), sorted by
    subject and field."""
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
            out.extend(_gateway(state, gctx))
    for lsc in t.listener_sets.values():
        if namespace is None or lsc.listener_set.namespace == namespace:
            out.extend(_listener_set(state, lsc))
    for pctx in t.policies.values():
        if namespace is None or pctx.policy.namespace == namespace:
            out.extend(_policy(state, t, pctx))
    for rc in t.routes.values():
        if namespace is not None and rc.route.namespace != namespace:
            continue
        out.extend(_route(state, t.gateways, rc))
        out.extend(_backend_client_certificates(state, t, rc))
    out.sort(key=lambda f: (f.subject, f.field, f.code))
    return out


def _unclaimed_gateway(state: ClusterState, key: str) -> GatewayFinding:
    gw = state.gateways[key]
    gc = state.gateway_classes.get(gw.class_name)
    subject = f"Gateway {key}"
    ours = sorted(c.name for c in state.gateway_classes.values() if for_controller(c.controller_name) is not None)
    if gc is None:
        fix = (_patch("gateway", gw.namespace, gw.name, [{"op": "replace", "path": "/spec/gatewayClassName",
                                                          "value": ours[0]}]) if ours else
               "create the GatewayClass: kubectl apply -f - <<EOF\napiVersion: gateway.networking.k8s.io/v1\n"
               f"kind: GatewayClass\nmetadata:\n  name: {gw.class_name}\nspec:\n  controllerName: "
               f"{EG_CONTROLLER}\nEOF")
        return GatewayFinding("GatewayClassNotFound", "error", subject, "spec.gatewayClassName",
                              f"GatewayClass {gw.class_name!r} does not exist: no controller programs this Gateway "
                              "(its status stays Accepted: Unknown, Pending)", fix)
    if for_controller(gc.controller_name) is None:
        # Not a mistake: a controller knetsim has no profile of (its own cluster would program the Gateway).
        return GatewayFinding("GatewayClassOtherController", "info", subject, "spec.gatewayClassName",
                              f"GatewayClass {gc.name} names controller {gc.controller_name!r}, which knetsim does not "
                              "simulate: this Gateway and its routes are not simulated here (knetsim simulates "
                              f"{', '.join(i.title for i in IMPLEMENTATIONS)})",
                              "to simulate it, use a class of a simulated controller (knetsim gateway check -f DIR "
                              "lists them)")
    impl = for_controller(gc.controller_name)
    title = impl.title if impl is not None else gc.controller_name
    return GatewayFinding("GatewayClassNotAccepted", "error", subject, "spec.gatewayClassName",
                          f"GatewayClass {gc.name} is not accepted: {title} accepts only the oldest class "
                          f"naming {gc.controller_name} ({', '.join(ours)})",
                          _patch("gateway", gw.namespace, gw.name,
                                 [{"op": "replace", "path": "/spec/gatewayClassName", "value": ours[0]}]))


def _describe_proxy_pods(gctx: GatewayContext) -> str:
    """The command that shows the Gateway's proxy pods, where its implementation puts them."""
    impl, gw = gctx.implementation, gctx.gateway
    infra = impl.infrastructure
    if infra.shared_proxy_namespace is not None:
        selector = ",".join(f"{k}={v}" for k, v in infra.shared_proxy_labels)
        return f"kubectl -n {infra.shared_proxy_namespace} describe pods -l {selector}"
    namespace = infra.namespace or gw.namespace
    if infra.naming == "shared":  # one proxy for every Gateway (Traefik)
        return f"kubectl -n {namespace} describe pods -l {','.join(f'{k}={v}' for k, v in infra.labels)}"
    return f"kubectl -n {namespace} describe pods -l {infra.owning_name_label}={gw.name}"


def _gateway(state: ClusterState, gctx: GatewayContext) -> list[GatewayFinding]:
    gw = gctx.gateway
    subject = f"Gateway {gw.key}"
    out = []
    for lc in gctx.own_listeners:
        out.extend(_listener(state, lc, subject, "gateway"))
    impl = gctx.implementation
    for u in features.unsupported(features.gateway_features(gw), impl):
        others = ", ".join(i.title for i in supported_by(u.feature, impl.channel)) or "none"
        out.append(GatewayFinding("GatewayFeatureUnsupported", "warning", subject, u.where,
                                  f"{impl.title} {impl.report.version}'s conformance report ({impl.report.path}) does "
                                  f"not claim {u.feature}: do not rely on {u.where} there (supported by {others})",
                                  f"knetsim gateway check -f DIR --implementation {impl.key}"))
    programmed = gctx.conditions.get(Type.PROGRAMMED)
    if programmed is not None and not programmed.ok:
        fix = ("the LoadBalancer pool is exhausted or the proxy Service is missing: free an address "
               "(kubectl get svc -A | grep LoadBalancer)" if programmed.reason == "AddressNotAssigned" else
               _describe_proxy_pods(gctx))
        out.append(GatewayFinding("GatewayNotProgrammed", "error", subject, "status.conditions[Programmed]",
                                  f"{programmed.reason}: {programmed.message}: nothing answers on the Gateway", fix))
    return out


_CERTIFICATE_PROBLEMS = (("has expired since", "GatewayCertificateExpired",
                          "renew it: kubectl create secret tls NAME --cert=NEW.crt --key=NEW.key --dry-run=client "
                          "-o yaml | kubectl apply -f -"),
                         ("will be valid after", "GatewayCertificateNotYetValid",
                          "the certificate's notBefore is in the future: issue one valid now"),
                         ("must contain a matching tls.crt and tls.key", "GatewayCertificateKeyMismatch",
                          "put the key that belongs to tls.crt into tls.key (openssl x509 -noout -pubkey -in tls.crt "
                          "and openssl pkey -pubout -in tls.key must print the same key)"))


def _listener(state: ClusterState, lc: ListenerContext, subject: str, owner_kind: str) -> list[GatewayFinding]:
    """A listener's problems: not programmed (why, and the fix), a certificate the clients would refuse."""
    field = f"spec.listeners[{lc.listener.index}]"
    refs = lc.conditions.get(Type.RESOLVED_REFS)
    if lc.programmed:
        out = _name_coverage(lc, subject, field)
        if refs is not None and refs.reason == "PartiallyInvalidCertificateRef":
            out.append(GatewayFinding("GatewayCertificatePartlyInvalid", "warning", subject, f"{field}.tls",
                                      f"listener {lc.name} serves only its valid certificates: {refs.message}",
                                      "fix or remove the certificate references the message names"))
        return out
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
                                         f"in the {owner_kind}'s namespace, or a ReferenceGrant for another "
                                         "namespace",
           "GatewayListenerConflict": "give each listener on a port a distinct hostname, one protocol per port",
           }.get(code, f"see the listener's conditions: kubectl describe {owner_kind}")
    if refs is not None and not refs.ok:
        for needle, specific, specific_fix in _CERTIFICATE_PROBLEMS:
            if needle in refs.message:
                code, fix = specific, specific_fix
    issued = _issued_by_cert_manager(state, lc, subject, owner_kind, refs)
    if issued:
        return [GatewayFinding("GatewayCertificateIssued", "info", subject, field,
                               f"listener {lc.name} waits for its certificate: {issued}; until cert-manager has "
                               f"issued it the listener is not programmed ({refs.message if refs else ''})",
                               "if it stays so, ask cert-manager why: kubectl -n "
                               f"{subject.split(' ')[1].split('/')[0]} get certificate,certificaterequest,order,"
                               "challenge")]
    if lc.from_listener_set and code == "GatewayListenerConflict":
        code = "ListenerSetListenerConflict"
        fix = ("the Gateway's own listeners and older ListenerSets win a port/hostname: pick another hostname or "
               "port for this entry")
    return [GatewayFinding(code, "error", subject, field,
                           f"listener {lc.name} is not programmed, so no route attached to it receives traffic: "
                           f"{detail}", fix)]


def _issued_by_cert_manager(state: ClusterState, lc: ListenerContext, subject: str, owner_kind: str,
                            refs: Any) -> str:
    """Every certificate Secret the listener misses is one cert-manager issues: what says so, else ""."""
    if owner_kind != "gateway" or refs is None or refs.ok or "does not exist" not in refs.message:
        return ""
    gw = state.gateways.get(subject.split(" ", 1)[1])
    if gw is None or not lc.listener.certificate_refs:
        return ""
    secrets = {key for (kind, key) in state.others if kind == "Secret"}
    missing = [ref for ref in lc.listener.certificate_refs
               if f"{ref.namespace or gw.namespace}/{ref.name}" not in secrets]
    said = [cert_manager_issuer(state, gw.meta.annotations, ref.namespace or gw.namespace, ref.name)
            for ref in missing]
    if not missing or not all(said):
        return ""
    return f"Secret {', '.join(ref.name for ref in missing)} is cert-manager's to create ({said[0]})"


def _name_coverage(lc: ListenerContext, subject: str, field: str) -> list[GatewayFinding]:
    """A terminating listener whose certificates do not name a host it serves: clients that check names
    (curl, browsers, gRPC) refuse the handshake, although Envoy Gateway programs the listener."""
    if not lc.terminates_tls or not lc.certificates:
        return []
    if lc.hostname is not None:
        hosts = [lc.hostname]
    else:
        names = [*(h for e in lc.entries for h in e.hostnames), *(h for e in lc.grpc_entries for h in e.hostnames),
                 *(h for e in lc.streams for h in e.hostnames)]
        hosts = list(dict.fromkeys(names))
    out = []
    for host in hosts:
        if host.startswith("*."):  # a wildcard listener is covered by the same wildcard in the certificate only
            covered = any(n.lower() == host.lower() for c in lc.certificates for n in c.info.dns_names)
        else:
            covered = any(c.info.covers(host) for c in lc.certificates)
        if covered:
            continue
        served = "; ".join(f"{c.info.subject} ({', '.join(c.info.dns_names) or 'no DNS names'}) from Secret "
                           f"{c.source}" for c in lc.certificates)
        out.append(GatewayFinding("GatewayCertificateHostnameMismatch", "warning", subject, f"{field}.tls",
                                  f"listener {lc.name} serves {host}, but its certificate does not cover that name: "
                                  f"{served}; a client that checks names (curl: \"no alternative certificate subject "
                                  "name matches target host name\") refuses the connection",
                                  f"issue a certificate whose subjectAltName includes {host} (or a wildcard covering "
                                  "it) and put it in the Secret"))
    return out


def _other_controller(state: ClusterState, gateway: str) -> bool:
    """The Gateway exists and its class names a controller knetsim has no profile of."""
    gw = state.gateways.get(gateway)
    gc = state.gateway_classes.get(gw.class_name) if gw is not None else None
    return gc is not None and for_controller(gc.controller_name) is None


def _route(state: ClusterState, gateways: dict[str, GatewayContext], rc: RouteContext) -> list[GatewayFinding]:
    route = rc.route
    kind = route.kind
    subject = f"{kind} {route.key}"
    out: list[GatewayFinding] = []
    for ref, why in rc.unclaimed:
        if _other_controller(state, f"{ref.namespace or route.namespace}/{ref.name}") and ref.kind == "Gateway":
            out.append(GatewayFinding(f"{kind}ParentNotSimulated", "info", subject, f"spec.parentRefs[{ref.index}]",
                                      f"{why}: knetsim does not simulate this parent, so the route's traffic there "
                                      "is not simulated", "nothing to fix: its own controller programs it"))
            continue
        near = _closest(ref.name, sorted(k.split("/", 1)[1] for k in gateways
                                         if k.startswith(f"{ref.namespace or route.namespace}/")))
        fix = (_patch(kind.lower(), route.namespace, route.name, [{"op": "replace", "path": f"/spec/parentRefs/"
                                                                 f"{ref.index}/name", "value": near}])
               if near else "point parentRefs at a Gateway of an accepted GatewayClass (kubectl get gateway -A)")
        out.append(GatewayFinding(f"{kind}ParentNotFound", "error", subject, f"spec.parentRefs[{ref.index}]",
                                  f"{why}: the route has no status from any controller and serves no traffic", fix))
    for ps in rc.parents:
        accepted = ps.conditions.get(Type.ACCEPTED)
        if accepted is not None and not accepted.ok:
            out.append(_not_accepted(state, gateways[ps.gateway], rc, ps, accepted.reason, accepted.message))
        elif accepted is not None:
            out.extend(_ignored_features(state, gateways[ps.gateway], rc, ps))
        partial = ps.conditions.get("PartiallyInvalid")
        if partial is not None:
            out.append(GatewayFinding(f"{kind}PartiallyInvalid", "warning", subject, "spec.rules",
                                      f"{partial.message}: requests those rules would match fall through to other "
                                      "rules or get 404", "fix or remove the dropped rules"))
    if rc.parents and any(not p.conditions.is_false(Type.ACCEPTED) for p in rc.parents):
        for rule in route.rules:
            for b in rc.backends.get(rule.index, ()):
                finding = _backend(state, route, rule.index, b)
                if finding is not None:
                    out.append(finding)
    return out


def _ignored_features(state: ClusterState, gctx: GatewayContext, rc: RouteContext,
                      ps: ParentStatus) -> list[GatewayFinding]:
    """Features the API lets an implementation ignore (timeouts, retries, rule names, appProtocol): the route is
    served there, without them."""
    route, impl = rc.route, gctx.implementation
    out = []
    for u in features.ignored(features.route_features(route, state.services), impl):
        others = ", ".join(i.title for i in supported_by(u.feature, impl.channel)) or "none"
        out.append(GatewayFinding(f"{route.kind}FeatureIgnored", "warning", f"{route.kind} {route.key}", u.where,
                                  f"Gateway {gctx.gateway.key} runs {impl.title} {impl.report.version}, whose "
                                  f"conformance report ({impl.report.path}) does not claim {u.feature}: the route "
                                  f"is served without it (supported by {others})",
                                  f"do not rely on {u.where} there, or use a GatewayClass of an implementation "
                                  "that supports it"))
    return out


def _unsupported_feature(state: ClusterState, gctx: GatewayContext, rc: RouteContext, ps: ParentStatus,
                         message: str) -> GatewayFinding:
    """A route uses an extended feature its Gateway's implementation does not claim: name the feature, where it
    is used, and the implementations whose reports do claim it."""
    route, impl = rc.route, gctx.implementation
    missing = features.refused(features.route_features(route, state.services), impl)
    where = "; ".join(
        f"{u.feature} at {u.where} (supported by "
        f"{', '.join(i.title for i in supported_by(u.feature, impl.channel)) or 'none'})" for u in missing)
    fields = ", ".join(u.where for u in missing)
    return GatewayFinding(f"{route.kind}UnsupportedFeature", "error", f"{route.kind} {route.key}",
                          f"spec.parentRefs[{ps.ref.index}]",
                          f"Gateway {gctx.gateway.key} runs {impl.title} {impl.report.version}, whose conformance "
                          f"report ({impl.report.path}) does not claim {where}: the route is not accepted there "
                          f"(UnsupportedValue) and serves no traffic",
                          f"remove {fields}, or use a GatewayClass of an implementation that supports it "
                          f"(knetsim gateway check -f DIR --implementation NAME)")


def _not_accepted(state: ClusterState, gctx: GatewayContext, rc: RouteContext, ps: ParentStatus, reason: str,
                  message: str) -> GatewayFinding:
    route, ref, gw = rc.route, ps.ref, gctx.gateway
    kind = route.kind
    subject = f"{kind} {route.key}"
    field = f"spec.parentRefs[{ref.index}]"
    listeners = ", ".join(f"{lc.name} ({lc.listener.port}/{lc.listener.protocol}"
                          f"{', ' + lc.listener.hostname if lc.listener.hostname else ''})" for lc in gctx.listeners)
    pointer = f"/spec/parentRefs/{ref.index}"
    if reason == "UnsupportedValue":
        return _unsupported_feature(state, gctx, rc, ps, message)
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
        fix = _patch(kind.lower(), route.namespace, route.name, ops) if ops else f"match a listener: {listeners}"
        return GatewayFinding(f"{kind}NoMatchingParent", "error", subject, field,
                              f"{wanted} matches no listener of Gateway {gw.key} (listeners: {listeners}): "
                              f"{message}", fix)
    if reason == "NotAllowedByListeners":
        lc = next((lc for lc in gctx.listeners if (ref.section_name is None or lc.name == ref.section_name)), None)
        why = ""
        fix = "allow the route in the listener's allowedRoutes"
        if lc is not None:
            if not lc.allows_kind(kind):
                kinds = ", ".join(k.kind for k in lc.supported_kinds) or "none"
                why = f"listener {lc.name} allows kinds {kinds}, not {kind}"
                fix = (f"attach to a listener whose protocol serves {kind} ({_protocols_for(kind)}), or list kind "
                       f"{kind} in its allowedRoutes.kinds")
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
        return GatewayFinding(f"{kind}NotAllowedByListeners", "error", subject, field,
                              f"Gateway {gw.key}: {why or message}", fix)
    if reason == "NoMatchingListenerHostname":
        hosts = sorted({lc.listener.hostname or "*" for lc in gctx.listeners
                        if ref.section_name is None or lc.name == ref.section_name})
        fix = (_patch(kind.lower(), route.namespace, route.name, [{"op": "add", "path": "/spec/hostnames/-",
                                                                 "value": next(h for h in hosts if h != "*")}])
               if any(h != "*" for h in hosts) else "remove spec.hostnames or add one the listener accepts")
        return GatewayFinding(f"{kind}ListenerHostnameMismatch", "error", subject, "spec.hostnames",
                              f"route hostnames {list(route.hostnames)} do not intersect the hostnames of Gateway "
                              f"{gw.key}'s listeners ({', '.join(hosts)}): the route is not accepted there "
                              "(a Gateway API wildcard *.example.com matches any number of labels, but never "
                              "example.com itself)", fix)
    return GatewayFinding(f"{kind}NotAccepted", "error", subject, "spec.rules", f"{reason}: {message}",
                          f"fix the rule's filters (kubectl describe {kind.lower()} shows the condition)")


def _backend(state: ClusterState, route: Any, rule: int, b: ResolvedBackend) -> GatewayFinding | None:
    kind = route.kind
    subject = f"{kind} {route.key}"
    field = f"spec.rules[{rule}].backendRefs[{b.ref.index}]"
    pointer = f"/spec/rules/{rule}/backendRefs/{b.ref.index}"
    if b.valid:
        if b.ready_endpoints == 0:
            return GatewayFinding(f"{kind}BackendNoEndpoints", "warning", subject, field,
                                  f"Service {b.service} has no ready endpoints for port {b.port}: Envoy answers 503 "
                                  "(no healthy upstream) for the requests sent there",
                                  f"knetsim endpoints {b.ref.name} -n {b.namespace}")
        return None
    if b.reason == "RefNotPermitted":
        grant = ("kubectl apply -f - <<EOF\napiVersion: gateway.networking.k8s.io/v1\nkind: ReferenceGrant\n"
                 f"metadata:\n  name: allow-{route.namespace}-{kind.lower()}s\n  namespace: {b.namespace}\nspec:\n"
                 f"  from:\n  - group: {GROUP}\n    kind: {kind}\n    namespace: {route.namespace}\n  to:\n"
                 f"  - group: \"\"\n    kind: Service\n    name: {b.ref.name}\nEOF")
        return GatewayFinding("ReferenceGrantMissing", "error", subject, f"{field}.namespace",
                              f"{b.problem} A cross-namespace backendRef needs a ReferenceGrant in namespace "
                              f"{b.namespace} (the target's) that lists {kind}s of {route.namespace}: "
                              f"{_fate(kind)}", grant)
    if b.reason == "BackendNotFound":
        names = sorted(s.name for s in state.services.values() if s.namespace == b.namespace)
        near = _closest(b.ref.name, names)
        fix = (_patch(kind.lower(), route.namespace, route.name, [{"op": "replace", "path": f"{pointer}/name",
                                                                 "value": near}]) if near
               else f"create Service {b.service}, or name one of: {', '.join(names) or 'none'}")
        return GatewayFinding(f"{kind}BackendNotFound", "error", subject, f"{field}.name",
                              f"{b.problem}: {_fate(kind)}", fix)
    if b.reason == "PortNotFound":
        svc = state.services[b.service]
        by_target = next((p for p in svc.ports if str(p.target_port) == str(b.port)), None)
        ports = ", ".join(str(p.port) for p in svc.ports) or "none"
        if by_target is not None:
            return GatewayFinding(f"{kind}BackendTargetPort", "error", subject, f"{field}.port",
                                  f"port {b.port} is the targetPort of Service {b.service} port {by_target.port}: a "
                                  f"backendRef names the Service's port, not the container's; {_fate(kind)}",
                                  _patch(kind.lower(), route.namespace, route.name,
                                                    [{"op": "replace", "path": f"{pointer}/port",
                                                      "value": by_target.port}]))
        fix = (_patch(kind.lower(), route.namespace, route.name, [{"op": "replace", "path": f"{pointer}/port",
                                                                 "value": svc.ports[0].port}])
               if len(svc.ports) == 1 else f"use one of the Service's ports ({ports})")
        return GatewayFinding(f"{kind}BackendPortMissing", "error", subject, f"{field}.port",
                              f"{b.problem} (ports: {ports}): {_fate(kind)}", fix)
    return GatewayFinding(f"{kind}BackendInvalid", "error", subject, field,
                          f"{b.reason}: {b.problem}: {_fate(kind)}",
                          "reference a Service (group \"\", kind Service) with a port")


def _listener_set(state: ClusterState, lsc: ListenerSetContext) -> list[GatewayFinding]:
    ls = lsc.listener_set
    subject = f"ListenerSet {ls.key}"
    parent = ls.parent
    if lsc.gateway is None:
        if parent is None:
            return []
        key = f"{parent.namespace or ls.namespace}/{parent.name}"
        why = "does not exist" if key not in state.gateways else "is not served by knetsim's controller"
        return [GatewayFinding("ListenerSetParentNotFound", "error", subject, "spec.parentRef",
                               f"Gateway {key} {why}: the ListenerSet has no status and its listeners serve nothing",
                               "point spec.parentRef at a Gateway of an accepted GatewayClass "
                               "(kubectl get gateway -A)")]
    accepted = lsc.conditions.get(Type.ACCEPTED)
    if accepted is not None and accepted.reason == "NotAllowed":
        gw = state.gateways[lsc.gateway]
        how = "Same" if gw.namespace == ls.namespace else "All"
        fix = _patch("gateway", gw.namespace, gw.name, [{"op": "add", "path": "/spec/allowedListeners",
                                                          "value": {"namespaces": {"from": how}}}])
        if how == "All":
            fix += f" (or from: Selector with a label of namespace {ls.namespace})"
        return [GatewayFinding("ListenerSetNotAllowed", "error", subject, "spec.parentRef",
                               f"{accepted.message} (allowedListeners.namespaces.from is "
                               f"{gw.allowed_listeners_from}; a Gateway allows no ListenerSet by default): none of "
                               "its listeners serves traffic", fix)]
    if accepted is not None and accepted.reason == "ParentNotAccepted":
        return [GatewayFinding("ListenerSetParentNotAccepted", "error", subject, "spec.parentRef", accepted.message,
                               "fix the Gateway's own listeners first (knetsim doctor lists them)")]
    out = []
    for lc in lsc.listeners:
        out.extend(_listener(state, lc, subject, "listenerset"))
    return out


def _policy(state: ClusterState, t: Translation, pctx: PolicyContext) -> list[GatewayFinding]:
    policy = pctx.policy
    subject = f"BackendTLSPolicy {policy.key}"
    if pctx.conflict is not None:
        return [GatewayFinding("BackendTLSPolicyConflicted", "warning", subject, "spec.targetRefs",
                               f"Policy conflicts with BackendTLSPolicy {pctx.conflict}, which is older (or first by "
                               "name) and applies instead", "delete one of the two, or target another section "
                               "(a Service port name) with sectionName")]
    if pctx.error is not None:
        return [GatewayFinding("BackendTLSPolicyInvalidCA", "error", subject, "spec.validation.caCertificateRefs",
                               f"{pctx.error[1]}: {pctx.error[2]} Routes to its targets get 500 (InvalidBackendTLS)",
                               "reference a ConfigMap or Secret in the policy's namespace whose ca.crt holds the "
                               "CA certificate that issued the backend's certificate")]
    bundle = pctx.bundle
    if bundle is None:
        return []
    out = []
    for target in policy.target_refs:
        svc = state.services.get(f"{policy.namespace}/{target.name}")
        if svc is None or target.kind != "Service":
            continue
        ports = [p for p in svc.ports if target.section_name is None or p.name == target.section_name]
        pods = sorted({p for sp in ports for p in _endpoint_pods(state, svc, sp.name)})
        for pod_key in pods:
            pod = state.pods[pod_key]
            hs = verify_backend(state, bundle, pod, t.now)
            if hs.verdict.ok:
                continue
            c = hs.certificate
            if "mismatch" in (hs.verdict.error or ""):
                fix = (f"set spec.validation.hostname (or subjectAltNames) to a name of the certificate "
                       f"({', '.join(c.dns_names + c.uris) or 'it has none'})")
            else:
                fix = (f"put the CA certificate that issued {c.subject} (issuer {c.issuer}) into the ca.crt of the "
                       "referenced ConfigMap, or serve a certificate that CA issued")
            out.append(GatewayFinding("BackendTLSPolicyVerifyFailed", "error", subject,
                                      f"spec.targetRefs[{target.index}]",
                                      f"the Gateway's proxy would refuse pod {pod_key}'s certificate ({c.subject}, "
                                      f"issuer {c.issuer}, names {', '.join(c.dns_names + c.uris) or 'none'}) for SNI "
                                      f"{bundle.sni}: {hs.verdict.describe()}; requests to Service {svc.key} get 503",
                                      fix))
            break  # one pod says it: the others of the Service serve the same thing, or the first fix shows
    return out


def _backend_client_certificates(state: ClusterState, t: Translation, rc: RouteContext) -> list[GatewayFinding]:
    """A TLS backend that asks for a client certificate and refuses what a parent Gateway presents
    (``spec.tls.backend.clientCertificateRef``: none, or one its CAs did not issue)."""
    out: list[GatewayFinding] = []
    route = rc.route
    seen: set[tuple[str, str]] = set()
    for ps in rc.parents:
        gctx = t.gateways.get(ps.gateway)
        if gctx is None or ps.conditions.is_false(Type.ACCEPTED):
            continue
        for rule in route.rules:
            for b in rc.backends.get(rule.index, ()):
                svc = state.services.get(b.service)
                if b.tls is None or svc is None or (ps.gateway, b.service) in seen:
                    continue
                seen.add((ps.gateway, b.service))
                for pod_key in sorted(set(_endpoint_pods(state, svc, b.port_name))):
                    hs = verify_backend(state, b.tls, state.pods[pod_key], t.now, gctx.backend_client_chain)
                    if hs.refused_by_pod is None:
                        continue
                    gw = gctx.gateway
                    out.append(GatewayFinding(
                        "GatewayBackendClientCertificateRefused", "error", f"{route.kind} {route.key}",
                        f"spec.rules[{rule.index}].backendRefs[{b.ref.index}]",
                        f"{hs.failure()}: requests through Gateway {gw.key} to Service {b.service} get 503",
                        "present a client certificate the pod's CA issued (a kubernetes.io/tls Secret): "
                        + _patch("gateway", gw.namespace, gw.name, [_backend_tls_op(gw)])
                        if gw.backend_client_certificate is None else
                        f"issue the Secret {gw.backend_client_certificate.name}'s certificate from the CA the pod "
                        "trusts (its TLS_CLIENT_CACERTS)"))
                    break  # one pod says it for the Service
    return out


def _backend_tls_op(gw: Any) -> dict[str, Any]:
    """The JSON patch operation that gives ``gw`` a backend client certificate, keeping its frontend TLS."""
    ref = {"clientCertificateRef": {"name": "SECRET"}}
    if gw.frontend_validation:
        return {"op": "add", "path": "/spec/tls/backend", "value": ref}
    return {"op": "add", "path": "/spec/tls", "value": {"backend": ref}}


def _endpoint_pods(state: ClusterState, svc: Any, port_name: str) -> list[str]:
    out = []
    for es in state.slices_for(svc):
        if not any(p.name == port_name for p in es.ports):
            continue
        for e in es.endpoints:
            if e.ready and e.target_ref and e.target_ref[0] == "Pod" and f"{e.target_ref[1]}/{e.target_ref[2]}" in \
                    state.pods:
                out.append(f"{e.target_ref[1]}/{e.target_ref[2]}")
    return out
