"""Lint for ClusterNetworkPolicy tiers: valid, but worth a second look. Findings:

* ``NetworkPolicyAllowOverridden`` (warning): a NetworkPolicy allows a connection between
  existing pods that an Admin-tier Deny drops first ("my NetworkPolicy allows it but it still
  times out");
* ``BaselineDenyNotOpened`` (info): a Baseline-tier Deny drops connections between existing
  pods and no NetworkPolicy selects the pod to override it;
* ``PassChangesNothing`` (warning): a Pass rule whose removal would change no answer (no later
  rule of its tier decides what it passes, or earlier rules take all of it first);
* ``ClusterPolicyInvalid`` (error): an object its CRD admits but the engine cannot enforce as written
  (a label selector operator other than In, NotIn, Exists, DoesNotExist; a v1alpha1 protocol other
  than TCP, UDP, SCTP: the schemas take any string there); it is ignored, and every verdict says so;
* ``EqualPriorityOverlap`` (warning): two policies of one tier share a priority and would
  treat one connection differently; the API leaves the order to the implementation
  (knetsim, kube-network-policies and Calico take them by name; others may not).

Every finding names one concrete pair of existing endpoints. The search runs over one pod
per (namespace, labels, named ports) — pods alike are alike for every policy — and is
bounded (``PAIR_BUDGET`` pairs per finding kind), so a large cluster costs seconds, not hours.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterator, Sequence

from ..cluster.state import ClusterState
from .cluster import ACCEPT, ADMIN, BASELINE, DENY, KINDS, PASS, ClusterPolicy, ClusterPolicyError, ClusterRule, parse
from .engine import PolicyIndex, evaluate, network_policy_set, pod_endpoint
from .findings import Finding
from .ports import ConnSet
from .rules import EGRESS, INGRESS, Endpoint, MatchContext, peer_matches, rule_connections
from .tiers import decide, tier_sets

PAIR_BUDGET = 20_000


def _representatives(state: ClusterState) -> list[Endpoint]:
    """One pod per (namespace, labels, container ports): policy cannot tell such pods apart."""
    seen: dict[tuple[object, ...], Endpoint] = {}
    for _, pod in sorted(state.pods.items()):
        if pod.host_network or not pod.pod_ip:
            continue
        ports = tuple(sorted((p.name, p.protocol, p.container_port) for c in pod.containers for p in c.ports))
        seen.setdefault((pod.namespace, tuple(sorted(pod.labels.items())), ports), pod_endpoint(state, pod))
    return list(seen.values())


def _network_addresses(policies: Sequence[ClusterPolicy]) -> list[Endpoint]:
    """A representative address of every `networks` CIDR outside the cluster (its first address)."""
    out = {}
    for policy in policies:
        for rule in policy.egress:
            for peer in rule.peers:
                if peer.kind == "network" and peer.ip_range is not None:
                    net = peer.ip_range.cidr
                    first = str(net.network_address + (1 if net.num_addresses > 1 else 0))
                    out[first] = Endpoint("external", first)
    return [out[k] for k in sorted(out, key=lambda a: ipaddress.ip_address(a))]


def _peers_of(rule: ClusterRule, candidates: Sequence[Endpoint], ctx: MatchContext) -> list[Endpoint]:
    return [e for e in candidates if any(peer_matches(None, p, e, ctx) for p in rule.peers)]


def _first_port(conns: ConnSet, dst: Endpoint | None = None) -> tuple[str, int]:
    """A port of ``conns`` to show: one the destination pod declares if any, else the lowest (TCP first)."""
    if dst is not None and dst.pod is not None:
        for c in dst.pod.containers:
            for p in c.ports:
                if conns.contains(p.protocol, p.container_port):
                    return p.protocol, p.container_port
    ranges = conns.as_dict()
    for protocol in ("TCP", "UDP", "SCTP"):
        if ranges.get(protocol):
            return protocol, ranges[protocol][0][0]
    return "TCP", 1


def _pair(direction: str, subject: Endpoint, peer: Endpoint) -> tuple[Endpoint, Endpoint]:
    return (peer, subject) if direction == INGRESS else (subject, peer)


def _pairs(index: PolicyIndex, policy: ClusterPolicy, rule: ClusterRule, direction: str, pods: list[Endpoint],
           outside: list[Endpoint]) -> Iterator[tuple[Endpoint, Endpoint]]:
    """(subject, peer) pairs the rule's policy selects and the rule's peers match, subject != peer."""
    ctx = index.ctx
    subjects = [e for e in pods if e.pod is not None and policy.selects(e.pod, ctx.namespace_labels)]
    if not subjects:
        return
    peers = _peers_of(rule, pods + (outside if direction == EGRESS else []), ctx)
    for s in subjects:
        for p in peers:
            if p is not s:
                yield s, p


def _connection(direction: str, subject: Endpoint, peer: Endpoint, protocol: str, port: int) -> str:
    src, dst = _pair(direction, subject, peer)
    return f"{src.name} -> {dst.name} {protocol}/{port}"


def _overridden(state: ClusterState, index: PolicyIndex, pods: list[Endpoint],
                outside: list[Endpoint]) -> list[Finding]:
    out = []
    budget = PAIR_BUDGET
    reported: set[tuple[str, str]] = set()
    for policy in index.tier(ADMIN):
        for direction in (INGRESS, EGRESS):
            for rule in policy.rules(direction):
                if rule.action != DENY:
                    continue
                for subject, peer in _pairs(index, policy, rule, direction, pods, outside):
                    budget -= 1
                    if budget < 0:
                        return out
                    allowed = network_policy_set(index, direction, subject, peer)
                    if not allowed:
                        continue  # not isolated (nothing to override), or NetworkPolicy denies it too
                    src, dst = _pair(direction, subject, peer)
                    protocol, port = _first_port(allowed, dst)
                    verdict = evaluate(state, src, dst, port, protocol)
                    side = verdict.ingress if direction == INGRESS else verdict.egress
                    if side.tier != ADMIN or side.allowed or side.decided_by is None or not side.allowed_by:
                        continue
                    np_policy = side.allowed_by[0].policy
                    key = (f"{side.decided_by.policy}/{side.decided_by.rule}", np_policy)
                    if key in reported:
                        continue
                    reported.add(key)
                    out.append(Finding(
                        "NetworkPolicyAllowOverridden", "warning", f"NetworkPolicy {np_policy}",
                        f"{side.allowed_by[0].location} allows {_connection(direction, subject, peer, protocol, port)}"
                        f", but {side.decided_by.text()} denies it first: the Admin tier decides before any "
                        "NetworkPolicy, so the connection times out",
                        "if the connection is wanted, the cluster administrator must change the Admin policy "
                        "(a Pass rule before the Deny hands it to this NetworkPolicy); otherwise drop the rule",
                        (("clusterNetworkPolicy", side.decided_by.policy), ("rule", side.decided_by.name or
                                                                          str(side.decided_by.rule)))))
    return out


def _baseline_denies(state: ClusterState, index: PolicyIndex, pods: list[Endpoint],
                     outside: list[Endpoint]) -> list[Finding]:
    out = []
    budget = PAIR_BUDGET
    for policy in index.tier(BASELINE):
        for direction in (INGRESS, EGRESS):
            for rule in policy.rules(direction):
                if rule.action != DENY:
                    continue
                hits: list[tuple[Endpoint, Endpoint, str, int]] = []
                for subject, peer in _pairs(index, policy, rule, direction, pods, outside):
                    budget -= 1
                    if budget < 0:
                        break
                    if network_policy_set(index, direction, subject, peer) is not None:
                        continue  # a NetworkPolicy isolates it: the Baseline tier is not reached
                    src, dst = _pair(direction, subject, peer)
                    protocol, port = _first_port(rule_connections(rule, dst), dst)
                    side = evaluate(state, src, dst, port, protocol)
                    side_v = side.ingress if direction == INGRESS else side.egress
                    if side_v.tier == BASELINE and not side_v.allowed and side_v.decided_by is not None \
                            and side_v.decided_by.policy == policy.name and side_v.decided_by.rule == rule.index:
                        hits.append((subject, peer, protocol, port))
                if not hits:
                    continue
                subject, peer, protocol, port = hits[0]
                assert subject.pod is not None
                affected = [k for k, p in sorted(state.pods.items()) if p.pod_ip
                            and policy.selects(p, index.ctx.namespace_labels) and not index.selecting(p, direction)]
                out.append(Finding(
                    "BaselineDenyNotOpened", "info", policy.ref,
                    f"spec.{direction}[{rule.index}] ({rule.label}, Deny) drops "
                    f"{_connection(direction, subject, peer, protocol, port)}, and no NetworkPolicy selects "
                    f"{subject.name} for {direction} to override it ({len(affected)} pod(s) affected: "
                    f"{', '.join(affected[:3])}{' ...' if len(affected) > 3 else ''})",
                    f"if the connection is wanted, a NetworkPolicy in namespace {subject.pod.namespace} that "
                    f"selects {subject.name} for {direction} and allows it takes precedence over the Baseline "
                    "tier (and isolates the pod: allow what else it needs too)"))
    return out


def _without(policies: Sequence[ClusterPolicy], policy: ClusterPolicy, direction: str,
             rule: ClusterRule) -> list[ClusterPolicy]:
    rules = tuple(r for r in policy.rules(direction) if r is not rule)
    changed = dataclasses.replace(policy, **{direction: rules})
    return [changed if p is policy else p for p in policies]


def _before(policies: Sequence[ClusterPolicy], policy: ClusterPolicy, direction: str,
            rule: ClusterRule) -> list[ClusterPolicy]:
    """The tier as far as the rules that come before ``rule``."""
    out = []
    for p in policies:
        if p is policy:
            out.append(dataclasses.replace(p, **{direction: p.rules(direction)[:rule.index]}))
            break
        out.append(p)
    return out


def _useless_passes(index: PolicyIndex, pods: list[Endpoint], outside: list[Endpoint]) -> list[Finding]:
    out = []
    budget = PAIR_BUDGET
    ctx = index.ctx
    for tier in (ADMIN, BASELINE):
        for policy in index.tier(tier):
            for direction in (INGRESS, EGRESS):
                for rule in policy.rules(direction):
                    if rule.action != PASS:
                        continue
                    matters, seen, takes = False, 0, False
                    shadow: str = ""
                    for subject, peer in _pairs(index, policy, rule, direction, pods, outside):
                        budget -= 1
                        seen += 1
                        assert subject.pod is not None
                        if budget < 0:
                            matters = True  # unknown: say nothing
                            break
                        mine = index.cluster_selecting(subject.pod, tier, direction)
                        dst = subject if direction == INGRESS else peer
                        local = dataclasses.replace(ctx, local_node=subject.pod.node_name)
                        if tier_sets(mine, direction, peer, dst, local)[:2] != \
                                tier_sets(_without(mine, policy, direction, rule), direction, peer, dst, local)[:2]:
                            matters = True
                            break
                        wanted = rule_connections(rule, dst)
                        share = wanted - tier_sets(_before(mine, policy, direction, rule), direction, peer, dst,
                                                   local)[2]
                        takes = takes or bool(share)
                        if not share and wanted and not shadow:
                            protocol, port = _first_port(wanted, dst)
                            first = decide(mine, direction, peer, dst, protocol, port, local).match
                            shadow = first.text() if first is not None else ""
                    if matters:
                        continue
                    if not seen:
                        why = "it matches no existing connection"
                    elif not takes and shadow:
                        why = (f"{shadow} comes first and takes everything it matches, so it is never reached "
                               "(Pass only skips what comes after it)")
                    else:
                        why = ("no later rule of the tier decides what it passes, and what it matches would go on "
                               f"to the {'NetworkPolicy tier' if tier == ADMIN else 'default (allow)'} anyway")
                    out.append(Finding(
                        "PassChangesNothing", "warning", policy.ref,
                        f"spec.{direction}[{rule.index}] ({rule.label}, Pass) changes nothing: {why}",
                        "delete the rule, or move it before the rule it is meant to skip (a lower priority number, "
                        "or earlier in the same policy)"))
    return out


def _outcomes(policy: ClusterPolicy, direction: str, peer: Endpoint, dst: Endpoint,
              ctx: MatchContext) -> tuple[ConnSet, ConnSet, ConnSet]:
    accepted, decided, taken = tier_sets([policy], direction, peer, dst, ctx)
    return accepted, decided - accepted, taken - decided


def _equal_priorities(index: PolicyIndex, pods: list[Endpoint], outside: list[Endpoint]) -> list[Finding]:
    out = []
    budget = PAIR_BUDGET
    ctx = index.ctx
    groups: dict[tuple[str, int], list[ClusterPolicy]] = {}
    for p in index.cluster:
        if p.priority is not None:
            groups.setdefault((p.tier, p.priority), []).append(p)
    names = (ACCEPT, DENY, PASS)
    for (tier, priority), policies in sorted(groups.items()):
        for i, a in enumerate(policies):
            for b in policies[i + 1:]:
                found = None
                for direction in (INGRESS, EGRESS):
                    for rule in a.rules(direction):
                        for subject, peer in _pairs(index, a, rule, direction, pods, outside):
                            budget -= 1
                            if budget < 0 or found:
                                break
                            assert subject.pod is not None
                            if not b.selects(subject.pod, ctx.namespace_labels):
                                continue
                            dst = subject if direction == INGRESS else peer
                            ours, theirs = _outcomes(a, direction, peer, dst, ctx), _outcomes(b, direction, peer,
                                                                                              dst, ctx)
                            for x in range(3):
                                for y in range(3):
                                    clash = ours[x] & theirs[y]
                                    if x != y and clash:
                                        protocol, port = _first_port(clash, dst)
                                        found = (direction, subject, peer, protocol, port, names[x], names[y])
                                        break
                                if found:
                                    break
                if found is None:
                    continue
                direction, subject, peer, protocol, port, mine, other = found
                out.append(Finding(
                    "EqualPriorityOverlap", "warning", a.ref,
                    f"{a.ref} and {b.ref} are both {tier} tier, priority {priority}, and disagree on "
                    f"{_connection(direction, subject, peer, protocol, port)} ({a.name}: {mine}, {b.name}: {other}). "
                    f"The API leaves their order to the implementation: knetsim, kube-network-policies and Calico "
                    f"apply {a.name} first (by name), another implementation may apply {b.name}",
                    "give them different priorities, so the order is the one you mean on every implementation",
                    (("other", b.ref),)))
    return out


def _unreadable(state: ClusterState) -> list[Finding]:
    out = []
    for kind in KINDS:
        for obj in state.objects_of(kind):
            try:
                parse(kind, obj.raw, obj.source)
            except ClusterPolicyError as exc:
                out.append(Finding(
                    "ClusterPolicyInvalid", "error", f"{kind} {obj.name}",
                    f"{obj.source}: {exc}. The policy is ignored: no verdict applies it (the API server stores "
                    "it, as its CRD does not check these fields, but an implementation cannot enforce it)",
                    "fix the fields named"))
    return out


def cluster_lint(state: ClusterState, index: PolicyIndex) -> list[Finding]:
    found = _unreadable(state)
    if not index.cluster:
        return found
    pods = _representatives(state)
    outside = _network_addresses(index.cluster)
    if any(peer.kind == "nodes" for p in index.cluster for r in p.egress for peer in r.peers):
        outside += [Endpoint("node", n.internal_ip, None, n.name) for _, n in sorted(state.nodes.items())
                    if n.internal_ip]
    return found + (_overridden(state, index, pods, outside) + _baseline_denies(state, index, pods, outside)
            + _useless_passes(index, pods, outside) + _equal_priorities(index, pods, outside))


__all__ = ["PAIR_BUDGET", "cluster_lint"]
