"""Calico's selectors and rule sides as boolean vectors over classes, for the matrix (``policy/matrix.py``).

``evaluate.py`` answers for one pod and one peer; the matrix needs the same answers for every class
at once. A selector is evaluated over a ``LabelTable`` (the label maps of every class, one column of
integer codes per label key), so ``app == 'web'`` is one comparison of a code column rather than
ten thousand dictionary lookups. What is per policy and rule side (which classes a policy selects,
which classes a rule's ``source`` or ``destination`` matches) is computed once and cached; only the
classes that are not pods (nodes, external ranges, a handful) go through ``evaluate.py``'s own
functions one by one. ``tests/policy/test_calico_matrix_vectorised.py`` holds this equal to the
pair-by-pair walk.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..classes import EXTERNAL, POD, Classes
from ..rules import Endpoint, MatchContext, service_account_of
from .evaluate import CalicoIndex, _address, _namespace_labels, entity_matches
from .model import CalicoPolicy, EntityRule
from .selector import ALL, AND, CONTAINS, ENDS, EQ, GLOBAL, HAS, IN, NE, NOT, NOT_IN, OR, STARTS, Node


class LabelTable:
    """The label maps of many endpoints, read column by column: a Calico selector over all of them at once."""

    def __init__(self, maps: Sequence[Mapping[str, str]]) -> None:
        self.maps = maps
        self.n = len(maps)
        self._columns: dict[str, tuple[np.ndarray, dict[str, int]]] = {}
        self._matched: dict[Node, np.ndarray] = {}

    def _column(self, key: str) -> tuple[np.ndarray, dict[str, int]]:
        found = self._columns.get(key)
        if found is None:
            codes: dict[str, int] = {}
            column = np.fromiter((codes.setdefault(m[key], len(codes)) if key in m else -1 for m in self.maps),
                                 dtype=np.int64, count=self.n)
            found = self._columns[key] = (column, codes)
        return found

    def _codes_where(self, key: str, keep: Any) -> np.ndarray:
        column, codes = self._column(key)
        wanted = [code for value, code in codes.items() if keep(value)]
        return np.isin(column, np.array(wanted, dtype=np.int64)) if wanted else np.zeros(self.n, dtype=bool)

    def matches(self, node: Node) -> np.ndarray:
        """Per endpoint: does ``node`` match its labels (``selector.Node.matches``, over every endpoint)."""
        found = self._matched.get(node)
        if found is None:
            found = self._matched[node] = self._evaluate(node)
        return found

    def _evaluate(self, node: Node) -> np.ndarray:
        op = node.op
        if op in (ALL, GLOBAL):
            return np.ones(self.n, dtype=bool)
        if op in (AND, OR):
            out = self.matches(node.operands[0]).copy()
            for operand in node.operands[1:]:
                out = out & self.matches(operand) if op == AND else out | self.matches(operand)
            return out
        if op == NOT:
            return ~self.matches(node.operands[0])
        column, codes = self._column(node.label)
        if op == HAS:
            return column >= 0
        if op in (EQ, NE):
            equal = column == codes.get(node.values[0], -2)
            return equal if op == EQ else ~equal  # a missing label satisfies != (and not in)
        if op in (IN, NOT_IN):
            inside = self._codes_where(node.label, lambda v: v in node.values)
            return inside if op == IN else ~inside
        first = node.values[0]
        if op == CONTAINS:
            return self._codes_where(node.label, lambda v: first in v)
        if op == STARTS:
            return self._codes_where(node.label, lambda v: v.startswith(first))
        assert op == ENDS
        return self._codes_where(node.label, lambda v: v.endswith(first))


class CalicoVectors:
    """Which classes a Calico policy selects and which a rule side matches, as boolean vectors over classes."""

    def __init__(self, index: CalicoIndex, ctx: MatchContext, classes: Classes) -> None:
        self.index = index
        self.ctx = ctx
        self.classes = classes
        self.n = n = classes.count
        self.is_pod = classes.kind == POD
        # Every member of a class answers alike; an external range answers as its first address (as the
        # pair-by-pair walk asks it).
        self.reps = [Endpoint("external", str(ipaddress.IPv4Address(key[2]))) if key[0] == EXTERNAL else members[0]
                     for key, members in zip(classes.keys, classes.members, strict=True)]
        pods = [ep.pod if self.is_pod[c] else None for c, ep in enumerate(self.reps)]
        self._pods = pods
        self.pod_labels = LabelTable([index.pod_labels(p) if p is not None else {} for p in pods])
        self.namespace_table = LabelTable([_namespace_labels(ctx, ns) for ns in classes.namespaces])
        self._account_table: LabelTable | None = None
        self._accounts: np.ndarray | None = None
        self.others = np.nonzero(~self.is_pod)[0].tolist()  # nodes and external ranges: walked one by one
        # Each class's IPv4 address as a number (-1: none or IPv6) and its IP version (0: none), for
        # ``_address_match`` over every class at once: inet_pton is strict dotted-quad IPv4 and several times
        # faster than ipaddress, which parses only the rest (9,000 pod addresses took 0.03 s).
        from socket import AF_INET, inet_pton  # loaded here: a cold start without Calico does not pay for it

        ipv4: list[int] = []
        versions: list[int] = []
        for ep in self.reps:
            if not ep.ip:
                ipv4.append(-1)
                versions.append(0)
                continue
            try:
                ipv4.append(int.from_bytes(inet_pton(AF_INET, ep.ip), "big"))
                versions.append(4)
            except OSError:
                ipv4.append(-1)
                versions.append(_address(ep.ip).version)
        self._ipv4 = np.array(ipv4, dtype=np.int64)
        self.versions = np.array(versions, dtype=np.int8)
        self._any_ipv6 = bool((self.versions == 6).any())
        self._parsed: list[ipaddress.IPv4Address | ipaddress.IPv6Address | None] | None = None
        self._ns_vectors: dict[Node, np.ndarray] = {}
        self._slices: dict[str, np.ndarray] = {}
        self._subjects: dict[int, tuple[CalicoPolicy, np.ndarray]] = {}
        self._k8s: dict[tuple[str, Any], np.ndarray] = {}
        self._entities: dict[tuple[str, int], tuple[EntityRule, np.ndarray]] = {}
        self._addresses: dict[tuple[Any, Any], np.ndarray] = {}
        self._named: dict[tuple[str, str], np.ndarray] = {}
        assert len(self.pod_labels.maps) == n

    # --- per class facts ----------------------------------------------------------------------------------------

    @property
    def account_table(self) -> LabelTable:
        if self._account_table is None:
            self._account_table = LabelTable([self.index.service_account_labels(p.namespace, service_account_of(p))
                                              if p is not None else {} for p in self._pods])
        return self._account_table

    @property
    def accounts(self) -> np.ndarray:
        if self._accounts is None:
            self._accounts = np.array([service_account_of(p) if p is not None else "" for p in self._pods],
                                      dtype=object)
        return self._accounts

    def namespaces(self, selector: Node) -> np.ndarray:
        """The pod classes whose namespace ``selector`` picks (its labels plus ``projectcalico.org/name``)."""
        found = self._ns_vectors.get(selector)
        if found is None:
            per_namespace = np.concatenate((self.namespace_table.matches(selector), [False]))
            found = self._ns_vectors[selector] = per_namespace[self.classes.ns_of] & self.is_pod
        return found

    def in_namespace(self, namespace: str) -> np.ndarray:
        found = self._slices.get(namespace)
        if found is None:
            found = np.zeros(self.n, dtype=bool)
            lo, hi = self.classes.ns_slices.get(namespace, (0, 0))
            found[lo:hi] = True
            found &= self.is_pod
            self._slices[namespace] = found
        return found

    def named_port(self, name: str, protocol: str) -> np.ndarray:
        """Per class, the number the pod's port ``name`` resolves to (``Pod.named_port``), -1 where none does."""
        key = (name, protocol)
        found = self._named.get(key)
        if found is None:
            numbers = [p.named_port(name, protocol) if p is not None else None for p in self._pods]
            found = self._named[key] = np.array([-1 if v is None else v for v in numbers], dtype=np.int64)
        return found

    # --- policies and rule sides --------------------------------------------------------------------------------

    def subject(self, policy: CalicoPolicy, direction: str) -> np.ndarray:
        """The classes ``policy`` selects for ``direction`` (``evaluate.selects``, over classes), as sorted indices:
        a policy selects few of ten thousand classes, and a vector per policy would cost hundreds of megabytes."""
        if not policy.applies(direction):
            return np.zeros(0, dtype=np.int64)
        # Which classes it selects does not depend on the direction: a policy of both types is asked twice.
        entry = self._subjects.get(id(policy))
        if entry is not None:
            return entry[1]
        if policy.k8s is not None:
            found = self._k8s_selected(policy)
        else:
            picked = self.is_pod.copy()
            if policy.namespace:
                picked &= self.in_namespace(policy.namespace)
            if policy.namespace_selector is not None:
                picked &= self.namespaces(policy.namespace_selector)
            if policy.service_account_selector is not None:
                picked &= self.account_table.matches(policy.service_account_selector)
            assert policy.selector is not None
            picked &= self.pod_labels.matches(policy.selector)
            found = np.nonzero(picked)[0]
        self._subjects[id(policy)] = (policy, found)  # the policy kept in the entry: its id stays its own
        return found

    def _k8s_selected(self, policy: CalicoPolicy) -> np.ndarray:
        # A Kubernetes NetworkPolicy selects by its podSelector over the pod's own labels, in its namespace: few
        # classes, asked one by one.
        key = (policy.namespace, policy.k8s.selector)
        found = self._k8s.get(key)
        if found is None:
            lo, hi = self.classes.ns_slices.get(policy.namespace, (0, 0))
            found = np.array([c for c in range(lo, hi) if self._pods[c] is not None
                              and policy.k8s.selector.matches(self._pods[c].labels)], dtype=np.int64)
            self._k8s[key] = found
        return found

    def entity(self, policy: CalicoPolicy, entity: EntityRule) -> np.ndarray:
        """The classes ``entity`` (a rule's source or destination, ports aside) matches under ``policy``
        (``evaluate.entity_matches``, which reads the policy's namespace only)."""
        # The policy's namespace is read only where no namespaceSelector scopes the side and the side picks by
        # identity (selector, serviceAccounts, notSelector: its own namespace's pods and network sets); elsewhere
        # every policy shares the answer (a thousand policies, 1,800 sides computed for ~250 distinct).
        scoped = entity.namespace_selector is None and (entity.selects_endpoints or entity.not_selector is not None)
        # By the side's object (kept in the entry, so its id stays its own): policies share one CalicoRule per
        # distinct rule, and hashing an EntityRule (its selector trees) for 10,000 sides cost more than the lookups.
        key = (policy.namespace if scoped else "", id(entity))
        entry = self._entities.get(key)
        if entry is None:
            found = self._pod_identity(policy, entity) & self._address_match(entity)
            for c in self.others:
                found[c] = entity_matches(self.index, policy, entity, self.reps[c], self.ctx)
            entry = self._entities[key] = (entity, found)
        return entry[1]

    def _pod_identity(self, policy: CalicoPolicy, entity: EntityRule) -> np.ndarray:
        """``evaluate._identity_matches`` for the pod classes (False elsewhere)."""
        ns_selector = entity.namespace_selector
        if ns_selector is not None and ns_selector.canonical() == "global()":
            # global() names the non-namespaced (network sets, host endpoints): no pod; it implies selects_endpoints.
            return np.zeros(self.n, dtype=bool)
        found = self.is_pod.copy()
        if ns_selector is not None:
            scope = self.namespaces(ns_selector)
        elif policy.namespace:
            scope = self.in_namespace(policy.namespace)
        else:
            scope = self.is_pod
        if entity.selects_endpoints:
            found &= scope
            if entity.selector is not None:
                found &= self.pod_labels.matches(entity.selector)
            if entity.service_account_names is not None:
                found &= np.isin(self.accounts, np.array(entity.service_account_names, dtype=object))
            if entity.service_account_selector is not None:
                found &= self.account_table.matches(entity.service_account_selector)
        if entity.not_selector is not None:
            found &= ~(scope & self.pod_labels.matches(entity.not_selector))
        return found

    def _addresses_of(self) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address | None]:
        """Each class's address parsed (None: none), made when an IPv6 address needs ``_within``'s walk."""
        if self._parsed is None:
            self._parsed = [_address(ep.ip) if ep.ip else None for ep in self.reps]
        return self._parsed

    def _ipv4_within(self, spans: list[tuple[int, int, int]]) -> np.ndarray:
        """``_within`` for every class when no class has an IPv6 address: no address (-1) is in no net."""
        out = np.zeros(self.n, dtype=bool)
        for version, lo, hi in spans:
            if version == 4:
                out |= (self._ipv4 >= lo) & (self._ipv4 <= hi)
        return out

    def _address_match(self, entity: EntityRule) -> np.ndarray:
        key = (entity.nets, entity.not_nets)
        found = self._addresses.get(key)
        if found is None:
            if entity.nets is None and not entity.not_nets:
                found = np.ones(self.n, dtype=bool)
            else:
                # Classes are cut by every net a rule names (matrix._range_piece), so the first member's address
                # answers for the class.
                # ``evaluate._addresses_match`` on each class's address, as integer spans: ipaddress's membership
                # test, per class and net, took a third of a second over 9,000 classes.
                nets, not_nets = _spans(entity.nets), _spans(entity.not_nets or ())
                if self._any_ipv6:
                    found = np.array([(entity.nets is None or _within(a, nets))
                                      and not (not_nets and _within(a, not_nets)) for a in self._addresses_of()],
                                     dtype=bool)
                else:
                    # IPv4 only (every class's address fits an int64): each net is one comparison over the classes,
                    # not a Python test per class (18,000 of them at 10,000 pods).
                    found = np.ones(self.n, dtype=bool) if entity.nets is None else self._ipv4_within(nets)
                    if not_nets:
                        found &= ~self._ipv4_within(not_nets)
            self._addresses[key] = found
        return found


def _spans(nets: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network] | None) -> list[tuple[int, int, int]]:
    """Each net as (IP version, first address, last address)."""
    return [(n.version, int(n.network_address), int(n.broadcast_address)) for n in nets or ()]


def _within(address: ipaddress.IPv4Address | ipaddress.IPv6Address | None, spans: list[tuple[int, int, int]]) -> bool:
    """``evaluate._in_nets``: no address is in no net; an address is in a net of its own version that holds it."""
    if address is None:
        return False
    version, value = address.version, int(address)
    return any(version == v and lo <= value <= hi for v, lo, hi in spans)


__all__ = ["CalicoVectors", "LabelTable"]
