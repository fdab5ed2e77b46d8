"""Antrea's policy kinds, read into one shape: tiers, policies ordered by priority, rules with peers.

Fields and defaults from antrea-io/antrea ``pkg/apis/crd/v1beta1/types.go`` (NetworkPolicySpec, Rule,
NetworkPolicyPeer, PeerNamespaces, AppliedTo, Tier, ClusterGroup/Group GroupSpec) and
``docs/antrea-network-policy.md``. Facts this reading rests on:

* static tiers ``emergency`` 50, ``securityops`` 100, ``networkops`` 150, ``platform`` 200,
  ``application`` 250 (the default ``tier``) and ``baseline`` 253; a Tier object has its own
  ``priority`` (0-255, none taken or reserved: webhook.py); lower priority first; a policy names a static tier
  by its CamelCase name or its Tier object's lower-case one (webhook.py refuses any other spelling);
* ``priority`` is a float, 1.0-10000.0, lower first, whatever the kind (ClusterNetworkPolicy or
  NetworkPolicy); rules by (policy priority, place in the policy), so rules of equal-priority
  policies interleave; equal (priority, place) is undefined upstream ("enforced
  indeterministically"): knetsim's choice is ClusterNetworkPolicies first, then names;
* actions Allow, Drop, Reject, Pass; Pass punts the traffic to Kubernetes NetworkPolicy
  (types.go: "will not be evaluated by Antrea NetworkPolicy or ClusterNetworkPolicy");
* ``appliedTo`` at the policy level, or on every rule (never both);
* peers: ``podSelector``, ``namespaceSelector``, ``namespaces: {match: Self}`` (ACNP only),
  ``ipBlock`` (beside selectors, the ipBlock alone), ``group`` (a ClusterGroup for an ACNP, a Group of the
  policy's namespace for an ANNP), ``serviceAccount`` (the pods of that namespace running as it);
  in an ACNP a podSelector alone selects pods of every namespace, in an ANNP of its own namespace;
* no isolation: traffic no Antrea rule matches goes on (to Kubernetes NetworkPolicy, then Baseline).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...model.kinds import ANTREA, CNI_GROUPS
from ...model.labels import Selector
from ...model.loader import BUILTIN, Source
from ..rules import IPRange, Port, ip_range

GROUPS = CNI_GROUPS[ANTREA]  # its rows in model.kinds
ACNP, ANNP = "ClusterNetworkPolicy", "NetworkPolicy"
POLICY_KINDS = (ACNP, ANNP)
TIER_KIND = "Tier"
GROUP_KINDS = ("ClusterGroup", "Group")
ACTIONS = ("Allow", "Drop", "Reject", "Pass")
ALLOW, DROP, REJECT, PASS = ACTIONS
DEFAULT_TIER = "application"
BASELINE_TIER = "baseline"
STATIC_TIERS: dict[str, float] = {"emergency": 50, "securityops": 100, "networkops": 150, "platform": 200,
                                  "application": 250, "baseline": 253}
PROTOCOLS = ("TCP", "UDP", "SCTP")


class AntreaPolicyError(ValueError):
    """An object Antrea would refuse, with the field that says why."""


@dataclass(frozen=True, slots=True)
class Selection:
    """An ``appliedTo`` entry or a rule peer: every field given must match."""

    index: int
    pod_selector: Selector | None = None
    namespace_selector: Selector | None = None
    same_namespace: bool = False  # namespaces: {match: Self}
    ip_block: IPRange | None = None
    group: str = ""  # a ClusterGroup (ACNP) or a Group of the policy's namespace (ANNP)
    service_account: tuple[str, str] | None = None  # (namespace, name): the pods running as it
    # Nodes by their labels: as a peer, the node's addresses; as an appliedTo, the node's own traffic (a Node
    # NetworkPolicy, not simulated), so never a pod (docs/antrea-network-policy.md, "Node Selector").
    node_selector: Selector | None = None
    # An egress peer's FQDN, exact or with `*` wildcards (which span dots: "*foobar.com" is foobar.com and
    # www.foobar.com; antrea-io/antrea pkg/agent/controller/networkpolicy/fqdn.go, toRegex): lower-case.
    fqdn: str = ""
    # An appliedTo's NodePort Service (namespace, name): the policy acts on external clients' traffic to the
    # Service's node ports (docs/antrea-network-policy.md, "Apply to NodePort Service"), never on a pod's own.
    service: tuple[str, str] | None = None

    def describe(self) -> str:
        parts = []
        if self.service is not None:
            parts.append(f"NodePort Service {'/'.join(self.service)}")
        if self.fqdn:
            parts.append(f"fqdn {self.fqdn}")
        if self.node_selector is not None:
            parts.append(f"nodes {self.node_selector.formatted()}")
        if self.group:
            parts.append(f"group {self.group}")
        if self.service_account is not None:
            parts.append(f"serviceAccount {'/'.join(self.service_account)}")
        if self.pod_selector is not None:
            parts.append(f"pods {self.pod_selector.formatted()}")
        if self.namespace_selector is not None:
            parts.append(f"namespaces {self.namespace_selector.formatted()}")
        if self.same_namespace:
            parts.append("namespaces: match Self")
        if self.ip_block is not None:
            parts.append(f"ipBlock {self.ip_block.describe()}")
        return " and ".join(parts) or "any"


@dataclass(frozen=True, slots=True)
class AntreaRule:
    index: int
    name: str
    action: str
    peers: tuple[Selection, ...] | None  # None: every peer (no from/to)
    ports: tuple[Port, ...] | None  # None: every port and protocol
    applied_to: tuple[Selection, ...] | None = None  # rule-level appliedTo
    unsupported: tuple[str, ...] = ()  # read but not simulated (fqdn, ...)
    # An egress rule's toServices: ``ns/name`` of Services, matched on traffic addressed to their cluster IP
    # (AntreaProxy marks it with the Service's group), never on traffic to an endpoint's own address.
    to_services: tuple[str, ...] = ()

    def text(self) -> str:
        if self.to_services:
            return f"Service {', '.join(self.to_services)} (by its cluster IP); any port of it"
        peers = "; ".join(p.describe() for p in self.peers) if self.peers is not None else "any peer"
        ports = ", ".join(p.describe() for p in self.ports) if self.ports else "any port"
        if self.ports == ():  # `protocols` only: ICMP or IGMP
            ports = "no TCP, UDP or SCTP port"
        return f"{peers}; {ports}"


@dataclass(frozen=True, slots=True)
class AntreaPolicy:
    kind: str  # ClusterNetworkPolicy | NetworkPolicy (Antrea's)
    namespace: str  # "" for an ACNP
    name: str
    tier: str  # lower-case
    priority: float
    applied_to: tuple[Selection, ...] | None  # None: the rules' own appliedTo
    ingress: tuple[AntreaRule, ...]
    egress: tuple[AntreaRule, ...]
    source: Source = BUILTIN

    @property
    def display_kind(self) -> str:
        """``ClusterNetworkPolicy.crd.antrea.io``: never confused with the Kubernetes kinds of the same names."""
        return f"{self.kind}.crd.antrea.io"

    @property
    def display_name(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def ref(self) -> str:
        return f"{self.display_kind} {self.display_name}"

    def sort_key(self) -> tuple[float, int, str]:
        return (self.priority, 0 if self.kind == ACNP else 1, self.display_name)

    def rules(self, direction: str) -> tuple[AntreaRule, ...]:
        return self.ingress if direction == "ingress" else self.egress


@dataclass(frozen=True, slots=True)
class AntreaTier:
    name: str
    priority: float

    @property
    def baseline(self) -> bool:
        return self.name == BASELINE_TIER


@dataclass(frozen=True, slots=True)
class AntreaGroup:
    """A ClusterGroup (namespace "") or a Group: the pods and addresses it selects."""

    namespace: str
    name: str
    pod_selector: Selector | None
    namespace_selector: Selector | None
    ip_blocks: tuple[IPRange, ...]
    children: tuple[str, ...]
    # serviceReference (namespace, name): the Service's backend pods, by its selector (read.py resolves it into
    # pod_selector and members_namespace: docs/antrea-network-policy.md, "ClusterGroup CRD").
    service: tuple[str, str] | None = None
    members_namespace: str = ""  # the namespace the pods must be in ("" : the group's own rule)
    node_selector: Selector | None = None  # as a peer, the addresses of the nodes it selects


BUILTIN_TIERS = tuple(AntreaTier(n, p) for n, p in STATIC_TIERS.items())

# --- reading ----------------------------------------------------------------------------------------------------


def _mapping(value: Any, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AntreaPolicyError(f"{field}: Invalid value: expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, field: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise AntreaPolicyError(f"{field}: Invalid value: expected a list, got {type(value).__name__}")
    return value


def _selector(value: Any, field: str) -> Selector | None:
    if value is None:
        return None
    try:
        return Selector.from_label_selector(_mapping(value, field))
    except ValueError as exc:
        raise AntreaPolicyError(f"{field}: Invalid value: {exc}") from None


def fqdn_matches(expression: str, name: str) -> bool:
    """Does Antrea's FQDN ``expression`` (exact, or ``*`` for any characters, dots included) select ``name``?"""
    name = name.strip().lower().rstrip(".")
    if "*" not in expression:
        return name == expression
    regex = ".*".join(re.escape(part) for part in expression.split("*"))
    return re.fullmatch(regex, name) is not None


def _ip_block(value: Any, field: str) -> IPRange:
    body = _mapping(value, field)
    cidr = body.get("cidr")
    if not cidr:
        raise AntreaPolicyError(f"{field}.cidr: Required value")
    excepts = tuple(str(e) for e in _list(body.get("except"), f"{field}.except"))
    for path, text in ((f"{field}.cidr", str(cidr)), *((f"{field}.except[{i}]", e) for i, e in enumerate(excepts))):
        try:
            if "/" not in text:  # format cidr is Go's net.ParseCIDR: an address alone is no CIDR
                raise ValueError(text)
            ip_range(text)
        except ValueError:  # the CRD's `format: cidr`, in apiextensions' words
            raise AntreaPolicyError(f'{path}: Invalid value: "{text}": {path} in body must be of type cidr: '
                                    f'"{text}"') from None
    return ip_range(str(cidr), excepts)  # an except outside the cidr is the webhook's to refuse (webhook.py)


def _selection(raw: Any, index: int, field: str, *, cluster: bool, peer: bool) -> Selection:
    body = _mapping(raw, field)
    namespaces = _mapping(body.get("namespaces"), f"{field}.namespaces")
    match = namespaces.get("match")
    if namespaces.get("sameLabels") is not None:
        raise AntreaPolicyError(f"{field}.namespaces.sameLabels: not simulated by knetsim: the policy is left out "
                                "of every answer")
    if namespaces and str(match).lower() != "self":
        # SameLabels (and anything else) is not simulated: refused rather than guessed.
        raise AntreaPolicyError(f"{field}.namespaces.match: Unsupported value: {match!r}: supported values: Self")
    if namespaces and not cluster:
        raise AntreaPolicyError(f"{field}.namespaces: Forbidden: only an Antrea ClusterNetworkPolicy may set it")
    given = body.get("serviceAccount") is not None  # `serviceAccount: {}` too: the CRD requires its two fields
    account = _mapping(body.get("serviceAccount"), f"{field}.serviceAccount")
    for key in ("name", "namespace") if given else ():
        if not account.get(key):
            raise AntreaPolicyError(f"{field}.serviceAccount.{key}: Required value")
    # A group, an ipBlock or a service account beside other fields: the webhook refuses the first and the last
    # (webhook.py); an ipBlock beside selectors is admitted, and Antrea reads the ipBlock alone (crd_utils.go,
    # toAntreaPeerForCRD), as selection_matches does.
    return Selection(
        index,
        _selector(body.get("podSelector"), f"{field}.podSelector"),
        _selector(body.get("namespaceSelector"), f"{field}.namespaceSelector"),
        bool(namespaces),
        _ip_block(body["ipBlock"], f"{field}.ipBlock") if peer and body.get("ipBlock") is not None else None,
        str(body.get("group") or ""),
        (str(account["namespace"]), str(account["name"])) if given else None,
        _selector(body.get("nodeSelector"), f"{field}.nodeSelector"),
        str(body.get("fqdn") or "").strip().lower() if peer else "",
        _service_ref(body.get("service"), f"{field}.service") if not peer else None)


def _service_ref(value: Any, field: str) -> tuple[str, str] | None:
    if value is None:
        return None
    body = _mapping(value, field)
    for key in ("name", "namespace"):
        if not body.get(key):
            raise AntreaPolicyError(f"{field}.{key}: Required value")
    return str(body["namespace"]), str(body["name"])


def _ports(value: Any, field: str) -> tuple[Port, ...] | None:
    if value is None:
        return None
    out = []
    for i, raw in enumerate(_list(value, field)):
        body = _mapping(raw, f"{field}[{i}]")
        protocol = str(body.get("protocol") or "TCP").upper()
        if protocol not in PROTOCOLS:
            raise AntreaPolicyError(f"{field}[{i}].protocol: Unsupported value: {body.get('protocol')!r}: supported "
                                    "values: TCP, UDP, SCTP")
        port = body.get("port")
        end = body.get("endPort")  # without a numeric port at or below it, the webhook refuses it (webhook.py)
        out.append(Port(i, protocol, port if port is None or isinstance(port, int) else str(port),
                        int(end) if isinstance(end, int) and isinstance(port, int) and end >= port else None))
    return tuple(out)


def _rule(raw: Any, index: int, field: str, direction: str, *, cluster: bool) -> AntreaRule:
    body = _mapping(raw, field)
    action = body.get("action")
    if action not in ACTIONS:
        if action is None:
            raise AntreaPolicyError(f"{field}.action: Required value")
        raise AntreaPolicyError(f"{field}.action: Unsupported value: {action!r}: supported values: "
                                f"{', '.join(ACTIONS)}")
    side = "from" if direction == "ingress" else "to"
    raw_peers = body.get(side)
    peers = tuple(_selection(p, i, f"{field}.{side}[{i}]", cluster=cluster, peer=True)
                  for i, p in enumerate(_list(raw_peers, f"{field}.{side}"))) if raw_peers else None
    applied = body.get("appliedTo")
    applied_to = tuple(_selection(a, i, f"{field}.appliedTo[{i}]", cluster=cluster, peer=False)
                       for i, a in enumerate(_list(applied, f"{field}.appliedTo"))) if applied else None
    unsupported = tuple(k for k in ("protocols", "l7Protocols") if body.get(k))
    to_services = []
    for i, ref in enumerate(_list(body.get("toServices"), f"{field}.toServices") if side == "to" else ()):
        ref = _mapping(ref, f"{field}.toServices[{i}]")
        for key in ("name", "namespace"):
            if not ref.get(key):
                raise AntreaPolicyError(f"{field}.toServices[{i}].{key}: Required value")
        to_services.append(f"{ref['namespace']}/{ref['name']}")
    unsupported += tuple(f"{side}[{i}].{k}" for i, p in enumerate(_list(raw_peers, f"{field}.{side}"))
                         for k in ("scope",) if isinstance(p, Mapping)
                         and p.get(k))
    # A rule without a name gets one from Antrea (``<direction>-<action>-<hash>``): none is shown for it here.
    ports = _ports(body.get("ports"), f"{field}.ports")
    if body.get("protocols") and ports is None:
        # `protocols` (ICMP, IGMP) narrows the rule to those protocols (docs/antrea-network-policy.md, "ACNP for ICMP
        # traffic"): it matches no TCP, UDP or SCTP connection, the only ones knetsim answers for.
        ports = ()
    return AntreaRule(index, str(body.get("name") or ""), str(action), peers,
                      ports, applied_to, unsupported, tuple(to_services))


def parse_policy(kind: str, raw: Mapping[str, Any], source: Source = BUILTIN) -> AntreaPolicy:
    """An Antrea ClusterNetworkPolicy or (namespaced) NetworkPolicy."""
    meta = _mapping(raw.get("metadata"), "metadata")
    spec = _mapping(raw.get("spec"), "spec")
    cluster = kind == ACNP
    priority = spec.get("priority")
    if priority is None:
        raise AntreaPolicyError("spec.priority: Required value")
    if isinstance(priority, bool) or not isinstance(priority, int | float) or not 1 <= priority <= 10000:
        raise AntreaPolicyError(f"spec.priority: Invalid value: {priority!r}: a number from 1.0 to 10000.0")
    applied = spec.get("appliedTo")
    applied_to = tuple(_selection(a, i, f"spec.appliedTo[{i}]", cluster=cluster, peer=False)
                       for i, a in enumerate(_list(applied, "spec.appliedTo"))) if applied else None
    ingress = tuple(_rule(r, i, f"spec.ingress[{i}]", "ingress", cluster=cluster)
                    for i, r in enumerate(_list(spec.get("ingress"), "spec.ingress")))
    egress = tuple(_rule(r, i, f"spec.egress[{i}]", "egress", cluster=cluster)
                   for i, r in enumerate(_list(spec.get("egress"), "spec.egress")))
    # appliedTo on the policy and on rules, on neither, or on some rules only: the webhook's (webhook.py)
    tier = str(spec.get("tier") or DEFAULT_TIER).lower()
    return AntreaPolicy(kind, "" if cluster else str(meta.get("namespace") or "default"), str(meta.get("name") or ""),
                        tier, float(priority), applied_to, ingress, egress, source)


def parse_tier(raw: Mapping[str, Any]) -> AntreaTier:
    meta = _mapping(raw.get("metadata"), "metadata")
    spec = _mapping(raw.get("spec"), "spec")
    name = str(meta.get("name") or "").lower()
    priority = spec.get("priority")
    if name in STATIC_TIERS:
        return AntreaTier(name, STATIC_TIERS[name])
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise AntreaPolicyError(f"spec.priority: Invalid value: {priority!r}: expected an integer")
    if not 0 <= priority <= 255:  # the Tier CRD's schema; a reserved or taken priority is the webhook's (webhook.py)
        bound = "greater than or equal to 0" if priority < 0 else "less than or equal to 255"
        raise AntreaPolicyError(f"spec.priority: Invalid value: {priority}: spec.priority in body should be {bound}")
    return AntreaTier(name, float(priority))


def parse_group(kind: str, raw: Mapping[str, Any]) -> AntreaGroup:
    meta = _mapping(raw.get("metadata"), "metadata")
    spec = _mapping(raw.get("spec"), "spec")
    blocks = list(_list(spec.get("ipBlocks"), "spec.ipBlocks"))
    if spec.get("ipBlock") is not None:  # the v1alpha2 single-block form
        blocks.append(spec["ipBlock"])
    namespace = "" if kind == "ClusterGroup" else str(meta.get("namespace") or "default")
    reference = _mapping(spec.get("serviceReference"), "spec.serviceReference")
    service = None
    if reference:
        if not reference.get("name"):
            raise AntreaPolicyError("spec.serviceReference.name: Required value")
        # A Group's Service is of its own namespace; a ClusterGroup's names it (v1beta1 NamespacedName).
        service = (str(reference.get("namespace") or namespace or "default"), str(reference["name"]))
    return AntreaGroup(namespace,
                       str(meta.get("name") or ""),
                       _selector(spec.get("podSelector"), "spec.podSelector"),
                       _selector(spec.get("namespaceSelector"), "spec.namespaceSelector"),
                       tuple(_ip_block(b, f"spec.ipBlocks[{i}]") for i, b in enumerate(blocks)),
                       tuple(str(c) for c in _list(spec.get("childGroups"), "spec.childGroups")),
                       service, "", _selector(spec.get("nodeSelector"), "spec.nodeSelector"))


__all__ = ["ACTIONS", "BUILTIN_TIERS", "AntreaGroup", "AntreaPolicy", "AntreaPolicyError", "AntreaRule", "AntreaTier",
           "Selection", "parse_group", "parse_policy", "parse_tier"]
