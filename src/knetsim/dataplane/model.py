"""Shared bookkeeping for every data plane: service ports, endpoints, packets, traces.

kube-proxy keeps one ``ServicePortMap`` and one ``EndpointsMap`` for all of its backends
(pkg/proxy/servicechangetracker.go, endpointschangetracker.go); each backend only renders.
This module is that shared part. ``proxy_view`` derives, once per render, every proxied
service port and its endpoints from the ClusterState's Services and EndpointSlices, sorts
them the way upstream does, categorises the endpoints for the node being rendered
(``proxy.CategorizeEndpoints``) and asks the backend's ``port_names`` hook for the names it
derives from a port (chain names, map keys), as kube-proxy's ``makeServicePortFunc`` does.
A backend never looks at a raw manifest.
"""

from __future__ import annotations

import gc
import hashlib
import ipaddress
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..cluster.state import ClusterState
from ..model.objects import Service

PROTOCOLS = ("TCP", "UDP", "SCTP")


@dataclass(frozen=True, slots=True)
class ServicePortInfo:
    """One proxied (Service, port) pair: upstream's ``BaseServicePortInfo``."""

    namespace: str
    name: str
    port_name: str
    protocol: str  # TCP | UDP | SCTP
    port: int
    cluster_ip: str
    service_type: str = "ClusterIP"
    node_port: int = 0
    external_ips: tuple[str, ...] = ()
    load_balancer_ips: tuple[str, ...] = ()
    source_ranges: tuple[str, ...] = ()
    external_policy: str = "Cluster"
    internal_policy: str = "Cluster"
    affinity_timeout: int | None = None  # seconds when sessionAffinity is ClientIP
    health_check_node_port: int = 0

    @property
    def name_string(self) -> str:
        """``ServicePortName.String()``: the port name is appended only when it is set."""
        base = f"{self.namespace}/{self.name}"
        return f"{base}:{self.port_name}" if self.port_name else base

    @property
    def proto(self) -> str:
        return self.protocol.lower()

    @property
    def externally_accessible(self) -> bool:
        return bool(self.node_port or self.external_ips or self.load_balancer_ips)

    @property
    def external_policy_local(self) -> bool:
        return self.externally_accessible and self.external_policy == "Local"

    @property
    def internal_policy_local(self) -> bool:
        return self.internal_policy == "Local"

    @property
    def uses_cluster_endpoints(self) -> bool:
        return not self.internal_policy_local or (self.externally_accessible and not self.external_policy_local)

    @property
    def uses_local_endpoints(self) -> bool:
        return self.internal_policy_local or self.external_policy_local


@dataclass(frozen=True, slots=True)
class EndpointInfo:
    ip: str
    port: int
    node: str | None = None
    ready: bool = True
    serving: bool = True
    terminating: bool = False
    string: str = ""  # "ip:port" (net.JoinHostPort), computed once: it keys every per-endpoint name

    def __post_init__(self) -> None:
        if not self.string:
            text = f"[{self.ip}]:{self.port}" if ":" in self.ip else f"{self.ip}:{self.port}"
            object.__setattr__(self, "string", text)


@dataclass(frozen=True, slots=True)
class Categorized:
    """``proxy.CategorizeEndpoints`` for one node."""

    cluster: tuple[EndpointInfo, ...]
    local: tuple[EndpointInfo, ...]
    reachable: tuple[EndpointInfo, ...]
    has_endpoints: bool


def usable_endpoints(candidates: Sequence[EndpointInfo]) -> tuple[EndpointInfo, ...]:
    """Ready endpoints; only when none is ready, the serving-but-terminating ones (KEP-1669,
    ProxyTerminatingEndpoints). Not-serving endpoints are never used."""
    ready = tuple(e for e in candidates if e.ready)
    if ready:
        return ready
    return tuple(e for e in candidates if e.serving and e.terminating)


def categorize(info: ServicePortInfo, endpoints: Sequence[EndpointInfo], node: str) -> Categorized:
    usable = usable_endpoints
    has = any(e.ready or (e.serving and e.terminating) for e in endpoints)
    cluster = usable(endpoints) if info.uses_cluster_endpoints else ()
    local = usable([e for e in endpoints if e.node == node]) if info.uses_local_endpoints else ()
    seen: dict[str, EndpointInfo] = {}
    for e in (*cluster, *local):
        seen.setdefault(e.string, e)
    reachable = tuple(sorted(seen.values(), key=lambda e: e.string))
    return Categorized(cluster, local, reachable, has)


@dataclass(frozen=True, slots=True)
class PortEntry:
    """A service port as a backend sees it: facts, endpoints, this node's categories, its names."""

    info: ServicePortInfo
    endpoints: tuple[EndpointInfo, ...]
    categorized: Categorized
    names: Any = None


@dataclass(frozen=True, slots=True)
class ProxyView:
    """What a proxy on ``node`` knows: the only input a backend's renderer reads."""

    node: str
    node_ip: str
    node_ips: Mapping[str, str]  # every node name -> InternalIP
    pod_cidr: str
    service_cidr: str
    ports: tuple[PortEntry, ...]


@runtime_checkable
class Backend(Protocol):
    """A data plane. Implementations: iptables, nftables, ebpf (see ``dataplane.BACKENDS``)."""

    name: str

    def port_names(self, info: ServicePortInfo, endpoints: Sequence[EndpointInfo]) -> Any:
        """Precompute the names this backend derives from a port (chains, sets, keys)."""

    def render(self, state: ClusterState, node: str | None = None) -> Ruleset:
        """Program the rules/maps a proxy on ``node`` would hold."""

    def trace(self, ruleset: Ruleset, packet: Packet) -> TraceResult:
        """Walk ``packet`` through ``ruleset`` (the rendered artefact, not the state)."""


# --- derivation -----------------------------------------------------------------------


def service_ports(service: Service) -> list[ServicePortInfo]:
    """The ports kube-proxy proxies for ``service`` (none for headless/ExternalName)."""
    if service.type == "ExternalName" or not service.cluster_ip or service.cluster_ip == "None":
        return []
    try:
        if ipaddress.ip_address(service.cluster_ip).version != 4:
            return []  # knetsim simulates single-stack IPv4 clusters
    except ValueError:
        return []
    affinity = service.session_affinity_timeout if service.session_affinity == "ClientIP" else None
    lb = tuple(ip for ip in service.load_balancer_ips if _is_ipv4(ip)) if service.type == "LoadBalancer" else ()
    out = []
    for p in service.ports:
        out.append(ServicePortInfo(
            namespace=service.namespace, name=service.name, port_name=p.name, protocol=p.protocol,
            port=p.port, cluster_ip=service.cluster_ip, service_type=service.type,
            node_port=int(p.node_port or 0) if service.type in ("NodePort", "LoadBalancer") else 0,
            external_ips=tuple(ip for ip in service.external_ips if _is_ipv4(ip)),
            load_balancer_ips=lb,
            source_ranges=service.load_balancer_source_ranges if lb else (),
            external_policy=service.external_traffic_policy,
            internal_policy=service.internal_traffic_policy,
            affinity_timeout=affinity,
            health_check_node_port=int(service.health_check_node_port or 0),
        ))
    return out


def _is_ipv4(text: str) -> bool:
    try:
        return ipaddress.ip_address(text).version == 4
    except ValueError:
        return False


def endpoints_by_port(state: ClusterState, service: Service) -> dict[tuple[str, str], list[EndpointInfo]]:
    """(port name, protocol) -> endpoints, from every IPv4 EndpointSlice of ``service``."""
    out: dict[tuple[str, str], dict[str, EndpointInfo]] = {}
    for es in state.slices_for(service):
        if es.address_type != "IPv4":
            continue
        for ep_port in es.ports:
            if ep_port.port is None:
                continue
            bucket = out.setdefault((ep_port.name, ep_port.protocol), {})
            port = int(ep_port.port)
            for ep in es.endpoints:
                if not ep.addresses:
                    continue
                # Only the first address is used, as kube-proxy does.
                ip = ep.addresses[0]
                string = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
                if string not in bucket:
                    bucket[string] = EndpointInfo(ip, port, ep.node_name, ep.ready is not False,
                                                  ep.serving is not False, bool(ep.terminating), string)
    # Upstream sorts each port's endpoints by their "ip:port" string (byEndpoint).
    return {k: sorted(v.values(), key=lambda e: e.string) for k, v in out.items()}


def default_node(state: ClusterState) -> str:
    """The node a render is for when none is named: the first worker, as on a kind cluster."""
    nodes = list(state.config.nodes)
    for n in nodes:
        if not n.control_plane:
            return n.name
    return nodes[0].name if nodes else ""


class DataplaneError(ValueError):
    """Bad request to the data plane layer (unknown backend or node); maps to exit code 2."""


def proxy_view(state: ClusterState, node: str | None, backend: Backend) -> ProxyView:
    node = node or default_node(state)
    node_ips = {n.name: n.ip for n in state.config.nodes}
    if node not in node_ips:
        raise DataplaneError(f"node {node!r} not found; nodes: {', '.join(node_ips)}")
    entries = []
    for key in sorted(state.services):
        svc = state.services[key]
        ports = service_ports(svc)
        if not ports:
            continue
        eps = endpoints_by_port(state, svc)
        for info in ports:
            endpoints = tuple(eps.get((info.port_name, info.protocol), ()))
            entries.append(PortEntry(info, endpoints, categorize(info, endpoints, node),
                                     backend.port_names(info, endpoints)))
    # kube-proxy iterates a Go map; we sort by ServicePortName so output is reproducible.
    entries.sort(key=lambda e: (e.info.namespace, e.info.name, e.info.port_name, e.info.protocol))
    return ProxyView(node, node_ips[node], node_ips, state.config.pod_cidr, state.config.service_cidr, tuple(entries))


# --- packets and traces ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Packet:
    src: str
    dst: str
    dport: int
    proto: str = "TCP"
    node: str | None = None  # the node whose rules see it; None: derived (see dataplane.arrival_node)

    def __post_init__(self) -> None:
        for label, value in (("src", self.src), ("dst", self.dst)):
            try:
                if ipaddress.ip_address(value).version != 4:
                    raise DataplaneError(f"--{label}: {value}: only IPv4 is simulated")
            except ValueError as exc:
                if isinstance(exc, DataplaneError):
                    raise
                raise DataplaneError(f"--{label}: {value!r} is not an IP address") from None
        if not 1 <= int(self.dport) <= 65535:
            raise DataplaneError(f"--dport: {self.dport}: must be between 1 and 65535, inclusive")
        if self.proto.upper() not in PROTOCOLS:
            raise DataplaneError(f"--proto: Unsupported value: {self.proto!r}: supported values: TCP, UDP, SCTP")


@dataclass(frozen=True, slots=True)
class Target:
    address: str  # ip:port
    probability: float

    def to_dict(self) -> dict[str, Any]:
        return {"address": self.address, "probability": round(self.probability, 6)}


@dataclass(frozen=True, slots=True)
class Step:
    where: str  # "nat/KUBE-SERVICES", "chain services", "map cilium_lb4_services_v2"
    text: str   # the rule or map entry as rendered

    def to_dict(self) -> dict[str, str]:
        return {"where": self.where, "text": self.text}


VERDICTS = ("DNAT", "ACCEPT", "REJECT", "DROP", "NONE")


@dataclass
class TraceResult:
    backend: str
    node: str
    packet: Packet
    verdict: str = "NONE"
    targets: list[Target] = field(default_factory=list)
    masquerade: bool = False
    service: str | None = None
    steps: list[Step] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cost: int = 0  # rules evaluated (iptables, nftables) or map lookups (ebpf)

    @property
    def ok(self) -> bool:
        """Delivered to a backend (DNAT) or accepted by the node itself."""
        return self.verdict in ("DNAT", "ACCEPT")

    @property
    def output(self) -> str:
        """Upstream packetFlowTest's ``output``: targets comma-joined, a verdict, or "" (no match)."""
        if self.verdict == "DNAT":
            return ", ".join(t.address for t in self.targets)
        return "" if self.verdict == "NONE" else self.verdict

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "node": self.node,
            "packet": {"src": self.packet.src, "dst": self.packet.dst, "dport": self.packet.dport,
                       "proto": self.packet.proto},
            "verdict": self.verdict,
            "service": self.service,
            "targets": [t.to_dict() for t in self.targets],
            "masquerade": self.masquerade,
            "steps": [s.to_dict() for s in self.steps],
            "notes": list(self.notes),
            "cost": self.cost,
        }


@dataclass
class Ruleset:
    """A backend's rendered artefact: its text and the parsed form its tracer walks."""

    backend: str
    node: str
    node_ip: str
    text: str
    counts: dict[str, int]
    data: Any = None  # backend-private parsed form (built from ``text`` or the maps)
    view: ProxyView | None = None
    structured: Any = None  # JSON-able dict, or a callable producing it on demand (it is big)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"backend": self.backend, "node": self.node, "nodeIP": self.node_ip,
                               "counts": dict(self.counts)}
        if self.structured is not None:
            out[self.backend] = self.structured() if callable(self.structured) else self.structured
        out["text"] = self.text
        return out


@contextmanager
def bulk() -> Iterator[None]:
    """Pause the cyclic GC while a render allocates its ~10^6 small, acyclic objects.

    At 10,000 Services x 10 endpoints the collector's generation scans cost about a third
    of the render time and find nothing to free.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def b32_prefix(text: str, chars: int) -> str:
    """``base32.StdEncoding.EncodeToString(sha256(text))[:chars]``, without encoding the whole digest.

    Every name kube-proxy derives is such a prefix; base64.b32encode is pure Python and
    dominated render time at 10,000 Services.
    """
    nbytes = (chars * 5 + 7) // 8
    n = int.from_bytes(hashlib.sha256(text.encode()).digest()[:nbytes], "big")
    shift = nbytes * 8
    return "".join(_B32[(n >> (shift - 5 * (i + 1))) & 31] for i in range(chars))


def in_cidr(ip: str, cidr: str) -> bool:
    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False
