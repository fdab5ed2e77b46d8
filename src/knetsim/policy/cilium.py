"""``cilium.io/v2`` CiliumNetworkPolicy: its L3/L4 part as a normalized ``Policy``, and its HTTP rules.

What is read (docs.cilium.io, "Policy Language" and "Using Kubernetes Constructs In Policy"):

* ``endpointSelector`` selects pods of the policy's namespace;
* ``ingress[].fromEndpoints`` / ``egress[].toEndpoints``: label selectors, implicitly limited
  to the policy's namespace unless they name ``io.kubernetes.pod.namespace``; an empty
  selector ``{}`` is every pod of that namespace; ``io.cilium.k8s.namespace.labels.<key>``
  selects by namespace label; label prefixes ``k8s:``/``any:`` are dropped;
* ``fromEntities``/``toEntities`` (``all``, ``world``, ``cluster``, ``host``, ``remote-node``),
  ``fromCIDR``/``toCIDR`` and ``fromCIDRSet``/``toCIDRSet``;
* ``toPorts[].ports[]`` (``port`` as a number string or a name, ``endPort``, ``protocol``
  defaulting to ``ANY``) and ``toPorts[].rules.http[]`` (``method``, ``path``, ``host``
  regexes and ``headers``).

A rule with L4 but no L3 part allows every peer on those ports; a rule with neither
(``ingress: [{}]``) allows nothing, which is Cilium's "default deny" idiom. Any rule
selecting a pod with an ``ingress`` (``egress``) section isolates it in that direction.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..model.labels import EQUALS, Requirement, Selector
from ..model.objects import Object
from .rules import NAMESPACE_NAME_LABEL, HTTPRule, Peer, Policy, Port, Rule, ip_range

KIND = "CiliumNetworkPolicy"
POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
NAMESPACE_LABEL_PREFIX = "io.cilium.k8s.namespace.labels."
ENTITIES = ("all", "world", "cluster", "host", "remote-node")
_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


class CiliumPolicyError(ValueError):
    pass


def _strip(key: str) -> str:
    for prefix in ("k8s:", "any:"):
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


def _split_selector(raw: Any, where: str) -> tuple[Selector, list[Requirement], list[Requirement]]:
    """(pod selector, pod-namespace requirements, namespace-label requirements) of a Cilium selector."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise CiliumPolicyError(f"{where}: must be a label selector object")
    reqs: list[Requirement] = [Requirement(_strip(str(k)), EQUALS, (str(v),))
                               for k, v in (raw.get("matchLabels") or {}).items()]
    for i, expr in enumerate(raw.get("matchExpressions") or []):
        op = _OPS.get(str(expr.get("operator")))
        if op is None:
            raise CiliumPolicyError(f"{where}.matchExpressions[{i}].operator: Unsupported value: "
                                    f"{expr.get('operator')!r}")
        reqs.append(Requirement(_strip(str(expr.get("key"))), op, tuple(str(v) for v in expr.get("values") or ())))
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


def _endpoint_peer(index: int, namespace: str, raw: Any, where: str) -> Peer:
    pod, pod_ns, ns_labels = _split_selector(raw, where)
    if not pod_ns:
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


def _rule(index: int, namespace: str, raw: Any, direction: str, where: str) -> Rule:
    if not isinstance(raw, Mapping):
        raise CiliumPolicyError(f"{where}: must be an object")
    side = "from" if direction == "ingress" else "to"
    peers: list[Peer] = []
    for sel in raw.get(f"{side}Endpoints") or []:
        peers.append(_endpoint_peer(len(peers), namespace, sel, f"{where}.{side}Endpoints[{len(peers)}]"))
    for entity in raw.get(f"{side}Entities") or []:
        if entity not in ENTITIES:
            raise CiliumPolicyError(f"{where}.{side}Entities: Unsupported value: {entity!r}: "
                                    f"supported values: {', '.join(ENTITIES)}")
        peers.append(Peer(len(peers), "entity", entity=str(entity)))
    for cidr in raw.get(f"{side}CIDR") or []:
        peers.append(Peer(len(peers), "ipblock", ip_range=ip_range(str(cidr))))
    for block in raw.get(f"{side}CIDRSet") or []:
        peers.append(Peer(len(peers), "ipblock", ip_range=ip_range(str(block.get("cidr")),
                                                                   tuple(str(e) for e in block.get("except") or ()))))
    ports: list[Port] = []
    for i, entry in enumerate(raw.get("toPorts") or []):
        entry = entry or {}
        http = _http(entry.get("rules"), f"{where}.toPorts[{i}].rules")
        for j, p in enumerate(entry.get("ports") or []):
            ports.append(_port(len(ports), p, http, f"{where}.toPorts[{i}].ports[{j}]"))
    has_l3 = any(raw.get(f"{side}{k}") for k in ("Endpoints", "Entities", "CIDR", "CIDRSet"))
    if not has_l3 and not ports:
        return Rule(index, (), ())  # `- {}`: isolates, allows nothing
    return Rule(index, tuple(peers) if has_l3 else None, tuple(ports) if ports else None)


def parse(obj: Object) -> list[Policy]:
    """The policies of one CiliumNetworkPolicy (``spec`` and each of ``specs``). Raises CiliumPolicyError."""
    raw = obj.raw
    specs = []
    if isinstance(raw.get("spec"), Mapping):
        specs.append(("spec", raw["spec"]))
    specs += [(f"specs[{i}]", s) for i, s in enumerate(raw.get("specs") or [])]
    out = []
    for where, spec in specs:
        if "nodeSelector" in spec:
            raise CiliumPolicyError(f"{where}.nodeSelector: host policies are not simulated")
        for deny in ("ingressDeny", "egressDeny"):
            if spec.get(deny):
                raise CiliumPolicyError(f"{where}.{deny}: deny rules are not simulated")
        selector, _, _ = _split_selector(spec.get("endpointSelector"), f"{where}.endpointSelector")
        directions: dict[str, tuple[Rule, ...] | None] = {}
        for direction in ("ingress", "egress"):
            rules = spec.get(direction)
            directions[direction] = None if not rules else tuple(
                _rule(i, obj.namespace, r, direction, f"{where}.{direction}[{i}]") for i, r in enumerate(rules))
        name = obj.name if len(specs) == 1 else f"{obj.name}#{where}"
        out.append(Policy(KIND, obj.namespace, name, selector, directions["ingress"], directions["egress"],
                          obj.source))
    return out


def _full(pattern: str, text: str) -> bool:
    """Envoy's RE2 full match, time-bounded here (a backtracking runaway is no match, never a stall)."""
    from ..model import saferegex  # the regex package loads for the first HTTP rule matched

    rx = saferegex.compiled(pattern)
    try:
        return rx is not None and saferegex.fullmatch(rx, text) is not None
    except saferegex.RegexTimeout:
        return False


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
