"""Calico's verdict for one side of a connection: tier by tier, policy by ``order``, rule by rule.

The walk (docs.tigera.io, "Get started with policy tiers"; Felix's rule rendering):

    for each tier, lowest order first (kube-admin 1,000 · user tiers · default 1,000,000 · kube-baseline 10,000,000)
        the tier's policies that select the pod for this direction, by order then name
            none: the tier is skipped (its end-of-tier deny too)
        each such policy's rules in order: the first rule that matches decides
            Allow / Deny: final · Pass: on to the next tier · Log: on to the next rule
        no rule matched: the tier's defaultAction (Deny: the implicit end-of-tier deny; Pass: next tier)
    no tier decided: the profiles (kns.<namespace>) allow

Kubernetes NetworkPolicies sit in the default tier at order 1000 as Allow rules (so an isolated pod
is denied what none allows, by the default tier's end-of-tier deny); ClusterNetworkPolicy's Admin
and Baseline tiers are kube-admin and kube-baseline, decided by ``tiers.decide`` as elsewhere.

Labels as Calico sees them: a pod's own, plus ``projectcalico.org/namespace``,
``projectcalico.org/orchestrator: k8s`` and ``projectcalico.org/serviceaccount``; a namespace's own
plus ``projectcalico.org/name``; a service account's own plus ``projectcalico.org/name``.

Two shapes, as ``tiers.py`` has them: ``decide`` for one protocol and port (which tier, policy and
rule), ``tier_sets`` for every port at once (``(accepted, decided)`` per tier, for ``tiers.combine``).
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cluster import ACCEPT as CLUSTER_ACCEPT
from ..cluster import ADMIN, BASELINE, ClusterPolicy
from ..cluster import DENY as CLUSTER_DENY
from ..cluster import PASS as CLUSTER_PASS
from ..ports import FULL, PROTOCOLS, ConnSet
from ..rules import (
    INGRESS,
    Endpoint,
    MatchContext,
    first_peer,
    first_port,
    peer_matches,
    rule_connections,
    service_account_of,
)
from ..tiers import TierRuleMatch, first_match
from .model import (
    ALLOW,
    BUILTIN_TIERS,
    DENY,
    EPHEMERAL_PORTS,
    KUBE_ADMIN_TIER,
    KUBE_BASELINE_TIER,
    LOG,
    PASS,
    CalicoPolicy,
    CalicoRule,
    CalicoTier,
    EntityRule,
    NetworkSet,
    PortSpec,
)
from .selector import AND as SELECTOR_AND
from .selector import EQ as SELECTOR_EQ

CALICO_NAMESPACE = "projectcalico.org/namespace"
CALICO_ORCHESTRATOR = "projectcalico.org/orchestrator"
CALICO_SERVICE_ACCOUNT = "projectcalico.org/serviceaccount"
CALICO_NAME = "projectcalico.org/name"
NAMESPACE_PREFIX, ACCOUNT_PREFIX = "pcns.", "pcsa."
CLUSTER_TIER_OF = {KUBE_ADMIN_TIER: ADMIN, KUBE_BASELINE_TIER: BASELINE}


@dataclass
class CalicoIndex:
    """The Calico policies in force, by tier in evaluation order, and what their selectors read."""

    tiers: tuple[CalicoTier, ...]
    policies: Mapping[str, tuple[CalicoPolicy, ...]]  # tier name -> its policies, in order
    network_sets: tuple[NetworkSet, ...]
    service_account_labels: Callable[[str, str], Mapping[str, str]]
    cluster_selecting: Callable[[Any, str, str], list[ClusterPolicy]]
    namespace_labels: Callable[[str], Mapping[str, str]] | None = None
    _pod_labels: dict[str, Mapping[str, str]] = field(default_factory=dict)
    _applicable: dict[tuple[str, str, str], list[CalicoPolicy]] = field(default_factory=dict)
    _candidates: dict[tuple[str, str], _Candidates] = field(default_factory=dict)
    _profile_labels: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    def pod_labels(self, pod: Any) -> Mapping[str, str]:
        key = pod.key
        found = self._pod_labels.get(key)
        if found is None:
            namespace = pod.namespace
            account = service_account_of(pod)
            # The profiles' part is the same for every pod of a namespace and account: made once per pair (the
            # 10,000-pod bench asked for it 9,000 times, for 1,000 pairs), merged in the same order as before.
            profiles = self._profile_labels.get((namespace, account))
            if profiles is None:
                profiles = self._profile_labels[(namespace, account)] = self._profiles(namespace, account)
            found = self._pod_labels[key] = {
                **profiles, **pod.labels, CALICO_NAMESPACE: namespace, CALICO_ORCHESTRATOR: "k8s",
                CALICO_SERVICE_ACCOUNT: account}
        return found

    def _profiles(self, namespace: str, account: str) -> dict[str, str]:
        """The profiles' labels: kns.<namespace> applies the namespace's as pcns.<key>, ksa.<ns>.<account> the
        service account's as pcsa.<key> (libcalico-go's conversion constants), each with its name."""
        labels = self.namespace_labels(namespace) if self.namespace_labels is not None else {}
        return {**{f"{NAMESPACE_PREFIX}{k}": v for k, v in labels.items()},
                f"{NAMESPACE_PREFIX}{CALICO_NAME}": namespace,
                **{f"{ACCOUNT_PREFIX}{k}": v for k, v in self.service_account_labels(namespace, account).items()}}

    def policy_count(self) -> int:
        return sum(len(p) for p in self.policies.values())


def build(policies: Sequence[CalicoPolicy], tiers: Sequence[CalicoTier], network_sets: Sequence[NetworkSet],
          service_account_labels: Callable[[str, str], Mapping[str, str]],
          cluster_selecting: Callable[[Any, str, str], list[ClusterPolicy]],
          namespace_labels: Callable[[str], Mapping[str, str]] | None = None) -> CalicoIndex:
    by_name = {t.name: t for t in BUILTIN_TIERS}
    for tier in tiers:
        by_name[tier.name] = tier
    ordered = tuple(sorted(by_name.values(), key=CalicoTier.sort_key))
    grouped: dict[str, list[CalicoPolicy]] = {}
    for policy in policies:
        grouped.setdefault(policy.tier, []).append(policy)
    return CalicoIndex(ordered, {k: tuple(sorted(v, key=CalicoPolicy.sort_key)) for k, v in grouped.items()},
                       tuple(network_sets), service_account_labels, cluster_selecting, namespace_labels)


# --- which policies select a pod ----------------------------------------------------------------------------------


def selects(index: CalicoIndex, policy: CalicoPolicy, pod: Any, direction: str, ctx: MatchContext) -> bool:
    """Does ``policy`` apply to ``pod`` (a pod on the pod network) for ``direction``?"""
    if not policy.applies(direction):
        return False
    if policy.k8s is not None:
        return policy.namespace == pod.namespace and policy.k8s.selector.matches(pod.labels)
    if policy.namespace and policy.namespace != pod.namespace:
        return False
    if policy.namespace_selector is not None and not policy.namespace_selector.matches(
            _namespace_labels(ctx, pod.namespace)):
        return False
    if policy.service_account_selector is not None:
        account = service_account_of(pod)
        if not policy.service_account_selector.matches(index.service_account_labels(pod.namespace, account)):
            return False
    assert policy.selector is not None
    return policy.selector.matches(index.pod_labels(pod))


def _namespace_labels(ctx: MatchContext, namespace: str) -> Mapping[str, str]:
    return {**ctx.namespace_labels(namespace), CALICO_NAME: namespace}


@dataclass
class _Candidates:
    """A tier's policies for one direction, bucketed by what a pod must have to be selected, so a pod is tested
    against the few that could select it rather than all of them (1,000 policies x 10,000 pods otherwise):
    a namespaced policy by its namespace, a global one by a ``label == 'value'`` its selector requires (a
    top-level term, or one of a top-level ``&&``), the rest tested for every pod. Positions keep the order."""

    anywhere: list[tuple[int, CalicoPolicy]]
    by_namespace: dict[str, list[tuple[int, CalicoPolicy]]]
    by_label: dict[tuple[str, str], list[tuple[int, CalicoPolicy]]]

    def of(self, namespace: str, labels: Mapping[str, str]) -> list[CalicoPolicy]:
        found = [*self.anywhere, *self.by_namespace.get(namespace, ())]
        for item in labels.items():
            found += self.by_label.get(item, ())
        found.sort(key=lambda pair: pair[0])
        return [p for _, p in found]


def _required_label(selector: Any) -> tuple[str, str] | None:
    if selector is None:
        return None
    terms = selector.operands if selector.op == SELECTOR_AND else (selector,)
    for term in terms:
        if term.op == SELECTOR_EQ and term.label:
            return (term.label, term.values[0])
    return None


def _candidates(index: CalicoIndex, tier: str, direction: str) -> _Candidates:
    found = index._candidates.get((tier, direction))
    if found is None:
        found = _Candidates([], {}, {})
        for position, policy in enumerate(index.policies.get(tier, ())):
            if not policy.applies(direction):
                continue
            entry = (position, policy)
            required = _required_label(policy.selector) if policy.k8s is None else None
            if policy.k8s is not None or policy.namespace:
                found.by_namespace.setdefault(policy.namespace, []).append(entry)
            elif required is not None:
                found.by_label.setdefault(required, []).append(entry)
            else:
                found.anywhere.append(entry)
        index._candidates[(tier, direction)] = found
    return found


def applicable(index: CalicoIndex, tier: CalicoTier, pod: Any, direction: str, ctx: MatchContext
               ) -> list[CalicoPolicy]:
    """The tier's policies that select ``pod`` for ``direction``, in order (asked once per pod: the matrix asks
    for every pair)."""
    key = (tier.name, pod.key, direction)
    found = index._applicable.get(key)
    if found is None:
        candidates = _candidates(index, tier.name, direction).of(pod.namespace, index.pod_labels(pod))
        found = index._applicable[key] = [p for p in candidates if selects(index, p, pod, direction, ctx)]
    return found


# --- matching a rule ------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=65536)
def _address(ip: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    # Parsed once per address: a matrix asks for the same pods' addresses for every pair.
    return ipaddress.ip_address(ip)


def _in_nets(ip: str, nets: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> bool:
    if not ip:
        return False
    address = _address(ip)
    return any(address.version == n.version and address in n for n in nets)


def _identity_matches(index: CalicoIndex, policy: CalicoPolicy, entity: EntityRule, ep: Endpoint,
                      ctx: MatchContext) -> bool:
    """The identity part of an EntityRule (selector, notSelector, namespaceSelector, serviceAccounts) against
    ``ep``: a pod by its labels, an address by the network sets that hold it."""
    scope_global = entity.namespace_selector is not None and entity.namespace_selector.canonical() == "global()"
    if ep.kind == "pod" and ep.pod is not None:
        pod = ep.pod
        if entity.selects_endpoints:
            if scope_global:
                return False  # global() names the non-namespaced: network sets, host endpoints
            if entity.namespace_selector is not None:
                if not entity.namespace_selector.matches(_namespace_labels(ctx, pod.namespace)):
                    return False
            elif policy.namespace and pod.namespace != policy.namespace:
                return False
            labels = index.pod_labels(pod)
            if entity.selector is not None and not entity.selector.matches(labels):
                return False
            account = service_account_of(pod)
            if entity.service_account_names is not None and account not in entity.service_account_names:
                return False
            if entity.service_account_selector is not None and not entity.service_account_selector.matches(
                    index.service_account_labels(pod.namespace, account)):
                return False
        excluded = entity.not_selector is not None and _pod_in_scope(policy, entity, pod, ctx) \
            and entity.not_selector.matches(index.pod_labels(pod))
        return not excluded
    # An address (a node, or outside the cluster): only network sets carry labels for it.
    sets = [s for s in index.network_sets if _in_nets(ep.ip, s.nets) and _set_in_scope(policy, entity, s, ctx)]
    if entity.service_account_names is not None or entity.service_account_selector is not None:
        return False
    if entity.selector is not None and not any(entity.selector.matches(s.labels) for s in sets):
        return False
    if entity.selector is None and entity.namespace_selector is not None and not sets:
        return False
    return not (entity.not_selector is not None and any(entity.not_selector.matches(s.labels) for s in sets))


def _pod_in_scope(policy: CalicoPolicy, entity: EntityRule, pod: Any, ctx: MatchContext) -> bool:
    if entity.namespace_selector is not None:
        return entity.namespace_selector.matches(_namespace_labels(ctx, pod.namespace))
    return not policy.namespace or pod.namespace == policy.namespace


def _set_in_scope(policy: CalicoPolicy, entity: EntityRule, network_set: NetworkSet, ctx: MatchContext) -> bool:
    """Which network sets a rule's selector can see: a namespaced policy its namespace's NetworkSets; a global one
    every GlobalNetworkSet (and, with a namespaceSelector, the NetworkSets of the namespaces it picks)."""
    ns_selector = entity.namespace_selector
    if ns_selector is not None:
        if ns_selector.canonical() == "global()":
            return not network_set.namespace
        return bool(network_set.namespace) and ns_selector.matches(_namespace_labels(ctx, network_set.namespace))
    if policy.namespace:
        return network_set.namespace == policy.namespace
    return not network_set.namespace


def _addresses_match(entity: EntityRule, ep: Endpoint) -> bool:
    if entity.nets is not None and not _in_nets(ep.ip, entity.nets):
        return False
    return not (entity.not_nets and _in_nets(ep.ip, entity.not_nets))


def entity_matches(index: CalicoIndex, policy: CalicoPolicy, entity: EntityRule, ep: Endpoint,
                   ctx: MatchContext) -> bool:
    """Everything of a source or destination but its ports."""
    return _addresses_match(entity, ep) and _identity_matches(index, policy, entity, ep, ctx)


def _protocols(rule: CalicoRule) -> ConnSet:
    """The connections a rule's ``protocol``/``notProtocol`` admit (any other protocol is ConnSet's ``other``)."""

    def one(name: str) -> ConnSet:
        return ConnSet.of({name: FULL}) if name in PROTOCOLS else ConnSet(other=True)

    out = ConnSet.all() if rule.protocol is None else one(rule.protocol)
    if rule.not_protocol is not None:
        out = out - one(rule.not_protocol)
    return out


def _port_set(specs: Sequence[PortSpec], protocols: Sequence[str], dst: Endpoint) -> ConnSet:
    out: dict[str, list[tuple[int, int]]] = {}
    for protocol in protocols:
        for spec in specs:
            if spec.name:
                if dst.kind == "pod" and dst.pod is not None:
                    number = dst.pod.named_port(spec.name, protocol)
                    if number is not None:
                        out.setdefault(protocol, []).append((number, number))
            elif spec.hi >= 1:
                out.setdefault(protocol, []).append((max(spec.lo, 1), spec.hi))
    return ConnSet.of(out)


def covers_ephemeral(specs: Sequence[PortSpec]) -> bool:
    """Whether ``specs`` take every ephemeral port (a client's source port is one of them, which one unknown)."""
    lo, hi = EPHEMERAL_PORTS
    return any(not s.name and s.lo <= lo and s.hi >= hi for s in specs)


def misses_clients(rule: CalicoRule) -> bool:
    """A rule whose source ``ports`` do not take every ephemeral port, or whose ``notPorts`` take one, matches no
    client connection: it never matches (here and in the matrix's ``CalicoTier``)."""
    if rule.source.ports is not None and not covers_ephemeral(rule.source.ports):
        return True
    return any(not s.name and s.lo <= EPHEMERAL_PORTS[1] and s.hi >= EPHEMERAL_PORTS[0]
               for s in rule.source.not_ports)


def rule_set(index: CalicoIndex, policy: CalicoPolicy, rule: CalicoRule, src: Endpoint, dst: Endpoint,
             ctx: MatchContext) -> ConnSet:
    """Every connection from ``src`` to ``dst`` the rule matches (none when its source or destination does not)."""
    if rule.ip_version is not None:
        address = dst.ip or src.ip
        if address and ipaddress.ip_address(address).version != rule.ip_version:
            return ConnSet.none()
    if not entity_matches(index, policy, rule.source, src, ctx) or \
            not entity_matches(index, policy, rule.destination, dst, ctx):
        return ConnSet.none()
    out = _protocols(rule)
    protocols = [p for p in PROTOCOLS if rule.protocol == p]
    # A client's source port is one of the ephemeral ports: a source port rule matches only if it takes them all.
    if misses_clients(rule):
        return ConnSet.none()
    if rule.destination.ports is not None:
        out = out & _port_set(rule.destination.ports, protocols, dst)
    if rule.destination.not_ports:
        out = out - _port_set(rule.destination.not_ports, protocols, dst)
    return out


# --- one side, one port ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CalicoMatch:
    """The rule that matched, or the end of a tier: where Calico's walk stopped, in words and as data."""

    tier: str
    kind: str
    policy: str
    order: float | None
    direction: str
    rule: int  # -1: no rule (the end-of-tier default action)
    action: str  # Allow | Deny | Pass | Log (Kubernetes NetworkPolicy rules are Allow)

    def text(self) -> str:
        order = "" if self.order is None else f", order {self.order:g}"
        if self.rule < 0:
            return f"the end of tier `{self.tier}`"
        return f"{self.kind} `{self.policy}` {self.direction}[{self.rule}] ({self.action}; tier `{self.tier}`{order})"

    def as_tier_match(self) -> TierRuleMatch:
        order = None if self.order is None else int(self.order) if self.order.is_integer() else None
        return TierRuleMatch(self.kind, self.policy, self.tier, order, self.direction, max(self.rule, 0), "",
                             self.action, -1, -1)

    def to_dict(self) -> dict[str, Any]:
        return {"tier": self.tier, "kind": self.kind, "policy": self.policy, "order": self.order,
                "direction": self.direction, "rule": None if self.rule < 0 else self.rule, "action": self.action}


@dataclass(frozen=True, slots=True)
class CalicoDecision:
    allowed: bool
    tier: str  # the tier that decided; "" when no tier did (the profile allowed)
    match: CalicoMatch | None  # None: the profile; a match with rule -1: the end-of-tier default action
    cluster: TierRuleMatch | None  # a ClusterNetworkPolicy rule (kube-admin, kube-baseline) that decided
    passed: tuple[str, ...]  # the tiers passed on the way, each with why
    selecting: tuple[tuple[str, str], ...]  # (tier, policy ref) of every policy selecting the pod on the way

    def reason(self, pod: str, direction: str) -> str:
        head = "; ".join(self.passed)
        head = f"{head}; " if head else ""
        if self.cluster is not None:
            verb = "allowed" if self.allowed else "denied"
            return f"{head}{verb} by {self.cluster.text()} (Calico tier `{self.tier}`)"
        if self.match is None:
            if not self.selecting:
                return (f"no Calico tier has a policy selecting {pod} for {direction}: the namespace's profile "
                        "allows it")
            return f"{head}no tier decided: the namespace's profile allows it"
        if self.match.rule < 0:
            names = [ref for tier, ref in self.selecting if tier == self.tier]
            verb = "selects" if len(names) == 1 else "select"
            return (f"{head}denied at the end of tier `{self.tier}`: {', '.join(names)} {verb} {pod} for {direction} "
                    "and no rule matched (Calico's implicit end-of-tier deny)")
        return f"{head}{'allowed' if self.allowed else 'denied'} by {self.match.text()}"


def _k8s_match(policy: CalicoPolicy, direction: str, peer_ep: Endpoint, dst: Endpoint, protocol: str, port: int,
               ctx: MatchContext) -> int | None:
    for rule in policy.k8s.rules(direction) or ():
        if first_peer(policy.k8s, rule, peer_ep, ctx) is not None and \
                first_port(rule, protocol, port, dst) is not None:
            return int(rule.index)
    return None


def _members(index: CalicoIndex, tier: CalicoTier, pod: Any, direction: str, ctx: MatchContext
             ) -> list[CalicoPolicy | ClusterPolicy]:
    """What of ``tier`` selects the pod, in Calico's order: in kube-admin and kube-baseline the ClusterNetworkPolicies
    too, their priority taken as the order (a BaselineAdminNetworkPolicy as 1000), beside any Calico policy placed
    there (docs.tigera.io, "Get started with policy tiers")."""
    calico_policies = applicable(index, tier, pod, direction, ctx)
    cluster = index.cluster_selecting(pod, CLUSTER_TIER_OF[tier.name], direction) \
        if tier.name in CLUSTER_TIER_OF else []
    if not cluster:
        return list(calico_policies)
    return sorted([*cluster, *calico_policies], key=member_order)


def member_order(p: CalicoPolicy | ClusterPolicy) -> tuple[bool, float, str]:
    """A tier member's place in Calico's order: a ClusterNetworkPolicy's priority is its order (here and in the
    matrix's ``CalicoTier``)."""
    if isinstance(p, CalicoPolicy):
        return p.sort_key()
    return (False, 1000.0 if p.priority is None else float(p.priority), p.name)


def _ref(p: CalicoPolicy | ClusterPolicy) -> str:
    return p.ref if isinstance(p, CalicoPolicy) else f"{p.kind} {p.name}"


def decide_side(index: CalicoIndex, direction: str, pod_ep: Endpoint, peer_ep: Endpoint, protocol: str, port: int,
                ctx: MatchContext) -> CalicoDecision:
    """Calico's walk for ``pod_ep`` (a pod on the pod network) on one protocol and port."""
    pod = pod_ep.pod
    assert pod is not None
    src, dst = (peer_ep, pod_ep) if direction == INGRESS else (pod_ep, peer_ep)
    passed: list[str] = []
    selecting: list[tuple[str, str]] = []
    for tier in index.tiers:
        members = _members(index, tier, pod, direction, ctx)
        if not members:
            continue
        selecting += [(tier.name, _ref(p)) for p in members]
        stop: CalicoMatch | None = None
        cluster_stop: TierRuleMatch | None = None
        for policy in members:
            if isinstance(policy, ClusterPolicy):
                cluster_stop = first_match(policy, direction, peer_ep, dst, protocol, port, ctx)
                if cluster_stop is not None:
                    break
                continue
            if policy.k8s is not None:
                hit = _k8s_match(policy, direction, peer_ep, dst, protocol, port, ctx)
                if hit is not None:
                    stop = CalicoMatch(tier.name, "NetworkPolicy", policy.display_name, policy.order, direction, hit,
                                       ALLOW)
                    break
                continue
            for rule in policy.rules(direction):
                if rule.action == LOG or not rule_set(index, policy, rule, src, dst, ctx).contains(protocol, port):
                    continue
                stop = CalicoMatch(tier.name, policy.display_kind, policy.display_name, policy.order, direction,
                                   rule.index, rule.action)
                break
            if stop is not None:
                break
        if cluster_stop is not None:
            if cluster_stop.action in (CLUSTER_ACCEPT, CLUSTER_DENY):
                return CalicoDecision(cluster_stop.action == CLUSTER_ACCEPT, tier.name, None, cluster_stop,
                                      tuple(passed), tuple(selecting))
            passed.append(f"passed by {cluster_stop.text()}")
            continue
        if stop is not None and stop.action == PASS:
            passed.append(f"passed by {stop.text()}")
            continue
        if stop is not None:
            return CalicoDecision(stop.action == ALLOW, tier.name, stop, None, tuple(passed), tuple(selecting))
        if tier.default_action == DENY:
            end = CalicoMatch(tier.name, "Tier", tier.name, tier.order, direction, -1, DENY)
            return CalicoDecision(False, tier.name, end, None, tuple(passed), tuple(selecting))
        passed.append(f"tier `{tier.name}` passed it on (defaultAction: Pass)")
    return CalicoDecision(True, "", None, None, tuple(passed), tuple(selecting))


# --- one side, every port ---------------------------------------------------------------------------------------------

CLUSTER_ACTION = {CLUSTER_ACCEPT: ALLOW, CLUSTER_DENY: DENY, CLUSTER_PASS: PASS}


def side_sets(index: CalicoIndex, direction: str, pod_ep: Endpoint, peer_ep: Endpoint, ctx: MatchContext
              ) -> list[tuple[ConnSet, ConnSet]]:
    """``(accepted, decided)`` per tier that has something to say, in order, for ``tiers.combine``."""
    pod = pod_ep.pod
    assert pod is not None
    src, dst = (peer_ep, pod_ep) if direction == INGRESS else (pod_ep, peer_ep)
    out = []
    for tier in index.tiers:
        members = _members(index, tier, pod, direction, ctx)
        if not members:
            continue
        taken = accepted = decided = ConnSet.none()
        for policy in members:
            rules: list[tuple[str, ConnSet]]
            if isinstance(policy, ClusterPolicy):
                rules = [(CLUSTER_ACTION[rule.action], rule_connections(rule, dst)) for rule in policy.rules(direction)
                         if any(peer_matches(None, peer, peer_ep, ctx) for peer in rule.peers)]
            elif policy.k8s is not None:
                rules = [(ALLOW, rule_connections(rule, dst)) for rule in policy.k8s.rules(direction) or ()
                         if first_peer(policy.k8s, rule, peer_ep, ctx) is not None]
            else:
                rules = [(rule.action, rule_set(index, policy, rule, src, dst, ctx))
                         for rule in policy.rules(direction) if rule.action != LOG]
            for action, matched in rules:
                # The set algebra is most of a matrix's time: a rule that matches nothing, or the first that
                # matches (nothing taken yet), costs no complement.
                if matched.is_empty:
                    continue
                hit = matched if taken.is_empty else matched - taken
                if hit.is_empty:
                    continue
                if action == ALLOW:
                    accepted = accepted | hit
                if action in (ALLOW, DENY):
                    decided = decided | hit
                taken = hit if taken.is_empty else taken | hit
        if tier.default_action == DENY:
            decided = decided | ~taken
        out.append((accepted, decided))
    return out


__all__ = ["CalicoDecision", "CalicoIndex", "CalicoMatch", "build", "decide_side", "entity_matches", "rule_set",
           "selects", "side_sets"]
