"""Synthetic ClusterStates for data plane tests and benchmarks, built straight from typed
objects (no YAML, no controllers) so that 10,000 Services take well under a second.

Address plan: Services 10.96.0.0/12 from 10.96.1.0 upward; endpoints in the node pod
CIDRs 10.244.<node>.0/24, spread round-robin over the workers.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from ..cluster.config import ClusterConfig
from ..cluster.state import ClusterState
from ..model.objects import (
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
    Endpoint,
    EndpointPort,
    EndpointSlice,
    Meta,
    Service,
    ServicePort,
)


def make_service(namespace: str, name: str, tweak: Callable[[dict], None] | None = None, **fields) -> Service:
    """A ClusterIP Service with one port ``p80``; ``fields`` or ``tweak`` (on a field dict) change it."""
    spec: dict = {"type": "ClusterIP", "cluster_ip": "10.96.1.1", "ports": (ServicePort("p80", "TCP", 80, 80),)}
    spec.update(fields)
    if tweak:
        tweak(spec)
    if not spec.get("cluster_ips"):
        spec["cluster_ips"] = (spec["cluster_ip"],)
    return Service("Service", Meta(name, namespace), {}, _SOURCE, **spec)


def make_slice(namespace: str, service: str, endpoints: list[tuple[str, str | None]] | list[Endpoint],
               ports: tuple[EndpointPort, ...] = (EndpointPort("p80", 80),), suffix: str = "abcde",
               address_type: str | None = None) -> EndpointSlice:
    """A managed slice; its address type follows the first endpoint's address unless given."""
    eps = tuple(e if isinstance(e, Endpoint) else Endpoint((e[0],), node_name=e[1]) for e in endpoints)
    labels = {SERVICE_NAME_LABEL: service, MANAGED_BY_LABEL: "endpointslice-controller.k8s.io"}
    if address_type is None:
        address_type = "IPv6" if eps and eps[0].addresses and ":" in eps[0].addresses[0] else "IPv4"
    return EndpointSlice("EndpointSlice", Meta(f"{service}-{suffix}", namespace, labels), {}, _SOURCE,
                         address_type=address_type, endpoints=eps, ports=ports)


def state_of(services: list[Service], slices: list[EndpointSlice], config: ClusterConfig | None = None) -> ClusterState:
    state = ClusterState(config or ClusterConfig())
    state.services = {s.key: s for s in services}
    state.endpoint_slices = {s.key: s for s in slices}
    return state


def synthetic_state(services: int, endpoints: int, service_type: str = "ClusterIP",
                    dual_stack: bool = False) -> ClusterState:
    """``services`` Services of ``service_type`` with ``endpoints`` ready endpoints each; ``dual_stack``: each
    Service also has an IPv6 ClusterIP (fd00:10:96::/112) and an IPv6 slice with the same endpoints in
    fd00:10:244::/56, on a dual-stack cluster."""
    config = ClusterConfig()
    if dual_stack:
        from ..cluster.config import config_from_dict

        config = config_from_dict({"ipFamily": "dual", "serviceCIDR": "10.96.0.0/12,fd00:10:96::/108"})
    workers = [n.name for n in config.nodes if not n.control_plane] or [config.nodes[0].name]
    svc_base = int(ipaddress.ip_address("10.96.1.0"))
    svc6_base = int(ipaddress.ip_address("fd00:10:96::100"))
    out_services, out_slices = [], []
    ep_counter = 0
    for i in range(services):
        ns, name = f"ns{i // 100}", f"svc{i}"
        fields: dict = {"cluster_ip": str(ipaddress.ip_address(svc_base + i)), "type": service_type}
        if dual_stack:
            fields["cluster_ips"] = (fields["cluster_ip"], str(ipaddress.IPv6Address(svc6_base + i)))
        if service_type in ("NodePort", "LoadBalancer"):
            fields["ports"] = (ServicePort("p80", "TCP", 80, 80, node_port=30000 + i % 2768),)
        if service_type == "LoadBalancer":
            fields["load_balancer_ips"] = (str(ipaddress.ip_address(int(ipaddress.ip_address("172.19.0.0")) + i)),)
        out_services.append(make_service(ns, name, **fields))
        eps = []
        for _ in range(endpoints):
            node_index = ep_counter % len(workers)
            host = ep_counter // len(workers)
            ip = f"10.244.{node_index + 1}.{host % 250 + 2}" if host < 250 else \
                str(ipaddress.ip_address(int(ipaddress.ip_address("10.245.0.0")) + ep_counter))
            eps.append((ip, workers[node_index]))
            ep_counter += 1
        if eps:
            out_slices.append(make_slice(ns, name, eps))
            if dual_stack:
                six = [(_ipv6_twin(ip), node) for ip, node in eps]
                out_slices.append(make_slice(ns, name, six, suffix="v6abc", address_type="IPv6"))
    return state_of(out_services, out_slices, config)


def _ipv6_twin(ip: str) -> str:
    """10.244.<n>.<h> (or 10.245.x.y) as fd00:10:244:<n>::<h>: the pod's address in the IPv6 pod CIDR."""
    a, b, c, d = ip.split(".")
    return f"fd00:{a}:{b}:{c}::{int(d):x}"


from ..model.loader import BUILTIN as _SOURCE  # noqa: E402  (kept last: only a constant)
