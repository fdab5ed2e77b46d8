"""The Antrea objects of a ClusterState, read into an ``AntreaIndex`` (or None when there is no Antrea policy).

Only Antrea's ClusterNetworkPolicy and NetworkPolicy make the Antrea walk necessary: without them an
Antrea cluster's verdicts are Kubernetes NetworkPolicy's (and the network-policy-api tiers'), which
the engine's own tiers give. Objects are found by their API group, never by kind name alone: Antrea's
NetworkPolicy shares its kind name with Kubernetes' (``cluster/state.stored_kind`` keys it as
``NetworkPolicy.crd.antrea.io``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...cluster.state import ClusterState
from . import model, webhook
from .evaluate import AntreaIndex, build


def _group(raw: Any) -> str:
    return str(raw.get("apiVersion") or "").rpartition("/")[0]


def antrea_objects(state: ClusterState, kinds: Sequence[str]) -> list[Any]:
    """The objects of Antrea's group of ``kinds``, in (kind, namespace, name) order."""
    out = [o for o in state.others.values() if o.kind in kinds and _group(o.raw) in model.GROUPS]
    return sorted(out, key=lambda o: (o.kind, o.namespace, o.name))


def read(state: ClusterState, problems: list[str]) -> AntreaIndex | None:
    """The index, or None without any Antrea policy; each object Antrea would refuse is named in ``problems``: what
    the CRD's schema refuses by its field, what antrea-controller's webhook refuses in the webhook's words."""
    policy_objects = antrea_objects(state, model.POLICY_KINDS)
    if not policy_objects:
        return None
    tiers = {t.name: t for t in model.BUILTIN_TIERS}
    custom: list[tuple[str, int]] = []
    # In input order, as `kubectl apply -f` sends them: of two Tiers on one priority, the webhook refuses the later.
    for obj in sorted(antrea_objects(state, (model.TIER_KIND,)),
                      key=lambda o: (o.source.file, o.source.document, o.source.item or 0)):
        try:
            tier = model.parse_tier(obj.raw)
        except model.AntreaPolicyError as exc:
            problems.append(f"{obj.source}: Tier.crd.antrea.io {obj.name}: {exc}")
            continue
        if tier.name in model.STATIC_TIERS:
            continue  # antrea-controller's own Tier objects
        reason = webhook.tier_create_reason(obj.raw, custom)
        if reason:
            problems.append(f"{obj.source}: Tier.crd.antrea.io {obj.name}: {webhook.message('Tier', reason)}")
            continue
        custom.append((obj.name, int(tier.priority)))
        tiers[tier.name] = tier
    tier_names = {name for name, _ in custom}
    policies: list[model.AntreaPolicy] = []
    for obj in policy_objects:
        try:
            policy = model.parse_policy(obj.kind, obj.raw, obj.source)
        except model.AntreaPolicyError as exc:
            problems.append(f"{obj.source}: {obj.kind}.crd.antrea.io {obj.key}: {exc}")
            continue
        reason = webhook.policy_reason(obj.raw, tier_names.__contains__)
        if reason:
            problems.append(f"{obj.source}: {obj.kind}.crd.antrea.io {obj.key}: {webhook.message(obj.kind, reason)}")
            continue
        policies.append(policy)
    if not policies:
        return None
    groups = []
    for obj in antrea_objects(state, model.GROUP_KINDS):
        try:
            groups.append(model.parse_group(obj.kind, obj.raw))
        except model.AntreaPolicyError as exc:
            problems.append(f"{obj.source}: {obj.kind}.crd.antrea.io {obj.key}: {exc}")
    known_groups = {(g.namespace, g.name) for g in groups}
    kept = []
    for policy in policies:
        if policy.kind == model.ANNP and policy.tier == model.BASELINE_TIER:
            problems.append(f"{policy.source}: {policy.ref}: spec.tier: Invalid value: 'baseline': only a "
                            "ClusterNetworkPolicy may be in the baseline tier")
            continue
        for direction in ("ingress", "egress"):
            for rule in policy.rules(direction):
                for what in rule.unsupported:
                    problems.append(f"{policy.source}: {policy.ref}: spec.{direction}[{rule.index}].{what}: not "
                                    "simulated, the rule is matched without it")
                for sel in (*(rule.peers or ()), *(rule.applied_to or ()), *(policy.applied_to or ())):
                    if sel.group and (policy.namespace, sel.group) not in known_groups:
                        kind = "ClusterGroup" if policy.kind == model.ACNP else f"Group of {policy.namespace}"
                        problems.append(f"{policy.source}: {policy.ref}: group {sel.group!r}: no such {kind}: it "
                                        "selects nothing")
        kept.append(policy)
    return build(kept, tuple(tiers.values()), groups)


__all__ = ["antrea_objects", "read"]
