"""Antrea's verdict for one side of a connection: tier by tier, policy by priority, rule by rule.

The walk (antrea-io/antrea docs/antrea-network-policy.md, "Antrea-native Policy ordering based on
priorities"; pkg/apis/crd/v1beta1/types.go for Pass):

    for each tier but Baseline, lowest priority first (emergency 50 · securityops 100 · networkops 150 ·
    platform 200 · custom tiers · application 250)
        its rules by (policy priority, place in the policy): equal-priority policies interleave
            each rule that applies to the pod (policy or rule appliedTo): the first that matches decides
                Allow / Drop / Reject: final · Pass: straight to Kubernetes NetworkPolicy (the remaining tiers
                are skipped)
    Kubernetes NetworkPolicy (and the network-policy-api tiers the engine already walks): an isolated pod is
    decided there
    the baseline tier (253), the same way (a Pass there decides nothing)
    nothing decided: allowed (Antrea-native policies never isolate a pod)

Two shapes, as ``calico/evaluate.py`` has them: ``decide`` for one protocol and port (which tier, policy
and rule), ``side_sets`` for every port at once (``(accepted, decided)`` per tier, for ``tiers.combine``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ports import ConnSet
from ..rules import INGRESS, Endpoint, MatchContext, first_port, rule_connections, service_account_of
from .model import (
    ACNP,
    ALLOW,
    PASS,
    REJECT,
    AntreaGroup,
    AntreaPolicy,
    AntreaRule,
    AntreaTier,
    Selection,
    fqdn_matches,
)


@dataclass
class AntreaIndex:
    """The Antrea-native policies in force, by tier in evaluation order, and the groups they name."""

    tiers: tuple[AntreaTier, ...]
    policies: Mapping[str, tuple[AntreaPolicy, ...]]  # tier name -> its policies, in order
    groups: Mapping[tuple[str, str], AntreaGroup]  # (namespace or "", name)
    # The names the cluster's DNS answers outside the cluster (the cluster config's ``outside`` hosts) and their
    # addresses: an FQDN peer matches the addresses of the names it selects, as Antrea learns them from the
    # pod's DNS answers (docs/antrea-network-policy.md, "FQDN based filtering").
    outside: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    _applies: dict[tuple[str, str, int, str, str], bool] = field(default_factory=dict)
    _ordered: dict[tuple[str, str], list[tuple[AntreaPolicy, AntreaRule]]] = field(default_factory=dict)
    _applicable: dict[tuple[str, str, str], list[tuple[AntreaPolicy, AntreaRule]]] = field(default_factory=dict)

    def policy_count(self) -> int:
        return sum(len(p) for p in self.policies.values())

    def tier_priority(self, name: str) -> float | None:
        return next((t.priority for t in self.tiers if t.name == name), None)


def build(policies: Sequence[AntreaPolicy], tiers: Sequence[AntreaTier], groups: Sequence[AntreaGroup],
          outside: Mapping[str, tuple[str, ...]] | None = None) -> AntreaIndex:
    ordered = tuple(sorted(tiers, key=lambda t: (t.priority, t.name)))
    grouped: dict[str, list[AntreaPolicy]] = {}
    for policy in policies:
        grouped.setdefault(policy.tier, []).append(policy)
    return AntreaIndex(ordered, {k: tuple(sorted(v, key=AntreaPolicy.sort_key)) for k, v in grouped.items()},
                       {(g.namespace, g.name): g for g in groups}, dict(outside or {}))


# --- selections -------------------------------------------------------------------------------------------------


def _group_matches(index: AntreaIndex, group: AntreaGroup, ep: Endpoint, ctx: MatchContext,
                   seen: frozenset[str] = frozenset(), *, addresses: bool = True) -> bool:
    """``addresses``: do the group's ipBlocks count (a peer), or not (an appliedTo: docs/antrea-network-policy.md, a
    ClusterGroup with ipBlocks referenced in appliedTo is ignored)?"""
    if addresses and any(b.contains(ep.ip) for b in group.ip_blocks if ep.ip):
        return True
    if group.node_selector is not None:
        return addresses and _node_matches(group.node_selector, ep, ctx)
    for child in group.children:
        found = index.groups.get((group.namespace, child))
        if found is not None and child not in seen and \
                _group_matches(index, found, ep, ctx, seen | {child}, addresses=addresses):
            return True
    if group.pod_selector is None and group.namespace_selector is None:
        return False
    if ep.kind != "pod" or ep.pod is None:
        return False
    pod = ep.pod
    if group.namespace_selector is not None:
        if not group.namespace_selector.matches(ctx.namespace_labels(pod.namespace)):
            return False
    elif (group.members_namespace or group.namespace) and \
            pod.namespace != (group.members_namespace or group.namespace):
        return False
    return group.pod_selector is None or group.pod_selector.matches(pod.labels)


def _node_matches(selector: Any, ep: Endpoint, ctx: MatchContext) -> bool:
    """A node peer: the node's address (a hostNetwork pod's traffic is its node's), by the node's labels."""
    return ep.kind == "node" and bool(ep.node) and ctx.node_labels is not None and \
        selector.matches(ctx.node_labels(ep.node))


def selection_matches(index: AntreaIndex, policy: AntreaPolicy, sel: Selection, ep: Endpoint, ctx: MatchContext,
                      subject_namespace: str = "", *, peer: bool = True) -> bool:
    """Does ``sel`` (a peer, or with ``peer=False`` an appliedTo entry) take ``ep``? ``subject_namespace``: the
    namespace of the pod the rule applies to, which ``namespaces: {match: Self}`` compares with."""
    if sel.group:
        group = index.groups.get((policy.namespace, sel.group))
        return group is not None and _group_matches(index, group, ep, ctx, frozenset({sel.group}), addresses=peer)
    if sel.ip_block is not None:
        return bool(ep.ip) and sel.ip_block.contains(ep.ip)
    if sel.fqdn:
        # Outside names only: a Service's name resolves to its cluster IP, rewritten before policy (the doc's
        # "do not work for Service DNS names"); headless Services' names are not modelled.
        return ep.kind == "external" and any(ep.ip in addresses for name, addresses in index.outside.items()
                                             if fqdn_matches(sel.fqdn, name))
    if sel.service is not None:
        return False  # a NodePort Service's external traffic (read.py names it as not simulated): never a pod
    if sel.node_selector is not None:
        # An appliedTo of nodes is a Node NetworkPolicy (host traffic, not simulated): it applies to no pod.
        return peer and _node_matches(sel.node_selector, ep, ctx)
    if ep.kind != "pod" or ep.pod is None:
        return False  # selectors take pods only; a hostNetwork pod's traffic is its node's
    pod = ep.pod
    if sel.service_account is not None:  # the pods of that namespace running as it (crd_utils.go)
        namespace, name = sel.service_account
        return pod.namespace == namespace and service_account_of(pod) == name
    if sel.same_namespace:
        if pod.namespace != subject_namespace:
            return False
    elif sel.namespace_selector is not None:
        if not sel.namespace_selector.matches(ctx.namespace_labels(pod.namespace)):
            return False
    elif policy.kind != ACNP and pod.namespace != policy.namespace:
        return False  # an Antrea NetworkPolicy's podSelector alone: its own namespace
    return sel.pod_selector is None or sel.pod_selector.matches(pod.labels)


def applies(index: AntreaIndex, policy: AntreaPolicy, rule: AntreaRule, direction: str, pod: Any,
            ctx: MatchContext) -> bool:
    """Does ``rule`` of ``policy`` apply to ``pod`` (its own appliedTo, else the policy's)?"""
    key = (policy.ref, pod.key, rule.index, direction, "")
    found = index._applies.get(key)
    if found is None:
        targets = rule.applied_to if rule.applied_to is not None else policy.applied_to or ()
        ep = Endpoint("pod", pod.pod_ip, pod, pod.node_name)
        found = index._applies[key] = any(selection_matches(index, policy, t, ep, ctx, peer=False) for t in targets)
    return found


def selects(index: AntreaIndex, policy: AntreaPolicy, pod: Any, direction: str, ctx: MatchContext) -> bool:
    return any(applies(index, policy, r, direction, pod, ctx) for r in policy.rules(direction))


def _peer_matches(index: AntreaIndex, policy: AntreaPolicy, rule: AntreaRule, peer_ep: Endpoint, pod: Any,
                  ctx: MatchContext) -> bool:
    if rule.to_services:  # never with `to` (the webhook refuses both): the Service the packet was addressed to
        return peer_ep.service in rule.to_services
    if rule.peers is None:
        return True
    return any(selection_matches(index, policy, p, peer_ep, ctx, pod.namespace) for p in rule.peers)


# --- one side, one port -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AntreaMatch:
    """The rule that decided (or passed): where Antrea's walk stopped, in words and as data."""

    tier: str
    tier_priority: float
    kind: str
    policy: str
    priority: float
    direction: str
    rule: int
    rule_name: str
    action: str  # Allow | Drop | Reject | Pass

    def text(self) -> str:
        name = f" `{self.rule_name}`" if self.rule_name else ""
        return (f"{self.kind} `{self.policy}` {self.direction}[{self.rule}]{name} ({self.action}; Antrea tier "
                f"`{self.tier}` priority {self.tier_priority:g}, policy priority {self.priority:g})")

    def to_dict(self) -> dict[str, Any]:
        return {"tier": self.tier, "tierPriority": self.tier_priority, "kind": self.kind, "policy": self.policy,
                "priority": self.priority, "direction": self.direction, "rule": self.rule,
                "ruleName": self.rule_name, "action": self.action}


def ordered_rules(index: AntreaIndex, tier: AntreaTier, direction: str) -> list[tuple[AntreaPolicy, AntreaRule]]:
    """A tier's rules in Antrea's order: by policy priority, then by the rule's place in its policy, so the rules of
    policies of equal priority interleave (antrea-io/antrea test/e2e/antreapolicy_test.go, testACNPRulePriority:
    rule 0 of either policy before rule 1 of either); ties then ClusterNetworkPolicy first, then by name."""
    key = (tier.name, direction)
    found = index._ordered.get(key)
    if found is None:
        pairs = [(p, r) for p in index.policies.get(tier.name, ()) for r in p.rules(direction)]
        found = index._ordered[key] = sorted(pairs, key=lambda pr: (pr[0].priority, pr[1].index,
                                                                    0 if pr[0].kind == ACNP else 1,
                                                                    pr[0].display_name))
    return found


def applicable_rules(index: AntreaIndex, tier: AntreaTier, direction: str, pod: Any, ctx: MatchContext
                     ) -> list[tuple[AntreaPolicy, AntreaRule]]:
    """The tier's rules that apply to ``pod``, in Antrea's order (asked once per pod: the matrix asks every pair)."""
    key = (tier.name, direction, pod.key)
    found = index._applicable.get(key)
    if found is None:
        found = index._applicable[key] = [(p, r) for p, r in ordered_rules(index, tier, direction)
                                          if applies(index, p, r, direction, pod, ctx)]
    return found


def _walk(index: AntreaIndex, tiers: Sequence[AntreaTier], direction: str, pod_ep: Endpoint, peer_ep: Endpoint,
          protocol: str, port: int, ctx: MatchContext, selecting: list[str]) -> AntreaMatch | None:
    pod = pod_ep.pod
    assert pod is not None
    dst = pod_ep if direction == INGRESS else peer_ep
    for tier in tiers:
        for policy, rule in applicable_rules(index, tier, direction, pod, ctx):
            selecting.append(policy.ref)
            if _peer_matches(index, policy, rule, peer_ep, pod, ctx) and \
                    first_port(rule, protocol, port, dst) is not None:
                return AntreaMatch(tier.name, tier.priority, policy.display_kind, policy.display_name,
                                   policy.priority, direction, rule.index, rule.name, rule.action)
    return None


@dataclass(frozen=True, slots=True)
class AntreaDecision:
    """One side before Kubernetes NetworkPolicy (``baseline=False``) or after it (``baseline=True``)."""

    match: AntreaMatch | None  # the rule that matched first (a Pass rule included)
    selecting: tuple[str, ...]  # refs of the Antrea policies with a rule applying to the pod on the way

    @property
    def decided(self) -> bool:
        return self.match is not None and self.match.action != PASS

    @property
    def allowed(self) -> bool:
        return self.match is not None and self.match.action == ALLOW

    @property
    def rejected(self) -> bool:
        return self.match is not None and self.match.action == REJECT

    def text(self) -> str:
        assert self.match is not None
        if self.match.action == PASS:
            return f"passed to Kubernetes NetworkPolicy by {self.match.text()}"
        verb = {"Allow": "allowed", "Drop": "dropped", "Reject": "rejected (the client is refused)"}[self.match.action]
        return f"{verb} by {self.match.text()}"


def decide(index: AntreaIndex, direction: str, pod_ep: Endpoint, peer_ep: Endpoint, protocol: str, port: int,
           ctx: MatchContext, *, baseline: bool) -> AntreaDecision:
    """The tiers before Kubernetes NetworkPolicy, or (``baseline``) the baseline tier after it."""
    tiers = [t for t in index.tiers if t.baseline == baseline]
    selecting: list[str] = []
    match = _walk(index, tiers, direction, pod_ep, peer_ep, protocol, port, ctx, selecting)
    return AntreaDecision(match, tuple(dict.fromkeys(selecting)))


# --- one side, every port -----------------------------------------------------------------------------------------


def side_sets(index: AntreaIndex, direction: str, pod_ep: Endpoint, peer_ep: Endpoint, ctx: MatchContext, *,
              baseline: bool) -> tuple[list[tuple[ConnSet, ConnSet]], ConnSet]:
    """``(accepted, decided)`` per tier, for ``tiers.combine``, and (before NetworkPolicy) what a Pass rule sent
    on to NetworkPolicy: a later tier must not decide that, so each tier's sets leave out what was passed before."""
    pod = pod_ep.pod
    assert pod is not None
    dst = pod_ep if direction == INGRESS else peer_ep
    out = []
    passed = ConnSet.none()
    for tier in (t for t in index.tiers if t.baseline == baseline):
        taken = accepted = decided = tier_passed = ConnSet.none()
        for policy, rule in applicable_rules(index, tier, direction, pod, ctx):
            if not _peer_matches(index, policy, rule, peer_ep, pod, ctx):
                continue
            hit = rule_connections(rule, dst) - taken
            if not hit:
                continue
            taken = taken | hit
            if rule.action == PASS:
                tier_passed = tier_passed | hit
                continue
            decided = decided | hit
            if rule.action == ALLOW:
                accepted = accepted | hit
        if not taken:
            continue
        out.append((accepted - passed, decided - passed))
        passed = passed | tier_passed
    return out, passed


def service_rule_notes(index: AntreaIndex, pod: Any, ctx: MatchContext) -> list[str]:
    """The toServices rules that apply to ``pod``'s egress, for an answer about a connection to an endpoint's own
    address, which they never match (they match what is addressed to the Service's cluster IP)."""
    out = []
    for tier in index.tiers:
        for policy, rule in applicable_rules(index, tier, "egress", pod, ctx):
            if rule.to_services:
                out.append(f"{policy.ref} egress[{rule.index}] ({rule.action}) matches what {pod.key} addresses to "
                           f"Service {', '.join(rule.to_services)} by its cluster IP, not this connection to an "
                           "endpoint's own address: `knetsim trace` to the Service meets it")
    return out


__all__ = ["AntreaDecision", "AntreaIndex", "AntreaMatch", "applies", "build", "decide", "ordered_rules",
           "selection_matches", "selects", "service_rule_notes", "side_sets"]
