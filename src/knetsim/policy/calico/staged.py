"""Calico's staged policies: never enforced, each a preview of what enforcing it would change.

``StagedNetworkPolicy`` and ``StagedGlobalNetworkPolicy`` carry a Calico policy's spec and
``stagedAction`` (``Set``, the default: the policy of the same name as written here; ``Delete``:
that policy gone); ``StagedKubernetesNetworkPolicy`` carries a Kubernetes NetworkPolicy's spec
(docs.tigera.io, "Stage, preview impacts, and enforce policy"). A preview is the index with that
one change, asked the same question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...cluster.state import ClusterState
from ...model import admission
from ...model.fielderr import ErrorType, FieldError
from ...model.objects import NetworkPolicy
from ..rules import from_network_policy
from . import model
from .evaluate import CalicoIndex, build
from .read import calico_objects
from .selector import SelectorError


@dataclass(frozen=True, slots=True)
class StagedChange:
    """One staged policy: what it would put in force (None: it deletes) and the enforced policy it replaces."""

    ref: str  # StagedGlobalNetworkPolicy deny-all
    policy: model.CalicoPolicy | None
    replaces: tuple[str, str, str]  # (kind, namespace, name) of the enforced policy it stands for


_ENFORCED_KIND = {"StagedNetworkPolicy": "NetworkPolicy", "StagedGlobalNetworkPolicy": "GlobalNetworkPolicy",
                  "StagedKubernetesNetworkPolicy": "KubernetesNetworkPolicy"}


def read_staged(state: ClusterState, problems: list[str]) -> list[StagedChange]:
    out = []
    for obj in calico_objects(state, model.STAGED_KINDS):
        ref = f"{obj.kind} {obj.key}"
        kind = _ENFORCED_KIND[obj.kind]
        spec = obj.raw.get("spec") or {}
        try:
            if spec.get("stagedAction", "Set") == "Delete":
                policy = None
            elif obj.kind == "StagedKubernetesNetworkPolicy":
                if errors := kubernetes_policy_errors(obj.raw):
                    problems.append(f"{obj.source}: {ref}: {'; '.join(map(str, errors))} (the staged policy is "
                                    "ignored)")
                    continue
                policy = _kubernetes(obj.raw)
            else:
                policy = model.parse_policy(obj.kind, obj.raw, obj.source)
                policy = model.CalicoPolicy(kind, *_fields(policy))
        except (model.CalicoPolicyError, SelectorError, ValueError, TypeError, KeyError) as exc:
            problems.append(f"{obj.source}: {ref}: {exc}")
            continue
        out.append(StagedChange(ref, policy, (kind, obj.namespace, obj.name)))
    return out


def _fields(policy: model.CalicoPolicy) -> tuple[Any, ...]:
    return (policy.namespace, policy.name, policy.tier, policy.order, policy.selector, policy.namespace_selector,
            policy.service_account_selector, policy.types, policy.ingress, policy.egress, policy.source)


def kubernetes_policy_errors(body: Mapping[str, Any]) -> list[FieldError]:
    """A StagedKubernetesNetworkPolicy's spec is a Kubernetes NetworkPolicy's (and ``stagedAction``): what the API
    server would refuse of that NetworkPolicy, its types and then its rules. The live cluster's admission and the
    offline read both ask this, so neither reads a spec the other refuses."""
    kind = admission.resolve("networking.k8s.io/v1", "NetworkPolicy")
    assert kind is not None
    as_policy = {**body, "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy"}
    try:
        decoded = admission.decode(as_policy, kind, admission.FieldValidation.IGNORE)
    except admission.AdmissionError as exc:
        return [FieldError("spec", ErrorType.TYPE_INVALID, detail=exc.message.rpartition(": ")[2])]
    return admission.validation_errors(admission.default(decoded.obj, kind), kind)


def _kubernetes(raw: dict[str, Any]) -> model.CalicoPolicy:
    spec = dict(raw.get("spec") or {})
    if not spec.get("policyTypes"):
        # The API server's defaulting of a Kubernetes NetworkPolicy: Ingress, and Egress when it has egress rules.
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
    body = {**raw, "kind": "NetworkPolicy", "apiVersion": "networking.k8s.io/v1", "spec": spec}
    np = from_network_policy(NetworkPolicy.parse(body))  # type: ignore[arg-type]
    types = frozenset(t for t, rules in (("Ingress", np.ingress), ("Egress", np.egress)) if rules is not None)
    return model.CalicoPolicy("NetworkPolicy", np.namespace, np.name, model.DEFAULT_TIER,
                              model.KUBERNETES_POLICY_ORDER, None, None, None, types, (), (), np.source, k8s=np)


def _identity(policy: model.CalicoPolicy) -> tuple[str, str, str]:
    kind = "KubernetesNetworkPolicy" if policy.k8s is not None else policy.kind
    return (kind, policy.namespace, policy.name)


def with_change(index: CalicoIndex, change: StagedChange) -> CalicoIndex:
    """``index`` with the staged change in force."""
    policies: Sequence[model.CalicoPolicy] = [p for tier in index.policies.values() for p in tier
                                              if _identity(p) != change.replaces]
    if change.policy is not None:
        policies = [*policies, change.policy]
    return build(policies, index.tiers, index.network_sets, index.service_account_labels, index.cluster_selecting,
                 index.namespace_labels)


__all__ = ["StagedChange", "read_staged", "with_change"]
