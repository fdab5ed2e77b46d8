"""Calico policies that are valid but probably not what was meant (reused by ``policy lint`` and ``doctor``).

* ``CalicoSelectorMatchesNothing``: a policy's selector selects no pod right now; a wanted
  ``key == value`` no pod has is named beside the nearest label that exists (a typo);
* ``CalicoPassToProfile``: a Pass (a rule, or a tier's ``defaultAction: Pass``) after which no
  later tier has a policy selecting the pod: Calico then applies the namespace's profile, which
  allows, so what is passed is allowed — rarely what a Pass in a security tier means.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...cluster.state import ClusterState
from ...model.labels import closest_labels
from ..findings import Finding
from ..rules import EGRESS, INGRESS, MatchContext
from .evaluate import CLUSTER_TIER_OF, CalicoIndex, applicable, selects
from .model import PASS, CalicoPolicy
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
    return out


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
