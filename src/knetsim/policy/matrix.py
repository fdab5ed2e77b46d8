"""The connectivity matrix: for every ordered pair of pods (and external address ranges), what policy allows.

Computed over equivalence classes, not pods. Two pods behave identically under every policy
when they share a namespace, the values of every label key some selector mentions, the
numbers of every named port some policy mentions, and the ipBlock piece their IP falls in;
hostNetwork pods behave as their node; external peers are the pieces of ``0.0.0.0/0`` minus
the pod network that the ipBlocks distinguish. A Deployment's replicas therefore collapse
into one class, and a cluster of 100,000 pods is a matrix of a few thousand classes.

Per class pair and per *port atom* (a maximal port range no rule tells apart, per
protocol, plus "other protocols") the matrix is ``egress(src) & ingress(dst)``, built with
numpy row operations: a policy ORs one vector (what its rules allow, over destination
classes) into the rows of the classes it selects. ``engine.connections`` is the per-pair
reference this must equal (tests/policy/test_properties.py).

Two things are per pod, not per class, and are applied when expanding to pods: a pod can
always reach itself, and a pod always accepts traffic from its own node (so from a
hostNetwork pod on that node).
"""

from __future__ import annotations

import bisect
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..cluster.state import ClusterState
from ..model.labels import DOES_NOT_EXIST, EQUALS, EXISTS, GREATER, IN, LESS, NOT_EQUALS, NOT_IN, Selector
from .engine import PolicyIndex, pod_endpoint, policy_index
from .ports import FULL, PROTOCOLS, ConnSet
from .rules import Endpoint, Peer, Policy, Rule

POD, NODE, EXTERNAL = 0, 1, 2
OTHER = "OTHER"  # pseudo-protocol atom: what only a rule without ports allows
_IPV4_END = 1 << 32


# --- equivalence classes --------------------------------------------------------------


@dataclass
class Classes:
    keys: list[tuple[Any, ...]]
    kind: np.ndarray  # int8: POD / NODE / EXTERNAL
    ns_of: np.ndarray  # int32 namespace index, -1 for non-pods
    atom_of: np.ndarray  # int32 ipBlock atom of the class's address, -1 when none matters
    namespaces: list[str]
    ns_slices: dict[str, tuple[int, int]]
    named: dict[tuple[str, str], np.ndarray]  # (port name, protocol) -> number per class, -1 if none
    members: list[list[Endpoint]]
    ip_bounds: list[int]  # sorted IPv4 atom boundaries
    label_pairs: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    label_keys: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.keys)

    def counts(self) -> dict[str, int]:
        kinds = self.kind
        return {"pods": int(sum(len(m) for m, k in zip(self.members, kinds, strict=True) if k != EXTERNAL)),
                "classes": self.count, "podClasses": int((kinds == POD).sum()),
                "nodeClasses": int((kinds == NODE).sum()), "externalPeers": int((kinds == EXTERNAL).sum())}


def _selector_keys(selector: Selector | None) -> Iterable[str]:
    return () if selector is None else (r.key for r in selector.requirements)


def _ipv4_ranges(policies: Sequence[Policy]) -> list[tuple[int, int, tuple[tuple[int, int], ...]]]:
    out = []
    for policy in policies:
        for direction in ("ingress", "egress"):
            for rule in policy.rules(direction) or ():
                for peer in rule.peers or ():
                    r = peer.ip_range
                    if peer.kind == "ipblock" and r is not None and r.cidr.version == 4:
                        ex = tuple((int(e.network_address), int(e.broadcast_address) + 1) for e in r.excepts)
                        out.append((int(r.cidr.network_address), int(r.cidr.broadcast_address) + 1, ex))
    return out


def _atom_name(lo: int, hi: int) -> str:
    """``192.168.0.0/16`` when the piece is one CIDR, else ``first-last`` (as nca prints ranges)."""
    nets = list(ipaddress.summarize_address_range(ipaddress.IPv4Address(lo), ipaddress.IPv4Address(hi - 1)))
    if len(nets) == 1:
        return str(nets[0])
    return f"{ipaddress.IPv4Address(lo)}-{ipaddress.IPv4Address(hi - 1)}"


def build_classes(state: ClusterState, index: PolicyIndex | None = None, *, external: bool = True) -> Classes:
    index = index or policy_index(state)
    policies = index.policies
    keys: set[str] = set()
    named: set[tuple[str, str]] = set()
    for p in policies:
        keys.update(_selector_keys(p.selector))
        for direction in ("ingress", "egress"):
            for rule in p.rules(direction) or ():
                for peer in rule.peers or ():
                    keys.update(_selector_keys(peer.pod_selector))
                for port in rule.ports or ():
                    if isinstance(port.port, str):
                        named.update((port.port, proto) for proto in port.protocols())
    named_list = sorted(named)
    key_list = sorted(keys)

    ranges = _ipv4_ranges(policies)
    pod_net = ipaddress.ip_network(state.config.pod_cidr)
    bounds_set = {0, _IPV4_END}
    for lo, hi, ex in ranges:
        bounds_set.update((lo, hi))
        for elo, ehi in ex:
            bounds_set.update((elo, ehi))
    cluster_matters = bool(ranges) and index.ctx.ipblocks_match_cluster
    if ranges and pod_net.version == 4:
        bounds_set.update((int(pod_net.network_address), int(pod_net.broadcast_address) + 1))
    bounds = sorted(bounds_set)

    def atom(ip: str) -> int:
        if not cluster_matters or not ip:
            return -1
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            return -1
        if address.version != 4:
            return -1
        return bisect.bisect_right(bounds, int(address)) - 1

    groups: dict[tuple[Any, ...], list[Endpoint]] = {}
    for key in sorted(state.pods):
        pod = state.pods[key]
        if not pod.pod_ip and not pod.host_network:
            continue  # no address yet: it can neither send nor receive
        ep = pod_endpoint(state, pod)
        if ep.kind == "node":
            class_key: tuple[Any, ...] = (NODE, "", ep.node, atom(ep.ip))
        else:
            labels = pod.labels
            projected = tuple((k, labels[k]) for k in key_list if k in labels)
            ports = tuple(pod.named_port(n, proto) or -1 for n, proto in named_list)
            class_key = (POD, pod.namespace, projected, ports, atom(ep.ip))
        groups.setdefault(class_key, []).append(ep)

    if external and ranges:
        net_lo, net_hi = int(pod_net.network_address), int(pod_net.broadcast_address) + 1
        for i in range(len(bounds) - 1):
            lo, hi = bounds[i], bounds[i + 1]
            if net_lo <= lo and hi <= net_hi:
                continue
            name = _atom_name(lo, hi)
            groups[(EXTERNAL, "", lo, i)] = [Endpoint("external", name)]

    ordered = sorted(groups, key=lambda k: (k[0], k[1], repr(k[2:])))
    namespaces = sorted({k[1] for k in ordered if k[0] == POD} | {p.namespace for p in policies})
    ns_index = {ns: i for i, ns in enumerate(namespaces)}
    kind = np.array([k[0] for k in ordered], dtype=np.int8)
    ns_of = np.array([ns_index[k[1]] if k[0] == POD else -1 for k in ordered], dtype=np.int32)
    atom_of = np.array([k[-1] if k[0] != EXTERNAL else k[3] for k in ordered], dtype=np.int32)
    if not index.ctx.ipblocks_match_cluster:
        atom_of[kind != EXTERNAL] = -1
    ns_slices: dict[str, tuple[int, int]] = {}
    for i, k in enumerate(ordered):
        if k[0] == POD:
            lo, _ = ns_slices.get(k[1], (i, i))
            ns_slices[k[1]] = (lo, i + 1)
    named_arrays = {nk: np.array([k[3][j] if k[0] == POD else -1 for k in ordered], dtype=np.int64)
                    for j, nk in enumerate(named_list)}
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


# --- vectors over classes -------------------------------------------------------------


class _Vectors:
    """Cached boolean vectors over classes for selectors and peers."""

    def __init__(self, state: ClusterState, classes: Classes, index: PolicyIndex) -> None:
        self.state = state
        self.c = classes
        self.index = index
        self.n = classes.count
        self.pod_mask = classes.kind == POD
        self._sel: dict[Selector, np.ndarray] = {}
        self._ns: dict[Selector, np.ndarray] = {}
        self._peer: dict[tuple[Any, ...], np.ndarray] = {}
        self._ip: dict[Any, np.ndarray] = {}
        self._policy_sel: dict[tuple[str, Selector], np.ndarray] = {}

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
            ns_match = np.array([selector.matches(self.state.namespace_labels(ns)) for ns in self.c.namespaces]
                                + [False], dtype=bool)
            cached = ns_match[self.c.ns_of]  # ns_of == -1 picks the trailing False
            self._ns[selector] = cached
        return cached

    def ipblock(self, peer: Peer) -> np.ndarray:
        r = peer.ip_range
        cached = self._ip.get(r)
        if cached is not None:
            return cached
        v = np.zeros(self.n, dtype=bool)
        if r is not None and r.cidr.version == 4:
            bounds = self.c.ip_bounds
            match = np.array([r.contains(str(ipaddress.IPv4Address(bounds[i]))) for i in range(len(bounds) - 1)]
                             + [False], dtype=bool)
            v = match[self.c.atom_of]
            if not self.index.ctx.ipblocks_match_cluster:
                v = v & (self.c.kind == EXTERNAL)
        self._ip[r] = v
        return v

    def peer(self, peer: Peer) -> np.ndarray:
        key = (peer.kind, peer.namespace, peer.namespace_selector, peer.pod_selector, peer.ip_range, peer.entity)
        cached = self._peer.get(key)
        if cached is not None:
            return cached
        kind = self.c.kind
        if peer.kind == "ipblock":
            v = self.ipblock(peer)
        elif peer.kind == "entity":
            v = {"all": np.ones(self.n, dtype=bool), "world": kind == EXTERNAL, "cluster": kind != EXTERNAL,
                 "host": kind == NODE, "remote-node": kind == NODE}.get(peer.entity, np.zeros(self.n, dtype=bool))
        else:
            pods = self.pod_mask if peer.pod_selector is None else self.selector(peer.pod_selector)
            if peer.namespace_selector is not None:
                v = pods & self.namespaces(peer.namespace_selector)
            else:
                v = np.zeros(self.n, dtype=bool)
                lo, hi = self.c.ns_slices.get(peer.namespace or "", (0, 0))
                v[lo:hi] = pods[lo:hi]
        self._peer[key] = v
        return v

    def selected(self, policy: Policy) -> np.ndarray:
        """Indices of the classes ``policy`` selects (pods of its namespace only)."""
        key = (policy.namespace, policy.selector)
        cached = self._policy_sel.get(key)
        if cached is None:
            lo, hi = self.c.ns_slices.get(policy.namespace, (0, 0))
            cached = np.nonzero(self.selector(policy.selector)[lo:hi])[0] + lo
            self._policy_sel[key] = cached
        return cached


def _port_match(rule: Rule, protocol: str, port: int, c: Classes) -> bool | np.ndarray:
    """Does ``rule`` name ``protocol/port``: a scalar, or per destination class when a named port decides."""
    if rule.ports is None:
        return True
    if protocol == OTHER:
        return False
    result: bool | np.ndarray = False
    for p in rule.ports:
        if protocol not in p.protocols():
            continue
        if p.port is None:
            return True
        if isinstance(p.port, int):
            end = p.end_port if p.end_port is not None else p.port
            if p.port <= port <= end:
                return True
        else:
            numbers = c.named.get((p.port, protocol))
            if numbers is not None:
                result = result | (numbers == port)
    return result


def _rule_vector(vectors: _Vectors, rule: Rule) -> np.ndarray:
    """The peer classes ``rule`` matches."""
    if rule.peers is None:
        v = np.ones(vectors.n, dtype=bool)
    elif len(rule.peers) == 1:
        v = vectors.peer(rule.peers[0])  # shared with the cache: callers never write into it
    else:
        v = np.zeros(vectors.n, dtype=bool)
        for peer in rule.peers:
            v |= vectors.peer(peer)
    return v


@dataclass
class _Prepared:
    """Per policy, once: the classes it selects and each rule's peer vector (the port does not change them)."""

    n: int
    pod_rows: np.ndarray
    policies: list[tuple[np.ndarray, list[tuple[Rule, np.ndarray]] | None, list[tuple[Rule, np.ndarray]] | None]]


def prepare(state: ClusterState, classes: Classes, index: PolicyIndex | None = None) -> _Prepared:
    index = index or policy_index(state)
    vectors = _Vectors(state, classes, index)
    out = []
    for policy in index.policies:
        sel = vectors.selected(policy)
        if not len(sel):
            continue
        directions = []
        for rules in (policy.egress, policy.ingress):
            if rules is None:
                directions.append(None)
                continue
            directions.append([(rule, _rule_vector(vectors, rule)) for rule in rules])
        out.append((sel, directions[0], directions[1]))
    return _Prepared(classes.count, classes.kind == POD, out)


def class_matrix(state: ClusterState, classes: Classes, protocol: str, port: int,
                 index: PolicyIndex | None = None, prepared: _Prepared | None = None) -> np.ndarray:
    """``allowed[s, d]`` over classes for one ``protocol/port`` (``OTHER``, 0 for the non-port protocols)."""
    prepared = prepared or prepare(state, classes, index)
    n = prepared.n
    egress = np.zeros((n, n), dtype=bool)
    ingress_t = np.zeros((n, n), dtype=bool)  # [dst, src]
    iso_e = np.zeros(n, dtype=bool)
    iso_i = np.zeros(n, dtype=bool)
    for sel, egress_rules, ingress_rules in prepared.policies:
        if egress_rules is not None:
            iso_e[sel] = True
            acc = None
            for rule, peers in egress_rules:
                pm = _port_match(rule, protocol, port, classes)
                if pm is False:
                    continue
                rv = peers & pm if isinstance(pm, np.ndarray) else peers
                acc = rv.copy() if acc is None else np.logical_or(acc, rv, out=acc)
            if acc is not None:
                egress[sel] |= acc
        if ingress_rules is not None:
            iso_i[sel] = True
            acc = None
            for rule, peers in ingress_rules:
                pm = _port_match(rule, protocol, port, classes)
                if pm is False:
                    continue
                if isinstance(pm, np.ndarray):
                    rows = sel[pm[sel]]
                    if len(rows):
                        ingress_t[rows] |= peers
                else:
                    acc = peers.copy() if acc is None else np.logical_or(acc, peers, out=acc)
            if acc is not None:
                ingress_t[sel] |= acc
    egress[~(iso_e & prepared.pod_rows)] = True
    ingress_t[~(iso_i & prepared.pod_rows)] = True
    return egress & ingress_t.T


# --- port atoms -----------------------------------------------------------------------


def port_atoms(index: PolicyIndex, classes: Classes) -> list[tuple[str, int, int]]:
    """Maximal (protocol, lo, hi) ranges that no rule tells apart, plus (OTHER, 0, 0)."""
    cuts: dict[str, set[int]] = {p: {1, 65536} for p in PROTOCOLS}
    for policy in index.policies:
        for direction in ("ingress", "egress"):
            for rule in policy.rules(direction) or ():
                for p in rule.ports or ():
                    for proto in p.protocols():
                        if p.port is None:
                            continue
                        if isinstance(p.port, int):
                            cuts[proto].update((p.port, (p.end_port or p.port) + 1))
                        else:
                            numbers = classes.named.get((p.port, proto))
                            if numbers is not None:
                                for number in np.unique(numbers[numbers > 0]).tolist():
                                    cuts[proto].update((number, number + 1))
    atoms = []
    for proto in sorted(PROTOCOLS):
        points = sorted(cuts[proto])
        atoms += [(proto, points[i], points[i + 1] - 1) for i in range(len(points) - 1)]
    atoms.append((OTHER, 0, 0))
    return atoms


def atoms_to_connset(atoms: Sequence[tuple[str, int, int]], bits: Sequence[bool]) -> ConnSet:
    by_proto: dict[str, list[tuple[int, int]]] = {}
    other = False
    for (proto, lo, hi), on in zip(atoms, bits, strict=True):
        if not on:
            continue
        if proto == OTHER:
            other = True
        else:
            by_proto.setdefault(proto, []).append((lo, hi))
    return ConnSet.of(by_proto, other)


def _atom_masks(atoms: Sequence[tuple[str, int, int]], classes: Classes) -> Any:
    """For each rule: its allowed atoms as an int64 bit mask, scalar or per destination class."""
    lookup = {(p, lo): k for k, (p, lo, hi) in enumerate(atoms) if lo == hi}
    every = (1 << len(atoms)) - 1

    def rule_mask(rule: Rule) -> int | np.ndarray:
        if rule.ports is None:
            return every
        scalar = 0
        vector: np.ndarray | None = None
        for p in rule.ports:
            for proto in p.protocols():
                if p.port is None or isinstance(p.port, int):
                    lo = 1 if p.port is None else p.port
                    hi = 65535 if p.port is None else (p.end_port if p.end_port is not None else p.port)
                    for k, (ap, alo, ahi) in enumerate(atoms):
                        if ap == proto and lo <= alo and ahi <= hi:
                            scalar |= 1 << k
                else:
                    numbers = classes.named.get((p.port, proto))
                    if numbers is None:
                        continue
                    bits = np.array([1 << lookup[(proto, int(x))] if x > 0 else 0 for x in numbers.tolist()],
                                    dtype=np.int64)
                    vector = bits if vector is None else vector | bits
        return scalar if vector is None else vector | scalar

    return rule_mask


def bits_matrix(classes: Classes, prepared: _Prepared, atoms: Sequence[tuple[str, int, int]]) -> np.ndarray:
    """``bits[s, d]``: bit k set when port atom k is allowed from class s to class d (at most 63 atoms).

    The same computation as ``class_matrix`` for every atom at once: a rule contributes its
    atom mask instead of a yes/no, so one pass over the policies does it.
    """
    if len(atoms) > 63:
        raise ValueError("more than 63 port atoms: use class_matrix per atom")
    n = prepared.n
    every = np.int64((1 << len(atoms)) - 1)
    rule_mask = _atom_masks(atoms, classes)
    egress = np.zeros((n, n), dtype=np.int64)
    ingress_t = np.zeros((n, n), dtype=np.int64)
    iso_e = np.zeros(n, dtype=bool)
    iso_i = np.zeros(n, dtype=bool)
    for sel, egress_rules, ingress_rules in prepared.policies:
        if egress_rules is not None:
            iso_e[sel] = True
            acc = np.zeros(n, dtype=np.int64)
            for rule, peers in egress_rules:
                mask = rule_mask(rule)
                if isinstance(mask, np.ndarray):
                    acc |= np.where(peers, mask, 0)
                elif mask:
                    acc[peers] |= mask
            if acc.any():
                egress[sel] |= acc
        if ingress_rules is not None:
            iso_i[sel] = True
            acc = np.zeros(n, dtype=np.int64)
            for rule, peers in ingress_rules:
                mask = rule_mask(rule)
                if isinstance(mask, np.ndarray):
                    for value in np.unique(mask[sel]).tolist():
                        rows = sel[mask[sel] == value]
                        if value:
                            ingress_t[rows] |= np.where(peers, np.int64(value), 0)
                elif mask:
                    acc[peers] |= mask
            if acc.any():
                ingress_t[sel] |= acc
    egress[~(iso_e & prepared.pod_rows)] = every
    ingress_t[~(iso_i & prepared.pod_rows)] = every
    return egress & ingress_t.T


# --- the full matrix ------------------------------------------------------------------


@dataclass
class Matrix:
    """Every ordered pair of ``endpoints`` (pods first, then external pieces) and what policy allows."""

    endpoints: list[Endpoint]
    classes: Classes
    class_of: np.ndarray  # endpoint index -> class index
    atoms: list[tuple[str, int, int]]
    patterns: np.ndarray  # [class, class] int64 pattern id
    pattern_sets: list[ConnSet]
    notes: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        return [e.name for e in self.endpoints]

    @property
    def pods(self) -> list[str]:
        return [e.name for e in self.endpoints if e.kind != "external"]

    def _override(self, i: int, j: int) -> ConnSet | None:
        a, b = self.endpoints[i], self.endpoints[j]
        if i == j:
            return ConnSet.all()  # a pod cannot block access to itself
        if (a.kind == "node" and b.kind == "pod" and a.node and a.node == b.node):
            return ConnSet.all()  # from the destination's own node
        return None

    def allowed(self, i: int, j: int) -> ConnSet:
        special = self._override(i, j)
        if special is not None:
            return special
        return self.pattern_sets[int(self.patterns[self.class_of[i], self.class_of[j]])]

    def allowed_between(self, src: str, dst: str) -> ConnSet:
        names = self.names
        return self.allowed(names.index(src), names.index(dst))

    def grid(self, protocol: str = "TCP", port: int = 80) -> np.ndarray:
        """``[i, j]``: may endpoint i open ``protocol/port`` to endpoint j."""
        on = np.array([s.contains(protocol, port) for s in self.pattern_sets], dtype=bool)
        g = on[self.patterns[np.ix_(self.class_of, self.class_of)]]
        for i, j in self._special_pairs():
            g[i, j] = True
        return g

    def _special_pairs(self) -> Iterable[tuple[int, int]]:
        for i in range(len(self.endpoints)):
            yield i, i
        by_node: dict[str, list[int]] = {}
        for j, e in enumerate(self.endpoints):
            if e.kind == "pod" and e.node:
                by_node.setdefault(e.node, []).append(j)
        for i, e in enumerate(self.endpoints):
            if e.kind == "node" and e.node:
                for j in by_node.get(e.node, ()):
                    yield i, j

    def connections(self) -> list[tuple[str, str, ConnSet]]:
        """Pairs with something allowed, sorted; self pairs and external-to-external pairs left out."""
        names = self.names
        external = np.array([e.kind == "external" for e in self.endpoints], dtype=bool)
        empty = {k for k, s in enumerate(self.pattern_sets) if s.is_empty}
        special = {(i, j) for i, j in self._special_pairs() if i != j}
        out = []
        pat = self.patterns[np.ix_(self.class_of, self.class_of)]
        nonempty = ~np.isin(pat, list(empty)) if empty else np.ones(pat.shape, dtype=bool)
        np.fill_diagonal(nonempty, False)
        nonempty &= ~(external[:, None] & external[None, :])
        for i, j in special:
            nonempty[i, j] = True
        for i, j in zip(*np.nonzero(nonempty), strict=True):
            out.append((names[i], names[j], self.allowed(int(i), int(j))))
        return out

    def to_dict(self) -> dict[str, Any]:
        """``{"pods": [...], "connections": [{"from", "to", "allowed"}]}`` as documented in docs/policy.md."""
        return {"pods": self.pods,
                "connections": [{"from": a, "to": b, "allowed": s.to_json()} for a, b, s in self.connections()]}


def matrix(state: ClusterState, namespace: str | None = None, *, external: bool = True,
           per_atom: bool = False) -> Matrix:
    """The full matrix; ``namespace`` keeps only that namespace's pods (policies everywhere still count).

    ``per_atom`` computes one port atom at a time (the path used beyond 63 atoms).
    """
    index = policy_index(state)
    classes = build_classes(state, index, external=external)
    prepared = prepare(state, classes, index)
    atoms = port_atoms(index, classes)
    n = classes.count
    words = (len(atoms) + 62) // 63
    if words == 1 and not per_atom:
        packed = bits_matrix(classes, prepared, atoms)[None]
    else:
        packed = np.zeros((words, n, n), dtype=np.int64)
        for k, (proto, lo, _hi) in enumerate(atoms):
            m = class_matrix(state, classes, proto, lo, index, prepared)
            packed[k // 63] |= m.astype(np.int64) << (k % 63)
    flat = packed.reshape(words, -1).T
    if words == 1:
        uniq1, inverse = np.unique(flat[:, 0], return_inverse=True)
        uniq = uniq1[:, None]
    else:
        uniq, inverse = np.unique(flat, axis=0, return_inverse=True)
    patterns = inverse.reshape(n, n)
    sets = []
    for row in uniq:
        bits = [bool((int(row[k // 63]) >> (k % 63)) & 1) for k in range(len(atoms))]
        sets.append(atoms_to_connset(atoms, bits))
    endpoints: list[Endpoint] = []
    class_of: list[int] = []
    for ci, members in enumerate(classes.members):
        for ep in members:
            if ep.kind != "external" and namespace and ep.pod is not None and ep.pod.namespace != namespace:
                continue
            endpoints.append(ep)
            class_of.append(ci)
    order = sorted(range(len(endpoints)), key=lambda i: (endpoints[i].kind == "external",
                                                         _sort_key(endpoints[i])))
    endpoints = [endpoints[i] for i in order]
    class_idx = np.array([class_of[i] for i in order], dtype=np.int64)
    from .engine import notes as index_notes

    return Matrix(endpoints, classes, class_idx, atoms, patterns, sets, index_notes(index, state))


def _sort_key(ep: Endpoint) -> tuple[Any, ...]:
    if ep.kind == "external":
        first = ep.ip.split("-")[0].split("/")[0]
        return (int(ipaddress.IPv4Address(first)),)
    return (ep.name,)


# --- one port at scale (bench/matrix.py) ----------------------------------------------


@dataclass(frozen=True)
class PortMatrixStats:
    pods: int
    classes: int
    pod_classes: int
    external_peers: int
    allowed_class_pairs: int
    allowed_pod_pairs: int  # ordered pairs of distinct pods

    def to_dict(self) -> dict[str, int]:
        return {"pods": self.pods, "classes": self.classes, "podClasses": self.pod_classes,
                "externalPeers": self.external_peers, "allowedClassPairs": self.allowed_class_pairs,
                "allowedPodPairs": self.allowed_pod_pairs}


def port_matrix(state: ClusterState, protocol: str = "TCP", port: int = 80,
                *, external: bool = False) -> tuple[Classes, np.ndarray, PortMatrixStats]:
    """Class-level matrix for one port plus the pod-pair count, without expanding to pods."""
    index = policy_index(state)
    classes = build_classes(state, index, external=external)
    allowed = class_matrix(state, classes, protocol, port, index)
    sizes = np.array([len(m) if k != EXTERNAL else 0 for m, k in zip(classes.members, classes.kind, strict=True)],
                     dtype=np.float64)
    total = 0.0
    step = 2048
    for lo in range(0, classes.count, step):
        total += float(sizes[lo:lo + step] @ (allowed[lo:lo + step].astype(np.float32) @ sizes.astype(np.float32)))
    diag = float((np.diagonal(allowed) * sizes).sum())
    stats = PortMatrixStats(int(sizes.sum()), classes.count, int((classes.kind == POD).sum()),
                            int((classes.kind == EXTERNAL).sum()), int(allowed.sum()), round(total - diag))
    return classes, allowed, stats


__all__ = ["FULL", "Classes", "Matrix", "PortMatrixStats", "build_classes", "class_matrix", "matrix", "port_atoms",
           "port_matrix"]
