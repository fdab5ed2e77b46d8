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

import hashlib
import ipaddress
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ..cluster.state import ClusterState
from ..model.loader import many_objects
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

    # ``ServicePortName.String()``: the port name is appended only when it is set. Computed once: every chain,
    # map and comment name of the port starts from it.
    name_string: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        base = f"{self.namespace}/{self.name}"
        object.__setattr__(self, "name_string", f"{base}:{self.port_name}" if self.port_name else base)

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
        # kube-proxy's UsesClusterEndpoints: even with both policies Local, a port reachable from outside keeps
        # the Cluster endpoints, because pod and node traffic to its external addresses short-circuits to them.
        return not self.internal_policy_local or self.externally_accessible

    @property
    def uses_local_endpoints(self) -> bool:
        return self.internal_policy_local or self.external_policy_local


NO_HINTS: frozenset[str] = frozenset()


class _EndpointFields(NamedTuple):
    ip: str
    port: int
    node: str | None
    ready: bool
    serving: bool
    terminating: bool
    string: str  # "ip:port" (net.JoinHostPort), computed once: it keys every per-endpoint name
    # The EndpointSlice's hints.forZones / hints.forNodes (topology-aware routing).
    zone_hints: frozenset[str]
    node_hints: frozenset[str]


class EndpointInfo(_EndpointFields):
    """One endpoint of a service port, as the proxies see it (``BaseEndpointInfo``). A tuple: a render makes
    one per endpoint and family, 200,000 at 10,000 dual-stack Services, and a tuple is cheap to make."""

    __slots__ = ()

    def __new__(cls, ip: str, port: int, node: str | None = None, ready: bool = True, serving: bool = True,
                terminating: bool = False, string: str = "", zone_hints: frozenset[str] = NO_HINTS,
                node_hints: frozenset[str] = NO_HINTS) -> EndpointInfo:
        return super().__new__(cls, ip, port, node, ready, serving, terminating, string or join_host_port(ip, port),
                               zone_hints, node_hints)


def join_host_port(ip: str, port: int) -> str:
    """``net.JoinHostPort``: IPv6 addresses in brackets."""
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def split_host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


PREFER_SAME_ZONE = "PreferSameZone"
PREFER_SAME_NODE = "PreferSameNode"


@dataclass(frozen=True, slots=True)
class Categorized:
    """``proxy.CategorizeEndpoints`` for one node."""

    cluster: tuple[EndpointInfo, ...]
    local: tuple[EndpointInfo, ...]
    reachable: tuple[EndpointInfo, ...]
    has_endpoints: bool
    # The topology mode the hints gave for this node ("", PreferSameZone, PreferSameNode) and, in words,
    # why those endpoints were kept (or why the hints were ignored); "" when no endpoint has hints.
    topology: str = ""
    why: str = ""


def usable_endpoints(candidates: Sequence[EndpointInfo]) -> tuple[EndpointInfo, ...]:
    """Ready endpoints; only when none is ready, the serving-but-terminating ones (KEP-1669,
    ProxyTerminatingEndpoints). Not-serving endpoints are never used."""
    ready = tuple(e for e in candidates if e.ready)
    if ready:
        return ready
    return tuple(e for e in candidates if e.serving and e.terminating)


def topology_mode(endpoints: Sequence[EndpointInfo], node: str, zone: str) -> tuple[str, str]:
    """``topologyModeFromHints`` (pkg/proxy/topology.go), with the reason in words.

    Node hints win when every ready endpoint has one and one is for this node; else zone hints, when
    every ready endpoint has one and one is for this node's zone; else no topology at all — the
    fallback that keeps a node without a close endpoint from black-holing the traffic.
    """
    return _topology_mode([e for e in endpoints if e.ready], node, zone)


def _topology_mode(ready: Sequence[EndpointInfo], node: str, zone: str) -> tuple[str, str]:
    if not ready or not any(e.zone_hints or e.node_hints for e in ready):
        return "", ""
    all_node_hints = all(e.node_hints for e in ready)
    all_zone_hints = all(e.zone_hints for e in ready)
    reasons = []
    if all_node_hints:
        if any(node in e.node_hints for e in ready):
            kept = sum(1 for e in ready if node in e.node_hints)
            return PREFER_SAME_NODE, (f"PreferSameNode: {kept} of {len(ready)} ready endpoint(s) are hinted for "
                                      f"node {node}")
        reasons.append(f"no endpoint is hinted for node {node}")
    elif any(e.node_hints for e in ready):
        reasons.append("one or more endpoints is missing a node hint")
    if all_zone_hints:
        if zone and any(zone in e.zone_hints for e in ready):
            kept = sum(1 for e in ready if zone in e.zone_hints)
            prefix = f"{'; '.join(reasons)}, so " if reasons else ""
            return PREFER_SAME_ZONE, (f"{prefix}PreferSameZone: {kept} of {len(ready)} ready endpoint(s) are hinted "
                                      f"for zone {zone} (node {node})")
        reasons.append(f"node {node} has no topology.kubernetes.io/zone label" if not zone else
                       f"no endpoint is hinted for zone {zone}")
    else:
        reasons.append("one or more endpoints is missing a zone hint")
    return "", f"hints ignored ({'; '.join(reasons)}): every ready endpoint is used"


def _available(e: EndpointInfo, mode: str, node: str, zone: str) -> bool:
    if mode == PREFER_SAME_NODE:
        return node in e.node_hints
    if mode == PREFER_SAME_ZONE:
        return zone in e.zone_hints
    return True


CILIUM_TOPOLOGY_OFF = ("Cilium's service topology is off (agent flag --enable-service-topology, Helm "
                       "loadBalancer.serviceTopology; cluster config ciliumServiceTopology)")


def hints_ignored_by(backend: str, config: Any) -> str:
    """Why ``backend`` ignores every EndpointSlice hint in a cluster of ``config``, or "" when it honours them."""
    if backend == "ebpf" and not getattr(config, "cilium_service_topology", False):
        return CILIUM_TOPOLOGY_OFF
    return ""


def categorize(info: ServicePortInfo, endpoints: Sequence[EndpointInfo], node: str, zone: str = "", *,
               ignore_hints: str = "") -> Categorized:
    """``proxy.CategorizeEndpoints``: the Cluster-policy endpoints (hints applied), the Local-policy ones (hints
    never apply to them), every endpoint reachable from this node, and whether any exists at all. ``endpoints``
    come in byEndpoint order (``endpoints_by_port``'s), which the categories keep. ``ignore_hints``: why this
    proxy reads no hint at all (``hints_ignored_by``)."""
    if not endpoints:
        return Categorized((), (), (), False)
    mode, why = "", ""
    cluster: tuple[EndpointInfo, ...] = ()
    has = False
    if info.uses_cluster_endpoints:
        ready = [e for e in endpoints if e.ready]
        if ignore_hints:
            hinted = any(e.zone_hints or e.node_hints for e in ready)
            why = f"hints ignored ({ignore_hints}): every ready endpoint is used" if hinted else ""
        else:
            mode, why = _topology_mode(ready, node, zone)
        cluster = tuple(e for e in ready if _available(e, mode, node, zone)) if mode else tuple(ready)
        if not cluster:
            # No ready endpoint anywhere (topology already fell back if the close ones were missing).
            cluster = tuple(e for e in endpoints if e.serving and e.terminating)
        has = bool(cluster)
    local: tuple[EndpointInfo, ...] = ()
    if info.uses_local_endpoints:
        has = has or any(e.ready or (e.serving and e.terminating) for e in endpoints)
        local = usable_endpoints([e for e in endpoints if e.node == node])
        if info.internal_policy_local and why:
            why += "; internalTrafficPolicy Local keeps ClusterIP traffic on this node's endpoints, hints aside"
    if local:
        seen: dict[str, EndpointInfo] = {}
        for e in (*cluster, *local):
            seen.setdefault(e.string, e)
        reachable = tuple(seen[s] for s in sorted(seen))
    else:
        reachable = cluster  # already in the endpoints' byEndpoint order
    return Categorized(cluster, local, reachable, has, mode, why)


@dataclass(frozen=True, slots=True)
class PortEntry:
    """A service port as a backend sees it: facts, endpoints, this node's categories, its names."""

    info: ServicePortInfo
    endpoints: tuple[EndpointInfo, ...]
    categorized: Categorized
    names: Any = None


@dataclass(frozen=True, slots=True)
class ProxyView:
    """What a proxy on ``node`` knows about one IP family: the only input a backend's renderer reads.

    kube-proxy runs one proxier per family (the metaproxier); a dual-stack render is two views."""

    node: str
    node_ip: str
    node_ips: Mapping[str, str]  # every node name -> InternalIP of this family
    pod_cidr: str
    service_cidr: str
    ports: tuple[PortEntry, ...]
    family: str = "IPv4"
    zone: str = ""  # the node's topology.kubernetes.io/zone
    # kube-proxy's nodePortAddresses as the cluster config sets it (() unset; each mode's default and meaning:
    # dataplane/nodeports.py).
    node_port_addresses: tuple[str, ...] = ()

    @property
    def ipv6(self) -> bool:
        return self.family == "IPv6"


@dataclass
class AffinityMemory:
    """What a data plane remembers of a client between its connections (sessionAffinity: ClientIP): iptables'
    ``recent`` lists, nftables' dynamic ``affinity-`` sets, Cilium's ``lb4_affinity``/``lb6_affinity`` map.

    Keys are (table, client address): the recent list or set name, or the map with the frontend's rev-NAT id.
    Values are (what it points at, when last refreshed); ``now`` is the clock, in seconds since the first
    connection. Each data plane refreshes the time on every connection it pins, so a timeout runs from the
    client's last connection, not its first."""

    now: float = 0.0
    entries: dict[tuple[str, str], tuple[str, float]] = field(default_factory=dict)

    def lookup(self, table: str, client: str) -> tuple[str, float] | None:
        """(value, age in seconds) of a remembered client, or None."""
        got = self.entries.get((table, client))
        return (got[0], self.now - got[1]) if got is not None else None

    def remember(self, table: str, client: str, value: str = "") -> None:
        self.entries[(table, client)] = (value, self.now)


@runtime_checkable
class Backend(Protocol):
    """A data plane. Implementations: iptables, nftables, ebpf (see ``dataplane.BACKENDS``)."""

    name: str

    def port_names(self, info: ServicePortInfo, endpoints: Sequence[EndpointInfo]) -> Any:
        """Precompute the names this backend derives from a port (chains, sets, keys)."""

    def render(self, state: ClusterState, node: str | None = None) -> Ruleset:
        """Program the rules/maps a proxy on ``node`` would hold."""

    def trace(self, ruleset: Ruleset, packet: Packet, memory: AffinityMemory | None = None) -> TraceResult:
        """Walk ``packet`` through ``ruleset`` (the rendered artefact, not the state); ``memory`` holds what the
        data plane remembers of earlier connections (none: the first connection)."""

    def remember(self, ruleset: Ruleset, result: TraceResult, target: Target, memory: AffinityMemory) -> str:
        """Record that ``result``'s connection went to ``target``, as the data plane does for sessionAffinity;
        returns where it was recorded ("" when the Service has no affinity)."""


# --- derivation -----------------------------------------------------------------------


def family_of_ip(text: str) -> str | None:
    """IPv4 or IPv6 for an address the API server validated (a colon is IPv6), None for anything else."""
    if ":" in text:
        return "IPv6"
    if text and text[0].isdigit():
        return "IPv4"
    return None


def primary_family(service: Service) -> str:
    """The Service's first family: what a client gets from the ``A``-or-``AAAA`` it asks first."""
    families = (service.raw.get("spec") or {}).get("ipFamilies") or ()
    if families:
        return str(families[0])
    return family_of_ip(service.cluster_ip) or "IPv4"


def cluster_ip_of(service: Service, family: str) -> str:
    """The Service's ClusterIP of ``family``, or "" (a single-stack Service of the other family, headless...)."""
    for ip in service.cluster_ips or (service.cluster_ip,):
        if ip and ip != "None" and family_of_ip(ip) == family:
            return ip
    return ""


# kube-proxy watches Services through the label selector `!service.kubernetes.io/service-proxy-name,
# !service.kubernetes.io/headless` (pkg/proxy/apis/well_known_labels.go, cmd/kube-proxy/app/server.go): a Service
# with either label, whatever its value, is another proxy's to program. Cilium's kube-proxy replacement does the same
# while its own k8s-service-proxy-name is unset (its default).
SERVICE_PROXY_NAME_LABEL = "service.kubernetes.io/service-proxy-name"
HEADLESS_LABEL = "service.kubernetes.io/headless"


def proxied_elsewhere(service: Service) -> str:
    """The label that hands ``service`` to another proxy (so this node's data plane has no rule for it), or ""."""
    return next((label for label in (SERVICE_PROXY_NAME_LABEL, HEADLESS_LABEL) if label in service.labels), "")


def service_ports(service: Service, family: str | None = None) -> list[ServicePortInfo]:
    """The ports the ``family`` proxier proxies for ``service`` (none for headless/ExternalName, or a Service
    without an address of that family). ``family`` defaults to the Service's primary one."""
    if service.type == "ExternalName" or not service.cluster_ip or service.cluster_ip == "None":
        return []
    family = family or primary_family(service)
    cluster_ip = cluster_ip_of(service, family)
    if not cluster_ip:
        return []
    affinity = service.session_affinity_timeout if service.session_affinity == "ClientIP" else None
    lb = tuple(ip for ip in service.load_balancer_ips if family_of_ip(ip) == family) \
        if service.type == "LoadBalancer" else ()
    out = []
    for p in service.ports:
        out.append(ServicePortInfo(
            namespace=service.namespace, name=service.name, port_name=p.name, protocol=p.protocol,
            port=p.port, cluster_ip=cluster_ip, service_type=service.type,
            node_port=int(p.node_port or 0) if service.type in ("NodePort", "LoadBalancer") else 0,
            external_ips=tuple(ip for ip in service.external_ips if family_of_ip(ip) == family),
            load_balancer_ips=lb,
            source_ranges=tuple(c for c in service.load_balancer_source_ranges if family_of_ip(c.split("/")[0])
                                == family) if lb else (),
            external_policy=service.external_traffic_policy,
            internal_policy=service.internal_traffic_policy,
            affinity_timeout=affinity,
            health_check_node_port=int(service.health_check_node_port or 0),
        ))
    return out


new_info = tuple.__new__


def endpoints_by_port(state: ClusterState, service: Service,
                      family: str | None = None) -> dict[tuple[str, str], list[EndpointInfo]]:
    """(port name, protocol) -> endpoints, from the Service's EndpointSlices of ``family``'s address type
    (default: its primary family)."""
    family = family or primary_family(service)
    out: dict[tuple[str, str], dict[str, EndpointInfo]] = {}
    for es in state.slices_for(service):
        if es.address_type != family:
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
                    # EndpointInfo's own fields, in order, without its constructor's defaults: this runs
                    # once per endpoint, port and family of every Service a render sees.
                    bucket[string] = new_info(EndpointInfo, (
                        ip, port, ep.node_name, ep.ready is not False, ep.serving is not False,
                        bool(ep.terminating), string, frozenset(ep.for_zones) if ep.for_zones else NO_HINTS,
                        frozenset(ep.for_nodes) if ep.for_nodes else NO_HINTS))
    # Upstream sorts each port's endpoints by their "ip:port" string (byEndpoint).
    return {k: [v[s] for s in sorted(v)] for k, v in out.items()}


def default_node(state: ClusterState) -> str:
    """The node a render is for when none is named: the first worker, as on a kind cluster."""
    nodes = list(state.config.nodes)
    for n in nodes:
        if not n.control_plane:
            return n.name
    return nodes[0].name if nodes else ""


class DataplaneError(ValueError):
    """Bad request to the data plane layer (unknown backend or node); maps to exit code 2."""


def node_address(state: ClusterState, node: str, family: str) -> str:
    """The node's InternalIP of ``family`` (the cluster config's, else the Node object's)."""
    for n in state.config.nodes:
        if n.name == node:
            return next((ip for ip in n.addresses if family_of_ip(ip) == family), "")
    obj = state.nodes.get(node)
    return next((ip for ip in (obj.internal_ips if obj else ()) if family_of_ip(ip) == family), "")


def node_zone(state: ClusterState, node: str) -> str:
    obj = state.nodes.get(node)
    if obj is not None:
        return obj.zone or ""
    return next((n.zone or "" for n in state.config.nodes if n.name == node), "")


def proxy_view(state: ClusterState, node: str | None, backend: Backend, family: str | None = None) -> ProxyView:
    """What the ``family`` proxier (default: the cluster's primary family) on ``node`` knows."""
    node = node or default_node(state)
    family = family or state.config.ip_families[0]
    names = [n.name for n in state.config.nodes]
    if node not in names:
        raise DataplaneError(f"node {node!r} not found; nodes: {', '.join(names)}")
    node_ips = {name: node_address(state, name, family) for name in names}
    zone = node_zone(state, node)
    ignore_hints = hints_ignored_by(backend.name, state.config)
    entries = []
    for key in sorted(state.services):
        svc = state.services[key]
        if proxied_elsewhere(svc):
            continue
        ports = service_ports(svc, family)
        if not ports:
            continue
        eps = endpoints_by_port(state, svc, family)
        for info in ports:
            endpoints = tuple(eps.get((info.port_name, info.protocol), ()))
            kept = categorize(info, endpoints, node, zone, ignore_hints=ignore_hints)
            entries.append(PortEntry(info, endpoints, kept, backend.port_names(info, endpoints)))
    # kube-proxy iterates a Go map; we sort by ServicePortName so output is reproducible.
    entries.sort(key=lambda e: (e.info.namespace, e.info.name, e.info.port_name, e.info.protocol))
    return ProxyView(node, node_ips[node], node_ips, state.config.pod_cidr_of(family) or state.config.pod_cidr,
                     next((c for c in state.config.service_cidrs if family_of_ip(c.split("/")[0]) == family),
                          state.config.service_cidr), tuple(entries), family, zone,
                     state.config.node_port_addresses)


def proxy_views(state: ClusterState, node: str | None, backend: Backend) -> list[ProxyView]:
    """One view per cluster IP family, primary first."""
    return [proxy_view(state, node, backend, f) for f in state.config.ip_families]


# --- packets and traces ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Packet:
    src: str
    dst: str
    dport: int
    proto: str = "TCP"
    node: str | None = None  # the node whose rules see it; None: derived (see dataplane.arrival_node)

    def __post_init__(self) -> None:
        versions = []
        for label, value in (("src", self.src), ("dst", self.dst)):
            try:
                addr = ipaddress.ip_address(value)
            except ValueError:
                raise DataplaneError(f"--{label}: {value!r} is not an IP address") from None
            # Canonical text: map keys and rule addresses are written that way.
            object.__setattr__(self, label, str(addr))
            versions.append(addr.version)
        if versions[0] != versions[1]:
            raise DataplaneError(f"--src {self.src} and --dst {self.dst} are of different IP families; a packet "
                                 "is IPv4 or IPv6")
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
    pinned: bool = False  # sessionAffinity: the data plane sent a returning client to its remembered backend
    affinity_table: str = ""  # where a data plane without per-endpoint names remembers the client (Cilium's map)
    affinity: str = ""  # the client's affinity state for this connection, in a few words (pinned, expired)

    @property
    def family(self) -> str:
        return "IPv6" if ":" in self.packet.dst else "IPv4"

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
            "pinned": self.pinned,
            "affinity": self.affinity,
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
    view: ProxyView | None = None  # the primary family's
    structured: Any = None  # JSON-able dict, or a callable producing it on demand (it is big)
    # Per IP family: the view and the text of that family's proxier (a dual-stack node has two).
    views: dict[str, ProxyView] = field(default_factory=dict)
    parts: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"backend": self.backend, "node": self.node, "nodeIP": self.node_ip,
                               "counts": dict(self.counts)}
        if self.structured is not None:
            out[self.backend] = self.structured() if callable(self.structured) else self.structured
        out["text"] = self.text
        return out


def topology_comments(view: ProxyView) -> list[str]:
    """``# topology:`` lines for the Service ports whose endpoints hints narrowed (or would have): what this
    node keeps and why. The kernel tools ignore them; a reader of the render sees the decision."""
    out = []
    for entry in view.ports:
        if entry.categorized.why:
            kept = ", ".join(e.string for e in entry.categorized.cluster) or "none"
            out.append(f"# topology: {entry.info.name_string}/{entry.info.protocol}: {entry.categorized.why}; "
                       f"Cluster endpoints kept on {view.node}: {kept}")
    return out


def render_per_family(backend: Backend, state: ClusterState, node: str | None,
                      render_view: Callable[[ProxyView], tuple[str, dict[str, int]]]) -> Ruleset:
    """One text per IP family (the primary family's first), counts summed: kube-proxy runs a proxier per
    family, each programming its own tables (iptables and ip6tables; nft's ``ip`` and ``ip6`` tables)."""
    with bulk():
        views = proxy_views(state, node, backend)
        rendered = [render_view(view) for view in views]
    parts = {view.family: text for view, (text, _) in zip(views, rendered, strict=True)}
    counts: dict[str, int] = {}
    for _, part_counts in rendered:
        for key, value in part_counts.items():
            counts[key] = counts.get(key, 0) + value
    return Ruleset(backend.name, views[0].node, views[0].node_ip, "\n".join(parts.values()), counts,
                   view=views[0], views={v.family: v for v in views}, parts=parts)


def tracer_for(ruleset: Ruleset, packet: Packet, build: Callable[[ProxyView, str], Any]) -> Any | None:
    """The tracer of the packet's family, built once from that family's text (None: no such family here)."""
    family = "IPv6" if ":" in packet.dst else "IPv4"
    tracers = ruleset.data if isinstance(ruleset.data, dict) else {}
    ruleset.data = tracers
    if family not in tracers:
        view = ruleset.views.get(family) if ruleset.views else (ruleset.view if family == "IPv4" else None)
        if view is None:
            return None
        tracers[family] = build(view, ruleset.parts.get(family, ruleset.text))
    return tracers[family]


def entry_for(ruleset: Ruleset, result: TraceResult) -> PortEntry | None:
    """The Service port a traced packet hit, in the view of its family."""
    view = ruleset.views.get(result.family) if ruleset.views else ruleset.view
    proto = result.packet.proto.upper()
    for entry in view.ports if view is not None else ():
        if entry.info.name_string == result.service and entry.info.protocol == proto:
            return entry
    return None


def no_family(backend: str, node: str, packet: Packet) -> TraceResult:
    result = TraceResult(backend, node, packet)
    family = "IPv6" if ":" in packet.dst else "IPv4"
    result.notes.append(f"the cluster has no {family} Service addresses: no rule of this family translates the "
                        "packet")
    return result


# A render allocates ~10^6 small, acyclic objects (10,000 Services x 10 endpoints): the cyclic collector's
# scans cost a third of its time and free nothing, so it pauses as the loader's does for a large manifest.
bulk = many_objects


_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


# Two base32 characters per 10 bits: half the lookups of one character per 5 bits.
_B32_PAIRS = tuple(a + b for a in _B32 for b in _B32)


def b32_prefix(text: str, chars: int) -> str:
    """``base32.StdEncoding.EncodeToString(sha256(text))[:chars]``, without encoding the whole digest.

    Every name kube-proxy derives is such a prefix; base64.b32encode is pure Python and
    dominated render time at 10,000 Services. ``chars`` is even (kube-proxy takes 16 or 8).
    """
    digest = hashlib.sha256(text.encode()).digest()
    pairs = _B32_PAIRS
    if chars in (8, 16):
        # 5 bytes are 8 characters exactly; unrolled, this is most of a render's naming work.
        a = int.from_bytes(digest[:5], "big")
        head = pairs[a >> 30] + pairs[(a >> 20) & 1023] + pairs[(a >> 10) & 1023] + pairs[a & 1023]
        if chars == 8:
            return head
        b = int.from_bytes(digest[5:10], "big")
        return head + pairs[b >> 30] + pairs[(b >> 20) & 1023] + pairs[(b >> 10) & 1023] + pairs[b & 1023]
    nbytes = (chars * 5 + 7) // 8
    n = int.from_bytes(digest[:nbytes], "big")
    shift = nbytes * 8
    return "".join(_B32[(n >> (shift - 5 * (i + 1))) & 31] for i in range(chars))


def in_cidr(ip: str, cidr: str) -> bool:
    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False
