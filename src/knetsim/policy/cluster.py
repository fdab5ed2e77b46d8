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

Objects arrive admitted by the kinds' CRDs (knetsim's own definitions, model/apis, or a CRD the user
brought): ``parse`` reads that shape and checks only what the schema leaves open (selector
operators, v1alpha1 protocols, domainNames outside Accept rules); an object it cannot read is
reported, never half-applied. It reads the experimental channel's fields too (``nodes`` and
``domainNames`` peers, v1alpha1 ``namedPort``), which the experimental CRDs admit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..model.fielderr import FieldError, Path
from ..model.labels import Selector
from ..model.loader import BUILTIN, Source
from ..model.objects import Pod
from .ports import PROTOCOLS
from .rules import EGRESS, INGRESS, IPRange, Peer, Port, ip_range, namespaces_text

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
    """An object of these kinds the engine cannot read; the message names every field path wrong."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors


_SELECTORS: dict[str, Selector] = {}
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
# The CRD's DomainName pattern (including its A-z, which upstream has too).
DOMAIN_NAME = re.compile(r"^(\*\.)?([a-zA-z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\.)+"
                         r"[a-zA-z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\.?$")
PEER_FIELDS = {INGRESS: ("namespaces", "pods"), EGRESS: ("namespaces", "pods", "nodes", "networks", "domainNames")}


class _Reader:
    """Reads one admitted object's spec: its shape is the CRD's (admission pruned, typed and bounded it), so what
    is checked here is what the schema leaves to the implementation: a label selector's operator, a v1alpha1
    port's protocol, domainNames outside Accept rules. Errors are collected with their paths.

    The experimental channel's fields (``nodes`` and ``domainNames`` peers, v1alpha1 ``namedPort``) are read
    too: they reach here when the experimental CRDs are in force (a cluster running that channel).
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.errors: list[FieldError] = []

    def fail(self, error: FieldError) -> None:
        self.errors.append(error)

    def selector(self, body: Mapping[str, Any] | None, path: Path) -> Selector:
        # One object per distinct selector: a thousand policies repeat a handful, and the matrix's caches
        # (keyed by selector) then find them by identity instead of comparing requirement tuples.
        body = body or {}
        key = json.dumps(body, sort_keys=True)
        found = _SELECTORS.get(key)
        if found is not None:
            return found
        wrong = [(i, e.get("operator")) for i, e in enumerate(body.get("matchExpressions") or [])
                 if e.get("operator") not in _OPERATORS]
        for i, operator in wrong:
            self.fail(path.child("matchExpressions").index(i).child("operator").not_supported(operator,
                                                                                             list(_OPERATORS)))
        if wrong:
            return Selector.none()
        found = Selector.from_label_selector(body)
        if len(_SELECTORS) < 1 << 14:
            _SELECTORS[key] = found
        return found

    def pods(self, body: Mapping[str, Any], path: Path) -> tuple[Selector, Selector]:
        return (self.selector(body.get("namespaceSelector"), path.child("namespaceSelector")),
                self.selector(body.get("podSelector"), path.child("podSelector")))


@lru_cache(maxsize=1 << 12)
def _network(cidr: str) -> IPRange:
    return ip_range(cidr)


def _one(raw: Mapping[str, Any]) -> str:
    """The one member of a union the CRD admits with exactly one property."""
    (field,) = raw
    return str(field)


def _peers(r: _Reader, raw: list[Mapping[str, Any]], path: Path, direction: str, action: str) -> tuple[Peer, ...]:
    out: list[Peer] = []
    for i, item in enumerate(raw):
        where = path.index(i)
        field = _one(item)
        if field not in PEER_FIELDS[direction]:
            raise ValueError(f"{where}: {field} is no {direction} peer")
        value = item[field]
        if field == "namespaces":
            out.append(Peer(i, "pods", namespace_selector=r.selector(value, where.child(field))))
        elif field == "pods":
            namespaces, pods = r.pods(value, where.child(field))
            out.append(Peer(i, "pods", namespace_selector=namespaces, pod_selector=pods))
        elif field == "nodes":
            out.append(Peer(i, "nodes", pod_selector=r.selector(value, where.child(field))))
        elif field == "networks":
            for k, cidr in enumerate(value):
                try:
                    out.append(Peer(i, "network", ip_range=_network(str(cidr))))
                except ValueError:
                    r.fail(where.child(field).index(k).invalid(cidr, "Invalid CIDR format provided"))
        elif field == "domainNames":
            if action != ACCEPT:
                r.fail(where.child(field).forbidden("domainNames is only supported for Accept rules"))
            out.append(Peer(i, "domains", entity=",".join(str(n) for n in value)))
    return tuple(out)


def _v1alpha2_ports(raw: list[Mapping[str, Any]] | None) -> tuple[Port, ...] | None:
    if raw is None:
        return None
    out = []
    for k, item in enumerate(raw):
        field = _one(item)
        if field == "destinationNamedPort":
            # A named port resolves on the destination pod, with the protocol its containerPort declares.
            out.append(Port(k, "ANY", str(item[field])))
            continue
        port = item[field]["destinationPort"]
        if "number" in port:
            out.append(Port(k, field.upper(), int(port["number"])))
        else:
            out.append(Port(k, field.upper(), int(port["range"]["start"]), int(port["range"]["end"])))
    return tuple(out)


def _v1alpha1_ports(r: _Reader, raw: list[Mapping[str, Any]] | None, path: Path) -> tuple[Port, ...] | None:
    if raw is None:
        return None
    out = []
    for k, item in enumerate(raw):
        field = _one(item)
        if field == "namedPort":
            out.append(Port(k, "ANY", str(item[field])))
            continue
        p = item[field]
        protocol = str(p.get("protocol") or "TCP")  # +kubebuilder:default=TCP
        if protocol not in PROTOCOLS:  # the CRD takes any string here; the implementation knows three
            r.fail(path.index(k).child(field, "protocol").not_supported(protocol, list(PROTOCOLS)))
        if field == "portNumber":
            out.append(Port(k, protocol, int(p["port"])))
        else:
            out.append(Port(k, protocol, int(p["start"]), int(p["end"])))
    return tuple(out)


def _rules(r: _Reader, raw: list[Mapping[str, Any]] | None, direction: str) -> tuple[ClusterRule, ...]:
    side = "from" if direction == INGRESS else "to"
    path = Path("spec").child(direction)
    out = []
    for i, rule in enumerate(raw or []):
        where = path.index(i)
        action = ACCEPT if rule["action"] == "Allow" else str(rule["action"])
        ports = (_v1alpha2_ports(rule.get("protocols")) if r.kind == CLUSTER_NETWORK_POLICY
                 else _v1alpha1_ports(r, rule.get("ports"), where.child("ports")))
        peers = _peers(r, rule[side], where.child(side), direction, action)
        out.append(ClusterRule(i, str(rule.get("name") or ""), action, peers, ports))
    return tuple(out)


def parse(kind: str, body: Mapping[str, Any], source: Source = BUILTIN) -> ClusterPolicy:
    """One admitted object of ``KINDS`` as a ``ClusterPolicy``; ClusterPolicyError names every field that is wrong.

    Every object reaches here through admission (manifests, a snapshot, a cluster read with --kubeconfig,
    the live store), typed by the kind's CRD; one of another shape (a CRD in force that admits more) is
    refused whole, never half-applied.
    """
    r = _Reader(kind)
    try:
        spec = body["spec"]
        name = str(body["metadata"]["name"])
        subject_path = Path("spec").child("subject")
        field = _one(spec["subject"])
        value = spec["subject"][field]
        if field == "namespaces":
            ns_selector, pod_selector = r.selector(value, subject_path.child(field)), None
        else:
            ns_selector, pod_selector = r.pods(value, subject_path.child(field))
        tier = ADMIN if kind == ADMIN_NETWORK_POLICY else BASELINE
        if kind == CLUSTER_NETWORK_POLICY:
            tier = str(spec["tier"])
        priority = None if kind == BASELINE_ADMIN_NETWORK_POLICY else int(spec["priority"])
        ingress, egress = _rules(r, spec.get("ingress"), INGRESS), _rules(r, spec.get("egress"), EGRESS)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ClusterPolicyError([Path("spec").invalid(
            "object", f"not the shape its CustomResourceDefinition admits ({type(exc).__name__}: {exc})")]) from None
    if r.errors:
        raise ClusterPolicyError(r.errors)
    return ClusterPolicy(kind, name, tier, priority, ns_selector, pod_selector, ingress, egress, source)


__all__ = ["ACCEPT", "ADMIN", "BASELINE", "DENY", "KINDS", "PASS", "TIERS", "ClusterPolicy", "ClusterPolicyError",
           "ClusterRule", "parse"]
