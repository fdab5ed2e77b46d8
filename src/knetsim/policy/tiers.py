"""The tiers around NetworkPolicy, for one side of one connection.

The order is the ClusterNetworkPolicy API's (``spec.tier``), written once, as ``ORDER``: the
**Admin** tier, then the **NetworkPolicy** tier, then the **Baseline** tier, then the default
(allow). Everything that decides a side iterates that list (``engine`` for one port and for every
port, ``matrix`` over classes), each tier answering Accept, Deny or Next (kube-network-policies'
evaluator array, ``VerdictAccept``/``VerdictDeny``/``VerdictNext``); the first answer that is not
Next wins and the default lives in the one loop that runs them (``run``). It holds on each
side: the egress of the source and the ingress of the destination are decided separately and
a connection needs both. Within a ClusterNetworkPolicy tier the policies that select the pod
are taken by priority (lower first; equal priorities by name, as kube-network-policies and
Calico order them), their rules in the order written, and the first rule whose peer and port
match decides: Accept and Deny are final, Pass skips the rest of the tier. A tier where no
rule matches passes the connection on. NetworkPolicy decides for the pods it isolates (allow
what some rule allows, deny the rest) and passes the others on, so the Baseline tier only
ever sees pods no NetworkPolicy selects in that direction (kube-network-policies'
``StandardNetworkPolicy`` returns Next for them).

Two shapes of the same answer:

* ``decide`` — for one protocol and port: which rule of the tier matched, if any
  (``TierRuleMatch``), and every equal-priority policy that would have decided otherwise;
* ``tier_sets`` — for every protocol and port at once (``ConnSet``s): what the tier accepts
  and what it decides, the algebra the matrix does over classes and ``direction_connections``
  (the kernel's enforcement) over one pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .cluster import ACCEPT, ADMIN, BASELINE, DENY, PASS, ClusterPolicy, ClusterRule
from .ports import ConnSet
from .rules import Endpoint, MatchContext, first_peer, first_port, peer_matches, rule_connections

NETWORK_POLICY_TIER = "NetworkPolicy"
DEFAULT_TIER = "default"
# Order is everything: the first tier that decides a side wins. Admin before every NetworkPolicy,
# Baseline only for what no NetworkPolicy decided (the ClusterNetworkPolicy API's `spec.tier`).
ORDER: tuple[str, ...] = (ADMIN, NETWORK_POLICY_TIER, BASELINE)
CLUSTER_TIERS = frozenset({ADMIN, BASELINE})  # decided by ClusterNetworkPolicy rules, in order

# What a tier answers for one connection (kube-network-policies' Verdict): Accept and Deny are final,
# Next hands it to the next tier in ORDER (a Pass rule, no rule matching, a pod the tier does not select).
ACCEPTED, DENIED, NEXT = ACCEPT, DENY, "Next"

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Answer(Generic[T]):
    """One tier's answer (``verdict``), what it rests on (``detail``: a verdict, a decision), and the Pass rule
    that handed the connection on, if one did."""

    verdict: str
    detail: T
    passed: TierRuleMatch | None = None


@dataclass(frozen=True, slots=True)
class Run(Generic[T]):
    """The pipeline's result: the tier that decided and its answer (None: no tier did, allowed by default),
    and the Pass rules met on the way, in order."""

    tier: str | None
    answer: Answer[T] | None
    passed: tuple[TierRuleMatch, ...]

    @property
    def allowed(self) -> bool:
        return self.answer is None or self.answer.verdict == ACCEPTED


def run(evaluate: Callable[[str], Answer[T] | None], order: Sequence[str] = ORDER) -> Run[T]:
    """Ask each tier of ``order`` in turn (``evaluate(tier)``; None: the tier has nothing to say about this
    pod, as Next); the first Accept or Deny decides. The default, allow, is here and nowhere else."""
    passed: list[TierRuleMatch] = []
    for tier in order:
        answer = evaluate(tier)
        if answer is None:
            continue
        if answer.verdict != NEXT:
            return Run(tier, answer, tuple(passed))
        if answer.passed is not None:
            passed.append(answer.passed)
    return Run(None, None, tuple(passed))


@dataclass(frozen=True, slots=True)
class TierRuleMatch:
    """The rule of a ClusterNetworkPolicy (or v1alpha1 ANP/BANP) that matched a connection."""

    kind: str
    policy: str
    tier: str
    priority: int | None
    direction: str
    rule: int
    name: str
    action: str
    peer: int
    port: int  # -1: the rule has no protocols, so every port

    @property
    def where(self) -> str:
        return f"{self.tier} tier" + ("" if self.priority is None else f", priority {self.priority}")

    @property
    def location(self) -> str:
        side = "from" if self.direction == "ingress" else "to"
        text = f"spec.{self.direction}[{self.rule}].{side}[{self.peer}]"
        return text + (f".protocols[{self.port}]" if self.port >= 0 else "")

    def text(self) -> str:
        """``ClusterNetworkPolicy `block-db` rule `deny-from-tenants` (Admin tier, priority 10)``"""
        rule = f"`{self.name}`" if self.name else f"#{self.rule + 1} (spec.{self.direction}[{self.rule}])"
        return f"{self.kind} `{self.policy}` rule {rule} ({self.where})"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.policy, "tier": self.tier, "priority": self.priority,
                "direction": self.direction, "rule": self.rule, "ruleName": self.name, "action": self.action,
                "peer": self.peer, "port": "any" if self.port < 0 else self.port}


def _match(policy: ClusterPolicy, direction: str, rule: ClusterRule, peer_ep: Endpoint, dst: Endpoint,
           protocol: str, port: int, ctx: MatchContext) -> TierRuleMatch | None:
    peer = first_peer(None, rule, peer_ep, ctx)
    if peer is None:
        return None
    port_index = first_port(rule, protocol, port, dst)
    if port_index is None:
        return None
    return TierRuleMatch(policy.kind, policy.name, policy.tier, policy.priority, direction, rule.index, rule.name,
                         rule.action, peer, port_index)


def first_match(policy: ClusterPolicy, direction: str, peer_ep: Endpoint, dst: Endpoint, protocol: str, port: int,
                ctx: MatchContext) -> TierRuleMatch | None:
    for rule in policy.rules(direction):
        found = _match(policy, direction, rule, peer_ep, dst, protocol, port, ctx)
        if found is not None:
            return found
    return None


@dataclass(frozen=True, slots=True)
class TierDecision:
    """What one ClusterNetworkPolicy tier did with a connection: the rule that matched (None: no rule did, the
    connection goes on to the next tier) and, with equal priorities, the policies that would have decided
    otherwise had the implementation taken them first."""

    match: TierRuleMatch | None
    contested: tuple[TierRuleMatch, ...] = ()

    @property
    def verdict(self) -> str:
        """``Accept``, ``Deny``, or ``Next`` (a Pass rule, or no rule matched)."""
        if self.match is None or self.match.action == PASS:
            return NEXT
        return self.match.action


def decide(policies: Sequence[ClusterPolicy], direction: str, peer_ep: Endpoint, dst: Endpoint, protocol: str,
           port: int, ctx: MatchContext) -> TierDecision:
    """``policies``: the tier's policies that select the pod, in order (``ClusterPolicy.order``)."""
    for i, policy in enumerate(policies):
        found = first_match(policy, direction, peer_ep, dst, protocol, port, ctx)
        if found is None:
            continue
        contested = []
        for other in policies[i + 1:]:
            if other.priority != policy.priority:
                break
            theirs = first_match(other, direction, peer_ep, dst, protocol, port, ctx)
            if theirs is not None and theirs.action != found.action:
                contested.append(theirs)
        return TierDecision(found, tuple(contested))
    return TierDecision(None)


def tier_sets(policies: Sequence[ClusterPolicy], direction: str, peer_ep: Endpoint, dst: Endpoint,
              ctx: MatchContext) -> tuple[ConnSet, ConnSet, ConnSet]:
    """(accepted, decided, taken) over every protocol and port: what Accept rules take, what Accept and Deny
    rules take, and what any rule takes (a Pass rule's share is in ``taken`` only: the next tier decides it)."""
    taken = accepted = decided = ConnSet.none()
    for policy in policies:
        for rule in policy.rules(direction):
            if not any(peer_matches(None, p, peer_ep, ctx) for p in rule.peers):
                continue
            hit = rule_connections(rule, dst) - taken
            if not hit:
                continue
            if rule.action == ACCEPT:
                accepted = accepted | hit
            if rule.action in (ACCEPT, DENY):
                decided = decided | hit
            taken = taken | hit
            if taken.is_all:
                return accepted, decided, taken
    return accepted, decided, taken


def combine(tiers: Sequence[tuple[ConnSet, ConnSet]]) -> ConnSet:
    """``run`` over every protocol and port at once: ``(accepted, decided)`` per tier, in ``ORDER``; the first tier
    that decides a connection wins; what none decides is allowed (the default)."""
    allowed, undecided = ConnSet.none(), ConnSet.all()
    for accepted, decided in tiers:
        allowed = allowed | (accepted & undecided)
        undecided = undecided - decided
        if undecided.is_empty:
            break
    return allowed | undecided


__all__ = ["ACCEPTED", "CLUSTER_TIERS", "DEFAULT_TIER", "DENIED", "NETWORK_POLICY_TIER", "NEXT", "ORDER", "Answer",
           "Run", "TierDecision", "TierRuleMatch", "combine", "decide", "first_match", "run", "tier_sets"]
