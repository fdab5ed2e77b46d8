"""Calico's policy kinds, read into one shape: tiers, ordered policies, rules with source and destination.

Fields and defaults from Calico's ``projectcalico.org/v3`` API reference (docs.tigera.io: "Global
network policy", "Network policy", "Tier", "Network set", "Global network set") and its
``api/pkg/apis/projectcalico/v3`` types (projectcalico/calico); the storage form
``crd.projectcalico.org/v1`` has the same spec. Facts this reading rests on:

* ``order`` is a float, lower first; a policy without one comes after every policy with one;
  equal orders go by name;
* ``types`` defaults to ``[Ingress]`` when there are no egress rules, ``[Egress]`` when there are
  egress rules only, both when there are both (not Kubernetes' rule);
* ``selector`` defaults to ``all()``; a NetworkPolicy selects pods of its own namespace only; a
  GlobalNetworkPolicy's ``namespaceSelector`` picks the namespaces of the pods it selects;
* a rule's ``action`` is ``Allow``, ``Deny``, ``Log`` or ``Pass``; ``ports`` need ``protocol``
  TCP, UDP or SCTP; ports are numbers, ``"lo:hi"`` ranges, or names;
* tiers: ``default`` (order 1,000,000), and since Calico 3.32 ``kube-admin`` (1,000) and
  ``kube-baseline`` (10,000,000), both ``defaultAction: Pass``; a Tier's ``defaultAction``
  defaults to ``Deny`` and its ``order`` to last.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...model.kinds import CALICO, CNI_GROUPS
from ...model.loader import BUILTIN, Source
from .selector import Node, SelectorError, parse_field

# Calico's API groups, from its rows in model.kinds (projectcalico.org/v3 and the crd.projectcalico.org/v1 storage).
GROUPS = CNI_GROUPS[CALICO]
POLICY_KINDS = ("NetworkPolicy", "GlobalNetworkPolicy")
STAGED_KINDS = ("StagedNetworkPolicy", "StagedGlobalNetworkPolicy", "StagedKubernetesNetworkPolicy")
SET_KINDS = ("NetworkSet", "GlobalNetworkSet")
TIER_KIND = "Tier"
ACTIONS = ("Allow", "Deny", "Log", "Pass")
ALLOW, DENY, LOG, PASS = ACTIONS
INGRESS_TYPE, EGRESS_TYPE = "Ingress", "Egress"

DEFAULT_TIER = "default"
KUBE_ADMIN_TIER = "kube-admin"
KUBE_BASELINE_TIER = "kube-baseline"
DEFAULT_TIER_ORDER = 1_000_000.0
KUBE_ADMIN_ORDER = 1_000.0
KUBE_BASELINE_ORDER = 10_000_000.0
# The Kubernetes NetworkPolicies' place in the default tier (Calico converts each to a policy of order 1000).
KUBERNETES_POLICY_ORDER = 1000.0

# Protocol names and the numbers Calico accepts for them (numorstring.Protocol; IANA numbers).
PROTOCOL_NUMBERS = {"TCP": 6, "UDP": 17, "ICMP": 1, "ICMPV6": 58, "SCTP": 132, "UDPLITE": 136}
PORT_PROTOCOLS = ("TCP", "UDP", "SCTP")
# A client's source port: Linux's default ephemeral range (net.ipv4.ip_local_port_range).
EPHEMERAL_PORTS = (32768, 60999)


class CalicoPolicyError(ValueError):
    """An object Calico would refuse, with the field that says why."""


@dataclass(frozen=True, slots=True)
class PortSpec:
    """One ``ports`` entry: a range (``lo``..``hi``) or a named port (``name``)."""

    lo: int = 0
    hi: int = 0
    name: str = ""

    def describe(self) -> str:
        if self.name:
            return self.name
        return str(self.lo) if self.lo == self.hi else f"{self.lo}:{self.hi}"


@dataclass(frozen=True, slots=True)
class EntityRule:
    """A rule's ``source`` or ``destination``: every field given must match (Calico's EntityRule)."""

    nets: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] | None = None
    not_nets: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    selector: Node | None = None
    not_selector: Node | None = None
    namespace_selector: Node | None = None
    service_account_names: tuple[str, ...] | None = None
    service_account_selector: Node | None = None
    ports: tuple[PortSpec, ...] | None = None
    not_ports: tuple[PortSpec, ...] = ()
    services: str = ""  # services: {name, namespace} — not simulated (named by the verdict)

    @property
    def selects_endpoints(self) -> bool:
        """Does it pick endpoints by identity (then an address that is no Calico endpoint matches nothing)?"""
        return self.selector is not None or self.namespace_selector is not None \
            or self.service_account_names is not None or self.service_account_selector is not None

    def describe(self) -> str:
        parts = []
        if self.selector is not None:
            parts.append(f"selector {self.selector.canonical()}")
        if self.not_selector is not None:
            parts.append(f"notSelector {self.not_selector.canonical()}")
        if self.namespace_selector is not None:
            parts.append(f"namespaceSelector {self.namespace_selector.canonical()}")
        if self.service_account_names is not None:
            parts.append("serviceAccounts " + ",".join(self.service_account_names))
        if self.service_account_selector is not None:
            parts.append(f"serviceAccounts.selector {self.service_account_selector.canonical()}")
        if self.nets is not None:
            parts.append("nets " + ",".join(map(str, self.nets)))
        if self.not_nets:
            parts.append("notNets " + ",".join(map(str, self.not_nets)))
        if self.ports is not None:
            parts.append("ports " + ",".join(p.describe() for p in self.ports))
        if self.not_ports:
            parts.append("notPorts " + ",".join(p.describe() for p in self.not_ports))
        return "; ".join(parts) or "any"


ANY = EntityRule()


@dataclass(frozen=True, slots=True)
class CalicoRule:
    index: int
    action: str
    protocol: str | None = None  # upper-case name or a number as text; None: any
    not_protocol: str | None = None
    ip_version: int | None = None
    source: EntityRule = ANY
    destination: EntityRule = ANY
    unsupported: tuple[str, ...] = ()  # fields read but not simulated (http, services)


@dataclass(frozen=True, slots=True)
class CalicoPolicy:
    kind: str  # GlobalNetworkPolicy | NetworkPolicy (Calico's) | KubernetesNetworkPolicy
    namespace: str  # "" for a GlobalNetworkPolicy
    name: str
    tier: str
    order: float | None
    selector: Node | None  # None: a Kubernetes NetworkPolicy (selects by ``k8s``'s pod selector)
    namespace_selector: Node | None
    service_account_selector: Node | None
    types: frozenset[str]
    ingress: tuple[CalicoRule, ...]
    egress: tuple[CalicoRule, ...]
    source: Source = BUILTIN
    k8s: Any = None  # rules.Policy of a Kubernetes NetworkPolicy, evaluated in the default tier

    @property
    def display_kind(self) -> str:
        """``NetworkPolicy.projectcalico.org`` for Calico's namespaced kind, never confused with Kubernetes'."""
        return f"{self.kind}.projectcalico.org" if self.k8s is None and self.kind == "NetworkPolicy" else self.kind

    @property
    def ref(self) -> str:
        return f"{self.display_kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    @property
    def display_name(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def sort_key(self) -> tuple[bool, float, str]:
        """Calico's order within a tier: by ``order`` (none last), then by name (Kubernetes policies are named
        ``knp.default.<name>`` there)."""
        name = f"knp.default.{self.name}" if self.k8s is not None else self.display_name
        return (self.order is None, self.order or 0.0, name)

    def rules(self, direction: str) -> tuple[CalicoRule, ...]:
        return self.ingress if direction == "ingress" else self.egress

    def applies(self, direction: str) -> bool:
        return (INGRESS_TYPE if direction == "ingress" else EGRESS_TYPE) in self.types


@dataclass(frozen=True, slots=True)
class CalicoTier:
    name: str
    order: float | None
    default_action: str  # Deny | Pass

    def sort_key(self) -> tuple[bool, float, str]:
        return (self.order is None, self.order or 0.0, self.name)


@dataclass(frozen=True, slots=True)
class NetworkSet:
    namespace: str  # "" for a GlobalNetworkSet
    name: str
    labels: Mapping[str, str]
    nets: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

    @property
    def ref(self) -> str:
        kind = "NetworkSet" if self.namespace else "GlobalNetworkSet"
        return f"{kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


# --- reading ------------------------------------------------------------------------------------------------------


def _mapping(value: Any, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise CalicoPolicyError(f"{field}: Invalid value: expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, field: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise CalicoPolicyError(f"{field}: Invalid value: expected a list, got {type(value).__name__}")
    return value


def _selector(value: Any, field: str) -> Node | None:
    if value is None or value == "":
        return None if value is None else parse_field(value, field)
    try:
        return parse_field(value, field)
    except SelectorError as exc:
        raise CalicoPolicyError(str(exc)) from None


@functools.lru_cache(maxsize=4096)
def _network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    # Parsed once per distinct text (a network is immutable): a thousand policies repeat a few nets.
    return ipaddress.ip_network(text, strict=False)


def _nets(value: Any, field: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    out = []
    for i, text in enumerate(_list(value, field)):
        try:
            out.append(_network(str(text)))
        except ValueError:
            raise CalicoPolicyError(f"{field}[{i}]: Invalid value: {str(text)!r}: not a CIDR") from None
    return tuple(out)


def _ports(value: Any, field: str) -> tuple[PortSpec, ...]:
    out = []
    for i, item in enumerate(_list(value, field)):
        where = f"{field}[{i}]"
        if isinstance(item, bool):
            raise CalicoPolicyError(f"{where}: Invalid value: {item!r}: expected a port")
        if isinstance(item, int):
            lo = hi = item
        else:
            text = str(item)
            first, colon, last = text.partition(":")
            if not colon and not first.isdigit():
                if not text:
                    raise CalicoPolicyError(f"{where}: Invalid value: \"\": expected a port, range or name")
                out.append(PortSpec(name=text))
                continue
            if not first.isdigit() or (colon and not last.isdigit()):
                raise CalicoPolicyError(f"{where}: Invalid value: {text!r}: expected a port number, "
                                        "a range \"lo:hi\" or a port name")
            lo, hi = int(first), int(last) if colon else int(first)
        if not 0 <= lo <= hi <= 65535:
            raise CalicoPolicyError(f"{where}: Invalid value: {item!r}: ports are 0-65535, a range's first "
                                    "port not above its last")
        out.append(PortSpec(lo, hi))
    return tuple(out)


def _protocol(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= 255:
            raise CalicoPolicyError(f"{field}: Invalid value: {value}: a protocol number is 1-255")
        named = next((name for name, number in PROTOCOL_NUMBERS.items() if number == value), None)
        return named or str(value)
    text = str(value).upper()
    if text.isdigit():
        return _protocol(int(text), field)
    if text not in PROTOCOL_NUMBERS:
        raise CalicoPolicyError(f"{field}: Unsupported value: {value!r}: supported values: TCP, UDP, ICMP, ICMPv6, "
                                "SCTP, UDPLite, or a number 1-255")
    return text


def _entity(raw: Any, field: str, protocol: str | None) -> EntityRule:
    body = _mapping(raw, field)
    known = {"nets", "notNets", "selector", "notSelector", "namespaceSelector", "ports", "notPorts",
             "serviceAccounts", "services"}
    unknown = sorted(set(body) - known)
    if unknown:
        raise CalicoPolicyError(f"{field}.{unknown[0]}: unknown field; known: {', '.join(sorted(known))}")
    ports = _ports(body.get("ports"), f"{field}.ports") if "ports" in body else None
    not_ports = _ports(body.get("notPorts"), f"{field}.notPorts")
    if (ports or not_ports) and protocol not in PORT_PROTOCOLS:
        which = "ports" if ports else "notPorts"
        raise CalicoPolicyError(f"{field}.{which}: Invalid value: ports need the rule's protocol to be TCP, UDP or "
                                f"SCTP (protocol: {protocol or 'none'})")
    accounts = _mapping(body.get("serviceAccounts"), f"{field}.serviceAccounts")
    names = accounts.get("names")
    services = _mapping(body.get("services"), f"{field}.services")
    return EntityRule(
        nets=_nets(body.get("nets"), f"{field}.nets") if "nets" in body else None,
        not_nets=_nets(body.get("notNets"), f"{field}.notNets"),
        selector=_selector(body.get("selector"), f"{field}.selector"),
        not_selector=_selector(body.get("notSelector"), f"{field}.notSelector"),
        namespace_selector=_selector(body.get("namespaceSelector"), f"{field}.namespaceSelector"),
        service_account_names=tuple(str(n) for n in _list(names, f"{field}.serviceAccounts.names"))
        if names is not None else None,
        service_account_selector=_selector(accounts.get("selector"), f"{field}.serviceAccounts.selector"),
        ports=ports, not_ports=not_ports,
        services=f"{services.get('namespace', '')}/{services.get('name', '')}".lstrip("/") if services else "",
    )


# A thousand policies repeat a few hundred rules: a CalicoRule is frozen, so equal rules at the same index share one,
# made once. Keyed by the rule's text (``repr``: exact for the values YAML and JSON give); an error is raised anew,
# naming its own field; bounded.
_SHARED_RULES: dict[tuple[int, str], CalicoRule] = {}
_SHARED_RULES_MAX = 4096


def _rule(raw: Any, index: int, field: str) -> CalicoRule:
    key = (index, repr(raw))
    known = _SHARED_RULES.get(key)
    if known is None:
        known = _new_rule(raw, index, field)
        if len(_SHARED_RULES) < _SHARED_RULES_MAX:
            _SHARED_RULES[key] = known
    return known


def _new_rule(raw: Any, index: int, field: str) -> CalicoRule:
    body = _mapping(raw, field)
    action = body.get("action")
    if action not in ACTIONS:
        if action is None:
            raise CalicoPolicyError(f"{field}.action: Required value")
        raise CalicoPolicyError(f"{field}.action: Unsupported value: {action!r}: supported values: "
                                f"{', '.join(ACTIONS)}")
    protocol = _protocol(body.get("protocol"), f"{field}.protocol")
    not_protocol = _protocol(body.get("notProtocol"), f"{field}.notProtocol")
    version = body.get("ipVersion")
    if version not in (None, 4, 6):
        raise CalicoPolicyError(f"{field}.ipVersion: Unsupported value: {version!r}: supported values: 4, 6")
    unsupported = tuple(k for k in ("http",) if body.get(k))
    source = _entity(body.get("source"), f"{field}.source", protocol)
    destination = _entity(body.get("destination"), f"{field}.destination", protocol)
    unsupported += tuple(f"{side}.services" for side, e in (("source", source), ("destination", destination))
                         if e.services)
    return CalicoRule(index, str(action), protocol, not_protocol, version, source, destination, unsupported)


def _order(value: Any, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CalicoPolicyError(f"{field}: Invalid value: {value!r}: expected a number")
    return float(value)


def _types(spec: Mapping[str, Any], has_ingress: bool, has_egress: bool) -> frozenset[str]:
    raw = spec.get("types")
    if raw is None:
        # Calico's default: Egress alone only for a policy with egress rules and no ingress rules.
        if has_egress and not has_ingress:
            return frozenset({EGRESS_TYPE})
        return frozenset({INGRESS_TYPE, EGRESS_TYPE}) if has_egress else frozenset({INGRESS_TYPE})
    out = set()
    for i, item in enumerate(_list(raw, "spec.types")):
        if item not in (INGRESS_TYPE, EGRESS_TYPE):
            raise CalicoPolicyError(f"spec.types[{i}]: Unsupported value: {item!r}: supported values: Ingress, Egress")
        out.add(str(item))
    return frozenset(out)


def tier_of(spec: Mapping[str, Any]) -> str:
    """The policy's tier: ``spec.tier``, else ``default`` (a ``<tier>.`` name prefix alone places nothing)."""
    tier = spec.get("tier")
    return str(tier) if tier else DEFAULT_TIER


def parse_policy(kind: str, raw: Mapping[str, Any], source: Source = BUILTIN) -> CalicoPolicy:
    """A Calico NetworkPolicy or GlobalNetworkPolicy (or a Staged one, read the same way)."""
    meta = _mapping(raw.get("metadata"), "metadata")
    spec = _mapping(raw.get("spec"), "spec")
    namespaced = kind in ("NetworkPolicy", "StagedNetworkPolicy")
    ingress = tuple(_rule(r, i, f"spec.ingress[{i}]") for i, r in enumerate(_list(spec.get("ingress"),
                                                                                  "spec.ingress")))
    egress = tuple(_rule(r, i, f"spec.egress[{i}]") for i, r in enumerate(_list(spec.get("egress"), "spec.egress")))
    if spec.get("doNotTrack") or spec.get("preDNAT"):
        # Those act on host endpoints only; knetsim has none, so the policy selects no pod. (applyOnForward alone
        # adds forwarded host traffic and leaves the policy's pods as they are: docs.tigera.io, GlobalNetworkPolicy.)
        ingress, egress = (), ()
        types: frozenset[str] = frozenset()
    else:
        types = _types(spec, bool(ingress), bool(egress))
    selector = _selector(spec.get("selector"), "spec.selector")
    return CalicoPolicy(
        kind, str(meta.get("namespace") or "") if namespaced else "", str(meta.get("name") or ""),
        tier_of(spec), _order(spec.get("order"), "spec.order"),
        selector if selector is not None else parse_field(None, "spec.selector"),
        None if namespaced else _selector(spec.get("namespaceSelector"), "spec.namespaceSelector"),
        _selector(spec.get("serviceAccountSelector"), "spec.serviceAccountSelector"),
        types, ingress, egress, source)


def parse_tier(raw: Mapping[str, Any]) -> CalicoTier:
    meta = _mapping(raw.get("metadata"), "metadata")
    spec = _mapping(raw.get("spec"), "spec")
    action = spec.get("defaultAction", DENY)
    if action not in (DENY, PASS):
        raise CalicoPolicyError(f"spec.defaultAction: Unsupported value: {action!r}: supported values: Deny, Pass")
    name = str(meta.get("name") or "")
    order = _order(spec.get("order"), "spec.order")
    fixed = {DEFAULT_TIER: DEFAULT_TIER_ORDER, KUBE_ADMIN_TIER: KUBE_ADMIN_ORDER,
             KUBE_BASELINE_TIER: KUBE_BASELINE_ORDER}
    return CalicoTier(name, fixed.get(name, order), str(action))


def parse_network_set(kind: str, raw: Mapping[str, Any]) -> NetworkSet:
    meta = _mapping(raw.get("metadata"), "metadata")
    spec = _mapping(raw.get("spec"), "spec")
    labels = {str(k): str(v) for k, v in _mapping(meta.get("labels"), "metadata.labels").items()}
    return NetworkSet(str(meta.get("namespace") or "") if kind == "NetworkSet" else "", str(meta.get("name") or ""),
                      labels, _nets(spec.get("nets"), "spec.nets"))


BUILTIN_TIERS = (CalicoTier(KUBE_ADMIN_TIER, KUBE_ADMIN_ORDER, PASS),
                 CalicoTier(DEFAULT_TIER, DEFAULT_TIER_ORDER, DENY),
                 CalicoTier(KUBE_BASELINE_TIER, KUBE_BASELINE_ORDER, PASS))


__all__ = ["ACTIONS", "BUILTIN_TIERS", "CalicoPolicy", "CalicoPolicyError", "CalicoRule", "CalicoTier", "EntityRule",
           "NetworkSet", "PortSpec", "parse_network_set", "parse_policy", "parse_tier"]
