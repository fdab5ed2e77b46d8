"""The cluster's CNI, and every policy object it does not enforce (or knetsim does not evaluate) named.

What a connection is allowed to do depends on the pod network plugin as much as on the
policies: Calico enforces its own ``projectcalico.org`` kinds (in tiers around Kubernetes
NetworkPolicy), Cilium its ``cilium.io`` kinds, Antrea its ``crd.antrea.io`` kinds, kindnet
(kube-network-policies) NetworkPolicy and the network-policy-api kinds, and flannel no policy
at all. A verdict that leaves out a policy the cluster enforces is wrong, and one that counts a
policy the cluster ignores is wrong too; neither may be silent.

Which CNI, in order (``cluster_cni``):

1. ``cni:`` in the cluster config (``configured``); ``dataplane: ebpf`` is Cilium's kube-proxy
   replacement, so it means Cilium;
2. what runs in the cluster (``detected``): the agents' DaemonSets or pods in ``kube-system``,
   ``calico-system`` or ``kube-flannel`` of a cluster read through ``--kubeconfig`` or a snapshot
   (calico-node, cilium, antrea-agent, kube-flannel-ds, kindnet); knetsim's own kind-like
   system objects are not evidence;
3. the policy kinds stored (``inferred``): Calico's or Antrea's kinds exist only where their
   CRDs are installed, so a cluster that stores a GlobalNetworkPolicy runs Calico. A Cilium
   kind does not make a cluster Cilium here: ``dataplane: ebpf`` (or ``cni: cilium``) already
   says so, and a CiliumNetworkPolicy on another data plane keeps its "not enforced" answer;
4. kind's ``kindnet`` (``default``).

Every other answer comes from ``caveats``: for each policy object of ``state.others`` that the
CNI does not enforce, or enforces while knetsim does not evaluate it, the reason, in words a
verdict can carry; ``applies_to`` says which verdicts it could change (a namespaced policy only
those with an end in its namespace).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..cluster.state import ClusterState
from ..model.kinds import ANTREA, BY_GROUP_KIND, BY_KIND, CALICO, CILIUM, POLICY, STAGED
from ..model.loader import BUILTIN, CONTROLLER, Source
from ..model.objects import Object

KINDNET, FLANNEL = "kindnet", "flannel"  # CALICO, CILIUM, ANTREA: model.kinds, whose rows name them
DISPLAY = {KINDNET: "kindnet", CALICO: "Calico", CILIUM: "Cilium", ANTREA: "Antrea", FLANNEL: "flannel"}
CONFIGURED, DETECTED, INFERRED, DEFAULT = "configured", "detected", "inferred", "default"

# The API groups each CNI's own kinds live in, from their rows in model.kinds (projectcalico.org is the API
# server's, crd.projectcalico.org the CRDs' storage form a live cluster returns without the Calico API server).
GROUPS: dict[str, str] = {
    **{info.group: info.cni for info in BY_GROUP_KIND.values() if info.cni},
    "security.antrea.tanzu.vmware.com": ANTREA,  # the pre-v1.0 group of Antrea's policies: no row, a caveat
}
# The kinds of those groups that decide connections (the sets, groups and tiers they refer to decide nothing alone).
POLICY_KINDS: dict[str, frozenset[str]] = {
    cni: frozenset(i.kind for i in BY_GROUP_KIND.values() if i.cni == cni and i.role in (POLICY, STAGED))
    for cni in (CALICO, CILIUM, ANTREA)}
# Calico never enforces a staged policy: it is a preview (projectcalico.org docs, "Stage, preview impacts...").
STAGED_KINDS = frozenset(i.kind for i in BY_GROUP_KIND.values() if i.role == STAGED)
# Which CNI enforces the built-in and network-policy-api kinds: flannel enforces none (it is only a pod
# network); Cilium none of the network-policy-api kinds (cilium/cilium#23380).
ENFORCES_NETWORK_POLICY = frozenset({KINDNET, CALICO, CILIUM, ANTREA})
ENFORCES_CLUSTER_POLICY = frozenset({KINDNET, CALICO, ANTREA})
# The kinds each CNI enforces that knetsim evaluates (beside NetworkPolicy and the cluster tiers): every policy
# row (policy/calico, policy/antrea, policy/cilium read them all; the pre-v1.0 Antrea group stays a caveat).
EVALUATED: dict[str, frozenset[tuple[str, str]]] = {
    cni: frozenset((i.group, i.kind) for i in BY_GROUP_KIND.values() if i.cni == cni and i.role == POLICY)
    for cni in (CALICO, CILIUM, ANTREA)}

# What a CNI's agent runs as: (namespace, DaemonSet name) and the pod labels it carries. Upstream manifests:
# calico-node (projectcalico/calico manifests, the operator's calico-system), cilium (cilium/cilium's Helm
# chart, k8s-app=cilium), antrea-agent (antrea-io/antrea build/yamls, app=antrea component=antrea-agent),
# kube-flannel-ds (flannel-io/flannel kube-flannel.yml, app=flannel), kindnet (kind's manifest, app=kindnet).
_AGENT_NAMESPACES = frozenset({"kube-system", "calico-system", "kube-flannel"})
_AGENTS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    (CALICO, "calico-node", (("k8s-app", "calico-node"),)),
    (CILIUM, "cilium", (("k8s-app", "cilium"),)),
    (ANTREA, "antrea-agent", (("app", "antrea"), ("component", "antrea-agent"))),
    (KINDNET, "kindnet", (("app", "kindnet"),)),
    (FLANNEL, "kube-flannel-ds", (("app", "flannel"),)),
)


@dataclass(frozen=True, slots=True)
class ClusterCNI:
    """The CNI whose policy the answers follow, and how knetsim knows it."""

    name: str
    how: str  # configured | detected | inferred | default
    evidence: str = ""  # what it was detected or inferred from

    @property
    def display(self) -> str:
        return DISPLAY.get(self.name, self.name)

    def text(self) -> str:
        """``CNI Calico (inferred from GlobalNetworkPolicy.projectcalico.org deny-all; ...)``"""
        if self.how == CONFIGURED:
            return f"CNI {self.display} (cluster config)"
        if self.how == DETECTED:
            return f"CNI {self.display} (detected: {self.evidence} runs in the cluster)"
        if self.how == INFERRED:
            return (f"CNI {self.display} (inferred from {self.evidence}: set cni in the cluster config to say "
                    "otherwise)")
        return f"CNI {self.display} (kind's default; set cni in the cluster config for another)"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "how": self.how, "evidence": self.evidence or None}


@dataclass(frozen=True, slots=True)
class PolicyObject:
    """A policy object the engine does not take into its answer as a Kubernetes kind."""

    group: str
    kind: str
    namespace: str
    name: str
    source: Source
    owner: str  # the CNI whose kind it is; "" for a kind knetsim does not know

    @property
    def ref(self) -> str:
        """``GlobalNetworkPolicy.projectcalico.org deny-all``: kubectl's qualified kind, so kinds of one name in
        two groups are never confused."""
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        return f"{kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "kind": self.kind, "namespace": self.namespace or None, "name": self.name}


@dataclass(frozen=True, slots=True)
class Caveat:
    """One policy object the verdict leaves out, and why that could make it differ from the cluster's."""

    object: PolicyObject
    enforced: bool  # True: the CNI enforces it (knetsim does not evaluate it); False: the CNI ignores it
    reason: str

    def applies_to(self, namespaces: Iterable[str]) -> bool:
        """Could it change a verdict whose pod ends are in ``namespaces``? A namespaced policy selects only pods
        of its own namespace; a cluster-wide one any."""
        return not self.object.namespace or self.object.namespace in set(namespaces)

    def text(self) -> str:
        return f"{self.object.ref}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {**self.object.to_dict(), "enforcedByCNI": self.enforced, "reason": self.reason,
                "text": self.text()}


KIND_DEFAULT = ClusterCNI(KINDNET, DEFAULT)


def group_of(obj: Object) -> str:
    return str(obj.raw.get("apiVersion") or "").rpartition("/")[0]


def _owner(group: str) -> str | None:
    """The CNI whose group this is; "" for an unknown custom group; None for a Kubernetes or knetsim group."""
    if group in GROUPS:
        return GROUPS[group]
    if not group or "." not in group or group.endswith((".k8s.io", ".kubernetes.io", ".x-k8s.io")):
        return None
    return ""


def _looks_like_network_policy(group: str, kind: str) -> bool:
    """An unknown custom kind that may restrict traffic: ``*NetworkPolicy*`` kinds, ``*network*`` groups, and
    ``*Policy`` kinds of ``*policy*`` groups (not every Policy: a Kyverno ClusterPolicy decides no packet)."""
    k, g = kind.lower(), group.lower()
    return "networkpolicy" in k or "network" in g or ("policy" in g and "policy" in k)


def policy_objects(state: ClusterState) -> list[PolicyObject]:
    """The objects of ``state.others`` that are a CNI's policy kinds or unknown network-policy-like kinds, in
    (group, kind, namespace, name) order. CiliumNetworkPolicy is among them (the engine reads it itself)."""
    out = []
    for obj in state.others.values():
        group = group_of(obj)
        info = BY_KIND.get(obj.kind)
        if info is not None and info.group == group:
            continue  # a kind knetsim knows, in its group: read by its own layer
        owner = _owner(group)
        if owner is None:
            continue
        if owner:
            if obj.kind not in POLICY_KINDS.get(owner, ()):
                continue
        elif not _looks_like_network_policy(group, obj.kind):
            continue
        out.append(PolicyObject(group, obj.kind, obj.namespace, obj.name, obj.source, owner))
    return sorted(out, key=lambda p: (p.group, p.kind, p.namespace, p.name))


def _detected(state: ClusterState) -> ClusterCNI | None:
    """The CNI whose agent runs in the cluster (a live cluster's or a snapshot's objects; never knetsim's own)."""
    found: dict[str, str] = {}
    for (kind, key), obj in state.workloads_without_status.items():
        if kind != "DaemonSet" or obj.source is BUILTIN or obj.source is CONTROLLER \
                or obj.namespace not in _AGENT_NAMESPACES:
            continue
        for cni, name, _ in _AGENTS:
            if obj.name == name:
                found.setdefault(cni, f"DaemonSet {key}")
    for pod in (p for ns in sorted(_AGENT_NAMESPACES) for p in state.pods_in(ns)):
        if pod.source is BUILTIN or pod.source is CONTROLLER:
            continue
        for cni, _, labels in _AGENTS:
            if all(pod.labels.get(k) == v for k, v in labels):
                found.setdefault(cni, f"pod {pod.key}")
    # Canal (flannel's network with Calico's policy) runs both: the policy engine is the one that decides.
    for cni, _, _ in _AGENTS:
        if cni in found:
            return ClusterCNI(cni, DETECTED, found[cni])
    return None


def _inferred(objects: list[PolicyObject]) -> ClusterCNI | None:
    owners: dict[str, PolicyObject] = {}
    for obj in objects:
        if obj.owner in (CALICO, ANTREA):
            owners.setdefault(obj.owner, obj)
    if len(owners) != 1:
        return None  # none, or two CNIs' kinds: nothing to tell them apart by; the default stands, each caveated
    (cni, first), = owners.items()
    return ClusterCNI(cni, INFERRED, first.ref)


def cluster_cni(state: ClusterState, objects: list[PolicyObject] | None = None) -> ClusterCNI:
    """The CNI whose policy the answers follow (configured, detected, inferred or kind's default)."""
    config = state.config
    if config.cni:
        return ClusterCNI(config.cni, CONFIGURED)
    if config.dataplane == "ebpf":
        return ClusterCNI(CILIUM, CONFIGURED, "dataplane: ebpf")
    found = _detected(state)
    if found is not None:
        return found
    inferred = _inferred(policy_objects(state) if objects is None else objects)
    return inferred or KIND_DEFAULT


def _reason(obj: PolicyObject, cni: ClusterCNI) -> tuple[bool, str] | None:
    """(enforced by the CNI, why it is left out), or None when knetsim evaluates it as the CNI would."""
    if obj.kind in STAGED_KINDS and obj.owner == CALICO:
        return None  # never enforced by anyone: listed by `listed`, changes no verdict
    if obj.owner == cni.name:
        if (obj.group, obj.kind) in EVALUATED.get(cni.name, ()):
            return None
        return True, (f"enforced by {cni.display}, but knetsim does not evaluate this kind yet: this answer leaves "
                      "it out and may differ from the cluster's")
    if obj.owner:
        owner = DISPLAY[obj.owner]
        return False, (f"{owner}'s kind, not enforced: the cluster's {cni.text()} does not enforce it; set cni: "
                       f"{obj.owner} in the cluster config if the cluster runs {owner}")
    return False, (f"a kind knetsim does not know (group {obj.group}); left out of this answer: if the cluster's "
                   "CNI enforces it, the answer may differ from the cluster's")


def caveats(state: ClusterState, cni: ClusterCNI, objects: list[PolicyObject], *,
            cilium_never: bool = False) -> tuple[Caveat, ...]:
    """A caveat for each policy object the answers leave out (Cilium's two kinds excepted: the engine names
    them where they are not enforced, and evaluates them on Cilium). ``cilium_never``: the Cilium agent's
    enforcement mode is never (the engine read it): every NetworkPolicy and Cilium policy is left out."""
    out = []
    for obj in objects:
        if obj.group == "cilium.io" and obj.kind in CILIUM_KINDS:
            continue
        found = _reason(obj, cni)
        if found is not None:
            out.append(Caveat(obj, *found))
    unenforcing = ("not enforced: flannel enforces no network policy (it is a pod network only)" if cni.name == FLANNEL
                   else CILIUM_NEVER if cilium_never else None)
    if unenforcing is not None:
        for np in sorted(state.network_policies.values(), key=lambda p: p.key):
            out.append(Caveat(PolicyObject("networking.k8s.io", "NetworkPolicy", np.namespace, np.name, np.source,
                                           KINDNET), False, unenforcing))
    if cilium_never:
        for kind in CILIUM_KINDS:
            for policy in state.objects_of(kind):
                out.append(Caveat(PolicyObject("cilium.io", kind, policy.namespace, policy.name, policy.source,
                                               CILIUM), False, CILIUM_NEVER))
    return tuple(out)


CILIUM_KINDS = ("CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy")
# Every policy object's caveat on a Cilium cluster whose agent enforces none (policy/cilium/labels.py).
CILIUM_NEVER = ("not enforced: the Cilium agent's policy enforcement mode is never (kube-system/cilium-config "
                "enable-policy), so it enforces no policy, even one that selects the pod")


def listed(objects: list[PolicyObject], cni: ClusterCNI | None = None) -> tuple[str, ...]:
    """The staged policies, named: Calico never enforces them (they preview what enforcing would change); and, for
    a CNI found running in the cluster whose own kinds none of the input holds, that they were not read."""
    out = [f"{o.ref}: staged, never enforced (Calico's preview of a policy)" for o in objects
           if o.owner == CALICO and o.kind in STAGED_KINDS]
    if cni is not None and cni.how == DETECTED and cni.name in POLICY_KINDS \
            and not any(o.owner == cni.name for o in objects):
        groups = sorted(g for g, owner in GROUPS.items() if owner == cni.name)
        out.append(f"{cni.display} runs in this cluster ({cni.evidence}) but none of its own policy kinds "
                   f"({', '.join(sorted(POLICY_KINDS[cni.name]))} of {' or '.join(groups)}) is in the input: a "
                   "cluster read with --kubeconfig is read with them where it serves them; from files, export them "
                   "(kubectl get <kind>.<group> -A -o yaml) and add them with -f")
    return tuple(out)


__all__ = ["ANTREA", "CALICO", "CILIUM", "DEFAULT", "DETECTED", "FLANNEL", "INFERRED", "KINDNET", "Caveat",
           "ClusterCNI", "PolicyObject", "caveats", "cluster_cni", "listed", "policy_objects"]
