"""kube-proxy's nftables mode (KEP-3866): the ``ip kube-proxy`` table as ``nft list ruleset``
prints it, and a tracer that evaluates that text.

Layout and rule text follow ``pkg/proxy/nftables/proxier.go`` (``setupNFTables``,
``syncProxyRules``, ``writeServiceToEndpointRules``) and the ``baseRules`` of its tests:
one ``service-ips`` verdict map keyed by ``daddr . l4proto . dport`` and one
``service-nodeports`` map replace iptables' linear KUBE-SERVICES chain, so a lookup costs
the same whatever the number of Services. Chain names are ``<prefix>-<HASH>-<ns>/<svc>/
<proto>/<port>`` where HASH is ``base32(sha256(name))[:8]`` (``hashAndTruncate``); ``/``
separates the parts because it cannot occur in any of them.

The tracer parses the rendered text (sets, maps, chains) and interprets the rules the way
upstream's ``helpers_test.go`` tracer does: filter-prerouting-pre-dnat, then nat-prerouting
(nat-output for the node's own packets), then the filter hook after routing.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..cluster.state import ClusterState
from ..model.versions import in_force
from . import nodeports
from .model import (
    AffinityMemory,
    EndpointInfo,
    Packet,
    PortEntry,
    ProxyView,
    Ruleset,
    ServicePortInfo,
    Step,
    Target,
    TraceResult,
    b32_prefix,
    entry_for,
    no_family,
    render_per_family,
    split_host_port,
    topology_comments,
    tracer_for,
)

TABLE = "kube-proxy"
MASQ_MARK = "0x4000"
CHAIN_NAME_BASE_MAX = 240


def hash_and_truncate(name: str) -> str:
    h = b32_prefix(name, 8)
    name = f"{h}-{name}"
    if len(name) > CHAIN_NAME_BASE_MAX:
        name = name[:CHAIN_NAME_BASE_MAX - 3] + "..."
    return name


@dataclass(frozen=True, slots=True)
class NftNames:
    service: str
    local: str
    external: str
    firewall: str
    endpoint: dict[str, str]  # "ip:port" -> endpoint-... chain
    affinity: dict[str, str]  # "ip:port" -> affinity-... set


# (name, type, comment)
SETS = (
    ("cluster-ips", "{addr}", "Active ClusterIPs"),
    ("nodeport-ips", "{addr}", "IPs that accept NodePort traffic"),
)
MAPS = (
    ("firewall-ips", "{addr} . inet_proto . inet_service : verdict",
     "destinations that are subject to LoadBalancerSourceRanges"),
    ("no-endpoint-nodeports", "inet_proto . inet_service : verdict",
     "vmap to drop or reject packets to service nodeports with no endpoints"),
    ("no-endpoint-services", "{addr} . inet_proto . inet_service : verdict",
     "vmap to drop or reject packets to services with no endpoints"),
    ("service-ips", "{addr} . inet_proto . inet_service : verdict",
     "ClusterIP, ExternalIP and LoadBalancer IP traffic"),
    ("service-nodeports", "inet_proto . inet_service : verdict", "NodePort traffic"),
)
# (name, base-chain spec or comment)
CHAINS = (
    ("cluster-ips-check", None),
    ("filter-prerouting-pre-dnat", "type filter hook prerouting priority -110; policy accept;"),
    ("filter-output-pre-dnat", "type filter hook output priority -110; policy accept;"),
    ("filter-forward", "type filter hook forward priority 0; policy accept;"),
    ("filter-input", "type filter hook input priority 0; policy accept;"),
    ("filter-output", "type filter hook output priority 0; policy accept;"),
    ("firewall-check", None),
    ("mark-for-masquerade", None),
    ("masquerading", None),
    ("nat-output", "type nat hook output priority -100; policy accept;"),
    ("nat-postrouting", "type nat hook postrouting priority 100; policy accept;"),
    ("nat-prerouting", "type nat hook prerouting priority -100; policy accept;"),
    ("nodeport-endpoints-check", None),
    ("reject-chain", 'comment "helper for @no-endpoint-services / @no-endpoint-nodeports"'),
    ("services", None),
    ("service-endpoints-check", None),
)


def _ip(view: ProxyView) -> str:
    """The address-family keyword of every address match: upstream builds its rules with ``ip`` or ``ip6``."""
    return "ip6" if view.ipv6 else "ip"


def _base_rules(view: ProxyView) -> dict[str, list[str]]:
    ip = _ip(view)
    return {
        "cluster-ips-check": [
            f'{ip} daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"',
            f'{ip} daddr {{ {view.service_cidr} }} drop comment "Drop traffic to unallocated ClusterIPs"',
        ],
        "filter-prerouting-pre-dnat": ["ct state new jump firewall-check"],
        "filter-output-pre-dnat": ["ct state new jump firewall-check"],
        "filter-forward": ["ct state new jump service-endpoints-check", "ct state new jump cluster-ips-check"],
        "filter-input": ["ct state new jump nodeport-endpoints-check", "ct state new jump service-endpoints-check"],
        "filter-output": ["ct state new jump service-endpoints-check", "ct state new jump cluster-ips-check"],
        "firewall-check": [f"{ip} daddr . meta l4proto . th dport vmap @firewall-ips"],
        "mark-for-masquerade": [f"mark set mark or {MASQ_MARK}"],
        "masquerading": [f"mark and {MASQ_MARK} == 0 return", f"mark set mark xor {MASQ_MARK}",
                         "masquerade fully-random"],
        "nat-output": ["jump services"],
        "nat-postrouting": ["jump masquerading"],
        "nat-prerouting": ["jump services"],
        "nodeport-endpoints-check": [f"{ip} daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports"],
        "reject-chain": ["reject"],
        "services": [f"{ip} daddr . meta l4proto . th dport vmap @service-ips",
                     f"{ip} daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports"],
        "service-endpoints-check": [f"{ip} daddr . meta l4proto . th dport vmap @no-endpoint-services"],
    }


class NftablesBackend:
    name = "nftables"

    def port_names(self, info: ServicePortInfo, endpoints: Sequence[EndpointInfo]) -> NftNames:
        prefix = f"{info.namespace}/{info.name}/{info.proto}/{info.port_name}"
        base = hash_and_truncate(prefix)
        endpoint: dict[str, str] = {}
        affinity: dict[str, str] = {}
        for e in endpoints:
            # IPv6 colons would be ambiguous next to the port, so upstream swaps them for dots.
            name = f"{prefix}__{e.ip.replace(':', '.') if ':' in e.ip else e.ip}/{e.port}"
            # hash_and_truncate, inlined: this runs once per endpoint of every Service.
            name = f"{b32_prefix(name, 8)}-{name}"
            if len(name) > CHAIN_NAME_BASE_MAX:
                name = name[:CHAIN_NAME_BASE_MAX - 3] + "..."
            endpoint[e.string] = "endpoint-" + name
            if info.affinity_timeout is not None:  # the affinity sets exist only with sessionAffinity
                affinity[e.string] = "affinity-" + name
        return NftNames("service-" + base, "local-" + base, "external-" + base, "firewall-" + base,
                        endpoint, affinity)

    def render(self, state: ClusterState, node: str | None = None) -> Ruleset:
        """``table ip kube-proxy``, and on a dual-stack node ``table ip6 kube-proxy`` beside it."""
        return render_per_family(self, state, node, render_view)

    def remember(self, ruleset: Ruleset, result: TraceResult, target: Target, memory: AffinityMemory) -> str:
        """The endpoint chain's ``update @affinity-… { ip saddr }`` adds the client, restarting its timeout."""
        entry = entry_for(ruleset, result)
        if entry is None or entry.info.affinity_timeout is None or target.address not in entry.names.affinity:
            return ""
        name = entry.names.affinity[target.address]
        memory.remember(name, result.packet.src, target.address)
        return f"set @{name}"

    def trace(self, ruleset: Ruleset, packet: Packet, memory: AffinityMemory | None = None) -> TraceResult:
        def build(view: ProxyView, text: str) -> _Tracer:
            # Parsed once per ruleset: the tracer reads the text, as the kernel reads what nft loaded.
            services: dict[str, str] = {}
            for e in view.ports:
                for chain in (e.names.service, e.names.local, e.names.external, e.names.firewall):
                    services[chain] = e.info.name_string
            loopback = "::1" if view.ipv6 else "127.0.0.1"
            node_ports = {(e.info.protocol.lower(), e.info.node_port): e.info.name_string
                          for e in view.ports if e.info.node_port}
            addresses = nodeports.node_port_addresses(view.node_port_addresses, "nftables", view.family,
                                                      view.node_ip)
            return _Tracer(parse_ruleset(text), {view.node_ip, loopback}, ruleset.node, services, node_ports,
                           addresses, view.node_ip)

        tracer = tracer_for(ruleset, packet, build)
        return tracer.run(packet, memory) if tracer is not None else no_family(self.name, ruleset.node, packet)


@dataclass
class _Out:
    sets: dict[str, list[str]] = field(default_factory=dict)
    maps: dict[str, list[str]] = field(default_factory=dict)
    affinity: dict[str, int] = field(default_factory=dict)  # set -> timeout
    chains: dict[str, list[str]] = field(default_factory=dict)
    cluster_ips: set[str] = field(default_factory=set)


def render_view(view: ProxyView) -> tuple[str, dict[str, int]]:
    out = _Out(sets={n: [] for n, _, _ in SETS}, maps={n: [] for n, _, _ in MAPS})
    out.chains.update(_base_rules(view))
    # The NodePort addresses (`primary` unless nodePortAddresses says otherwise), never a loopback one: nftables
    # mode has no route_localnet ("--nodeport-addresses includes localhost but localhost NodePorts are not
    # supported"). Every local address is a `fib daddr type local` match instead of the set (which is deleted).
    node_ports = nodeports.node_port_addresses(view.node_port_addresses, "nftables", view.family, view.node_ip)
    if node_ports.match_all:
        ip, loopback = _ip(view), "::1" if view.ipv6 else "127.0.0.0/8"
        local = f"fib daddr type local {ip} daddr != {loopback} meta l4proto . th dport vmap"
        out.chains["nodeport-endpoints-check"] = [f"{local} @no-endpoint-nodeports"]
        out.chains["services"] = [out.chains["services"][0], f"{local} @service-nodeports"]
        del out.sets["nodeport-ips"]
    else:
        out.sets["nodeport-ips"].extend(ip for ip in node_ports.node_ips(view.node_ip)
                                        if ip != nodeports.LOOPBACK[view.family])
    for entry in view.ports:
        _write_service(out, entry, view)
    spec = dict(CHAINS)
    addr = "ipv6_addr" if view.ipv6 else "ipv4_addr"
    lines = [f"# knetsim: kube-proxy nftables mode, node {view.node} ({view.node_ip})", *topology_comments(view),
             f"table {_ip(view)} {TABLE} {{", '\tcomment "rules for kube-proxy"']
    for name, typ, comment in SETS:
        if name in out.sets:
            lines += _set_block("set", name, typ.format(addr=addr), comment, out.sets[name])
    for name, timeout in out.affinity.items():
        lines += [f"\tset {name} {{", f"\t\ttype {addr}", "\t\tflags dynamic,timeout", f"\t\ttimeout {timeout}s",
                  "\t}"]
    for name, typ, comment in MAPS:
        lines += _set_block("map", name, typ.format(addr=addr), comment, out.maps[name])
    for name, rules in out.chains.items():
        # One joined block per chain (the rules indented by the join): 660,000 rules at 10,000 dual-stack
        # Services.
        block = [f"\tchain {name} {{", f"\t\t{spec[name]}"] if spec.get(name) else [f"\tchain {name} {{"]
        if rules:
            block.append("\t\t" + "\n\t\t".join(rules))
        block.append("\t}")
        lines.append("\n".join(block))
    lines.append("}")
    counts = {
        "chains": len(out.chains),
        "rules": sum(len(r) for r in out.chains.values()),
        "serviceIPs": len(out.maps["service-ips"]),
        "serviceNodePorts": len(out.maps["service-nodeports"]),
        "noEndpointServices": len(out.maps["no-endpoint-services"]),
        "servicePorts": len(view.ports),
        "endpoints": sum(len(e.endpoints) for e in view.ports),
    }
    return "\n".join(lines) + "\n", counts


def _set_block(kind: str, name: str, typ: str, comment: str, elements: list[str]) -> list[str]:
    lines = [f"\t{kind} {name} {{", f"\t\ttype {typ}", f'\t\tcomment "{comment}"']
    if elements:
        lines.append("\t\telements = {")
        lines.append("\t\t\t" + ",\n\t\t\t".join(elements) + ",")
        lines.append("\t\t}")
    lines.append("\t}")
    return lines


def _write_service(out: _Out, entry: PortEntry, view: ProxyView) -> None:
    info, cat, names = entry.info, entry.categorized, entry.names
    proto, port, name = info.proto, info.port, info.name_string
    has = cat.has_endpoints
    uses_cluster = bool(cat.cluster) and info.uses_cluster_endpoints
    uses_local = bool(cat.local) and info.uses_local_endpoints
    internal_chain, has_internal = names.service, has
    if info.internal_policy_local:
        internal_chain, has_internal = names.local, has and bool(cat.local)
    external_policy_chain, has_external = names.service, has
    if info.external_policy_local:
        external_policy_chain, has_external = names.local, has and bool(cat.local)
    uses_ext = has and info.externally_accessible
    if not has:
        int_verdict = ext_verdict = "goto reject-chain"
    else:
        int_verdict = "" if has_internal else "drop"
        ext_verdict = "" if has_external else "drop"
    note = f'comment "{name}"'

    chains: dict[str, list[str]] = {}
    if uses_cluster:
        chains[names.service] = []
    if uses_local:
        chains[names.local] = []
    if uses_ext:
        chains[names.external] = []
    uses_fw = bool(info.load_balancer_ips) and bool(info.source_ranges)
    if uses_fw:
        chains[names.firewall] = []
    for ep in cat.reachable:
        chains[names.endpoint[ep.string]] = []

    if info.cluster_ip not in out.cluster_ips:  # ensureElem: one element per ClusterIP
        out.cluster_ips.add(info.cluster_ip)
        out.sets["cluster-ips"].append(info.cluster_ip)
    if has_internal:
        out.maps["service-ips"].append(f"{info.cluster_ip} . {proto} . {port} : goto {internal_chain}")
    else:
        out.maps["no-endpoint-services"].append(f"{info.cluster_ip} . {proto} . {port} {note} : {int_verdict}")
    for ip in info.external_ips:
        if has:
            out.maps["service-ips"].append(f"{ip} . {proto} . {port} : goto {names.external}")
        if not has_external:
            out.maps["no-endpoint-services"].append(f"{ip} . {proto} . {port} {note} : {ext_verdict}")
    for ip in info.load_balancer_ips:
        if has:
            out.maps["service-ips"].append(f"{ip} . {proto} . {port} : goto {names.external}")
        if uses_fw:
            out.maps["firewall-ips"].append(f"{ip} . {proto} . {port} : goto {names.firewall}")
    if not has_external:
        for ip in info.load_balancer_ips:
            out.maps["no-endpoint-services"].append(f"{ip} . {proto} . {port} {note} : {ext_verdict}")
    if info.node_port:
        if has:
            out.maps["service-nodeports"].append(f"{proto} . {info.node_port} : goto {names.external}")
        if not has_external:
            out.maps["no-endpoint-nodeports"].append(f"{proto} . {info.node_port} {note} : {ext_verdict}")

    ip = _ip(view)
    if has_internal:
        chains[internal_chain].append(
            f"{ip} daddr {info.cluster_ip} {ip} saddr != {view.pod_cidr} jump mark-for-masquerade")
    if uses_ext:
        ext = chains[names.external]
        if not info.external_policy_local:
            ext.append("jump mark-for-masquerade")
        else:
            ext.append(f'{ip} saddr {view.pod_cidr} goto {names.service} comment "short-circuit pod traffic"')
            ext.append('fib saddr type local jump mark-for-masquerade comment "masquerade local traffic"')
            ext.append(f'fib saddr type local goto {names.service} comment "short-circuit local traffic"')
        if has_external:
            ext.append(f"goto {external_policy_chain}")
    if uses_fw:
        sources = list(info.source_ranges)
        if any(_contains(c, view.node_ip) for c in info.source_ranges):
            sources += list(info.load_balancer_ips)
        chains[names.firewall].append(f"{ip} saddr != {{ {', '.join(sources)} }} drop")
    if info.affinity_timeout is not None:
        for ep in cat.reachable:
            out.affinity[names.affinity[ep.string]] = info.affinity_timeout
    if uses_cluster:
        _service_to_endpoints(chains[names.service], info, names, cat.cluster, ip)
    if uses_local:
        _service_to_endpoints(chains[names.local], info, names, cat.local, ip)
    for ep in cat.reachable:
        rules = chains[names.endpoint[ep.string]]
        rules.append(f"{ip} saddr {ep.ip} jump mark-for-masquerade")
        if info.affinity_timeout is not None:
            rules.append(f"update @{names.affinity[ep.string]} {{ {ip} saddr }}")
        rules.append(f"meta l4proto {proto} dnat to {ep.string}")
    out.chains.update(chains)


def _service_to_endpoints(rules: list[str], info: ServicePortInfo, names: NftNames,
                          endpoints: Sequence[EndpointInfo], ip: str = "ip") -> None:
    if info.affinity_timeout is not None:
        for ep in endpoints:
            rules.append(f"{ip} saddr @{names.affinity[ep.string]} goto {names.endpoint[ep.string]}")
    elements = " , ".join(f"{i} : goto {names.endpoint[ep.string]}" for i, ep in enumerate(endpoints))
    rules.append(f"numgen random mod {len(endpoints)} vmap {{ {elements} }}")


def _contains(cidr: str, ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False


# --- parsing the rendered text --------------------------------------------------------

_COMMENT = re.compile(r'\s*comment "[^"]*"')


@dataclass
class NftTable:
    sets: dict[str, set[str]] = field(default_factory=dict)
    timeouts: dict[str, int] = field(default_factory=dict)  # dynamic set -> element timeout in seconds
    maps: dict[str, dict[str, str]] = field(default_factory=dict)  # key "a . b . c" -> verdict
    chains: dict[str, list[tuple[str, list[tuple[Any, ...]]]]] = field(default_factory=dict)


def parse_ruleset(text: str) -> NftTable:
    table = NftTable()
    kind = name = ""
    in_elements = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if in_elements:
            if line == "}":
                in_elements = False
                continue
            element = _COMMENT.sub("", line.rstrip(","))
            if kind == "set":
                table.sets[name].add(element)
            else:
                key, _, verdict = element.partition(" : ")
                table.maps[name][key.strip()] = verdict.strip()
            continue
        if line.startswith("table "):
            continue
        m = re.match(r"(set|map|chain) (\S+) \{$", line)
        if m:
            kind, name = m.group(1), m.group(2)
            if kind == "set":
                table.sets[name] = set()
            elif kind == "map":
                table.maps[name] = {}
            else:
                table.chains[name] = []
            continue
        if line == "}":
            kind = ""
            continue
        if kind == "set" and line.startswith("timeout ") and line.endswith("s"):
            table.timeouts[name] = int(line[len("timeout "):-1])
            continue
        if kind == "chain":
            if (line.startswith("type ") and " hook " in line) or line.startswith("comment "):
                continue
            table.chains[name].append((line, _compile(line)))
        elif kind in ("set", "map") and line.startswith("elements = {"):
            in_elements = True
    return table


_OPS: list[tuple[re.Pattern[str], str]] = [(re.compile(p), k) for p, k in (
    (r"ct state new", "ctnew"),
    (r"ip6? daddr \. meta l4proto \. th dport vmap @(\S+)", "vmap3"),
    (r"meta l4proto \. th dport vmap @(\S+)", "vmap2"),
    (r"ip6? (daddr|saddr) (!= )?@(\S+)", "inset"),
    (r"ip6? (daddr|saddr) (!= )?\{ ([^}]*) \}", "inlist"),
    (r"ip6? (daddr|saddr) (!= )?([0-9a-fA-F.:/]+)", "addr"),
    (r"fib (saddr|daddr) type local", "fiblocal"),
    (r"(tcp|udp|sctp) dport (\d+)", "dport"),
    (r"numgen random mod (\d+) vmap \{ (.*) \}", "numgen"),
    (r"meta l4proto (\S+) dnat to (\S+)", "dnat"),
    (r"update @(\S+) \{ ip6? saddr \}", "update"),
    (r"mark set mark or (\S+)", "markor"),
    (r"mark and (\S+) == 0", "markzero"),
    (r"mark set mark xor (\S+)", "noop"),
    (r"masquerade fully-random", "noop"),
    (r"(jump|goto) (\S+)", "verdict"),
    (r"(drop|reject|accept|return)", "final"),
)]


def _compile(rule: str) -> list[tuple[Any, ...]]:
    rest = _COMMENT.sub("", rule).strip()
    ops: list[tuple[Any, ...]] = []
    while rest:
        for pattern, kind in _OPS:
            m = pattern.match(rest)
            if m:
                ops.append((kind, *m.groups()))
                rest = rest[m.end():].strip()
                break
        else:
            raise ValueError(f"knetsim's nft tracer does not understand {rest!r} in rule {rule!r}")
    return ops


# --- the tracer -----------------------------------------------------------------------

TERMINAL, RETURN, NEXT = "terminal", "return", "next"


@dataclass
class _Walk:
    src: str
    dst: str
    proto: str
    dport: int
    masq: bool = False
    targets: list[Target] = field(default_factory=list)
    verdict: str | None = None
    steps: list[Step] = field(default_factory=list)
    cost: int = 0
    service: str | None = None
    notes: list[str] = field(default_factory=list)
    memory: AffinityMemory | None = None
    pinned: bool = False
    state: str = ""


class _Tracer:
    def __init__(self, table: NftTable, local: set[str], node: str, services: dict[str, str],
                 node_ports: dict[tuple[str, int], str] | None = None,
                 addresses: nodeports.NodePortAddresses | None = None, node_ip: str = "") -> None:
        self.t = table
        self.local = local
        self.node = node
        self.services = services
        self.node_ports = node_ports or {}  # (protocol, NodePort) -> the Service port's name
        self.addresses = addresses  # what nodePortAddresses makes of this node's addresses
        self.node_ip = node_ip

    def run(self, packet: Packet, memory: AffinityMemory | None = None) -> TraceResult:
        proxied = self._userspace_proxy(packet, memory)
        return proxied if proxied is not None else self._run(packet, memory)

    def _userspace_proxy(self, packet: Packet, memory: AffinityMemory | None) -> TraceResult | None:
        """``localhost:<NodePort>`` where KEP-6032's userspace proxy listens (nodePortAddresses names loopback, the
        version has KubeProxyNFTablesLocalhostNodePorts on; TCP only): kube-proxy accepts the connection on the
        loopback address and opens its own to the same NodePort on the node's address, which the rules serve."""
        service = self.node_ports.get((packet.proto.lower(), packet.dport))
        if service is None or self.addresses is None or not self.node_ip or packet.proto.upper() != "TCP":
            return None
        try:
            loopback = ipaddress.ip_address(packet.dst).is_loopback
        except ValueError:
            return None
        if not loopback or not nodeports.userspace_localhost(self.addresses, in_force()):
            return None
        onward = replace(packet, src=self.node_ip, dst=self.node_ip)
        result = self._run(onward, memory)
        result.packet = packet
        result.notes.insert(0, f"{nodeports.join(packet.dst, packet.dport)} is NodePort {service} on localhost: "
                               f"kube-proxy's userspace proxy (KEP-6032, {nodeports.LOCALHOST_GATE}) accepts it "
                               f"({self.addresses.describe()} names loopback) and connects on to "
                               f"{nodeports.join(self.node_ip, packet.dport)}")
        return result

    def _run(self, packet: Packet, memory: AffinityMemory | None = None) -> TraceResult:
        w = _Walk(packet.src, packet.dst, packet.proto.lower(), packet.dport, memory=memory)
        from_host = packet.src in self.local
        result = TraceResult("nftables", self.node, packet)
        self._chain("filter-output-pre-dnat" if from_host else "filter-prerouting-pre-dnat", w, 1.0)
        if w.verdict is None:
            self._chain("nat-output" if from_host else "nat-prerouting", w, 1.0)
            if w.targets:
                w.dst = split_host_port(w.targets[0].address)[0]
            hook = "filter-output" if from_host else ("filter-input" if w.dst in self.local else "filter-forward")
            self._chain(hook, w, 1.0)
        result.steps, result.cost, result.service, result.notes = w.steps, w.cost, w.service, w.notes
        result.pinned, result.affinity = w.pinned, w.state
        if w.verdict in ("DROP", "REJECT"):
            result.verdict = w.verdict
        elif w.targets:
            result.verdict, result.targets, result.masquerade = "DNAT", w.targets, w.masq
        elif w.verdict == "ACCEPT":
            result.verdict = "ACCEPT"
        else:
            localhost = self._localhost_node_port(packet)
            result.notes.append(localhost or "no kube-proxy map entry matched: not a Service address/port on this "
                                             "node; the packet is routed unchanged")
        return result

    def _localhost_node_port(self, packet: Packet) -> str:
        """Why a NodePort on one of this node's own addresses found nothing, as nodePortAddresses and the version
        in force say (dataplane/nodeports.py; model/versions.py, KubeProxyNFTablesLocalhostNodePorts)."""
        service = self.node_ports.get((packet.proto.lower(), packet.dport))
        if service is None or packet.dst not in self.local:
            return ""
        addresses = self.addresses or nodeports.node_port_addresses((), "nftables", "IPv6" if ":" in packet.dst
                                                                    else "IPv4", "")
        return nodeports.refusal(addresses, packet.dst, packet.dport, packet.proto, service, in_force())

    def _chain(self, name: str, w: _Walk, prob: float) -> str:
        for text, ops in self.t.chains.get(name, ()):
            w.cost += 1
            status = self._rule(name, text, ops, w, prob)
            if status != NEXT:
                return status
        return RETURN

    def _addr(self, w: _Walk, which: str) -> str:
        return w.dst if which == "daddr" else w.src

    def _rule(self, chain: str, text: str, ops: list[tuple[Any, ...]], w: _Walk, prob: float) -> str:
        for op in ops:
            kind = op[0]
            if kind == "ctnew" or kind == "noop" or kind == "update":
                continue
            if kind == "inset":
                found = self._addr(w, op[1]) in self.t.sets.get(op[3], ())
                if op[3].startswith("affinity-"):
                    found = self._affinity(chain, op[3], w)
                if found == bool(op[2]):
                    return NEXT
            elif kind == "inlist":
                found = any(_contains(c.strip(), self._addr(w, op[1])) for c in op[3].split(","))
                if found == bool(op[2]):
                    return NEXT
            elif kind == "addr":
                if _contains(op[3], self._addr(w, op[1])) == bool(op[2]):
                    return NEXT
            elif kind == "fiblocal":
                if self._addr(w, op[1]) not in self.local:
                    return NEXT
            elif kind == "dport":
                if op[1] != w.proto or int(op[2]) != w.dport:
                    return NEXT
            elif kind == "markzero":
                if w.masq:
                    return NEXT
            elif kind == "markor":
                w.steps.append(Step(f"chain {chain}", text))
                w.masq = True
            elif kind in ("vmap3", "vmap2"):
                key = f"{w.dst} . {w.proto} . {w.dport}" if kind == "vmap3" else f"{w.proto} . {w.dport}"
                w.cost += 1
                verdict = self.t.maps.get(op[1], {}).get(key)
                if verdict is None:
                    return NEXT
                w.steps.append(Step(f"chain {chain}", text))
                w.steps.append(Step(f"map {op[1]}", f"{key} : {verdict}"))
                return self._verdict(verdict.split(), w, prob)
            elif kind == "numgen":
                w.steps.append(Step(f"chain {chain}", text))
                n = int(op[1])
                for element in op[2].split(" , "):
                    _, _, target = element.partition(" : ")
                    self._verdict(target.split(), w, prob / n)
                return TERMINAL
            elif kind == "dnat":
                w.steps.append(Step(f"chain {chain}", text))
                w.targets.append(Target(op[2], prob))
                return TERMINAL
            elif kind == "verdict":
                w.steps.append(Step(f"chain {chain}", text))
                return self._verdict([op[1], op[2]], w, prob)
            elif kind == "final":
                w.steps.append(Step(f"chain {chain}", text))
                return self._verdict([op[1]], w, prob)
        return NEXT

    def _affinity(self, chain: str, name: str, w: _Walk) -> bool:
        """Is the client in the dynamic set? An element lives ``timeout`` seconds from its last update."""
        seen = w.memory.lookup(name, w.src) if w.memory is not None else None
        timeout = self.t.timeouts.get(name)
        if seen is not None and (timeout is None or seen[1] < timeout):
            w.pinned = True
            w.state = f"@{name} holds {w.src}, updated {seen[1]:g}s ago (timeout {timeout}s)"
            w.notes.append(f"{chain}: {w.state}: pinned")
            return True
        if seen is not None:
            w.state = (f"expired: {w.src}'s element of @{name} timed out ({seen[1]:g}s since its last update, "
                       f"timeout {timeout}s)")
            w.notes.append(f"{chain}: {w.state}")
        elif w.memory is None or not w.memory.entries:
            w.notes.append(f"{chain}: @{name} is empty for {w.src}; once this client connects, "
                           "`update @set { ip saddr }` pins it to that endpoint (sessionAffinity ClientIP)")
        return False

    def _verdict(self, verdict: list[str], w: _Walk, prob: float) -> str:
        word = verdict[0]
        if word in ("drop", "reject", "accept"):
            w.verdict = word.upper()
            return TERMINAL
        if word == "return":
            return RETURN
        target = verdict[1]
        if w.service is None and target in self.services:
            w.service = self.services[target]
        status = self._chain(target, w, prob)
        if status == TERMINAL:
            return TERMINAL
        # After a goto the calling chain is done; after a jump it carries on.
        return RETURN if word == "goto" else NEXT
