"""The Antrea objects of a ClusterState, read into an ``AntreaIndex`` (or None when there is no Antrea policy).

Only Antrea's ClusterNetworkPolicy and NetworkPolicy make the Antrea walk necessary: without them an
Antrea cluster's verdicts are Kubernetes NetworkPolicy's (and the network-policy-api tiers'), which
the engine's own tiers give. Objects are found by their API group, never by kind name alone: Antrea's
NetworkPolicy shares its kind name with Kubernetes' (``cluster/state.stored_kind`` keys it as
``NetworkPolicy.crd.antrea.io``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ...cluster.state import ClusterState
from ...model.labels import Selector
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
    groups, group_sources = [], []
    for obj in antrea_objects(state, model.GROUP_KINDS):
        try:
            group = model.parse_group(obj.kind, obj.raw)
        except model.AntreaPolicyError as exc:
            problems.append(f"{obj.source}: {obj.kind}.crd.antrea.io {obj.key}: {exc}")
            continue
        if group.service is not None:
            group = _service_members(state, group, f"{obj.source}: {obj.kind}.crd.antrea.io {obj.key}", problems)
        groups.append(group)
        group_sources.append(f"{obj.source}: {obj.kind}.crd.antrea.io {obj.key}")
    known_groups = {(g.namespace, g.name) for g in groups}
    for group, where in zip(groups, group_sources, strict=True):
        # Antrea admits a childGroup that does not exist yet (pkg/controller/networkpolicy/validate.go): until it
        # does, it adds no member. The docs' own nested examples name `test-cg-ip-blocks` for `test-cg-ip-block`.
        for child in group.children:
            if (group.namespace, child) not in known_groups:
                scope = f"Group in {group.namespace}" if group.namespace else "ClusterGroup"
                problems.append(f"{where}: spec.childGroups: {child!r}: no such {scope}: it adds no member")
    kept = []
    for policy in policies:
        if policy.kind == model.ANNP and policy.tier == model.BASELINE_TIER:
            problems.append(f"{policy.source}: {policy.ref}: spec.tier: Invalid value: 'baseline': only a "
                            "ClusterNetworkPolicy may be in the baseline tier")
            continue
        for direction in ("ingress", "egress"):
            for rule in policy.rules(direction):
                for what in rule.unsupported:
                    effect = "the rule is matched without it"
                    if what == "protocols":
                        effect = "it matches only those protocols, so no TCP, UDP or SCTP connection"

                    problems.append(f"{policy.source}: {policy.ref}: spec.{direction}[{rule.index}].{what}: not "
                                    f"simulated, {effect}")
                for i, sel in enumerate(rule.applied_to or ()):
                    problems += _applied_to_notes(policy, sel, f"spec.{direction}[{rule.index}].appliedTo[{i}]")
                for sel in (*(rule.peers or ()), *(rule.applied_to or ()), *(policy.applied_to or ())):
                    if sel.group and (policy.namespace, sel.group) not in known_groups:
                        kind = "ClusterGroup" if policy.kind == model.ACNP else f"Group of {policy.namespace}"
                        problems.append(f"{policy.source}: {policy.ref}: group {sel.group!r}: no such {kind}: it "
                                        "selects nothing")
        for i, sel in enumerate(policy.applied_to or ()):
            problems += _applied_to_notes(policy, sel, f"spec.appliedTo[{i}]")
        kept.append(policy)
    outside = {name: host.addresses for name, host in sorted(state.config.outside.hosts.items())}
    for policy in kept:
        for rule in policy.egress:
            for sel in rule.peers or ():
                if sel.fqdn and not any(model.fqdn_matches(sel.fqdn, name) for name in outside):
                    problems.append(f"{policy.source}: {policy.ref}: spec.egress[{rule.index}].to[{sel.index}].fqdn "
                                    f"{sel.fqdn!r}: no name the cluster's DNS answers outside the cluster (the cluster "
                                    "config's outside hosts) matches it: it matches nothing here")
    return build(kept, tuple(tiers.values()), groups, outside)


def _applied_to_notes(policy: model.AntreaPolicy, sel: model.Selection, field: str) -> list[str]:
    out = []
    if sel.node_selector is not None:
        # docs/antrea-network-policy.md, "ACNP for Kubernetes Node traffic": a nodeSelector appliedTo makes a Node
        # NetworkPolicy, enforced on the node's own (host network) traffic, which knetsim does not simulate.
        out.append(f"{policy.source}: {policy.ref}: {field}.nodeSelector: a Node NetworkPolicy (the nodes' own "
                   "traffic) is not simulated: it applies to no pod here")
    if sel.service is not None:
        # "Apply to NodePort Service": external clients' traffic to the Service's node ports only.
        out.append(f"{policy.source}: {policy.ref}: {field}.service {'/'.join(sel.service)}: a policy on a NodePort "
                   "Service's external traffic is not simulated: it applies to no pod here")
    return out


def _service_members(state: ClusterState, group: model.AntreaGroup, where: str, problems: list[str]
                     ) -> model.AntreaGroup:
    """A serviceReference group: the backend pods of the Service, by its selector, in its namespace
    (docs/antrea-network-policy.md, "ClusterGroup CRD": a Service without a selector is ignored)."""
    assert group.service is not None
    namespace, name = group.service
    service = state.services.get(f"{namespace}/{name}")
    if service is None or not service.selector:
        why = "no such Service" if service is None else "the Service has no selector"
        problems.append(f"{where}: spec.serviceReference {namespace}/{name}: {why}: it selects nothing")
        return dataclasses.replace(group, pod_selector=Selector.none(), members_namespace=namespace)
    return dataclasses.replace(group, pod_selector=service.selector_view, members_namespace=namespace)


__all__ = ["antrea_objects", "read"]
