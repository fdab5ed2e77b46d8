"""The simulated Gateway controllers' infrastructure: what each implementation installs and creates per Gateway.

knetsim's Gateway controller claims every GatewayClass whose ``spec.controllerName`` one of the profiles of
``cluster/gatewayimplementations.py`` declares (Envoy Gateway, NGINX Gateway Fabric, Cilium, Istio, kgateway,
agentgateway, Traefik, Kong Operator, GKE), so the manifests of their quickstarts work unchanged. As soon as
one does, the cluster has that implementation's control plane (Envoy Gateway: ``envoy-gateway`` in
``envoy-gateway-system``; NGINX Gateway Fabric: ``ngf-nginx-gateway-fabric`` in ``nginx-gateway``; ...), and
every Gateway of an accepted class gets its data plane, named and placed as that implementation does it
(Envoy Gateway: ``envoy-<ns>-<name>-<sha256[:8]>`` in ``envoy-gateway-system``, a privileged port shifted by
10000 inside the container; NGINX Gateway Fabric and Istio: ``<gateway>-<class>`` in the Gateway's namespace;
Cilium: a selector-less Service ``cilium-gateway-<gateway>``, its node's Envoy answering; GKE: nothing in
the cluster):

* a Deployment of one proxy pod, listening on every listener port, and
* a LoadBalancer Service with one port per listener port, whose address (from the cluster's
  LoadBalancer pool, as cloud-provider-kind or MetalLB would hand it out) becomes the
  Gateway's ``status.addresses``.

These are ordinary objects: they go through scheduling, pod IPs, Service allocation and the
EndpointSlice controller like everything else, so the proxy pods are subject to NetworkPolicy
the way ingress-nginx's are. Only GatewayClass acceptance is decided here (the rest of the
status needs the routes: ``knetsim.gateway``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..model.labels import Selector
from .gatewayimplementations import ENVOY_GATEWAY, Implementation, for_controller, parameters_problem, proxy_namespace
from .gatewayimplementations import proxy_name as impl_proxy_name
from .gatewayimplementations import proxy_service_name as impl_service_name

if TYPE_CHECKING:  # annotations only: the live cluster's start never builds the Gateway model
    from ..model.gatewayapi import Gateway, GatewayClass, ListenerSet

EG_CONTROLLER = ENVOY_GATEWAY.controller_names[0]
EG_NAMESPACE = "envoy-gateway-system"
# Listener protocols a Gateway serves, and the route kinds each one supports (Envoy Gateway's order).
PROTOCOL_KINDS: dict[str, tuple[str, ...]] = {
    "HTTP": ("HTTPRoute", "GRPCRoute"),
    "HTTPS": ("HTTPRoute", "GRPCRoute"),
    "TLS": ("TLSRoute",),
    "TCP": ("TCPRoute",),
    "UDP": ("UDPRoute",),
}
OWNING_NAME = "gateway.envoyproxy.io/owning-gateway-name"
OWNING_NAMESPACE = "gateway.envoyproxy.io/owning-gateway-namespace"


@dataclass(frozen=True, slots=True)
class ClassVerdict:
    accepted: bool
    reason: str
    message: str
    ours: bool  # claimed by a simulated implementation (else another controller's business: no status)
    implementation: Implementation | None = None


def class_verdicts(classes: Iterable[GatewayClass]) -> dict[str, ClassVerdict]:
    """Each simulated implementation accepts one GatewayClass per controller name: the oldest (then by name).

    Envoy Gateway's ``status/gatewayclass.go`` is the model: the others get ``Accepted: False``, reason
    ``OlderGatewayClassExists``. A class without a timestamp counts as created now, after every class that
    has one (as the Ingress code treats Ingresses). A class whose controllerName no profile declares is not
    simulated: no status.
    """
    by_controller: dict[str, list[GatewayClass]] = {}
    for c in classes:
        if for_controller(c.controller_name) is not None:
            by_controller.setdefault(c.controller_name, []).append(c)
    out: dict[str, ClassVerdict] = {}
    for controller, ours in sorted(by_controller.items()):
        impl = for_controller(controller)
        ours.sort(key=lambda c: (c.meta.creation_timestamp is None, c.meta.creation_timestamp or "", c.name))
        for i, c in enumerate(ours):
            if i == 0:
                out[c.name] = ClassVerdict(True, "Accepted", "Valid GatewayClass", True, impl)
            else:
                out[c.name] = ClassVerdict(False, "OlderGatewayClassExists", "Invalid GatewayClass: another older "
                                           "GatewayClass with the same Spec.Controller exists", True, impl)
    for c in classes:
        out.setdefault(c.name, ClassVerdict(False, "", "", False))
    return out


def proxy_name(namespace: str, name: str) -> str:
    """Envoy Gateway's ``ExpectedResourceHashedName``: ``envoy-`` + up to 48 characters of ``ns-name`` + 8 hex."""
    return str(impl_proxy_name(ENVOY_GATEWAY, namespace, name, ""))


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
                    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
                    exists: Callable[[str, str, str], bool] | None = None) -> list[dict[str, Any]]:
    """What the implementations of these classes create for these objects (nothing when no class names one).

    Per implementation with an accepted class: its control plane (cluster/gatewayimplementations.py), then
    per Gateway of that class its proxy, named and placed as that implementation places it. With ``exists``
    (kind, namespace, name → found), a class whose ``parametersRef`` does not resolve is not accepted
    (InvalidParameters), so its Gateways get no proxy: the implementation provisions nothing for them."""
    verdicts = class_verdicts(classes)
    if exists is not None:
        for c in classes:
            verdict = verdicts.get(c.name)
            if verdict is None or not verdict.accepted or verdict.implementation is None:
                continue
            ref = c.parameters_ref
            namespace = str(ref.get("namespace") or "") or None if ref else None
            if parameters_problem(verdict.implementation, ref, namespace, exists) is not None:
                verdicts[c.name] = ClassVerdict(False, "InvalidParameters", "", True, verdict.implementation)
    sets = list(listener_sets)
    docs: list[dict[str, Any]] = []
    namespaces: set[str] = set()
    used = sorted({v.implementation.key: v.implementation for v in verdicts.values()
                   if v.ours and v.implementation is not None}.items())
    for _key, impl in used:
        for obj in impl.infrastructure.control_plane:
            if obj.namespace not in namespaces:
                namespaces.add(obj.namespace)
                docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": obj.namespace}})
            docs.extend(_control_plane_object(obj))
    for gw in sorted(gateways, key=lambda g: (g.namespace, g.name)):
        verdict = verdicts.get(gw.class_name)
        if verdict is None or not verdict.accepted or verdict.implementation is None:
            continue
        impl = verdict.implementation
        if exists is not None and _gateway_parameters_invalid(impl, gw, exists):
            continue  # gateway_types.go: rejected (InvalidParameters); nothing is provisioned for it
        attached = attached_listener_sets(gw, sets, namespace_labels or {}) if impl.supports("ListenerSet") else []
        docs.extend(_proxy(impl, gw, attached))
    return docs


def _gateway_parameters_invalid(impl: Implementation, gw: Gateway, exists: Callable[[str, str, str], bool]) -> bool:
    spec_infra = (gw.raw.get("spec") or {}).get("infrastructure") if isinstance(gw.raw, Mapping) else None
    params = spec_infra.get("parametersRef") if isinstance(spec_infra, Mapping) else None
    if not isinstance(params, Mapping):
        return False
    return parameters_problem(impl, params, gw.namespace, exists) is not None


def is_proxy_pod(namespace: str, labels: Mapping[str, str]) -> bool:
    """A pod of some implementation's data plane (its readiness decides the Gateway's Programmed)."""
    from .gatewayimplementations import IMPLEMENTATIONS

    for impl in IMPLEMENTATIONS:
        infra = impl.infrastructure
        if infra.shared_proxy_namespace == namespace and all(labels.get(k) == v for k, v in infra.shared_proxy_labels):
            return True
        if infra.naming == "shared" and infra.namespace == namespace and \
                all(labels.get(k) == v for k, v in infra.labels):
            return True
        if infra.naming not in ("none", "shared") and infra.owning_name_label in labels and \
                (infra.namespace is None or infra.namespace == namespace):
            return True
    return False


def proxy_objects_namespace(impl: Implementation, gateway_namespace: str) -> str:
    return proxy_namespace(impl, gateway_namespace)


def impl_container_port(impl: Implementation, port: int) -> int:
    return container_port(port) if impl.infrastructure.shift_privileged_ports else port


def _control_plane_object(obj: Any) -> list[dict[str, Any]]:
    labels = dict(obj.labels)
    # Helm charts select on the release's labels, not on app.kubernetes.io/name (Envoy Gateway's chart:
    # control-plane + app.kubernetes.io/instance); a DaemonSet on its first label (k8s-app).
    selector = dict(list(obj.labels)[:1]) if obj.kind == "DaemonSet" else \
        {k: v for k, v in obj.labels if k != "app.kubernetes.io/name" or len(obj.labels) == 1}
    pod_spec = {"containers": [{"name": obj.name, "image": obj.image,
                                "ports": [{"name": n, "containerPort": p, "protocol": "TCP"} for n, p in obj.ports]}]}
    workload = {"apiVersion": "apps/v1", "kind": obj.kind,
                "metadata": {"name": obj.name, "namespace": obj.namespace, "labels": dict(labels)},
                "spec": {"selector": {"matchLabels": selector},
                         "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec}}}
    if obj.kind == "Deployment":
        workload["spec"]["replicas"] = 1
    out = [workload]
    if obj.kind == "Deployment" and obj.ports:
        ports = obj.service_ports or tuple((n, p, p) for n, p in obj.ports)
        spec: dict[str, Any] = {"selector": dict(selector),
                                "ports": [{"name": n, "port": p, "targetPort": t, "protocol": "TCP"}
                                          for n, p, t in ports]}
        if obj.service_type:
            spec = {"type": obj.service_type, **spec}
        out.append({"apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": obj.name, "namespace": obj.namespace, "labels": dict(labels)},
                    "spec": spec})
    return out


def proxy_labels(impl: Implementation, gw: Gateway) -> dict[str, str]:
    """The labels on a Gateway's proxy objects (and pods), the Gateway's name and namespace substituted."""
    infra = impl.infrastructure
    name = impl_proxy_name(impl, gw.namespace, gw.name, gw.class_name) or ""
    labels = {k: v.format(gateway=gw.name, namespace=gw.namespace, name=name) for k, v in infra.labels}
    if infra.naming != "shared":
        labels[infra.owning_name_label] = gw.name
        if infra.owning_namespace_label:
            labels[infra.owning_namespace_label] = gw.namespace
    return labels


def _propagated(impl: Implementation, gw: Gateway) -> tuple[dict[str, str], dict[str, str]]:
    """``spec.infrastructure.labels``/``annotations`` of a Gateway, for every object its implementation creates —
    where its conformance report claims GatewayInfrastructurePropagation (kubernetes-sigs/gateway-api
    conformance/tests/gateway-infrastructure.go: the Service, Pod and ServiceAccount labelled with the Gateway's
    name carry them). The implementation's own labels win a clash: they are its selectors."""
    if not impl.supports("GatewayInfrastructurePropagation"):
        return {}, {}
    spec = gw.raw.get("spec") if isinstance(gw.raw, Mapping) else None
    infra = spec.get("infrastructure") if isinstance(spec, Mapping) else None
    if not isinstance(infra, Mapping):
        return {}, {}

    def strings(value: Any) -> dict[str, str]:
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}
    return strings(infra.get("labels")), strings(infra.get("annotations"))


def _metadata(name: str | None, namespace: str | None, labels: dict[str, str],
              annotations: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if name is not None:
        out["name"], out["namespace"] = name, namespace
    out["labels"] = dict(labels)
    if annotations:
        out["annotations"] = dict(annotations)
    return out


def _proxy(impl: Implementation, gw: Gateway, listener_sets: list[ListenerSet]) -> list[dict[str, Any]]:
    infra = impl.infrastructure
    name = impl_proxy_name(impl, gw.namespace, gw.name, gw.class_name)
    service_name = impl_service_name(impl, gw.namespace, gw.name, gw.class_name)
    if name is None or service_name is None or infra.naming == "shared":
        return []  # a managed load balancer outside the cluster, or one proxy shared by every Gateway
    namespace = proxy_namespace(impl, gw.namespace)
    labels = proxy_labels(impl, gw)
    ports = served_ports(gw, listener_sets)
    out: list[dict[str, Any]] = []
    extra_labels, extra_annotations = _propagated(impl, gw)
    if infra.deployment:
        container_ports = [{"name": f"{proto.lower()}-{port}", "containerPort": impl_container_port(impl, port),
                            "protocol": "UDP" if proto == "UDP" else "TCP"} for port, proto in ports]
        container_ports += [{"name": n, "containerPort": p, "protocol": "TCP"} for n, p in infra.extra_container_ports]
        container: dict[str, Any] = {"name": infra.container, "image": infra.image, "ports": container_ports}
        if impl is ENVOY_GATEWAY:
            container["args"] = ["--service-cluster", name, "--service-node", "$(ENVOY_POD_NAME)"]
            container["readinessProbe"] = {"httpGet": {"path": "/ready", "port": 19003}}
        out.append({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": _metadata(name, namespace, {**extra_labels, **labels}, extra_annotations),
            "spec": {"replicas": 1, "selector": {"matchLabels": dict(labels)},
                     "template": {"metadata": _metadata(None, None, {**extra_labels, **labels}, extra_annotations),
                                  "spec": {"containers": [container]}}},
        })
    if not ports:
        return out
    spec: dict[str, Any] = {"type": "LoadBalancer"}
    if infra.external_traffic_policy:
        spec["externalTrafficPolicy"] = infra.external_traffic_policy
    if infra.deployment:
        spec["selector"] = dict(labels)  # Cilium's has none: the node's Envoy takes the traffic
    spec["ports"] = [{"name": f"{proto.lower()}-{port}", "port": port,
                      "targetPort": impl_container_port(impl, port),
                      "protocol": "UDP" if proto == "UDP" else "TCP"} for port, proto in ports]
    spec["ports"] += [{"name": n, "port": p, "targetPort": p, "protocol": "TCP"} for n, p in infra.extra_service_ports]
    service: dict[str, Any] = {"apiVersion": "v1", "kind": "Service",
                               "metadata": _metadata(service_name, namespace, {**extra_labels, **labels},
                                                     extra_annotations),
                               "spec": spec}
    requested = [a.value for a in gw.addresses if a.type == "IPAddress"]
    if requested:
        # spec.addresses: the implementation asks the load balancer for exactly this address.
        service["status"] = {"loadBalancer": {"ingress": [{"ip": requested[0], "ipMode": "VIP"}]}}
    out.append(service)
    return out
