"""kube-proxy's iptables mode: ``iptables-save`` text for the nat and filter tables, and a
packet tracer that walks that text chain by chain.

Rule text, comments, chain names and their order follow ``pkg/proxy/iptables/proxier.go``
(``syncProxyRules``, ``writeServiceToEndpointRules``, ``iptablesJumpChains``); the hashes are
``base32(sha256(servicePortName + protocol [+ endpoint]))[:16]`` exactly as upstream. The
tracer mirrors upstream's ``tracePacket`` (proxier_test.go): it parses the rendered text,
walks nat PREROUTING (OUTPUT for host-originated packets) rule by rule, follows every
branch of a ``statistic`` ladder, then walks the filter hook chain. The cost of a trace is
the number of rules it looked at, which is why lookups grow linearly with Services.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..cluster.state import ClusterState
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
    in_cidr,
    no_family,
    render_per_family,
    split_host_port,
    topology_comments,
    tracer_for,
)

MASQ_MARK = "0x4000"  # fmt.Sprintf("%#08x", 1<<14): the default --iptables-masquerade-bit

# Top-level jumps kube-proxy installs with EnsureRule(Prepend, ...): (table, from, to, comment, extra).
JUMP_CHAINS = (
    ("filter", "INPUT", "KUBE-EXTERNAL-SERVICES", "kubernetes externally-visible service portals",
     "-m conntrack --ctstate NEW"),
    ("filter", "FORWARD", "KUBE-EXTERNAL-SERVICES", "kubernetes externally-visible service portals",
     "-m conntrack --ctstate NEW"),
    ("filter", "INPUT", "KUBE-NODEPORTS", "kubernetes health check service ports", ""),
    ("filter", "FORWARD", "KUBE-SERVICES", "kubernetes service portals", "-m conntrack --ctstate NEW"),
    ("filter", "OUTPUT", "KUBE-SERVICES", "kubernetes service portals", "-m conntrack --ctstate NEW"),
    ("filter", "FORWARD", "KUBE-FORWARD", "kubernetes forwarding rules", ""),
    ("filter", "INPUT", "KUBE-PROXY-FIREWALL", "kubernetes load balancer firewall", "-m conntrack --ctstate NEW"),
    ("filter", "OUTPUT", "KUBE-PROXY-FIREWALL", "kubernetes load balancer firewall", "-m conntrack --ctstate NEW"),
    ("filter", "FORWARD", "KUBE-PROXY-FIREWALL", "kubernetes load balancer firewall", "-m conntrack --ctstate NEW"),
    ("nat", "OUTPUT", "KUBE-SERVICES", "kubernetes service portals", ""),
    ("nat", "PREROUTING", "KUBE-SERVICES", "kubernetes service portals", ""),
    ("nat", "POSTROUTING", "KUBE-POSTROUTING", "kubernetes postrouting rules", ""),
    # Duplicates of kubelet's own jumps (iptablesKubeletJumpChains).
    ("filter", "INPUT", "KUBE-FIREWALL", "", ""),
    ("filter", "OUTPUT", "KUBE-FIREWALL", "", ""),
)
BUILTIN = {"filter": ("INPUT", "FORWARD", "OUTPUT"), "nat": ("PREROUTING", "INPUT", "OUTPUT", "POSTROUTING")}
FILTER_CHAINS = ("KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-FORWARD", "KUBE-NODEPORTS",
                 "KUBE-PROXY-FIREWALL", "KUBE-FIREWALL")
NAT_CHAINS = ("KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ")


def _hash(text: str) -> str:
    return b32_prefix(text, 16)


def port_proto_hash(service_port_name: str, protocol: str) -> str:
    """``portProtoHash``: KUBE-SVC/SVL/EXT/FW of one service port share it."""
    return _hash(service_port_name + protocol)


def endpoint_chain_name(service_port_name: str, protocol: str, endpoint: str) -> str:
    return "KUBE-SEP-" + _hash(service_port_name + protocol + endpoint)


@functools.cache
def compute_probability(n: int) -> str:
    """``computeProbability``: Go's ``%0.10f`` of 1/n."""
    return f"{1.0 / n:0.10f}"


@dataclass(frozen=True, slots=True)
class ChainNames:
    svc: str
    svl: str
    ext: str
    fw: str
    sep: dict[str, str]  # endpoint "ip:port" -> KUBE-SEP-...


class _Writer:
    """Rules grouped per chain, chains in the order kube-proxy declares them."""

    def __init__(self) -> None:
        self.chains: dict[str, dict[str, list[str]]] = {"filter": {}, "nat": {}}

    def chain(self, table: str, name: str) -> None:
        self.chains[table].setdefault(name, [])

    def rule(self, table: str, chain: str, text: str) -> None:
        self.chains[table].setdefault(chain, []).append(f"-A {chain} {text}")


def _q(comment: str) -> str:
    return f'"{comment}"'


class IptablesBackend:
    name = "iptables"

    def port_names(self, info: ServicePortInfo, endpoints: Sequence[EndpointInfo]) -> ChainNames:
        prefix = info.name_string + info.proto
        h = b32_prefix(prefix, 16)
        seps = {e.string: "KUBE-SEP-" + b32_prefix(prefix + e.string, 16) for e in endpoints}  # endpoint_chain_name
        return ChainNames("KUBE-SVC-" + h, "KUBE-SVL-" + h, "KUBE-EXT-" + h, "KUBE-FW-" + h, seps)

    # --- render ---------------------------------------------------------------------

    def render(self, state: ClusterState, node: str | None = None) -> Ruleset:
        """iptables-save for the primary family, then (dual-stack) ip6tables-save for the other one."""
        return render_per_family(self, state, node, render_view)

    # --- trace ----------------------------------------------------------------------

    def remember(self, ruleset: Ruleset, result: TraceResult, target: Target, memory: AffinityMemory) -> str:
        """The endpoint chain's ``-m recent --set`` adds the client to the list named after the chain."""
        entry = entry_for(ruleset, result)
        if entry is None or entry.info.affinity_timeout is None or target.address not in entry.names.sep:
            return ""
        name = entry.names.sep[target.address]
        memory.remember(name, result.packet.src, target.address)
        return f"recent list {name}"

    def trace(self, ruleset: Ruleset, packet: Packet, memory: AffinityMemory | None = None) -> TraceResult:
        def build(view: ProxyView, text: str) -> _Tracer:
            # Parsed once per ruleset: the tracer reads the text, as the kernel reads what was restored.
            services = {}
            for e in view.ports:
                for chain in (e.names.svc, e.names.svl, e.names.ext, e.names.fw):
                    services[chain] = e.info.name_string
            loopback = "::1" if view.ipv6 else "127.0.0.1"
            return _Tracer(parse_iptables_save(text), {view.node_ip, loopback}, ruleset.node, services, view)

        tracer = tracer_for(ruleset, packet, build)
        return tracer.run(packet, memory) if tracer is not None else no_family(self.name, ruleset.node, packet)


def render_view(view: ProxyView) -> tuple[str, dict[str, int]]:
    w = _Writer()
    for table, chains in (("filter", FILTER_CHAINS[:-1]), ("nat", NAT_CHAINS)):
        for c in chains:
            w.chain(table, c)
    mark = f"{MASQ_MARK}/{MASQ_MARK}"
    w.rule("nat", "KUBE-POSTROUTING", f"-m mark ! --mark {mark} -j RETURN")
    w.rule("nat", "KUBE-POSTROUTING", f"-j MARK --xor-mark {MASQ_MARK}")
    w.rule("nat", "KUBE-POSTROUTING", f"-m comment --comment {_q('kubernetes service traffic requiring SNAT')} "
                                      "-j MASQUERADE --random-fully")
    w.rule("nat", "KUBE-MARK-MASQ", f"-j MARK --or-mark {MASQ_MARK}")
    node_ports = nodeports.node_port_addresses(view.node_port_addresses, "iptables", view.family, view.node_ip)
    localhost = nodeports.serves_localhost(node_ports)
    if localhost:
        # localhostNodePorts is on by default for IPv4 (IPv6 has no route_localnet): where the NodePort addresses
        # take 127.0.0.1, kube-proxy sets route_localnet=1 and writes kubelet's guard too.
        w.chain("filter", "KUBE-FIREWALL")
        w.rule("filter", "KUBE-FIREWALL", f"-m comment --comment {_q('block incoming localnet connections')} "
                                          "-d 127.0.0.0/8 ! -s 127.0.0.0/8 "
                                          "-m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP")
    # Above 1000 endpoints kube-proxy stops writing per-endpoint comments (largeClusterMode):
    # "can reduce size of iptables ... even by 40%+".
    large = sum(len(e.endpoints) for e in view.ports) > 1000
    for entry in view.ports:
        _write_service(w, entry, view, large)
    last = f"-m comment --comment {_q('kubernetes service nodeports; NOTE: this must be the last rule in this chain')}"
    if node_ports.match_all:
        # IPv6 localhost NodePorts never work (no route_localnet): ::1 is left out of every local address.
        not_loopback = "! -d ::1/128 " if view.ipv6 else ""
        w.rule("nat", "KUBE-SERVICES", f"{last} -m addrtype --dst-type LOCAL {not_loopback}-j KUBE-NODEPORTS")
    else:
        # One rule per node address the CIDRs take; a loopback one only where localhost NodePorts work (IPv4).
        for ip in node_ports.node_ips(view.node_ip):
            if ip != nodeports.LOOPBACK[view.family] or localhost:
                w.rule("nat", "KUBE-SERVICES", f"{last} -d {ip} -j KUBE-NODEPORTS")
    w.rule("filter", "KUBE-FORWARD", "-m conntrack --ctstate INVALID -j DROP")
    w.rule("filter", "KUBE-FORWARD", f"-m comment --comment {_q('kubernetes forwarding rules')} -m mark --mark {mark} "
                                     "-j ACCEPT")
    w.rule("filter", "KUBE-FORWARD", f"-m comment --comment {_q('kubernetes forwarding conntrack rule')} "
                                     "-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT")
    counts = {
        "filterRules": sum(len(r) for r in w.chains["filter"].values()),
        "natRules": sum(len(r) for r in w.chains["nat"].values()),
        "natChains": len(w.chains["nat"]),
        "servicePorts": len(view.ports),
        "endpoints": sum(len(e.endpoints) for e in view.ports),
    }
    tool = "ip6tables-save" if view.ipv6 else "iptables-save"
    lines: list[str] = [f"# knetsim: kube-proxy iptables mode ({tool}), node {view.node} ({view.node_ip})",
                        *topology_comments(view)]
    for table in ("filter", "nat"):
        jumps: dict[str, list[str]] = {c: [] for c in BUILTIN[table]}
        for t, src, dst, comment, extra in JUMP_CHAINS:
            if t != table or (dst == "KUBE-FIREWALL" and not localhost):
                continue
            args = " ".join(a for a in (extra, f"-m comment --comment {_q(comment)}" if comment else "") if a)
            # EnsureRule(Prepend): the last one ensured ends up first.
            jumps[src].insert(0, f"-A {src} {args + ' ' if args else ''}-j {dst}")
        lines.append(f"*{table}")
        lines.extend(f":{c} ACCEPT [0:0]" for c in BUILTIN[table])
        lines.extend(f":{c} - [0:0]" for c in w.chains[table])
        for c in BUILTIN[table]:
            lines.extend(jumps[c])
        for rules in w.chains[table].values():
            lines.extend(rules)
        lines.append("COMMIT")
    return "\n".join(lines) + "\n", counts


def _write_service(w: _Writer, entry: PortEntry, view: ProxyView, large: bool) -> None:
    info, cat, names = entry.info, entry.categorized, entry.names
    proto, name = info.proto, info.name_string
    has = cat.has_endpoints
    uses_cluster = bool(cat.cluster) and info.uses_cluster_endpoints
    uses_local = bool(cat.local) and info.uses_local_endpoints
    internal_chain, has_internal = names.svc, has
    if info.internal_policy_local:
        internal_chain = names.svl
        has_internal = has and bool(cat.local)
    external_policy_chain, has_external = names.svc, has
    if info.external_policy_local:
        external_policy_chain = names.svl
        has_external = has and bool(cat.local)
    uses_ext = has and info.externally_accessible
    lb_chain = names.ext
    uses_fw = has and bool(info.load_balancer_ips) and bool(info.source_ranges)
    if uses_fw:
        lb_chain = names.fw
    if not has:
        int_target = ext_target = "REJECT"
        int_comment = ext_comment = _q(f"{name} has no endpoints")
    else:
        int_target = ext_target = ""
        int_comment = ext_comment = ""
        if not has_internal:
            int_target, int_comment = "DROP", _q(f"{name} has no local endpoints")
        if not has_external:
            ext_target, ext_comment = "DROP", _q(f"{name} has no local endpoints")
    match = f"-m {proto} -p {proto}"
    port = info.port

    if has_internal:
        w.rule("nat", "KUBE-SERVICES", f"-m comment --comment {_q(name + ' cluster IP')} {match} "
                                       f"-d {info.cluster_ip} --dport {port} -j {internal_chain}")
    else:
        w.rule("filter", "KUBE-SERVICES", f"-m comment --comment {int_comment} {match} -d {info.cluster_ip} "
                                          f"--dport {port} -j {int_target}")
    for ip in info.external_ips:
        if has:
            w.rule("nat", "KUBE-SERVICES", f"-m comment --comment {_q(name + ' external IP')} {match} -d {ip} "
                                           f"--dport {port} -j {names.ext}")
        if not has_external:
            w.rule("filter", "KUBE-EXTERNAL-SERVICES", f"-m comment --comment {ext_comment} {match} -d {ip} "
                                                       f"--dport {port} -j {ext_target}")
    for ip in info.load_balancer_ips:
        if has:
            w.rule("nat", "KUBE-SERVICES", f"-m comment --comment {_q(name + ' loadbalancer IP')} {match} -d {ip} "
                                           f"--dport {port} -j {lb_chain}")
        if uses_fw:
            w.rule("filter", "KUBE-PROXY-FIREWALL",
                   f"-m comment --comment {_q(f'{name} traffic not accepted by {names.fw}')} {match} -d {ip} "
                   f"--dport {port} -j DROP")
    if not has_external:
        for ip in info.load_balancer_ips:
            w.rule("filter", "KUBE-EXTERNAL-SERVICES", f"-m comment --comment {ext_comment} {match} -d {ip} "
                                                       f"--dport {port} -j {ext_target}")
    if info.node_port:
        if has:
            w.rule("nat", "KUBE-NODEPORTS", f"-m comment --comment {name} {match} --dport {info.node_port} "
                                            f"-j {names.ext}")
        if not has_external:
            w.rule("filter", "KUBE-EXTERNAL-SERVICES", f"-m comment --comment {ext_comment} -m addrtype "
                                                       f"--dst-type LOCAL {match} --dport {info.node_port} "
                                                       f"-j {ext_target}")
    if info.health_check_node_port:
        w.rule("filter", "KUBE-NODEPORTS", f"-m comment --comment {_q(name + ' health check node port')} "
                                           f"-m tcp -p tcp --dport {info.health_check_node_port} -j ACCEPT")

    # Per-service chains are declared in this order so a reader finds a service's chains together.
    if uses_cluster:
        w.chain("nat", names.svc)
    if uses_local:
        w.chain("nat", names.svl)
    if uses_ext:
        w.chain("nat", names.ext)
    if uses_fw:
        w.chain("nat", names.fw)
    nat = w.chains["nat"]
    for ep in cat.reachable:
        nat.setdefault(names.sep[ep.string], [])

    if has_internal:
        # Masquerade off-cluster traffic to a VIP: it may be bridged in by a static route.
        w.rule("nat", internal_chain, f"-m comment --comment {_q(name + ' cluster IP')} {match} -d {info.cluster_ip} "
                                      f"--dport {port} ! -s {view.pod_cidr} -j KUBE-MARK-MASQ")
    if uses_ext:
        ext = names.ext
        if not info.external_policy_local:
            w.rule("nat", ext, f"-m comment --comment {_q(f'masquerade traffic for {name} external destinations')} "
                               "-j KUBE-MARK-MASQ")
        else:
            w.rule("nat", ext, f"-m comment --comment {_q(f'pod traffic for {name} external destinations')} "
                               f"-s {view.pod_cidr} -j {names.svc}")
            w.rule("nat", ext, f"-m comment --comment "
                               f"{_q(f'masquerade LOCAL traffic for {name} external destinations')} "
                               "-m addrtype --src-type LOCAL -j KUBE-MARK-MASQ")
            w.rule("nat", ext, f"-m comment --comment {_q(f'route LOCAL traffic for {name} external destinations')} "
                               f"-m addrtype --src-type LOCAL -j {names.svc}")
        if has_external:
            w.rule("nat", ext, f"-j {external_policy_chain}")
    if uses_fw:
        fw = names.fw
        lb_comment = _q(name + " loadbalancer IP")
        allow_node = False
        for cidr in info.source_ranges:
            w.rule("nat", fw, f"-m comment --comment {lb_comment} -s {cidr} -j {names.ext}")
            allow_node = allow_node or in_cidr(view.node_ip, cidr)
        if allow_node:
            for ip in info.load_balancer_ips:
                w.rule("nat", fw, f"-m comment --comment {lb_comment} -s {ip} -j {names.ext}")
        w.rule("nat", fw, f"-m comment --comment "
                          f"{_q(f'other traffic to {name} will be dropped by KUBE-PROXY-FIREWALL')}")
    if uses_cluster:
        _service_to_endpoints(w, info, names, names.svc, cat.cluster, large)
    if uses_local:
        _service_to_endpoints(w, info, names, names.svl, cat.local, large)
    comment = "" if large else f"-m comment --comment {name} "
    for ep in cat.reachable:  # the endpoint chains, each declared above and written here (w.rule, inlined)
        chain = names.sep[ep.string]
        recent = f"-m recent --name {chain} --set " if info.affinity_timeout is not None else ""
        nat[chain] += (f"-A {chain} {comment}-s {ep.ip} -j KUBE-MARK-MASQ",
                       f"-A {chain} {comment}{recent}{match} -j DNAT --to-destination {ep.string}")


def _service_to_endpoints(w: _Writer, info: ServicePortInfo, names: ChainNames, chain: str,
                          endpoints: Sequence[EndpointInfo], large: bool) -> None:
    def comment(ep: EndpointInfo) -> str:
        return "" if large else f"-m comment --comment {_q(f'{info.name_string} -> {ep.string}')} "

    if info.affinity_timeout is not None:
        for ep in endpoints:
            sep = names.sep[ep.string]
            w.rule("nat", chain, f"{comment(ep)}-m recent --name {sep} --rcheck --seconds {info.affinity_timeout} "
                                 f"--reap -j {sep}")
    n = len(endpoints)
    rules = w.chains["nat"].setdefault(chain, [])
    for i, ep in enumerate(endpoints):
        stat = f"-m statistic --mode random --probability {compute_probability(n - i)} " if i < n - 1 else ""
        rules.append(f"-A {chain} {comment(ep)}{stat}-j {names.sep[ep.string]}")


# --- parsing (upstream: pkg/util/iptables/testing/parse.go) ---------------------------

_TOKEN = re.compile(r'"[^"]*"|\S+')


@dataclass(slots=True)
class Rule:
    chain: str
    text: str
    src: tuple[int, int, bool] | None = None  # (network, mask, negated)
    dst: tuple[int, int, bool] | None = None
    proto: str | None = None
    dport: int | None = None
    src_local: bool | None = None  # --src-type LOCAL (False when negated)
    dst_local: bool | None = None
    ctstate: tuple[str, bool] | None = None
    mark: bool | None = None  # --mark: True wants the masquerade bit set, False wants it clear
    rcheck: bool = False
    recent_name: str = ""  # -m recent --name
    recent_seconds: int | None = None  # --seconds
    jump: str | None = None
    probability: float | None = None
    to_destination: str | None = None
    comment: str = ""


def _net(text: str) -> tuple[int, int]:
    net = ipaddress.ip_network(text, strict=False)
    return int(net.network_address), int(net.netmask)


def parse_rule(line: str) -> Rule:
    tokens = _TOKEN.findall(line)
    rule = Rule(chain=tokens[1], text=line)
    neg = False
    i = 2
    while i < len(tokens):
        tok = tokens[i]
        arg = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok == "!":
            neg = True
            i += 1
            continue
        if tok == "-s":
            rule.src = (*_net(arg), neg)
        elif tok == "-d":
            rule.dst = (*_net(arg), neg)
        elif tok == "-p":
            rule.proto = arg
        elif tok == "--dport":
            rule.dport = int(arg)
        elif tok == "--src-type":
            rule.src_local = not neg
        elif tok == "--dst-type":
            rule.dst_local = not neg
        elif tok == "--ctstate":
            rule.ctstate = (arg, neg)
        elif tok == "--mark":
            rule.mark = not neg
        elif tok == "--rcheck":
            rule.rcheck = True
            i += 1
            continue
        elif tok == "--name":
            rule.recent_name = arg
        elif tok == "--seconds":
            rule.recent_seconds = int(arg)
        elif tok == "--probability":
            rule.probability = float(arg)
        elif tok == "--to-destination":
            rule.to_destination = arg
        elif tok == "--comment":
            rule.comment = arg.strip('"')
        elif tok == "-j":
            rule.jump = arg
        elif tok in ("--set", "--reap", "--random-fully"):
            i += 1
            continue
        neg = False
        i += 2
    return rule


def parse_iptables_save(text: str) -> dict[str, dict[str, list[Rule]]]:
    tables: dict[str, dict[str, list[Rule]]] = {}
    current: dict[str, list[Rule]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("*"):
            current = tables.setdefault(line[1:], {})
        elif line.startswith(":"):
            current.setdefault(line[1:].split(" ", 1)[0], [])
        elif line.startswith("-A "):
            rule = parse_rule(line)
            current.setdefault(rule.chain, []).append(rule)
    return tables


# --- the tracer -----------------------------------------------------------------------


@dataclass
class _Walk:
    src: int
    dst: int
    proto: str
    dport: int
    src_ip: str
    dst_ip: str
    masq: bool = False
    targets: list[Target] = field(default_factory=list)
    verdict: str | None = None
    steps: list[Step] = field(default_factory=list)
    cost: int = 0
    service: str | None = None
    affinity: list[str] = field(default_factory=list)
    memory: AffinityMemory | None = None
    pinned: bool = False
    state: str = ""
    # Service chain -> (the endpoint chains whose recent list has not seen the client, --seconds).
    unseen: dict[str, tuple[list[str], int | None]] = field(default_factory=dict)


class _Tracer:
    def __init__(self, tables: dict[str, dict[str, list[Rule]]], local_ips: set[str], node: str,
                 services: dict[str, str], view: ProxyView | None = None) -> None:
        self.tables = tables
        self.local = {int(ipaddress.ip_address(ip)) for ip in local_ips if ip}
        self.node = node
        self.services = services  # service-port chain -> "ns/name:port", to name what matched
        self.view = view

    def run(self, packet: Packet, memory: AffinityMemory | None = None) -> TraceResult:
        src = int(ipaddress.ip_address(packet.src))
        dst = int(ipaddress.ip_address(packet.dst))
        w = _Walk(src, dst, packet.proto.lower(), packet.dport, packet.src, packet.dst, memory=memory)
        from_host = src in self.local
        # nat: PREROUTING for packets entering the node, OUTPUT for the node's own.
        self._walk("nat", "OUTPUT" if from_host else "PREROUTING", w, 1.0)
        nat_verdict = w.verdict
        w.verdict = None
        if w.targets:
            w.dst = int(ipaddress.ip_address(split_host_port(w.targets[0].address)[0]))
        hook = "OUTPUT" if from_host else ("INPUT" if w.dst in self.local else "FORWARD")
        if nat_verdict is None:
            self._walk("filter", hook, w, 1.0)
        result = TraceResult("iptables", self.node, packet, masquerade=w.masq, steps=w.steps, cost=w.cost,
                             service=w.service)
        filter_verdict = w.verdict or nat_verdict
        if filter_verdict in ("DROP", "REJECT"):
            result.verdict = filter_verdict
            result.masquerade = False
        elif w.targets:
            result.verdict = "DNAT"
            result.targets = w.targets
        elif filter_verdict == "ACCEPT":
            result.verdict = "ACCEPT"
        else:
            result.verdict = "NONE"
            refused = self._refused_node_port(packet)
            result.notes.append(refused or "no kube-proxy rule matched: not a Service address/port on this node; "
                                           "the packet is routed unchanged")
        for note in w.affinity:
            if note in w.unseen:
                seps, seconds = w.unseen[note]
                note = (f"{note}: a client seen again within --seconds {seconds} goes back to the endpoint chain it "
                        f"used (`-m recent --rcheck` on {', '.join(seps)}; sessionAffinity ClientIP)")
            result.notes.append(note)
        result.pinned, result.affinity = w.pinned, w.state
        return result

    def _refused_node_port(self, packet: Packet) -> str:
        """Why a NodePort on one of this node's addresses matched nothing: the NodePort addresses leave that
        address out (dataplane/nodeports.py)."""
        view = self.view
        if view is None:
            return ""
        service = next((e.info.name_string for e in view.ports
                        if e.info.node_port == packet.dport and e.info.protocol == packet.proto.upper()), None)
        if service is None or int(ipaddress.ip_address(packet.dst)) not in self.local:
            return ""
        node_ports = nodeports.node_port_addresses(view.node_port_addresses, "iptables", view.family, view.node_ip)
        return nodeports.refusal(node_ports, packet.dst, packet.dport, packet.proto, service)

    def _matches(self, r: Rule, w: _Walk) -> bool:
        if r.dst is not None and ((w.dst & r.dst[1]) == r.dst[0]) == r.dst[2]:
            return False
        if r.dport is not None and r.dport != w.dport:
            return False
        if r.proto is not None and r.proto != w.proto:
            return False
        if r.src is not None and ((w.src & r.src[1]) == r.src[0]) == r.src[2]:
            return False
        if r.src_local is not None and (w.src in self.local) != r.src_local:
            return False
        if r.dst_local is not None and (w.dst in self.local) != r.dst_local:
            return False
        if r.ctstate is not None:
            # A traced packet is the first of a new, untracked connection.
            states = r.ctstate[0].split(",")
            if ("NEW" in states) == r.ctstate[1]:
                return False
        if r.mark is not None and w.masq != r.mark:
            return False
        if r.rcheck:
            seen = w.memory.lookup(r.recent_name, w.src_ip) if w.memory is not None else None
            # xt_recent matches an address seen less than --seconds ago.
            if seen is not None and (r.recent_seconds is None or seen[1] < r.recent_seconds):
                w.pinned = True
                w.state = f"recent list {r.recent_name} saw {w.src_ip} {seen[1]:g}s ago (--seconds {r.recent_seconds})"
                w.affinity.append(f"{r.chain}: {w.state}: pinned to {r.jump}")
                return True
            if seen is not None:
                w.state = (f"expired: recent list {r.recent_name} last saw {w.src_ip} {seen[1]:g}s ago, not within "
                           f"--seconds {r.recent_seconds}")
                w.affinity.append(f"{r.chain}: {w.state} (--reap drops it)")
            elif w.memory is None or not w.memory.entries:
                # One note per Service chain, said once all its endpoint rules are seen.
                unseen = w.unseen.setdefault(r.chain, ([], r.recent_seconds))
                if not unseen[0]:
                    w.affinity.append(r.chain)
                unseen[0].append(str(r.jump))
            return False
        return True

    def _walk(self, table: str, chain: str, w: _Walk, prob: float) -> bool:
        """Walk ``chain``; True when the packet got a terminal verdict (DNAT/ACCEPT/DROP/REJECT)."""
        rules = self.tables.get(table, {}).get(chain, [])
        remaining = prob
        dst = w.dst
        for r in rules:
            w.cost += 1
            # The destination test inlined: it rejects almost every KUBE-SERVICES rule.
            rd = r.dst
            if rd is not None and ((dst & rd[1]) == rd[0]) == rd[2]:
                continue
            if not self._matches(r, w):
                continue
            if r.jump is None:
                w.steps.append(Step(f"{table}/{chain}", r.text))
                continue
            w.steps.append(Step(f"{table}/{chain}", r.text))
            j = r.jump
            if j == "KUBE-MARK-MASQ":
                w.masq = True
                continue
            if j in ("ACCEPT", "DROP", "REJECT"):
                w.verdict = j
                if w.service is None:
                    # Filter rules name their service port in the comment ("ns/svc:p has no endpoints").
                    for marker in (" has no ", " traffic not accepted", " health check node port"):
                        if marker in r.comment:
                            w.service = r.comment.split(marker, 1)[0]
                return True
            if j == "DNAT":
                w.targets.append(Target(r.to_destination or "", remaining))
                return True
            if j == "RETURN":
                return False
            if j in ("MARK", "MASQUERADE"):
                continue
            if j not in self.tables.get(table, {}):
                continue
            if w.service is None and j in self.services:
                w.service = self.services[j]
            if r.probability is not None:
                # Follow every branch of the statistic ladder, weighting each endpoint.
                self._walk(table, j, w, remaining * r.probability)
                remaining *= 1.0 - r.probability
                continue
            if self._walk(table, j, w, remaining):
                return True
        return False


def rule_counts(ruleset: Ruleset) -> dict[str, int]:
    return dict(ruleset.counts)
