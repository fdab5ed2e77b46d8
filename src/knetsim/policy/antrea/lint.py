"""Antrea policies that are valid but probably not what was meant (reused by ``policy lint`` and ``doctor``).

* ``AntreaAppliedToNothing``: a policy (or every rule of it, with rule-level appliedTo) applies to no
  pod right now: a selector typo, a group that does not exist; it decides nothing today (a Pass in the baseline
  tier, which would change nothing, is refused by Antrea's webhook: webhook.py);
* ``AntreaRuleShadowed``: a rule no connection can reach, because an earlier rule of the same tier
  (a lower priority, or earlier in the policy) applies to the same pods and matches every peer and
  port it does.
"""

from __future__ import annotations

from typing import Any

from ...cluster.state import ClusterState
from ..findings import Finding
from ..rules import EGRESS, INGRESS, MatchContext
from .evaluate import AntreaIndex, applies, ordered_rules, selects
from .model import AntreaRule


def _pods(state: ClusterState) -> list[Any]:
    return [p for _, p in sorted(state.pods.items()) if not p.host_network]


def _catches_all(rule: AntreaRule) -> bool:
    # A toServices rule has neither `to` nor `ports` (the webhook refuses them beside it) yet matches only traffic
    # addressed to those Services (docs/antrea-network-policy.md, "toServices egress rules"); a rule with fields
    # knetsim does not simulate (l7Protocols, protocols) matches less than its peers and ports say.
    return rule.peers is None and rule.ports is None and not rule.to_services and not rule.unsupported


def antrea_lint(state: ClusterState, index: AntreaIndex, ctx: MatchContext) -> list[Finding]:
    pods = _pods(state)
    out: list[Finding] = []
    for tier in index.tiers:
        for policy in index.policies.get(tier.name, ()):
            if not any(selects(index, policy, pod, d, ctx) for pod in pods for d in (INGRESS, EGRESS)):
                out.append(Finding("AntreaAppliedToNothing", "warning", policy.ref,
                                   "applies to no pod right now (its appliedTo selects none)",
                                   "fix the appliedTo selector or group (or the pods' labels): the policy decides "
                                   "nothing today"))
        for direction in (INGRESS, EGRESS):
            out += _shadowed(index, tier, direction, pods, ctx)
    return out


def _shadowed(index: AntreaIndex, tier: Any, direction: str, pods: list[Any], ctx: MatchContext) -> list[Finding]:
    """A rule after a catch-all rule (no peers, no ports) that applies to every pod the later one does."""
    out = []
    earlier: list[tuple[Any, AntreaRule, frozenset[str]]] = []
    for policy, rule in ordered_rules(index, tier, direction):
        targets = frozenset(p.key for p in pods if applies(index, policy, rule, direction, p, ctx))
        cover = next(((p, r) for p, r, t in earlier if _catches_all(r) and targets and targets <= t), None)
        if cover is not None:
            first, first_rule = cover
            out.append(Finding(
                "AntreaRuleShadowed", "warning", policy.ref,
                f"spec.{direction}[{rule.index}] ({rule.action}) is never reached: {first.ref} "
                f"spec.{direction}[{first_rule.index}] ({first_rule.action}) comes first in tier `{tier.name}` and "
                "matches every peer and port of the same pods",
                "give this policy a lower priority than the other (or narrow the earlier rule)"))
        earlier.append((policy, rule, targets))
    return out


__all__ = ["antrea_lint"]
