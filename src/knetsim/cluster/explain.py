"""Explanations over the cluster state: a Service's endpoints, and the whole cluster at a glance.

``explain_endpoints`` answers the first question of every service outage — "does the
EndpointSlice have addresses?" — and, when it does not, why: no pod matches the selector
(with the closest existing labels, so ``app: wbe`` is named as a typo of ``app: web``), the
pods are not Ready (and why), or a named targetPort does not resolve on them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..model.labels import Selector, closest_labels
from ..printers import cells
from .endpointslices import endpoint_ports, should_be_endpoint
from .state import ClusterState


@dataclass(frozen=True, slots=True)
class PodEndpoint:
    pod: str
    ip: str
    node: str
    ready: bool
    reason: str
    ports: list[str]
    missing_ports: list[str]


@dataclass(frozen=True, slots=True)
class LabelHint:
    wanted: str
    nearest: str
    how: str


@dataclass(frozen=True, slots=True)
class EndpointsExplanation:
    service: str
    type: str
    selector: str | None
    pods: list[PodEndpoint]
    slices: list[str]
    ready_addresses: list[str]
    not_ready_addresses: list[str]
    verdict: str
    hints: list[LabelHint] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def has_ready_endpoints(self) -> bool:
        return bool(self.ready_addresses)


class NotFound(LookupError):
    pass


def explain_endpoints(state: ClusterState, namespace: str, name: str) -> EndpointsExplanation:
    svc = state.services.get(f"{namespace}/{name}")
    if svc is None:
        raise NotFound(f'services "{name}" not found in namespace "{namespace}"')
    slices = state.slices_for(svc)
    ready, not_ready = [], []
    for es in slices:
        for ep in es.endpoints:
            (ready if ep.ready else not_ready).extend(ep.addresses)
    problems: list[str] = []
    hints: list[LabelHint] = []
    pods: list[PodEndpoint] = []
    selector_text = None
    if svc.type == "ExternalName":
        verdict = f"ExternalName: no endpoints by design; DNS answers a CNAME to {svc.external_name}"
    elif svc.selector is None:
        selector_text = None
        verdict = ("no selector: the EndpointSlice controller manages nothing here; "
                   f"{len(slices)} user-managed slice(s) with {len(ready)} ready address(es)")
        if not slices:
            problems.append("a Service without selector needs EndpointSlices written by hand "
                            f"(label kubernetes.io/service-name: {svc.name})")
    else:
        selector = Selector.from_map(svc.selector)
        selector_text = str(selector)
        matched = state.select_pods(namespace, selector) if svc.selector else []
        for pod in matched:
            ports, missing = endpoint_ports(svc, pod)
            reason = ""
            if not should_be_endpoint(pod):
                reason = f"phase {pod.phase}" + ("" if pod.pod_ip else ", no IP")
            elif pod.terminating:
                reason = "terminating"
            elif not pod.ready:
                reason = pod.not_ready_reason or "not Ready"
            pods.append(PodEndpoint(pod.name, pod.pod_ip, pod.node_name, pod.ready and not pod.terminating, reason,
                                    [f"{p['name'] or '<unnamed>'}={p['port']}/{p['protocol']}" for p in ports],
                                    missing))
            for m in missing:
                problems.append(f"pod {pod.name}: targetPort of port {m!r} names a port the pod does not declare")
        if not matched:
            verdict = f"no pod in namespace {namespace!r} matches the selector {selector_text}"
            for wanted, nearest, how in closest_labels(svc.selector, (p.labels for p in state.pods_in(namespace))):
                hints.append(LabelHint(wanted, nearest, how))
            if not state.pods_in(namespace):
                problems.append(f"namespace {namespace!r} has no pods at all")
        elif not ready:
            verdict = f"{len(matched)} pod(s) match, none is ready"
        else:
            verdict = f"{len(ready)} ready endpoint(s)" + (f", {len(not_ready)} not ready" if not_ready else "")
    return EndpointsExplanation(
        service=svc.key,
        type=svc.type + (" (headless)" if svc.headless else ""),
        selector=selector_text,
        pods=pods,
        slices=[es.name for es in slices],
        ready_addresses=ready,
        not_ready_addresses=not_ready,
        verdict=verdict,
        hints=hints,
        problems=problems,
    )


@dataclass(frozen=True, slots=True)
class Overview:
    nodes: list[dict[str, Any]]
    services: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    ingresses: list[dict[str, Any]]
    network_policies: list[str]
    notices: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def overview(state: ClusterState, include_system: bool = False) -> Overview:
    def shown(ns: str) -> bool:
        return include_system or ns not in ("kube-system", "kube-public", "kube-node-lease", "ingress-nginx",
                                            "envoy-gateway-system")

    services = []
    for svc in state.services.values():
        if not shown(svc.namespace) and svc.key != "default/kubernetes":
            continue
        ready = [a for es in state.slices_for(svc) for ep in es.endpoints if ep.ready for a in ep.addresses]
        services.append({
            "service": svc.key,
            "type": svc.type + (" (headless)" if svc.headless else ""),
            "clusterIP": svc.cluster_ip or None,
            "ports": [f"{p.name + ':' if p.name else ''}{p.port}->{p.target_port}/{p.protocol}"
                      + (f" nodePort {p.node_port}" if p.node_port else "") for p in svc.ports],
            "externalName": svc.external_name or None,
            "loadBalancer": list(svc.load_balancer_ips),
            "readyEndpoints": ready,
        })
    # STATUS as `kubectl get pods` prints it (CrashLoopBackOff, CreateContainerConfigError, Init:0/1...).
    pods = [{"pod": p.key, "node": p.node_name, "ip": p.pod_ip, "status": cells("Pod", p.raw, None)[2],
             "ready": p.ready, "reason": p.not_ready_reason}
            for p in state.pods.values() if shown(p.namespace)]
    ingresses = []
    for ing in state.ingresses.values():
        rules = [f"{r.host or '*'}{p.path or '/'} ({p.path_type}) -> {p.backend.describe()}"
                 for r in ing.rules for p in r.paths]
        if ing.default_backend:
            rules.append(f"default -> {ing.default_backend.describe()}")
        ingresses.append({"ingress": ing.key, "class": ing.class_name, "rules": rules})
    return Overview(
        nodes=[{"node": n.name, "ip": n.internal_ip, "podCIDR": n.pod_cidr} for n in state.nodes.values()],
        services=sorted(services, key=lambda s: s["service"]),
        pods=sorted(pods, key=lambda p: p["pod"]),
        ingresses=ingresses,
        network_policies=sorted(state.network_policies),
        notices=[str(n) for n in state.notices],
    )
