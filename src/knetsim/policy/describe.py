"""A policy in words: who it applies to, what each rule lets through, and AND vs OR made plain.

``kubectl describe networkpolicy`` prints a peer with both selectors as two lines that look
like two alternatives; here one peer is always one numbered line, and "any one of" / "both
must match" say which is which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..cluster.state import ClusterState
from . import cilium
from .engine import PolicyInputError, build_index, pod_endpoint
from .rules import INGRESS, MatchContext, Peer, Policy, Rule, from_network_policy, peer_matches


@dataclass(frozen=True)
class PeerText:
    index: int
    text: str
    pods: tuple[str, ...]
    is_and: bool

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "description": self.text, "and": self.is_and, "pods": list(self.pods)}


@dataclass(frozen=True)
class RuleText:
    index: int
    peers: tuple[PeerText, ...] | None
    ports: tuple[str, ...] | None
    empty: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.index,
                "peers": "any" if self.peers is None else [p.to_dict() for p in self.peers],
                "ports": "any" if self.ports is None else list(self.ports)}


@dataclass(frozen=True)
class PolicyDescription:
    kind: str
    namespace: str
    name: str
    selector: str
    selected: tuple[str, ...]
    policy_types: tuple[str, ...]
    ingress: tuple[RuleText, ...] | None
    egress: tuple[RuleText, ...] | None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "namespace": self.namespace, "podSelector": self.selector,
                "selectedPods": list(self.selected), "policyTypes": list(self.policy_types),
                "ingress": None if self.ingress is None else [r.to_dict() for r in self.ingress],
                "egress": None if self.egress is None else [r.to_dict() for r in self.egress],
                "notes": list(self.notes)}

    def text(self) -> str:
        lines = [f"Name:         {self.name}", f"Namespace:    {self.namespace}", f"Kind:         {self.kind}"]
        who = "every pod" if self.selector == "<none>" else f"pods with {self.selector}"
        pods = ", ".join(p.split("/", 1)[1] for p in self.selected) or "none right now"
        lines.append(f"Applies to:   {who} in namespace {self.namespace} ({len(self.selected)}: {pods})")
        isolates = " and ".join(t.lower() for t in self.policy_types) or "nothing"
        lines.append(f"Isolates:     {isolates} (policyTypes: {', '.join(self.policy_types)})")
        for direction, rules in (("Ingress", self.ingress), ("Egress", self.egress)):
            lines.append("")
            if rules is None:
                lines.append(f"{direction}: not isolated by this policy (not in policyTypes)")
                continue
            if not rules:
                lines.append(f"{direction}: isolates the selected pods and allows nothing by itself")
                continue
            lines.append(f"{direction}: allowed when a connection matches any one rule below (rules are OR'ed)")
            side = "from" if direction == "Ingress" else "to"
            for r in rules:
                lines.append(f"  Rule {r.index + 1} (spec.{direction.lower()}[{r.index}]):")
                if r.empty:
                    lines.append("    allows nothing (an empty Cilium rule only isolates)")
                    continue
                if r.peers is None:
                    lines.append(f"    {side}: anywhere (the rule has no `{side}`: every pod and every IP)")
                else:
                    lines.append(f"    {side} any one of {len(r.peers)} peer(s):")
                    for p in r.peers:
                        count = f"[{len(p.pods)} pod(s)]" if p.pods or not p.text.startswith("IP") else ""
                        lines.append(f"      {p.index + 1}. {p.text} {count}".rstrip())
                if r.ports is None:
                    lines.append("    on: every port and protocol (the rule has no `ports`)")
                else:
                    lines.append("    on any one of: " + "; ".join(r.ports))
        for note in self.notes:
            lines.append(f"Note: {note}")
        return "\n".join(lines) + "\n"


def _peer_pods(state: ClusterState, policy: Policy, peer: Peer, ctx: MatchContext) -> tuple[str, ...]:
    if peer.kind != "pods":
        return ()
    return tuple(k for k, pod in sorted(state.pods.items())
                 if peer_matches(policy, peer, pod_endpoint(state, pod), ctx))


def _rules(state: ClusterState, policy: Policy, rules: tuple[Rule, ...] | None,
           ctx: MatchContext) -> tuple[RuleText, ...] | None:
    if rules is None:
        return None
    out = []
    for rule in rules:
        if rule.peers == () and rule.ports == ():
            out.append(RuleText(rule.index, (), (), empty=True))
            continue
        peers = None if rule.peers is None else tuple(
            PeerText(p.index, p.describe(), _peer_pods(state, policy, p, ctx),
                     p.namespace_selector is not None and p.pod_selector is not None
                     and not p.pod_selector.empty)
            for p in rule.peers)
        ports = None if rule.ports is None else tuple(p.describe() for p in rule.ports)
        out.append(RuleText(rule.index, peers, ports))
    return tuple(out)


def describe(state: ClusterState, name: str, namespace: str = "default") -> list[PolicyDescription]:
    """The NetworkPolicy (or CiliumNetworkPolicy) ``namespace/name`` in words."""
    key = f"{namespace}/{name}"
    policies: list[Policy] = []
    notes: list[str] = []
    np = state.network_policies.get(key)
    if np is not None:
        policies.append(from_network_policy(np))
    else:
        obj = state.others.get((cilium.KIND, key))
        if obj is None:
            known = sorted(state.network_policies) + sorted(k for kind, k in state.others if kind == cilium.KIND)
            raise PolicyInputError(f"networkpolicy {key} not found; policies: {', '.join(known) or 'none'}")
        try:
            policies.extend(cilium.parse(obj))
        except cilium.CiliumPolicyError as exc:
            raise PolicyInputError(f"{obj.source}: {cilium.KIND} {key}: {exc}") from None
        if state.config.dataplane != "ebpf":
            notes.append(f"not enforced: the data plane is {state.config.dataplane}, which has no Cilium")
    ctx = build_index(state).ctx
    out = []
    for policy in policies:
        selected = tuple(p.key for p in state.pods_in(namespace) if policy.selector.matches(p.labels))
        types = tuple(t for t, r in (("Ingress", policy.ingress), ("Egress", policy.egress)) if r is not None)
        out.append(PolicyDescription(policy.kind, namespace, policy.name, policy.selector.formatted(), selected,
                                     types, _rules(state, policy, policy.ingress, ctx),
                                     _rules(state, policy, policy.egress, ctx), tuple(notes)))
    return out


__all__ = ["INGRESS", "PolicyDescription", "describe"]
