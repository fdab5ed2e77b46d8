"""A Cilium policy in words, in the order a Cilium agent reads it: deny rules first, then allows, then default deny.

``policy describe ccnp/NAME`` (or ``ciliumclusterwidenetworkpolicy/NAME``), and a CiliumNetworkPolicy with
what only Cilium has (deny rules, entities beyond the basic ones, toServices, toFQDNs, enableDefaultDeny).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...cluster.state import ClusterState
from ...model.objects import Pod
from ..rules import INGRESS, Endpoint, MatchContext, Peer, Rule, namespaces_text
from .evaluate import endpoints_peer_matches
from .labels import cluster_name
from .read import CiliumPolicy

ORDER_TEXT = ("Cilium's order: a connection matching a deny rule (ingressDeny/egressDeny) of any policy selecting "
              "the pod is dropped, whatever any allow says; else one matching allow rule of any policy (this one, "
              "another CiliumNetworkPolicy or clusterwide policy, a Kubernetes NetworkPolicy) lets it through; else "
              "a pod in default deny for that direction drops it")


@dataclass(frozen=True)
class CiliumRuleText:
    section: str  # ingress | egress | ingressDeny | egressDeny
    index: int
    peers: tuple[str, ...] | None  # None: every peer
    ports: tuple[str, ...] | None  # None: every port
    empty: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"section": self.section, "rule": self.index,
                "peers": "any" if self.peers is None else list(self.peers),
                "ports": "any" if self.ports is None else list(self.ports)}


@dataclass(frozen=True)
class CiliumPolicyDescription:
    kind: str
    namespace: str  # "" for the clusterwide kind
    name: str
    applies_to: str
    selected: tuple[str, ...]
    default_deny: tuple[tuple[str, bool], ...]  # (direction, isolates) for each direction it has rules for
    rules: tuple[CiliumRuleText, ...]
    cni: str
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "namespace": self.namespace or None,
                "appliesTo": self.applies_to, "selectedPods": list(self.selected),
                "defaultDeny": dict(self.default_deny), "order": ORDER_TEXT, "cni": self.cni,
                "rules": [r.to_dict() for r in self.rules], "notes": list(self.notes)}

    def text(self) -> str:
        lines = [f"Name:         {self.name}"]
        if self.namespace:
            lines.append(f"Namespace:    {self.namespace}")
        lines.append(f"Kind:         {self.kind} (cilium.io/v2{'' if self.namespace else ', cluster-scoped'})")
        lines.append(f"CNI:          {self.cni}")
        pods = ", ".join(self.selected) or "none right now"
        lines.append(f"Applies to:   {self.applies_to} ({len(self.selected)}: {pods})")
        isolates = ", ".join(f"{d} {'yes' if on else 'no (enableDefaultDeny: false)'}" for d, on in self.default_deny)
        lines.append(f"Default deny: {isolates or 'nothing (no rules)'}")
        lines.append(f"Order:        {ORDER_TEXT}")
        for section in ("ingressDeny", "egressDeny", "ingress", "egress"):
            rules = [r for r in self.rules if r.section == section]
            if not rules:
                continue
            lines.append("")
            verb = "dropped" if section.endswith("Deny") else "allowed"
            lines.append(f"{section}: {verb} when a connection matches any one rule below")
            side = "from" if section.startswith(INGRESS) else "to"
            for r in rules:
                lines.append(f"  Rule {r.index + 1} (spec.{section}[{r.index}]):")
                if r.empty:
                    lines.append("    matches nothing (an empty rule only puts the pods in default deny)")
                    continue
                if r.peers is None:
                    lines.append(f"    {side}: anywhere (the rule names no peer)")
                else:
                    lines.append(f"    {side} any one of {len(r.peers)} peer(s):")
                    lines += [f"      {i + 1}. {text}" for i, text in enumerate(r.peers)]
                lines.append("    on: every port and protocol" if r.ports is None
                             else "    on any one of: " + "; ".join(r.ports))
        for note in self.notes:
            lines.append(f"Note: {note}")
        return "\n".join(lines) + "\n"


def _peer_text(state: ClusterState, policy: CiliumPolicy, rule: Rule, peer: Peer, ctx: MatchContext,
               cluster: str) -> str:
    if peer.kind == "service":
        return f"the endpoints of Service(s) {peer.entity} (toServices)"
    if peer.kind == "fqdn":
        dns = "" if policy.dns else (" (no DNS rule in this policy: another policy's toPorts.rules.dns must allow "
                                     "the lookup)")
        return f"addresses the pod resolved for {peer.entity} through the cluster's DNS (toFQDNs){dns}"
    if peer.kind == "entity":
        return f"Cilium entity {peer.entity!r}"
    if peer.kind == "pods" and peer.namespace_selector is not None:
        pods = "every pod" if peer.pod_selector is None or peer.pod_selector.empty else (
            f"pods with {peer.pod_selector.formatted()}")
        matched = [k for k, p in sorted(state.pods.items())
                   if endpoints_peer_matches(policy, peer, Endpoint("pod", p.pod_ip, p, p.node_name), ctx, cluster)]
        return f"{pods} in {namespaces_text(peer.namespace_selector)} [{len(matched)} pod(s)]"
    return peer.describe()


def _rules(state: ClusterState, policy: CiliumPolicy, ctx: MatchContext, cluster: str) -> tuple[CiliumRuleText, ...]:
    out = []
    for section, rules in (("ingressDeny", policy.ingress_deny), ("egressDeny", policy.egress_deny),
                           ("ingress", policy.rules("ingress")), ("egress", policy.rules("egress"))):
        for rule in rules or ():
            if rule.peers == () and rule.ports == ():
                out.append(CiliumRuleText(section, rule.index, (), (), empty=True))
                continue
            peers = None if rule.peers is None else tuple(_peer_text(state, policy, rule, p, ctx, cluster)
                                                                  for p in rule.peers)
            ports = None
            if rule.ports is not None:
                ports = []
                for port in rule.ports:
                    text = port.describe()
                    allowlist = policy.dns_allowlist(rule.index, port.index) if section == "egress" else None
                    if allowlist is not None:
                        text += " (DNS proxy allows " + ", ".join(m.describe() for m in allowlist) + ")"
                    if port.http is not None:
                        text += " (HTTP: " + "; ".join(h.describe() for h in port.http) + ")"
                    ports.append(text)
            out.append(CiliumRuleText(section, rule.index, peers, tuple(ports) if ports is not None else None))
    return tuple(out)


def describe_cilium(state: ClusterState, policies: list[CiliumPolicy], ctx: MatchContext, cni: str,
                    enforced: bool, left_out: list[str] | None = None) -> list[CiliumPolicyDescription]:
    """One description per spec; ``left_out``: the fields (or host-policy specs) knetsim does not simulate,
    named on each."""
    out = []
    cluster = cluster_name(state)
    for policy in policies:
        p = policy.policy
        who = "every pod" if p.selector.empty else f"pods with {p.selector.formatted()}"
        if policy.clusterwide:
            where = "every namespace" if policy.namespaces is None or policy.namespaces.empty else \
                namespaces_text(policy.namespaces)
            applies = f"{who} in {where}"
        else:
            applies = f"{who} in namespace {p.namespace}"
        pods: list[Pod] = sorted(state.pods.values(), key=lambda x: x.key)
        selected = tuple(x.key for x in pods if not x.host_network
                         and policy.selects(x, ctx.namespace_labels(x.namespace), cluster))
        default_deny = tuple((d, policy.isolates(d)) for d in ("ingress", "egress") if policy.applies(d))
        notes = tuple(left_out or ()) + (() if enforced else (
            f"not enforced: the cluster's {cni} is not Cilium (set cni: cilium, or dataplane: ebpf)",))
        out.append(CiliumPolicyDescription(p.kind, p.namespace, p.name, applies, selected, default_deny,
                                           _rules(state, policy, ctx, cluster), cni, notes))
    return out


__all__ = ["CiliumPolicyDescription", "describe_cilium"]
