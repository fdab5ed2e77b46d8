"""``cilium.io/v2`` CiliumNetworkPolicy and CiliumClusterwideNetworkPolicy, read into the engine's shapes.

What is read (docs.cilium.io "Policy Language", cilium/cilium Documentation/security/policy/language.rst,
and the types of cilium/cilium pkg/policy/api/: rule.go, ingress.go, egress.go, entity.go, service.go,
fqdn.go, cidr.go, l4.go):

* ``endpointSelector`` selects pods of the policy's namespace; in a CiliumClusterwideNetworkPolicy (cluster-
  scoped) pods of every namespace, narrowed by ``k8s:io.kubernetes.pod.namespace`` (or
  ``io.cilium.k8s.namespace.labels.<key>``) requirements. ``nodeSelector`` (a host policy) is not simulated;
* ``ingress``/``egress`` allow; ``ingressDeny``/``egressDeny`` deny, and a deny wins over every allow
  (language.rst, "Deny Policies"); deny rules carry no L7 part (``PortDenyRule``);
* ``fromEndpoints``/``toEndpoints``: label selectors, implicitly limited to the policy's namespace in a
  CiliumNetworkPolicy unless they name ``io.kubernetes.pod.namespace`` (a clusterwide policy's are not
  limited); ``{}`` is every pod of that scope; label prefixes ``k8s:``/``any:`` are dropped; selectors match
  the endpoint's labels (``labels.py``: the service account and the cluster name are labels there), and a key
  Cilium may derive but knetsim does not is named in a note;
* ``fromEntities``/``toEntities`` (entity.go's list), ``fromCIDR``/``toCIDR``, ``fromCIDRSet``/``toCIDRSet``
  with ``except`` (CIDR rules never match cluster endpoints or nodes: cilium/cilium#9209);
* ``toServices`` (``k8sService`` by ``serviceName``/``namespace``, ``k8sServiceSelector`` by ``selector``
  and ``namespace``): the addresses of the Service's endpoints (service.go; language.rst "Services based");
* ``toFQDNs`` (``matchName``, ``matchPattern``) and ``toPorts[].rules.dns`` (the DNS proxy's allow-list);
* ``toPorts[].ports[]`` (``port`` a number string or a name, ``endPort``, ``protocol`` defaulting to
  ``ANY``) and ``toPorts[].rules.http[]`` (``method``, ``path``, ``host`` regexes and ``headers``);
* ``enableDefaultDeny.ingress``/``.egress`` (rule.go ``DefaultDenyConfig``): unset is true for a direction the
  policy has rules for; false makes the policy add its allows without isolating the pod.

A rule with L4 but no L3 part allows every peer on those ports; a rule with neither
(``ingress: [{}]``) allows nothing, which is Cilium's "default deny" idiom.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...model.labels import EQUALS, Requirement, Selector
from ...model.objects import Object, Pod
from ..rules import INGRESS, NAMESPACE_NAME_LABEL, HTTPRule, Peer, Policy, Port, Rule, ip_range
from .labels import (
    DEFAULT_CLUSTER,
    NAMESPACE_LABEL_PREFIX,
    POD_NAMESPACE_LABEL,
    filtered_by_default,
    matches,
    reads_endpoint_labels,
    unmodelled,
)

KIND = "CiliumNetworkPolicy"
CLUSTERWIDE_KIND = "CiliumClusterwideNetworkPolicy"
KINDS = (KIND, CLUSTERWIDE_KIND)
# pkg/policy/api/entity.go: the entities a rule may name.
ENTITIES = ("all", "world", "world-ipv4", "world-ipv6", "cluster", "host", "remote-node", "kube-apiserver",
            "health", "init", "ingress", "unmanaged", "none")
# The ones the engine has always matched without the Cilium walk (the vectorised matrix knows them too).
BASIC_ENTITIES = frozenset({"all", "world", "cluster", "host", "remote-node"})
_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
RULE_SECTIONS = ("ingress", "ingressDeny", "egress", "egressDeny")


class CiliumPolicyError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class DNSMatch:
    """One ``rules.dns`` entry or one ``toFQDNs`` entry: ``matchName`` (exact) or ``matchPattern`` (``*``)."""

    name: str = ""
    pattern: str = ""

    def matches(self, qname: str) -> bool:
        name = qname.lower().rstrip(".")
        if self.name:
            return name == self.name.lower().rstrip(".")
        pattern = self.pattern.lower().rstrip(".")
        if pattern in ("*", "**"):
            return True  # a lone "*" (or "**") is every name (pkg/fqdn/matchpattern)
        prefix = ""
        if pattern.startswith("**."):
            # "**." is one or more whole labels, any depth (pkg/fqdn/matchpattern's dnsWildcardREGroup, in the
            # releases that have it; older ones reject "**").
            prefix, pattern = r"(?:[-a-z0-9_]+\.)+", pattern[3:]
        # "*" stands for the characters a DNS label may hold, never a dot (pkg/fqdn/matchpattern).
        regex = prefix + "".join("[-a-z0-9_]*" if c == "*" else re.escape(c) for c in pattern)
        return re.fullmatch(regex, name) is not None

    def describe(self) -> str:
        return f"matchName {self.name}" if self.name else f"matchPattern {self.pattern}"


@dataclass(frozen=True, slots=True)
class CiliumPolicy:
    """One spec of a Cilium policy: the allow part as the engine's ``Policy``, and what only Cilium has."""

    policy: Policy  # kind, namespace ("" when clusterwide), name, endpointSelector's pod part, allow rules
    clusterwide: bool = False
    namespaces: Selector | None = None  # clusterwide: the namespaces whose pods the endpointSelector may pick
    ingress_deny: tuple[Rule, ...] | None = None
    egress_deny: tuple[Rule, ...] | None = None
    default_deny_ingress: bool = True
    default_deny_egress: bool = True
    # (egress rule index, port index) -> the DNS proxy's allow-list of that toPorts entry
    dns: tuple[tuple[int, int, tuple[DNSMatch, ...]], ...] = ()
    # peers the Cilium walk must match itself: toServices -> its description; toFQDNs -> the DNSMatch
    fqdns: tuple[tuple[int, int, DNSMatch], ...] = ()  # (egress rule, peer index, match)
    unsimulated: tuple[str, ...] = ()  # fields read but not simulated, by path: named on every answer
    origin: str = ""  # not an object: what the agent itself enforces (``always_enforced``), as answers name it

    @property
    def ref(self) -> str:
        if self.origin:
            return self.origin
        return f"{CLUSTERWIDE_KIND} {self.policy.name}" if self.clusterwide else self.policy.ref

    @property
    def name(self) -> str:
        return self.policy.name if self.clusterwide else self.policy.key

    def rules(self, direction: str) -> tuple[Rule, ...] | None:
        return self.policy.rules(direction)

    def deny_rules(self, direction: str) -> tuple[Rule, ...] | None:
        return self.ingress_deny if direction == INGRESS else self.egress_deny

    def isolates(self, direction: str) -> bool:
        """Does selecting a pod put it in default deny for ``direction``? (rule.go, EnableDefaultDeny)"""
        has = self.rules(direction) is not None or self.deny_rules(direction) is not None
        return has and (self.default_deny_ingress if direction == INGRESS else self.default_deny_egress)

    def applies(self, direction: str) -> bool:
        return self.rules(direction) is not None or self.deny_rules(direction) is not None

    def selects(self, pod: Pod, namespace_labels: Mapping[str, str], cluster: str = DEFAULT_CLUSTER) -> bool:
        """Does the endpointSelector pick ``pod``? Matched on the endpoint's labels (``labels.py``): the service
        account and cluster name are labels there."""
        if self.clusterwide:
            if self.namespaces is not None and not self.namespaces.matches(namespace_labels):
                return False
        elif pod.namespace != self.policy.namespace:
            return False
        return matches(self.policy.selector, pod, cluster)

    def dns_allowlist(self, rule: int, port: int) -> tuple[DNSMatch, ...] | None:
        return next((m for r, p, m in self.dns if r == rule and p == port), None)

    def fqdn_match(self, rule: int, peer: int) -> DNSMatch | None:
        return next((m for r, p, m in self.fqdns if r == rule and p == peer), None)

    @property
    def needs_walk(self) -> bool:
        """Anything the NetworkPolicy-shaped evaluation (and the vectorised matrix) cannot express."""
        if self.clusterwide or self.ingress_deny is not None or self.egress_deny is not None:
            return True
        if not (self.default_deny_ingress and self.default_deny_egress) or self.fqdns:
            return True
        # The NetworkPolicy-shaped evaluation matches a pod's own labels; the service account and cluster name are
        # labels of Cilium's endpoint only (labels.py).
        if reads_endpoint_labels(self.policy.selector):
            return True
        for direction in ("ingress", "egress"):
            for rule in self.rules(direction) or ():
                for peer in rule.peers or ():
                    if peer.kind in ("service", "fqdn", "nodes") or (peer.kind == "entity"
                                                           and peer.entity not in BASIC_ENTITIES):
                        return True
                    if peer.kind == "pods" and peer.pod_selector is not None \
                            and reads_endpoint_labels(peer.pod_selector):
                        return True
        return False


def _strip(key: str) -> str:
    for prefix in ("k8s:", "any:"):
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


def _split_selector(raw: Any, where: str, labels: list[str] | None = None
                    ) -> tuple[Selector, list[Requirement], list[Requirement]]:
    """(pod selector, pod-namespace requirements, namespace-label requirements) of a Cilium selector; the keys of an
    endpoint's labels knetsim does not derive are named in ``labels`` (a note on every answer)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise CiliumPolicyError(f"{where}: must be a label selector object")
    reqs: list[Requirement] = [Requirement(_strip(str(k)), EQUALS, (str(v),))
                               for k, v in (raw.get("matchLabels") or {}).items()]
    for i, expr in enumerate(raw.get("matchExpressions") or []):
        op = _OPS.get(str(expr.get("operator")))
        if op is None:
            # The CRD's enum, in the API server's words (cilium/cilium pkg/k8s/apis/cilium.io/client/crds/v2): the
            # operator is case-sensitive, so the docs' own `operator: "in"` example is refused by kubectl apply.
            supported = ", ".join(f'"{name}"' for name in _OPS)
            raise CiliumPolicyError(f"{where}.matchExpressions[{i}].operator: Unsupported value: "
                                    f"\"{expr.get('operator')}\": supported values: {supported}")
        reqs.append(Requirement(_strip(str(expr.get("key"))), op, tuple(str(v) for v in expr.get("values") or ())))
    if labels is not None:
        labels += [f"{where}: {key} is a label Cilium may give an endpoint that knetsim does not model (it derives "
                   "only the service account, the cluster name and the namespace's): this answer may differ from "
                   "Cilium's" for key in unmodelled([r.key for r in reqs])]
        labels += [f"{where}: {key} is a label Cilium's default identity-relevant label filter leaves out of an "
                   "endpoint's identity (pkg/labelsfilter): on Cilium this selector matches no pod unless the agent's "
                   "--labels keeps it; knetsim matches the pod's own labels"
                   for key in filtered_by_default([r.key for r in reqs])]
    pod, pod_ns, ns_labels = [], [], []
    for r in reqs:
        if r.key == POD_NAMESPACE_LABEL:
            pod_ns.append(Requirement(NAMESPACE_NAME_LABEL, r.op, r.values))
        elif r.key.startswith(NAMESPACE_LABEL_PREFIX):
            ns_labels.append(Requirement(r.key[len(NAMESPACE_LABEL_PREFIX):], r.op, r.values))
        elif r.key.startswith("reserved:"):
            raise CiliumPolicyError(f"{where}: reserved label {r.key!r}: use fromEntities/toEntities")
        else:
            pod.append(r)
    return Selector(tuple(sorted(pod, key=lambda r: r.key))), pod_ns, ns_labels


def _selector_keys(raw: Any) -> list[str]:
    """The label keys a selector object names (matchLabels and matchExpressions), as written."""
    if not isinstance(raw, Mapping):
        return []
    keys = [str(k) for k in (raw.get("matchLabels") or {})]
    return keys + [str(e.get("key")) for e in raw.get("matchExpressions") or [] if isinstance(e, Mapping)]


# Reserved identities a selector can name that are entities knetsim has (entity.go maps each entity to its
# reserved label; ``all`` and ``cluster`` are sets of identities, not one label).
_RESERVED_ENTITIES = frozenset(ENTITIES) - {"all", "cluster", "none"}


def _reserved_entity(raw: Any, where: str) -> str | None:
    """The entity a fromEndpoints/toEndpoints selector names by its reserved label (``reserved:host: ""`` is the
    ``host`` entity: the reserved identities carry only their reserved label), or None for a selector of pods."""
    keys = _selector_keys(raw)
    reserved = [k for k in keys if k.startswith("reserved:")]
    if not reserved:
        return None
    name = reserved[0].removeprefix("reserved:")
    if len(keys) > 1 or name not in _RESERVED_ENTITIES:
        raise CiliumPolicyError(f"{where}: reserved label {reserved[0]!r}: a reserved identity carries no other "
                                "label, so name one alone (reserved:host, reserved:world...), or use "
                                "fromEntities/toEntities")
    return name


def _endpoint_peer(index: int, namespace: str, raw: Any, where: str, labels: list[str] | None = None) -> Peer:
    """``namespace`` "": a clusterwide policy's peer, limited to no namespace unless it names one."""
    pod, pod_ns, ns_labels = _split_selector(raw, where, labels)
    if not pod_ns and namespace:
        pod_ns = [Requirement(NAMESPACE_NAME_LABEL, EQUALS, (namespace,))]
    ns_selector = Selector(tuple(sorted(pod_ns + ns_labels, key=lambda r: r.key)))
    return Peer(index, "pods", namespace_selector=ns_selector, pod_selector=pod)


def _port(index: int, raw: Any, http: tuple[HTTPRule, ...] | None, where: str) -> Port:
    if not isinstance(raw, Mapping):
        raise CiliumPolicyError(f"{where}: must be an object")
    protocol = str(raw.get("protocol") or "ANY").upper()
    if protocol not in ("TCP", "UDP", "SCTP", "ANY"):
        raise CiliumPolicyError(f"{where}.protocol: Unsupported value: {protocol!r}: supported values: "
                                "\"TCP\", \"UDP\", \"SCTP\", \"ANY\"")
    value = raw.get("port")
    port: int | str | None
    if value is None or str(value) in ("", "0"):
        port = None
    elif str(value).isdigit():
        port = int(str(value))
    else:
        port = str(value)
    end = raw.get("endPort")
    return Port(index, protocol, port, int(end) if end else None, http)


def _http(raw: Any, where: str) -> tuple[HTTPRule, ...] | None:
    if not isinstance(raw, Mapping) or raw.get("http") is None:
        return None
    out = []
    for i, r in enumerate(raw.get("http") or []):
        r = r or {}
        for field in ("method", "path", "host"):
            try:
                re.compile(str(r.get(field) or ""))
            except re.error as exc:
                raise CiliumPolicyError(f"{where}.http[{i}].{field}: invalid regex: {exc}") from None
        out.append(HTTPRule(str(r.get("method") or ""), str(r.get("path") or ""), str(r.get("host") or ""),
                            tuple(str(h) for h in r.get("headers") or ())))
    return tuple(out)


def _dns_match(raw: Any, where: str) -> DNSMatch:
    if not isinstance(raw, Mapping) or not (raw.get("matchName") or raw.get("matchPattern")):
        raise CiliumPolicyError(f"{where}: must set matchName or matchPattern")
    if raw.get("matchName"):
        return DNSMatch(name=str(raw["matchName"]))
    pattern = str(raw["matchPattern"])
    if not re.fullmatch(r"[-a-zA-Z0-9_.*]+", pattern):
        raise CiliumPolicyError(f"{where}.matchPattern: {pattern!r}: only letters, digits, '-', '_', '.' and '*'")
    return DNSMatch(pattern=pattern)


def _service_peer(index: int, namespace: str, raw: Any, where: str) -> Peer:
    """A ``toServices`` item as a peer whose ``entity`` names the Service(s): ``ns/name`` or
    ``ns:selector`` (``*`` for every namespace); the walk resolves it to the endpoints' addresses."""
    if not isinstance(raw, Mapping):
        raise CiliumPolicyError(f"{where}: must be an object")
    if isinstance(raw.get("k8sService"), Mapping):
        svc = raw["k8sService"]
        name = str(svc.get("serviceName") or "")
        if not name:
            raise CiliumPolicyError(f"{where}.k8sService.serviceName: Required value")
        # service.go K8sServiceNamespace.Matches: name and namespace must both equal; a namespaced policy's unset
        # namespace is its own, a clusterwide policy's stays "" and matches no Service.
        return Peer(index, "service", entity=f"{svc.get('namespace') or namespace}/{name}")
    if isinstance(raw.get("k8sServiceSelector"), Mapping):
        sel = raw["k8sServiceSelector"]
        pod, _, _ = _split_selector((sel.get("selector") or {}), f"{where}.k8sServiceSelector.selector")
        # service.go K8sServiceSelectorNamespace.Matches: an unset namespace is every namespace ("*").
        return Peer(index, "service", pod_selector=pod,
                    entity=f"{sel.get('namespace') or namespace or '*'}:{pod.formatted() or 'every Service'}")
    raise CiliumPolicyError(f"{where}: must set k8sService or k8sServiceSelector")


# Fields of a rule (pkg/policy/api/ingress.go, egress.go, l4.go) knetsim reads but does not simulate.
_UNSIMULATED_RULE_FIELDS = ("Requires", "Groups")
_UNSIMULATED = ("icmps", "authentication")
_UNSIMULATED_PORT_FIELDS = ("terminatingTLS", "originatingTLS", "serverNames", "listener")
_UNSIMULATED_L7 = ("kafka", "l7", "l7proto")


def _rule(index: int, namespace: str, raw: Any, direction: str, where: str, *, deny: bool = False,
          dns: list[tuple[int, int, tuple[DNSMatch, ...]]] | None = None,
          fqdns: list[tuple[int, int, DNSMatch]] | None = None, unsimulated: list[str] | None = None,
          labels: list[str] | None = None) -> Rule:
    if not isinstance(raw, Mapping):
        raise CiliumPolicyError(f"{where}: must be an object")
    side = "from" if direction == "ingress" else "to"
    if unsimulated is not None:
        unsimulated += [f"{where}.{side}{f}" for f in _UNSIMULATED_RULE_FIELDS if raw.get(f"{side}{f}")]
        unsimulated += [f"{where}.{f}" for f in _UNSIMULATED if raw.get(f)]
        for i, entry in enumerate(raw.get("toPorts") or []):
            if isinstance(entry, Mapping):
                unsimulated += [f"{where}.toPorts[{i}].{f}" for f in _UNSIMULATED_PORT_FIELDS if entry.get(f)]
                rules = entry.get("rules")
                if isinstance(rules, Mapping):
                    unsimulated += [f"{where}.toPorts[{i}].rules.{f}" for f in _UNSIMULATED_L7 if rules.get(f)]
    peers: list[Peer] = []
    for sel in raw.get(f"{side}Endpoints") or []:
        at = f"{where}.{side}Endpoints[{len(peers)}]"
        entity = _reserved_entity(sel, at)
        peers.append(_endpoint_peer(len(peers), namespace, sel, at, labels) if entity is None
                     else Peer(len(peers), "entity", entity=entity))
    for entity in raw.get(f"{side}Entities") or []:
        if entity not in ENTITIES:
            raise CiliumPolicyError(f"{where}.{side}Entities: Unsupported value: {entity!r}: "
                                    f"supported values: {', '.join(ENTITIES)}")
        peers.append(Peer(len(peers), "entity", entity=str(entity)))
    for i, sel in enumerate(raw.get(f"{side}Nodes") or []):
        # The addresses of the nodes the selector picks by their labels (ingress.go FromNodes, egress.go ToNodes).
        node_selector, _, _ = _split_selector(sel, f"{where}.{side}Nodes[{i}]")
        peers.append(Peer(len(peers), "nodes", pod_selector=node_selector))
    for cidr in raw.get(f"{side}CIDR") or []:
        peers.append(Peer(len(peers), "ipblock", ip_range=ip_range(str(cidr))))
    for i, block in enumerate(raw.get(f"{side}CIDRSet") or []):
        if not isinstance(block, Mapping) or not block.get("cidr"):
            raise CiliumPolicyError(f"{where}.{side}CIDRSet[{i}].cidr: Required value (cidrGroupRef is not "
                                    "simulated)")
        peers.append(Peer(len(peers), "ipblock", ip_range=ip_range(str(block.get("cidr")),
                                                                   tuple(str(e) for e in block.get("except") or ()))))
    l3 = ["Endpoints", "Entities", "CIDR", "CIDRSet", "Nodes"]
    if direction == "egress":
        l3 += ["Services", "FQDNs"]
        for i, svc in enumerate(raw.get("toServices") or []):
            peers.append(_service_peer(len(peers), namespace, svc, f"{where}.toServices[{i}]"))
        for i, entry in enumerate(raw.get("toFQDNs") or []):
            if deny:
                raise CiliumPolicyError(f"{where}.toFQDNs: not allowed in a deny rule")
            match = _dns_match(entry, f"{where}.toFQDNs[{i}]")
            if fqdns is not None:
                fqdns.append((index, len(peers), match))
            peers.append(Peer(len(peers), "fqdn", entity=match.describe()))
    ports: list[Port] = []
    for i, entry in enumerate(raw.get("toPorts") or []):
        entry = entry or {}
        rules = entry.get("rules")
        if deny and rules:
            raise CiliumPolicyError(f"{where}.toPorts[{i}].rules: deny rules take no L7 rules")
        http = _http(rules, f"{where}.toPorts[{i}].rules")
        matches = None
        if isinstance(rules, Mapping) and rules.get("dns") is not None:
            matches = tuple(_dns_match(d, f"{where}.toPorts[{i}].rules.dns[{k}]")
                            for k, d in enumerate(rules.get("dns") or []))
        for j, p in enumerate(entry.get("ports") or []):
            if matches is not None and dns is not None:
                dns.append((index, len(ports), matches))
            ports.append(_port(len(ports), p, http, f"{where}.toPorts[{i}].ports[{j}]"))
    has_l3 = any(raw.get(f"{side}{k}") for k in l3)
    if not has_l3 and not ports:
        return Rule(index, (), ())  # `- {}`: isolates, allows nothing
    return Rule(index, tuple(peers) if has_l3 else None, tuple(ports) if ports else None)


def _flag(raw: Any, field: str, where: str) -> bool | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise CiliumPolicyError(f"{where}: must be an object")
    value = raw.get(field)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise CiliumPolicyError(f"{where}.{field}: must be true or false")
    return value


def read(obj: Object) -> list[CiliumPolicy]:
    """The policies of one CiliumNetworkPolicy or CiliumClusterwideNetworkPolicy (``spec`` and each of
    ``specs``; a host policy's spec left out, see ``read_with_notes``). Raises CiliumPolicyError naming the field."""
    return read_with_notes(obj)[0]


def read_with_notes(obj: Object) -> tuple[list[CiliumPolicy], list[str]]:
    """``read``, and the fields left out by path (a host policy's whole spec; fields read but not simulated)."""
    raw = obj.raw
    clusterwide = obj.kind == CLUSTERWIDE_KIND
    namespace = "" if clusterwide else obj.namespace
    specs = []
    if isinstance(raw.get("spec"), Mapping):
        specs.append(("spec", raw["spec"]))
    specs += [(f"specs[{i}]", s) for i, s in enumerate(raw.get("specs") or [])]
    out: list[CiliumPolicy] = []
    notes: list[str] = []
    for where, spec in specs:
        if not isinstance(spec, Mapping):
            raise CiliumPolicyError(f"{where}: must be an object")
        if "nodeSelector" in spec:
            notes.append(f"{where}.nodeSelector: host policies (a node's own traffic) are not simulated: this spec is "
                         "left out")
            continue
        reserved = [k for k in _selector_keys(spec.get("endpointSelector")) if k.startswith("reserved:")]
        if reserved:
            # `reserved:host` selects the nodes (a host policy, as nodeSelector does); the other reserved identities
            # (health, ingress...) are endpoints knetsim has none of.
            notes.append(f"{where}.endpointSelector: selects the reserved identity {reserved[0]} (not a pod): host "
                         "and reserved-identity policies are not simulated: this spec is left out")
            continue
        if not any(spec.get(section) is not None for section in RULE_SECTIONS):
            # The CRD's anyOf (pkg/k8s/apis/cilium.io/client/crds/v2): a spec needs one rule section, and the API
            # server drops a null one first, so the docs' `egress:` written empty (egress-default-deny.yaml, older
            # versions) is refused rather than a default deny; `egress: [{}]` is the form that denies.
            raise CiliumPolicyError(f'{where}: Invalid value: "object": {where} must validate at least one schema '
                                    f"(anyOf): one of {', '.join(RULE_SECTIONS)} is required (an empty `egress:` is "
                                    "null, which the API server drops)")
        labels: list[str] = []
        selector, pod_ns, ns_labels = _split_selector(spec.get("endpointSelector"), f"{where}.endpointSelector",
                                                      labels)
        namespaces = Selector(tuple(sorted(pod_ns + ns_labels, key=lambda r: r.key))) if clusterwide else None
        directions: dict[str, tuple[Rule, ...] | None] = {}
        dns: list[tuple[int, int, tuple[DNSMatch, ...]]] = []
        fqdns: list[tuple[int, int, DNSMatch]] = []
        unsimulated: list[str] = []
        for direction in ("ingress", "egress", "ingressDeny", "egressDeny"):
            rules = spec.get(direction)
            base = direction.removesuffix("Deny")
            deny = direction != base
            directions[direction] = None if not rules else tuple(
                _rule(i, namespace, r, base, f"{where}.{direction}[{i}]", deny=deny,
                      dns=None if deny else dns, fqdns=None if deny else fqdns, unsimulated=unsimulated,
                      labels=labels)
                for i, r in enumerate(rules))
        default_deny = spec.get("enableDefaultDeny")
        ingress_dd = _flag(default_deny, "ingress", f"{where}.enableDefaultDeny")
        egress_dd = _flag(default_deny, "egress", f"{where}.enableDefaultDeny")
        name = obj.name if len(specs) == 1 else f"{obj.name}#{where}"
        policy = Policy(obj.kind if clusterwide else KIND, namespace, name, selector, directions["ingress"],
                        directions["egress"], obj.source)
        out.append(CiliumPolicy(policy, clusterwide, namespaces, directions["ingressDeny"], directions["egressDeny"],
                                ingress_dd is not False, egress_dd is not False, tuple(dns), tuple(fqdns),
                                tuple(unsimulated)))
        notes += labels
    for policy in out:
        notes += [f"{field}: not simulated (this answer reads the rest of the rule)" for field in policy.unsimulated]
    return out, notes


def always_enforced() -> CiliumPolicy:
    """Policy enforcement mode ``always`` (cilium-config ``enable-policy``) as the one policy it amounts to: every
    endpoint of every namespace selected, both directions in default deny, nothing allowed — a clusterwide policy
    with ``endpointSelector: {}`` and an empty ingress and egress section (intro.rst, "Policy Enforcement Modes":
    enforcement on all endpoints even when no rule selects them). The policies' own allows then open what they
    allow."""
    policy = Policy(CLUSTERWIDE_KIND, "", "enable-policy", Selector.everything(), (), ())
    return CiliumPolicy(policy, clusterwide=True, ingress_deny=None, egress_deny=None,
                        origin="the agent's policy enforcement mode always (kube-system/cilium-config enable-policy)")


def parse(obj: Object) -> list[Policy]:
    """The allow part of one CiliumNetworkPolicy as NetworkPolicy-shaped policies (what describe and the
    vectorised matrix read). Raises CiliumPolicyError."""
    return [p.policy for p in read(obj)]


def _full(pattern: str, text: str) -> bool:
    from ...model import saferegex  # the regex package loads for the first HTTP rule matched

    return saferegex.envoy_full_match(pattern, text)


def http_rule_matches(rule: HTTPRule, method: str, path: str, headers: Mapping[str, str], host: str = "") -> bool:
    if rule.method and not _full(rule.method, method):
        return False
    if rule.path and not _full(rule.path, path):
        return False
    if rule.host and not _full(rule.host, host):
        return False
    lowered = {k.lower(): v for k, v in headers.items()}
    for header in rule.headers:
        name, sep, value = header.partition(":")
        have = lowered.get(name.strip().lower())
        if have is None or (sep and have.strip() != value.strip()):
            return False
    return True
