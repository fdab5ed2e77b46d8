"""Policy lint: shapes that are valid but almost certainly not what was meant.

Each finding is structured (code, severity, subject, message, fix) so the doctor can reuse
it. Codes:

* ``PolicySelectsNothing`` / ``PeerSelectsNothing`` / ``NamespaceSelectorMatchesNothing``:
  a selector that matches nothing right now (often a label typo; the nearest label is named);
* ``PodsNotIsolated``: pods of an application namespace that no policy selects;
* ``DNSEgressBlocked`` / ``DNSOverTCPBlocked``: egress isolation without a DNS allowance;
* ``ServicePortInPolicy``: a policy port that is a Service's ``port`` rather than the pod
  port it targets (policy sees the packet after DNAT, on the pod port);
* ``AndOrReadingsDiffer``: a peer shape whose AND and OR readings allow different
  connections between existing pods, with one concrete pair;
* ``CalicoSelectorMatchesNothing`` / ``CalicoPassToProfile``: see ``calico/lint.py``;
* ``CiliumFQDNWithoutDNSRule``: a ``toFQDNs`` rule whose names no ``toPorts.rules.dns`` rule lets the
  selected pods look up: Cilium learns the addresses only from lookups its DNS proxy saw, so it allows nothing;
* ``AntreaAppliedToNothing`` / ``AntreaRuleShadowed``: see ``antrea/lint.py``;
* ``PolicyNotEvaluated`` / ``PolicyNotEnforced``: a policy object every answer leaves out,
  because knetsim does not evaluate its kind though the cluster's CNI enforces it, or because
  the CNI does not enforce it (``cni.py``; the doctor shows these as its own findings).
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from ..cluster.state import ClusterState
from ..model.labels import Selector, closest_labels
from ..model.objects import Pod
from .cilium import labels as cilium_labels
from .cilium.read import CiliumPolicy
from .cluster_lint import cluster_lint
from .cni import CILIUM_NEVER
from .engine import PolicyIndex, _direction_set, pod_endpoint, policy_index
from .findings import Finding
from .ports import ConnSet
from .rules import (
    EGRESS,
    INGRESS,
    NAMESPACE_NAME_LABEL,
    Endpoint,
    IPRange,
    Peer,
    Policy,
    Rule,
    address_key,
    peer_matches,
    service_account_of,
)

SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease", "ingress-nginx",
                               "local-path-storage", "envoy-gateway-system", "kube-flannel", "calico-system"})
SEVERITIES = ("error", "warning", "info")


def allow_dns_egress_yaml(namespace: str) -> str:
    """The allow-dns-egress policy of the seeds, for ``namespace``."""
    return (
        "apiVersion: networking.k8s.io/v1\n"
        "kind: NetworkPolicy\n"
        "metadata:\n"
        "  name: allow-dns-egress\n"
        f"  namespace: {namespace}\n"
        "spec:\n"
        "  podSelector: {}\n"
        "  policyTypes:\n"
        "    - Egress\n"
        "  egress:\n"
        "    - to:\n"
        "        - namespaceSelector:\n"
        "            matchLabels:\n"
        "              kubernetes.io/metadata.name: kube-system\n"
        "      ports:\n"
        "        - protocol: UDP\n"
        "          port: 53\n"
        "        - protocol: TCP\n"
        "          port: 53\n"
    )


def allow_dns_ingress_yaml() -> str:
    """A NetworkPolicy that lets every namespace's pods query the cluster DNS (kube-system's kube-dns pods)."""
    return (
        "apiVersion: networking.k8s.io/v1\n"
        "kind: NetworkPolicy\n"
        "metadata:\n"
        "  name: allow-dns-ingress\n"
        "  namespace: kube-system\n"
        "spec:\n"
        "  podSelector:\n"
        "    matchLabels:\n"
        "      k8s-app: kube-dns\n"
        "  policyTypes:\n"
        "    - Ingress\n"
        "  ingress:\n"
        "    - from:\n"
        "        - namespaceSelector: {}\n"
        "      ports:\n"
        "        - protocol: UDP\n"
        "          port: 53\n"
        "        - protocol: TCP\n"
        "          port: 53\n"
    )


def _subject(policy: Policy) -> str:
    return f"{policy.kind} {policy.key}"


class _PeerPods:
    """The pods each distinct peer matches, computed once per lint: a thousand policies repeat a handful of peer
    shapes, and matching every pod of a 10,000-pod cluster against every peer of every rule is the whole cost."""

    def __init__(self, state: ClusterState, index: PolicyIndex) -> None:
        self.state = state
        self.ctx = index.ctx
        # (ns/name, endpoint) in the state's order; the names are the state's keys (an endpoint's name is a pod key
        # made again on every call)
        self.named = [(key, pod_endpoint(state, p)) for key, p in state.pods.items()]
        self.order = {key: i for i, (key, _) in enumerate(self.named)}
        self.ranges = _ip_ranges(index)
        # A pod peer reads an endpoint's kind, namespace and labels only: the pods of a Deployment are one group.
        self.groups: dict[str, dict[tuple[Any, ...], list[tuple[str, Endpoint]]]] = {}
        for key, ep in self.named:
            assert ep.pod is not None
            shape = (ep.kind, tuple(sorted(ep.pod.labels.items())))
            self.groups.setdefault(ep.pod.namespace, {}).setdefault(shape, []).append((key, ep))
        # Endpoints by address, for the ipBlocks: the few pods in a range are found by bisection, not by testing
        # every pod against every range.
        self._by_address = sorted((address, key) for key, ep in self.named
                                  if (address := address_key(ep.ip)) is not None)
        self._endpoint = dict(self.named)
        self._in_range: list[frozenset[str]] | None = None
        self._cache: dict[Peer, frozenset[str]] = {}
        self._exact: dict[Peer, frozenset[str]] = {}
        self._namespaces: dict[Selector, list[str]] = {}
        self._alike: dict[str, tuple[Any, ...]] = {}

    def namespaces(self, selector: Selector) -> list[str]:
        """The namespaces ``selector`` picks, by name."""
        found = self._namespaces.get(selector)
        if found is None:
            found = self._namespaces[selector] = [ns for ns in sorted(self.state.namespaces)
                                                  if selector.matches(self.state.namespace_labels(ns))]
        return found

    def alike(self, ep: Endpoint, name: str | None = None) -> tuple[Any, ...]:
        """What policy reads of a pod endpoint (namespace, labels, named ports, the address ranges its IP is in):
        two pods alike here get the same answer from every rule. ``name``: the endpoint's, when known."""
        name = ep.name if name is None else name
        found = self._alike.get(name)
        if found is None:
            pod = ep.pod
            assert pod is not None
            ports = tuple(sorted((p.name, p.protocol, p.container_port) for c in pod.containers for p in c.ports
                                 if p.name))
            found = self._alike[name] = (pod.namespace, tuple(sorted(pod.labels.items())), ports,
                                            tuple(i for i, keys in enumerate(self.in_ranges()) if name in keys))
        return found

    def in_span(self, ip_range: IPRange) -> list[tuple[str, Endpoint]]:
        """The endpoints whose address is in the CIDR of ``ip_range`` (its excepts not applied)."""
        version, lo, hi = ip_range.bounds
        start = bisect.bisect_left(self._by_address, ((version, lo), ""))
        out = []
        for (v, n), key in self._by_address[start:]:
            if v != version or n > hi:
                break
            out.append((key, self._endpoint[key]))
        return out

    def in_ranges(self) -> list[frozenset[str]]:
        """Per ipBlock range of the policies, the endpoints in it."""
        if self._in_range is None:
            self._in_range = [frozenset(key for key, ep in self.in_span(r) if r.contains(ep.ip)) for r in self.ranges]
        return self._in_range

    def keys(self, peer: Peer) -> frozenset[str]:
        """``ns/name`` of every pod ``peer`` matches (its position in the rule does not matter)."""
        found = self._exact.get(peer)
        if found is not None:
            return found
        key = dataclasses.replace(peer, index=0)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._match(key)
        self._exact[peer] = found
        return found

    def _match(self, peer: Peer) -> frozenset[str]:
        if peer.kind in ("ipblock", "network") and peer.ip_range is not None:
            return frozenset(key for key, ep in self.in_span(peer.ip_range) if peer_matches(None, peer, ep, self.ctx))
        if peer.kind != "pods":
            return frozenset(key for key, ep in self.named if peer_matches(None, peer, ep, self.ctx))
        # Only the pods of its namespace, or of the namespaces its selector picks; one test per group of pods alike.
        if peer.namespace_selector is None:
            namespaces = [peer.namespace or ""]
        else:
            namespaces = [ns for ns in sorted(self.groups)
                          if peer.namespace_selector.matches(self.ctx.namespace_labels(ns))]
        return frozenset(key for ns in namespaces for group in self.groups.get(ns, {}).values()
                         if peer_matches(None, peer, group[0][1], self.ctx) for key, _ in group)

    def pods(self, keys: frozenset[str]) -> list[Pod]:
        """The pods of ``keys``, in the state's order."""
        return [self.state.pods[k] for k in sorted(keys, key=self.order.__getitem__)]

    def of_any(self, peers: Iterable[Peer]) -> frozenset[str]:
        out: frozenset[str] = frozenset()
        for peer in peers:
            out |= self.keys(peer)
        return out


def _hint(selector: Selector | None, candidates: Iterable[dict[str, str] | Any]) -> str:
    wanted = selector.equality_map() if selector is not None else None
    if not wanted:
        return ""
    near = closest_labels(wanted, list(candidates))
    return "".join(f"; {w} is not on any of them, nearest is {n} ({how})" for w, n, how in near[:2])


def _cilium_spec(policy: Policy | CiliumPolicy) -> str:
    """The spec a Cilium policy's selector sits in: ``spec``, or ``specs[i]`` (the name's ``#specs[i]``)."""
    name = policy.policy.name if isinstance(policy, CiliumPolicy) else policy.name
    return name.partition("#")[2] or "spec"


def _selects_nothing(state: ClusterState, index: PolicyIndex, matched: _PeerPods) -> list[Finding]:
    out = []
    cluster = cilium_labels.cluster_name(state)
    for policy in index.policies:
        if policy.kind not in ("NetworkPolicy", "CiliumNetworkPolicy"):
            continue
        pods = state.pods_in(policy.namespace)
        if policy.kind == "NetworkPolicy":
            field, where = "podSelector", "spec.podSelector"
            # One pod of each group labelled alike stands for the group.
            selects = any(policy.selector.matches(group[0][1].pod.labels)
                          for group in matched.groups.get(policy.namespace, {}).values() if group[0][1].pod is not None)
            endpoint = False
        else:
            # Judged on the labels Cilium gives the endpoint (cilium/labels.py): a service account is one, so a
            # typo in its name is found like any other.
            field, where = "endpointSelector", f"{_cilium_spec(policy)}.endpointSelector"
            endpoint = cilium_labels.reads_endpoint_labels(policy.selector)
            selects = any(cilium_labels.matches(policy.selector, p, cluster) for p in pods if not p.host_network)
        if not selects:
            candidates = [cilium_labels.endpoint_labels(p, cluster) if endpoint else p.labels for p in pods]
            out.append(Finding(
                "PolicySelectsNothing", "warning", _subject(policy),
                f"{where} ({policy.selector.formatted()}) selects no pod in namespace {policy.namespace}"
                + _hint(policy.selector, candidates),
                f"fix the {field} labels, or delete the policy"))
        if policy.kind != "NetworkPolicy":
            continue  # a Cilium policy's peers are its own (endpoints, entities, CIDRs): not read here
        for direction in (INGRESS, EGRESS):
            side = "from" if direction == INGRESS else "to"
            for rule in policy.rules(direction) or ():
                for peer in rule.peers or ():
                    if peer.kind != "pods":
                        continue
                    where = f"spec.{direction}[{rule.index}].{side}[{peer.index}]"
                    if peer.namespace_selector is not None and not matched.namespaces(peer.namespace_selector):
                        out.append(_namespace_selector_finding(state, policy, peer, where, direction, rule.index))
                        continue
                    if not matched.keys(peer):
                        scope = [p.labels for p in (state.pods_in(peer.namespace) if peer.namespace_selector is None
                                                    else state.pods.values())]
                        out.append(Finding(
                            "PeerSelectsNothing", "warning", _subject(policy),
                            f"{where} ({peer.describe()}) matches no pod" + _hint(peer.pod_selector, scope),
                            "fix the selector labels; the rule allows nothing from this peer today"))
    return out + _cilium_peers_select_nothing(state, index)


def _cilium_peers_select_nothing(state: ClusterState, index: PolicyIndex) -> list[Finding]:
    """A Cilium policy's fromEndpoints/toEndpoints selector (allow or deny) that matches no pod, judged on the labels
    Cilium gives the endpoint: a misspelt service account in a peer leaves the rule matching nothing."""
    from .cilium.evaluate import endpoints_peer_matches

    if index.cilium is not None:
        policies = [p for p in index.cilium.policies if p.policy.kind != "NetworkPolicy"]
        cluster = index.cilium.cluster
    else:  # plain CiliumNetworkPolicies, read into the NetworkPolicy shape
        policies = [CiliumPolicy(p) for p in index.policies if p.kind == "CiliumNetworkPolicy"]
        cluster = cilium_labels.cluster_name(state)
    if not policies:
        return []
    # A pods peer reads a pod's namespace, labels and service account: one pod of each such group stands for it.
    alike: dict[tuple[Any, ...], Endpoint] = {}
    for pod in state.pods.values():
        if not pod.host_network:
            alike.setdefault((pod.namespace, tuple(sorted(pod.labels.items())), service_account_of(pod)),
                             Endpoint("pod", pod.pod_ip, pod, pod.node_name))
    ends = [alike[k] for k in sorted(alike)]
    found: dict[Peer, bool] = {}
    out = []
    for policy in policies:
        for section in ("ingress", "ingressDeny", "egress", "egressDeny"):
            direction = section.removesuffix("Deny")
            side = "from" if direction == INGRESS else "to"
            rules = policy.rules(direction) if section == direction else policy.deny_rules(direction)
            for rule in rules or ():
                for peer in rule.peers or ():
                    if peer.kind != "pods":
                        continue
                    key = dataclasses.replace(peer, index=0)
                    if key not in found:
                        found[key] = any(endpoints_peer_matches(policy, peer, ep, index.ctx, cluster) for ep in ends)
                    if found[key]:
                        continue
                    selector = peer.pod_selector
                    endpoint = selector is not None and cilium_labels.reads_endpoint_labels(selector)
                    scope = [cilium_labels.endpoint_labels(ep.pod, cluster) if endpoint else ep.pod.labels
                             for ep in ends if ep.pod is not None and (peer.namespace_selector is None or
                                                                       peer.namespace_selector.matches(
                                                                           index.ctx.namespace_labels(ep.pod.namespace)))]
                    out.append(Finding(
                        "PeerSelectsNothing", "warning", policy.ref,
                        f"{_cilium_spec(policy)}.{section}[{rule.index}].{side}Endpoints[{peer.index}] "
                        f"({peer.describe()}) matches no pod" + _hint(selector, scope),
                        "fix the selector labels; the rule matches no pod through this peer today"))
    return out


def _namespace_selector_finding(state: ClusterState, policy: Policy, peer: Any, where: str, direction: str,
                                rule_index: int) -> Finding:
    """A namespaceSelector that matches no namespace. The classic: ``name: backend`` where the namespace backend
    exists but has no such label; the label every namespace carries (set by the API server) is
    kubernetes.io/metadata.name."""
    selector = peer.namespace_selector
    wanted = selector.equality_map() or {}
    named = [(key, value) for key, value in sorted(wanted.items())
             if key != NAMESPACE_NAME_LABEL and value in state.namespaces
             and state.namespace_labels(value).get(key) != value]
    message = f"{where}.namespaceSelector ({selector.formatted()}) matches no namespace"
    fix = f"select a namespace by name with the label {NAMESPACE_NAME_LABEL}: <name>"
    patch: tuple[dict[str, Any], ...] = ()
    if named:
        key, value = named[0]
        message += (f": namespace {value} exists but has no label {key}={value}; every namespace carries "
                    f"{NAMESPACE_NAME_LABEL}={value} (the API server sets it), a {key!r} label only if someone "
                    "adds it")
        fix = (f"select it by {NAMESPACE_NAME_LABEL}: namespaceSelector: {{matchLabels: {{{NAMESPACE_NAME_LABEL}: "
               f"{value}}}}} (or label the namespace: kubectl label namespace {value} {key}={value})")
        if len(wanted) == 1:
            side = "from" if direction == INGRESS else "to"
            patch = ({"op": "replace", "path": f"/spec/{direction}/{rule_index}/{side}/{peer.index}/namespaceSelector",
                      "value": {"matchLabels": {NAMESPACE_NAME_LABEL: value}}},)
    else:
        message += _hint(selector, [state.namespace_labels(n) for n in state.namespaces])
    return Finding("NamespaceSelectorMatchesNothing", "warning", _subject(policy), message, fix, json_patch=patch)


def _not_isolated(state: ClusterState, index: PolicyIndex) -> list[Finding]:
    out = []
    for ns in sorted({p.namespace for p in state.pods.values()} - SYSTEM_NAMESPACES):
        # Policies select by labels: pods labelled alike are isolated alike, so each label set is asked once.
        isolated: dict[tuple[tuple[str, str], ...], bool] = {}
        loose = []
        for p in state.pods_in(ns):
            if p.host_network:
                continue
            labels = tuple(sorted(p.labels.items()))
            answer = isolated.get(labels)
            if answer is None:
                answer = isolated[labels] = bool(
                    index.selecting(p, INGRESS) or index.selecting(p, EGRESS)
                    or any(c.selects(p, index.ctx.namespace_labels) for c in index.cluster)
                    or _calico_selects(index, p) or _cilium_selects(index, p, INGRESS)
                    or _cilium_selects(index, p, EGRESS) or _antrea_selects(index, p))
            if not answer:
                loose.append(p)
        if loose:
            names = ", ".join(p.name for p in loose[:5]) + (" ..." if len(loose) > 5 else "")
            left_out = [c.object.ref for c in index.caveats if c.enforced and c.applies_to((ns,))]
            unless = (f" (unless {', '.join(left_out)}, enforced by the cluster's CNI but not evaluated by knetsim, "
                      "selects them)") if left_out else ""
            out.append(Finding(
                "PodsNotIsolated", "info", f"Namespace {ns}",
                f"{len(loose)} pod(s) are selected by no policy and accept and send anything: {names}{unless}",
                f"add a default-deny policy for {ns} (podSelector: {{}}, policyTypes: [Ingress, Egress]) and "
                "allow what is needed"))
    return out


def _dns_pods(state: ClusterState) -> list[Pod]:
    svc = state.services.get("kube-system/kube-dns")
    if svc is not None and svc.selector:
        pods = state.select_pods("kube-system", svc.selector_view)
        if pods:
            return pods
    return state.select_pods("kube-system", Selector.from_map({"k8s-app": "kube-dns"}))


def _dropped_at(egress: ConnSet, ingress: ConnSet, protocol: str) -> str:
    """The side that drops a DNS query (port 53 of ``protocol``) between a pod and the DNS server: "egress" (the
    pod's own), "ingress" (the server's), or "" (neither)."""
    if not egress.contains(protocol, 53):
        return "egress"
    return "ingress" if not ingress.contains(protocol, 53) else ""


def _dns(state: ClusterState, index: PolicyIndex) -> list[Finding]:
    """Pods whose lookups the cluster DNS never answers, by the side that drops them: the client's egress
    (``DNSEgressBlocked``, its own policies named and the allow-dns-egress fix) or the DNS server's ingress
    (``DNSIngressBlocked``, the policies on kube-dns named and a fix in kube-system: an allowance in the client's
    namespace changes nothing there); and those that get UDP but not TCP (``DNSOverTCPBlocked``)."""
    dns = [p for p in _dns_pods(state) if p.pod_ip]
    if not dns:
        return []
    target = pod_endpoint(state, dns[0])
    out = []
    # Per namespace and side (egress | ingress), the pods blocked on UDP 53, and those on TCP 53 only.
    by_ns: dict[str, dict[tuple[str, str], list[str]]] = {}
    # Policies read a pod's namespace and labels: pods alike get one answer (None: nothing governs its DNS). The
    # answer: for UDP then TCP, the side that drops it ("" when it passes).
    seen: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[str, str] | None] = {}
    # The policies that isolate the blocked pods for egress, per namespace: the objects to change.
    isolating: dict[str, set[str]] = {}
    named: set[tuple[str, tuple[tuple[str, str], ...]]] = set()  # the label sets whose policies are in `isolating`
    dns_keys = {p.key for p in dns}  # by key: comparing pods compares every field
    # A DNS server whose own ingress a policy governs (an Antrea baseline Drop over every namespace) may refuse
    # the query of a pod no policy selects: then every pod is asked, not only the egress-isolated ones.
    dns_governed = bool(index.selecting(dns[0], INGRESS)) or _ingress_governed_by_cni(index, dns[0])
    # ... and where it refuses, the policies on the server's ingress are the ones named (a clusterwide one, say).
    dns_policies = [_subject(p) for p in index.selecting(dns[0], INGRESS) if p.kind == "NetworkPolicy"]
    if index.cilium is not None:
        dns_policies += [p.ref for p in index.cilium.selecting(dns[0], INGRESS, index.ctx) if p.isolates(INGRESS)]
    dns_policies += _cni_policies_selecting(index, dns[0], INGRESS)
    for pod_key, pod in sorted(state.pods.items()):
        if pod.host_network or not pod.pod_ip or pod_key in dns_keys:
            continue
        key = (pod.namespace, tuple(sorted(pod.labels.items())))
        if key not in seen:
            if not (dns_governed or index.selecting(pod, EGRESS) or _egress_governed_by_cni(index, pod)):
                seen[key] = None
            else:
                src = pod_endpoint(state, pod)
                egress = _direction_set(index, EGRESS, src, target)
                ingress = _direction_set(index, INGRESS, target, src)
                seen[key] = (_dropped_at(egress, ingress, "UDP"), _dropped_at(egress, ingress, "TCP"))
        answer = seen[key]
        if answer is None:
            continue
        udp, tcp = answer
        bucket = by_ns.setdefault(pod.namespace, {})
        if udp:
            bucket.setdefault((udp, "udp"), []).append(pod.name)
        elif tcp:
            bucket.setdefault((tcp, "tcp"), []).append(pod.name)
        if "egress" in answer and key not in named:
            # Once per label set, as the answer: a CNI's policies (1,000 Calico ones, say) are asked pod by pod.
            named.add(key)
            isolating.setdefault(pod.namespace, set()).update(
                _subject(p) for p in index.selecting(pod, EGRESS) if p.kind == "NetworkPolicy")
            if index.cilium is not None:
                isolating[pod.namespace].update(p.ref for p in index.cilium.selecting(pod, EGRESS, index.ctx)
                                                if p.isolates(EGRESS))
            isolating[pod.namespace].update(_cni_policies_selecting(index, pod, EGRESS))
    server = sorted(set(dns_policies))
    for ns, bucket in sorted(by_ns.items()):
        for side in ("egress", "ingress"):
            names_of = sorted(isolating.get(ns, ())) if side == "egress" else server
            listed = ", ".join(names_of[:3]) + (" ..." if len(names_of) > 3 else "")
            by = f" by {listed}" if names_of else ""
            details = tuple(("isolatedBy", n) for n in names_of[:3])
            blocked, tcp_only = bucket.get((side, "udp"), []), bucket.get((side, "tcp"), [])
            if blocked:
                names = ", ".join(blocked[:5]) + (" ..." if len(blocked) > 5 else "")
                where = f"{dns[0].key}, UDP 53"
                if side == "egress":
                    out.append(Finding(
                        "DNSEgressBlocked", "error", f"Namespace {ns}",
                        f"{len(blocked)} pod(s) are isolated for egress{by} and may not reach the cluster DNS "
                        f"({where}): every name lookup times out (busybox prints 'bad address'): {names}",
                        "allow DNS egress:\n" + allow_dns_egress_yaml(ns), (("dnsPod", dns[0].key), *details)))
                else:
                    out.append(Finding(
                        "DNSIngressBlocked", "error", f"Namespace {ns}",
                        f"{len(blocked)} pod(s) reach the cluster DNS ({where}) but its ingress is isolated{by} "
                        f"and admits none of them: every name lookup times out (busybox prints 'bad address'): "
                        f"{names}",
                        "allow DNS into kube-dns (where a CNI policy drops it before NetworkPolicy is read, allow it "
                        "in that policy's tier instead):\n" + allow_dns_ingress_yaml(),
                        (("dnsPod", dns[0].key), *details)))
            elif tcp_only:
                out.append(Finding(
                    "DNSOverTCPBlocked", "warning", f"Namespace {ns}",
                    f"{len(tcp_only)} pod(s) may reach the cluster DNS on UDP 53 but not TCP 53 "
                    f"({'isolated for egress' if side == 'egress' else 'its ingress isolated'}{by}): answers too "
                    "large for UDP (truncated, retried over TCP) fail",
                    "add `- protocol: TCP\n  port: 53` next to the UDP port of the DNS rule", details))
    return out


def _service_ports(state: ClusterState, index: PolicyIndex, matched: _PeerPods) -> list[Finding]:
    out = []
    for policy in index.policies:
        if policy.kind != "NetworkPolicy":
            continue
        selected: list[Pod] | None = None
        for direction in (INGRESS, EGRESS):
            for rule in policy.rules(direction) or ():
                numbered = [port for port in rule.ports or () if isinstance(port.port, int) and port.end_port is None]
                if not numbered:
                    continue
                if direction == INGRESS:
                    if selected is None:
                        selected = [p for p in state.pods_in(policy.namespace) if policy.selector.matches(p.labels)]
                    targets = selected
                elif rule.peers is None:
                    continue
                else:
                    targets = matched.pods(matched.of_any(rule.peers))
                targets = [p for p in targets if not p.host_network]
                for port in numbered:
                    if not targets:
                        continue
                    assert isinstance(port.port, int)
                    finding = _service_port_finding(state, policy, direction, rule, port.index, port.protocol,
                                                    port.port, targets)
                    if finding is not None:
                        out.append(finding)
    return out


def _service_port_finding(state: ClusterState, policy: Policy, direction: str, rule: Rule, index: int,
                          protocol: str, number: int, targets: list[Pod]) -> Finding | None:
    def declares(pod: Pod, n: int) -> bool:
        return any(cp.container_port == n and cp.protocol == protocol for c in pod.containers for cp in c.ports)

    if any(declares(p, number) for p in targets):
        return None
    for svc in sorted(state.services.values(), key=lambda s: s.key):
        if not svc.selector:
            continue
        sel = svc.selector_view
        backing = [p for p in targets if p.namespace == svc.namespace and sel.matches(p.labels)]
        if not backing:
            continue
        for sp in svc.ports:
            if sp.port != number or sp.protocol != protocol:
                continue
            target = sp.target_port
            resolved = backing[0].named_port(target, protocol) if isinstance(target, str) else int(target)
            if resolved is None or resolved == number:
                continue
            side = "from" if direction == INGRESS else "to"
            where = f"spec.{direction}[{rule.index}].ports[{index}]"
            name = f" (or the name {target!r})" if isinstance(target, str) else ""
            return Finding(
                "ServicePortInPolicy", "warning", _subject(policy),
                f"{where} allows {protocol} {number}, which is the port of Service {svc.key}; its pods "
                f"({backing[0].key}, ...) listen on {resolved} (targetPort {target}). NetworkPolicy sees the "
                f"packet after the Service's DNAT, on the pod port, so connections {side} these pods on "
                f"{resolved} are not allowed by this rule",
                f"use port: {resolved}{name} in {where}",
                (("service", svc.key), ("podPort", str(resolved))))
    return None


# --- AND vs OR ------------------------------------------------------------------------


def _with_rule(index: PolicyIndex, at: int, direction: str, rule: Rule) -> PolicyIndex:
    """``index`` with ``rule`` in place of its namesake in the policy at position ``at``."""
    policy = index.policies[at]
    rules = list(policy.rules(direction) or ())
    rules[rule.index] = rule
    changed = dataclasses.replace(policy, **{direction: tuple(rules)})
    policies = (*index.policies[:at], changed, *index.policies[at + 1:])
    # A policy is in its own namespace's list only: the other namespaces' lists are shared as they are.
    by_ns = {**index.by_namespace,
             policy.namespace: tuple(changed if p is policy else p for p in index.by_namespace[policy.namespace])}
    return dataclasses.replace(index, policies=policies, by_namespace=by_ns)


def _readings(policy: Policy, rule: Rule) -> list[tuple[str, tuple[Peer, ...]]]:
    """Alternative peer lists: an AND peer split in two (OR), or an OR pair merged into one (AND)."""
    assert rule.peers is not None
    out = []
    for peer in rule.peers:
        if peer.kind == "pods" and peer.namespace_selector is not None and peer.pod_selector is not None \
                and not peer.pod_selector.empty and not peer.namespace_selector.empty:
            split = (Peer(0, "pods", namespace_selector=peer.namespace_selector),
                     Peer(1, "pods", namespace=policy.namespace, pod_selector=peer.pod_selector))
            others = tuple(p for p in rule.peers if p is not peer)
            out.append((f"[{peer.index}] read as two items (OR)", others + split))
    ns_only = [p for p in rule.peers if p.kind == "pods" and p.namespace_selector is not None
               and p.pod_selector is None]
    pod_only = [p for p in rule.peers if p.kind == "pods" and p.namespace_selector is None]
    for a in ns_only:
        for b in pod_only:
            merged = Peer(0, "pods", namespace_selector=a.namespace_selector, pod_selector=b.pod_selector)
            others = tuple(p for p in rule.peers if p is not a and p is not b)
            out.append((f"[{a.index}] and [{b.index}] read as one item (AND)", (*others, merged)))
    return out


def _phrase(described: str) -> str:
    """A connection set's description inside a sentence ("No connections" → "no connections"; "TCP 80" stays)."""
    return described[0].lower() + described[1:] if described.startswith(("No ", "All ")) else described


def _and_or(state: ClusterState, index: PolicyIndex, matched: _PeerPods) -> list[Finding]:
    out = []
    eps = {k: pod_endpoint(state, p) for k, p in sorted(state.pods.items()) if p.pod_ip and not p.host_network}
    by_namespace: dict[str, list[tuple[str, Endpoint]]] = {}
    for key, e in eps.items():
        assert e.pod is not None
        by_namespace.setdefault(e.pod.namespace, []).append((key, e))
    shapes = {key: matched.alike(e, key) for key, e in eps.items()}
    answers: dict[tuple[Any, ...], ConnSet] = {}  # (src shape, dst shape, direction) -> the set as written
    for at, policy in enumerate(index.policies):
        if policy.kind != "NetworkPolicy":
            continue
        chosen = {key for group in matched.groups.get(policy.namespace, {}).values()
                  if group[0][1].pod is not None and policy.selector.matches(group[0][1].pod.labels)
                  for key, _ in group}
        selected = [e for key, e in by_namespace.get(policy.namespace, ()) if key in chosen]
        if not selected:
            continue
        for direction in (INGRESS, EGRESS):
            side = "from" if direction == INGRESS else "to"
            for rule in policy.rules(direction) or ():
                if rule.peers is None:
                    continue
                for label, peers in _readings(policy, rule):
                    alt = _with_rule(index, at, direction, dataclasses.replace(rule, peers=peers))
                    pair = _differing_pair(index, alt, rule, peers, selected, eps, shapes, direction, matched,
                                           answers)
                    if pair is None:
                        continue
                    src, dst, written, other = pair
                    out.append(Finding(
                        "AndOrReadingsDiffer", "info", _subject(policy),
                        f"spec.{direction}[{rule.index}].{side}{label} would change what existing pods may do: "
                        f"{src} -> {dst} gets {_phrase(written.describe())} as written, "
                        f"{_phrase(other.describe())} in the other reading. One item with namespaceSelector and "
                        "podSelector is AND; two items are OR",
                        "check the indentation of the `-` before podSelector is what you meant "
                        "(`knetsim policy describe` shows each peer as one line)",
                        (("from", src), ("to", dst), ("asWritten", written.describe()),
                         ("otherReading", other.describe()))))
    return out


def _ip_ranges(index: PolicyIndex) -> tuple[IPRange, ...]:
    ranges = {peer.ip_range for policy in (*index.policies, *index.cluster) for d in (INGRESS, EGRESS)
              for rule in policy.rules(d) or () for peer in rule.peers or () if peer.ip_range is not None}
    return tuple(sorted(ranges, key=lambda r: r.describe()))


def _differing_pair(index: PolicyIndex, alt: PolicyIndex, rule: Rule, peers: tuple[Peer, ...],
                    selected: list[Endpoint], eps: Mapping[str, Endpoint], shapes: Mapping[str, tuple[Any, ...]],
                    direction: str, matched: _PeerPods, answers: dict[tuple[Any, ...], ConnSet]
                    ) -> tuple[str, str, ConnSet, ConnSet] | None:
    """The first pod pair (in name order) the two readings answer differently; ``answers`` keeps the answers as
    written by pair shape, across rules and readings. Only the pods one reading matches and the other does not
    can differ, and pods alike (``_PeerPods.alike``) answer alike: each pair of shapes is asked once."""
    assert rule.peers is not None
    differ = matched.of_any(rule.peers) ^ matched.of_any(peers)
    owns: dict[tuple[Any, ...], list[Endpoint]] = {}
    for own in selected:
        found = owns.setdefault(matched.alike(own), [])
        if len(found) < 2:  # a second one stands in where the first is the peer itself
            found.append(own)
    tried: set[tuple[Any, ...]] = set()
    done: set[tuple[Any, ...]] = set()  # peer shapes tried against every own shape
    for name in sorted(differ):
        shape = shapes.get(name)
        if shape is None or shape in done:
            continue  # None: no address, or hostNetwork (not a pod peer)
        ep = eps[name]
        complete = True
        for own_shape, candidates in owns.items():
            if (shape, own_shape) in tried:
                continue
            own = next((o for o in candidates if o is not ep), None)
            if own is None:
                complete = False
                continue
            tried.add((shape, own_shape))
            src, dst = (ep, own) if direction == INGRESS else (own, ep)
            key = (shape, own_shape) if direction == INGRESS else (own_shape, shape)
            # Only the reading's own direction differs between the two indexes: the other is asked once.
            # The other side first: when it denies everything, both readings answer nothing.
            other_side = EGRESS if direction == INGRESS else INGRESS
            fixed = answers.get((*key, other_side))
            if fixed is None:
                fixed = answers[(*key, other_side)] = (_direction_set(index, EGRESS, src, dst) if other_side == EGRESS
                                                       else _direction_set(index, INGRESS, dst, src))
            if not fixed:
                continue
            written = answers.get((*key, direction))
            if written is None:
                written = answers[(*key, direction)] = (_direction_set(index, INGRESS, dst, src) if direction == INGRESS
                                                        else _direction_set(index, EGRESS, src, dst))
            egress, ingress = (fixed, written) if direction == INGRESS else (written, fixed)
            as_written = egress & ingress
            if direction == INGRESS:
                other = egress & _direction_set(alt, INGRESS, dst, src)
            else:
                other = _direction_set(alt, EGRESS, src, dst) & ingress
            if as_written != other:
                return src.name, dst.name, as_written, other
        if complete:
            done.add(shape)
    return None


def _calico_selects(index: PolicyIndex, pod: Pod) -> bool:
    """Does a Calico policy (of any tier) select ``pod`` in either direction?"""
    if index.calico is None:
        return False
    from .calico.evaluate import selects

    return any(selects(index.calico, p, pod, d, index.ctx) for tier in index.calico.policies.values() for p in tier
               for d in (INGRESS, EGRESS))


def _cilium_selects(index: PolicyIndex, pod: Pod, direction: str) -> bool:
    """Does a policy of Cilium's walk (a clusterwide one included) select ``pod`` for ``direction``?"""
    return index.cilium is not None and bool(index.cilium.selecting(pod, direction, index.ctx))


def _antrea_selects(index: PolicyIndex, pod: Pod) -> bool:
    """Does an Antrea-native policy (of any tier) apply to ``pod`` in either direction?"""
    if index.antrea is None:
        return False
    from .antrea.evaluate import selects

    return any(selects(index.antrea, p, pod, d, index.ctx) for tier in index.antrea.policies.values() for p in tier
               for d in (INGRESS, EGRESS))


def _cni_policies_selecting(index: PolicyIndex, pod: Pod, direction: str) -> list[str]:
    """The Antrea-native, Calico and ClusterNetworkPolicy objects that apply to ``pod`` for ``direction``: a Drop
    or Deny in any of them can stop a connection as surely as a NetworkPolicy's isolation (a doc's zero-trust
    baseline `appliedTo: namespaceSelector: {}` with `egress: Drop` blocks DNS for every pod)."""
    out: list[str] = []
    if index.antrea is not None:
        from .antrea.evaluate import selects as antrea_selects

        out += [p.ref for tier in index.antrea.policies.values() for p in tier
                if antrea_selects(index.antrea, p, pod, direction, index.ctx)]
    if index.calico is not None:
        from .calico.evaluate import selects as calico_selects

        out += [p.ref for tier in index.calico.policies.values() for p in tier
                if calico_selects(index.calico, p, pod, direction, index.ctx)]
    out += [c.ref for c in index.cluster if c.rules(direction) and c.selects(pod, index.ctx.namespace_labels)]
    return out


def _egress_governed_by_cni(index: PolicyIndex, pod: Pod) -> bool:
    return _cilium_selects(index, pod, EGRESS) or bool(_cni_policies_selecting(index, pod, EGRESS))


def _ingress_governed_by_cni(index: PolicyIndex, pod: Pod) -> bool:
    return _cilium_selects(index, pod, INGRESS) or bool(_cni_policies_selecting(index, pod, INGRESS))


def _antrea(state: ClusterState, index: PolicyIndex) -> list[Finding]:
    if index.antrea is None:
        return []
    from .antrea.lint import antrea_lint

    return antrea_lint(state, index.antrea, index.ctx)


def _calico(state: ClusterState, index: PolicyIndex) -> list[Finding]:
    if index.calico is None:
        return []
    from .calico.lint import calico_lint

    return calico_lint(state, index.calico, index.ctx)


def _cilium(state: ClusterState, index: PolicyIndex) -> list[Finding]:
    if index.cilium is None:
        return []
    from .cilium.evaluate import fqdns_without_dns_rule

    pods = [p for _, p in sorted(state.pods.items()) if p.pod_ip and not p.host_network]
    out = _cilium_selects_nothing(index, [p for _, p in sorted(state.pods.items()) if not p.host_network])
    for blind in fqdns_without_dns_rule(index.cilium, pods, lambda p: index.on_node(p.node_name)):
        shown = ", ".join(blind.pods[:5]) + (", …" if len(blind.pods) > 5 else "")
        out.append(Finding(
            "CiliumFQDNWithoutDNSRule", "warning", blind.policy,
            f"egress[{blind.rule}].toFQDNs ({blind.match.describe()}) can never match for {len(blind.pods)} pod(s) "
            f"({shown}): no egress rule with toPorts.rules.dns allowing the name lets them reach the cluster's DNS, "
            "so Cilium's DNS proxy never sees the lookup and never learns the addresses",
            "add an egress rule to kube-dns (k8s-app: kube-dns in kube-system) on port 53 with "
            f"toPorts[].rules.dns: [{{matchPattern: \"*\"}}] (or a matchName/matchPattern covering "
            f"{blind.match.name or blind.match.pattern})"))
    return out


def _cilium_selects_nothing(index: PolicyIndex, pods: list[Pod]) -> list[Finding]:
    """A CiliumClusterwideNetworkPolicy whose endpointSelector picks no pod right now (a one-letter typo leaves the
    pods it was written for open); namespaced Cilium policies are ``_selects_nothing``'s (index.policies)."""
    assert index.cilium is not None
    out = []
    cluster = index.cilium.cluster
    for policy in index.cilium.policies:  # one per spec (a `specs` list names each ``#specs[i]``)
        if not policy.clusterwide or not (policy.applies(INGRESS) or policy.applies(EGRESS)):
            continue
        if any(policy.selects(pod, index.ctx.namespace_labels(pod.namespace), cluster) for pod in pods):
            continue
        selector = policy.policy.selector
        endpoint = cilium_labels.reads_endpoint_labels(selector)
        candidates = [cilium_labels.endpoint_labels(p, cluster) if endpoint else p.labels for p in pods]
        out.append(Finding("PolicySelectsNothing", "warning", policy.ref,
                           f"{_cilium_spec(policy)}.endpointSelector ({selector.formatted()}) selects no pod in any "
                           "namespace" + _hint(selector, candidates),
                           "fix the endpointSelector labels, or delete the policy"))
    return out


def _left_out(index: PolicyIndex) -> list[Finding]:
    """Each policy object the answers leave out, as a finding: a verdict that ignores a policy is never silent."""
    out = []
    for c in index.caveats:
        if c.enforced:
            out.append(Finding("PolicyNotEvaluated", "warning", c.object.ref,
                               f"{c.reason} (the cluster's {index.cni.text()})",
                               "check the connections it decides on the cluster itself; every knetsim verdict it "
                               "could change names it"))
        elif c.reason == CILIUM_NEVER:
            out.append(Finding("PolicyNotEnforced", "warning", c.object.ref, c.reason,
                               "set enable-policy: default in kube-system/cilium-config and restart the Cilium "
                               "agents (kubectl -n kube-system rollout restart ds/cilium), or remove the policy"))
        else:
            out.append(Finding("PolicyNotEnforced", "warning", c.object.ref, c.reason,
                               "remove it, or run the CNI that enforces it; nothing in the cluster acts on it now"))
    return out


def _set_aside(index: PolicyIndex) -> list[Finding]:
    """What the CNI's readers refuse or leave out (a Calico selector that does not parse, an Antrea tier that does
    not exist, a rule part knetsim does not simulate), grouped in one finding: the verdicts name each line as a
    note, and the doctor must not read as clean a cluster whose deny was set aside."""
    if not index.problems:
        return []
    shown = list(index.problems[:3])
    more = f" (and {len(index.problems) - 3} more: knetsim policy check or matrix lists them all)" \
        if len(index.problems) > 3 else ""
    return [Finding("PolicySetAside", "warning", "policies",
                    f"{len(index.problems)} policy object(s) or part(s) left out of every answer, as the CNI refuses "
                    f"them or knetsim does not simulate them: {'; '.join(shown)}{more}",
                    "correct each as its line says: a policy the CNI refuses never exists on the cluster "
                    "(kubectl apply fails), so what it was written to deny stays open")]


def lint(state: ClusterState) -> list[Finding]:
    """Every finding, errors first, then by subject and code."""
    index = policy_index(state)
    matched = _PeerPods(state, index)
    findings = (_selects_nothing(state, index, matched) + _not_isolated(state, index) + _dns(state, index)
                + _service_ports(state, index, matched) + _and_or(state, index, matched)
                + cluster_lint(state, index) + _left_out(index) + _set_aside(index) + _calico(state, index)
                + _cilium(state, index) + _antrea(state, index))
    return sorted(findings, key=lambda f: (SEVERITIES.index(f.severity), f.subject, f.code, f.message))


__all__ = ["NAMESPACE_NAME_LABEL", "Finding", "allow_dns_egress_yaml", "lint"]
