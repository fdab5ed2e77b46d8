"""Calico policies that are valid but probably not what was meant (reused by ``policy lint`` and ``doctor``).

* ``CalicoSelectorMatchesNothing``: a policy's selector selects no pod right now; a wanted
  ``key == value`` no pod has is named beside the nearest label that exists (a typo);
* ``CalicoPassToProfile``: a Pass (a rule, or a tier's ``defaultAction: Pass``) after which no
  later tier has a policy selecting the pod: Calico then applies the namespace's profile, which
  allows, so what is passed is allowed — rarely what a Pass in a security tier means;
* ``CalicoRuleShadowed``: a rule no packet reaches, because an earlier rule of its tier (a lower
  ``order``, or earlier in the same policy) matches everything and ends the walk (Allow, Deny or
  Pass; a Log rule goes on) for every pod the later rule applies to;
* ``CalicoTierEndDeny``: a tier whose ``defaultAction`` is Deny (a Tier's default) selects pods
  that policies of later tiers select too: what the tier's rules do not match is dropped at its
  end, so those later policies never see it — the Pass a user expected is not there
  (docs.tigera.io, "Get started with policy tiers": the end-of-tier action applies to an endpoint
  a tier's policies select when none of their rules matched).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...cluster.state import ClusterState
from ...model.labels import closest_labels
from ..findings import Finding
from ..rules import EGRESS, INGRESS, MatchContext
from .evaluate import CLUSTER_TIER_OF, CalicoIndex, applicable, selects
from .model import ALLOW, ANY, DEFAULT_TIER, DENY, PASS, CalicoPolicy, CalicoRule, CalicoTier
from .selector import EQ, IN, NOT, Node


def _wanted(node: Node, negated: bool = False) -> Iterable[tuple[str, str]]:
    """The ``key == value`` pairs a selector asks for (not under a ``!``)."""
    if node.op == NOT:
        return
    if node.op in (EQ, IN) and not negated:
        for value in node.values:
            yield node.label, value
    for operand in node.operands:
        yield from _wanted(operand, negated)


def _pods(state: ClusterState) -> list[Any]:
    return [p for _, p in sorted(state.pods.items()) if not p.host_network]


def calico_lint(state: ClusterState, index: CalicoIndex, ctx: MatchContext) -> list[Finding]:
    pods = _pods(state)
    out: list[Finding] = []
    policies = [p for tier in index.tiers for p in index.policies.get(tier.name, ()) if p.k8s is None]
    for policy in policies:
        if any(selects(index, policy, pod, d, ctx) for pod in pods for d in (INGRESS, EGRESS)):
            continue
        assert policy.selector is not None
        hints = closest_labels(dict(_wanted(policy.selector)), [index.pod_labels(p) for p in pods])
        detail = "; ".join(f"no pod has {w}; did you mean {n}?" for w, n, _ in hints if n)
        out.append(Finding("CalicoSelectorMatchesNothing", "warning", policy.ref,
                           f"selects no pod right now (selector {policy.selector.canonical()})"
                           + (f": {detail}" if detail else ""),
                           "fix the selector's labels (or the pods'): the policy decides nothing today"))
    out += _pass_to_profile(index, pods, ctx)
    for tier in index.tiers:
        for direction in (INGRESS, EGRESS):
            out += _shadowed(index, tier, direction, pods, ctx)
            out += _end_of_tier_deny(index, tier, direction, pods, ctx)
    return out


def _catches_all(rule: CalicoRule) -> bool:
    """Does the rule match every packet of its direction, and end the tier's walk when it does?"""
    return rule.action in (ALLOW, DENY, PASS) and rule.protocol is None and rule.not_protocol is None \
        and rule.ip_version is None and rule.source == ANY and rule.destination == ANY and not rule.unsupported


def _shadowed(index: CalicoIndex, tier: CalicoTier, direction: str, pods: list[Any], ctx: MatchContext
              ) -> list[Finding]:
    out = []
    earlier: list[tuple[CalicoPolicy, CalicoRule, frozenset[str]]] = []
    for policy in index.policies.get(tier.name, ()):
        if policy.k8s is not None or not policy.applies(direction):
            continue
        targets = frozenset(p.key for p in pods if selects(index, policy, p, direction, ctx))
        for rule in policy.rules(direction):
            cover = next(((p, r) for p, r, t in earlier if targets and targets <= t), None)
            if cover is not None:
                first, first_rule = cover
                where = "earlier in the same policy" if first is policy else \
                    f"in {first.ref}, which comes first in tier `{tier.name}`"
                out.append(Finding(
                    "CalicoRuleShadowed", "warning", policy.ref,
                    f"spec.{direction}[{rule.index}] ({rule.action}) is never reached: spec.{direction}"
                    f"[{first_rule.index}] ({first_rule.action}) {where}, matches every packet of the same pods",
                    "give this policy a lower order than the other (or narrow the earlier rule)"))
                break  # the policy's later rules are shadowed by the same rule: one finding says it
            if _catches_all(rule):
                earlier.append((policy, rule, targets))
    return out


def _end_of_tier_deny(index: CalicoIndex, tier: CalicoTier, direction: str, pods: list[Any], ctx: MatchContext
                      ) -> list[Finding]:
    """One finding per tier and direction, the pods counted and a few named, with the later policies that the
    end-of-tier deny hides from them."""
    if tier.default_action != DENY or tier.name == DEFAULT_TIER:
        return []
    later = index.tiers[index.tiers.index(tier) + 1:]
    hit: list[str] = []
    hidden: dict[str, None] = {}
    for pod in pods:
        selecting = applicable(index, tier, pod, direction, ctx)
        if not selecting or any(_catches_all(r) for p in selecting for r in p.rules(direction)):
            continue  # not selected, or a catch-all rule decides before the end of the tier
        after = [p.ref for t in later for p in applicable(index, t, pod, direction, ctx)]
        if after:
            hit.append(pod.key)
            hidden.update(dict.fromkeys(after))
    if not hit:
        return []
    pods_text = ", ".join(hit[:3]) + (f" and {len(hit) - 3} more" if len(hit) > 3 else "")
    policies_text = ", ".join(list(hidden)[:3]) + (f" and {len(hidden) - 3} more" if len(hidden) > 3 else "")
    return [Finding(
        "CalicoTierEndDeny", "warning", f"Tier.projectcalico.org {tier.name}",
        f"its policies select {pods_text} for {direction}, and {direction} none of their rules match is denied at "
        f"the end of the tier (defaultAction Deny, a Tier's default): it never reaches the later {policies_text}",
        f"if the later tiers should decide, set spec.defaultAction: Pass on Tier {tier.name}, or end its policies' "
        f"{direction} rules with {{action: Pass}}")]


def _pass_to_profile(index: CalicoIndex, pods: list[Any], ctx: MatchContext) -> list[Finding]:
    out = []
    seen: set[tuple[str, str]] = set()
    for position, tier in enumerate(index.tiers):
        later = index.tiers[position + 1:]
        for direction in (INGRESS, EGRESS):
            for pod in pods:
                selecting = applicable(index, tier, pod, direction, ctx)
                passing: list[CalicoPolicy] = [p for p in selecting if any(r.action == PASS
                                                                           for r in p.rules(direction))]
                if tier.default_action == PASS and selecting:
                    passing = passing or selecting
                if not passing or any(applicable(index, t, pod, direction, ctx) for t in later) \
                        or any(index.cluster_selecting(pod, CLUSTER_TIER_OF[t.name], direction) for t in later
                               if t.name in CLUSTER_TIER_OF):
                    continue
                for policy in passing:
                    key = (policy.ref, direction)
                    if key in seen:
                        continue
                    seen.add(key)
                    out.append(Finding(
                        "CalicoPassToProfile", "info", policy.ref,
                        f"passes {direction} of {pod.key} (and maybe others) to later tiers, where no policy selects "
                        "it: the namespace's profile then allows what was passed",
                        f"if the passed traffic should be denied, add a policy selecting {pod.key} in a later tier "
                        "(the default tier's end-of-tier deny then applies), or Deny instead of Pass"))
    return out


__all__ = ["calico_lint"]
