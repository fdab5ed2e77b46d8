"""The NetworkPolicy engine: does policy allow a connection, and which rule said so.

Semantics (networking.k8s.io/v1 API reference and the "Network Policies" concept page):

* a pod is isolated for ingress (egress) when some policy of its namespace selects it and
  lists Ingress (Egress) in ``policyTypes``; otherwise that direction allows everything;
* an isolated pod accepts exactly the union of what the selecting policies' rules allow;
  policies only add, so their order never matters;
* a connection needs the source's egress AND the destination's ingress; replies of an
  allowed connection are allowed (policies are stateful);
* traffic from the pod's own node is always allowed into it; a pod cannot block itself;
* hostNetwork pods are not subject to pod policies and are not matched by pod or
  namespace selectors: their traffic is node traffic ("the most common implementation",
  as the concept page puts it), matched only by ipBlocks;
* on a Cilium cluster (``ebpf``, or ``cni: cilium``) CiliumNetworkPolicies are enforced together
  with NetworkPolicies (same union), and ipBlocks do not match pod or node IPs; where a Cilium
  policy needs more (deny rules, CiliumClusterwideNetworkPolicy, entities, toServices, toFQDNs,
  enableDefaultDeny false), Cilium's own walk decides each side, deny before allow (``cilium/``);
* ClusterNetworkPolicies (and the v1alpha1 AdminNetworkPolicy / BaselineAdminNetworkPolicy)
  wrap that union in tiers on each side: Admin tier, NetworkPolicy, Baseline tier, default
  allow (``tiers.py``). Cilium does not implement them: on ``ebpf`` they are not enforced.

Everything here is a pure function of a ``ClusterState``.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..cluster.state import ClusterState
from ..model.labels import edit_distance
from ..model.objects import Pod
from . import cilium
from . import cluster as cnp
from . import cni as cnis
from .calico import evaluate as calico
from .calico.read import read as read_calico
from .calico.staged import StagedChange, read_staged, with_change
from .cilium import labels as cilium_labels
from .ports import ConnSet
from .rules import (
    EGRESS,
    INGRESS,
    Endpoint,
    MatchContext,
    Policy,
    Rule,
    SharedRules,
    first_peer,
    first_port,
    from_network_policy,
    peer_matches,
    rule_connections,
)
from .tiers import (
    ACCEPTED,
    CLUSTER_TIERS,
    DEFAULT_TIER,
    DENIED,
    NETWORK_POLICY_TIER,
    NEXT,
    ORDER,
    Answer,
    TierDecision,
    TierRuleMatch,
    combine,
    decide,
    run,
    tier_sets,
)

if TYPE_CHECKING:
    from .antrea import evaluate as antrea
    from .cilium import evaluate as cilium_walk


class PolicyInputError(ValueError):
    """A reference the engine cannot evaluate (unknown pod, a Service IP, a bad port); maps to exit 2."""


# --- the policies in force ------------------------------------------------------------


@dataclass(frozen=True)
class PolicyIndex:
    policies: tuple[Policy, ...]
    by_namespace: Mapping[str, tuple[Policy, ...]]
    ctx: MatchContext
    cilium_enforced: bool
    unenforced: tuple[str, ...] = ()  # CiliumNetworkPolicies present but not enforced (no Cilium)
    problems: tuple[str, ...] = ()  # CiliumNetworkPolicies (or cluster policies) that could not be read
    cluster: tuple[cnp.ClusterPolicy, ...] = ()  # enforced ClusterNetworkPolicies/ANPs/BANPs, tier by tier, in order
    cluster_unenforced: tuple[str, ...] = ()  # present but not enforced (Cilium implements none of them)
    # The CNI whose policy is followed, and each policy object left out of the answers, with why (cni.py).
    cni: cnis.ClusterCNI = cnis.KIND_DEFAULT
    caveats: tuple[cnis.Caveat, ...] = ()
    listed: tuple[str, ...] = ()  # policy objects named on every answer that change none (staged policies)
    # On Calico with Calico policies: its tiers, which then decide every side (calico/evaluate.py).
    calico: calico.CalicoIndex | None = None
    # Calico's staged policies (never enforced) and the index each is previewed against.
    staged: tuple[StagedChange, ...] = ()
    staged_base: calico.CalicoIndex | None = None
    # On Cilium with policies only its own walk can answer (deny rules, the clusterwide kind, entities, toServices,
    # toFQDNs, enableDefaultDeny: false): every NetworkPolicy and Cilium policy, deny before allow (cilium/).
    cilium: cilium_walk.CiliumIndex | None = None
    # On Antrea with Antrea-native policies: its tiers around Kubernetes NetworkPolicy (antrea/evaluate.py).
    antrea: antrea.AntreaIndex | None = None
    # Why no policy is enforced at all, where that is the CNI's own setting (Cilium's enable-policy never): every
    # side's reason, in place of "no policy selects it" (policies may well select it).
    enforces_nothing: str = ""
    # (pod, direction) -> the NetworkPolicies selecting it; not an init field, so a replace() never shares it.
    _selecting: dict[tuple[str, str], list[Policy]] = field(default_factory=dict, init=False, repr=False,
                                                            compare=False)
    _on_node: dict[str, MatchContext] = field(default_factory=dict, init=False, repr=False, compare=False)

    def on_node(self, node: str) -> MatchContext:
        """The match context seen from a pod on ``node`` (Cilium's host / remote-node entities read it)."""
        found = self._on_node.get(node)
        if found is None:
            found = self._on_node[node] = dataclasses.replace(self.ctx, local_node=node)
        return found

    def selecting(self, pod: Pod, direction: str) -> list[Policy]:
        key = (pod.key, direction)
        found = self._selecting.get(key)
        if found is None:
            found = self._selecting[key] = [p for p in self.by_namespace.get(pod.namespace, ())
                                            if p.rules(direction) is not None and p.selector.matches(pod.labels)]
        return found

    def tier(self, name: str) -> tuple[cnp.ClusterPolicy, ...]:
        return tuple(p for p in self.cluster if p.tier == name)

    def cluster_selecting(self, pod: Pod, tier: str, direction: str) -> list[cnp.ClusterPolicy]:
        """The policies of ``tier`` whose subject is ``pod`` and that have ``direction`` rules, in order."""
        return [p for p in self.cluster if p.tier == tier and p.rules(direction)
                and p.selects(pod, self.ctx.namespace_labels)]


_INDEXES: dict[int, tuple[weakref.ref[ClusterState], PolicyIndex]] = {}


def policy_index(state: ClusterState) -> PolicyIndex:
    """The normalized policies of ``state`` (cached per state object; the state is read-only)."""
    cached = _INDEXES.get(id(state))
    if cached is not None and cached[0]() is state:
        return cached[1]
    index = build_index(state)
    key = id(state)

    def forget(_ref: object, cache: dict[int, Any] = _INDEXES) -> None:
        cache.pop(key, None)

    _INDEXES[key] = (weakref.ref(state, forget), index)
    return index


def build_index(state: ClusterState) -> PolicyIndex:
    objects = cnis.policy_objects(state)
    cni = cnis.cluster_cni(state, objects)
    # Cilium's semantics (ipBlocks never match cluster IPs, its own kinds enforced) hold with or without its
    # kube-proxy replacement: they follow the CNI, not the data plane.
    ebpf = cni.name == cnis.CILIUM
    policies, unenforced, problems = [], [], []
    # Cilium's agent may enforce no policy at all, or every endpoint's (cilium-config enable-policy).
    mode, problem = cilium_labels.enforcement(state) if ebpf else (cilium_labels.ENFORCE_DEFAULT, None)
    if problem is not None:
        problems.append(problem)
    shared_rules = SharedRules()
    for _, np in sorted(state.network_policies.items()):
        if cni.name not in cnis.ENFORCES_NETWORK_POLICY or mode == cilium_labels.ENFORCE_NEVER:
            break  # each named by a caveat (cni.caveats)
        try:
            policies.append(from_network_policy(np, shared_rules))
        except ValueError as exc:  # only an object analysed as written (--validate=ignore) can get here
            problems.append(f"{np.source}: NetworkPolicy {np.key}: {exc}")
    cilium_policies: list[cilium.CiliumPolicy] = []
    for kind in cilium.KINDS:
        for obj in state.objects_of(kind):
            ref = f"{kind} {obj.key if obj.namespace else obj.name}"
            if not ebpf:
                unenforced.append(ref)
                continue
            if mode == cilium_labels.ENFORCE_NEVER:
                continue  # named by a caveat (cni.caveats)
            try:
                read, left_out = cilium.read_with_notes(obj)
            except (cilium.CiliumPolicyError, ValueError) as exc:
                problems.append(f"{obj.source}: {ref}: {exc}")
                continue
            cilium_policies.extend(read)
            problems += [f"{obj.source}: {ref}: {note}" for note in left_out]
            policies.extend(p.policy for p in read if not p.clusterwide)
    by_ns: dict[str, list[Policy]] = {}
    for p in policies:
        by_ns.setdefault(p.namespace, []).append(p)
    nodes = state.nodes

    def node_labels(name: str, nodes: Mapping[str, Any] = nodes) -> Mapping[str, str]:
        node = nodes.get(name)
        return node.labels if node is not None else {}

    ctx = MatchContext(state.namespace_labels, ipblocks_match_cluster=not ebpf, node_labels=node_labels)
    cluster, cluster_unenforced = [], []
    for kind in cnp.KINDS:
        for obj in state.objects_of(kind):
            if cni.name not in cnis.ENFORCES_CLUSTER_POLICY:
                cluster_unenforced.append(f"{kind} {obj.name}")
                continue
            try:
                cluster.append(cnp.parse(kind, obj.raw, obj.source))
            except (cnp.ClusterPolicyError, ValueError, KeyError, TypeError) as exc:
                problems.append(f"{obj.source}: {kind} {obj.name}: {exc}")
    cluster.sort(key=lambda p: (cnp.TIERS.index(p.tier), p.order))
    index = PolicyIndex(tuple(policies), {k: tuple(v) for k, v in by_ns.items()}, ctx, ebpf,
                        tuple(unenforced), tuple(problems), tuple(cluster), tuple(cluster_unenforced), cni,
                        cnis.caveats(state, cni, objects, cilium_never=mode == cilium_labels.ENFORCE_NEVER),
                        cnis.listed(objects, cni))
    if cni.name == cnis.CALICO:
        found = read_calico(state, index.policies, index.cluster_selecting, problems)
        if found is not None:
            index = dataclasses.replace(index, calico=found)
        staged = read_staged(state, problems)
        if staged:
            base = found or read_calico(state, index.policies, index.cluster_selecting, [], force=True)
            index = dataclasses.replace(index, staged=tuple(staged), staged_base=base)
    if mode == cilium_labels.ENFORCE_ALWAYS:
        cilium_policies.append(cilium.always_enforced())  # clusterwide: Cilium's own walk answers
    elif mode == cilium_labels.ENFORCE_NEVER:
        index = dataclasses.replace(index, enforces_nothing="the Cilium agent enforces no policy (its enforcement "
                                    "mode is never: kube-system/cilium-config enable-policy)")
    if ebpf and any(p.needs_walk for p in cilium_policies):
        from .cilium import evaluate as cilium_walk  # Cilium's and Antrea's walks load where used: ~8 ms of start

        walked = [cilium.CiliumPolicy(p) for p in policies if p.kind == "NetworkPolicy"] + cilium_policies
        index = dataclasses.replace(index, cilium=cilium_walk.build(state, walked))
    if cni.name == cnis.ANTREA:
        from .antrea.read import read as read_antrea

        found_antrea = read_antrea(state, problems)
        if found_antrea is not None:
            index = dataclasses.replace(index, antrea=found_antrea)
    return dataclasses.replace(index, problems=tuple(dict.fromkeys(problems)))


# --- endpoints ------------------------------------------------------------------------


def pod_endpoint(state: ClusterState, pod: Pod) -> Endpoint:
    if pod.host_network:
        node = state.nodes.get(pod.node_name)
        return Endpoint("node", pod.pod_ip or pod.host_ip or (node.internal_ip if node else ""), pod, pod.node_name)
    return Endpoint("pod", pod.pod_ip, pod, pod.node_name)


def endpoint(state: ClusterState, ref: str | Pod | Endpoint, default_namespace: str = "default") -> Endpoint:
    """``ns/pod``, ``pod`` (in ``default_namespace``), a pod, or an IP address."""
    if isinstance(ref, Endpoint):
        return ref
    if isinstance(ref, Pod):
        return pod_endpoint(state, ref)
    try:
        ip = ipaddress.ip_address(ref)
    except ValueError:
        ip = None
    if ip is not None:
        text = str(ip)
        pod = state.pod_by_ip(text)
        if pod is not None:
            found = pod_endpoint(state, pod)
            # A dual-stack pod is also its other family's address: ipBlocks see the one the packet carries.
            return dataclasses.replace(found, ip=text) if found.kind == "pod" else found
        node = state.node_by_ip(text)
        if node is not None:
            return Endpoint("node", text, None, node.name)
        svc = state.service_by_ip(text)
        if svc is not None:
            raise PolicyInputError(
                f"{text} is an address of Service {svc.key}: NetworkPolicy acts after the data plane has "
                "translated it to a pod IP; name a backend pod (or use `knetsim trace` for the whole path)")
        return Endpoint("external", text)
    namespace, _, name = ref.rpartition("/")
    namespace = namespace or default_namespace
    pod = state.pods.get(f"{namespace}/{name}")
    if pod is None:
        candidates = sorted(state.pods, key=lambda k: (edit_distance(k, f"{namespace}/{name}"), k))[:1]
        hint = f"; did you mean {candidates[0]}?" if candidates else ""
        raise PolicyInputError(f"pod {namespace}/{name} not found{hint}")
    return pod_endpoint(state, pod)


def resolve_port(port: int | str, protocol: str, dst: Endpoint) -> int:
    if isinstance(port, int) or str(port).isdigit():
        number = int(port)
        if not 1 <= number <= 65535:
            raise PolicyInputError(f"port {number}: must be between 1 and 65535, inclusive")
        return number
    if dst.pod is None:
        raise PolicyInputError(f"named port {port!r} needs a destination pod (it is resolved on its containers)")
    number = dst.pod.named_port(str(port), protocol)
    if number is None:
        raise PolicyInputError(f"pod {dst.pod.key} has no {protocol} container port named {port!r}")
    return number


# --- verdicts -------------------------------------------------------------------------


def _index_json(value: int | None) -> int | str | None:
    return "any" if value == -1 else value


@dataclass(frozen=True, slots=True)
class RuleMatch:
    """One rule looked at: which peer and port matched (``-1``: the rule has none, so any), and why not."""

    kind: str
    policy: str
    direction: str
    rule: int
    peer: int | None
    port: int | None
    reason: str
    http: bool = False  # the matching port entry carries Cilium HTTP rules

    @property
    def allowed(self) -> bool:
        return self.peer is not None and self.port is not None

    @property
    def rule_location(self) -> str:
        return f"{self.kind} {self.policy} {self.direction}[{self.rule}]"

    @property
    def location(self) -> str:
        side = "from" if self.direction == INGRESS else "to"
        text = f"{self.kind} {self.policy} {self.direction}[{self.rule}]"
        if self.peer is not None and self.peer >= 0:
            text += f".{side}[{self.peer}]"
        if self.port is not None and self.port >= 0:
            text += f".ports[{self.port}]"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "policy": self.policy, "direction": self.direction, "rule": self.rule,
                "peer": _index_json(self.peer), "port": _index_json(self.port), "allowed": self.allowed,
                "reason": self.reason}


@dataclass(frozen=True, slots=True)
class DirectionVerdict:
    direction: str
    endpoint: str
    enforced: bool  # False: this end is not a pod on the pod network, so no policy of it applies
    isolated: bool  # by NetworkPolicy (the NetworkPolicy tier decides for isolated pods)
    policies: tuple[tuple[str, str], ...]  # (kind, ns/name) of the policies isolating it
    allowed: bool
    allowed_by: tuple[RuleMatch, ...]
    checked: tuple[RuleMatch, ...]
    reason: str
    # The tier that decided: Admin | NetworkPolicy | Baseline | default ("" when not enforced).
    tier: str = ""
    decided_by: TierRuleMatch | None = None  # the ClusterNetworkPolicy rule that decided (Admin, Baseline)
    passed_by: tuple[TierRuleMatch, ...] = ()  # Pass rules on the way (each skips the rest of its tier)
    contested: tuple[TierRuleMatch, ...] = ()  # equal-priority policies that would have decided otherwise
    cluster_policies: tuple[tuple[str, str, str], ...] = ()  # (kind, name, tier) selecting this pod
    calico: calico.CalicoDecision | None = None  # on Calico with Calico policies: its walk through the tiers
    cilium: cilium_walk.CiliumDecision | None = None  # on Cilium when its own walk decides (deny before allow)
    antrea: antrea.AntreaDecision | None = None  # on Antrea: the Antrea-native rule that decided (or passed)

    @property
    def rejected(self) -> bool:
        """Denied by an Antrea Reject rule: the client gets a refusal (a TCP RST), not a timeout."""
        return not self.allowed and self.antrea is not None and self.antrea.rejected

    def deciding(self) -> str:
        """The rule (or the absence of one) that decided this side, in one line; "" where nothing did (the end
        is not enforced, or no policy of any tier selects it)."""
        where = f"{self.direction} of {self.endpoint}"
        if self.calico is not None:
            return f"{where}: {self.reason}" if self.calico.selecting else ""
        if self.cilium is not None:
            return f"{where}: {self.reason}" if self.cilium.selecting else ""
        if self.antrea is not None and self.antrea.decided:
            return f"{where}: {self.reason}"
        if self.decided_by is not None:
            return f"{where}: {'allowed' if self.allowed else 'denied'} by {self.decided_by.text()}"
        if self.allowed and self.allowed_by:
            return f"{where}: allowed by {self.allowed_by[0].location}"
        if self.allowed:
            return ""
        names = ", ".join(f"{k} {n}" for k, n in self.policies)
        return f"{where}: denied, isolated by {names} and no {self.direction} rule allows it"

    def fix(self, traffic: str = "") -> str:
        """What to change so this side allows ``traffic`` (``TCP/5432``), for a dropped packet."""
        if self.calico is not None and self.calico.match is not None:
            what = f" ({traffic})" if traffic else ""
            if self.calico.match.rule < 0:
                return (f"add an Allow (or Pass) rule for this traffic{what} to a policy of tier "
                        f"`{self.calico.tier}` that selects {self.endpoint}, or set the tier's defaultAction: Pass")
            return (f"{self.calico.match.text()} denies it: add an Allow rule for this traffic{what} before it (a "
                    "lower order, or earlier in the policy), in that tier or one evaluated before it")
        if self.cilium is not None and self.cilium.denied_by is not None:
            return (f"{self.cilium.denied_by.text()} denies it, and in Cilium no allow rule overrides a deny: narrow "
                    "or remove that deny rule")
        if self.cilium is not None and self.cilium.missing_dns:
            return ("add toPorts.rules.dns (matchName or matchPattern for the name) to an egress rule that allows "
                    "the pod to reach kube-dns on port 53, so Cilium's DNS proxy learns the name's addresses")
        if self.antrea is not None and self.antrea.decided and self.antrea.match is not None:
            what = f" ({traffic})" if traffic else ""
            if self.antrea.match.tier == "baseline":
                return (f"{self.antrea.match.text()} denies it because no Kubernetes NetworkPolicy selects "
                        f"{self.endpoint} for {self.direction}: a NetworkPolicy of its namespace that selects it and "
                        f"allows this traffic{what} comes before the baseline tier")
            return (f"{self.antrea.match.text()} denies it: add an Allow (or Pass) rule for this traffic{what} in a "
                    "tier evaluated before it, or in its tier at a lower priority")
        if self.decided_by is not None and self.tier == cnp.ADMIN:
            return (f"{self.decided_by.text()} denies it before any NetworkPolicy is looked at: only the cluster "
                    "administrator can let it through (change that rule, or add an Accept or Pass rule for this "
                    "traffic in an Admin policy that comes first)")
        if self.decided_by is not None and self.tier == cnp.BASELINE:
            return (f"{self.decided_by.text()} denies it because no NetworkPolicy selects {self.endpoint} for "
                    f"{self.direction}: a NetworkPolicy of its namespace that selects it and allows this traffic "
                    "overrides the Baseline tier")
        names = ", ".join(n for _, n in self.policies)
        if names:
            what = f" ({traffic})" if traffic else ""
            return (f"add an {self.direction} rule to one of {names} that allows this traffic{what}; "
                    "knetsim policy check shows which rule is missing")
        return ""

    def to_dict(self) -> dict[str, Any]:
        out = {
            "direction": self.direction,
            "pod": self.endpoint,
            "enforced": self.enforced,
            "isolated": self.isolated,
            "policies": [{"kind": k, "name": n} for k, n in self.policies],
            "allowed": self.allowed,
            "allowedBy": [m.to_dict() for m in self.allowed_by],
            "rules": [m.to_dict() for m in self.checked],
            "reason": self.reason,
            "tier": self.tier or None,
        }
        if self.calico is not None:
            c = self.calico
            out["calico"] = {"tier": c.tier or None, "decidedBy": c.match.to_dict() if c.match else None,
                             "clusterRule": c.cluster.to_dict() if c.cluster else None, "passed": list(c.passed),
                             "selecting": [{"tier": t, "policy": ref} for t, ref in c.selecting]}
        if self.cilium is not None:
            c2 = self.cilium
            out["cilium"] = {"selecting": list(c2.selecting), "isolating": list(c2.isolating),
                             "deniedBy": c2.denied_by.text() if c2.denied_by else None,
                             "allowedBy": c2.allowed_by.text() if c2.allowed_by else None,
                             "missingDNSRule": list(c2.missing_dns)}
        if self.antrea is not None:
            a = self.antrea
            out["antrea"] = {"tier": a.match.tier if a.match else None,
                             "decidedBy": a.match.to_dict() if a.match else None, "rejected": a.rejected,
                             "selecting": list(a.selecting)}
        if self.cluster_policies or self.decided_by or self.passed_by:
            out["clusterPolicies"] = [{"kind": k, "name": n, "tier": t} for k, n, t in self.cluster_policies]
            out["decidedBy"] = self.decided_by.to_dict() if self.decided_by else None
            out["passedBy"] = [m.to_dict() for m in self.passed_by]
            out["contested"] = [m.to_dict() for m in self.contested]
        return out


@dataclass(frozen=True, slots=True)
class StagedPreview:
    """A staged policy's effect on one connection: the verdict it would give, and whether that differs."""

    policy: str
    allowed: bool
    changes: bool
    reason: str

    def text(self) -> str:
        verdict = "ALLOWED" if self.allowed else "DENIED"
        if not self.changes:
            return f"{self.policy} (staged, not enforced) would change nothing here: {verdict}"
        return f"{self.policy} (staged, not enforced) would make it {verdict}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "allowed": self.allowed, "changes": self.changes, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Verdict:
    src: str
    dst: str
    src_ip: str
    dst_ip: str
    protocol: str
    port: int
    allowed: bool
    egress: DirectionVerdict
    ingress: DirectionVerdict
    notes: tuple[str, ...] = ()
    reply: str = "allowed: NetworkPolicy is stateful, replies of an allowed connection always pass"
    cni: cnis.ClusterCNI | None = None
    # Policy objects this verdict leaves out that could change it (not enforced by the CNI, or not evaluated).
    caveats: tuple[cnis.Caveat, ...] = ()
    # What each Calico staged policy would make of this connection, were it enforced.
    staged: tuple[StagedPreview, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": self.src, "to": self.dst, "fromIP": self.src_ip, "toIP": self.dst_ip,
            "protocol": self.protocol, "port": self.port, "allowed": self.allowed,
            "egress": self.egress.to_dict(), "ingress": self.ingress.to_dict(),
            "reply": self.reply, "notes": list(self.notes),
            "cni": self.cni.to_dict() if self.cni is not None else None,
            "caveats": [c.to_dict() for c in self.caveats],
            "staged": [p.to_dict() for p in self.staged],
        }


def _peer_text(policy: Policy, rule: Rule) -> str:
    assert rule.peers is not None
    return "; ".join(p.describe() for p in rule.peers)


def _check_rule(policy: Policy, direction: str, rule: Rule, peer_ep: Endpoint, dst: Endpoint,
                protocol: str, port: int, ctx: MatchContext) -> RuleMatch:
    peer = first_peer(policy, rule, peer_ep, ctx)
    port_index = first_port(rule, protocol, port, dst)
    side = "from" if direction == INGRESS else "to"
    if peer is None and rule.peers == ():
        reason = "an empty rule: allows nothing"
    elif peer is None:
        reason = f"{side}: no peer matches {peer_ep.label} (peers: {_peer_text(policy, rule)})"
    elif port_index is None:
        assert rule.ports is not None
        wanted = ", ".join(p.describe() for p in rule.ports)
        resolved = rule_connections(rule, dst).describe()
        reason = f"ports: {protocol} {port} is not among {wanted} (on {dst.name}: {resolved})"
    else:
        reason = "matches"
    http = False
    if port_index is not None and port_index >= 0 and rule.ports is not None:
        http = rule.ports[port_index].http is not None
    return RuleMatch(policy.kind, policy.key, direction, rule.index, peer, port_index, reason, http)


def _not_enforced(direction: str, ep: Endpoint) -> DirectionVerdict:
    if ep.pod is not None and ep.kind == "node":
        reason = (f"{ep.pod.key} uses hostNetwork: pod NetworkPolicies do not apply to it; its traffic is "
                  f"node traffic from {ep.ip}")
    elif ep.kind == "node":
        reason = f"{ep.label} is a node: NetworkPolicy does not restrict node traffic"
    else:
        reason = f"{ep.ip} is outside the cluster: no {direction} policy applies to it"
    return DirectionVerdict(direction, ep.name, False, False, (), True, (), (), reason)


def _network_policy_tier(index: PolicyIndex, direction: str, pod_ep: Endpoint, peer_ep: Endpoint,
                         protocol: str, port: int, selecting: list[Policy]) -> DirectionVerdict:
    """What the NetworkPolicy tier says about an enforced pod (isolated or not), as a verdict of its own."""
    assert pod_ep.pod is not None
    pod = pod_ep.pod
    refs = tuple((p.kind, p.key) for p in selecting)
    if not selecting:
        return DirectionVerdict(direction, pod.key, True, False, (), True, (), (),
                                f"no policy selects {pod.key} for {direction}: it is not isolated, "
                                f"all {direction} traffic is allowed", DEFAULT_TIER)
    ctx = index.on_node(pod.node_name)
    dst = pod_ep if direction == INGRESS else peer_ep
    checked = []
    for policy in selecting:
        for rule in policy.rules(direction) or ():
            checked.append(_check_rule(policy, direction, rule, peer_ep, dst, protocol, port, ctx))
    allowed_by = tuple(m for m in checked if m.allowed)
    names = ", ".join(f"{k} {n}" for k, n in refs)
    if allowed_by:
        reason = f"isolated by {names}; allowed by {allowed_by[0].location}"
    elif not checked:
        reason = f"isolated by {names}, which allow no {direction} traffic"
    else:
        reason = f"isolated by {names}; no {direction} rule matches"
    return DirectionVerdict(direction, pod.key, True, True, refs, bool(allowed_by), allowed_by, tuple(checked),
                            reason, NETWORK_POLICY_TIER)


def _would_have(np: DirectionVerdict, allowed: bool) -> str:
    """What NetworkPolicy alone would have said, when a ClusterNetworkPolicy tier overrode it."""
    if not np.isolated:
        return f"no NetworkPolicy selects {np.endpoint} for {np.direction}"
    if np.allowed:
        return f"the NetworkPolicy `{np.allowed_by[0].policy.split('/', 1)[1]}` would have allowed it" + (
            " too" if allowed else "")
    names = ", ".join(f"`{n.split('/', 1)[1]}`" for _, n in np.policies)
    return f"the NetworkPolicies isolating it ({names}) would have denied it" + ("" if allowed else " too")


def _cluster_decision(decision: TierDecision, np: DirectionVerdict, passed: tuple[TierRuleMatch, ...],
                      cluster: tuple[tuple[str, str, str], ...]) -> DirectionVerdict:
    match = decision.match
    assert match is not None
    allowed = match.action == cnp.ACCEPT
    reason = f"{'allowed' if allowed else 'denied'} by {match.text()}; {_would_have(np, allowed)}"
    if passed:
        reason = f"{_passed_text(passed)}; {reason}"
    if decision.contested:
        others = ", ".join(f"{m.kind} `{m.policy}` ({m.action})" for m in decision.contested)
        reason += (f" (equal priority {match.priority} with {others}: the API leaves the order to the implementation; "
                   "knetsim takes them by name, as kube-network-policies and Calico do)")
    return DirectionVerdict(np.direction, np.endpoint, True, np.isolated, np.policies, allowed, np.allowed_by,
                            np.checked, reason, match.tier, match, passed, decision.contested, cluster)


def _passed_text(passed: tuple[TierRuleMatch, ...]) -> str:
    return "; ".join(f"passed by {m.text()}" for m in passed)


def _direction(index: PolicyIndex, direction: str, pod_ep: Endpoint, peer_ep: Endpoint,
               protocol: str, port: int, *, kubernetes_only: bool = False) -> DirectionVerdict:
    if pod_ep.kind != "pod" or pod_ep.pod is None:
        return _not_enforced(direction, pod_ep)
    pod = pod_ep.pod
    if index.enforces_nothing:
        return DirectionVerdict(direction, pod.key, True, False, (), True, (), (),
                                f"{index.enforces_nothing}: all {direction} traffic is allowed")
    if index.calico is not None:
        return _calico_direction(index, direction, pod_ep, peer_ep, protocol, port)
    if index.cilium is not None and not kubernetes_only:
        return _cilium_direction(index, direction, pod_ep, peer_ep, protocol, port)
    if index.antrea is not None and not kubernetes_only:
        return _antrea_direction(index, direction, pod_ep, peer_ep, protocol, port)
    selecting = index.selecting(pod, direction)
    cluster = {tier: index.cluster_selecting(pod, tier, direction) if index.cluster else []
               for tier in ORDER if tier in CLUSTER_TIERS}
    if direction == INGRESS and peer_ep.kind == "node" and peer_ep.node == pod.node_name and pod.node_name \
            and (selecting or any(cluster.values())):
        # Before every tier: kube-network-policies accepts the node's own traffic (kubelet probes) in the kernel.
        return DirectionVerdict(direction, pod.key, True, bool(selecting), tuple((p.kind, p.key) for p in selecting),
                                True, (), (), f"the source is {pod.key}'s own node ({peer_ep.ip}): traffic from the "
                                "node a pod runs on is always allowed")
    np = _network_policy_tier(index, direction, pod_ep, peer_ep, protocol, port, selecting)
    if not any(cluster.values()):
        return np
    selected = tuple((p.kind, p.name, p.tier) for tier in ORDER for p in cluster.get(tier, ()))
    ctx = index.on_node(pod.node_name)
    dst = pod_ep if direction == INGRESS else peer_ep

    def evaluate(tier: str) -> Answer[TierDecision | DirectionVerdict] | None:
        if tier == NETWORK_POLICY_TIER:
            return Answer(ACCEPTED if np.allowed else DENIED, np) if np.isolated else None
        if not cluster[tier]:
            return None
        decision = decide(cluster[tier], direction, peer_ep, dst, protocol, port, ctx)
        return Answer(decision.verdict, decision, decision.match if decision.verdict == NEXT else None)

    outcome = run(evaluate)
    passed = outcome.passed
    if outcome.tier == NETWORK_POLICY_TIER:
        reason = f"{_passed_text(passed)} to the NetworkPolicy tier; {np.reason}" if passed else np.reason
        return dataclasses.replace(np, reason=reason, passed_by=passed, cluster_policies=selected)
    if outcome.answer is not None:
        assert isinstance(outcome.answer.detail, TierDecision)
        return _cluster_decision(outcome.answer.detail, np, passed, selected)
    names = ", ".join(f"{k} {n}" for k, n, _ in selected)
    head = f"{_passed_text(passed)}; " if passed else ""
    reason = (f"{head}no NetworkPolicy selects {pod.key} for {direction} and no rule of {names} decides it: "
              f"allowed by default")
    return dataclasses.replace(np, reason=reason, passed_by=passed, cluster_policies=selected)


def _calico_direction(index: PolicyIndex, direction: str, pod_ep: Endpoint, peer_ep: Endpoint, protocol: str,
                      port: int) -> DirectionVerdict:
    """Calico's walk (tier → order → rule) for one side, as a verdict."""
    assert pod_ep.pod is not None and index.calico is not None
    pod = pod_ep.pod
    ctx = index.on_node(pod.node_name)
    if direction == INGRESS and peer_ep.kind == "node" and peer_ep.node == pod.node_name and pod.node_name:
        return DirectionVerdict(direction, pod.key, True, False, (), True, (), (), f"the source is {pod.key}'s own "
                                f"node ({peer_ep.ip}): traffic from the node a pod runs on is always allowed")
    decision = calico.decide_side(index.calico, direction, pod_ep, peer_ep, protocol, port, ctx)
    refs = tuple((ref.split(" ", 1)[0], ref.split(" ", 1)[1]) for _, ref in decision.selecting)
    decided_by = decision.cluster or (decision.match.as_tier_match() if decision.match is not None else None)
    return DirectionVerdict(direction, pod.key, True, bool(decision.selecting), refs, decision.allowed, (), (),
                            decision.reason(pod.key, direction), decision.tier or DEFAULT_TIER, decided_by,
                            calico=decision)


def _cilium_direction(index: PolicyIndex, direction: str, pod_ep: Endpoint, peer_ep: Endpoint, protocol: str,
                      port: int) -> DirectionVerdict:
    """Cilium's walk (deny, then allow, then default deny) for one side, as a verdict."""
    assert pod_ep.pod is not None and index.cilium is not None
    pod = pod_ep.pod
    if direction == INGRESS and peer_ep.kind == "node" and peer_ep.node == pod.node_name and pod.node_name:
        return DirectionVerdict(direction, pod.key, True, False, (), True, (), (), f"the source is {pod.key}'s own "
                                f"node ({peer_ep.ip}): traffic from the node a pod runs on is always allowed")
    from .cilium import evaluate as cilium_walk

    decision = cilium_walk.decide_side(index.cilium, direction, pod_ep, peer_ep, protocol, port,
                                       index.on_node(pod.node_name))
    refs = tuple((ref.split(" ", 1)[0], ref.split(" ", 1)[1]) for ref in decision.isolating)
    # The allow rules that matched, in the NetworkPolicy shape l7.py reads (Cilium merges their HTTP rules).
    allowed_by = tuple(RuleMatch(*hit.policy.split(" ", 1), direction, hit.rule, hit.peer, hit.port, "matches")
                       for hit in decision.allows) if decision.isolated else ()
    return DirectionVerdict(direction, pod.key, True, decision.isolated, refs, decision.allowed, allowed_by, (),
                            decision.reason(pod.key, direction), NETWORK_POLICY_TIER if decision.selecting
                            else DEFAULT_TIER, cilium=decision)


# --- Antrea: its tiers around the engine's own (Kubernetes NetworkPolicy and the network-policy-api tiers) ---


def _antrea_direction(index: PolicyIndex, direction: str, pod_ep: Endpoint, peer_ep: Endpoint, protocol: str,
                      port: int) -> DirectionVerdict:
    """Antrea's walk (tier → priority → rule) for one side: its tiers before Kubernetes NetworkPolicy, then the
    engine's own tiers, then Antrea's baseline tier (antrea/evaluate.py)."""
    assert pod_ep.pod is not None and index.antrea is not None
    pod = pod_ep.pod
    if direction == INGRESS and peer_ep.kind == "node" and peer_ep.node == pod.node_name and pod.node_name:
        return DirectionVerdict(direction, pod.key, True, False, (), True, (), (), f"the source is {pod.key}'s own "
                                f"node ({peer_ep.ip}): traffic from the node a pod runs on is always allowed")
    from .antrea import evaluate as antrea

    ctx = index.on_node(pod.node_name)
    before = antrea.decide(index.antrea, direction, pod_ep, peer_ep, protocol, port, ctx, baseline=False)
    if before.decided:
        return DirectionVerdict(direction, pod.key, True, False, (), before.allowed, (), (), before.text(),
                                before.match.tier if before.match else "", antrea=before)
    native = _direction(index, direction, pod_ep, peer_ep, protocol, port, kubernetes_only=True)
    head = f"{before.text()}; " if before.match is not None else ""
    if native.tier != DEFAULT_TIER or native.isolated:
        return dataclasses.replace(native, reason=head + native.reason, antrea=before if before.match else None)
    after = antrea.decide(index.antrea, direction, pod_ep, peer_ep, protocol, port, ctx, baseline=True)
    if after.decided:
        return DirectionVerdict(direction, pod.key, True, False, (), after.allowed, (), (),
                                f"{head}no Kubernetes NetworkPolicy isolates {pod.key} for {direction}; "
                                f"{after.text()}", after.match.tier if after.match else "", antrea=after)
    selecting = (*before.selecting, *after.selecting)
    if not selecting and before.match is None:
        return native
    names = ", ".join(selecting)
    return dataclasses.replace(native, reason=f"{head}no Antrea-native rule of {names} decides it and {native.reason}",
                               antrea=before if before.match else None)


def _antrea_direction_set(index: PolicyIndex, direction: str, pod_ep: Endpoint, peer_ep: Endpoint) -> ConnSet:
    """Every port at once: Antrea's tiers before NetworkPolicy, the engine's own tiers, the baseline tier."""
    assert pod_ep.pod is not None and index.antrea is not None
    pod = pod_ep.pod
    from .antrea import evaluate as antrea

    ctx = index.on_node(pod.node_name)
    before, _ = antrea.side_sets(index.antrea, direction, pod_ep, peer_ep, ctx, baseline=False)
    after, _ = antrea.side_sets(index.antrea, direction, pod_ep, peer_ep, ctx, baseline=True)
    allowed = network_policy_set(index, direction, pod_ep, peer_ep)
    dst = pod_ep if direction == INGRESS else peer_ep
    none = (ConnSet.none(), ConnSet.none())

    def sets(tier: str) -> tuple[ConnSet, ConnSet]:
        if tier == NETWORK_POLICY_TIER:
            return none if allowed is None else (allowed, ConnSet.all())
        policies = index.cluster_selecting(pod, tier, direction) if index.cluster else []
        return tier_sets(policies, direction, peer_ep, dst, ctx)[:2] if policies else none

    # Tiers that decide nothing for this pair change nothing: left out, the combine is cheaper (the matrix asks it
    # for every pair of classes).
    deciding = [t for t in (*before, *(sets(tier) for tier in ORDER), *after) if t[1]]
    return combine(deciding) if deciding else ConnSet.all()


def _self(direction: str, ep: Endpoint) -> DirectionVerdict:
    return DirectionVerdict(direction, ep.name, True, False, (), True, (), (),
                            "a pod cannot block access to itself")


def notes(index: PolicyIndex, state: ClusterState) -> tuple[str, ...]:
    out = [f"{ref} is not enforced: the data plane is {state.config.dataplane}, which has no Cilium "
           f"(the cluster's {index.cni.text()}; set cni: cilium, or dataplane: ebpf for Cilium with its kube-proxy "
           "replacement)" for ref in index.unenforced]
    if index.cni.name == cnis.CILIUM:
        where = "Cilium (the ebpf data plane)" if state.config.dataplane == "ebpf" else "Cilium (the cluster's CNI)"
        out += [f"{ref} is not enforced: {where} does not implement the network-policy-api kinds "
                "(cilium/cilium#23380)" for ref in index.cluster_unenforced]
    else:
        out += [f"{ref} is not enforced: the cluster's {index.cni.text()} enforces no network policy"
                for ref in index.cluster_unenforced]
    out += [f"ignored: {p}" for p in index.problems]
    out += list(index.listed)
    return tuple(out)


def verdict_caveats(index: PolicyIndex, *ends: Endpoint) -> tuple[cnis.Caveat, ...]:
    """The caveats that could change a verdict between ``ends``: cluster-wide objects always, namespaced ones when
    an end is a pod of their namespace."""
    namespaces = {ep.pod.namespace for ep in ends if ep.pod is not None}
    return tuple(c for c in index.caveats if c.applies_to(namespaces))


def caveat_notes(index: PolicyIndex) -> tuple[str, ...]:
    """Every caveat as a note line (the matrix and other whole-cluster answers), the CNI first when any."""
    if not index.caveats and (index.cni.name == cnis.KINDNET or index.cni.how == cnis.CONFIGURED):
        return ()  # kind's own CNI, or one the user named: nothing to point out
    return (f"policy follows the cluster's {index.cni.text()}",
            *(f"caveat: {c.text()}" for c in index.caveats))


def evaluate(state: ClusterState, src: str | Pod | Endpoint, dst: str | Pod | Endpoint, port: int | str,
             protocol: str = "TCP", *, namespace: str = "default") -> Verdict:
    """Would NetworkPolicy (and, on ebpf, CiliumNetworkPolicy) let ``src`` open ``protocol/port`` to ``dst``?"""
    protocol = protocol.upper()
    if protocol not in ("TCP", "UDP", "SCTP"):
        raise PolicyInputError(f"protocol {protocol!r}: supported values: TCP, UDP, SCTP")
    index = policy_index(state)
    s, d = endpoint(state, src, namespace), endpoint(state, dst, namespace)
    number = resolve_port(port, protocol, d)
    if s.pod is not None and s.pod is d.pod:
        eg, ing = _self(EGRESS, s), _self(INGRESS, d)
    else:
        eg = _direction(index, EGRESS, s, d, protocol, number)
        ing = _direction(index, INGRESS, d, s, protocol, number)
    extra = list(notes(index, state))
    if index.antrea is not None and s.pod is not None and not d.service:
        from .antrea import evaluate as antrea

        extra += antrea.service_rule_notes(index.antrea, s.pod, index.on_node(s.pod.node_name))
    for ep in (s, d):
        if ep.pod is not None and ep.kind == "pod" and not ep.ip:
            extra.append(f"{ep.pod.key} has no IP yet (phase {ep.pod.phase}): it cannot send or receive")
    allowed = eg.allowed and ing.allowed
    return Verdict(s.name, d.name, s.ip, d.ip, protocol, number, allowed, eg, ing,
                   tuple(extra), cni=index.cni, caveats=verdict_caveats(index, s, d),
                   staged=_staged_previews(index, s, d, protocol, number, allowed))


def _staged_previews(index: PolicyIndex, s: Endpoint, d: Endpoint, protocol: str, port: int,
                     allowed: bool) -> tuple[StagedPreview, ...]:
    """Each staged policy put in force alone, the same question asked again (Calico's preview, offline)."""
    if not index.staged or index.staged_base is None or (s.pod is not None and s.pod is d.pod):
        return ()
    out = []
    for change in index.staged:
        alt = dataclasses.replace(index, calico=with_change(index.staged_base, change), staged=())
        eg = _direction(alt, EGRESS, s, d, protocol, port)
        ing = _direction(alt, INGRESS, d, s, protocol, port)
        would = eg.allowed and ing.allowed
        side = eg if not eg.allowed else ing
        reason = f"{side.direction} of {side.endpoint}: {side.reason}"
        out.append(StagedPreview(change.ref, would, would != allowed, reason))
    return tuple(out)


# --- every allowed connection between two endpoints (the reference for the matrix) ---


def network_policy_set(index: PolicyIndex, direction: str, pod_ep: Endpoint, peer_ep: Endpoint) -> ConnSet | None:
    """What the NetworkPolicy tier allows ``pod_ep`` (a pod on the pod network) in ``direction`` with
    ``peer_ep``: the union of the selecting policies' rules; None when none isolates it (it passes on)."""
    assert pod_ep.pod is not None
    selecting = index.selecting(pod_ep.pod, direction)
    if not selecting:
        return None
    ctx = index.on_node(pod_ep.pod.node_name)
    dst = pod_ep if direction == INGRESS else peer_ep
    out = ConnSet.none()
    for policy in selecting:
        for rule in policy.rules(direction) or ():
            if rule.peers is None or any(peer_matches(policy, p, peer_ep, ctx) for p in rule.peers):
                out = out | rule_connections(rule, dst)
    return out


def _direction_set(index: PolicyIndex, direction: str, pod_ep: Endpoint, peer_ep: Endpoint) -> ConnSet:
    if pod_ep.kind != "pod" or pod_ep.pod is None:
        return ConnSet.all()
    pod = pod_ep.pod
    if direction == INGRESS and peer_ep.kind == "node" and peer_ep.node == pod.node_name and pod.node_name:
        return ConnSet.all()
    if index.calico is not None:
        return combine(calico.side_sets(index.calico, direction, pod_ep, peer_ep, index.on_node(pod.node_name)))
    if index.cilium is not None:
        from .cilium import evaluate as cilium_walk

        return cilium_walk.side_set(index.cilium, direction, pod_ep, peer_ep, index.on_node(pod.node_name))
    if index.antrea is not None:
        return _antrea_direction_set(index, direction, pod_ep, peer_ep)
    allowed = network_policy_set(index, direction, pod_ep, peer_ep)
    cluster = {tier: index.cluster_selecting(pod, tier, direction) if index.cluster else []
               for tier in ORDER if tier in CLUSTER_TIERS}
    if not any(cluster.values()):
        return ConnSet.all() if allowed is None else allowed
    ctx = index.on_node(pod.node_name)
    dst = pod_ep if direction == INGRESS else peer_ep
    none = (ConnSet.none(), ConnSet.none())

    def sets(tier: str) -> tuple[ConnSet, ConnSet]:
        if tier == NETWORK_POLICY_TIER:
            # An isolated pod's NetworkPolicy tier decides everything; a pod no NetworkPolicy selects passes on.
            return none if allowed is None else (allowed, ConnSet.all())
        return tier_sets(cluster[tier], direction, peer_ep, dst, ctx)[:2] if cluster[tier] else none

    return combine([sets(tier) for tier in ORDER])


def direction_connections(state: ClusterState, direction: str, pod: str | Pod | Endpoint, peer: str | Pod | Endpoint,
                          *, namespace: str = "default") -> ConnSet:
    """What one side's own policies allow: ``pod``'s egress to ``peer`` (``direction="egress"``) or its
    ingress from ``peer`` (``"ingress"``), the other side's policies left out.

    An enforcer that sees the two directions at different places (the sender's node before
    SNAT, the receiver's node after it) needs them apart; ``connections`` is their AND.
    """
    if direction not in (EGRESS, INGRESS):
        raise PolicyInputError(f"direction {direction!r}: supported values: {EGRESS}, {INGRESS}")
    index = policy_index(state)
    p, q = endpoint(state, pod, namespace), endpoint(state, peer, namespace)
    if p.pod is not None and p.pod is q.pod:
        return ConnSet.all()
    return _direction_set(index, direction, p, q)


def connections(state: ClusterState, src: str | Pod | Endpoint, dst: str | Pod | Endpoint,
                *, namespace: str = "default") -> ConnSet:
    """Every connection policy allows from ``src`` to ``dst``: egress of the source AND ingress of the destination."""
    s, d = endpoint(state, src, namespace), endpoint(state, dst, namespace)
    return direction_connections(state, EGRESS, s, d) & direction_connections(state, INGRESS, d, s)
