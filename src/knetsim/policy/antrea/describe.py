"""An Antrea-native policy in words: its CNI, tier and place in the walk, the pods it applies to, each rule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...cluster.state import ClusterState
from ..rules import EGRESS, INGRESS, MatchContext
from . import model
from .evaluate import AntreaIndex, ordered_rules, selects
from .read import antrea_objects


@dataclass(frozen=True)
class AntreaPolicyDescription:
    kind: str
    namespace: str
    name: str
    cni: str
    tier: str
    tier_priority: float | None
    priority: float
    applied_to: str
    selected: tuple[str, ...]
    rules: dict[str, tuple[tuple[int, str, str, str], ...]]  # direction -> (index, name, action, match text)
    before: tuple[str, ...]  # the policies of its tier with a rule evaluated before its first
    notes: tuple[str, ...] = ()

    @property
    def place(self) -> str:
        if self.tier == model.BASELINE_TIER:
            return "after Kubernetes NetworkPolicy (the baseline tier)"
        return "before Kubernetes NetworkPolicy"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "namespace": self.namespace or None, "cni": self.cni,
                "tier": self.tier, "tierPriority": self.tier_priority, "priority": self.priority,
                "appliedTo": self.applied_to, "selectedPods": list(self.selected), "place": self.place,
                **{d: [{"rule": i, "name": n or None, "action": a, "match": m} for i, n, a, m in rules]
                   for d, rules in self.rules.items()},
                "evaluatedAfter": list(self.before), "notes": list(self.notes)}

    def text(self) -> str:
        tier_priority = "unknown" if self.tier_priority is None else f"{self.tier_priority:g}"
        pods = ", ".join(self.selected) or "none right now"
        lines = [f"Name:         {self.name}"]
        if self.namespace:
            lines.append(f"Namespace:    {self.namespace}")
        lines += [f"Kind:         {self.kind}", f"CNI:          {self.cni}",
                  f"Tier:         {self.tier} (tier priority {tier_priority}; {self.place})",
                  f"Priority:     {self.priority:g}", f"Applied to:   {self.applied_to}",
                  f"Selects:      {len(self.selected)} pod(s): {pods}",
                  "Evaluated after: " + (", ".join(self.before) or "no other policy of its tier")]
        for direction in (INGRESS, EGRESS):
            rules = self.rules[direction]
            lines.append("")
            if not rules:
                lines.append(f"{direction.capitalize()}: no rules")
                continue
            lines.append(f"{direction.capitalize()}: the first matching rule decides (Allow, Drop, Reject; Pass hands "
                         "over to Kubernetes NetworkPolicy); none matching: on to the next policy and tier")
            for i, name, action, match in rules:
                label = f" `{name}`" if name else ""
                lines.append(f"  Rule {i + 1} (spec.{direction}[{i}]{label}): {action} {match}")
        lines += [f"Note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def _selections(sels: tuple[model.Selection, ...] | None) -> str:
    return "; ".join(s.describe() for s in sels) if sels else "the rules' own appliedTo"


def _rule_text(rule: model.AntreaRule, direction: str) -> str:
    side = "from" if direction == INGRESS else "to"
    text = f"{side} {rule.text()}"
    if rule.applied_to is not None:
        text += f"; appliedTo {_selections(rule.applied_to)}"
    if rule.unsupported:
        text += f" ({', '.join(rule.unsupported)} not simulated)"
    return text


def describe_antrea(state: ClusterState, kind: str, namespace: str, name: str, index: AntreaIndex | None,
                    ctx: MatchContext, cni_text: str, enforced: bool) -> list[AntreaPolicyDescription]:
    """The Antrea ClusterNetworkPolicy ``name`` (``namespace`` "") or Antrea NetworkPolicy ``namespace/name``."""
    out = []
    for obj in antrea_objects(state, (kind,)):
        if obj.name != name or (kind == model.ANNP and obj.namespace != namespace):
            continue
        policy = model.parse_policy(kind, obj.raw, obj.source)
        tier_priority = index.tier_priority(policy.tier) if index is not None else model.STATIC_TIERS.get(policy.tier)
        before: list[str] = []
        selected: tuple[str, ...] = ()
        if index is not None:
            tier = next((t for t in index.tiers if t.name == policy.tier), None)
            for direction in (INGRESS, EGRESS):
                for other, _ in ordered_rules(index, tier, direction) if tier is not None else ():
                    if other.ref == policy.ref:
                        break
                    before.append(other.ref)
            selected = tuple(k for k, pod in sorted(state.pods.items()) if not pod.host_network
                             and any(selects(index, policy, pod, d, ctx) for d in (INGRESS, EGRESS)))
        notes = () if enforced else (f"not enforced: the cluster's {cni_text} does not enforce Antrea's kinds",)
        rules = {d: tuple((r.index, r.name, r.action, _rule_text(r, d)) for r in policy.rules(d))
                 for d in (INGRESS, EGRESS)}
        out.append(AntreaPolicyDescription(
            policy.display_kind, policy.namespace, policy.name, cni_text, policy.tier, tier_priority, policy.priority,
            _selections(policy.applied_to), selected,
            rules, tuple(dict.fromkeys(before)), notes))
    return out


__all__ = ["AntreaPolicyDescription", "describe_antrea"]
