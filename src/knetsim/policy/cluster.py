"""ClusterNetworkPolicy (and the v1alpha1 AdminNetworkPolicy / BaselineAdminNetworkPolicy) in one shape.

``policy.networking.k8s.io/v1alpha2`` ClusterNetworkPolicy (network-policy-api v0.2+) puts a
policy in the ``Admin`` tier (before every NetworkPolicy) or the ``Baseline`` tier (after
them), with a ``priority`` 0-1000 and ordered rules whose ``action`` is Accept, Deny or Pass.
The v1alpha1 kinds are mapped as the v0.2 release notes map them ("AdminNetworkPolicy
becomes a ClusterNetworkPolicy with tier=Admin and BaselineAdminNetworkPolicy becomes a
ClusterNetworkPolicy with tier=Baseline"): Allow is Accept, ports become protocols. The
BaselineAdminNetworkPolicy is a singleton without a priority; when both API versions are
present it comes after every Baseline ClusterNetworkPolicy (no implementation runs both, so
there is no upstream order to follow; the verdict says which policy decided).

Objects reach this module already admitted by the vendored CRDs (schema, defaults, CEL), so
every field is where the schema says. The experimental channel's peers (``nodes``,
``domainNames``) and the v1alpha1 ``namedPort`` are not in the standard CRDs knetsim serves:
the API server drops them as unknown fields, as a cluster with the standard CRDs does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..model.labels import Selector
from ..model.loader import BUILTIN, Source
from ..model.objects import Pod
from .ports import PROTOCOLS
from .rules import INGRESS, IPRange, Peer, Port, ip_range, namespaces_text

CLUSTER_NETWORK_POLICY = "ClusterNetworkPolicy"
ADMIN_NETWORK_POLICY = "AdminNetworkPolicy"
BASELINE_ADMIN_NETWORK_POLICY = "BaselineAdminNetworkPolicy"
KINDS = (CLUSTER_NETWORK_POLICY, ADMIN_NETWORK_POLICY, BASELINE_ADMIN_NETWORK_POLICY)

ADMIN = "Admin"
BASELINE = "Baseline"
TIERS = (ADMIN, BASELINE)
ACCEPT, DENY, PASS = "Accept", "Deny", "Pass"
# The BaselineAdminNetworkPolicy has no priority; it sorts after every priority a ClusterNetworkPolicy can have.
NO_PRIORITY = 1001


@dataclass(frozen=True, slots=True)
class ClusterRule:
    """One ingress or egress rule: the first rule (in policy order) that matches a connection decides."""

    index: int
    name: str
    action: str  # Accept | Deny | Pass
    peers: tuple[Peer, ...]  # every item of from/to; a `networks` item is one Peer per CIDR, same index
    ports: tuple[Port, ...] | None  # None: every protocol and port (ICMP too)

    @property
    def label(self) -> str:
        """``deny-from-tenants``, or the position when the rule has no name."""
        return self.name or f"#{self.index + 1}"


@dataclass(frozen=True, slots=True)
class ClusterPolicy:
    kind: str
    name: str
    tier: str
    priority: int | None  # None: a BaselineAdminNetworkPolicy
    namespace_selector: Selector
    pod_selector: Selector | None  # None: every pod of the selected namespaces
    ingress: tuple[ClusterRule, ...]
    egress: tuple[ClusterRule, ...]
    source: Source = BUILTIN

    @property
    def key(self) -> str:
        return self.name

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.name}"

    @property
    def order(self) -> tuple[int, str, str]:
        # Equal priorities are left to implementations; kube-network-policies sorts by (priority, name),
        # and Calico orders equal `order` values by name: knetsim does the same.
        return (NO_PRIORITY if self.priority is None else self.priority, self.name, self.kind)

    @property
    def where(self) -> str:
        """``Admin tier, priority 10`` (how a verdict places the policy)."""
        return f"{self.tier} tier" + ("" if self.priority is None else f", priority {self.priority}")

    def rules(self, direction: str) -> tuple[ClusterRule, ...]:
        return self.ingress if direction == INGRESS else self.egress

    def selects(self, pod: Pod, namespace_labels: Callable[[str], Mapping[str, str]]) -> bool:
        """The subject: pods of the selected namespaces (AND the pod selector); never hostNetwork pods."""
        if pod.host_network or not self.namespace_selector.matches(namespace_labels(pod.namespace)):
            return False
        return self.pod_selector is None or self.pod_selector.matches(pod.labels)

    def subject_text(self) -> str:
        ns = namespaces_text(self.namespace_selector)
        if self.pod_selector is None:
            return f"every pod of {ns}"
        pods = "every pod" if self.pod_selector.empty else f"pods with {self.pod_selector.formatted()}"
        return f"{pods} in {ns}"


class ClusterPolicyError(ValueError):
    """An object of these kinds the engine cannot read (only when it bypassed admission)."""


_SELECTORS: dict[str, Selector] = {}


def _selector(raw: Any) -> Selector:
    # One object per distinct selector: a thousand policies repeat a handful, and the matrix's caches
    # (keyed by selector) then find them by identity instead of comparing requirement tuples.
    key = json.dumps(raw or {}, sort_keys=True)
    found = _SELECTORS.get(key)
    if found is None:
        found = Selector.from_label_selector(raw or {})
        if len(_SELECTORS) < 1 << 14:
            _SELECTORS[key] = found
    return found


@lru_cache(maxsize=1 << 12)
def _network(cidr: str) -> IPRange:
    return ip_range(cidr)


def _pods_peer(index: int, raw: Mapping[str, Any]) -> Peer:
    return Peer(index, "pods", namespace_selector=_selector(raw.get("namespaceSelector")),
                pod_selector=_selector(raw.get("podSelector")))


def _peers(items: list[Mapping[str, Any]], where: str) -> tuple[Peer, ...]:
    out: list[Peer] = []
    for i, item in enumerate(items):
        if "namespaces" in item:
            out.append(Peer(i, "pods", namespace_selector=_selector(item["namespaces"])))
        elif "pods" in item:
            out.append(_pods_peer(i, item["pods"]))
        elif "networks" in item:
            out += [Peer(i, "network", ip_range=_network(str(cidr))) for cidr in item["networks"]]
        else:
            # "If an implementation sees no fields are set ... it should fail closed" (the peer's doc).
            raise ClusterPolicyError(f"{where}[{i}]: no peer field this version knows ({', '.join(sorted(item))})")
    return tuple(out)


def _v1alpha2_ports(items: list[Mapping[str, Any]] | None) -> tuple[Port, ...] | None:
    if items is None:
        return None
    out = []
    for k, item in enumerate(items):
        if "destinationNamedPort" in item:
            # A named port resolves on the destination pod, with the protocol its containerPort declares.
            out.append(Port(k, "ANY", str(item["destinationNamedPort"])))
            continue
        for protocol in PROTOCOLS:
            spec = item.get(protocol.lower())
            if spec is None:
                continue
            port = spec.get("destinationPort") or {}
            if "range" in port:
                out.append(Port(k, protocol, int(port["range"]["start"]), int(port["range"]["end"])))
            elif "number" in port:
                out.append(Port(k, protocol, int(port["number"])))
            else:
                out.append(Port(k, protocol))
    return tuple(out)


def _v1alpha1_ports(items: list[Mapping[str, Any]] | None) -> tuple[Port, ...] | None:
    if items is None:
        return None
    out = []
    for k, item in enumerate(items):
        if "portNumber" in item:
            p = item["portNumber"]
            out.append(Port(k, str(p.get("protocol") or "TCP"), int(p["port"])))
        elif "portRange" in item:
            p = item["portRange"]
            out.append(Port(k, str(p.get("protocol") or "TCP"), int(p["start"]), int(p["end"])))
        elif "namedPort" in item:
            out.append(Port(k, "ANY", str(item["namedPort"])))
    return tuple(out)


def _rules(raw: list[Mapping[str, Any]] | None, direction: str, v1alpha1: bool) -> tuple[ClusterRule, ...]:
    side = "from" if direction == INGRESS else "to"
    out = []
    for i, rule in enumerate(raw or []):
        action = str(rule.get("action"))
        action = ACCEPT if action == "Allow" else action
        ports = _v1alpha1_ports(rule.get("ports")) if v1alpha1 else _v1alpha2_ports(rule.get("protocols"))
        out.append(ClusterRule(i, str(rule.get("name") or ""), action,
                               _peers(list(rule.get(side) or []), f"spec.{direction}[{i}].{side}"), ports))
    return tuple(out)


def parse(kind: str, body: Mapping[str, Any], source: Source = BUILTIN) -> ClusterPolicy:
    """One admitted object of ``KINDS`` as a ``ClusterPolicy``."""
    spec = body.get("spec") or {}
    name = str((body.get("metadata") or {}).get("name") or "")
    subject = spec.get("subject") or {}
    if "namespaces" in subject:
        ns_selector, pod_selector = _selector(subject["namespaces"]), None
    elif "pods" in subject:
        ns_selector = _selector(subject["pods"].get("namespaceSelector"))
        pod_selector = _selector(subject["pods"].get("podSelector"))
    else:
        raise ClusterPolicyError(f"spec.subject: neither namespaces nor pods ({', '.join(sorted(subject))})")
    v1alpha1 = kind != CLUSTER_NETWORK_POLICY
    if kind == CLUSTER_NETWORK_POLICY:
        tier, priority = str(spec.get("tier")), int(spec.get("priority", 0))
    elif kind == ADMIN_NETWORK_POLICY:
        tier, priority = ADMIN, int(spec.get("priority", 0))
    else:
        tier, priority = BASELINE, None
    return ClusterPolicy(kind, name, tier, priority, ns_selector, pod_selector,
                         _rules(spec.get("ingress"), INGRESS, v1alpha1), _rules(spec.get("egress"), "egress", v1alpha1),
                         source)


__all__ = ["ACCEPT", "ADMIN", "BASELINE", "DENY", "KINDS", "PASS", "TIERS", "ClusterPolicy", "ClusterPolicyError",
           "ClusterRule", "parse"]
