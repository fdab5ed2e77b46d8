"""The built-in Gateway controller's infrastructure: Envoy Gateway, as its Helm chart installs it.

knetsim's Gateway controller claims GatewayClasses whose ``spec.controllerName`` is
Envoy Gateway's (``gateway.envoyproxy.io/gatewayclass-controller``), so the manifests of its
quickstart work unchanged. As soon as one does, the cluster has what ``helm install eg``
leaves in namespace ``envoy-gateway-system`` (the ``envoy-gateway`` control-plane Deployment
and Service), and every Gateway of an accepted class gets its own data plane there, named as
Envoy Gateway names it (``ExpectedResourceHashedName``: ``envoy-<ns>-<name>-<sha256[:8]>``,
so the quickstart's Gateway ``default/eg`` runs in ``envoy-default-eg-e41e7b31``):

* a Deployment of one Envoy pod, listening on every listener port (a privileged port below
  1024 is shifted by 10000 inside the container: ``servicePortToContainerPort``), and
* a LoadBalancer Service with one port per listener port, whose address (from the cluster's
  LoadBalancer pool, as cloud-provider-kind or MetalLB would hand it out) becomes the
  Gateway's ``status.addresses``.

These are ordinary objects: they go through scheduling, pod IPs, Service allocation and the
EndpointSlice controller like everything else, so the proxy pods are subject to NetworkPolicy
the way ingress-nginx's are. Only GatewayClass acceptance is decided here (the rest of the
status needs the routes: ``knetsim.gateway``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..model.labels import Selector

if TYPE_CHECKING:  # annotations only: the live cluster's start never builds the Gateway model
    from ..model.gatewayapi import Gateway, GatewayClass, ListenerSet

EG_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
EG_NAMESPACE = "envoy-gateway-system"
EG_VERSION = "v1.9.0"
ENVOY_IMAGE = "docker.io/envoyproxy/envoy:distroless-v1.39.0"
# Listener protocols Envoy Gateway serves, and the route kinds each one supports (its order).
PROTOCOL_KINDS: dict[str, tuple[str, ...]] = {
    "HTTP": ("HTTPRoute", "GRPCRoute"),
    "HTTPS": ("HTTPRoute", "GRPCRoute"),
    "TLS": ("TLSRoute",),
    "TCP": ("TCPRoute",),
    "UDP": ("UDPRoute",),
}
OWNING_NAME = "gateway.envoyproxy.io/owning-gateway-name"
OWNING_NAMESPACE = "gateway.envoyproxy.io/owning-gateway-namespace"
PROXY_LABELS = {"app.kubernetes.io/name": "envoy", "app.kubernetes.io/component": "proxy",
                "app.kubernetes.io/managed-by": "envoy-gateway"}
READINESS_PORT = 19003
METRICS_PORT = 19001


@dataclass(frozen=True, slots=True)
class ClassVerdict:
    accepted: bool
    reason: str
    message: str
    ours: bool  # claimed by knetsim's controller (else another controller's business: no status)


def class_verdicts(classes: Iterable[GatewayClass]) -> dict[str, ClassVerdict]:
    """Envoy Gateway accepts one GatewayClass per controller name: the oldest (then by name).

    ``status/gatewayclass.go``: the others get ``Accepted: False``, reason
    ``OlderGatewayClassExists``. A class without a timestamp counts as created now, after every
    class that has one (as the Ingress code treats Ingresses).
    """
    ours = [c for c in classes if c.controller_name == EG_CONTROLLER]
    ours.sort(key=lambda c: (c.meta.creation_timestamp is None, c.meta.creation_timestamp or "", c.name))
    out: dict[str, ClassVerdict] = {}
    for i, c in enumerate(ours):
        if i == 0:
            out[c.name] = ClassVerdict(True, "Accepted", "Valid GatewayClass", True)
        else:
            out[c.name] = ClassVerdict(False, "OlderGatewayClassExists", "Invalid GatewayClass: another older "
                                       "GatewayClass with the same Spec.Controller exists", True)
    for c in classes:
        out.setdefault(c.name, ClassVerdict(False, "", "", False))
    return out


def proxy_name(namespace: str, name: str) -> str:
    """``ExpectedResourceHashedName``: ``envoy-`` + up to 48 characters of ``ns-name`` + 8 hex of sha256."""
    ns_name = f"{namespace}/{name}"
    digest = hashlib.sha256(ns_name.encode()).hexdigest()[:8]
    resource = ns_name.replace("/", "-")
    if len(resource) > 48:
        resource = resource[:48].rstrip("-")
    return f"envoy-{resource}-{digest}"


def container_port(port: int) -> int:
    """Privileged ports move up by 10000 so Envoy binds without CAP_NET_BIND_SERVICE."""
    return port + 10000 if port < 1024 else port


def served_ports(gateway: Gateway, listener_sets: Iterable[ListenerSet] = ()) -> list[tuple[int, str]]:
    """(port, protocol) of the listeners the proxy serves — the Gateway's and those of the ListenerSets attached
    to it: known protocol, valid port; one per port and transport (a TCP and a UDP listener may share one)."""
    seen: dict[tuple[int, str], str] = {}
    for listener in (*gateway.listeners, *(li for ls in listener_sets for li in ls.listeners)):
        if listener.protocol in PROTOCOL_KINDS and listener.port and 1 <= listener.port <= 65535:
            seen.setdefault((listener.port, "UDP" if listener.protocol == "UDP" else "TCP"), listener.protocol)
    return sorted((port, protocol) for (port, _transport), protocol in seen.items())


def attached_listener_sets(gateway: Gateway, listener_sets: Iterable[ListenerSet],
                           namespace_labels: Mapping[str, Mapping[str, str]]) -> list[ListenerSet]:
    """The ListenerSets naming ``gateway`` that its ``allowedListeners`` admits (their ports go on the proxy)."""
    out = []
    for ls in listener_sets:
        parent = ls.parent
        if parent is None or parent.kind != "Gateway" or parent.name != gateway.name or \
                (parent.namespace or ls.namespace) != gateway.namespace:
            continue
        how = gateway.allowed_listeners_from
        if how == "All" or (how == "Same" and ls.namespace == gateway.namespace):
            out.append(ls)
        elif how == "Selector" and gateway.allowed_listeners_selector is not None and ls.namespace in namespace_labels:
            try:
                selector = Selector.from_label_selector(gateway.allowed_listeners_selector)
            except (KeyError, TypeError, AttributeError, ValueError):
                continue
            if selector.matches(namespace_labels[ls.namespace]):
                out.append(ls)
    return sorted(out, key=lambda ls: (ls.meta.creation_timestamp is None, ls.meta.creation_timestamp or "",
                                       ls.namespace, ls.name))


def infra_manifests(classes: list[GatewayClass], gateways: list[Gateway], listener_sets: Iterable[ListenerSet] = (),
                    namespace_labels: Mapping[str, Mapping[str, str]] | None = None) -> list[dict[str, Any]]:
    """What Envoy Gateway creates for these objects (nothing when no class names it)."""
    verdicts = class_verdicts(classes)
    if not any(v.ours for v in verdicts.values()):
        return []
    sets = list(listener_sets)
    docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": EG_NAMESPACE}}, *_control_plane()]
    for gw in sorted(gateways, key=lambda g: (g.namespace, g.name)):
        verdict = verdicts.get(gw.class_name)
        if verdict is None or not verdict.accepted:
            continue
        docs.extend(_proxy(gw, attached_listener_sets(gw, sets, namespace_labels or {})))
    return docs


def _control_plane() -> list[dict[str, Any]]:
    labels = {"control-plane": "envoy-gateway", "app.kubernetes.io/name": "gateway-helm",
              "app.kubernetes.io/instance": "eg"}
    ports = [("grpc", 18000), ("ratelimit", 18001), ("wasm", 18002), ("metrics", 19001)]
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "envoy-gateway", "namespace": EG_NAMESPACE, "labels": dict(labels)},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"control-plane": "envoy-gateway",
                                                              "app.kubernetes.io/instance": "eg"}},
                  "template": {"metadata": {"labels": dict(labels)},
                               "spec": {"containers": [{
                                   "name": "envoy-gateway", "image": f"docker.io/envoyproxy/gateway:{EG_VERSION}",
                                   "args": ["server", "--config-path=/config/envoy-gateway.yaml"],
                                   "ports": [{"name": n, "containerPort": p, "protocol": "TCP"} for n, p in ports],
                               }]}}}},
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "envoy-gateway", "namespace": EG_NAMESPACE, "labels": dict(labels)},
         "spec": {"selector": {"control-plane": "envoy-gateway", "app.kubernetes.io/instance": "eg"},
                  "ports": [{"name": n, "port": p, "targetPort": p, "protocol": "TCP"} for n, p in ports]}},
    ]


def _proxy(gw: Gateway, listener_sets: list[ListenerSet]) -> list[dict[str, Any]]:
    name = proxy_name(gw.namespace, gw.name)
    labels = {**PROXY_LABELS, OWNING_NAME: gw.name, OWNING_NAMESPACE: gw.namespace}
    ports = served_ports(gw, listener_sets)
    container_ports = [{"name": f"{proto.lower()}-{port}", "containerPort": container_port(port),
                        "protocol": "UDP" if proto == "UDP" else "TCP"} for port, proto in ports]
    container_ports += [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
                        {"name": "readiness", "containerPort": READINESS_PORT, "protocol": "TCP"}]
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": EG_NAMESPACE, "labels": dict(labels)},
        "spec": {"replicas": 1, "selector": {"matchLabels": dict(labels)},
                 "template": {"metadata": {"labels": dict(labels)},
                              "spec": {"containers": [{
                                  "name": "envoy", "image": ENVOY_IMAGE,
                                  "args": ["--service-cluster", name, "--service-node", "$(ENVOY_POD_NAME)"],
                                  "ports": container_ports,
                                  "readinessProbe": {"httpGet": {"path": "/ready", "port": READINESS_PORT}},
                              }]}}},
    }
    if not ports:
        return [deployment]
    service: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": EG_NAMESPACE, "labels": dict(labels)},
        "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "selector": dict(labels),
                 "ports": [{"name": f"{proto.lower()}-{port}", "port": port, "targetPort": container_port(port),
                            "protocol": "UDP" if proto == "UDP" else "TCP"} for port, proto in ports]},
    }
    requested = [a.value for a in gw.addresses if a.type == "IPAddress"]
    if requested:
        # spec.addresses: the implementation asks the load balancer for exactly this address.
        service["status"] = {"loadBalancer": {"ingress": [{"ip": requested[0], "ipMode": "VIP"}]}}
    return [deployment, service]
