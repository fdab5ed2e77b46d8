"""The backend an Ingress path names: its Service, Service port and ready endpoints.

ingress-nginx proxies to the endpoints itself (not through the ClusterIP), by Service port number
or name; a missing Service or port is reported, not raised (the controller answers 503).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..cluster.state import ClusterState
from ..model.labels import edit_distance
from ..model.objects import IngressBackend, Service


@dataclass(frozen=True, slots=True)
class BackendTarget:
    service: str | None  # namespace/name
    service_type: str | None
    port: int | None  # the Service port
    port_name: str
    requested_port: str  # what the Ingress wrote: a number or a port name
    target_port: str | None
    cluster_ip: str | None
    external_name: str | None
    ready_endpoints: int | None
    resource: str | None
    problem: str | None

    @property
    def routable(self) -> bool:
        return self.service is not None and self.resource is None and self.problem is None

    def describe(self) -> str:
        if self.resource is not None:
            return f"resource {self.resource}"
        if self.port is None:
            return f"{self.service}:{self.requested_port}"
        name = f" ({self.port_name})" if self.port_name else ""
        return f"{self.service}:{self.port}{name}"


def closest_name(word: str, options: list[str]) -> str | None:
    scored = sorted((edit_distance(word, o), o) for o in options if o != word)
    if scored and scored[0][0] <= 2 and scored[0][0] < len(word):
        return scored[0][1]
    return None


def _ports_text(svc: Service) -> str:
    return ", ".join(f"{p.name + ' ' if p.name else ''}{p.port}/{p.protocol}" for p in svc.ports) or "none"


def _ready_endpoints(state: ClusterState, svc: Service, port_name: str) -> int:
    ready: set[str] = set()
    for es in state.slices_for(svc):
        if es.ports and not any(p.name == port_name for p in es.ports):
            continue
        for ep in es.endpoints:
            if ep.ready and ep.addresses:
                ready.add(ep.addresses[0])
    return len(ready)


def resolve_backend(state: ClusterState, namespace: str, backend: IngressBackend) -> BackendTarget:
    """The Service and Service port an Ingress backend names; a missing Service or port is reported, not raised."""
    if backend.resource is not None:
        r = backend.resource
        group = f"{r.get('apiGroup')}/" if r.get("apiGroup") else ""
        desc = f"{group}{r.get('kind')}/{r.get('name')}"
        return BackendTarget(None, None, None, "", "", None, None, None, None, desc,
                             f"resource backend {desc}: knetsim routes only to Services (ingress-nginx ignores "
                             "non-Service backends)")
    key = f"{namespace}/{backend.service_name}"
    requested = str(backend.port_number) if backend.port_number is not None else backend.port_name
    svc = state.services.get(key)
    if svc is None:
        names = sorted(s.name for s in state.services.values() if s.namespace == namespace)
        near = closest_name(backend.service_name, names)
        hint = f"; did you mean {near!r}?" if near else ""
        return BackendTarget(key, None, None, "", requested, None, None, None, None, None,
                             f"Service {key} not found{hint}")
    if svc.type == "ExternalName":
        # ingress-nginx proxies to the external name; the port need not be declared on the Service.
        named = svc.port_named(backend.port_name) if backend.port_name else None
        port = backend.port_number if backend.port_number is not None else (named.port if named else None)
        return BackendTarget(key, svc.type, port, backend.port_name, requested, None, None, svc.external_name,
                             None, None, None if port is not None else
                             f"Service {key} (ExternalName) has no port named {backend.port_name!r}")
    if backend.port_number is not None:
        sp = next((p for p in svc.ports if p.port == backend.port_number), None)
        if sp is None:
            hint = ""
            by_target = next((p for p in svc.ports if str(p.target_port) == str(backend.port_number)), None)
            if by_target is not None:
                hint = (f"; {backend.port_number} is the targetPort of Service port {by_target.port}"
                        " — an Ingress names the Service port, not the container port")
            elif len(svc.ports) == 1:
                hint = f"; the Service's only port is {svc.ports[0].port}"
            return BackendTarget(key, svc.type, None, "", requested, None, svc.cluster_ip, None, None, None,
                                 f"Service {key} has no port {backend.port_number} (ports: {_ports_text(svc)}){hint}")
    else:
        sp = svc.port_named(backend.port_name)
        if sp is None:
            near = closest_name(backend.port_name, [p.name for p in svc.ports if p.name])
            hint = f"; did you mean {near!r}?" if near else ""
            return BackendTarget(key, svc.type, None, "", requested, None, svc.cluster_ip, None, None, None,
                                 f"Service {key} has no port named {backend.port_name!r} "
                                 f"(ports: {_ports_text(svc)}){hint}")
    problem = None
    if sp.protocol != "TCP":
        problem = f"Service {key} port {sp.port} is {sp.protocol}; an Ingress proxies HTTP over TCP"
    return BackendTarget(key, svc.type, sp.port, sp.name, requested, str(sp.target_port), svc.cluster_ip, None,
                         _ready_endpoints(state, svc, sp.name), None, problem)




@dataclass(frozen=True, slots=True)
class Endpoint:
    pod: str | None  # namespace/name
    ip: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"


def ready_endpoints(state: ClusterState, service: str, port: int | None) -> list[Endpoint]:
    """The ready endpoints of a Service port, sorted by address: what the controller's upstream holds."""
    svc = state.services.get(service)
    if svc is None or port is None:
        return []
    sp = next((p for p in svc.ports if p.port == port), None)
    if sp is None:
        return []
    out: dict[str, Endpoint] = {}
    for es in state.slices_for(svc):
        es_port = next((p for p in es.ports if p.name == sp.name), None) if es.ports else None
        if es.ports and es_port is None:
            continue
        target = es_port.port if es_port is not None and es_port.port is not None else (
            int(sp.target_port) if str(sp.target_port).isdigit() else sp.port)
        for ep in es.endpoints:
            if ep.ready and ep.addresses:
                ref = ep.target_ref
                pod = f"{ref[1] or svc.namespace}/{ref[2]}" if ref is not None and ref[0] == "Pod" else None
                endpoint = Endpoint(pod, ep.addresses[0], target)
                out.setdefault(endpoint.address, endpoint)
    return [out[k] for k in sorted(out)]
