"""Exposure: which workloads accept connections from any namespace, from outside the cluster, or through an
Ingress or a Gateway, on which ports, and which rule opens each (``knetsim matrix --exposure``).

Three ways in, each asked of the policy engine on the workload's side (its ingress, every tier):

* **from any namespace** — a pod of a namespace no policy knows (a new one: no labels but its
  ``kubernetes.io/metadata.name``), itself without labels: whoever may create a pod anywhere gets
  this, as netpol-analyzer's exposure analysis reads rules that select "any namespace";
* **from any external address** — what every address outside the pod network gets, and, where
  ipBlocks cut the address space, what only some ranges get (the matrix's external rows);
* **through an Ingress or a Gateway** — each Ingress path ingress-nginx serves (the router's own
  answer to a request for it) and each HTTPRoute rule attached to a programmed listener, whose
  Service selects the workload's pods, with whether policy lets the controller's (the Gateway
  proxy's) pod in on the port the Service targets.

The rule that opens a way in is ``policy check``'s for one connection of it (the first port), from a
representative peer to the workload's first pod.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from ..cluster.endpointslices import find_port
from ..cluster.state import ClusterState
from ..gateway import translate
from ..ingress import route as ingress_route
from ..model.objects import Pod, Service
from ..policy.engine import PolicyInputError, direction_connections, evaluate, pod_endpoint
from ..policy.matrix import matrix
from ..policy.ports import ConnSet
from ..policy.rules import INGRESS, Endpoint

ANY_NAMESPACE = "knetsim-any-namespace"  # a namespace no policy can know by its labels


@dataclass(frozen=True, slots=True)
class Opening:
    """One way into a workload: through what (``via``), from whom (``peer``), on which connections, opened by."""

    via: str  # "any namespace" | "any external address" | "external range" | "Ingress" | "Gateway"
    peer: str  # the representative peer, or the route: "GET http://shop.example.com/ → Service shop/web:80"
    allowed: ConnSet
    rule: str  # the rule (or tier default) that admits the example connection
    admitted: bool = True  # for a route: whether policy lets the proxy in at all

    def to_dict(self) -> dict[str, Any]:
        return {"via": self.via, "peer": self.peer, "allowed": self.allowed.to_json(), "admitted": self.admitted,
                "rule": self.rule}


@dataclass(frozen=True, slots=True)
class Exposure:
    workload: str
    openings: tuple[Opening, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "openings": [o.to_dict() for o in self.openings]}


def _first_port(conns: ConnSet) -> tuple[str, int] | None:
    for protocol, ranges in conns.ranges:
        if ranges:
            return protocol, ranges[0][0]
    return None


def _rule(state: ClusterState, src: Endpoint, dst: Endpoint, at: tuple[str, int] | None) -> str:
    """Why ``dst`` admits ``src`` on ``at``: the deciding rule of its ingress side, or what left it open."""
    if at is None:
        return ""
    protocol, port = at
    try:
        v = evaluate(state, src, dst, port, protocol)
    except PolicyInputError as exc:  # pragma: no cover - the endpoints are built here
        return str(exc)
    return v.ingress.deciding() or f"ingress of {v.ingress.endpoint}: {v.ingress.reason}"


def any_namespace_pod(state: ClusterState) -> Endpoint:
    """A pod of a new namespace, without labels, at an address of the pod network no pod has."""
    net = ipaddress.ip_network(state.config.pod_cidr)
    used = {p.pod_ip for p in state.pods.values()}
    ip = next(str(a) for a in (net.broadcast_address - k for k in range(1, 1 << 16)) if str(a) not in used)
    pod = Pod.parse({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "any-pod", "namespace": ANY_NAMESPACE},
                     "spec": {"containers": [{"name": "c", "image": "any"}]}, "status": {"podIP": ip}})
    return Endpoint("pod", ip, pod, "")


def _routes(state: ClusterState) -> list[tuple[str, str, Service, int, str | None]]:
    """(via, request → backend, Service, Service port, proxy pod): every Ingress path and attached HTTPRoute rule."""
    out = []
    for key in sorted(state.ingresses):
        ing = state.ingresses[key]
        for rule in ing.rules:
            host = rule.host.replace("*", "x", 1) if rule.host else "exposure.invalid"
            for path in rule.paths:
                target = path.path or "/"
                if not target.startswith("/"):
                    continue
                result = ingress_route(state, host, target)
                backend = result.backend
                if not result.routed or result.match is None or result.match.ingress != ing.key \
                        or backend is None or backend.service is None or backend.port is None:
                    continue
                svc = state.services.get(backend.service)
                if svc is None:
                    continue
                proxy = result.controller.pod if result.controller is not None else None
                out.append(("Ingress", f"Ingress {ing.key}: GET http://{host}{target} → Service {backend.service}:"
                            f"{backend.port}", svc, backend.port, proxy))
    for gkey, gctx in sorted(translate(state).gateways.items()):
        if not gctx.proxy_pods:
            continue
        for lc in gctx.listeners:
            if not lc.programmed:
                continue
            for e in lc.entries:
                host = (e.hostnames[0] if e.hostnames else lc.listener.hostname or "exposure.invalid")
                host = host.replace("*", "x", 1)
                scheme = "https" if lc.listener.protocol == "HTTPS" else "http"
                for b in e.backends:
                    svc = state.services.get(b.service)
                    if not b.valid or svc is None or b.port is None:
                        continue
                    out.append(("Gateway", f"Gateway {gkey}: {e.match.path.type} {scheme}://{host}"
                                f"{e.match.path.value} (HTTPRoute {e.route.key} rule {e.rule.index}) → Service "
                                f"{b.service}:{b.port}", svc, b.port, gctx.proxy_pods[0]))
    return out


def exposure(state: ClusterState, namespace: str | None = None, *, include_system: bool = False) -> list[Exposure]:
    """Every workload (of ``namespace``) with a way in from any namespace, from outside, or through a route."""
    m = matrix(state, namespace, include_system=include_system, all_external=True)
    rows = m.rows
    anyone = any_namespace_pod(state)
    routes = _routes(state)
    external: dict[int, list[tuple[str, ConnSet]]] = {}
    for block in m.blocks():
        if rows.kinds[block.src] != "external":
            continue
        for j, p in zip(block.dst.tolist(), block.pattern.tolist(), strict=True):
            external.setdefault(j, []).append((rows.names[block.src], m.patterns[p]))
    pieces = [i for i in range(len(rows)) if rows.kinds[i] == "external"]
    out = []
    for i, name in enumerate(rows.names):
        members = rows.members[i]
        if rows.kinds[i] == "external" or members[0].kind != "pod":
            continue
        dst = members[0]
        openings = []
        from_anyone = direction_connections(state, INGRESS, dst, anyone)
        if from_anyone:
            openings.append(Opening("any namespace", f"a pod of any namespace ({ANY_NAMESPACE}, no labels)",
                                    from_anyone, _rule(state, anyone, dst, _first_port(from_anyone))))
        got = dict(external.get(i, []))
        everywhere = ConnSet.all()
        for piece in pieces:
            everywhere = everywhere & got.get(rows.names[piece], ConnSet.none())
        if pieces and everywhere:
            sample = _sample(rows.names[pieces[-1]])
            openings.append(Opening("any external address", "every address outside the pod network", everywhere,
                                    _rule(state, Endpoint("external", sample), dst, _first_port(everywhere))))
        for piece in pieces:
            extra = got.get(rows.names[piece], ConnSet.none()) - everywhere
            if extra:
                sample = _sample(rows.names[piece])
                openings.append(Opening("external range", rows.names[piece], extra,
                                        _rule(state, Endpoint("external", sample), dst, _first_port(extra))))
        pods = [ep.pod for ep in members if ep.pod is not None]
        for via, what, svc, port, proxy in routes:
            opening = _route_opening(state, via, what, svc, port, proxy, pods, dst)
            if opening is not None:
                openings.append(opening)
        if openings:
            out.append(Exposure(name, tuple(openings)))
    return out


def _sample(piece: str) -> str:
    """An address of an external range row (``192.168.0.0/16`` or ``a-b``): its first host."""
    first = piece.split("-", 1)[0].split("/", 1)[0]
    address = ipaddress.ip_address(first)
    return str(address + 1) if int(address) == 0 else str(address)


def _route_opening(state: ClusterState, via: str, what: str, svc: Service, port: int, proxy: str | None,
                   pods: list[Pod], dst: Endpoint) -> Opening | None:
    if not svc.selector or not any(svc.namespace == p.namespace and svc.selector_view.matches(p.labels)
                                   for p in pods):
        return None
    sp = next((p for p in svc.ports if p.port == port), None)
    assert dst.pod is not None
    target = find_port(dst.pod, sp) if sp is not None else None
    if sp is None or target is None:
        return None
    proxy_pod = state.pods.get(proxy) if proxy else None
    wanted = ConnSet.port(sp.protocol, target)
    if proxy_pod is None:
        return Opening(via, what, wanted, "no running proxy pod to check policy from", False)
    src = pod_endpoint(state, proxy_pod)
    allowed = direction_connections(state, INGRESS, dst, src) & wanted
    rule = _rule(state, src, dst, (sp.protocol, target))
    return Opening(via, what, wanted, rule, bool(allowed))


__all__ = ["ANY_NAMESPACE", "Exposure", "Opening", "any_namespace_pod", "exposure"]
