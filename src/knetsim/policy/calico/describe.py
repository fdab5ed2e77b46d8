"""A Calico policy in words: its CNI, tier and place in the walk, the pods it selects, each rule's action and match."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...cluster.state import ClusterState
from ..rules import EGRESS, INGRESS, MatchContext
from . import model
from .evaluate import CalicoIndex, selects
from .read import calico_objects


@dataclass(frozen=True)
class CalicoPolicyDescription:
    kind: str
    namespace: str
    name: str
    cni: str
    tier: str
    tier_order: float | None
    order: float | None
    selector: str
    selected: tuple[str, ...]
    types: tuple[str, ...]
    rules: dict[str, tuple[tuple[int, str, str], ...]]  # direction -> (index, action, match text)
    before: tuple[str, ...]  # the policies of its tier evaluated before it
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "namespace": self.namespace or None, "cni": self.cni,
                "tier": self.tier, "tierOrder": self.tier_order, "order": self.order, "selector": self.selector,
                "selectedPods": list(self.selected), "types": list(self.types),
                **{d: [{"rule": i, "action": a, "match": m} for i, a, m in rules] for d, rules in self.rules.items()},
                "evaluatedAfter": list(self.before), "notes": list(self.notes)}

    def text(self) -> str:
        order = "none (after every ordered policy of the tier)" if self.order is None else f"{self.order:g}"
        tier_order = "last" if self.tier_order is None else f"{self.tier_order:g}"
        pods = ", ".join(self.selected) or "none right now"
        lines = [f"Name:         {self.name}"]
        if self.namespace:
            lines.append(f"Namespace:    {self.namespace}")
        lines += [f"Kind:         {self.kind}", f"CNI:          {self.cni}",
                  f"Tier:         {self.tier} (tier order {tier_order})", f"Order:        {order}",
                  f"Selector:     {self.selector}", f"Applies to:   {len(self.selected)} pod(s): {pods}",
                  f"Types:        {', '.join(self.types) or 'none'}",
                  "Evaluated after: " + (", ".join(self.before) or "no other policy of its tier")]
        for direction in (INGRESS, EGRESS):
            rules = self.rules[direction]
            lines.append("")
            if direction.capitalize() not in self.types:
                lines.append(f"{direction.capitalize()}: not applied (not in types)")
                continue
            lines.append(f"{direction.capitalize()}: the first rule that matches decides (Log goes on; Pass goes to "
                         "the next tier); none matching: the end of the tier")
            for i, action, match in rules:
                lines.append(f"  Rule {i + 1} (spec.{direction}[{i}]): {action} {match}")
        lines += [f"Note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def _rule_text(rule: model.CalicoRule) -> str:
    parts = []
    if rule.protocol is not None:
        parts.append(f"protocol {rule.protocol}")
    if rule.not_protocol is not None:
        parts.append(f"not protocol {rule.not_protocol}")
    if rule.source != model.ANY:
        parts.append(f"from {rule.source.describe()}")
    if rule.destination != model.ANY:
        parts.append(f"to {rule.destination.describe()}")
    if rule.unsupported:
        parts.append(f"({', '.join(rule.unsupported)} not simulated)")
    return "; ".join(parts) or "everything"


def _selector_text(policy: model.CalicoPolicy) -> str:
    text = policy.selector.canonical() if policy.selector is not None else "all()"
    if policy.namespace_selector is not None:
        text += f"; namespaceSelector {policy.namespace_selector.canonical()}"
    if policy.service_account_selector is not None:
        text += f"; serviceAccountSelector {policy.service_account_selector.canonical()}"
    return text


def describe_calico(state: ClusterState, kind: str, namespace: str, name: str, index: CalicoIndex | None,
                    ctx: MatchContext, cni_text: str, enforced: bool) -> list[CalicoPolicyDescription]:
    out = []
    for obj in calico_objects(state, (kind,)):
        if obj.name != name or (kind == "NetworkPolicy" and obj.namespace != namespace):
            continue
        policy = model.parse_policy(kind, obj.raw, obj.source)
        tiers = {t.name: t for t in (index.tiers if index is not None else model.BUILTIN_TIERS)}
        tier = tiers.get(policy.tier)
        placed = index.policies.get(policy.tier, ()) if index is not None else ()
        before = tuple(p.ref for p in placed if p.sort_key() < policy.sort_key())
        selected = tuple(k for k, pod in sorted(state.pods.items()) if not pod.host_network and index is not None
                         and any(selects(index, policy, pod, d, ctx) for d in (INGRESS, EGRESS)))
        notes = () if enforced else (f"not enforced: the cluster's {cni_text} does not enforce Calico's kinds",)
        out.append(CalicoPolicyDescription(
            policy.display_kind, policy.namespace, policy.name, cni_text, policy.tier,
            tier.order if tier is not None else None, policy.order,
            _selector_text(policy), selected,
            tuple(sorted(policy.types)),
            {d: tuple((r.index, r.action, _rule_text(r)) for r in policy.rules(d)) for d in (INGRESS, EGRESS)},
            before, notes))
    return out


__all__ = ["CalicoPolicyDescription", "describe_calico"]
