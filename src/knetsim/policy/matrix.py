"""The connectivity matrix: what policy allows between workloads (or pods) and external address ranges.

The work is done over equivalence classes (``classes.py``), and its cost follows the answer,
not the pod count squared:

1. **Port atoms.** The port space is cut into *atoms*, maximal ranges no rule tells apart
   (per protocol, plus "other protocols"); a set of connections is a bit mask over them. A
   named port is resolved once per distinct name, as a vector of atoms over classes.
2. **Tiers, per direction.** Each tier answers, for every (subject, peer) class pair and
   atom, *accept*, *deny* or *pass to the next tier* (two masks: ``accept`` and
   ``decided``); the first tier that decides wins and what no tier decides is allowed.
   NetworkPolicy is one tier: a pod it isolates gets exactly what the selecting policies'
   rules allow, other pods pass. ClusterNetworkPolicy's admin and baseline tiers slot in
   around it (``Tier``), and a cell can then say which tier decided. On Calico, each of its tiers is
   one (``CalicoTier``: ordered Allow/Deny/Pass rules and the end-of-tier deny, per group of subject
   classes alike), over classes that Calico's selectors tell apart.
3. **Class pairs.** ``egress(src) & ingress(dst)`` row block by row block; only the pairs
   with something allowed are kept (sparse, sorted), each with a pattern id.
4. **Rows.** A row is a workload (``ns/name[Kind]``: Deployment, StatefulSet, DaemonSet,
   CronJob, Job, ReplicaSet, bare Pod) restricted to one class: replicas that policy treats
   alike are one row; a workload whose pods policy tells apart is split, and a note says
   why. With ``pods=True`` a row is a pod, and the pairs are produced one source at a
   time (``Matrix.blocks``), so memory stays flat however large the answer.

Two things hold per pod, not per class, and are applied on rows: a pod can always reach
itself, and a pod always accepts traffic from its own node (so from a hostNetwork pod on that
node). At workload level the second makes a cell *partly* allowed when only some of the
destination's pods share the source's node. ``engine.connections`` is the per-pair
reference all of this must equal (tests/policy/test_properties.py).
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from ..cluster.build import INVALID_KEPT
from ..cluster.state import ClusterState
from ..model.loader import BUILTIN
from ..model.objects import Pod
from .classes import EXTERNAL, NODE, POD, Classes, PreparedPolicy, Vectors, build_classes, prepare
from .cluster import ACCEPT, DENY, ClusterPolicy, ClusterRule
from .engine import PolicyIndex, caveat_notes, notes, policy_index
from .ports import PROTOCOLS, ConnSet
from .rules import EGRESS, INGRESS, Endpoint, RuleShape, address_key, service_account_of
from .tiers import NETWORK_POLICY_TIER, ORDER

OTHER = "OTHER"  # pseudo-protocol atom: what only a rule without ports allows
WORD_BITS = 64


# --- port atoms -----------------------------------------------------------------------


class Atom(NamedTuple):
    """Ports ``lo..hi`` of ``protocol`` that no rule tells apart (``(OTHER, 0, 0)``: every other protocol)."""

    protocol: str
    lo: int
    hi: int


def port_atoms(index: PolicyIndex, classes: Classes, extra_cuts: dict[str, set[int]] | None = None) -> list[Atom]:
    """Maximal (protocol, lo, hi) ranges that no rule tells apart, plus (OTHER, 0, 0); ``extra_cuts``: more
    boundaries per protocol (a CNI dialect's rules, which the index's policies do not hold)."""
    cuts: dict[str, set[int]] = {p: {1, 65536, *(extra_cuts or {}).get(p, ())} for p in PROTOCOLS}
    named: set[tuple[str, str]] = set()
    for policy in (*index.policies, *index.cluster):
        for direction in (INGRESS, EGRESS):
            for rule in policy.rules(direction) or ():
                for p in rule.ports or ():
                    for proto in p.protocols():
                        if p.port is None:
                            continue
                        if isinstance(p.port, int):
                            cuts[proto].update((p.port, (p.end_port or p.port) + 1))
                        else:
                            named.add((p.port, proto))
    for name, proto in sorted(named):  # once per name: ten thousand rules name a few ports
        numbers = classes.named.get((name, proto))
        if numbers is not None:
            for number in sorted(set(numbers[numbers > 0].tolist())):
                cuts[proto].update((number, number + 1))
    atoms = []
    for proto in sorted(PROTOCOLS):
        points = sorted(cuts[proto])
        atoms += [Atom(proto, points[i], points[i + 1] - 1) for i in range(len(points) - 1)]
    atoms.append(Atom(OTHER, 0, 0))
    return atoms


def atoms_to_connset(atoms: Sequence[Atom], bits: Sequence[bool]) -> ConnSet:
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


def _unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` of a 1-d array without its masked-array check, which imports numpy.ma (15 ms of a cold start)."""
    ordered = np.sort(values, kind="stable")  # callers join sorted runs, which timsort merges in linear time
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _dtype(bits: int) -> Any:
    return np.uint8 if bits <= 8 else np.uint16 if bits <= 16 else np.uint32 if bits <= 32 else np.uint64


@dataclass(frozen=True)
class AtomWord:
    """Atoms ``[start, stop)`` as bits of one unsigned integer (at most 64 atoms per word)."""

    start: int
    stop: int

    @property
    def dtype(self) -> Any:
        return _dtype(self.stop - self.start)

    @property
    def full(self) -> Any:
        return self.dtype((1 << (self.stop - self.start)) - 1) if self.stop - self.start < 64 \
            else np.uint64(0xFFFFFFFFFFFFFFFF)

    def span(self, lo: int, hi: int) -> int:
        """The bits of atoms ``[lo, hi)`` in this word."""
        lo, hi = max(lo, self.start), min(hi, self.stop)
        if lo >= hi:
            return 0
        return ((1 << (hi - self.start)) - 1) ^ ((1 << (lo - self.start)) - 1)


class AtomMasks:
    """What a rule's ports allow, as atom bits: a number, or one per class when a named port decides."""

    def __init__(self, atoms: Sequence[Atom], classes: Classes) -> None:
        self.atoms = atoms
        self.classes = classes
        self._lows: dict[str, tuple[int, list[int]]] = {}
        for i, (proto, lo, _hi) in enumerate(atoms):
            _, lows = self._lows.setdefault(proto, (i, []))
            lows.append(lo)
        self._named: dict[tuple[str, str], np.ndarray] = {}
        self._named_bits: dict[tuple[str, str, AtomWord], np.ndarray] = {}
        self._rules: dict[Any, int | np.ndarray] = {}
        self._by_rule: dict[int, tuple[RuleShape, int | np.ndarray]] = {}
        self._word: AtomWord | None = None

    def range_atoms(self, proto: str, lo: int, hi: int) -> tuple[int, int]:
        first, lows = self._lows[proto]
        # Every rule's bounds are cuts, so the atoms inside [lo, hi] are exactly those starting there.
        return first + bisect.bisect_left(lows, lo), first + bisect.bisect_right(lows, hi)

    def named_atoms(self, name: str, proto: str) -> np.ndarray:
        """Per class: the atom index of the port ``name`` resolves to there, -1 where it resolves to none."""
        key = (name, proto)
        cached = self._named.get(key)
        if cached is None:
            numbers = self.classes.named.get(key)
            if numbers is None:
                cached = np.full(self.classes.count, -1, dtype=np.int64)
            else:
                first, lows = self._lows[proto]
                found = np.searchsorted(np.array(lows, dtype=np.int64), numbers, side="right") - 1 + first
                cached = np.where(numbers > 0, found, -1)
            self._named[key] = cached
        return cached

    def _named_word(self, name: str, proto: str, word: AtomWord) -> np.ndarray:
        key = (name, proto, word)
        cached = self._named_bits.get(key)
        if cached is None:
            idx = self.named_atoms(name, proto)
            inside = (idx >= word.start) & (idx < word.stop)
            shift = np.where(inside, idx - word.start, 0).astype(word.dtype)
            cached = np.where(inside, np.left_shift(word.dtype(1), shift), word.dtype(0))
            cached = cached.astype(word.dtype)
            self._named_bits[key] = cached
        return cached

    def rule(self, rule: RuleShape, word: AtomWord) -> int | np.ndarray:
        if word is not self._word and word != self._word:
            # One word at a time (class_pairs): a cache across words holds a vector per named-port rule per word.
            self._rules.clear()
            self._named_bits.clear()
            self._by_rule.clear()
            self._word = word
        # First by the rule object (kept alive here, so its id is its own): policies share their Rules
        # (rules.SharedRules) and hashing a ports tuple of dataclasses, 44,000 times at 10,000 policies, cost more.
        by_rule = self._by_rule.get(id(rule))
        if by_rule is not None:
            return by_rule[1]
        out = self._rule(rule, word)
        self._by_rule[id(rule)] = (rule, out)
        return out

    def _rule(self, rule: RuleShape, word: AtomWord) -> int | np.ndarray:
        try:
            key: Any = (rule.ports, word)  # rules with the same ports share their atoms (and their vector)
            cached = self._rules.get(key)
        except TypeError:
            key = (id(rule), word)
            cached = self._rules.get(key)
        if cached is not None:
            return cached
        if rule.ports is None:
            out: int | np.ndarray = int(word.full)
        else:
            scalar = 0
            vector: np.ndarray | None = None
            for p in rule.ports:
                for proto in p.protocols():
                    if p.port is None or isinstance(p.port, int):
                        lo = 1 if p.port is None else p.port
                        hi = 65535 if p.port is None else (p.end_port if p.end_port is not None else p.port)
                        scalar |= word.span(*self.range_atoms(proto, lo, hi))
                    else:
                        bits = self._named_word(p.port, proto, word)
                        vector = bits if vector is None else vector | bits
            out = scalar if vector is None else vector | word.dtype(scalar)
        self._rules[key] = out
        return out


# --- tiers ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TierMasks:
    """One tier's answer for one direction: ``[subject, peer]`` atom bits it accepts, and those it decides.

    ``decided`` may be ``[subject, 1]`` (a whole row decided, as NetworkPolicy isolation is);
    bits in ``decided`` but not in ``accept`` are denied; the rest pass to the next tier.
    With ``rows`` the arrays hold one row per *group* of subjects and ``rows[subject]`` names its
    row: a ClusterNetworkPolicy tier answers alike for every class its policies select alike,
    and n x n copies of a few hundred distinct rows would cost gigabytes at 10,000 classes.
    """

    accept: np.ndarray
    decided: np.ndarray
    rows: np.ndarray | None = None  # row 0 is all zero: the classes no policy of the tier selects


class Tier(Protocol):
    """A tier of the policy pipeline over classes (NetworkPolicy today; ClusterNetworkPolicy's admin and
    baseline tiers sit before and after it)."""

    name: str

    def masks(self, direction: str, word: AtomWord) -> TierMasks: ...


class NetworkPolicyTier:
    """networking.k8s.io/v1 (and, on ebpf, CiliumNetworkPolicy): isolated pods get the union of the rules."""

    name = NETWORK_POLICY_TIER

    def __init__(self, classes: Classes, policies: Sequence[PreparedPolicy], masks: AtomMasks) -> None:
        self.classes = classes
        self.policies = policies
        self.atom_masks = masks

    def masks(self, direction: str, word: AtomWord) -> TierMasks:
        n = self.classes.count
        dt = word.dtype
        accept = np.zeros((n, n), dtype=dt)
        isolated = np.zeros(n, dtype=bool)
        for prepared in self.policies:
            rules = prepared.rules(direction)
            if rules is None:
                continue
            sel = prepared.selected
            isolated[sel] = True
            acc = np.zeros(n, dtype=dt)
            for rule, peers in rules:
                mask = self.atom_masks.rule(rule, word)
                if isinstance(mask, int):
                    if mask:
                        acc[peers] |= dt(mask)
                elif direction == EGRESS:
                    acc[peers] |= mask[peers]  # a named port resolves on the peer (the destination)
                else:
                    # ...and for ingress on the subject: one row block per distinct resolution. ``peers`` is a
                    # boolean vector or the peers' indices (CalicoKubernetesRows keeps ten thousand of them small).
                    row_masks = mask[sel]
                    for value in sorted(set(row_masks.tolist())):
                        if value:
                            accept[np.ix_(sel[row_masks == value], _indices(peers))] |= dt(value)
            if acc.any():
                accept[sel] |= acc
        isolated &= self.classes.kind == POD
        decided = np.where(isolated, word.full, dt(0)).astype(dt)[:, None]
        return TierMasks(accept, decided)


def _indices(peers: np.ndarray) -> np.ndarray:
    return np.nonzero(peers)[0] if peers.dtype == bool else peers


class ClusterPolicyTier:
    """A ClusterNetworkPolicy tier (Admin or Baseline; v1alpha1 ANP/BANP alike) over classes.

    Per subject class: the rules of the policies that select it, policy by policy in order
    (priority, then name), rule by rule as written; the first rule matching a (peer, atom)
    decides it (Accept, Deny), or hands it to the next tier (Pass); what no rule matches passes
    too. Classes selected by the same policies (and, for ingress, with the same numbers for the
    named ports those rules use) get one row, computed once as vectors over the peers.
    """

    def __init__(self, name: str, classes: Classes, vectors: Vectors, policies: Sequence[ClusterPolicy],
                 masks: AtomMasks) -> None:
        self.name = name
        self.classes = classes
        self.atom_masks = masks
        self.policies: list[tuple[ClusterPolicy, np.ndarray, dict[str, list[tuple[ClusterRule, np.ndarray]]]]] = []
        for policy in policies:
            subject = vectors.subject(policy)
            if not subject.any():
                continue
            rules = {d: [(r, vectors.rule(r)) for r in policy.rules(d)] for d in (EGRESS, INGRESS)}
            self.policies.append((policy, subject, rules))

    def masks(self, direction: str, word: AtomWord) -> TierMasks:
        n = self.classes.count
        dt = word.dtype
        chosen = [(subject, rules[direction]) for _, subject, rules in self.policies if rules[direction]]
        # A subject class's row depends on which policies select it and, for ingress, on the numbers the
        # named ports of their rules resolve to on it: classes with the same signature share one row.
        signatures: list[list[Any]] = [[] for _ in range(n)]
        for k, (subject, rules) in enumerate(chosen):
            idx = np.nonzero(subject)[0].tolist()
            for c in idx:
                signatures[c].append(k)
            if direction != INGRESS:
                continue
            for r, (rule, _) in enumerate(rules):
                mask = self.atom_masks.rule(rule, word)
                if not isinstance(mask, int):
                    for c in idx:
                        signatures[c].append((k, r, int(mask[c])))
        rows = np.zeros(n, dtype=np.int64)
        groups: dict[tuple[Any, ...], int] = {(): 0}  # row 0: classes no policy of the tier selects
        for c, signature in enumerate(signatures):
            if signature:
                rows[c] = groups.setdefault(tuple(signature), len(groups))
        accept = np.zeros((len(groups), n), dtype=dt)
        decided = np.zeros((len(groups), n), dtype=dt)
        # Rules repeat their peers and ports across policies (a thousand policies, a handful of shapes):
        # one vector per distinct (peers, ports), not per rule, or they alone would take gigabytes.
        cache: dict[tuple[int, Any], np.ndarray] = {}
        for signature, g in groups.items():
            if not signature:
                continue
            resolved = {(item[0], item[1]): item[2] for item in signature if isinstance(item, tuple)}
            taken = np.zeros(n, dtype=dt)
            acc, dec = accept[g], decided[g]
            for k in (item for item in signature if isinstance(item, int)):
                for r, (rule, peers) in enumerate(chosen[k][1]):
                    if (k, r) in resolved:
                        value = resolved[(k, r)]  # ingress: the named port resolves on the subject
                        if not value:
                            continue
                        hit = np.where(peers, dt(value), dt(0))
                    else:
                        mask = self.atom_masks.rule(rule, word)
                        key = (id(peers), mask if isinstance(mask, int) else id(mask))
                        hit = cache.get(key)
                        if hit is None:
                            # egress: a named port resolves on the peer, the destination
                            hit = np.where(peers, dt(mask) if isinstance(mask, int) else mask, dt(0)).astype(dt)
                            cache[key] = hit
                    hit = hit & ~taken
                    if rule.action == ACCEPT:
                        acc |= hit
                    if rule.action in (ACCEPT, DENY):
                        dec |= hit
                    taken |= hit
        return TierMasks(accept, decided, rows)


# --- Calico's tiers -------------------------------------------------------------------------


def _connset_bits(conn: ConnSet, atoms: Sequence[Atom], word: AtomWord) -> int:
    """The atoms of ``word`` inside ``conn`` (atoms are cut finer than any set a rule names: one port decides)."""
    bits = 0
    for i in range(word.start, word.stop):
        proto, lo, _ = atoms[i]
        if conn.other if proto == OTHER else conn.contains(proto, lo):
            bits |= 1 << (i - word.start)
    return bits


def _bits_and(a: int | np.ndarray, b: int | np.ndarray, word: AtomWord) -> int | np.ndarray:
    if isinstance(a, int) and isinstance(b, int):
        return a & b
    return np.bitwise_and(a if not isinstance(a, int) else word.dtype(a),
                          b if not isinstance(b, int) else word.dtype(b))


class CalicoRuleMasks:
    """What a Calico rule's protocol and destination ports match (``evaluate.rule_set`` but its source and
    destination identities), as atom bits: a number, or one per destination class where a named port decides."""

    def __init__(self, atoms: Sequence[Atom], atom_masks: AtomMasks, vectors: Any) -> None:
        self.atoms = atoms
        self.atom_masks = atom_masks
        self.vectors = vectors  # calico.vectors.CalicoVectors
        self._rules: dict[tuple[Any, ...], int | np.ndarray] = {}
        self._by_rule: dict[tuple[int, int], tuple[Any, int | np.ndarray]] = {}

    def _named_bits(self, name: str, proto: str, word: AtomWord) -> np.ndarray:
        numbers = self.vectors.named_port(name, proto)
        first, lows = self.atom_masks._lows[proto]
        idx = np.searchsorted(np.array(lows, dtype=np.int64), numbers, side="right") - 1 + first
        idx = np.where(numbers > 0, idx, -1)
        inside = (idx >= word.start) & (idx < word.stop)
        shift = np.where(inside, idx - word.start, 0).astype(word.dtype)
        return np.where(inside, np.left_shift(word.dtype(1), shift), word.dtype(0)).astype(word.dtype)

    def _ports(self, specs: Sequence[Any], protocols: Sequence[str], word: AtomWord) -> int | np.ndarray:
        scalar = 0
        vector: np.ndarray | None = None
        for proto in protocols:
            for spec in specs:
                if spec.name:  # resolves on the destination: nothing where it is no pod or has no such port
                    bits = self._named_bits(spec.name, proto, word)
                    vector = bits if vector is None else vector | bits
                elif spec.hi >= 1:
                    scalar |= word.span(*self.atom_masks.range_atoms(proto, max(spec.lo, 1), spec.hi))
        return scalar if vector is None else vector | word.dtype(scalar)

    def rule(self, rule: Any, word: AtomWord) -> int | np.ndarray:
        # First by the rule object (kept in the entry, so its id stays its own): policies share one CalicoRule per
        # distinct rule, and the key below hashes tuples of dataclasses.
        by_rule = self._by_rule.get((id(rule), word.start))
        if by_rule is not None:
            return by_rule[1]
        out = self._rule(rule, word)
        self._by_rule[(id(rule), word.start)] = (rule, out)
        return out

    def _rule(self, rule: Any, word: AtomWord) -> int | np.ndarray:
        # By what decides the bits, not by rule: a thousand policies repeat a handful of rule shapes.
        key = (rule.protocol, rule.not_protocol, rule.destination.ports, rule.destination.not_ports, word)
        found = self._rules.get(key)
        if found is not None:
            return found
        from .calico.evaluate import _protocols

        out: int | np.ndarray = _connset_bits(_protocols(rule), self.atoms, word)
        protocols = [p for p in PROTOCOLS if rule.protocol == p]
        if rule.destination.ports is not None:
            out = _bits_and(out, self._ports(rule.destination.ports, protocols, word), word)
        if rule.destination.not_ports:
            excluded = self._ports(rule.destination.not_ports, protocols, word)
            out = _bits_and(out, ~excluded if not isinstance(excluded, int) else int(word.full) & ~excluded, word)
        self._rules[key] = out
        return out


def calico_port_cuts(index: PolicyIndex, vectors: Any) -> dict[str, set[int]]:
    """The port boundaries of Calico's rules (destination ports and notPorts, named ports as they resolve)."""
    assert index.calico is not None
    cuts: dict[str, set[int]] = {p: set() for p in PROTOCOLS}
    for policies in index.calico.policies.values():
        for policy in policies:
            for rule in (*policy.ingress, *policy.egress):
                for proto in (p for p in PROTOCOLS if rule.protocol == p):
                    for spec in (*(rule.destination.ports or ()), *rule.destination.not_ports):
                        if spec.name:
                            numbers = vectors.named_port(spec.name, proto)
                            for number in sorted(set(numbers[numbers > 0].tolist())):
                                cuts[proto].update((number, number + 1))
                        elif spec.hi >= 1:
                            cuts[proto].update((max(spec.lo, 1), spec.hi + 1))
    return cuts


HIT_CACHE_BYTES = 32 << 20  # CalicoTier.masks: hit vectors kept for the groups that follow, at most this much


class CalicoTier:
    """One of Calico's tiers over classes (``calico/evaluate.side_sets``, vectorised): per subject class, the
    tier's policies that select it in order, their rules in order, the first rule matching a (peer, atom)
    deciding it (Allow, Deny) or passing it on (Pass; Log rules match nothing); what no rule takes is the tier's
    defaultAction (the end-of-tier deny, or pass). A tier that selects a class says nothing about it.

    Subject classes alike under the tier (the same selecting policies, the same answer of each rule's side that
    is theirs, the same numbers for the named ports an ingress rule resolves on them) share one row, as in
    ``ClusterPolicyTier``. With ``kubernetes_apart`` (the default tier), the classes only Kubernetes
    NetworkPolicies select there are left to ``CalicoKubernetesRows``, which computes them as the NetworkPolicy
    tier does, policy by policy: they are most of a cluster, and a row per class the slow way would cost seconds.
    """

    def __init__(self, tier: Any, classes: Classes, vectors: Any, k8s_vectors: Vectors, atom_masks: AtomMasks,
                 rule_masks: CalicoRuleMasks, kubernetes_apart: bool) -> None:
        from .calico.evaluate import misses_clients

        assert vectors.index is not None
        self.tier = tier
        self.name = tier.name
        self.classes = classes
        self.vectors = vectors
        self.k8s_vectors = k8s_vectors
        self.atom_masks = atom_masks
        self.rule_masks = rule_masks
        self.kubernetes_apart = kubernetes_apart
        self.policies = vectors.index.policies.get(tier.name, ())
        # kube-admin and kube-baseline hold the ClusterNetworkPolicies of their tier beside any Calico policy there
        # (calico/evaluate._members).
        from .calico.evaluate import CLUSTER_TIER_OF

        cluster_tier = CLUSTER_TIER_OF.get(tier.name)
        self.cluster = [p for p in k8s_vectors.index.cluster if p.tier == cluster_tier] if cluster_tier else []
        self._general: dict[str, np.ndarray] = {}
        self._subjects: dict[str, list[tuple[Any, np.ndarray]]] = {}
        self._chosen_by_direction: dict[str, list[tuple[Any, np.ndarray]]] = {}
        self._k8s_selected: tuple[dict[int, np.ndarray], np.ndarray, np.ndarray] | None = None

        self._dead = misses_clients  # a rule no client connection matches (its source ports)
        self._everyone: dict[int, bool] = {}

    def subjects(self, direction: str) -> list[tuple[Any, np.ndarray]]:
        """The tier's policies for ``direction`` that select some class, in order, each with the classes (indices);
        with ``kubernetes_apart``, a Kubernetes NetworkPolicy only where it selects a class a Calico policy of the
        tier selects too (``kubernetes_touching``): the rest are ``CalicoKubernetesRows``'."""
        found = self._subjects.get(direction)
        if found is None:
            subject = self.vectors.subject
            if self.kubernetes_apart:
                # The default tier holds every Kubernetes NetworkPolicy (ten thousand at the bench) and ~200 of them
                # touch the classes computed here: a pair for each of the others, each direction, was ~0.03 s.
                touching = self.kubernetes_touching(direction)
                chosen = [(p, subject(p, direction) if p.k8s is None else touching[i])
                          for i, p in enumerate(self.policies) if p.k8s is None or i in touching]
            else:
                selected = self.k8s_vectors.selected
                chosen = [(p, subject(p, direction) if p.k8s is None or not p.applies(direction) else
                           selected(p.k8s)) for p in self.policies]
            if self.cluster:
                from .calico.evaluate import member_order

                chosen = sorted([*self._cluster_subjects(direction), *chosen], key=lambda item: member_order(item[0]))
            found = self._subjects[direction] = [(p, s) for p, s in chosen if len(s)]
        return found

    def _cluster_subjects(self, direction: str) -> list[tuple[Any, np.ndarray]]:
        return [(p, np.flatnonzero(self.k8s_vectors.subject(p))) for p in self.cluster if p.rules(direction)]

    def kubernetes_touching(self, direction: str) -> dict[int, np.ndarray]:
        """With ``kubernetes_apart``: the Kubernetes NetworkPolicies of the tier for ``direction`` that select a
        class of ``general`` (by their place in the tier's policies), each with the classes it selects."""
        if self._k8s_selected is None:
            # A Kubernetes NetworkPolicy selects by its podSelector in its namespace: the Kubernetes vectors answer
            # that by label columns (ten thousand of them asked pod by pod took a second). Both directions ask.
            selected = self.k8s_vectors.selected
            arrays = {i: selected(p.k8s) for i, p in enumerate(self.policies) if p.k8s is not None}
            owner = np.repeat(np.fromiter(arrays, dtype=np.int64, count=len(arrays)),
                              [len(a) for a in arrays.values()])
            flat = np.concatenate(list(arrays.values())) if arrays else np.zeros(0, dtype=np.int64)
            self._k8s_selected = (arrays, flat, owner)
        arrays, flat, owner = self._k8s_selected
        general = self.general(direction)
        policies = self.policies
        return {i: arrays[i] for i in _unique(owner[general[flat]]).tolist() if policies[i].applies(direction)}

    def general(self, direction: str) -> np.ndarray:
        """The classes this tier computes row by row: all it selects, or (``kubernetes_apart``) those a Calico
        policy of the tier selects."""
        found = self._general.get(direction)
        if found is None:
            found = np.zeros(self.classes.count, dtype=bool)
            if self.kubernetes_apart:
                # Not from ``subjects``, which asks this to leave out the Kubernetes NetworkPolicies touching none.
                subject = self.vectors.subject
                for policy in self.policies:
                    if policy.k8s is None:
                        found[subject(policy, direction)] = True
                for _, picked in self._cluster_subjects(direction):
                    found[picked] = True
            else:
                for _, picked in self.subjects(direction):
                    found[picked] = True
            self._general[direction] = found
        return found

    def _chosen(self, direction: str) -> list[tuple[Any, np.ndarray]]:
        """``subjects`` restricted to the classes computed row by row here (the same for every word)."""
        found = self._chosen_by_direction.get(direction)
        if found is None:
            subjects = self.subjects(direction)
            general = self.general(direction)
            touching = _touching(general, [s for _, s in subjects])
            found = [(subjects[k][0], subjects[k][1][general[subjects[k][1]]]) for k in touching]
            self._chosen_by_direction[direction] = found
        return found

    def _rule_parts(self, policy: Any, direction: str, word: AtomWord) -> list[tuple[str, Any, np.ndarray,
                                                                                  np.ndarray | None,
                                                                                  int | np.ndarray, int | None]]:
        """Per rule: (action, rule, peer-side classes, subject-side classes or None, atom bits, ipVersion)."""
        from .calico.model import ALLOW, LOG

        out = []
        if isinstance(policy, ClusterPolicy):
            from .calico.evaluate import CLUSTER_ACTION

            for rule in policy.rules(direction):
                out.append((CLUSTER_ACTION[rule.action], rule, self.k8s_vectors.rule(rule), None,
                            self.atom_masks.rule(rule, word), None))
            return out
        if policy.k8s is not None:
            for rule in policy.k8s.rules(direction) or ():
                out.append((ALLOW, rule, self.k8s_vectors.rule(rule), None, self.atom_masks.rule(rule, word), None))
            return out
        for rule in policy.rules(direction):
            if rule.action == LOG or self._dead(rule):
                continue
            peer_side, own_side = (rule.source, rule.destination) if direction == INGRESS else \
                (rule.destination, rule.source)
            own = self.vectors.entity(policy, own_side)
            # Whether the side is every class, once per vector (the vectors are CalicoVectors' cached ones, alive
            # while the tier is; 5,000 rules share a few dozen).
            everyone = self._everyone.get(id(own))
            if everyone is None:
                everyone = self._everyone[id(own)] = bool(own.all())
            out.append((rule.action, rule, self.vectors.entity(policy, peer_side), None if everyone else own,
                        self.rule_masks.rule(rule, word), rule.ip_version))
        return out

    def masks(self, direction: str, word: AtomWord, compact: bool = False) -> Any:
        from .calico.model import ALLOW
        from .calico.model import DENY as CALICO_DENY
        from .sparse_rows import GroupRowsBuilder, SparseTier

        n = self.classes.count
        dt = word.dtype
        full = word.full
        chosen = self._chosen(direction)
        parts = [self._rule_parts(p, direction, word) for p, _ in chosen]
        versions = self.vectors.versions
        any_version = any(part[5] is not None for rules in parts for part in rules)
        # A class's row depends on the policies that select it and on whatever of a rule is read on the class
        # itself (its own side's identity, the named port an ingress rule resolves on it, its address family).
        # Only the classes the tier computes get one (a few hundred of ten thousand): a dict, not a list per class.
        signatures: dict[int, list[Any]] = {}
        if any_version:
            for c in np.nonzero(self.general(direction))[0].tolist():
                signatures[c] = [("v", int(versions[c]))]
        for k, (_, subject) in enumerate(chosen):
            idx = subject.tolist()
            for c in idx:
                found = signatures.get(c)
                if found is None:
                    signatures[c] = [k]
                else:
                    found.append(k)
            for r, (_, _, _, own, bits, _) in enumerate(parts[k]):
                if own is not None:
                    for c in idx:
                        signatures[c].append((k, r, bool(own[c])))
                if direction == INGRESS and not isinstance(bits, int):
                    for c in idx:
                        signatures[c].append((k, r, int(bits[c])))
        rows = np.zeros(n, dtype=np.int64)
        groups: dict[tuple[Any, ...], int] = {(): 0}  # row 0: classes the tier leaves to others (all zero)
        first_of: list[int] = [-1]
        for c in sorted(signatures):
            g = groups.setdefault(tuple(signatures[c]), len(groups))
            if g == len(first_of):
                first_of.append(c)
            rows[c] = g
        # The rules each group applies, in order, each as (action, what its hit vector is made of): groups whose
        # lists are equal have equal rows (the same rules of policies alike over the same peers: at 10,000 pods,
        # 201 groups a tier for ~100 distinct lists), so they become one group, and class_pairs combines fewer.
        plans: list[list[tuple[str, tuple[Any, ...], np.ndarray, Any, Any]]] = []
        distinct: dict[tuple[Any, ...], int] = {}
        merged = np.zeros(len(groups), dtype=np.int64)
        for (signature, g), c0 in zip(list(groups.items())[1:], first_of[1:], strict=True):
            plan = []
            for k in (item for item in signature if isinstance(item, int)):
                for action, _rule, peers, own, bits, version in parts[k]:
                    if own is not None and not own[c0]:
                        continue
                    ok: Any = None  # the address family test, per peer (None: every peer passes it)
                    if version is not None:
                        if direction == INGRESS and versions[c0]:  # the destination's address decides
                            if versions[c0] != version:
                                continue
                        elif direction == INGRESS:
                            ok = (versions == version) | (versions == 0)
                        else:
                            own_ok = versions[c0] in (0, version)
                            ok = np.where(versions != 0, versions == version, own_ok)
                    value: Any
                    if isinstance(bits, int):
                        value = bits
                    elif direction == INGRESS:
                        value = int(bits[c0])  # a named port resolves on the destination: the subject
                    else:
                        value = bits
                    if isinstance(value, int) and not value:
                        continue
                    # What the hit vector is made of (the arrays are held by ``parts`` while this runs).
                    key = (id(peers), value if isinstance(value, int) else id(value), None if ok is None else
                           (direction, version, int(versions[c0])))
                    plan.append((action, key, peers, ok, value))
            steps = tuple((action, key) for action, key, _, _, _ in plan)
            found = distinct.get(steps)
            if found is None:
                found = distinct[steps] = len(plans) + 1
                plans.append(plan)
            merged[g] = found
        rows = merged[rows]
        # Compressed group rows (``sparse_rows.GroupRows``) for class_pairs; dense ones for deciding_tiers' callers.
        accepts = GroupRowsBuilder(n, dt, full) if compact else None
        decideds = GroupRowsBuilder(n, dt, full) if compact else None
        accept = np.zeros((1 if compact else len(plans) + 1, n), dtype=dt)
        decided = np.zeros((1 if compact else len(plans) + 1, n), dtype=dt)
        if accepts is not None and decideds is not None:
            accepts.add(accept[0])
            decideds.add(decided[0])
        cache: dict[tuple[Any, ...], np.ndarray] = {}
        # Plans repeat their rules' (peers, bits): the 10,000-pod bench computes ~3,000 hit vectors of 1,600
        # distinct ones. Compact rows are built to save memory, so there the cache has a budget of its own.
        cache_room = HIT_CACHE_BYTES // max(n * np.dtype(dt).itemsize, 1)
        zero = dt(0)
        for g, plan in enumerate(plans, start=1):
            if compact:
                acc, dec = np.zeros(n, dtype=dt), np.zeros(n, dtype=dt)
            else:
                acc, dec = accept[g], decided[g]
            taken: np.ndarray | None = None
            for action, key, peers, ok, value in plan:
                hit = cache.get(key)
                if hit is None:
                    where = peers if ok is None else peers & ok
                    if isinstance(value, int) and where.dtype == bool:
                        # A boolean vector times the bits: ~2.5 us over 9,000 classes, where np.where and the copy
                        # to the word's type took ~12 (1,600 hit vectors at 10,000 pods).
                        hit = where.astype(dt) * dt(value)
                    else:
                        hit = np.where(where, dt(value) if isinstance(value, int) else value, zero).astype(dt)
                    if not compact or len(cache) < cache_room:
                        cache[key] = hit
                if taken is not None:
                    hit = hit & ~taken
                if action == ALLOW:
                    acc |= hit
                if action in (ALLOW, CALICO_DENY):
                    dec |= hit
                taken = hit if taken is None else taken | hit
            if self.tier.default_action == CALICO_DENY:
                # The end-of-tier deny: what no rule of the selecting policies took. Within the word: ~taken alone
                # sets the bits above its atoms too, which no tier reads but which made a row of "nothing decided"
                # (400 of the 10,000-pod bench's 1,600 rows) anything but zero, so each was compressed around its
                # mode by a sort (0.05 s) where a zero row is a count.
                dec |= full if taken is None else ~taken & full
            if accepts is not None and decideds is not None:
                accepts.add(acc)
                decideds.add(dec)
        if accepts is not None and decideds is not None:
            return SparseTier(accepts.done(), decideds.done(), rows, np.zeros(0, np.int64), np.zeros(0, dt),
                              np.zeros(0, dt))
        return TierMasks(accept, decided, rows)

    def sparse_masks(self, direction: str, word: AtomWord) -> Any:
        """``masks`` as ``sparse_rows.SparseTier`` with compressed group rows."""
        return self.masks(direction, word, compact=True)


def _touching(mask: np.ndarray, index_sets: Sequence[np.ndarray]) -> list[int]:
    """Which of ``index_sets`` hold an index ``mask`` is True at, in one pass (ten thousand small numpy calls, one
    a policy, took seconds)."""
    if not index_sets:
        return []
    flat = np.concatenate(index_sets)
    owner = np.repeat(np.arange(len(index_sets)), [len(s) for s in index_sets])
    return _unique(owner[mask[flat]]).tolist()


class CalicoKubernetesRows:
    """The default tier's classes that only Kubernetes NetworkPolicies select there: an isolated class is allowed
    what some rule allows and, by the end-of-tier deny, denied the rest (``NetworkPolicyTier``'s answer); with the
    default tier's defaultAction set to Pass, the rest is passed on instead."""

    def __init__(self, tier: CalicoTier, prepared: Sequence[PreparedPolicy]) -> None:
        self.name = f"{tier.name} (Kubernetes NetworkPolicy)"
        self.tier = tier
        self.prepared = prepared
        self._by_direction: dict[str, list[PreparedPolicy]] = {}

    def _own(self, direction: str) -> list[PreparedPolicy]:
        """The policies isolating ``direction``, each restricted to the classes left to these rows."""
        import dataclasses

        found = self._by_direction.get(direction)
        if found is None:
            general = self.tier.general(direction)
            isolating = [p for p in self.prepared if p.rules(direction) is not None]
            # The tier found which of its Kubernetes NetworkPolicies touch its general classes (the same selections:
            # one Vectors answers both): asked by policy, not found again among ten thousand.
            policies = self.tier.policies
            touching = {id(policies[i].k8s) for i in self.tier.kubernetes_touching(direction)}
            found = []
            for prepared in isolating:
                if id(prepared.policy) in touching:
                    selected = prepared.selected[~general[prepared.selected]]
                    if len(selected):
                        found.append(dataclasses.replace(prepared, selected=selected))
                else:
                    found.append(prepared)
            self._by_direction[direction] = found
        return found

    def masks(self, direction: str, word: AtomWord) -> TierMasks:
        from .calico.model import DENY as CALICO_DENY

        answer = NetworkPolicyTier(self.tier.classes, self._own(direction), self.tier.atom_masks).masks(direction, word)
        if self.tier.tier.default_action == CALICO_DENY:
            return answer
        # defaultAction Pass: only what a rule allows is decided. The same array serves as both: combining takes
        # accept & undecided into accept in place, and undecided & ~(accept & undecided) is undecided & ~accept.
        return TierMasks(answer.accept, answer.accept)

    def sparse_masks(self, direction: str, word: AtomWord) -> Any:
        """``masks`` as ``sparse_rows.SparseTier``: two group rows (nothing; isolated: all denied) and a cell per
        (subject, peer) a rule allows something, so ten thousand subjects cost their rules' peers, not a row each."""
        from .calico.model import DENY as CALICO_DENY
        from .sparse_rows import SparseTier, or_reduce

        n = self.tier.classes.count
        dt = word.dtype
        isolates = self.tier.tier.default_action == CALICO_DENY
        rows = np.zeros(n, dtype=np.int64)
        # Every (subjects, peers, ports) of every rule, crossed in one vectorised pass: ten thousand policies' few
        # cells each, a handful of numpy calls apiece, took a second.
        subjects: list[np.ndarray] = []
        peer_lists: list[np.ndarray] = []
        scalars: list[int] = []
        vector_of: list[int] = []  # per item: which named-port vector gives its bits (-1: the scalar)
        vectors: dict[int, tuple[int, np.ndarray]] = {}
        isolated: list[np.ndarray] = []  # marked in one assignment: ten thousand small ones cost more
        # This loop runs once per rule of every Kubernetes policy (36,000 at 10,000 policies): lookups hoisted.
        rule_bits = self.tier.atom_masks.rule
        for prepared in self._own(direction):
            rules = prepared.ingress if direction == INGRESS else prepared.egress
            if rules is None:
                continue
            sel = prepared.selected
            if isolates:
                isolated.append(sel)
            if not len(sel):
                continue
            for rule, peers in rules:
                if peers.dtype == bool:
                    peers = np.flatnonzero(peers)
                if not len(peers):
                    continue
                mask = rule_bits(rule, word)
                if isinstance(mask, int):
                    if not mask:
                        continue
                    scalars.append(mask)
                    vector_of.append(-1)
                else:
                    scalars.append(0)
                    vector_of.append(vectors.setdefault(id(mask), (len(vectors), mask))[0])
                subjects.append(sel)
                peer_lists.append(peers)
        if isolated:
            rows[np.concatenate(isolated)] = 1
        if subjects:
            a = np.array([len(x) for x in subjects], dtype=np.int64)
            b = np.array([len(x) for x in peer_lists], dtype=np.int64)
            # One row per (item, subject) of its item's peers, subject-major: the rows repeated out, not a cell
            # index divided back into subject and peer (400,000 egress cells at 10,000 pods: the division and the
            # gathers it fed were half this crossing).
            row_item = np.repeat(np.arange(len(subjects)), a)
            row_len = b[row_item]
            total = int(row_len.sum())
            subject = np.repeat(np.concatenate(subjects).astype(np.int64), row_len)
            row_start = np.cumsum(row_len) - row_len
            peer_start = (np.cumsum(b) - b)[row_item]
            peer = np.concatenate(peer_lists).astype(np.int64)[
                np.arange(total, dtype=np.int64) - np.repeat(row_start - peer_start, row_len)]
            del row_start, peer_start
            bits = np.repeat(np.array(scalars, dtype=dt)[row_item], row_len)
            if vectors:
                which = np.repeat(np.array(vector_of, dtype=np.int64)[row_item], row_len)
                table = np.stack([v for _, v in sorted(vectors.values(), key=lambda kv: kv[0])]).astype(dt)
                named = which >= 0
                # A named port resolves on the destination: the peer on egress, the subject on ingress.
                target = peer if direction == EGRESS else subject
                at = which[named] * table.shape[1]  # flat positions: 2-d fancy indexing is ~10x slower
                at += target[named]
                bits[named] = table.reshape(-1)[at]
            cell_keys, cell_accept = or_reduce(subject * n + peer, bits)
        else:
            cell_keys, cell_accept = np.zeros(0, np.int64), np.zeros(0, dt)
        nonzero = cell_accept != 0
        cell_keys, cell_accept = cell_keys[nonzero], cell_accept[nonzero]
        accept = np.zeros((2, 1), dtype=dt)
        decided = np.array([[0], [word.full]], dtype=dt)
        # Isolated (the end-of-tier deny): what a rule allows is accepted, the rest denied; with Pass, only what a
        # rule allows is decided.
        cell_decided = np.full(len(cell_keys), word.full, dtype=dt) if isolates else cell_accept
        return SparseTier(accept, decided, rows, cell_keys, cell_accept, cell_decided)


def direction_allowed(tiers: Sequence[Tier], direction: str, word: AtomWord) -> np.ndarray:
    """``[subject, peer]`` atom bits allowed in ``direction``: the first tier that decides wins; default allow."""
    masks = [tier.masks(direction, word) for tier in tiers]
    if any(m.rows is not None for m in masks):
        return _grouped_allowed(masks, word)
    return _dense_allowed(masks, word)


def _dense_allowed(masks: Sequence[TierMasks], word: AtomWord) -> np.ndarray:
    allowed: np.ndarray | None = None
    undecided: Any = word.full
    for m in masks:
        # In place on the tier's own array: at 10,000 classes each n x n temporary is 200 MB and a pass.
        contribution = np.bitwise_and(m.accept, undecided, out=m.accept)
        allowed = contribution if allowed is None else np.bitwise_or(allowed, contribution, out=allowed)
        undecided = undecided & ~m.decided
    assert allowed is not None
    return np.bitwise_or(allowed, undecided, out=allowed)


TIER_BLOCK = 256  # subject rows combined at a time when a tier is grouped (bounds the temporaries)


def _grouped_allowed(masks: Sequence[TierMasks], word: AtomWord) -> np.ndarray:
    """``direction_allowed`` with ClusterNetworkPolicy tiers: rows no cluster policy selects (their group row
    is 0, all zero) are the dense tiers' answer, computed in place as without them; only the rows of the
    classes some cluster policy selects are combined tier by tier, from a copy of the dense tiers' rows,
    so memory stays one n x n array plus those rows."""
    n = next(len(m.rows) for m in masks if m.rows is not None)
    touched = np.zeros(n, dtype=bool)
    for m in masks:
        if m.rows is not None:
            touched |= m.rows != 0
    idx = np.nonzero(touched)[0]
    dense = [m for m in masks if m.rows is None]
    saved = {id(m): (m.accept[idx].copy() if m.accept.shape[0] == n else m.accept,
                     m.decided[idx].copy() if m.decided.shape[0] == n else m.decided) for m in dense}
    if dense and any(m.accept.shape == (n, n) for m in dense):
        out = _dense_allowed(dense, word)
    else:
        out = np.full((n, n), word.full, dtype=word.dtype)
    full = word.full
    for lo in range(0, len(idx), TIER_BLOCK):
        hi = min(lo + TIER_BLOCK, len(idx))
        rows = idx[lo:hi]
        allowed: Any = 0
        undecided: Any = full
        for m in masks:
            if m.rows is None:
                acc, dec = saved[id(m)]
                acc = acc[lo:hi] if acc.shape[0] == len(idx) else acc
                dec = dec[lo:hi] if dec.shape[0] == len(idx) else dec
            else:
                acc, dec = m.accept[m.rows[rows]], m.decided[m.rows[rows]]
            allowed = allowed | (acc & undecided)
            undecided = undecided & ~dec
        out[rows] = allowed | undecided
    return out


# --- class pairs ------------------------------------------------------------------------


@dataclass
class ClassPairs:
    """The class pairs with something allowed, sorted by (src, dst), each with a pattern id."""

    src: np.ndarray  # int64
    dst: np.ndarray
    pattern: np.ndarray
    patterns: list[ConnSet]
    n: int

    def __post_init__(self) -> None:
        self._keys = self.src * self.n + self.dst

    def lookup(self, s: int, d: int) -> int:
        """Pattern id of (s, d), -1 when nothing is allowed."""
        key = s * self.n + d
        i = int(np.searchsorted(self._keys, key))
        return int(self.pattern[i]) if i < len(self._keys) and self._keys[i] == key else -1

    def of_source(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = np.searchsorted(self.src, [s, s + 1])
        return self.dst[lo:hi], self.pattern[lo:hi]


EXPAND_AT_ONCE = 2_000_000  # Matrix._all_rows: cells of every row expanded in one pass (~50 MB of int64) at most
ROW_BLOCK = 1024  # source classes per block: bounds the dense temporaries to ROW_BLOCK x classes


def sparse_class_pairs(classes: Classes, tiers: Sequence[Any], atoms: Sequence[Atom],
                       word_bits: int = WORD_BITS) -> ClassPairs:
    """``class_pairs`` without a classes x classes array (``sparse_rows``): each tier gives group rows (and the cells
    that differ from them, ``sparse_masks``), so memory follows the distinct rows and the answer."""
    from .sparse_rows import combine, grouped, join

    n = classes.count
    first_external = int(np.searchsorted(classes.kind, EXTERNAL))
    words = [AtomWord(i, min(i + word_bits, len(atoms))) for i in range(0, len(atoms), word_bits)]
    found: list[tuple[np.ndarray, np.ndarray]] = []  # per word: (keys, values)
    for word in words:
        directions = []
        for direction in (EGRESS, INGRESS):
            sparse = []
            for tier in tiers:
                if hasattr(tier, "sparse_masks"):
                    sparse.append(tier.sparse_masks(direction, word))
                else:
                    m = tier.masks(direction, word)
                    sparse.append(grouped(m.accept, m.decided, m.rows, n))
            directions.append(combine(sparse, n, word.full, word.dtype))
        found.append(join(directions[0], directions[1], n, first_external))
    return _merge_words(found, words, atoms, n)


def class_pairs(classes: Classes, tiers: Sequence[Tier], atoms: Sequence[Atom],
                word_bits: int = WORD_BITS) -> ClassPairs:
    n = classes.count
    first_external = int(np.searchsorted(classes.kind, EXTERNAL))
    words = [AtomWord(i, min(i + word_bits, len(atoms))) for i in range(0, len(atoms), word_bits)]
    found: list[tuple[np.ndarray, np.ndarray]] = []  # per word: (keys, values)
    for word in words:
        egress = direction_allowed(tiers, EGRESS, word)  # [src, dst]
        ingress = direction_allowed(tiers, INGRESS, word)  # [dst, src]
        keys, values = [], []
        block = None
        for lo in range(0, n, ROW_BLOCK):
            hi = min(lo + ROW_BLOCK, n)
            block = np.bitwise_and(egress[lo:hi], ingress[:, lo:hi].T, out=egress[lo:hi])
            if first_external < hi:  # external classes sort last: two external ranges are not the cluster's
                block[max(first_external - lo, 0):, first_external:] = 0
            s, d = np.nonzero(block)
            keys.append((s + lo).astype(np.int64) * n + d)
            values.append(block[s, d])
        del egress, ingress, block  # the last block is a view: it would keep the whole egress array alive
        found.append((np.concatenate(keys) if keys else np.zeros(0, np.int64),
                      np.concatenate(values) if values else np.zeros(0, word.dtype)))
    return _merge_words(found, words, atoms, n)


def _merge_words(found: list[tuple[np.ndarray, np.ndarray]], words: Sequence[AtomWord], atoms: Sequence[Atom],
                 n: int) -> ClassPairs:
    """The pairs of every word (sorted keys ``src * n + dst`` and their bits) as one ClassPairs with patterns."""
    if len(found) == 1:
        keys, values = found[0]
        uniq, inverse = np.unique(values, return_inverse=True)
        rows = [(int(v),) for v in uniq.tolist()]
    elif len(atoms) <= 64:
        # Narrow words (a large cluster's dense arrays) that fit one 64-bit number together: one column, so the
        # patterns are a 1-d unique, not a row-wise one (seconds at a million pairs).
        # The first word in the highest bits: the patterns sort as the row-wise unique sorts them.
        shifts = [len(atoms) - w.stop for w in words]
        keys = _unique(np.concatenate([k for k, _ in found]))
        packed = np.zeros(len(keys), dtype=np.uint64)
        for shift, (k, v) in zip(shifts, found, strict=True):
            packed[np.searchsorted(keys, k)] |= v.astype(np.uint64) << np.uint64(shift)
        uniq, inverse = np.unique(packed, return_inverse=True)
        rows = [tuple((value >> shift) & ((1 << (w.stop - w.start)) - 1)
                      for w, shift in zip(words, shifts, strict=True)) for value in uniq.tolist()]
    else:
        keys = _unique(np.concatenate([k for k, _ in found]))
        table = np.zeros((len(keys), len(found)), dtype=np.uint64)
        for g, (k, v) in enumerate(found):
            table[np.searchsorted(keys, k), g] = v
        uniq2, inverse = np.unique(table, axis=0, return_inverse=True)
        rows = [tuple(int(x) for x in row) for row in uniq2.tolist()]
    inverse = np.asarray(inverse).reshape(-1)
    patterns = []
    for row_words in rows:
        bits = []
        for word, value in zip(words, row_words, strict=True):
            bits += [bool((value >> (k - word.start)) & 1) for k in range(word.start, word.stop)]
        patterns.append(atoms_to_connset(atoms, bits))
    return ClassPairs(keys // n if n else keys, keys % n if n else keys, inverse.astype(np.int64), patterns, n)


# --- rows ------------------------------------------------------------------------------


def is_system_pod(pod: Pod) -> bool:
    """A pod knetsim adds itself (CoreDNS, kindnet, kube-proxy, the control plane, ingress-nginx)."""
    return pod.source.file == BUILTIN.file


def workload_of(state: ClusterState, pod: Pod, cache: dict[tuple[str, str, str], tuple[str, str]]) -> tuple[str, str]:
    """(kind, name) of the object that owns ``pod`` at the top: a Deployment over its ReplicaSet, a CronJob
    over its Job; a pod nobody owns is its own workload."""
    owner = pod.meta.owner
    if owner is None:
        return ("Pod", pod.name)
    key = (pod.namespace, owner.kind, owner.name)
    found = cache.get(key)
    if found is None:
        found = (owner.kind, owner.name)
        parent_kind = {"ReplicaSet": "Deployment", "Job": "CronJob"}.get(owner.kind)
        if parent_kind:
            obj = state.workloads_without_status.get((owner.kind, f"{pod.namespace}/{owner.name}"))
            if obj is not None and obj.meta.owner is not None and obj.meta.owner.kind == parent_kind:
                found = (parent_kind, obj.meta.owner.name)
        cache[key] = found
    return found


@dataclass
class Rows:
    """The rows (= columns) of an answer, sorted by name with external ranges last."""

    names: list[str]
    class_of: np.ndarray  # int64 row -> class
    members: list[list[Endpoint]]
    namespaces: list[str]  # "" for external ranges and nodes
    kinds: list[str]  # workload kind, "Pod", or "external"
    split: dict[str, list[str]]  # workload -> its row names, when policy tells its pods apart

    def __len__(self) -> int:
        return len(self.names)

    def node_rows(self) -> set[int]:
        """Rows that stand for nodes (host-network endpoints), which an answer about workloads leaves out."""
        return {i for i, members in enumerate(self.members) if members[0].kind == "node"}


def _split_suffixes(classes: Classes, class_ids: list[int]) -> list[str]:
    """``{role=frontend}``, ``{port:http=8080}``, ``{node=worker}``: what tells a workload's classes apart."""
    keys = [classes.keys[c] for c in class_ids]
    parts: list[list[str]] = [[] for _ in keys]
    labels = [dict(k[2]) if k[0] == POD else {} for k in keys]
    for label in sorted({k for m in labels for k in m}):
        values = [m.get(label) for m in labels]
        if len(set(values)) > 1:
            for p, v in zip(parts, values, strict=True):
                p.append(f"{label}={v}" if v is not None else f"!{label}")
    ports = [dict(k[3]) if k[0] == POD else {} for k in keys]
    for name, proto in sorted({k for m in ports for k in m}):
        values = [m.get((name, proto)) for m in ports]
        if len(set(values)) > 1:
            for p, v in zip(parts, values, strict=True):
                p.append(f"port:{name}={v if v is not None else 'none'}")
    if len({k[0] for k in keys}) > 1 or any(k[0] == NODE for k in keys):
        for p, k in zip(parts, keys, strict=True):
            p.append(f"node={k[2]}" if k[0] == NODE else "podNetwork")
    atoms = [k[-1] for k in keys]
    if len(set(atoms)) > 1:
        for p, a in zip(parts, atoms, strict=True):
            p.append(f"ip={_atom_text(classes, a)}")
    out = ["{" + ",".join(p) + "}" for p in parts]
    if len(set(out)) < len(out):  # cannot happen for distinct classes, but names must stay unique
        out = [f"{o[:-1]},{i}}}" if o != "{}" else f"{{{i}}}" for i, o in enumerate(out)]
    return out


def _atom_text(classes: Classes, atom: int) -> str:
    if atom < 0:
        return "any"
    from .classes import atom_name

    return atom_name(classes.ip_bounds[atom], classes.ip_bounds[atom + 1])


def workload_rows(state: ClusterState, classes: Classes) -> tuple[Rows, list[str]]:
    cache: dict[tuple[str, str, str], tuple[str, str]] = {}
    by_workload: dict[tuple[str, str, str], dict[int, list[Endpoint]]] = {}
    externals: list[tuple[str, int]] = []
    for c, members in enumerate(classes.members):
        if classes.kind[c] == EXTERNAL:
            externals.append((members[0].name, c))
            continue
        for ep in members:
            assert ep.pod is not None
            kind, name = workload_of(state, ep.pod, cache)
            by_workload.setdefault((ep.pod.namespace, name, kind), {}).setdefault(c, []).append(ep)
    entries: list[tuple[str, int, list[Endpoint], str, str]] = []
    split: dict[str, list[str]] = {}
    row_notes = []
    for (namespace, name, kind), per_class in by_workload.items():
        base = f"{namespace}/{name}[{kind}]"
        class_ids = sorted(per_class)
        if len(class_ids) == 1:
            entries.append((base, class_ids[0], per_class[class_ids[0]], namespace, kind))
            continue
        names = [base + s for s in _split_suffixes(classes, class_ids)]
        for row_name, c in zip(names, class_ids, strict=True):
            entries.append((row_name, c, per_class[c], namespace, kind))
        split[base] = sorted(names)
        row_notes.append(f"{base} is {len(names)} rows: policy tells its pods apart "
                         f"({', '.join(n[len(base):] for n in sorted(names))})")
    entries.sort(key=lambda e: e[0])
    externals.sort(key=lambda e: classes.ip_bounds[classes.keys[e[1]][3]])
    names = [e[0] for e in entries] + [e[0] for e in externals]
    class_of = np.array([e[1] for e in entries] + [c for _, c in externals], dtype=np.int64)
    members = [e[2] for e in entries] + [classes.members[c] for _, c in externals]
    namespaces = [e[3] for e in entries] + ["" for _ in externals]
    kinds = [e[4] for e in entries] + ["external" for _ in externals]
    return Rows(names, class_of, members, namespaces, kinds, split), sorted(row_notes)


def pod_rows(classes: Classes) -> Rows:
    entries: list[tuple[str, int, Endpoint]] = []
    externals: list[tuple[int, int, Endpoint]] = []
    for c, members in enumerate(classes.members):
        if classes.kind[c] == EXTERNAL:
            externals.append((classes.ip_bounds[classes.keys[c][3]], c, members[0]))
        else:
            entries += [(ep.name, c, ep) for ep in members]
    entries.sort(key=lambda e: e[0])
    externals.sort(key=lambda e: e[0])
    names = [e[0] for e in entries] + [e[2].name for e in externals]
    class_of = np.array([e[1] for e in entries] + [e[1] for e in externals], dtype=np.int64)
    members = [[e[2]] for e in entries] + [[e[2]] for e in externals]
    namespaces = [e[2].pod.namespace if e[2].pod is not None else "" for e in entries] + ["" for _ in externals]
    kinds = ["Pod" for _ in entries] + ["external" for _ in externals]
    return Rows(names, class_of, members, namespaces, kinds, {})


# --- the answer -----------------------------------------------------------------------


@dataclass(frozen=True)
class Partly:
    """Some pod pairs of a workload cell are allowed more than the rest (the destination's own-node rule)."""

    allowed: ConnSet
    pairs: int
    of: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"allowed": self.allowed.to_json(), "pairs": self.pairs, "of": self.of, "reason": self.reason}


@dataclass
class Block:
    """The allowed pairs of one source row: destination rows (ascending) and their pattern ids."""

    src: int
    dst: np.ndarray
    pattern: np.ndarray
    partly: dict[int, Partly]  # destination row -> Partly (workload level only)


class Matrix:
    """What policy allows between every ordered pair of rows (workloads or pods, then external ranges)."""

    def __init__(self, state: ClusterState, classes: Classes, rows: Rows, pairs: ClassPairs,
                 atoms: list[Atom], level: str, notes: tuple[str, ...],
                 tiers: Sequence[Tier] = ()) -> None:
        self.state = state
        self.classes = classes
        self.rows = rows
        self.pairs = pairs
        self.atoms = atoms
        self.level = level
        self.notes = notes
        self.tiers = tuple(tiers)
        self._index = {name: i for i, name in enumerate(rows.names)}
        self.all_pattern = self._pattern_id(ConnSet.all())
        self._class_rows = self._rows_by_class()
        self._overrides = self._node_overrides()

    # --- lookups ---------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        return self.rows.names

    @property
    def patterns(self) -> list[ConnSet]:
        return self.pairs.patterns

    def _pattern_id(self, conn: ConnSet) -> int:
        try:
            return self.pairs.patterns.index(conn)
        except ValueError:
            self.pairs.patterns.append(conn)
            return len(self.pairs.patterns) - 1

    def _rows_by_class(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(self.rows.class_of, kind="stable")
        starts = np.searchsorted(self.rows.class_of[order], np.arange(self.classes.count + 1))
        return order, starts

    def rows_of_class(self, c: int) -> np.ndarray:
        order, starts = self._class_rows
        return order[starts[c]:starts[c + 1]]

    def index(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"{name} is not a row of this matrix") from None

    def _is_node_row(self, i: int) -> bool:
        return bool(self.classes.kind[self.rows.class_of[i]] == NODE)

    def cell(self, i: int, j: int) -> tuple[ConnSet, Partly | None]:
        """What is allowed from row ``i`` to row ``j`` (for every pod pair), and what only some pairs get."""
        ri, rj = self.rows.members[i], self.rows.members[j]
        if i == j and len(ri) == 1 and ri[0].kind != "external":
            return ConnSet.all(), None  # a pod cannot block access to itself
        if self.level == "pod" and ri[0].kind == "node" and rj[0].kind == "pod" and ri[0].node == rj[0].node:
            return ConnSet.all(), None  # a pod accepts everything from its own node
        override = self._overrides.get((i, j))
        if override is not None:
            pattern, partly = override
            return self.pairs.patterns[pattern] if pattern >= 0 else ConnSet.none(), partly
        p = self.pairs.lookup(int(self.rows.class_of[i]), int(self.rows.class_of[j]))
        return (self.pairs.patterns[p] if p >= 0 else ConnSet.none()), None

    def allowed(self, i: int, j: int) -> ConnSet:
        return self.cell(i, j)[0]

    # --- which tier decided --------------------------------------------------------

    def deciding_tiers(self, protocol: str, port: int) -> tuple[np.ndarray, np.ndarray]:
        """Per direction (egress, ingress), ``[subject class, peer class]``: the tier that decides ``protocol/port``,
        as ``k`` (accepted by ``self.tiers[k - 1]``), ``-k`` (denied by it) or 0 (no tier: allowed by default)."""
        atom = next((k for k, (proto, lo, hi) in enumerate(self.atoms) if proto == protocol and lo <= port <= hi),
                    None)
        n = self.classes.count
        if atom is None:
            raise ValueError(f"protocol {protocol!r}: supported values: {', '.join(PROTOCOLS)}")
        word = AtomWord(atom, atom + 1)
        out = []
        for direction in (EGRESS, INGRESS):
            codes = np.zeros((n, n), dtype=np.int8)
            undecided = np.ones((n, n), dtype=bool)
            for k, tier in enumerate(self.tiers, 1):
                m = tier.masks(direction, word)
                accept, decided = (m.accept, m.decided) if m.rows is None else (m.accept[m.rows], m.decided[m.rows])
                newly = undecided & (np.broadcast_to(decided, (n, n)) != 0)
                accepted = np.broadcast_to(accept, (n, n)) != 0
                codes[newly & accepted] = k
                codes[newly & ~accepted] = -k
                undecided &= ~newly
            out.append(codes)
        return out[0], out[1]

    def tier_of(self, codes: tuple[np.ndarray, np.ndarray], i: int, j: int) -> tuple[str, str]:
        """(egress, ingress) tier names for rows ``i`` -> ``j`` from ``deciding_tiers``: ``Admin``,
        ``NetworkPolicy``, ``Baseline`` or ``default``."""
        a, b = int(self.rows.class_of[i]), int(self.rows.class_of[j])
        names = ["default", *(t.name for t in self.tiers)]
        return names[abs(int(codes[0][a, b]))], names[abs(int(codes[1][b, a]))]

    def allowed_between(self, src: str, dst: str) -> ConnSet:
        return self.allowed(self.index(src), self.index(dst))

    # --- the per-pod rules ------------------------------------------------------

    def _node_overrides(self) -> dict[tuple[int, int], tuple[int, Partly | None]]:
        """A destination pod accepts everything from its own node: cells from hostNetwork rows to pods there."""
        out: dict[tuple[int, int], tuple[int, Partly | None]] = {}
        node_rows = [i for i in range(len(self.rows)) if self._is_node_row(i)]
        if not node_rows or self.level == "pod":
            return out
        on_node: dict[str, dict[int, int]] = {}
        for j, members in enumerate(self.rows.members):
            for ep in members:
                if ep.kind == "pod" and ep.node:
                    counts = on_node.setdefault(ep.node, {})
                    counts[j] = counts.get(j, 0) + 1
        for i in node_rows:
            node = self.rows.members[i][0].node
            for j, count in sorted(on_node.get(node, {}).items()):
                p = self.pairs.lookup(int(self.rows.class_of[i]), int(self.rows.class_of[j]))
                if p == self.all_pattern:
                    continue
                if p < 0:
                    p = self._pattern_id(ConnSet.none())  # only the pods on that node get anything
                total = len(self.rows.members[j])
                sources = len(self.rows.members[i])
                if count == total:
                    out[(i, j)] = (self.all_pattern, None)
                else:
                    reason = (f"{count} of {total} pods of {self.rows.names[j]} run on node {node}, and a pod always "
                              "accepts traffic from its own node")
                    out[(i, j)] = (p, Partly(ConnSet.all(), count * sources, total * sources, reason))
        return out

    # --- the pairs, one source row at a time -------------------------------------

    def blocks(self) -> Iterator[Block]:
        """Every row with something allowed, in row order: a pod's pair with itself and pairs of two external
        ranges left out; memory stays proportional to one row's answer."""
        if self.level == "pod":
            yield from self._pod_blocks()
        else:
            yield from self._workload_blocks()

    def _expand(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        """Destination rows (ascending) and patterns for source class ``s``."""
        dst_classes, patterns = self.pairs.of_source(s)
        if not len(dst_classes):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        order, starts = self._class_rows
        lo, hi = starts[dst_classes], starts[dst_classes + 1]
        sizes = hi - lo
        total = int(sizes.sum())
        # Concatenate order[lo_k:hi_k] for every k without a Python loop.
        offsets = np.repeat(lo - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
        rows = order[np.arange(total) + offsets]
        pats = np.repeat(patterns, sizes)
        sort = np.argsort(rows, kind="stable")
        return rows[sort], pats[sort]

    def _expander(self) -> Callable[[int], tuple[np.ndarray, np.ndarray]]:
        """``_expand`` with the last few source classes kept: rows of a class are mostly adjacent in name order,
        and a bounded cache keeps memory flat whatever the order."""
        cache: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()

        def expanded(s: int) -> tuple[np.ndarray, np.ndarray]:
            if s not in cache:
                cache[s] = self._expand(s)
                if len(cache) > 8:
                    cache.popitem(last=False)
            return cache[s]

        return expanded

    def _all_rows(self) -> tuple[list[int], np.ndarray, np.ndarray] | None:
        """Every row's destination rows (ascending) and patterns in one pass, as (per row its start, then the end;
        destination rows; patterns), a lone pod's or a range's pair with itself left out; None when that would be
        more than ``EXPAND_AT_ONCE`` cells. Row by row (``_expand``) is ~10 small numpy calls a row: 0.13 s of the
        10,000-pod bench's 0.21 s of JSON, for 150,000 cells."""
        order, starts = self._class_rows
        pairs, class_of = self.pairs, self.rows.class_of
        n_classes = self.classes.count
        sizes = starts[pairs.dst + 1] - starts[pairs.dst]  # rows of each destination class
        per_class = np.bincount(pairs.src, weights=sizes, minlength=n_classes).astype(np.int64)
        if int(per_class[class_of].sum()) > EXPAND_AT_ONCE:
            return None
        # Per source class, its destination classes' rows (sorted by class, then row: _expand's order).
        rows = order[np.arange(int(sizes.sum())) + np.repeat(starts[pairs.dst] - (np.cumsum(sizes) - sizes), sizes)]
        sources, patterns = np.repeat(pairs.src, sizes), np.repeat(pairs.pattern, sizes)
        sort = np.lexsort((rows, sources))
        rows, sources, patterns = rows[sort], sources[sort], patterns[sort]
        class_bounds = np.searchsorted(sources, np.arange(n_classes + 1))
        # Then per row, its class's cells.
        lo = class_bounds[class_of]
        counts = class_bounds[class_of + 1] - lo
        at = np.arange(int(counts.sum())) + np.repeat(lo - (np.cumsum(counts) - counts), counts)
        source_row = np.repeat(np.arange(len(class_of)), counts)
        dst, pat = rows[at], patterns[at]
        lone = np.array([len(m) < 2 or k == "external" for m, k in zip(self.rows.members, self.rows.kinds,
                                                                        strict=True)], dtype=bool)
        keep = ~(lone[source_row] & (dst == source_row))  # one pod (or a range) and itself: nothing to say
        dst, pat, source_row = dst[keep], pat[keep], source_row[keep]
        return np.searchsorted(source_row, np.arange(len(class_of) + 1)).tolist(), dst, pat

    def _workload_blocks(self) -> Iterator[Block]:
        by_source: dict[int, dict[int, tuple[int, Partly | None]]] = {}
        for (i, j), value in self._overrides.items():
            by_source.setdefault(i, {})[j] = value
        at_once = self._all_rows()
        expanded = self._expander()
        for i in range(len(self.rows)):
            if at_once is not None:
                bounds, all_dst, all_pat = at_once
                dst, pat = all_dst[bounds[i]:bounds[i + 1]], all_pat[bounds[i]:bounds[i + 1]]
            else:
                dst, pat = expanded(int(self.rows.class_of[i]))
                if len(self.rows.members[i]) < 2 or self.rows.kinds[i] == "external":
                    keep = dst != i  # one pod (or a range) and itself: nothing to say
                    dst, pat = dst[keep], pat[keep]
            partly: dict[int, Partly] = {}
            extra = by_source.get(i)
            if extra:
                cells = dict(zip(dst.tolist(), pat.tolist(), strict=True))
                for j, (p, part) in extra.items():
                    cells[j] = p
                    if part is not None:
                        partly[j] = part
                dst = np.array(sorted(cells), dtype=np.int64)
                pat = np.array([cells[j] for j in dst.tolist()], dtype=np.int64)
            if len(dst) or partly:
                yield Block(i, dst, pat, partly)

    def _pod_blocks(self) -> Iterator[Block]:
        local_rows: dict[str, list[int]] = {}
        for j, members in enumerate(self.rows.members):
            ep = members[0]
            if ep.kind == "pod" and ep.node:
                local_rows.setdefault(ep.node, []).append(j)
        by_node = {k: np.array(v, dtype=np.int64) for k, v in local_rows.items()}
        expanded = self._expander()
        for i in range(len(self.rows)):
            dst, pat = expanded(int(self.rows.class_of[i]))
            ep = self.rows.members[i][0]
            if ep.kind == "node" and ep.node in by_node:
                local = by_node[ep.node]
                keep = ~np.isin(dst, local)
                dst = np.concatenate((dst[keep], local))
                pat = np.concatenate((pat[keep], np.full(len(local), self.all_pattern, dtype=np.int64)))
                sort = np.argsort(dst, kind="stable")
                dst, pat = dst[sort], pat[sort]
            k = int(np.searchsorted(dst, i))
            if k < len(dst) and dst[k] == i:
                dst, pat = np.concatenate((dst[:k], dst[k + 1:])), np.concatenate((pat[:k], pat[k + 1:]))
            if len(dst):
                yield Block(i, dst, pat, {})

    def cells(self, skip: Container[int] = frozenset()) -> Iterator[tuple[int, int, ConnSet]]:
        """(source row, destination row, allowed) of the pairs with something allowed, in row order, as
        ``blocks`` has them; rows in ``skip`` left out on either side."""
        patterns = self.pairs.patterns
        for b in self.blocks():
            if b.src in skip:
                continue
            for j, p in zip(b.dst.tolist(), b.pattern.tolist(), strict=True):
                if j not in skip:
                    yield b.src, j, patterns[p]

    def connections(self) -> Iterator[tuple[str, str, ConnSet]]:
        """Pairs with something allowed, sorted; a pod's pair with itself and external pairs left out."""
        names = self.rows.names
        for i, j, allowed in self.cells():
            yield names[i], names[j], allowed

    def pair_count(self) -> int:
        return sum(len(b.dst) for b in self.blocks())

    def to_dict(self) -> dict[str, Any]:
        """The ``matrix -o json`` document (docs/policy.md); the CLI streams the same text."""
        key = "pods" if self.level == "pod" else "workloads"
        names, patterns = self.rows.names, self.pairs.patterns
        connections = []
        for b in self.blocks():
            for j, p in zip(b.dst.tolist(), b.pattern.tolist(), strict=True):
                item: dict[str, Any] = {"from": names[b.src], "to": names[j], "allowed": patterns[p].to_json()}
                if j in b.partly:
                    item["partly"] = b.partly[j].to_dict()
                connections.append(item)
        return {key: [n for n, k in zip(names, self.rows.kinds, strict=True) if k != "external"],
                "connections": connections, "notes": list(self.notes)}


def matrix(state: ClusterState, namespace: str | None = None, *, pods: bool = False, include_system: bool = False,
           external: bool = True, all_external: bool = False, word_bits: int = WORD_BITS) -> Matrix:
    """The answer per workload (``pods=True``: per pod); ``namespace`` keeps that namespace's rows (policies of
    every namespace still count); the pods knetsim adds itself are left out unless ``include_system``; external
    ranges are the pieces ipBlocks cut, and with ``all_external`` the addresses outside the pod network even
    where no ipBlock cuts them."""
    index = policy_index(state)
    wanted = [p for _, p in sorted(state.pods.items())
              if (include_system or not is_system_pod(p)) and (namespace is None or p.namespace == namespace)]
    members = [p for p in wanted if p.pod_ip or p.host_network]  # no address yet: it can neither send nor receive
    answer = _matrix(state, index, members, namespace, pods=pods, external=external, all_external=all_external,
                     word_bits=word_bits)
    answer.notes = (*answer.notes, *unaddressed_notes(state, [p for p in wanted if not (p.pod_ip or p.host_network)]))
    return answer


def unaddressed_notes(state: ClusterState, pods: list[Pod]) -> list[str]:
    """One note per reason for the pods left out of the answer because they have no address (Pending: not
    scheduled, or not started), naming their workloads: a full cluster must not read as a smaller one."""
    cache: dict[tuple[str, str, str], tuple[str, str]] = {}
    by_reason: dict[str, dict[str, int]] = {}
    for pod in pods:
        kind, name = workload_of(state, pod, cache)
        reason = pod.unschedulable() or f"phase {pod.phase}"
        counts = by_reason.setdefault(reason, {})
        workload = f"{pod.namespace}/{name}[{kind}]"
        counts[workload] = counts.get(workload, 0) + 1
    out = []
    for reason, counts in sorted(by_reason.items()):
        named = sorted(counts)
        shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
        total = sum(counts.values())
        out.append(f"left out: {total} pod{'s' if total != 1 else ''} with no address yet ({reason}), of "
                   f"{len(named)} workload{'s' if len(named) != 1 else ''}: {shown}")
    return out


def _matrix(state: ClusterState, index: PolicyIndex, members: list[Pod], namespace: str | None, *, pods: bool,
            external: bool, all_external: bool, word_bits: int) -> Matrix:
    if index.calico is not None or index.cilium is not None:
        return _calico_matrix(state, index, members, pods=pods, external=external, all_external=all_external,
                              word_bits=word_bits)
    if index.antrea is not None:
        return _antrea_matrix(state, index, members, pods=pods, external=external, all_external=all_external)
    classes = build_classes(state, index, members, external=external, all_external=all_external)
    vectors = Vectors(state, classes, index)
    atoms = port_atoms(index, classes)
    atom_masks = AtomMasks(atoms, classes)
    def tier(name: str) -> Tier | None:
        if name == NETWORK_POLICY_TIER:
            return NetworkPolicyTier(classes, prepare(vectors), atom_masks)
        policies = index.tier(name)
        return ClusterPolicyTier(name, classes, vectors, policies, atom_masks) if policies else None

    tiers = [t for t in map(tier, ORDER) if t is not None]
    pairs = class_pairs(classes, tiers, atoms, word_bits)
    if pods:
        rows, row_notes = pod_rows(classes), []
    else:
        rows, row_notes = workload_rows(state, classes)
    return Matrix(state, classes, rows, pairs, atoms, "pod" if pods else "workload",
                  (*notes(index, state), *caveat_notes(index), *row_notes, *invalid_kept(state)), tiers)


def _cni_identity(piece: Callable[[str], Any]) -> Callable[[Pod], Any]:
    """What makes two pods alike under Calico's or Antrea's tiers, whose peers may name a service account: their
    labels, account, named ports, and the piece of the address space (``piece``) their address falls in."""
    # The sorted labels per distinct label map (by its items, in their order): 10,000 pods of the bench hold 9.
    sorted_labels: dict[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = {}
    # The named ports per distinct list of container objects (kept in the entry, so their ids stay theirs): the pods
    # of one template share their Container views, 10,000 pods of the bench hold 18.
    named_ports: dict[tuple[int, ...], tuple[Any, tuple[tuple[str, str, int], ...]]] = {}

    def identity(pod: Pod) -> Any:
        containers = pod.containers
        by_ids = tuple(map(id, containers))
        found = named_ports.get(by_ids)
        if found is None:
            found = named_ports[by_ids] = (containers, tuple(sorted(
                (p.name, p.protocol, p.container_port) for c in containers for p in c.ports if p.name)))
        ports = found[1]
        items = tuple(pod.labels.items())
        labels = sorted_labels.get(items)
        if labels is None:
            labels = sorted_labels[items] = tuple(sorted(items))
        return (labels, service_account_of(pod), ports, piece(pod.pod_ip))
    return identity


def _calico_matrix(state: ClusterState, index: PolicyIndex, members: list[Pod], *, pods: bool, external: bool,
                   all_external: bool, word_bits: int = WORD_BITS, pairwise: bool = False) -> Matrix:
    """The matrix under Calico's tiers (or Cilium's walk): pods are alike when their namespace, labels, service
    account and named ports are (and their address, where the CNI's nets cut the pod network). Calico's tiers are
    vectorised over those classes (``CalicoTier``, ClusterNetworkPolicies in kube-admin and kube-baseline
    included), and so is Cilium's walk (``cilium/vectors.py``); ``pairwise`` takes each pair through the engine
    instead: the reference the vectorised answers must equal."""
    from .classes import _ipv4_ranges

    ranges = _calico_ranges(index) if index.calico is not None else _cilium_ranges(index)
    # The NetworkPolicies' ipBlocks cut both the pieces and the classes: read once (10,000 policies' rules).
    ipblocks = _ipv4_ranges(index.policies)
    piece = _range_piece(index, ranges, ipblocks)

    identity = _cni_identity(piece)

    classes = build_classes(state, index, members, external=external, all_external=all_external,
                            identity=identity, extra_ranges=ranges, ipblocks=ipblocks)
    # ClusterNetworkPolicies sit in kube-admin and kube-baseline among Calico's own policies, their priority as
    # order: CalicoTier interleaves them.
    if index.calico is not None and not pairwise:
        return _calico_vectorised(state, index, classes, pods=pods, word_bits=word_bits)
    if index.cilium is not None and not pairwise:
        return _cilium_vectorised(state, index, classes, pods=pods, word_bits=word_bits)
    note = ("evaluated pair by pair under Calico's tiers" if index.calico is not None else
            "evaluated pair by pair under Cilium's deny-before-allow walk")
    return _pairwise_matrix(state, index, classes, pods=pods, note=note)


def _calico_vectorised(state: ClusterState, index: PolicyIndex, classes: Classes, *, pods: bool,
                       word_bits: int) -> Matrix:
    from .calico.evaluate import CLUSTER_TIER_OF
    from .calico.model import DEFAULT_TIER as CALICO_DEFAULT_TIER
    from .calico.vectors import CalicoVectors

    assert index.calico is not None
    calico_vectors = CalicoVectors(index.calico, index.ctx, classes)
    k8s_vectors = Vectors(state, classes, index, keep_peers=False)
    atoms = port_atoms(index, classes, calico_port_cuts(index, calico_vectors))
    atom_masks = AtomMasks(atoms, classes)
    rule_masks = CalicoRuleMasks(atoms, atom_masks, calico_vectors)
    # The Kubernetes policies' peers as indices, uncached: ten thousand namespace-local peers as vectors over ten
    # thousand classes would be 150 MB (the few rules CalicoTier asks for again are computed again).
    kubernetes = [p for p in prepare(k8s_vectors, indices=True) if p.policy.kind == "NetworkPolicy"]
    tiers: list[Tier] = []
    for calico_tier in index.calico.tiers:
        policies = index.calico.policies.get(calico_tier.name, ())
        apart = calico_tier.name == CALICO_DEFAULT_TIER
        cluster_tier = CLUSTER_TIER_OF.get(calico_tier.name)
        if not policies and not apart and not any(p.tier == cluster_tier for p in index.cluster):
            continue
        tier = CalicoTier(calico_tier, classes, calico_vectors, k8s_vectors, atom_masks, rule_masks, apart)
        tiers.append(tier)
        if apart:
            tiers.append(CalicoKubernetesRows(tier, kubernetes))
    pairs = sparse_class_pairs(classes, tiers, atoms, word_bits)
    rows, row_notes = (pod_rows(classes), []) if pods else workload_rows(state, classes)
    return Matrix(state, classes, rows, pairs, atoms, "pod" if pods else "workload",
                  (*notes(index, state), *caveat_notes(index), *row_notes, *invalid_kept(state),
                   "evaluated under Calico's tiers over classes of pods alike"), [])


def _representatives(classes: Classes) -> list[Endpoint]:
    """Per class, the endpoint the pair-by-pair walk asks: its first member, an external range's first address."""
    from ipaddress import IPv4Address

    return [Endpoint("external", str(IPv4Address(key[2]))) if key[0] == EXTERNAL else members[0]
            for key, members in zip(classes.keys, classes.members, strict=True)]


def _cilium_vectorised(state: ClusterState, index: PolicyIndex, classes: Classes, *, pods: bool,
                       word_bits: int) -> Matrix:
    """Cilium's walk over classes (``cilium/vectors.py``): a deny tier, then an allow tier with default deny."""
    from .cilium.vectors import CiliumSide

    assert index.cilium is not None
    ends = _representatives(classes)
    # The named ports of Cilium's own rules (deny rules, clusterwide policies), which the Kubernetes vocabulary the
    # classes were cut with does not hold: resolved on each class's first pod, as the walk resolves them.
    for policy in index.cilium.policies:
        for direction in (EGRESS, INGRESS):
            for rule in (*(policy.rules(direction) or ()), *(policy.deny_rules(direction) or ())):
                for p in rule.ports or ():
                    if isinstance(p.port, str):
                        for proto in p.protocols():
                            if (p.port, proto) not in classes.named:
                                classes.named[(p.port, proto)] = np.array(
                                    [-1 if ep.kind != "pod" or ep.pod is None else
                                     (ep.pod.named_port(p.port, proto) or -1) for ep in ends], dtype=np.int64)
    atoms = port_atoms(index, classes, cilium_port_cuts(index, classes))
    atom_masks = AtomMasks(atoms, classes)
    side = CiliumSide(index.cilium, index.on_node, classes, ends, atom_masks)
    pairs = sparse_class_pairs(classes, side.tiers(), atoms, word_bits)
    rows, row_notes = (pod_rows(classes), []) if pods else workload_rows(state, classes)
    return Matrix(state, classes, rows, pairs, atoms, "pod" if pods else "workload",
                  (*notes(index, state), *caveat_notes(index), *row_notes, *invalid_kept(state),
                   "evaluated under Cilium's deny-before-allow walk over classes of pods alike"), [])


def cilium_port_cuts(index: PolicyIndex, classes: Classes) -> dict[str, set[int]]:
    """The port boundaries of Cilium's rules, allow and deny (named ports as they resolve on the classes)."""
    assert index.cilium is not None
    cuts: dict[str, set[int]] = {p: set() for p in PROTOCOLS}
    for policy in index.cilium.policies:
        for direction in (EGRESS, INGRESS):
            for rule in (*(policy.rules(direction) or ()), *(policy.deny_rules(direction) or ())):
                for p in rule.ports or ():
                    for proto in p.protocols():
                        if p.port is None:
                            continue
                        if isinstance(p.port, int):
                            cuts[proto].update((p.port, (p.end_port or p.port) + 1))
                        else:
                            numbers = classes.named.get((p.port, proto))
                            if numbers is not None:
                                cuts[proto].update(x for v in set(numbers[numbers > 0].tolist()) for x in (v, v + 1))
    return cuts


def _range_piece(index: PolicyIndex, ranges: Sequence[tuple[int, int, tuple[tuple[int, int], ...]]],
                 ipblocks: Sequence[tuple[int, int, tuple[tuple[int, int], ...]]] | None = None
                 ) -> Callable[[str], Any]:
    """The piece of the address space a pod's address falls in, cut by every range a policy names (the CNI's nets
    and CIDRs, the NetworkPolicies' ipBlocks and their excepts, the cluster policies' networks): two pods in one
    piece are inside exactly the same ranges, so no address rule tells them apart. Grouping by piece rather than
    by address keeps a workload's pods one class (one matrix row) and the pairs to evaluate few."""
    import bisect
    from socket import AF_INET, inet_pton

    from .classes import _ipv4_ranges

    if not ranges:
        return lambda ip: ""
    every = [*ranges, *(_ipv4_ranges(index.policies) if ipblocks is None else ipblocks),
             *_ipv4_ranges(index.cluster, "network")]
    bounds = sorted({b for lo, hi, ex in every for b in (lo, hi, *(e for span in ex for e in span))})

    def piece(ip: str) -> Any:
        try:
            return bisect.bisect_right(bounds, int.from_bytes(inet_pton(AF_INET, ip), "big"))
        except OSError:
            return ip  # not IPv4 (or none): the address itself, as before
    return piece


def _pairwise_matrix(state: ClusterState, index: PolicyIndex, classes: Any, *, pods: bool, note: str) -> Matrix:
    """Each pair of classes through the engine's every-port answer (a CNI dialect the vectorised tiers cannot
    express: Calico's, Antrea's)."""
    from ipaddress import IPv4Address

    from .engine import _direction_set

    ends = []
    for c, key in enumerate(classes.keys):
        if key[0] == EXTERNAL:
            ends.append(Endpoint("external", str(IPv4Address(key[2]))))
        else:
            ends.append(classes.members[c][0])
    n = classes.count
    patterns: list[ConnSet] = []
    pattern_ids: dict[ConnSet, int] = {}
    src, dst, pattern = [], [], []
    for s, a in enumerate(ends):
        for d, b in enumerate(ends):
            if a.kind == "external" and b.kind == "external":
                continue
            if s == d and len(classes.members[s]) > 1:
                b = classes.members[s][1]  # two pods alike: what one allows the other is the class's own pair
            if a.pod is not None and a.pod is b.pod:
                conn = ConnSet.all()
            else:
                # Most pairs of a locked-down cluster are denied on egress already: then ingress need not be asked.
                conn = _direction_set(index, EGRESS, a, b)
                if not conn.is_empty:
                    conn = conn & _direction_set(index, INGRESS, b, a)
            if conn.is_empty:
                continue
            src.append(s)
            dst.append(d)
            pattern.append(pattern_ids.setdefault(conn, len(pattern_ids)))
            if len(patterns) < len(pattern_ids):
                patterns.append(conn)
    pairs = ClassPairs(np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64),
                       np.array(pattern, dtype=np.int64), patterns, n)
    rows, row_notes = (pod_rows(classes), []) if pods else workload_rows(state, classes)
    atoms = port_atoms(index, classes)
    return Matrix(state, classes, rows, pairs, atoms, "pod" if pods else "workload",
                  (*notes(index, state), *caveat_notes(index), *row_notes, *invalid_kept(state), note), [])


def _cilium_ranges(index: PolicyIndex) -> list[tuple[int, int, tuple[tuple[int, int], ...]]]:
    """The IPv4 ranges Cilium's policies name (the clusterwide kind's and the deny rules' CIDRs, which the NetworkPolicy
    tier does not hold) and the addresses its toServices and toFQDNs peers resolve to: they cut the external pieces."""
    import dataclasses

    from .classes import _ipv4_ranges

    assert index.cilium is not None
    shapes = [p.policy for p in index.cilium.policies]
    shapes += [dataclasses.replace(p.policy, ingress=p.ingress_deny, egress=p.egress_deny)
               for p in index.cilium.policies]
    out = _ipv4_ranges(shapes)
    addresses = {a for ips in index.cilium.services.values() for a in ips}
    addresses |= {a for ips in index.cilium.outside.values() for a in ips}
    for text in sorted(addresses):
        key = address_key(text)
        if key is not None and key[0] == 4:
            out.append((key[1], key[1] + 1, ()))
    return out


def _antrea_matrix(state: ClusterState, index: PolicyIndex, members: list[Pod], *, pods: bool, external: bool,
                   all_external: bool) -> Matrix:
    """The matrix under Antrea's tiers, pair by pair: pods are alike when their namespace, labels, service account
    (a peer may name it) and named ports are (and their address, where an Antrea ipBlock cuts the pod network)."""
    assert index.antrea is not None
    ranges: list[tuple[int, int, tuple[tuple[int, int], ...]]] = []
    for block in _antrea_blocks(index):
        for net in (block.cidr, *block.excepts):
            start = int(net.network_address)
            ranges.append((start, start + (1 << (32 - net.prefixlen)), ()))
    if any(p.fqdn for tier in index.antrea.policies.values() for policy in tier for rule in policy.egress
           for p in rule.peers or ()):
        # An fqdn peer selects the addresses of the outside names it matches (antrea/evaluate.py): each is a piece
        # of its own, so a piece's representative is the address a verdict names, as Cilium's toFQDNs are cut.
        for host in state.config.outside.hosts.values():
            for text in host.addresses:
                key = address_key(text)
                if key is not None and key[0] == 4:
                    ranges.append((key[1], key[1] + 1, ()))
    piece = _range_piece(index, ranges)

    identity = _cni_identity(piece)

    classes = build_classes(state, index, members, external=external, all_external=all_external,
                            identity=identity, extra_ranges=ranges)
    note = "evaluated pair by pair under Antrea's tiers"
    by_service = [f"{policy.ref} egress[{rule.index}]" for tier in index.antrea.policies.values() for policy in tier
                  for rule in policy.egress if rule.to_services]
    if by_service:
        # A toServices rule matches traffic addressed to a Service's cluster IP; the matrix's pairs are pod to pod.
        note += (f"; toServices rules ({', '.join(by_service)}) match only traffic addressed to a Service's cluster "
                 "IP, which these pod-to-pod pairs are not: `knetsim trace SRC SERVICE:PORT` shows them")
    return _pairwise_matrix(state, index, classes, pods=pods, note=note)


def _antrea_blocks(index: PolicyIndex) -> list[Any]:
    """The IPv4 ipBlocks of Antrea's rules and groups (IPRange), which cut the address space into pieces."""
    assert index.antrea is not None
    out = [b for g in index.antrea.groups.values() for b in g.ip_blocks]
    for tier in index.antrea.policies.values():
        for policy in tier:
            for rule in (*policy.ingress, *policy.egress):
                out += [p.ip_block for p in rule.peers or () if p.ip_block is not None]
    return [b for b in out if b.cidr.version == 4]


def _calico_ranges(index: PolicyIndex) -> list[tuple[int, int, tuple[tuple[int, int], ...]]]:
    """The IPv4 nets Calico's rules and network sets name: they cut the external address space into pieces."""
    assert index.calico is not None
    nets = [n for s in index.calico.network_sets for n in s.nets]
    for tier in index.calico.policies.values():
        for policy in tier:
            for rule in (*policy.ingress, *policy.egress):
                for entity in (rule.source, rule.destination):
                    nets += [*(entity.nets or ()), *entity.not_nets]
    out = []
    for net in nets:
        if net.version == 4:
            start = int(net.network_address)
            out.append((start, start + (1 << (32 - net.prefixlen)), ()))
    return out


def invalid_kept(state: ClusterState) -> list[str]:
    """The objects in the answer that the API server would refuse (``--validate=ignore``), each named."""
    return [str(n) for n in state.notices if n.code == INVALID_KEPT]


__all__ = ["OTHER", "Atom", "AtomMasks", "AtomWord", "Block", "ClassPairs", "ClusterPolicyTier", "Matrix",
           "NetworkPolicyTier",
           "Partly", "Rows",
           "Tier", "TierMasks", "class_pairs", "direction_allowed", "is_system_pod", "matrix", "port_atoms",
           "workload_of"]
