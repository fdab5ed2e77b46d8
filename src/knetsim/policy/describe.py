"""A policy in words: who it applies to, what each rule lets through, and AND vs OR made plain.

``kubectl describe networkpolicy`` prints a peer with both selectors as two lines that look
like two alternatives; here one peer is always one numbered line, and "any one of" / "both
must match" say which is which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..cluster.state import ClusterState
from ..model.kinds import BY_GROUP_KIND, CNI_GROUPS, names_of
from ..model.kinds import CALICO as CALICO_CNI
from . import cilium
from . import cluster as cnp
from .antrea.describe import AntreaPolicyDescription, describe_antrea
from .antrea.model import ACNP as ANTREA_ACNP
from .antrea.model import ANNP as ANTREA_ANNP
from .antrea.model import AntreaPolicyError
from .calico.describe import CalicoPolicyDescription, describe_calico
from .calico.model import CalicoPolicyError
from .calico.selector import SelectorError
from .cilium.describe import CiliumPolicyDescription, describe_cilium
from .engine import PolicyInputError, build_index, pod_endpoint
from .rules import INGRESS, MatchContext, Peer, Policy, Port, Rule, from_network_policy, namespaces_text, peer_matches


@dataclass(frozen=True)
class PeerText:
    index: int
    text: str
    pods: tuple[str, ...]
    is_and: bool

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "description": self.text, "and": self.is_and, "pods": list(self.pods)}


@dataclass(frozen=True)
class RuleText:
    index: int
    peers: tuple[PeerText, ...] | None
    ports: tuple[str, ...] | None
    empty: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.index,
                "peers": "any" if self.peers is None else [p.to_dict() for p in self.peers],
                "ports": "any" if self.ports is None else list(self.ports)}


@dataclass(frozen=True)
class PolicyDescription:
    kind: str
    namespace: str
    name: str
    selector: str
    selected: tuple[str, ...]
    policy_types: tuple[str, ...]
    ingress: tuple[RuleText, ...] | None
    egress: tuple[RuleText, ...] | None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "namespace": self.namespace, "podSelector": self.selector,
                "selectedPods": list(self.selected), "policyTypes": list(self.policy_types),
                "ingress": None if self.ingress is None else [r.to_dict() for r in self.ingress],
                "egress": None if self.egress is None else [r.to_dict() for r in self.egress],
                "notes": list(self.notes)}

    def text(self) -> str:
        lines = [f"Name:         {self.name}", f"Namespace:    {self.namespace}", f"Kind:         {self.kind}"]
        who = "every pod" if self.selector == "<none>" else f"pods with {self.selector}"
        pods = ", ".join(p.split("/", 1)[1] for p in self.selected) or "none right now"
        lines.append(f"Applies to:   {who} in namespace {self.namespace} ({len(self.selected)}: {pods})")
        isolates = " and ".join(t.lower() for t in self.policy_types) or "nothing"
        lines.append(f"Isolates:     {isolates} (policyTypes: {', '.join(self.policy_types)})")
        for direction, rules in (("Ingress", self.ingress), ("Egress", self.egress)):
            lines.append("")
            if rules is None:
                lines.append(f"{direction}: not isolated by this policy (not in policyTypes)")
                continue
            if not rules:
                lines.append(f"{direction}: isolates the selected pods and allows nothing by itself")
                continue
            lines.append(f"{direction}: allowed when a connection matches any one rule below (rules are OR'ed)")
            side = "from" if direction == "Ingress" else "to"
            for r in rules:
                lines.append(f"  Rule {r.index + 1} (spec.{direction.lower()}[{r.index}]):")
                if r.empty:
                    lines.append("    allows nothing (an empty Cilium rule only isolates)")
                    continue
                if r.peers is None:
                    lines.append(f"    {side}: anywhere (the rule has no `{side}`: every pod and every IP)")
                else:
                    lines.append(f"    {side} any one of {len(r.peers)} peer(s):")
                    for p in r.peers:
                        count = f"[{len(p.pods)} pod(s)]" if p.pods or not p.text.startswith("IP") else ""
                        lines.append(f"      {p.index + 1}. {p.text} {count}".rstrip())
                if r.ports is None:
                    lines.append("    on: every port and protocol (the rule has no `ports`)")
                else:
                    lines.append("    on any one of: " + "; ".join(r.ports))
        for note in self.notes:
            lines.append(f"Note: {note}")
        return "\n".join(lines) + "\n"


def _peer_pods(state: ClusterState, policy: Policy | None, peer: Peer, ctx: MatchContext) -> tuple[str, ...]:
    if peer.kind != "pods":
        return ()
    return tuple(k for k, pod in sorted(state.pods.items())
                 if peer_matches(policy, peer, pod_endpoint(state, pod), ctx))


def _rules(state: ClusterState, policy: Policy, rules: tuple[Rule, ...] | None,
           ctx: MatchContext) -> tuple[RuleText, ...] | None:
    if rules is None:
        return None
    out = []
    for rule in rules:
        if rule.peers == () and rule.ports == ():
            out.append(RuleText(rule.index, (), (), empty=True))
            continue
        peers = None if rule.peers is None else tuple(
            PeerText(p.index, p.describe(), _peer_pods(state, policy, p, ctx),
                     p.namespace_selector is not None and p.pod_selector is not None
                     and not p.pod_selector.empty)
            for p in rule.peers)
        ports = None if rule.ports is None else tuple(p.describe() for p in rule.ports)
        out.append(RuleText(rule.index, peers, ports))
    return tuple(out)


# --- ClusterNetworkPolicy (and the v1alpha1 kinds) -----------------------------------------------

# kubectl's names for the kinds (resource, singular, short name), as `describe KIND/NAME` takes them.
CLUSTER_KIND_NAMES = {
    "clusternetworkpolicy": cnp.CLUSTER_NETWORK_POLICY, "clusternetworkpolicies": cnp.CLUSTER_NETWORK_POLICY,
    "cnp": cnp.CLUSTER_NETWORK_POLICY,
    "adminnetworkpolicy": cnp.ADMIN_NETWORK_POLICY, "adminnetworkpolicies": cnp.ADMIN_NETWORK_POLICY,
    "anp": cnp.ADMIN_NETWORK_POLICY,
    "baselineadminnetworkpolicy": cnp.BASELINE_ADMIN_NETWORK_POLICY,
    "baselineadminnetworkpolicies": cnp.BASELINE_ADMIN_NETWORK_POLICY, "banp": cnp.BASELINE_ADMIN_NETWORK_POLICY,
}
_TIER_TEXT = {
    cnp.ADMIN: "decides before any NetworkPolicy: Accept and Deny are final, Pass hands the connection to the "
               "NetworkPolicy tier",
    cnp.BASELINE: "decides only for pods no NetworkPolicy selects (in that direction), after them: Accept and "
                  "Deny are final, Pass leaves the default (allow)",
}


def _cluster_port(port: Port) -> str:
    if isinstance(port.port, str):
        return f"port named {port.port!r} (looked up on the destination pod, with the protocol it declares)"
    return port.describe()


@dataclass(frozen=True)
class ClusterRuleText:
    index: int
    name: str
    action: str
    peers: tuple[PeerText, ...]
    ports: tuple[str, ...] | None

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.index, "name": self.name, "action": self.action,
                "peers": [p.to_dict() for p in self.peers],
                "ports": "any" if self.ports is None else list(self.ports)}


@dataclass(frozen=True)
class ClusterPolicyDescription:
    kind: str
    name: str
    tier: str
    priority: int | None
    subject: str
    selected: tuple[str, ...]
    ingress: tuple[ClusterRuleText, ...]
    egress: tuple[ClusterRuleText, ...]
    before: tuple[str, ...]  # the policies of the same tier that come first (lower priority, or equal by name)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "tier": self.tier, "priority": self.priority,
                "subject": self.subject, "selectedPods": list(self.selected),
                "ingress": [r.to_dict() for r in self.ingress], "egress": [r.to_dict() for r in self.egress],
                "before": list(self.before), "notes": list(self.notes)}

    def text(self) -> str:
        priority = "none (after every Baseline ClusterNetworkPolicy)" if self.priority is None else (
            f"{self.priority} (lower numbers decide first)")
        lines = [f"Name:         {self.name}", f"Kind:         {self.kind} (cluster-scoped)",
                 f"Tier:         {self.tier} ({_TIER_TEXT[self.tier]})", f"Priority:     {priority}"]
        if self.before:
            lines.append(f"Comes after:  {', '.join(self.before)}")
        pods = ", ".join(self.selected[:10]) + (" ..." if len(self.selected) > 10 else "") or "none right now"
        lines.append(f"Applies to:   {self.subject}, never hostNetwork pods ({len(self.selected)}: {pods})")
        for direction, rules in (("Ingress", self.ingress), ("Egress", self.egress)):
            lines.append("")
            if not rules:
                lines.append(f"{direction}: no rules; {direction.lower()} connections go on to the next tier")
                continue
            lines.append(f"{direction}: the first rule (in this order) that matches a connection decides it")
            side = "from" if direction == "Ingress" else "to"
            for r in rules:
                name = f" `{r.name}`" if r.name else ""
                lines.append(f"  Rule {r.index + 1}{name} (spec.{direction.lower()}[{r.index}]): {r.action}")
                lines.append(f"    {side} any one of {len(r.peers)} peer(s):")
                for p in r.peers:
                    count = "" if p.text.startswith("IP") else f" [{len(p.pods)} pod(s)]"
                    lines.append(f"      {p.index + 1}. {p.text}{count}")
                if r.ports is None:
                    lines.append("    on: every port and protocol (the rule has no `protocols`)")
                else:
                    lines.append("    on any one of: " + "; ".join(r.ports))
            lines.append(f"  no rule matches: the connection goes on to the "
                         f"{'NetworkPolicy tier' if self.tier == cnp.ADMIN else 'default (allow)'}")
        for note in self.notes:
            lines.append(f"Note: {note}")
        return "\n".join(lines) + "\n"


def _cluster_peers(state: ClusterState, peers: tuple[Peer, ...], ctx: MatchContext) -> tuple[PeerText, ...]:
    out = []
    for index in sorted({p.index for p in peers}):
        group = [p for p in peers if p.index == index]
        if group[0].kind == "network":
            text = "IP addresses in " + ", ".join(p.ip_range.describe() for p in group if p.ip_range is not None)
            out.append(PeerText(index, text + " (pod and node IPs too)", (), False))
            continue
        peer = group[0]
        if peer.pod_selector is None and peer.namespace_selector is not None:
            text = f"every pod in {namespaces_text(peer.namespace_selector)}"
        else:
            text = peer.describe()
        out.append(PeerText(index, text, _peer_pods(state, None, peer, ctx), False))
    return tuple(out)


def describe_cluster_policy(state: ClusterState, policy: cnp.ClusterPolicy, ctx: MatchContext,
                            ordered: tuple[cnp.ClusterPolicy, ...], notes: tuple[str, ...] = ()
                            ) -> ClusterPolicyDescription:
    selected = tuple(k for k, pod in sorted(state.pods.items()) if policy.selects(pod, ctx.namespace_labels))
    rules = {d: tuple(ClusterRuleText(r.index, r.name, r.action, _cluster_peers(state, r.peers, ctx),
                                      None if r.ports is None else tuple(_cluster_port(p) for p in r.ports))
                      for r in policy.rules(d)) for d in ("ingress", "egress")}
    same_tier = [p for p in ordered if p.tier == policy.tier]
    before = tuple(f"{p.kind} {p.name} ({p.where})" for p in same_tier[:same_tier.index(policy)]) \
        if policy in same_tier else ()
    return ClusterPolicyDescription(policy.kind, policy.name, policy.tier, policy.priority, policy.subject_text(),
                                    selected, rules["ingress"], rules["egress"], before, notes)


def _describe_cluster(state: ClusterState, kinds: tuple[str, ...], name: str) -> list[ClusterPolicyDescription]:
    index = build_index(state)
    ordered = index.cluster
    if not ordered:  # not enforced (ebpf): still say what they would do, in their order
        readable = []
        for kind in cnp.KINDS:
            for o in state.objects_of(kind):
                try:
                    readable.append(cnp.parse(kind, o.raw, o.source))
                except cnp.ClusterPolicyError:
                    continue
        ordered = tuple(sorted(readable, key=lambda p: (cnp.TIERS.index(p.tier), p.order)))
    notes: tuple[str, ...] = ()
    if index.cluster_unenforced:
        notes = (f"not enforced: the data plane is {state.config.dataplane}, and Cilium does not implement the "
                 "network-policy-api kinds",)
    out: list[ClusterPolicyDescription] = []
    for kind in kinds:
        obj = state.others.get((kind, name))
        if obj is None:
            continue
        try:
            policy = cnp.parse(kind, obj.raw, obj.source)
        except cnp.ClusterPolicyError as exc:
            raise PolicyInputError(f"{obj.source}: {kind} {name}: {exc} (the policy is ignored)") from None
        placed = next((p for p in ordered if (p.kind, p.name) == (kind, name)), policy)
        out.append(describe_cluster_policy(state, placed, index.ctx, ordered, notes))
    return out


CALICO_GLOBAL_NAMES = frozenset().union(*(names_of(BY_GROUP_KIND[(group, "GlobalNetworkPolicy")])
                                          for group in CNI_GROUPS[CALICO_CNI]))


def _describe_calico(state: ClusterState, kind: str, namespace: str, name: str) -> list[CalicoPolicyDescription]:
    from . import cni as cnis

    index = build_index(state)
    try:
        return describe_calico(state, kind, namespace, name, index.calico or index.staged_base, index.ctx,
                               index.cni.text(), index.cni.name == cnis.CALICO)
    except (CalicoPolicyError, SelectorError) as exc:
        raise PolicyInputError(f"{kind}.projectcalico.org {name}: {exc} (the policy is ignored)") from None


CILIUM_CLUSTERWIDE_NAMES = names_of(BY_GROUP_KIND[("cilium.io", cilium.CLUSTERWIDE_KIND)])


def _describe_cilium(state: ClusterState, kind: str, key: str) -> list[CiliumPolicyDescription]:
    """A Cilium policy in Cilium's own words (deny first); [] when there is none of that name."""
    from . import cni as cnis

    obj = state.others.get((kind, key))
    if obj is None:
        return []
    try:
        read, left_out = cilium.read_with_notes(obj)
    except cilium.CiliumPolicyError as exc:
        raise PolicyInputError(f"{obj.source}: {kind} {key}: {exc} (the policy is ignored)") from None
    index = build_index(state)
    return describe_cilium(state, read, index.ctx, index.cni.text(), index.cni.name == cnis.CILIUM, left_out)


ANTREA_CLUSTER_NAMES = names_of(BY_GROUP_KIND[("crd.antrea.io", ANTREA_ACNP)])


def _describe_antrea(state: ClusterState, kind: str, namespace: str, name: str) -> list[AntreaPolicyDescription]:
    from . import cni as cnis

    index = build_index(state)
    try:
        return describe_antrea(state, kind, namespace, name, index.antrea, index.ctx, index.cni.text(),
                               index.cni.name == cnis.ANTREA)
    except AntreaPolicyError as exc:
        raise PolicyInputError(f"{kind}.crd.antrea.io {name}: {exc} (the policy is ignored)") from None


# --- entry point -------------------------------------------------------------------------------


def describe(state: ClusterState, name: str, namespace: str = "default"
             ) -> list[PolicyDescription | ClusterPolicyDescription | CalicoPolicyDescription
                       | CiliumPolicyDescription
                       | AntreaPolicyDescription]:
    """The NetworkPolicy (or CiliumNetworkPolicy) ``namespace/name`` in words; ``KIND/name`` or a name no
    NetworkPolicy of ``namespace`` has: the ClusterNetworkPolicy (AdminNetworkPolicy, ...) of that name."""
    if namespace.lower() in CALICO_GLOBAL_NAMES:
        found_calico = _describe_calico(state, "GlobalNetworkPolicy", "", name)
        if not found_calico:
            raise PolicyInputError(f"globalnetworkpolicy {name} not found")
        return list(found_calico)
    if namespace.lower() in CILIUM_CLUSTERWIDE_NAMES:
        found_cilium = _describe_cilium(state, cilium.CLUSTERWIDE_KIND, name)
        if not found_cilium:
            raise PolicyInputError(f"ciliumclusterwidenetworkpolicy {name} not found")
        return list(found_cilium)
    if namespace.lower() in ANTREA_CLUSTER_NAMES:
        found_antrea = _describe_antrea(state, ANTREA_ACNP, "", name)
        if not found_antrea:
            raise PolicyInputError(f"clusternetworkpolicy.crd.antrea.io {name} not found")
        return list(found_antrea)
    if namespace.lower() in CLUSTER_KIND_NAMES:
        found = _describe_cluster(state, (CLUSTER_KIND_NAMES[namespace.lower()],), name)
        if not found and CLUSTER_KIND_NAMES[namespace.lower()] == cnp.CLUSTER_NETWORK_POLICY:
            found = _describe_antrea(state, ANTREA_ACNP, "", name)  # Antrea's kind of the same name
        if not found:
            raise PolicyInputError(f"{CLUSTER_KIND_NAMES[namespace.lower()].lower()} {name} not found")
        return list(found)
    key = f"{namespace}/{name}"
    policies: list[Policy] = []
    notes: list[str] = []
    np = state.network_policies.get(key)
    if np is not None:
        policies.append(from_network_policy(np))
    else:
        obj = state.others.get((cilium.KIND, key))
        calico_found = _describe_calico(state, "NetworkPolicy", namespace, name) if obj is None else []
        if calico_found:
            return list(calico_found)
        antrea_found = _describe_antrea(state, ANTREA_ANNP, namespace, name) if obj is None else []
        if antrea_found:
            return list(antrea_found)
        if obj is None:
            cluster = _describe_cluster(state, cnp.KINDS, name) or _describe_antrea(state, ANTREA_ACNP, "", name)
            if cluster:
                return list(cluster)
            clusterwide = _describe_cilium(state, cilium.CLUSTERWIDE_KIND, name)
            if clusterwide:
                return list(clusterwide)
            known = sorted(state.network_policies) + sorted(k for kind, k in state.others if kind == cilium.KIND)
            known += sorted(f"{kind.lower()}/{k}" for kind, k in state.others if kind in cnp.KINDS)
            raise PolicyInputError(f"networkpolicy {key} not found; policies: {', '.join(known) or 'none'}")
        try:
            if any(p.needs_walk for p in cilium.read(obj)):
                return list(_describe_cilium(state, cilium.KIND, key))  # deny rules, entities...: Cilium's words
            policies.extend(cilium.parse(obj))
        except cilium.CiliumPolicyError as exc:
            raise PolicyInputError(f"{obj.source}: {cilium.KIND} {key}: {exc}") from None
        cni = build_index(state).cni
        if cni.name != "cilium":  # Cilium with or without its kube-proxy replacement enforces it
            notes.append(f"not enforced: the data plane is {state.config.dataplane}, which has no Cilium (the "
                         f"cluster's {cni.text()})")
    ctx = build_index(state).ctx
    out = []
    for policy in policies:
        selected = tuple(p.key for p in state.pods_in(namespace) if policy.selector.matches(p.labels))
        types = tuple(t for t, r in (("Ingress", policy.ingress), ("Egress", policy.egress)) if r is not None)
        out.append(PolicyDescription(policy.kind, namespace, policy.name, policy.selector.formatted(), selected,
                                     types, _rules(state, policy, policy.ingress, ctx),
                                     _rules(state, policy, policy.egress, ctx), tuple(notes)))
    return out


__all__ = ["INGRESS", "ClusterPolicyDescription", "PolicyDescription", "describe", "describe_cluster_policy"]
