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

knetsim does not ship these kinds' CRDs, so objects may arrive untyped: ``parse`` checks what it
reads (``_Reader``) and an object it cannot read is reported, never half-applied. It reads the
experimental channel's fields too (``nodes`` and ``domainNames`` peers, v1alpha1 ``namedPort``).
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
    """Reads one object's spec as the CRD's schema would admit it, collecting every error with its path.

    knetsim does not ship the network-policy-api CRDs (docs/admission.md): without them the API
    server side admits these kinds untyped, so what the engine relies on is checked here, in the
    words kube-apiserver uses for the same schema constraints. The experimental channel's fields
    (``nodes`` and ``domainNames`` peers, v1alpha1 ``namedPort``) are read too: clusters that run
    it (OVN-Kubernetes) have them.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.errors: list[FieldError] = []

    def fail(self, error: FieldError) -> None:
        self.errors.append(error)

    def mapping(self, value: Any, path: Path) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(path.type_invalid(value, "must be of type object"))
            return {}
        return value

    def listing(self, value: Any, path: Path, *, minimum: int = 0) -> list[Any]:
        if value is None:
            value = []
        if not isinstance(value, list):
            self.fail(path.type_invalid(value, "must be of type array"))
            return []
        if len(value) < minimum:
            self.fail(path.invalid(len(value), f"should have at least {minimum} items"))
        return value

    def integer(self, value: Any, path: Path, lo: int, hi: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path.type_invalid(value, "must be of type integer"))
            return None
        if not lo <= value <= hi:
            word = f"should be greater than or equal to {lo}" if value < lo else f"should be less than or equal to {hi}"
            self.fail(path.invalid(value, f"{path} in body {word}"))
            return None
        return value

    def selector(self, raw: Any, path: Path) -> Selector:
        # One object per distinct selector: a thousand policies repeat a handful, and the matrix's caches
        # (keyed by selector) then find them by identity instead of comparing requirement tuples.
        body = self.mapping(raw if raw is not None else {}, path)
        try:
            key = json.dumps(body, sort_keys=True)
        except (TypeError, ValueError):
            key = ""
        found = _SELECTORS.get(key) if key else None
        if found is not None:
            return found
        before = len(self.errors)
        for i, expr in enumerate(self.listing(body.get("matchExpressions"), path.child("matchExpressions"))):
            where = path.child("matchExpressions").index(i)
            expr = self.mapping(expr, where)
            if expr.get("operator") not in _OPERATORS:
                self.fail(where.child("operator").not_supported(expr.get("operator"), list(_OPERATORS)))
        labels = body.get("matchLabels")
        if labels is not None and not (isinstance(labels, Mapping) and
                                       all(isinstance(v, str) for v in labels.values())):
            self.fail(path.child("matchLabels").type_invalid(labels, "must be a map of strings"))
        if len(self.errors) > before:
            return Selector.none()
        found = Selector.from_label_selector(body)
        if key and len(_SELECTORS) < 1 << 14:
            _SELECTORS[key] = found
        return found

    def one_of(self, raw: Mapping[str, Any], path: Path, fields: tuple[str, ...]) -> str | None:
        present = [f for f in raw if raw[f] is not None]
        known = [f for f in present if f in fields]
        if len(present) != 1 or not known:
            # "If an implementation sees no fields are set ... it should fail closed" (the peer's doc): the
            # object is not read at all rather than read differently from the cluster.
            detail = f"must have exactly one of {', '.join(fields)}" + (
                f" (has {', '.join(sorted(present))})" if present else "")
            self.fail(path.invalid(dict(raw), detail))
            return None
        return known[0]


@lru_cache(maxsize=1 << 12)
def _network(cidr: str) -> IPRange:
    return ip_range(cidr)


def _peers(r: _Reader, raw: Any, path: Path, direction: str, action: str) -> tuple[Peer, ...]:
    out: list[Peer] = []
    for i, item in enumerate(r.listing(raw, path, minimum=1)):
        where = path.index(i)
        item = r.mapping(item, where)
        field = r.one_of(item, where, PEER_FIELDS[direction])
        if field == "namespaces":
            out.append(Peer(i, "pods", namespace_selector=r.selector(item[field], where.child(field))))
        elif field == "pods":
            pods = r.mapping(item[field], where.child(field))
            out.append(Peer(i, "pods", namespace_selector=r.selector(pods.get("namespaceSelector"),
                                                                    where.child(field, "namespaceSelector")),
                            pod_selector=r.selector(pods.get("podSelector"), where.child(field, "podSelector"))))
        elif field == "nodes":
            out.append(Peer(i, "nodes", pod_selector=r.selector(item[field], where.child(field))))
        elif field == "networks":
            for k, cidr in enumerate(r.listing(item[field], where.child(field), minimum=1)):
                try:
                    out.append(Peer(i, "network", ip_range=_network(str(cidr))))
                except ValueError:
                    r.fail(where.child(field).index(k).invalid(cidr, "Invalid CIDR format provided"))
        elif field == "domainNames":
            names = r.listing(item[field], where.child(field), minimum=1)
            for k, name in enumerate(names):
                if not isinstance(name, str) or not DOMAIN_NAME.match(name):
                    r.fail(where.child(field).index(k).invalid(name, f"should match '{DOMAIN_NAME.pattern}'"))
            if action != ACCEPT:
                r.fail(where.child(field).forbidden("domainNames is only supported for Accept rules"))
            out.append(Peer(i, "domains", entity=",".join(str(n) for n in names)))
    return tuple(out)


def _port_number(r: _Reader, raw: Any, path: Path) -> int:
    return r.integer(raw, path, 1, 65535) or 1


def _v1alpha2_ports(r: _Reader, raw: Any, path: Path) -> tuple[Port, ...] | None:
    if raw is None:
        return None
    out = []
    for k, item in enumerate(r.listing(raw, path, minimum=1)):
        where = path.index(k)
        item = r.mapping(item, where)
        field = r.one_of(item, where, ("tcp", "udp", "sctp", "destinationNamedPort"))
        if field is None:
            continue
        if field == "destinationNamedPort":
            # A named port resolves on the destination pod, with the protocol its containerPort declares.
            out.append(Port(k, "ANY", str(item[field])))
            continue
        port = r.mapping(r.mapping(item[field], where.child(field)).get("destinationPort") or {},
                         where.child(field, "destinationPort"))
        at = where.child(field, "destinationPort")
        kind = r.one_of(port, at, ("number", "range"))
        if kind == "number":
            out.append(Port(k, field.upper(), _port_number(r, port["number"], at.child("number"))))
        elif kind == "range":
            span = r.mapping(port["range"], at.child("range"))
            lo = _port_number(r, span.get("start"), at.child("range", "start"))
            hi = _port_number(r, span.get("end"), at.child("range", "end"))
            if lo >= hi:
                r.fail(at.child("range").invalid(dict(span), "Start port must be less than End port"))
            out.append(Port(k, field.upper(), lo, hi))
    return tuple(out)


def _v1alpha1_ports(r: _Reader, raw: Any, path: Path) -> tuple[Port, ...] | None:
    if raw is None:
        return None
    out = []
    for k, item in enumerate(r.listing(raw, path, minimum=1)):
        where = path.index(k)
        item = r.mapping(item, where)
        field = r.one_of(item, where, ("portNumber", "portRange", "namedPort"))
        if field == "namedPort":
            out.append(Port(k, "ANY", str(item[field])))
            continue
        if field is None:
            continue
        p = r.mapping(item[field], where.child(field))
        protocol = p.get("protocol") or "TCP"  # +kubebuilder:default=TCP
        if protocol not in PROTOCOLS:
            r.fail(where.child(field, "protocol").not_supported(protocol, list(PROTOCOLS)))
        if field == "portNumber":
            out.append(Port(k, str(protocol), _port_number(r, p.get("port"), where.child(field, "port"))))
        else:
            lo = _port_number(r, p.get("start"), where.child(field, "start"))
            hi = _port_number(r, p.get("end"), where.child(field, "end"))
            out.append(Port(k, str(protocol), lo, hi))
    return tuple(out)


ACTIONS = {CLUSTER_NETWORK_POLICY: (ACCEPT, DENY, PASS), ADMIN_NETWORK_POLICY: ("Allow", DENY, PASS),
           BASELINE_ADMIN_NETWORK_POLICY: ("Allow", DENY)}


def _rules(r: _Reader, raw: Any, direction: str) -> tuple[ClusterRule, ...]:
    side = "from" if direction == INGRESS else "to"
    path = Path("spec").child(direction)
    out = []
    for i, rule in enumerate(r.listing(raw, path)):
        where = path.index(i)
        rule = r.mapping(rule, where)
        action = rule.get("action")
        if action not in ACTIONS[r.kind]:
            r.fail(where.child("action").not_supported(action, list(ACTIONS[r.kind])))
        action = ACCEPT if action == "Allow" else str(action)
        ports = (_v1alpha2_ports(r, rule.get("protocols"), where.child("protocols"))
                 if r.kind == CLUSTER_NETWORK_POLICY else _v1alpha1_ports(r, rule.get("ports"), where.child("ports")))
        peers = _peers(r, rule.get(side), where.child(side), direction, action)
        out.append(ClusterRule(i, str(rule.get("name") or ""), action, peers, ports))
    return tuple(out)


def parse(kind: str, body: Mapping[str, Any], source: Source = BUILTIN) -> ClusterPolicy:
    """One object of ``KINDS`` as a ``ClusterPolicy``; ClusterPolicyError names every field that is wrong."""
    r = _Reader(kind)
    spec = r.mapping(body.get("spec"), Path("spec"))
    name = str((body.get("metadata") or {}).get("name") or "")
    subject = r.mapping(spec.get("subject"), Path("spec").child("subject"))
    field = r.one_of(subject, Path("spec").child("subject"), ("namespaces", "pods"))
    ns_selector, pod_selector = Selector.none(), None
    if field == "namespaces":
        ns_selector = r.selector(subject[field], Path("spec").child("subject", field))
    elif field == "pods":
        pods = r.mapping(subject[field], Path("spec").child("subject", field))
        at = Path("spec").child("subject", field)
        ns_selector = r.selector(pods.get("namespaceSelector"), at.child("namespaceSelector"))
        pod_selector = r.selector(pods.get("podSelector"), at.child("podSelector"))
    priority: int | None = None
    tier = ADMIN if kind == ADMIN_NETWORK_POLICY else BASELINE
    if kind == CLUSTER_NETWORK_POLICY:
        tier = str(spec.get("tier"))
        if tier not in TIERS:
            r.fail(Path("spec").child("tier").not_supported(spec.get("tier"), list(TIERS)))
    if kind != BASELINE_ADMIN_NETWORK_POLICY:
        if "priority" not in spec:
            r.fail(Path("spec").child("priority").required())
        else:
            priority = r.integer(spec["priority"], Path("spec").child("priority"), 0, 1000)
    ingress, egress = _rules(r, spec.get("ingress"), INGRESS), _rules(r, spec.get("egress"), EGRESS)
    if r.errors:
        raise ClusterPolicyError(r.errors)
    return ClusterPolicy(kind, name, tier, priority, ns_selector, pod_selector, ingress, egress, source)


__all__ = ["ACCEPT", "ADMIN", "BASELINE", "DENY", "KINDS", "PASS", "TIERS", "ClusterPolicy", "ClusterPolicyError",
           "ClusterRule", "parse"]
