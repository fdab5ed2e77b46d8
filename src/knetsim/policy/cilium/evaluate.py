"""One side of a connection as a Cilium agent decides it: deny before allow, then default deny or allow.

The order (cilium/cilium Documentation/security/policy/language.rst, "Deny Policies", and
pkg/policy/api/rule.go ``EnableDefaultDeny``):

1. every policy selecting the pod for the direction (CiliumNetworkPolicy, CiliumClusterwideNetworkPolicy
   and Kubernetes NetworkPolicy, which Cilium translates into its own rules) is looked at;
2. a matching ``ingressDeny``/``egressDeny`` rule drops the connection, whatever any allow says;
3. a matching allow rule lets it through;
4. otherwise the pod is in default deny when one selecting policy isolates the direction (has rules for
   it and does not set ``enableDefaultDeny`` false): dropped; else allowed.

Peers only Cilium has: entities (entity.go), ``toServices`` (the Service's endpoint addresses), and
``toFQDNs``, which match the addresses of the names the pod resolved through the cluster's DNS when
Cilium's DNS proxy saw the lookup, i.e. when an egress rule with ``toPorts[].rules.dns`` allowing the
name lets the pod reach the cluster's DNS server. Offline, the names the cluster's DNS answers outside the
cluster are the cluster config's ``outside`` hosts (``cluster/outside.py``).
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from ...cluster.state import ClusterState
from ...model.objects import Pod
from ..ports import ConnSet
from ..rules import INGRESS, Endpoint, MatchContext, Peer, Rule, peer_matches, rule_connections
from .labels import DEFAULT_CLUSTER, cluster_name, endpoint_labels, reads_endpoint_labels
from .read import CiliumPolicy, DNSMatch

DNS_PORT = 53
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"


@dataclass(frozen=True, slots=True)
class CiliumHit:
    """A rule that matched: ``CiliumNetworkPolicy ns/x egressDeny[0].to[1].ports[0]``."""

    policy: str  # the policy's ref
    section: str  # ingress | egress | ingressDeny | egressDeny
    rule: int
    peer: int  # -1: the rule names no peer (every peer)
    port: int  # -1: the rule names no port (every port)

    @property
    def deny(self) -> bool:
        return self.section.endswith("Deny")

    def text(self) -> str:
        side = "from" if self.section.startswith(INGRESS) else "to"
        out = f"{self.policy} {self.section}[{self.rule}]"
        if self.peer >= 0:
            out += f".{side}[{self.peer}]"
        if self.port >= 0:
            out += f".toPorts.ports[{self.port}]"
        return out


@dataclass(frozen=True, slots=True)
class CiliumDecision:
    allowed: bool
    isolated: bool
    selecting: tuple[str, ...]  # refs of the policies selecting the pod for this direction
    isolating: tuple[str, ...]  # ...of which these put it in default deny
    denied_by: CiliumHit | None = None
    allowed_by: CiliumHit | None = None
    missing_dns: tuple[str, ...] = ()  # toFQDNs rules that would match if a DNS rule allowed the lookup
    # Every allow rule that matches (the first is allowed_by): Cilium's proxy merges their HTTP rules (l7.py).
    allows: tuple[CiliumHit, ...] = ()

    def reason(self, pod: str, direction: str) -> str:
        if self.denied_by is not None:
            head = f"denied by {self.denied_by.text()} (Cilium: a deny rule wins over every allow)"
        elif self.allowed_by is not None:
            head = f"allowed by {self.allowed_by.text()}"
        elif not self.selecting:
            return f"no policy selects {pod} for {direction}: it is not isolated, all {direction} traffic is allowed"
        elif not self.isolated:
            head = (f"no rule matches, and no policy selecting {pod} puts it in default deny for {direction} "
                    f"(enableDefaultDeny.{direction}: false in {', '.join(self.selecting)}): allowed")
        else:
            head = f"isolated by {', '.join(self.isolating)} (default deny); no {direction} rule matches"
        if self.missing_dns and not self.allowed:
            head += "; " + "; ".join(self.missing_dns)
        return head


@dataclass(frozen=True)
class CiliumIndex:
    """The policies a Cilium cluster enforces, with what their Cilium-only peers resolve to."""

    policies: tuple[CiliumPolicy, ...]
    services: Mapping[str, frozenset[str]]  # a toServices peer's entity -> the endpoint addresses
    dns_servers: tuple[Endpoint, ...]  # the cluster's DNS pods (k8s-app=kube-dns in kube-system)
    outside: Mapping[str, tuple[str, ...]]  # name -> addresses the cluster's DNS forwards to
    control_plane: frozenset[str]  # nodes running kube-apiserver
    cluster: str = DEFAULT_CLUSTER  # the endpoints' io.cilium.k8s.policy.cluster label (labels.py)
    _selecting: dict[tuple[str, str], list[CiliumPolicy]] = field(default_factory=dict, init=False, repr=False,
                                                                  compare=False)

    def selecting(self, pod: Pod, direction: str, ctx: MatchContext) -> list[CiliumPolicy]:
        key = (pod.key, direction)
        found = self._selecting.get(key)
        if found is None:
            labels = ctx.namespace_labels(pod.namespace)
            found = self._selecting[key] = [p for p in self.policies
                                            if p.applies(direction) and p.selects(pod, labels, self.cluster)]
        return found


def build(state: ClusterState, policies: list[CiliumPolicy]) -> CiliumIndex:
    services: dict[str, frozenset[str]] = {}
    for policy in policies:
        for rule in policy.rules("egress") or ():
            for peer in rule.peers or ():
                if peer.kind == "service" and peer.entity not in services:
                    services[peer.entity] = _service_addresses(state, peer)
    dns = tuple(Endpoint("pod", p.pod_ip, p, p.node_name) for p in state.pods_in("kube-system")
                if p.labels.get("k8s-app") == "kube-dns" and p.pod_ip)
    outside = {name: host.addresses for name, host in sorted(state.config.outside.hosts.items())}
    control_plane = frozenset(n.name for n in state.nodes.values() if CONTROL_PLANE_LABEL in n.labels)
    return CiliumIndex(tuple(policies), services, dns, outside, control_plane, cluster_name(state))


def _service_addresses(state: ClusterState, peer: Peer) -> frozenset[str]:
    """The endpoint addresses of the Service(s) a ``toServices`` peer names (service.go: the backends)."""
    if "/" in peer.entity:
        namespace, _, name = peer.entity.partition("/")
        chosen = [s for s in state.services.values() if s.name == name and namespace == s.namespace]
    else:
        namespace = peer.entity.partition(":")[0]
        chosen = [s for s in state.services.values() if namespace in ("*", s.namespace)
                  and (peer.pod_selector is None or peer.pod_selector.matches(s.labels))]
    out: set[str] = set()
    for svc in chosen:
        for es in state.slices_for(svc):
            for ep in es.endpoints:
                out.update(ep.addresses)
    return frozenset(out)


def _entity(entity: str, ep: Endpoint, ctx: MatchContext, index: CiliumIndex) -> bool:
    """entity.go's entities as knetsim's endpoints are: pods, nodes (hostNetwork pods are their node) and
    external addresses. health, init, ingress, unmanaged and none name endpoints knetsim has none of."""
    if entity == "all":
        return True
    if entity in ("world", "world-ipv4", "world-ipv6"):
        if ep.kind != "external":
            return False
        if entity == "world":
            return True
        version = ipaddress.ip_address(ep.ip).version
        return version == (4 if entity == "world-ipv4" else 6)
    if entity == "cluster":
        return ep.kind in ("pod", "node")
    if entity == "host":
        return ep.kind == "node" and (not ctx.local_node or ep.node == ctx.local_node)
    if entity == "remote-node":
        return ep.kind == "node" and ep.node != ctx.local_node
    if entity == "kube-apiserver":
        # kube-apiserver runs with hostNetwork on the control-plane nodes: their addresses carry the identity.
        return ep.kind == "node" and ep.node in index.control_plane
    return False


def lookup_allowed(index: CiliumIndex, pod: Pod, name: str, ctx: MatchContext) -> bool:
    """Does Cilium's DNS proxy see (and allow) ``pod``'s lookup of ``name``? An egress rule of a policy
    selecting the pod must let it reach a DNS server on port 53 with a ``rules.dns`` entry matching it, and the
    query must get there: no deny rule drops it, and the server's own ingress admits it."""
    src = Endpoint("pod", pod.pod_ip, pod, pod.node_name)
    for policy in index.selecting(pod, "egress", ctx):
        for rule in policy.rules("egress") or ():
            for port in rule.ports or ():
                allowlist = policy.dns_allowlist(rule.index, port.index)
                if not allowlist or not any(m.matches(name) for m in allowlist):
                    continue
                for server in index.dns_servers:
                    for proto in ("UDP", "TCP"):
                        if not port.matches(proto, DNS_PORT, server):
                            continue
                        if rule.peers is not None and not any(_peer(index, policy, rule, p, server, pod, ctx)
                                                              for p in rule.peers):
                            continue
                        assert server.pod is not None
                        there = dataclasses.replace(ctx, local_node=server.node)
                        if decide_side(index, "egress", src, server, proto, DNS_PORT, ctx).allowed and \
                                decide_side(index, INGRESS, server, src, proto, DNS_PORT, there).allowed:
                            return True
    return False


def fqdn_addresses(index: CiliumIndex, match: DNSMatch, pod: Pod, ctx: MatchContext) -> tuple[set[str], list[str]]:
    """(addresses of the names matching ``match`` that the pod could resolve, names whose lookup no DNS rule
    allows)."""
    found: set[str] = set()
    blind: list[str] = []
    for name, addresses in index.outside.items():
        if not match.matches(name):
            continue
        if lookup_allowed(index, pod, name, ctx):
            found.update(addresses)
        else:
            blind.append(name)
    return found, blind


def representative_name(match: DNSMatch) -> str:
    """A name ``match`` names: its matchName, or its pattern with each ``*`` filled in."""
    if match.name:
        return match.name
    return "example.com" if match.pattern.strip(".") == "*" else match.pattern.replace("*", "x")


@dataclass(frozen=True, slots=True)
class BlindFQDN:
    """A toFQDNs entry whose names no DNS rule lets the selected pods look up: it can never match."""

    policy: str
    rule: int
    match: DNSMatch
    pods: tuple[str, ...]


def fqdns_without_dns_rule(index: CiliumIndex, pods: list[Pod],
                           ctx_for: Callable[[Pod], MatchContext]) -> list[BlindFQDN]:
    """Each toFQDNs entry of each policy whose selected pods cannot have Cilium's DNS proxy see the lookup."""
    out = []
    for policy in index.policies:
        for rule, _, match in policy.fqdns:
            name = representative_name(match)
            blind = tuple(p.key for p in pods if policy in index.selecting(p, "egress", ctx_for(p))
                          and not lookup_allowed(index, p, name, ctx_for(p)))
            if blind:
                out.append(BlindFQDN(policy.ref, rule, match, blind))
    return out


def _peer(index: CiliumIndex, policy: CiliumPolicy, rule: Rule, peer: Peer, ep: Endpoint, subject: Pod,
          ctx: MatchContext) -> bool:
    if peer.kind == "entity":
        return _entity(peer.entity, ep, ctx, index)
    if peer.kind == "service":
        return bool(ep.ip) and ep.ip in index.services.get(peer.entity, frozenset())
    if peer.kind == "fqdn":
        match = policy.fqdn_match(rule.index, peer.index)
        if match is None or ep.kind != "external":
            return False
        return ep.ip in fqdn_addresses(index, match, subject, ctx)[0]
    return endpoints_peer_matches(policy, peer, ep, ctx, index.cluster)


def endpoints_peer_matches(policy: CiliumPolicy, peer: Peer, ep: Endpoint, ctx: MatchContext, cluster: str) -> bool:
    """A pods peer (fromEndpoints/toEndpoints) or any NetworkPolicy-shaped one, as Cilium matches it."""
    if peer.kind == "pods" and peer.pod_selector is not None and reads_endpoint_labels(peer.pod_selector):
        # The selector reads a label of Cilium's endpoint (the service account, the cluster name): the namespace
        # as rules.peer_matches reads it, the labels as Cilium gives them.
        if ep.kind != "pod" or ep.pod is None:
            return False
        return peer_matches(policy.policy, _any_pod(peer), ep, ctx) and \
            peer.pod_selector.matches(endpoint_labels(ep.pod, cluster))
    return peer_matches(policy.policy, peer, ep, ctx)


@lru_cache(maxsize=4096)
def _any_pod(peer: Peer) -> Peer:
    """``peer`` with its pod selector left out: its namespace part alone."""
    return dataclasses.replace(peer, pod_selector=None)


def _first_peer(index: CiliumIndex, policy: CiliumPolicy, rule: Rule, ep: Endpoint, subject: Pod,
                ctx: MatchContext) -> int | None:
    if rule.peers is None:
        return -1
    return next((p.index for p in rule.peers if _peer(index, policy, rule, p, ep, subject, ctx)), None)


def _first_port(rule: Rule, protocol: str, port: int, dst: Endpoint) -> int | None:
    if rule.ports is None:
        return -1
    return next((p.index for p in rule.ports if p.matches(protocol, port, dst)), None)


def _missing_dns(index: CiliumIndex, policies: list[CiliumPolicy], peer_ep: Endpoint, subject: Pod,
                 ctx: MatchContext) -> tuple[str, ...]:
    """Each toFQDNs peer that names ``peer_ep``'s address through a name the pod could not resolve under Cilium's
    DNS proxy: the reason the connection fails."""
    if peer_ep.kind != "external":
        return ()
    out = []
    for policy in policies:
        for r, _, match in policy.fqdns:
            for name in fqdn_addresses(index, match, subject, ctx)[1]:
                if peer_ep.ip in index.outside.get(name, ()):
                    out.append(f"{policy.ref} egress[{r}].toFQDNs ({match.describe()}) would allow {peer_ep.ip} "
                               f"({name}), but no egress rule with toPorts.rules.dns allowing {name} lets the pod "
                               "reach the cluster's DNS: Cilium's DNS proxy never sees the lookup, so the address "
                               "is never learned")
    return tuple(out)


def decide_side(index: CiliumIndex, direction: str, pod_ep: Endpoint, peer_ep: Endpoint, protocol: str,
                port: int, ctx: MatchContext) -> CiliumDecision:
    """One side (``pod_ep``'s ``direction``) for one port: deny rules, then allow rules, then default deny."""
    assert pod_ep.pod is not None
    pod = pod_ep.pod
    selecting = index.selecting(pod, direction, ctx)
    refs = tuple(p.ref for p in selecting)
    isolating = tuple(p.ref for p in selecting if p.isolates(direction))
    dst = pod_ep if direction == INGRESS else peer_ep
    for policy in selecting:
        for rule in policy.deny_rules(direction) or ():
            peer = _first_peer(index, policy, rule, peer_ep, pod, ctx)
            number = _first_port(rule, protocol, port, dst) if peer is not None else None
            if peer is not None and number is not None:
                return CiliumDecision(False, bool(isolating), refs, isolating,
                                      denied_by=CiliumHit(policy.ref, f"{direction}Deny", rule.index, peer, number))
    allows = []
    for policy in selecting:
        for rule in policy.rules(direction) or ():
            peer = _first_peer(index, policy, rule, peer_ep, pod, ctx)
            number = _first_port(rule, protocol, port, dst) if peer is not None else None
            if peer is not None and number is not None:
                allows.append(CiliumHit(policy.ref, direction, rule.index, peer, number))
    if allows:
        return CiliumDecision(True, bool(isolating), refs, isolating, allowed_by=allows[0], allows=tuple(allows))
    missing = _missing_dns(index, selecting, peer_ep, pod, ctx) if direction == "egress" else ()
    return CiliumDecision(not isolating, bool(isolating), refs, isolating, missing_dns=missing)


def side_set(index: CiliumIndex, direction: str, pod_ep: Endpoint, peer_ep: Endpoint,
             ctx: MatchContext) -> ConnSet:
    """Every connection one side allows with ``peer_ep``: (the allows, or everything when not isolated) minus
    the denies."""
    assert pod_ep.pod is not None
    pod = pod_ep.pod
    selecting = index.selecting(pod, direction, ctx)
    dst = pod_ep if direction == INGRESS else peer_ep
    allowed = ConnSet.none() if any(p.isolates(direction) for p in selecting) else ConnSet.all()
    denied = ConnSet.none()
    for policy in selecting:
        for rule in policy.rules(direction) or ():
            if _first_peer(index, policy, rule, peer_ep, pod, ctx) is not None:
                allowed = allowed | rule_connections(rule, dst)
        for rule in policy.deny_rules(direction) or ():
            if _first_peer(index, policy, rule, peer_ep, pod, ctx) is not None:
                denied = denied | rule_connections(rule, dst)
    return allowed - denied if denied else allowed


__all__ = ["BlindFQDN", "CiliumDecision", "CiliumHit", "CiliumIndex", "build", "decide_side", "endpoints_peer_matches",
           "fqdn_addresses", "fqdns_without_dns_rule", "lookup_allowed", "representative_name", "side_set"]
