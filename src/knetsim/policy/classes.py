"""Equivalence classes of endpoints, and the policies' selectors and peers as vectors over them.

Two pods behave identically under every policy when they share a namespace, the values of
every label key some selector mentions, the numbers of every named port some policy
mentions, and the ipBlock piece their IP falls in; hostNetwork pods behave as their node;
external peers are the pieces of ``0.0.0.0/0`` minus the pod network that the ipBlocks
distinguish. A Deployment's replicas therefore collapse into one class, and a cluster of
100,000 pods is a few thousand classes. Everything above this module works on classes;
only the rows of an answer go back to pods.
"""

from __future__ import annotations

import bisect
import ipaddress
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..cluster.state import ClusterState
from ..model.labels import DOES_NOT_EXIST, EQUALS, EXISTS, GREATER, IN, LESS, NOT_EQUALS, NOT_IN, Selector
from ..model.objects import Pod
from .cluster import ClusterPolicy
from .engine import PolicyIndex, pod_endpoint
from .rules import Endpoint, Peer, Policy, Rule, RuleShape

POD, NODE, EXTERNAL = 0, 1, 2
_IPV4_END = 1 << 32


@dataclass
class Classes:
    keys: list[tuple[Any, ...]]
    kind: np.ndarray  # int8: POD / NODE / EXTERNAL
    ns_of: np.ndarray  # int32 namespace index, -1 for non-pods
    atom_of: np.ndarray  # int32 ipBlock piece of the class's address, -1 when none matters
    namespaces: list[str]
    ns_slices: dict[str, tuple[int, int]]  # classes are sorted by namespace: each one is a slice
    named: dict[tuple[str, str], np.ndarray]  # (port name, protocol) -> number per class, -1 if none
    members: list[list[Endpoint]]  # per class, sorted by name
    ip_bounds: list[int]  # sorted IPv4 piece boundaries
    label_pairs: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    label_keys: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.keys)


def _selector_keys(selector: Selector | None) -> Iterable[str]:
    return () if selector is None else (r.key for r in selector.requirements)


def _ipv4_ranges(policies: Sequence[Policy | ClusterPolicy],
                 kind: str = "ipblock") -> list[tuple[int, int, tuple[tuple[int, int], ...]]]:
    """The IPv4 ranges (first, end, excepts) of the ``kind`` peers of ``policies``' rules, each distinct rule's once:
    callers read them as the bounds they cut, so a range repeated by many policies is needed once."""
    out: list[tuple[int, int, tuple[tuple[int, int], ...]]] = []
    # Policies share one IPRange per distinct block (rules.ip_range): its spans are made once per object here; and
    # one Rule per distinct rule (rules.SharedRules): 36,000 rules of 10,000 policies are ~9,000 objects, each read
    # once (the policies hold the rules, so their ids stay theirs while this runs), from the fields rather than by
    # ``rules(direction)`` (20,000 method calls).
    spans: dict[int, tuple[int, int, tuple[tuple[int, int], ...]]] = {}
    seen: set[int] = set()
    for policy in policies:
        for rule in (*(policy.ingress or ()), *(policy.egress or ())):
            if id(rule) in seen:
                continue
            seen.add(id(rule))
            for peer in rule.peers or ():
                r = peer.ip_range
                if peer.kind == kind and r is not None and r.cidr.version == 4:
                    found = spans.get(id(r))
                    if found is None:
                        found = spans[id(r)] = (*_span(r.cidr), tuple(_span(e) for e in r.excepts))
                    out.append(found)
    return out


def _span(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> tuple[int, int]:
    # From the prefix length: broadcast_address costs ~100 us a call, 10,000 policies pay for it.
    start = int(net.network_address)
    return start, start + (1 << (32 - net.prefixlen))


def _has_nodes_peer(policies: Sequence[ClusterPolicy]) -> bool:
    return any(peer.kind == "nodes" for p in policies for d in ("ingress", "egress") for r in p.rules(d)
               for peer in r.peers)


def atom_name(lo: int, hi: int) -> str:
    """``192.168.0.0/16`` when the piece is one CIDR, else ``first-last`` (as nca prints ranges)."""
    nets = list(ipaddress.summarize_address_range(ipaddress.IPv4Address(lo), ipaddress.IPv4Address(hi - 1)))
    if len(nets) == 1:
        return str(nets[0])
    return f"{ipaddress.IPv4Address(lo)}-{ipaddress.IPv4Address(hi - 1)}"


def _vocabulary(policies: Sequence[Policy | ClusterPolicy]) -> tuple[list[str], list[tuple[str, str]]]:
    """The label keys selectors mention and the (name, protocol) of every named port, sorted."""
    keys: set[str] = set()
    named: set[tuple[str, str]] = set()
    seen: set[int] = set()  # rules are shared between policies (rules.SharedRules): each read once
    seen_selectors: set[int] = set()  # and so are selectors (one object per distinct one)
    for p in policies:
        selector = p.selector if isinstance(p, Policy) else p.pod_selector
        if id(selector) not in seen_selectors:
            seen_selectors.add(id(selector))
            keys.update(_selector_keys(selector))
        # Both directions' rules read straight from the fields (not ``rules(direction)``): 10,000 policies of the
        # Calico bench, 20,000 method calls for 36,000 rules of which ~9,000 are distinct objects.
        for rule in (*(p.ingress or ()), *(p.egress or ())):
            if id(rule) in seen:
                continue
            seen.add(id(rule))
            for peer in rule.peers or ():
                # A nodes peer's selector is over node labels. Peers share one Selector per distinct selector: each
                # object's keys are read once (18,000 peers of the 10,000-policy bench's distinct rules).
                selector = peer.pod_selector
                if peer.kind != "nodes" and selector is not None and id(selector) not in seen_selectors:
                    seen_selectors.add(id(selector))
                    keys.update(_selector_keys(selector))
            for port in rule.ports or ():
                if isinstance(port.port, str):
                    named.update((port.port, proto) for proto in port.protocols())
    return sorted(keys), sorted(named)


def build_classes(state: ClusterState, index: PolicyIndex, pods: Iterable[Pod], *, external: bool = True,
                  all_external: bool = False, identity: Callable[[Pod], Any] | None = None,
                  extra_ranges: Sequence[tuple[int, int, tuple[tuple[int, int], ...]]] = (),
                  ipblocks: Sequence[tuple[int, int, tuple[tuple[int, int], ...]]] | None = None) -> Classes:
    """The classes of ``pods`` (in name order), plus the external pieces when ``external``: those the ipBlocks
    cut, none when no policy has one; with ``all_external``, the address space outside the pod network even
    then (what a diff or an exposure report compares, whether or not an ipBlock names it). ``identity``: more of
    a pod that tells classes apart (for policies whose selectors the vocabulary does not know, Calico's);
    ``extra_ranges``: more IPv4 ranges that cut the external pieces (Calico's nets and network sets);
    ``ipblocks``: the policies' own ranges when the caller has read them already (``_ipv4_ranges``)."""
    policies = index.policies
    key_list, named_list = _vocabulary((*policies, *index.cluster))
    named_set = set(named_list)

    # ClusterNetworkPolicy `networks` match every address, pod and node IPs too, whatever the data plane.
    networks = _ipv4_ranges(index.cluster, "network")
    ranges = (_ipv4_ranges(policies) if ipblocks is None else list(ipblocks)) + networks + list(extra_ranges)
    pod_net = ipaddress.ip_network(state.config.pod_cidr)
    bounds_set = {0, _IPV4_END}
    for lo, hi, ex in ranges:
        bounds_set.update((lo, hi))
        for elo, ehi in ex:
            bounds_set.update((elo, ehi))
    cluster_matters = bool(ranges) and (index.ctx.ipblocks_match_cluster or bool(networks))
    if (ranges or all_external) and pod_net.version == 4:
        bounds_set.update((int(pod_net.network_address), int(pod_net.broadcast_address) + 1))
    if ranges and _has_nodes_peer(index.cluster):
        # A `nodes` peer matches node addresses only: each one is an address range of its own.
        for node in state.nodes.values():
            if node.internal_ip and ipaddress.ip_address(node.internal_ip).version == 4:
                start = int(ipaddress.IPv4Address(node.internal_ip))
                bounds_set.update((start, start + 1))
    bounds = sorted(bounds_set)

    if cluster_matters:
        # inet_pton is strict dotted-quad IPv4 and ~20x faster than ipaddress (one call per pod); socket loads only
        # for an input whose ipBlocks cut the pod network (it is 3% of a cold start otherwise).
        from socket import AF_INET, inet_pton

    def atom(ip: str) -> int:
        if not cluster_matters or not ip:
            return -1
        try:
            number = int.from_bytes(inet_pton(AF_INET, ip), "big")
        except OSError:
            return -1  # IPv6: ipBlocks are cut in IPv4 only
        return bisect.bisect_right(bounds, number) - 1

    groups: dict[tuple[Any, ...], list[Endpoint]] = {}
    # The projection per distinct label map (by its items, in their order): the 10,000-pod bench's pods hold 9
    # distinct ones, and hashing a few pairs is cheaper than projecting them again.
    projections: dict[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = {}
    named_ports: dict[tuple[int, ...], tuple[Any, tuple[tuple[tuple[str, str], int], ...]]] = {}
    for pod in pods:
        ep = pod_endpoint(state, pod)
        if ep.kind == "node":
            class_key: tuple[Any, ...] = (NODE, "", ep.node, atom(ep.ip))
        else:
            labels = pod.labels
            items = tuple(labels.items())
            projected = projections.get(items)
            if projected is None:
                projected = projections[items] = tuple((k, labels[k]) for k in key_list if k in labels)
            # Per distinct list of container objects: the pods of one template share their Container views (the
            # 10,000-pod bench's pods hold 18), so the named ports are found once per list, not once per pod.
            containers = pod.containers
            by_ids = tuple(map(id, containers))
            found = named_ports.get(by_ids)
            if found is None:
                # podutil.FindPort: the first container port with that name and protocol wins.
                ports: dict[tuple[str, str], int] = {}
                for container in containers:
                    for cp in container.ports:
                        nk = (cp.name, cp.protocol)
                        if cp.name and nk in named_set and nk not in ports:
                            ports[nk] = cp.container_port
                found = named_ports[by_ids] = (containers, tuple(sorted(ports.items())))  # kept: ids stay theirs
            class_key = (POD, pod.namespace, projected, found[1], atom(ep.ip))
            if identity is not None:
                class_key = (*class_key[:-1], identity(pod), class_key[-1])
        groups.setdefault(class_key, []).append(ep)

    if external and (ranges or all_external):
        net_lo, net_hi = int(pod_net.network_address), int(pod_net.broadcast_address) + 1
        for i in range(len(bounds) - 1):
            lo, hi = bounds[i], bounds[i + 1]
            if net_lo <= lo and hi <= net_hi:
                continue
            groups[(EXTERNAL, "", lo, i)] = [Endpoint("external", atom_name(lo, hi))]

    ordered = sorted(groups, key=_class_order())
    namespaces = sorted({k[1] for k in ordered if k[0] == POD} | {p.namespace for p in policies})
    ns_index = {ns: i for i, ns in enumerate(namespaces)}
    kind = np.array([k[0] for k in ordered], dtype=np.int8)
    ns_of = np.array([ns_index[k[1]] if k[0] == POD else -1 for k in ordered], dtype=np.int32)
    atom_of = np.array([k[-1] if k[0] != EXTERNAL else k[3] for k in ordered], dtype=np.int32)
    if not cluster_matters:
        atom_of[kind != EXTERNAL] = -1
    ns_slices: dict[str, tuple[int, int]] = {}
    for i, k in enumerate(ordered):
        if k[0] == POD:
            lo, _ = ns_slices.get(k[1], (i, i))
            ns_slices[k[1]] = (lo, i + 1)
    named_arrays = {}
    if named_list:
        # Per distinct set of named ports, then spread by index: the 10,000-pod bench's 9,000 classes hold a few
        # dozen of them, and a list over every class per named port (9 of them) took ~0.02 s.
        port_sets: dict[tuple[Any, ...], int] = {}
        no_ports: tuple[Any, ...] = ()
        set_of_class = np.array([port_sets.setdefault(k[3] if k[0] == POD else no_ports, len(port_sets))
                                 for k in ordered], dtype=np.intp)
        port_maps = [dict(ports) for ports in port_sets]
        for nk in named_list:
            named_arrays[nk] = np.array([ports.get(nk, -1) for ports in port_maps], dtype=np.int64)[set_of_class]
    classes = Classes(list(ordered), kind, ns_of, atom_of, namespaces, ns_slices, named_arrays,
                      [groups[k] for k in ordered], bounds)
    pairs: dict[tuple[str, str], list[int]] = {}
    for i, k in enumerate(ordered):
        if k[0] == POD:
            for pair in k[2]:
                pairs.setdefault(pair, []).append(i)
    classes.label_pairs = {p: np.array(v, dtype=np.int64) for p, v in pairs.items()}
    by_key: dict[str, list[int]] = {}
    for (k, _), idx in pairs.items():
        by_key.setdefault(k, []).extend(idx)
    classes.label_keys = {k: np.array(sorted(v), dtype=np.int64) for k, v in by_key.items()}
    return classes


def _class_order() -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """The order of the classes: kind, namespace, then the text of the rest of the key (``repr(key[2:])``).

    The text is put together from each part's, and a tuple part's text (labels, named ports, an identity) is made
    once per distinct part: 9,000 classes of the 10,000-pod bench share a few dozen of each, and the repr of every
    whole key took 0.03 s. Parts hold strings and integers only, so equal parts have equal texts."""
    texts: dict[tuple[Any, ...], str] = {}

    def order(key: tuple[Any, ...]) -> tuple[Any, ...]:
        parts = []
        for part in key[2:]:
            if type(part) is tuple:
                text = texts.get(part)
                if text is None:
                    text = texts[part] = repr(part)
                parts.append(text)
            else:
                parts.append(repr(part))
        # repr of a tuple: its items' reprs joined, and a trailing comma for one item.
        return key[0], key[1], "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"

    return order


def _unique(values: np.ndarray) -> np.ndarray:
    ordered = np.sort(values, kind="stable")  # concatenated sorted peers, which timsort merges in linear time
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


SMALL_UNION = 64  # Vectors.rule_indices: peers' indices joined as a Python set up to this many (numpy past it)
SPLIT_AFTER = 8  # Vectors._namespace_part: asks of one selector before it is split by namespace (~30 us a split)


class Vectors:
    """Boolean vectors over classes for selectors and peers, each computed once."""

    def __init__(self, state: ClusterState, classes: Classes, index: PolicyIndex, *, keep_peers: bool = True) -> None:
        self.state = state
        # keep_peers=False: no cache of peer vectors, for a caller that keeps them as indices (prepare(indices=True)):
        # ten thousand namespace-local peers over ten thousand classes are 100 MB as vectors.
        self.keep_peers = keep_peers
        self.c = classes
        self.index = index
        self.n = classes.count
        self.pod_mask = classes.kind == POD
        self._sel: dict[Selector, np.ndarray] = {}
        self._ns: dict[Selector, np.ndarray] = {}
        self._peer: dict[tuple[Any, ...], np.ndarray] = {}
        self._peer_indices: dict[tuple[Any, ...], np.ndarray] = {}
        self._peer_indices_by_object: dict[int, tuple[Peer, np.ndarray]] = {}
        self._own_namespace_indices: dict[tuple[str | None, int], tuple[Selector | None, np.ndarray]] = {}
        self._rule_indices: dict[int, tuple[RuleShape, np.ndarray]] = {}
        self._ns_pairs: dict[tuple[str, str], np.ndarray] | None = None
        self._ip: dict[Any, np.ndarray] = {}
        self._policy_sel: dict[tuple[str, int], tuple[Selector, np.ndarray]] = {}
        self._subjects: dict[tuple[Selector, Selector | None], np.ndarray] = {}
        # Per selector object: how often a namespace's part of it was asked, and once that is often, its selected
        # classes split by namespace (see ``_namespace_part``).
        self._by_namespace: dict[int, list[Any]] = {}
        self._namespace_bounds: tuple[dict[str, int], np.ndarray, np.ndarray] | None = None

    def _indices(self, key: str, values: Iterable[str]) -> np.ndarray:
        v = np.zeros(self.n, dtype=bool)
        for value in values:
            idx = self.c.label_pairs.get((key, value))
            if idx is not None:
                v[idx] = True
        return v

    def selector(self, selector: Selector) -> np.ndarray:
        cached = self._sel.get(selector)
        if cached is not None:
            return cached
        if selector.nothing:
            v = np.zeros(self.n, dtype=bool)
        else:
            v = self.pod_mask.copy()
            for r in selector.requirements:
                if r.op in (EQUALS, IN):
                    v &= self._indices(r.key, r.values)
                elif r.op in (NOT_EQUALS, NOT_IN):
                    v &= ~self._indices(r.key, r.values)
                elif r.op in (EXISTS, DOES_NOT_EXIST):
                    has = np.zeros(self.n, dtype=bool)
                    idx = self.c.label_keys.get(r.key)
                    if idx is not None:
                        has[idx] = True
                    v &= has if r.op == EXISTS else ~has
                elif r.op in (GREATER, LESS):
                    ok = [value for (k, value) in self.c.label_pairs if k == r.key and r.matches({k: value})]
                    v &= self._indices(r.key, ok)
        self._sel[selector] = v
        return v

    def namespaces(self, selector: Selector) -> np.ndarray:
        cached = self._ns.get(selector)
        if cached is None:
            equal = selector.equality_map()
            if equal is not None:
                # matchLabels only (most namespace selectors): columns of the namespaces' label pairs, not a
                # Selector.matches per namespace per selector (a hundred selectors x a thousand namespaces).
                ns_match = np.zeros(len(self.c.namespaces) + 1, dtype=bool)
                ns_match[:-1] = True
                for key, value in equal.items():
                    ns_match[:-1] &= self._namespace_pair(key, value)
            else:
                ns_match = np.array([selector.matches(self.state.namespace_labels(ns)) for ns in self.c.namespaces]
                                    + [False], dtype=bool)
            cached = ns_match[self.c.ns_of]  # ns_of == -1 picks the trailing False
            self._ns[selector] = cached
        return cached

    def _namespace_pair(self, key: str, value: str) -> np.ndarray:
        """Per namespace of the classes: does it carry label ``key=value``."""
        if self._ns_pairs is None:
            pairs: dict[tuple[str, str], list[int]] = {}
            for i, ns in enumerate(self.c.namespaces):
                for pair in self.state.namespace_labels(ns).items():
                    pairs.setdefault(pair, []).append(i)
            self._ns_pairs = {pair: np.array(idx, dtype=np.int64) for pair, idx in pairs.items()}
        out = np.zeros(len(self.c.namespaces), dtype=bool)
        idx = self._ns_pairs.get((key, value))
        if idx is not None:
            out[idx] = True
        return out

    def ipblock(self, peer: Peer) -> np.ndarray:
        r = peer.ip_range
        key = (peer.kind, r)
        cached = self._ip.get(key)
        if cached is not None:
            return cached
        v = np.zeros(self.n, dtype=bool)
        if r is not None and r.cidr.version == 4:
            bounds = self.c.ip_bounds
            match = np.array([r.contains(str(ipaddress.IPv4Address(bounds[i]))) for i in range(len(bounds) - 1)]
                             + [False], dtype=bool)
            v = match[self.c.atom_of]
            if peer.kind == "ipblock" and not self.index.ctx.ipblocks_match_cluster:
                v = v & (self.c.kind == EXTERNAL)
        self._ip[key] = v
        return v

    def peer(self, peer: Peer) -> np.ndarray:
        key = (peer.kind, peer.namespace, peer.namespace_selector, peer.pod_selector, peer.ip_range, peer.entity)
        cached = self._peer.get(key)
        if cached is not None:
            return cached
        kind = self.c.kind
        if peer.kind in ("ipblock", "network"):
            v = self.ipblock(peer)
        elif peer.kind == "entity":
            v = {"all": np.ones(self.n, dtype=bool), "world": kind == EXTERNAL, "cluster": kind != EXTERNAL,
                 "host": kind == NODE, "remote-node": kind == NODE}.get(peer.entity, np.zeros(self.n, dtype=bool))
        elif peer.kind == "nodes":
            v = self.nodes(peer.pod_selector)
        elif peer.kind == "domains":
            v = np.zeros(self.n, dtype=bool)  # knetsim resolves no name outside the cluster
        else:
            pods = self.pod_mask if peer.pod_selector is None else self.selector(peer.pod_selector)
            if peer.namespace_selector is not None:
                v = pods & self.namespaces(peer.namespace_selector)
            else:
                v = np.zeros(self.n, dtype=bool)
                lo, hi = self.c.ns_slices.get(peer.namespace or "", (0, 0))
                v[lo:hi] = pods[lo:hi]
        if self.keep_peers:
            self._peer[key] = v
        return v

    def nodes(self, selector: Selector | None) -> np.ndarray:
        """Classes that are the addresses of the nodes ``selector`` selects: hostNetwork pods on them, and the
        address ranges that are exactly one such node's IP (build_classes cuts them out)."""
        picked = {name: node.internal_ip for name, node in self.state.nodes.items()
                  if selector is None or selector.matches(node.labels)}
        addresses = {int(ipaddress.IPv4Address(ip)) for ip in picked.values()
                     if ip and ipaddress.ip_address(ip).version == 4}
        bounds = self.c.ip_bounds
        v = np.zeros(self.n, dtype=bool)
        for c, key in enumerate(self.c.keys):
            if key[0] == NODE:
                v[c] = key[2] in picked
            elif key[0] == EXTERNAL:
                lo, hi = bounds[key[3]], bounds[key[3] + 1]
                v[c] = hi - lo == 1 and lo in addresses
        return v

    def selected(self, policy: Policy) -> np.ndarray:
        """Indices of the classes ``policy`` selects (pods of its namespace only)."""
        # By the selector object (kept in the entry, so its id stays its own): policies share one Selector per
        # distinct selector, and hashing one (a tuple of dataclasses) for 30,000 calls at 10,000 policies cost more
        # than the lookups. An equal selector that is another object is computed again, to the same answer.
        key = (policy.namespace, id(policy.selector))
        found = self._policy_sel.get(key)
        if found is None:
            found = self._policy_sel[key] = (policy.selector,
                                             self._namespace_part(policy.selector, policy.namespace))
        return found[1]

    def _namespace_part(self, selector: Selector | None, namespace: str) -> np.ndarray:
        """The sorted indices of the pod classes of ``namespace`` that ``selector`` (None: every pod) selects."""
        # A namespace's policies and own-namespace peers repeat a few selectors across every namespace (the
        # 10,000-pod bench: 19,000 (namespace, selector) pairs of 10 selectors), and a slice and a nonzero each cost
        # ~3 us. A selector asked often is split by namespace once, and each part is a view of that split.
        entry = self._by_namespace.get(id(selector))
        if entry is None:
            entry = self._by_namespace[id(selector)] = [selector, 0, None]  # the selector kept: its id stays its own
        pods = self.pod_mask if selector is None else None
        if entry[2] is None:
            entry[1] += 1
            if pods is None:
                pods = self.selector(selector)  # type: ignore[arg-type]
            if entry[1] < SPLIT_AFTER:
                lo, hi = self.c.ns_slices.get(namespace, (0, 0))
                return np.nonzero(pods[lo:hi])[0] + lo
            if self._namespace_bounds is None:
                names = list(self.c.ns_slices)
                self._namespace_bounds = ({ns: i for i, ns in enumerate(names)},
                                          np.array([self.c.ns_slices[ns][0] for ns in names], dtype=np.int64),
                                          np.array([self.c.ns_slices[ns][1] for ns in names], dtype=np.int64))
            _, los, his = self._namespace_bounds
            picked = np.flatnonzero(pods)
            entry[2] = (picked, np.searchsorted(picked, los).tolist(), np.searchsorted(picked, his).tolist())
        picked, starts, ends = entry[2]
        assert self._namespace_bounds is not None
        at = self._namespace_bounds[0].get(namespace)
        if at is None:
            return picked[:0]
        return picked[starts[at]:ends[at]]

    def subject(self, policy: ClusterPolicy) -> np.ndarray:
        """The classes a ClusterNetworkPolicy's subject selects (pods on the pod network only)."""
        key = (policy.namespace_selector, policy.pod_selector)
        cached = self._subjects.get(key)
        if cached is None:
            pods = self.pod_mask if policy.pod_selector is None else self.selector(policy.pod_selector)
            cached = pods & self.namespaces(policy.namespace_selector)
            self._subjects[key] = cached
        return cached

    def peer_indices(self, peer: Peer) -> np.ndarray:
        """``peer`` as the sorted indices of the classes it matches; a peer of one namespace (most of them) is
        found in that namespace's slice, without a vector over every class."""
        if peer.kind not in ("ipblock", "network", "entity", "nodes", "domains") and peer.namespace_selector is None:
            # Remembered too (shared: callers never write into it): a namespace's policies repeat their peers (44,000
            # peers of 10,000 policies are 11,000 distinct), each a few small numpy calls.
            # By the selector object, as ``selected`` (kept in the entry, so its id stays its own).
            own = (peer.namespace, id(peer.pod_selector))
            entry = self._own_namespace_indices.get(own)
            if entry is None:
                entry = self._own_namespace_indices[own] = (
                    peer.pod_selector, self._namespace_part(peer.pod_selector, peer.namespace or ""))
            return entry[1]
        # First by the peer object (kept in the entry, so its id stays its own): policies share their Peers that
        # read no namespace (rules.SharedRules.peer: 8,000 namespaceSelector peers of 10,000 policies are ~200
        # objects), and the key below hashes two Selectors.
        by_object = self._peer_indices_by_object.get(id(peer))
        if by_object is not None:
            return by_object[1]
        # Kept as indices even when peer vectors are not: ten thousand policies name the same few namespace peers.
        key = (peer.kind, peer.namespace, peer.namespace_selector, peer.pod_selector, peer.ip_range, peer.entity)
        found = self._peer_indices.get(key)
        if found is None:
            found = self._peer_indices[key] = np.nonzero(self.peer(peer))[0]
        self._peer_indices_by_object[id(peer)] = (peer, found)
        return found

    def rule_indices(self, rule: RuleShape) -> np.ndarray:
        """``rule`` as the sorted indices of the peer classes it matches (``rule``, for ``prepare(indices=True)``)."""
        # Remembered per rule object (kept alive with it, so its id is not reused): policies share one Rule per
        # distinct rule (rules.SharedRules), 36,000 rules of 10,000 policies are ~9,000 objects.
        found = self._rule_indices.get(id(rule))
        if found is not None:
            return found[1]
        if rule.peers is None:
            indices = np.arange(self.n)
        elif len(rule.peers) == 1:
            indices = self.peer_indices(rule.peers[0])
        else:
            parts = [self.peer_indices(peer) for peer in rule.peers]
            if sum(len(part) for part in parts) <= SMALL_UNION:
                # A few indices (a namespace's pods and a small selected group): a Python set, ~1.6 us against ~3.5
                # for the numpy sort, 8,000 rules of 10,000 policies.
                indices = np.array(sorted(set().union(*[part.tolist() for part in parts])), dtype=np.intp)
            else:
                indices = _unique(np.concatenate(parts))
        self._rule_indices[id(rule)] = (rule, indices)
        return indices

    def rule(self, rule: RuleShape) -> np.ndarray:
        """The peer classes ``rule`` matches (shared with the cache: callers never write into it)."""
        if rule.peers is None:
            return np.ones(self.n, dtype=bool)
        if len(rule.peers) == 1:
            return self.peer(rule.peers[0])
        v = np.zeros(self.n, dtype=bool)
        for peer in rule.peers:
            v |= self.peer(peer)
        return v


@dataclass(frozen=True)
class PreparedPolicy:
    """A policy over classes: the classes it selects and, per direction it isolates, each rule's peer vector."""

    policy: Policy
    selected: np.ndarray
    egress: tuple[tuple[Rule, np.ndarray], ...] | None
    ingress: tuple[tuple[Rule, np.ndarray], ...] | None

    def rules(self, direction: str) -> tuple[tuple[Rule, np.ndarray], ...] | None:
        return self.ingress if direction == "ingress" else self.egress


def prepare(vectors: Vectors, *, indices: bool = False) -> list[PreparedPolicy]:
    """Every policy that selects some class, with its vectors (a policy that selects nothing changes nothing)."""
    out = []
    # Once per policy and rule (10,000 and 36,000 at the Calico bench): the lookups are hoisted.
    of_rule = vectors.rule_indices if indices else vectors.rule
    selected = vectors.selected
    for policy in vectors.index.policies:
        sel = selected(policy)
        if not len(sel):
            continue
        egress, ingress = policy.egress, policy.ingress
        out.append(PreparedPolicy(policy, sel, None if egress is None else tuple([(r, of_rule(r)) for r in egress]),
                                  None if ingress is None else tuple([(r, of_rule(r)) for r in ingress])))
    return out


__all__ = ["EXTERNAL", "NODE", "POD", "Classes", "PreparedPolicy", "Vectors", "atom_name", "build_classes", "prepare"]
