"""The Calico objects of a ClusterState, read into a ``CalicoIndex`` (or None when there is no Calico policy).

Only Calico's NetworkPolicy and GlobalNetworkPolicy make the Calico walk necessary: without them
Calico's verdicts are Kubernetes NetworkPolicy's and ClusterNetworkPolicy's, which the engine's own
tiers give. Staged policies are never read here (Calico never enforces them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...cluster.state import ClusterState
from ..cluster import ClusterPolicy
from ..rules import Policy
from . import model
from .evaluate import CALICO_NAME, CalicoIndex, build
from .selector import SelectorError


def _group(raw: Mapping[str, Any]) -> str:
    return str(raw.get("apiVersion") or "").rpartition("/")[0]


def calico_objects(state: ClusterState, kinds: Sequence[str]) -> list[Any]:
    """The objects of Calico's groups of ``kinds`` (projectcalico.org or crd.projectcalico.org), in name order."""
    out = [o for o in state.others.values() if o.kind in kinds and _group(o.raw) in model.GROUPS]
    return sorted(out, key=lambda o: (o.kind, o.namespace, o.name))


def read(state: ClusterState, k8s_policies: Sequence[Policy],
         cluster_selecting: Callable[[Any, str, str], list[ClusterPolicy]], problems: list[str], *,
         force: bool = False) -> CalicoIndex | None:
    """The index, or None without any Calico policy (``force``: the index all the same, as staged policies are
    previewed against it); each object Calico would refuse is named in ``problems``."""
    policies: list[model.CalicoPolicy] = []
    for obj in calico_objects(state, model.POLICY_KINDS):
        try:
            policies.append(model.parse_policy(obj.kind, obj.raw, obj.source))
        except (model.CalicoPolicyError, SelectorError) as exc:
            problems.append(f"{obj.source}: {obj.kind}.{_group(obj.raw)} {obj.key}: {exc}")
    if not policies and not force:
        return None
    tiers = []
    for obj in calico_objects(state, (model.TIER_KIND,)):
        try:
            tiers.append(model.parse_tier(obj.raw))
        except model.CalicoPolicyError as exc:
            problems.append(f"{obj.source}: Tier {obj.name}: {exc}")
    for policy in policies:
        for direction in ("ingress", "egress"):
            for rule in policy.rules(direction):
                for what in rule.unsupported:
                    problems.append(f"{policy.source}: {policy.ref}: spec.{direction}[{rule.index}].{what}: not "
                                    "simulated, the rule is matched without it")
    known = {t.name for t in (*model.BUILTIN_TIERS, *tiers)}
    kept = []
    for policy in policies:
        if policy.tier not in known:
            problems.append(f"{policy.source}: {policy.ref}: spec.tier: Not found: {policy.tier!r}: Calico refuses a "
                            "policy whose tier does not exist")
            continue
        kept.append(policy)
    sets = []
    for obj in calico_objects(state, model.SET_KINDS):
        try:
            sets.append(model.parse_network_set(obj.kind, obj.raw))
        except model.CalicoPolicyError as exc:
            problems.append(f"{obj.source}: {obj.kind} {obj.key}: {exc}")
    # Kubernetes NetworkPolicies: the default tier, order 1000, their rules Allow rules.
    # The four possible type sets made once, not a frozenset per policy (10,000 of them).
    type_sets = {(i, e): frozenset(t for t, present in (("Ingress", i), ("Egress", e)) if present)
                 for i in (False, True) for e in (False, True)}
    for p in k8s_policies:
        if p.kind == "NetworkPolicy":
            types = type_sets[(p.ingress is not None, p.egress is not None)]
            kept.append(model.CalicoPolicy("NetworkPolicy", p.namespace, p.name, model.DEFAULT_TIER,
                                           model.KUBERNETES_POLICY_ORDER, None, None, None, types, (), (), p.source,
                                           k8s=p))

    accounts = {o.key: o for o in state.others.values() if o.kind == "ServiceAccount" and not _group(o.raw)}

    def service_account_labels(namespace: str, name: str) -> Mapping[str, str]:
        found = accounts.get(f"{namespace}/{name}")
        own = found.labels if found is not None else {}
        return {**own, CALICO_NAME: name}

    return build(kept, tiers, sets, service_account_labels, cluster_selecting, state.namespace_labels)


__all__ = ["calico_objects", "read"]
