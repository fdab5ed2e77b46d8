"""Least privilege in a CNI's own dialect: Calico, Cilium and Antrea policies for ``policy generate --format``.

Each writer takes what ``generate`` decided for one workload (the connections into it and out of it, grouped
by peer) and writes one policy of the CNI's kind, with the same meaning as the Kubernetes NetworkPolicy the
default format writes: the workload isolated both ways, one allow rule per peer with the ports it used, DNS
to kube-dns, nothing else. Field names and defaults from the CNIs' references:

* Calico: projectcalico.org/v3 NetworkPolicy (docs.tigera.io, "Network policy" reference; projectcalico/api
  ``pkg/apis/projectcalico/v3/networkpolicy.go``): ``tier``, ``order``, ``selector`` in Calico's selector
  language, ``types``, rules of one ``protocol`` with ``action: Allow``. The default tier's end-of-tier deny
  denies the rest of what the policy selects, so no Deny rule is needed.
* Cilium: cilium.io/v2 CiliumNetworkPolicy (cilium/cilium ``pkg/policy/api/rule.go``, ``ingress.go``,
  ``egress.go``): ``endpointSelector``, ``fromEndpoints``/``toEndpoints`` (another namespace through the
  ``k8s:io.kubernetes.pod.namespace`` label), ``fromCIDR``/``toCIDR``, ``toPorts``; the DNS rule carries
  ``rules.dns`` so lookups go through Cilium's DNS proxy and keep working; ``enableDefaultDeny`` both ways.
* Antrea: crd.antrea.io/v1beta1 NetworkPolicy (antrea-io/antrea ``docs/antrea-network-policy.md``): tier
  ``application``, ``priority``, ``appliedTo``, Allow rules then a last Drop rule per direction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .render import Commented
from .rules import NAMESPACE_NAME_LABEL

FORMATS = ("kubernetes", "calico", "cilium", "antrea")
CALICO_ORDER = 1000  # after the policies a platform team writes with small orders, as Calico's docs advise
ANTREA_PRIORITY = 5
CILIUM_NAMESPACE = "k8s:io.kubernetes.pod.namespace"


def _quote(value: str) -> str:
    return "'" + value + "'" if "'" not in value else '"' + value + '"'


def calico_selector(party: Any) -> str:
    """The party's Kubernetes selector in Calico's selector language (``all()`` when it has none)."""
    terms = [f"{k} == {_quote(v)}" for k, v in party.selector]
    for key, op, values in party.expressions:
        listed = ", ".join(_quote(v) for v in values)
        terms.append({"In": f"{key} in {{{listed}}}", "NotIn": f"{key} not in {{{listed}}}",
                      "Exists": f"has({key})", "DoesNotExist": f"!has({key})"}[op])
    return " && ".join(terms) or "all()"


def _cidr(party: Any) -> str:
    return party.ip if "/" in party.ip else f"{party.ip}/32"


def _by_protocol(ports: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for p in ports:
        out.setdefault(p["protocol"], []).append(p["port"])
    return out


# --- Calico ---------------------------------------------------------------------------------------


def _calico_entity(party: Any, namespace: str) -> dict[str, Any]:
    if party.kind != "workload":
        return {"nets": [_cidr(party)]}
    out = {"selector": calico_selector(party)}
    if party.namespace != namespace:
        out["namespaceSelector"] = f"projectcalico.org/name == {_quote(party.namespace)}"
    return out


def calico_policy(party: Any, ingress: list[tuple[Any, list[dict[str, Any]], list[str]]],
                  egress: list[tuple[Any, list[dict[str, Any]], list[str]]]) -> dict[str, Any]:
    """``ingress``/``egress``: (peer party, ports as the Kubernetes format writes them, comment) per peer."""
    rules_in: list[Any] = []
    for peer, ports, comment in ingress:
        for protocol, numbers in _by_protocol(ports).items():
            rules_in.append(Commented({"action": "Allow", "protocol": protocol,
                                       "source": _calico_entity(peer, party.namespace),
                                       "destination": {"ports": numbers}}, comment))
    rules_out: list[Any] = []
    for peer, ports, comment in egress:
        for protocol, numbers in _by_protocol(ports).items():
            rules_out.append(Commented({"action": "Allow", "protocol": protocol,
                                        "destination": {**_calico_entity(peer, party.namespace), "ports": numbers}},
                                       comment))
    dns = {"selector": "k8s-app == 'kube-dns'", "namespaceSelector": "projectcalico.org/name == 'kube-system'",
           "ports": [53]}
    rules_out.append(Commented({"action": "Allow", "protocol": "UDP", "destination": dict(dns)},
                               ["DNS, to kube-dns's pods: every pod looks names up"]))
    rules_out.append(Commented({"action": "Allow", "protocol": "TCP", "destination": dict(dns)},
                               ["DNS over TCP: an answer too large for UDP is asked again over TCP"]))
    spec: dict[str, Any] = {
        "tier": "default", "order": CALICO_ORDER, "selector": calico_selector(party), "types": ["Ingress", "Egress"],
        "ingress": rules_in or Commented([], ["nothing was seen to connect to it: the default tier's end-of-tier "
                                              "deny drops all of it"]),
        "egress": rules_out}
    return {"apiVersion": "projectcalico.org/v3", "kind": "NetworkPolicy",
            "metadata": {"name": f"{party.short}-least-privilege", "namespace": party.namespace},
            "spec": spec}


# --- Cilium ---------------------------------------------------------------------------------------


def _cilium_selector(party: Any, namespace: str | None) -> dict[str, Any]:
    labels = dict(party.selector)
    if namespace is not None:
        labels[CILIUM_NAMESPACE] = namespace
    out: dict[str, Any] = {"matchLabels": labels} if labels else {}
    if party.expressions:
        out["matchExpressions"] = [{"key": k, "operator": op, **({"values": list(v)} if v else {})}
                                   for k, op, v in party.expressions]
    return out


def _cilium_ports(ports: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"ports": [{"port": str(p["port"]), "protocol": p["protocol"]} for p in ports]}]


def cilium_policy(party: Any, ingress: list[tuple[Any, list[dict[str, Any]], list[str]]],
                  egress: list[tuple[Any, list[dict[str, Any]], list[str]]]) -> dict[str, Any]:
    rules_in: list[Any] = []
    for peer, ports, comment in ingress:
        source = ({"fromEndpoints": [_cilium_selector(peer, peer.namespace)]} if peer.kind == "workload"
                  else {"fromCIDR": [_cidr(peer)]})
        rules_in.append(Commented({**source, "toPorts": _cilium_ports(ports)}, comment))
    rules_out: list[Any] = []
    for peer, ports, comment in egress:
        target = ({"toEndpoints": [_cilium_selector(peer, peer.namespace)]} if peer.kind == "workload"
                  else {"toCIDR": [_cidr(peer)]})
        rules_out.append(Commented({**target, "toPorts": _cilium_ports(ports)}, comment))
    rules_out.append(Commented(
        {"toEndpoints": [{"matchLabels": {CILIUM_NAMESPACE: "kube-system", "k8s:k8s-app": "kube-dns"}}],
         "toPorts": [{"ports": [{"port": "53", "protocol": "UDP"}, {"port": "53", "protocol": "TCP"}],
                      "rules": {"dns": [{"matchPattern": "*"}]}}]},
        ["DNS, to kube-dns's pods, through Cilium's DNS proxy (rules.dns): every pod looks names up,",
         "and a toFQDNs rule added later works only for names the proxy saw"]))
    spec: dict[str, Any] = {"endpointSelector": _cilium_selector(party, None),
                            "enableDefaultDeny": {"ingress": True, "egress": True},
                            "ingress": rules_in or Commented([], ["nothing was seen to connect to it: none allowed"]),
                            "egress": rules_out}
    return {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
            "metadata": {"name": f"{party.short}-least-privilege", "namespace": party.namespace},
            "spec": spec}


# --- Antrea ---------------------------------------------------------------------------------------


def _antrea_peer(party: Any, namespace: str) -> dict[str, Any]:
    if party.kind != "workload":
        return {"ipBlock": {"cidr": _cidr(party)}}
    out: dict[str, Any] = {"podSelector": label_selector(party)}
    if party.namespace != namespace:
        out["namespaceSelector"] = {"matchLabels": {NAMESPACE_NAME_LABEL: party.namespace}}
    return out


def label_selector(party: Any) -> dict[str, Any]:
    """A party's pods as a Kubernetes label selector (matchLabels, matchExpressions): the podSelector of a
    NetworkPolicy, a ClusterNetworkPolicy's subject, an Antrea appliedTo."""
    out: dict[str, Any] = {}
    if party.selector:
        out["matchLabels"] = dict(party.selector)
    if party.expressions:
        out["matchExpressions"] = [{"key": k, "operator": op, **({"values": list(v)} if v else {})}
                                   for k, op, v in party.expressions]
    return out


def _rule_name(side: str, party: Any) -> str:
    who = f"{party.namespace}-{party.short}" if party.kind == "workload" else party.ip.replace("/", "-")
    return f"{side}-{who}".replace(".", "-")[:60]


def antrea_policy(party: Any, ingress: list[tuple[Any, list[dict[str, Any]], list[str]]],
                  egress: list[tuple[Any, list[dict[str, Any]], list[str]]]) -> dict[str, Any]:
    rules_in: list[Any] = [
        Commented({"name": _rule_name("from", peer), "action": "Allow", "from": [_antrea_peer(peer, party.namespace)],
                   "ports": [{"protocol": p["protocol"], "port": p["port"]} for p in ports]}, comment)
        for peer, ports, comment in ingress]
    # Rule names are unique within a policy, or Antrea's webhook refuses it (validate.go validateRuleName).
    rules_in.append(Commented({"name": "drop-other-sources", "action": "Drop"}, ["every other source"]))
    rules_out: list[Any] = [
        Commented({"name": _rule_name("to", peer), "action": "Allow", "to": [_antrea_peer(peer, party.namespace)],
                   "ports": [{"protocol": p["protocol"], "port": p["port"]} for p in ports]}, comment)
        for peer, ports, comment in egress]
    rules_out.append(Commented(
        {"name": "dns", "action": "Allow",
         "to": [{"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: "kube-system"}},
                 "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
         "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
        ["DNS, to kube-dns's pods (UDP, and TCP for large answers): every pod looks names up"]))
    rules_out.append(Commented({"name": "drop-other-destinations", "action": "Drop"}, ["every other destination"]))
    return {"apiVersion": "crd.antrea.io/v1beta1", "kind": "NetworkPolicy",
            "metadata": {"name": f"{party.short}-least-privilege", "namespace": party.namespace},
            "spec": {"tier": "application", "priority": ANTREA_PRIORITY,
                     "appliedTo": [{"podSelector": label_selector(party)}],
                     "ingress": rules_in, "egress": rules_out}}


WRITERS = {"calico": calico_policy, "cilium": cilium_policy, "antrea": antrea_policy}

__all__ = ["FORMATS", "WRITERS", "antrea_policy", "calico_policy", "calico_selector", "cilium_policy"]
