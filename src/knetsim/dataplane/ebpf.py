"""Cilium's kube-proxy replacement: the BPF load-balancer maps, printed like
``cilium bpf lb list``, and a tracer that does the datapath's map lookups.

Model (``bpf/lib/lb.h``, ``bpf/lib/common.h``, ``cilium-dbg/cmd/bpf_lb_list.go``):

* ``cilium_lb4_services_v2``: key (address, dport, proto, scope, backend_slot). Slot 0 is
  the service's master entry (backend count, rev-NAT id, flags); slots 1..count hold
  backend ids. Every frontend is its own entry: the ClusterIP, each externalIP, each
  LoadBalancer IP, and for NodePorts ``0.0.0.0:<port>`` (the surrogate that matches any
  local address) plus the node's own IP.
* ``cilium_lb4_backends_v3``: backend id -> address, port, state.
* ``cilium_lb4_reverse_nat``: rev-NAT id -> frontend, to restore the VIP on replies.
* externalTrafficPolicy=Local gives a frontend two scopes (``TWO_SCOPES``): the external
  scope holds only this node's backends, the internal one (``/i``) every backend, used
  for traffic from inside the cluster. internalTrafficPolicy=Local keeps a ClusterIP to
  this node's backends.

A lookup is a handful of hash-map reads whatever the number of Services. There are no
KUBE- chains: with kube-proxy replacement kube-proxy is not installed at all.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cluster.state import ClusterState
from .model import (
    AffinityMemory,
    EndpointInfo,
    Packet,
    ProxyView,
    Ruleset,
    ServicePortInfo,
    Step,
    Target,
    TraceResult,
    bulk,
    join_host_port,
    proxy_views,
    split_host_port,
    topology_comments,
)

EXT, INT = 0, 1
SERVICES_MAP = "cilium_lb4_services_v2"
BACKENDS_MAP = "cilium_lb4_backends_v3"
REVNAT_MAP = "cilium_lb4_reverse_nat"
SOURCE_RANGE_MAP = "cilium_lb4_source_range"


def map_name(v4_name: str, ipv6: bool) -> str:
    """IPv6 frontends and backends live in the lb6 twins of each map."""
    return v4_name.replace("cilium_lb4_", "cilium_lb6_") if ipv6 else v4_name


@dataclass(frozen=True, slots=True)
class Master:
    """Slot 0 of a frontend: what ``lb4_lookup_service`` returns."""

    count: int
    rev_nat: int
    flags: tuple[str, ...]
    service: str  # "ns/name:port"
    kind: str  # ClusterIP | ExternalIP | LoadBalancer | NodePort
    external_local: bool = False  # eTP=Local on an external frontend
    two_scopes: bool = False
    affinity_timeout: int | None = None
    source_ranges: tuple[str, ...] = ()
    has_endpoints: bool = True  # the service has backends somewhere (empty local scope: drop, not reject)


@dataclass
class LBMaps:
    """Both families' maps: lb4 and lb6 keys differ by address, backend and rev-NAT ids share one space."""

    services: dict[tuple[str, int, str, int, int], Any] = field(default_factory=dict)
    backends: dict[int, tuple[str, int, str, str]] = field(default_factory=dict)
    revnat: dict[int, tuple[str, int]] = field(default_factory=dict)
    node_ip: str = ""
    pod_cidr: str = ""
    node_ips: tuple[str, ...] = ()
    # Per family: this node's address and the pod CIDR (in-cluster sources), for the other family's packets.
    local: dict[str, tuple[str, str]] = field(default_factory=dict)


class EbpfBackend:
    name = "ebpf"

    def port_names(self, info: ServicePortInfo, endpoints: Sequence[EndpointInfo]) -> None:
        # Cilium keys everything by address and numeric ids; there is no derived name.
        return None

    def render(self, state: ClusterState, node: str | None = None) -> Ruleset:
        with bulk():
            views = proxy_views(state, node, self)
            maps = build_maps(views)
        view = views[0]
        text = render_text(maps, view, views)
        counts = {
            "frontends": len(maps.revnat),
            "serviceEntries": len(maps.services),
            "backends": len(maps.backends),
            "servicePorts": sum(len(v.ports) for v in views),
        }
        return Ruleset(self.name, view.node, view.node_ip, text, counts, data=maps, view=view,
                       structured=lambda: structured(maps), views={v.family: v for v in views},
                       parts={view.family: text})

    def trace(self, ruleset: Ruleset, packet: Packet, memory: AffinityMemory | None = None) -> TraceResult:
        return _trace(ruleset.data, ruleset.node, packet, memory)

    def remember(self, ruleset: Ruleset, result: TraceResult, target: Target, memory: AffinityMemory) -> str:
        """lb4_update_affinity_by_addr: {client, rev-NAT id} -> backend, with the time it was last used."""
        if not result.affinity_table:
            return ""
        memory.remember(result.affinity_table, result.packet.src, target.address)
        affinity, rev_nat = result.affinity_table.split(":")
        return f"{affinity} {{client {result.packet.src}, revnat {rev_nat}}}"


def build_maps(views: Sequence[ProxyView] | ProxyView) -> LBMaps:
    if isinstance(views, ProxyView):
        views = [views]
    first = views[0]
    maps = LBMaps(node_ip=first.node_ip, pod_cidr=first.pod_cidr, node_ips=tuple(
        ip for v in views for ip in v.node_ips.values() if ip),
        local={v.family: (v.node_ip, v.pod_cidr) for v in views})
    backend_ids: dict[tuple[str, int, str], int] = {}
    by_address: dict[tuple[str, int], EndpointInfo] = {}  # the last seen wins, for the backend's state
    # Backend ids are allocated once per (address, port, proto); sorted so they are stable.
    for view in views:
        for entry in view.ports:
            proto = entry.info.protocol
            for ep in entry.endpoints:
                ip, port = ep.ip, ep.port
                backend_ids[(ip, port, proto)] = 0
                by_address[(ip, port)] = ep
    pton, v4, v6 = socket.inet_pton, socket.AF_INET, socket.AF_INET6
    # IPv4 backends first, each family in address order (200,000 keys at 10,000 dual-stack Services).
    order = sorted(backend_ids, key=lambda k: (True, pton(v6, k[0]), k[1], k[2]) if ":" in k[0] else
                   (False, pton(v4, k[0]), k[1], k[2]))
    for i, key in enumerate(order, start=1):
        backend_ids[key] = i
    for ip, port, proto in order:
        ep = by_address[(ip, port)]
        state = "active" if ep.ready else ("terminating" if ep.terminating else "quarantined")
        maps.backends[backend_ids[(ip, port, proto)]] = (ip, port, proto, state)

    rev = 0
    for view in views:
        rev = _frontends(maps, view, backend_ids, rev)
    return maps


def _frontends(maps: LBMaps, view: ProxyView, backend_ids: dict[tuple[str, int, str], int], rev: int) -> int:
    surrogate = "::" if view.ipv6 else "0.0.0.0"
    services = maps.services
    for entry in view.ports:
        info, cat = entry.info, entry.categorized
        proto = info.protocol
        every = cat.cluster or _usable_all(entry.endpoints)
        local = cat.local
        frontends: list[tuple[str, str, list[str]]] = [(info.cluster_ip, "ClusterIP", ["ClusterIP", "non-routable"])]
        frontends += [(ip, "ExternalIP", ["ExternalIPs"]) for ip in info.external_ips]
        frontends += [(ip, "LoadBalancer", ["LoadBalancer"]) for ip in info.load_balancer_ips]
        if info.node_port:
            frontends += [(surrogate, "NodePort", ["NodePort", "surrogate", "non-routable"]),
                          (view.node_ip, "NodePort", ["NodePort"])]
        for addr, kind, flags in frontends:
            rev += 1
            port = info.port if kind != "NodePort" else info.node_port
            maps.revnat[rev] = (addr, port)
            external_local = kind != "ClusterIP" and info.external_policy_local
            internal = local if info.internal_policy_local else every
            if kind == "ClusterIP":
                scopes = {EXT: internal}
                if info.internal_policy_local:
                    flags = [*flags, "InternalLocal"]
            elif info.external_policy != info.internal_policy:
                # Cilium gives an external frontend two scopes only when the policies differ: the external one
                # follows externalTrafficPolicy, the internal one (/i, traffic from inside the cluster)
                # internalTrafficPolicy.
                scopes = {EXT: local if external_local else every, INT: internal}
                flags = [*flags, *(["Local"] if external_local else []), "two-scopes"]
            elif external_local:
                scopes = {EXT: local}
                flags = [*flags, "Local", "InternalLocal"]
            else:
                scopes = {EXT: every}
            if info.affinity_timeout is not None:
                flags = [*flags, "sessionAffinity"]
            if info.source_ranges and kind == "LoadBalancer":
                flags = [*flags, "check source-range"]
            for scope, backends in scopes.items():
                master = Master(len(backends), rev, tuple(flags), info.name_string, kind, external_local,
                                len(scopes) == 2, info.affinity_timeout,
                                info.source_ranges if kind == "LoadBalancer" else (), cat.has_endpoints)
                services[(addr, port, proto, scope, 0)] = master
                for slot, ep in enumerate(backends, start=1):
                    services[(addr, port, proto, scope, slot)] = backend_ids[(ep.ip, ep.port, proto)]
    return rev


def _usable_all(endpoints: Sequence[EndpointInfo]) -> tuple[EndpointInfo, ...]:
    ready = tuple(e for e in endpoints if e.ready)
    return ready or tuple(e for e in endpoints if e.serving and e.terminating)


def _frontend(addr: str, port: int, proto: str, scope: int) -> str:
    # Service6Key.String(): net.JoinHostPort, so IPv6 frontends are bracketed.
    return f"{join_host_port(addr, port)}/{proto}{'/i' if scope == INT else ''}"


# cilium-dbg/cmd/bpf_lb_list.go: every listing has two columns; --backends and --revnat reuse the
# second title of the service listing (an upstream quirk kept so the text reads as Cilium's).
SERVICE_ADDRESS_TITLE = "SERVICE ADDRESS"
ID_TITLE = "ID"
BACKEND_ADDRESS_TITLE = "BACKEND ADDRESS (REVNAT_ID) (SLOT)"


def table(first_title: str, second_title: str, keys: Sequence[str], values: Sequence[str]) -> list[str]:
    """cilium-dbg's ``TablePrinter``: Go's tabwriter (minwidth 5, padding 3) over ``key\tvalue\t`` lines.

    Both cells end in a tab, so both columns are padded; the trailing blanks that leaves are dropped.
    """
    w1 = max(5, len(first_title) + 3, max(map(len, keys), default=0) + 3)
    return [f"{first_title.ljust(w1)}{second_title}".rstrip(),
            *(a.ljust(w1) + b if b else a for a, b in zip(keys, values, strict=True))]


def render_text(maps: LBMaps, view: ProxyView, views: Sequence[ProxyView] = ()) -> str:
    # Two columns built side by side (a row per map entry: 220,000 at 10,000 dual-stack Services).
    keys: list[str] = []
    values: list[str] = []
    key, value_of = keys.append, values.append
    backend_text = {bid: f"[{ip}]:{bport}/{bproto}" if ":" in ip else f"{ip}:{bport}/{bproto}"
                    for bid, (ip, bport, bproto, _) in maps.backends.items()}
    frontend, rev_nat = "", 0
    for (addr, port, proto, scope, slot), value in maps.services.items():
        if slot == 0:  # a frontend's slots follow its master entry
            frontend, rev_nat = _frontend(addr, port, proto, scope), value.rev_nat
            key(f"{frontend} (0)")
            value_of(f"0.0.0.0:0 ({rev_nat}) (0) [{', '.join(value.flags)}]")
        else:
            key(f"{frontend} ({slot})")  # Service4Key.String()
            value_of(f"{backend_text[value]} ({rev_nat}) ({slot})")
    lines = [f"# knetsim: Cilium kube-proxy replacement (BPF maps), node {view.node} ({view.node_ip})",
             *(c for v in views for c in topology_comments(v)),
             "# cilium bpf lb list", *table(SERVICE_ADDRESS_TITLE, BACKEND_ADDRESS_TITLE, keys, values)]
    # Backend4ValueV3.String() is "<proto>://<address>"; the port and state are in the JSON form.
    ids = sorted(maps.backends)
    addresses = []
    for bid in ids:
        ip, _port, proto, _state = maps.backends[bid]
        addresses.append(f"{proto}://[{ip}]" if ":" in ip else f"{proto}://{ip}")
    lines += ["", "# cilium bpf lb list --backends",
              *table(ID_TITLE, BACKEND_ADDRESS_TITLE, [str(bid) for bid in ids], addresses)]
    revnat = sorted(maps.revnat.items())
    lines += ["", "# cilium bpf lb list --revnat", *table(ID_TITLE, BACKEND_ADDRESS_TITLE, [str(r) for r, _ in revnat],
                                                           [join_host_port(a, p) for _, (a, p) in revnat])]
    return "\n".join(lines) + "\n"


def structured(maps: LBMaps) -> dict[str, Any]:
    services = []
    for (addr, port, proto, scope, slot), value in maps.services.items():
        row: dict[str, Any] = {"frontend": f"{join_host_port(addr, port)}/{proto}",
                               "scope": "internal" if scope else "external", "slot": slot}
        if slot == 0:
            row.update({"revNAT": value.rev_nat, "count": value.count, "flags": list(value.flags),
                        "service": value.service})
        else:
            row["backendID"] = value
        services.append(row)
    return {
        "services": services,
        "backends": [{"id": bid, "address": f"{join_host_port(ip, port)}/{proto}", "state": state}
                     for bid, (ip, port, proto, state) in sorted(maps.backends.items())],
        "revNAT": [{"id": rid, "address": join_host_port(addr, port)} for rid, (addr, port) in
                   sorted(maps.revnat.items())],
    }


def _in(ip: str, cidr: str) -> bool:
    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False


AFFINITY_MAP = "cilium_lb4_affinity"


def _affinity_table(ipv6: bool, rev_nat: int) -> str:
    return f"{map_name(AFFINITY_MAP, ipv6)}:{rev_nat}"


def _trace(maps: LBMaps, node: str, packet: Packet, memory: AffinityMemory | None = None) -> TraceResult:
    result = TraceResult("ebpf", node, packet)
    proto = packet.proto.upper()
    ipv6 = ":" in packet.dst
    node_ip, pod_cidr = maps.local.get("IPv6" if ipv6 else "IPv4", (maps.node_ip, maps.pod_cidr))
    services_map, backends_map = map_name(SERVICES_MAP, ipv6), map_name(BACKENDS_MAP, ipv6)
    # Traffic from a pod or a node is "in-cluster": it may use a frontend's internal scope.
    in_cluster = _in(packet.src, pod_cidr) or packet.src in maps.node_ips
    local_addrs = {node_ip, "::1" if ipv6 else "127.0.0.1"}

    def lookup(addr: str, scope: int, slot: int) -> Any:
        result.cost += 1
        value = maps.services.get((addr, packet.dport, proto, scope, slot))
        if value is not None and slot == 0:
            result.steps.append(Step(f"map {services_map}",
                                     f"{_frontend(addr, packet.dport, proto, scope)} (0) -> count={value.count} "
                                     f"revnat={value.rev_nat} [{', '.join(value.flags)}]"))
        return value

    addr = packet.dst
    master = lookup(addr, EXT, 0)
    if master is None and packet.dst in local_addrs:
        addr = "::" if ipv6 else "0.0.0.0"  # NodePort surrogate: any address of this node
        master = lookup(addr, EXT, 0)
    if master is None:
        result.notes.append(f"no {services_map} entry for {join_host_port(packet.dst, packet.dport)}/{proto}: not a "
                            "Service frontend; the packet is passed to the stack unchanged")
        return result
    result.service = master.service
    scope = EXT
    if master.two_scopes and in_cluster:
        scope = INT
        master = lookup(addr, INT, 0)
    if master.source_ranges:
        result.cost += 1
        allowed = any(_in(packet.src, c) for c in master.source_ranges)
        result.steps.append(Step(f"map {map_name(SOURCE_RANGE_MAP, ipv6)}",
                                 f"{packet.src} {'in' if allowed else 'not in'} {', '.join(master.source_ranges)}"))
        if not allowed:
            result.verdict = "DROP"
            return result
    if master.count == 0:
        # Cilium answers a Service without backends with ICMP unreachable
        # (serviceNoBackendResponse=reject); an empty local scope drops.
        result.verdict = "REJECT" if not master.has_endpoints else "DROP"
        result.notes.append("no backend in this scope" if master.has_endpoints else "service has no backends")
        return result
    pinned_to = None
    if master.affinity_timeout is not None:
        result.affinity_table = _affinity_table(ipv6, master.rev_nat)
        affinity = map_name(AFFINITY_MAP, ipv6)
        seen = memory.lookup(_affinity_table(ipv6, master.rev_nat), packet.src) if memory is not None else None
        result.cost += 1
        # lb4_affinity_backend_id: an entry older than the timeout is expired (now - last_used > timeout).
        if seen is not None and seen[1] <= master.affinity_timeout:
            pinned_to = seen[0]
            result.pinned = True
            result.steps.append(Step(f"map {affinity}", f"{{client {packet.src}, revnat {master.rev_nat}}} -> "
                                                        f"{seen[0]}, last used {seen[1]:g}s ago"))
            result.affinity = (f"{affinity} maps {packet.src} to {seen[0]}, last used {seen[1]:g}s ago (timeout "
                               f"{master.affinity_timeout}s)")
            result.notes.append(f"sessionAffinity: {result.affinity}: pinned")
        elif seen is not None:
            result.affinity = (f"expired: {affinity}'s entry for {packet.src} was last used {seen[1]:g}s ago, past "
                               f"the timeout of {master.affinity_timeout}s")
            result.notes.append(f"sessionAffinity: {result.affinity}; a backend is chosen anew")
        else:
            result.notes.append(f"sessionAffinity: {affinity} has no entry for {packet.src} yet; the backend chosen "
                                f"now is remembered for {master.affinity_timeout}s")
    if pinned_to is None:
        result.notes.append("backend selection: random (slot = prandom() % count + 1); with Maglev a 5-tuple hash "
                            "picks a slot from the lookup table instead — each backend still gets ~1/count")
    for slot in range(1, master.count + 1):
        bid = maps.services[(addr, packet.dport, proto, scope, slot)]
        ip, port, bproto, _ = maps.backends[bid]
        if pinned_to is not None and join_host_port(ip, port) != pinned_to:
            continue
        result.steps.append(Step(f"map {services_map}", f"{_frontend(addr, packet.dport, proto, scope)} ({slot}) "
                                                        f"-> backend {bid}"))
        result.steps.append(Step(f"map {backends_map}", f"{bid} -> {join_host_port(ip, port)}/{bproto}"))
        result.targets.append(Target(join_host_port(ip, port), 1.0 if pinned_to else 1.0 / master.count))
    result.cost += 2  # the datapath reads one slot and one backend
    result.steps.append(Step(f"map {map_name(REVNAT_MAP, ipv6)}",
                             f"{master.rev_nat} -> {join_host_port(*maps.revnat[master.rev_nat])} (restores the VIP "
                             "on replies)"))
    result.verdict = "DNAT"
    hairpin = any(split_host_port(t.address)[0] == packet.src for t in result.targets)
    if hairpin:
        result.notes.append("hairpin: the backend is the client; Cilium SNATs it to its loopback address")
    external = master.kind != "ClusterIP"
    result.masquerade = hairpin or (external and (not master.external_local or packet.src in local_addrs))
    return result
