"""One normalized shape for every allow-list policy the engine enforces.

``networking.k8s.io/v1`` NetworkPolicy and ``cilium.io/v2`` CiliumNetworkPolicy both
reduce to: a policy selects pods of its namespace; for each direction it either isolates
(``ingress``/``egress`` is a tuple of rules, possibly empty) or does not (``None``); a rule
allows traffic that matches one of its peers AND one of its ports. ``peers is None`` / ``ports
is None`` mean "every peer" / "every port and protocol", as the API says of a missing or
empty ``from``/``to``/``ports``. Indexes (rule, peer, port) are the 0-based positions in the
manifest, so a verdict can point at ``spec.ingress[1].from[0]``.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..model.labels import Selector
from ..model.loader import BUILTIN, Source
from ..model.objects import NetworkPolicy, Pod
from .ports import FULL, MAX_PORT, MIN_PORT, PROTOCOLS, ConnSet

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

INGRESS = "ingress"
EGRESS = "egress"
DIRECTIONS = (INGRESS, EGRESS)


def service_account_of(pod: Any) -> str:
    """The account a pod runs as, which Calico's, Cilium's and Antrea's selectors read: ``spec.serviceAccountName``
    (or its deprecated alias ``serviceAccount``), else the ``default`` the ServiceAccount admission plugin fills in."""
    spec = (getattr(pod, "raw", None) or {}).get("spec") or {}
    return str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One end of a connection as NetworkPolicy sees it.

    ``kind`` is ``pod`` (a pod on the pod network), ``node`` (a node IP, which is also what a
    hostNetwork pod's traffic looks like) or ``external`` (any other IP).
    """

    kind: str
    ip: str
    pod: Pod | None = None
    node: str = ""
    # The Service (``ns/name``) whose virtual IP the connection was addressed to, before the data plane's DNAT
    # chose this endpoint; "" for a connection to the endpoint itself. Antrea's toServices matches on it.
    service: str = ""

    @property
    def name(self) -> str:
        if self.pod is not None:
            return self.pod.key
        if self.kind == "node" and self.node:
            return f"node/{self.node}"
        return self.ip

    @property
    def label(self) -> str:
        """``ns/pod (10.244.1.2)``: name and address, for sentences."""
        if self.pod is not None:
            extra = ", hostNetwork" if self.kind == "node" else ""
            return f"{self.pod.key} ({self.ip or 'no IP'}{extra})"
        if self.kind == "node":
            return f"node {self.node} ({self.ip})"
        return self.ip


@dataclass(frozen=True, slots=True)
class HTTPRule:
    """A Cilium ``rules.http`` entry: every field that is set must match (regexes are anchored)."""

    method: str = ""
    path: str = ""
    host: str = ""
    headers: tuple[str, ...] = ()

    def describe(self) -> str:
        parts = [self.method or "any method", self.path or "any path"]
        if self.host:
            parts.append(f"host {self.host}")
        if self.headers:
            parts.append("headers " + ", ".join(self.headers))
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Port:
    index: int
    protocol: str  # TCP | UDP | SCTP | ANY (Cilium)
    port: int | str | None = None  # None: every port of the protocol
    end_port: int | None = None
    http: tuple[HTTPRule, ...] | None = None  # Cilium L7 rules of this toPorts entry

    def protocols(self) -> tuple[str, ...]:
        return PROTOCOLS if self.protocol == "ANY" else (self.protocol,)

    def resolve(self, dst: Endpoint) -> ConnSet:
        """The connections this entry names towards ``dst`` (a named port is looked up on ``dst``)."""
        out: dict[str, list[tuple[int, int]]] = {}
        for protocol in self.protocols():
            if self.port is None:
                out[protocol] = list(FULL)
            elif isinstance(self.port, int):
                out[protocol] = [(self.port, self.end_port if self.end_port is not None else self.port)]
            elif dst.kind == "pod" and dst.pod is not None:
                number = dst.pod.named_port(self.port, protocol)
                if number is not None:
                    out[protocol] = [(number, number)]
        return ConnSet.of(out)

    def matches(self, protocol: str, number: int, dst: Endpoint) -> bool:
        """``resolve(dst).contains(protocol, number)``, without making the set (every rule of every verdict)."""
        if protocol not in self.protocols():
            return False
        if self.port is None:
            return MIN_PORT <= number <= MAX_PORT
        if isinstance(self.port, int):
            return self.port <= number <= (self.end_port if self.end_port is not None else self.port)
        if dst.kind == "pod" and dst.pod is not None:
            return dst.pod.named_port(self.port, protocol) == number
        return False

    def describe(self) -> str:
        protocol = "any protocol" if self.protocol == "ANY" else self.protocol
        if self.port is None:
            return f"{protocol} (every port)"
        if isinstance(self.port, str):
            return f"{protocol} port named {self.port!r} (looked up on the destination pod)"
        if self.end_port is not None and self.end_port != self.port:
            return f"{protocol} ports {self.port}-{self.end_port}"
        return f"{protocol} port {self.port}"


@functools.lru_cache(maxsize=1 << 17)
def address_key(text: str) -> tuple[int, int] | None:
    """(IP version, address as an integer), parsed once: the same pod IPs are tested against every ipBlock of
    every rule."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    return address.version, int(address)


def _span(net: IPNetwork) -> tuple[int, int]:
    return int(net.network_address), int(net.broadcast_address)


@dataclass(frozen=True, slots=True)
class IPRange:
    cidr: IPNetwork
    excepts: tuple[IPNetwork, ...] = ()
    # The networks as integer spans, made once: every pod IP is tested against every ipBlock.
    _spans: tuple[int, tuple[int, int], tuple[tuple[int, int], ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_spans", (self.cidr.version, _span(self.cidr), tuple(map(_span, self.excepts))))

    @property
    def bounds(self) -> tuple[int, int, int]:
        """(IP version, first address, last address) of the CIDR, excepts aside: ``address_key`` order."""
        version, (lo, hi), _ = self._spans
        return version, lo, hi

    def contains(self, ip: str) -> bool:
        address = address_key(ip)
        if address is None:
            return False
        version, n = address
        v, (lo, hi), excepts = self._spans
        if version != v or not lo <= n <= hi:
            return False
        return not any(lo <= n <= hi for lo, hi in excepts)

    def describe(self) -> str:
        text = str(self.cidr)
        if self.excepts:
            text += " except " + ", ".join(str(e) for e in self.excepts)
        return text


@dataclass(frozen=True, slots=True)
class Peer:
    """One ``from``/``to`` item. Pod peers: ``namespace`` fixed (podSelector alone) or ``namespace_selector``."""

    index: int
    # pods | ipblock | entity; ClusterNetworkPolicy's network (every address in it, pod IPs too), nodes
    # (the addresses of the nodes ``pod_selector`` selects by their labels) and domains (never matches here)
    kind: str
    namespace: str | None = None
    namespace_selector: Selector | None = None
    pod_selector: Selector | None = None  # None: every pod of the selected namespaces; nodes: the node selector
    ip_range: IPRange | None = None
    entity: str = ""  # Cilium: all | world | cluster | host | remote-node; domains: the names, comma-separated

    def describe(self) -> str:
        if self.kind in ("ipblock", "network") and self.ip_range is not None:
            return f"IP addresses in {self.ip_range.describe()}"
        if self.kind == "entity":
            return f"Cilium entity {self.entity!r}"
        if self.kind == "nodes":
            sel = self.pod_selector
            return "every node's address" if sel is None or sel.empty else (
                f"the addresses of nodes with {sel.formatted()}")
        if self.kind == "domains":
            return (f"domain names {self.entity.replace(',', ', ')} (not simulated: knetsim resolves no name outside "
                    "the cluster, so this peer matches nothing)")
        pods = "every pod" if self.pod_selector is None or self.pod_selector.empty else (
            f"pods with {self.pod_selector.formatted()}")
        if self.namespace is not None and self.namespace_selector is None:
            return f"{pods} in namespace {self.namespace}"
        assert self.namespace_selector is not None
        where = "in " + namespaces_text(self.namespace_selector)
        if self.pod_selector is not None and not self.pod_selector.empty:
            return f"{pods} {where} (one peer: namespace AND pod selector must both match)"
        return f"{pods} {where}"


def namespaces_text(selector: Selector) -> str:
    """``every namespace``, ``namespace shop`` (selected by its name label) or ``namespaces with tenant=yes``."""
    if selector.empty:
        return "every namespace"
    name = _namespace_name(selector)
    return f"namespace {name}" if name else f"namespaces with {selector.formatted()}"


def _namespace_name(selector: Selector) -> str | None:
    equality = selector.equality_map()
    if equality and set(equality) == {NAMESPACE_NAME_LABEL}:
        return equality[NAMESPACE_NAME_LABEL]
    return None


@dataclass(frozen=True, slots=True)
class Rule:
    index: int
    peers: tuple[Peer, ...] | None
    ports: tuple[Port, ...] | None


class RuleShape(Protocol):
    """What matching reads of a rule: NetworkPolicy's ``Rule`` and ClusterNetworkPolicy's ``ClusterRule``."""

    @property
    def peers(self) -> tuple[Peer, ...] | None: ...

    @property
    def ports(self) -> tuple[Port, ...] | None: ...


@dataclass(frozen=True, slots=True)
class Policy:
    kind: str  # NetworkPolicy | CiliumNetworkPolicy
    namespace: str
    name: str
    selector: Selector
    ingress: tuple[Rule, ...] | None  # None: the policy does not isolate this direction
    egress: tuple[Rule, ...] | None
    source: Source = BUILTIN

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.key}"

    def rules(self, direction: str) -> tuple[Rule, ...] | None:
        return self.ingress if direction == INGRESS else self.egress


def ip_range(cidr: str, excepts: tuple[str, ...] = ()) -> IPRange:
    return _ip_range(cidr, tuple(excepts))


@functools.lru_cache(maxsize=4096)
def _ip_range(cidr: str, excepts: tuple[str, ...]) -> IPRange:
    # Parsed once per distinct block (an IPRange is immutable): 10,000 policies repeat a few CIDRs, and parsing
    # one is ~20 us of ipaddress.
    return IPRange(ipaddress.ip_network(cidr, strict=False),
                   tuple(ipaddress.ip_network(e, strict=False) for e in excepts))


class SharedRules:
    """The Rules of many NetworkPolicies made once per distinct rule (for ``from_network_policy``).

    The typed views already share one PolicyRule per distinct rule text (10,000 policies of the Calico bench hold
    36,000 rules, ~1,200 distinct), so a Rule is keyed by that object's identity, its position and, when a peer
    means "this namespace" (a podSelector alone), the policy's namespace. Each entry keeps its PolicyRule alive, so
    an id is never reused while the cache lives; callers keep one for one index build, not beyond.
    """

    def __init__(self) -> None:
        # Per raw rule: does a peer of it mean "this namespace", and its Ports (they read no namespace, so the
        # 8,100 namespace-local Rules of the 10,000-policy bench share ~1,200 Port tuples instead of making ~10,000).
        self._local: dict[int, tuple[Any, bool, tuple[Port, ...] | None]] = {}
        self._rules: dict[tuple[int, int, str], tuple[Any, Rule]] = {}
        self._peers: dict[tuple[int, int], tuple[Any, Peer]] = {}

    def key(self, raw: Any, index: int, namespace: str) -> tuple[int, int, str]:
        """Where the Rule of ``raw`` at ``index`` in a policy of ``namespace`` is kept."""
        found = self._local.get(id(raw))
        if found is None:
            found = self._remember(raw)
        return id(raw), index, namespace if found[1] else ""

    def _remember(self, raw: Any) -> tuple[Any, bool, tuple[Port, ...] | None]:
        ports = None if raw.ports is None else tuple([Port(k, p.protocol, p.port, p.end_port)
                                                      for k, p in enumerate(raw.ports)])
        found = self._local[id(raw)] = (raw, raw.peers is not None and any(
            p.ip_block is None and p.namespace_selector is None for p in raw.peers), ports)
        return found

    def get(self, key: tuple[int, int, str]) -> Rule | None:
        found = self._rules.get(key)
        return None if found is None else found[1]

    def put(self, key: tuple[int, int, str], raw: Any, rule: Rule) -> None:
        self._rules[key] = (raw, rule)

    def peer(self, index: int, namespace: str, raw: Any) -> Peer:
        """The Peer of ``raw`` at ``index``: one per raw peer that reads no namespace (an ipBlock, a
        namespaceSelector), as rules are shared; the 10,000-policy bench's rules of each namespace are Rules of their
        own, but their namespaceSelector peers are ~200 raw objects, not 8,000 Peers."""
        if raw.ip_block is None and raw.namespace_selector is None:
            return _peer(index, namespace, raw)  # "this namespace": the policy's own
        key = (id(raw), index)
        found = self._peers.get(key)
        if found is None:
            found = self._peers[key] = (raw, _peer(index, namespace, raw))  # raw kept: its id stays its own
        return found[1]


def from_network_policy(np: NetworkPolicy, shared: SharedRules | None = None) -> Policy:
    """``np`` as the engine reads it; ``shared``: Rules made for earlier policies, reused where the rule is the same
    (building them took 0.18 s of the 10,000-policy bench's index, for ~1,200 distinct ones)."""
    namespace = np.namespace  # a property of the view: read once, not per rule and peer (58,000 reads at 10,000)

    def rules(raw_rules: tuple[Any, ...]) -> tuple[Rule, ...]:
        if shared is None:
            return tuple([_rule(i, namespace, rule) for i, rule in enumerate(raw_rules)])
        # SharedRules.key and .get inlined: 36,000 rules at 10,000 policies, two method calls each cost ~0.02 s.
        local, made_rules = shared._local, shared._rules
        out = []
        for i, rule in enumerate(raw_rules):
            about = local.get(id(rule))
            if about is None:
                about = shared._remember(rule)
            key = (id(rule), i, namespace if about[1] else "")
            found = made_rules.get(key)
            if found is None:
                peers = None
                if rule.peers is not None:
                    make_peer = shared.peer
                    peers = tuple([make_peer(j, namespace, p) for j, p in enumerate(rule.peers)])
                found = made_rules[key] = (rule, Rule(i, peers, about[2]))
            out.append(found[1])
        return tuple(out)

    types = np.policy_types
    return Policy(
        "NetworkPolicy", namespace, np.name, np.pod_selector,
        rules(np.ingress) if "Ingress" in types else None,
        rules(np.egress) if "Egress" in types else None,
        np.source,
    )


def _rule(index: int, namespace: str, raw: Any) -> Rule:
    peers = None if raw.peers is None else tuple([_peer(j, namespace, p) for j, p in enumerate(raw.peers)])
    ports = None if raw.ports is None else tuple([Port(k, p.protocol, p.port, p.end_port)
                                                  for k, p in enumerate(raw.ports)])
    return Rule(index, peers, ports)


def _peer(index: int, namespace: str, raw: Any) -> Peer:
    if raw.ip_block is not None:
        return Peer(index, "ipblock", ip_range=ip_range(raw.ip_block.cidr, raw.ip_block.except_))
    if raw.namespace_selector is not None:
        return Peer(index, "pods", namespace_selector=raw.namespace_selector, pod_selector=raw.pod_selector)
    return Peer(index, "pods", namespace=namespace, pod_selector=raw.pod_selector)


# --- matching ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MatchContext:
    """What peer matching needs besides the peer: namespace labels and the data plane's ipBlock reading."""

    namespace_labels: Callable[[str], Mapping[str, str]]
    # Upstream's e2e suite (netpol "should enforce except clause while egress access to server in
    # CIDR block") expects pod IPs to match ipBlocks; Cilium does not apply CIDR rules to
    # cluster endpoints or nodes (cilium/cilium#9209), so on ebpf they never match.
    ipblocks_match_cluster: bool = True
    local_node: str = ""  # node of the policy's pod, for Cilium's host / remote-node entities
    node_labels: Callable[[str], Mapping[str, str]] | None = None  # for ClusterNetworkPolicy's nodes peers


def peer_matches(policy: Policy | None, peer: Peer, ep: Endpoint, ctx: MatchContext) -> bool:
    if peer.kind == "network":
        # "cluster-internal traffic will be checked against the rule as well" (ClusterNetworkPolicyEgressPeer)
        return peer.ip_range is not None and bool(ep.ip) and peer.ip_range.contains(ep.ip)
    if peer.kind == "nodes":
        # The node's addresses (a hostNetwork pod's traffic is its node's), as kube-network-policies matches them.
        if ep.kind != "node" or not ep.node or ctx.node_labels is None:
            return False
        return peer.pod_selector is None or peer.pod_selector.matches(ctx.node_labels(ep.node))
    if peer.kind == "domains":
        return False
    if peer.kind == "ipblock":
        if peer.ip_range is None or not ep.ip:
            return False
        if ep.kind != "external" and not ctx.ipblocks_match_cluster:
            return False
        return peer.ip_range.contains(ep.ip)
    if peer.kind == "entity":
        return _entity_matches(peer.entity, ep, ctx)
    if ep.kind != "pod" or ep.pod is None:
        # hostNetwork pods are not matched by pod/namespace selectors: their traffic is node traffic.
        return False
    pod = ep.pod
    if peer.namespace_selector is None:
        if pod.namespace != peer.namespace:
            return False
    elif not peer.namespace_selector.matches(ctx.namespace_labels(pod.namespace)):
        return False
    return peer.pod_selector is None or peer.pod_selector.matches(pod.labels)


def _entity_matches(entity: str, ep: Endpoint, ctx: MatchContext) -> bool:
    if entity == "all":
        return True
    if entity == "world":
        return ep.kind == "external"
    if entity == "cluster":
        return ep.kind in ("pod", "node")
    if entity == "host":
        return ep.kind == "node" and (not ctx.local_node or ep.node == ctx.local_node)
    if entity == "remote-node":
        return ep.kind == "node" and ep.node != ctx.local_node
    return False


def first_peer(policy: Policy | None, rule: RuleShape, ep: Endpoint, ctx: MatchContext) -> int | None:
    """Index of the first peer of ``rule`` that matches ``ep``; -1 when the rule has no peers (all)."""
    if rule.peers is None:
        return -1
    return next((p.index for p in rule.peers if peer_matches(policy, p, ep, ctx)), None)


def first_port(rule: RuleShape, protocol: str, number: int, dst: Endpoint) -> int | None:
    if rule.ports is None:
        return -1
    return next((p.index for p in rule.ports if p.matches(protocol, number, dst)), None)


def rule_connections(rule: RuleShape, dst: Endpoint) -> ConnSet:
    if rule.ports is None:
        return ConnSet.all()
    out = ConnSet.none()
    for port in rule.ports:
        out = out | port.resolve(dst)
    return out
