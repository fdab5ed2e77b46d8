"""Cilium's walk (``evaluate.side_set``) over classes, for the matrix (``policy/matrix.py``).

``side_set`` answers one subject pod and one peer: (the allow rules of the policies selecting the pod, or
everything when none of them isolates it) minus their deny rules. Over classes that is two tiers, in the order
Cilium applies them (Documentation/security/policy/language.rst, "Deny Policies"): a deny tier that decides
what a deny rule matches as denied, then an allow tier that, for an isolated class, accepts what an allow rule
matches and denies the rest. Subject classes that read the same (the same policies with rules for the tier and,
where a rule reads them, the same node, the same pod for the names its DNS lookups learn, the same named ports)
share one group; the deny tier keeps a row per group (a clusterwide deny is one row for every class), the allow
tier a cell per (subject, peer) an allow rule matches (a Deployment's own policy would be a row per class).

A peer of pods (namespace and pod selectors, most peers) is matched over every class at once by label columns,
as ``rules.peer_matches`` reads them; every other peer (entities, CIDRs, toServices, toFQDNs) by the walk's own
``evaluate._peer`` on each class's representative. Either is done once per distinct peer (and, where the subject
decides, per node or pod): the cost is classes x distinct peers, not classes squared x rules.
``tests/policy/test_cilium_matrix_vectorised.py`` holds this equal to the pair-by-pair walk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..classes import POD, Classes
from ..rules import INGRESS, Endpoint, Rule
from .evaluate import CiliumIndex, _peer
from .labels import endpoint_labels, reads_endpoint_labels
from .read import CiliumPolicy

NODE_ENTITIES = ("host", "remote-node")


def _reads_node(policy: CiliumPolicy, direction: str) -> bool:
    """Does a rule of ``policy`` read the subject's node (the host and remote-node entities are relative to it)?"""
    for rules in (policy.rules(direction), policy.deny_rules(direction)):
        for rule in rules or ():
            if any(p.kind == "entity" and p.entity in NODE_ENTITIES for p in rule.peers or ()):
                return True
    return False


def _reads_pod(policy: CiliumPolicy, direction: str) -> bool:
    """Does a rule of ``policy`` read the subject pod itself (toFQDNs: the names its own lookups learn)?"""
    return direction != INGRESS and any(p.kind == "fqdn" for rules in (policy.rules(direction),
                                                                       policy.deny_rules(direction))
                                        for rule in rules or () for p in rule.peers or ())


class CiliumSide:
    """The deny and allow tiers of one Cilium cluster over classes; ``tiers()`` gives them to ``class_pairs``."""

    def __init__(self, index: CiliumIndex, on_node: Any, classes: Classes, ends: Sequence[Endpoint],
                 atom_masks: Any) -> None:
        self.index = index
        self.on_node = on_node  # engine.PolicyIndex.on_node: the match context seen from a node
        self.classes = classes
        self.ends = ends  # per class, the endpoint the pair-by-pair walk asks (an external range: its first address)
        self.atom_masks = atom_masks
        self.n = classes.count
        self._peers: dict[tuple[Any, ...], np.ndarray] = {}
        self._selected: dict[tuple[str, Any], np.ndarray] = {}
        self._pod_mask: np.ndarray | None = None
        self._namespace_of: np.ndarray | None = None
        self._tables: dict[bool, tuple[dict[tuple[str, str], np.ndarray], dict[str, np.ndarray]]] = {}
        self._namespace_labels: list[Any] | None = None
        self.index_ctx = on_node("")  # namespace labels are the same seen from any node
        self._groups: dict[tuple[str, bool], tuple[np.ndarray, list[tuple[int, list[CiliumPolicy]]]]] = {}
        self._selecting_of: dict[str, list[list[int]]] = {}

    def tiers(self) -> list[Any]:
        return [_CiliumTier(self, deny=True), _CiliumTier(self, deny=False)]

    def _selecting(self, direction: str) -> list[list[int]]:
        """Per class, the positions of the policies selecting it for ``direction`` (``CiliumIndex.selecting``, in the
        index's order), found policy by policy over label columns: asking every policy of every class is classes x
        policies calls."""
        found = self._selecting_of.get(direction)
        if found is None:
            found = [[] for _ in range(self.n)]
            for k, policy in enumerate(self.index.policies):
                if policy.applies(direction):
                    for c in self._selected_by(policy).tolist():
                        found[c].append(k)
            self._selecting_of[direction] = found
        return found

    def groups(self, direction: str, deny: bool) -> tuple[np.ndarray, list[tuple[int, list[CiliumPolicy]]]]:
        """For the deny tier (``deny``) or the allow tier: ``rows[class]`` (0: the tier says nothing of it) and per
        group its first class and the policies whose rules the tier reads. Each tier groups by what it reads: a
        clusterwide deny over every class is one deny row, however many distinct allow rows the classes have."""
        key = (direction, deny)
        found = self._groups.get(key)
        if found is not None:
            return found
        policies = self.index.policies
        rows = np.zeros(self.n, dtype=np.int64)
        groups: dict[tuple[Any, ...], int] = {}
        firsts: list[tuple[int, list[CiliumPolicy]]] = [(-1, [])]
        selecting_of = self._selecting(direction)
        for c in np.flatnonzero(self.classes.kind == POD).tolist():
            if not selecting_of[c]:
                continue
            if deny:
                positions = tuple(k for k in selecting_of[c] if policies[k].deny_rules(direction))
            elif any(policies[k].isolates(direction) for k in selecting_of[c]):
                positions = tuple(k for k in selecting_of[c] if policies[k].rules(direction))
            else:
                continue  # not isolated: what no deny rule takes is allowed
            if deny and not positions:
                continue
            pod = self.ends[c].pod
            assert pod is not None
            read = [policies[k] for k in positions]
            signature: list[Any] = [positions]
            if any(_reads_node(p, direction) for p in read):
                signature.append(("node", pod.node_name))
            if any(_reads_pod(p, direction) for p in read):
                signature.append(("pod", pod.key))
            if direction == INGRESS and positions:  # a named port resolves on the subject (its every named port)
                signature.append(("ports", tuple(sorted((p.name, p.protocol, p.container_port)
                                                        for container in pod.containers for p in container.ports
                                                        if p.name))))
            group_key = tuple(signature)
            g = groups.get(group_key)
            if g is None:
                g = groups[group_key] = len(firsts)
                firsts.append((c, read))
            rows[c] = g
        found = self._groups[key] = (rows, firsts)
        return found

    def _selected_by(self, policy: CiliumPolicy) -> np.ndarray:
        """The pod classes ``policy`` selects (``CiliumPolicy.selects`` over every class's first pod)."""
        self._pods_peer_setup()
        assert self._pod_mask is not None
        if policy.clusterwide:
            found = self._pod_mask.copy()
            if policy.namespaces is not None:
                found &= self._namespaces_matching(policy.namespaces)
            found &= self._selector(policy.policy.selector)
            return np.flatnonzero(found)
        lo, hi = self.classes.ns_slices.get(policy.policy.namespace, (0, 0))
        return np.flatnonzero(self._pod_mask[lo:hi] & self._selector(policy.policy.selector)[lo:hi]) + lo

    def peers(self, policy: CiliumPolicy, rule: Rule, direction: str, subject: int) -> np.ndarray:
        """The classes ``rule`` of ``policy`` matches as peers of subject class ``subject`` (``evaluate._peer``)."""
        if rule.peers is None:
            return np.arange(self.n)
        if not rule.peers:  # a rule with an empty peer list matches no peer
            return np.zeros(0, dtype=np.int64)
        if len(rule.peers) == 1:
            return self._peer(policy, rule, rule.peers[0], subject)
        # Repeated indices are harmless to the callers' ``hits[peers] |= bits``.
        return np.concatenate([self._peer(policy, rule, peer, subject) for peer in rule.peers])

    def _peer(self, policy: CiliumPolicy, rule: Rule, peer: Any, subject: int) -> np.ndarray:
        """The classes one peer matches (sorted indices: ten thousand namespace-local peers as vectors would be
        hundreds of megabytes), cached by what decides it, so a thousand policies naming one peer share it."""
        end = self.ends[subject]
        assert end.pod is not None
        if peer.kind == "fqdn":  # the policy's own DNS match, and the names this pod's lookups learn
            key: tuple[Any, ...] = ("fqdn", id(policy), rule.index, peer.index, end.pod.key, end.pod.node_name)
        else:
            node = end.pod.node_name if peer.kind == "entity" and peer.entity in NODE_ENTITIES else None
            key = (peer.kind, peer.namespace, peer.namespace_selector, peer.pod_selector, peer.ip_range, peer.entity,
                   node)
        found = self._peers.get(key)
        if found is None:
            if peer.kind == "pods":
                found = self._pods_peer(peer)
            else:
                ctx = self.on_node(end.pod.node_name)
                found = np.flatnonzero([_peer(self.index, policy, rule, peer, ep, end.pod, ctx) for ep in self.ends])
            self._peers[key] = found
        return found

    # --- a pods peer (namespace and pod selectors) by label columns: rules.peer_matches over every class ---------

    def _pods_peer_setup(self) -> None:
        if self._pod_mask is None:
            self._pod_mask = np.array([ep.kind == "pod" and ep.pod is not None for ep in self.ends], dtype=bool)
            self._namespace_of = np.array([ep.pod.namespace if ep.kind == "pod" and ep.pod is not None else ""
                                           for ep in self.ends], dtype=object)

    def _pods_peer(self, peer: Any) -> np.ndarray:
        self._pods_peer_setup()
        assert self._pod_mask is not None
        if peer.namespace_selector is None:
            # One namespace: its slice of the classes (pod classes sort by namespace).
            lo, hi = self.classes.ns_slices.get(peer.namespace or "", (0, 0))
            found = self._pod_mask[lo:hi].copy()
            if peer.pod_selector is not None:
                found &= self._selector(peer.pod_selector)[lo:hi]
            return np.flatnonzero(found) + lo
        found = self._pod_mask & self._namespaces_matching(peer.namespace_selector)
        if peer.pod_selector is not None:
            found &= self._selector(peer.pod_selector)
        return np.flatnonzero(found)

    def _namespaces_matching(self, selector: Any) -> np.ndarray:
        key = ("namespaces", selector)
        found = self._selected.get(key)
        if found is None:
            # Per namespace of the classes, then spread over the classes (``ns_of`` -1, no pod: the trailing False).
            if self._namespace_labels is None:
                self._namespace_labels = [self.index_ctx.namespace_labels(ns) for ns in self.classes.namespaces]
            per_namespace = np.array([selector.matches(labels) for labels in self._namespace_labels] + [False],
                                     dtype=bool)
            found = self._selected[key] = per_namespace[self.classes.ns_of]
        return found

    def _labels_of(self, ep: Endpoint, endpoint: bool) -> Any:
        """A class's first pod's labels: its own, or (``endpoint``) the ones Cilium gives its endpoint."""
        assert ep.pod is not None
        return endpoint_labels(ep.pod, self.index.cluster) if endpoint else ep.pod.labels

    def _label_tables(self, endpoint: bool) -> tuple[dict[tuple[str, str], np.ndarray], dict[str, np.ndarray]]:
        """(label pair -> classes having it, label key -> classes having it), over the pods' own labels or over their
        endpoints' (the service account and cluster name added: asked only by selectors that read them)."""
        found = self._tables.get(endpoint)
        if found is None:
            pairs: dict[tuple[str, str], list[int]] = {}
            for c, ep in enumerate(self.ends):
                if ep.kind == "pod" and ep.pod is not None:
                    for pair in self._labels_of(ep, endpoint).items():
                        pairs.setdefault(pair, []).append(c)
            by_key: dict[str, list[int]] = {}
            for (k, _), v in pairs.items():
                by_key.setdefault(k, []).extend(v)
            found = self._tables[endpoint] = ({pair: np.array(v, dtype=np.int64) for pair, v in pairs.items()},
                                              {k: np.array(v, dtype=np.int64) for k, v in by_key.items()})
        return found

    def _selector(self, selector: Any) -> np.ndarray:
        """``Selector.matches`` over every class's first pod's labels (its endpoint's, when the selector reads a label
        Cilium owns: ``labels.py``), requirement by requirement."""
        from ...model.labels import DOES_NOT_EXIST, EQUALS, EXISTS, IN, NOT_EQUALS, NOT_IN

        key = ("pods", selector)
        found = self._selected.get(key)
        if found is not None:
            return found
        endpoint = reads_endpoint_labels(selector)
        label_pairs, label_keys = self._label_tables(endpoint)

        def having(label: str, values: Any = None) -> np.ndarray:
            out = np.zeros(self.n, dtype=bool)
            if values is None:
                idx = label_keys.get(label)
                if idx is not None:
                    out[idx] = True
                return out
            for value in values:
                idx = label_pairs.get((label, value))
                if idx is not None:
                    out[idx] = True
            return out

        if selector.nothing:
            found = np.zeros(self.n, dtype=bool)
        else:
            found = np.ones(self.n, dtype=bool)
            for r in selector.requirements:
                if r.op in (EQUALS, IN):
                    found &= having(r.key, r.values)
                elif r.op in (NOT_EQUALS, NOT_IN):
                    found &= ~having(r.key, r.values)
                elif r.op == EXISTS:
                    found &= having(r.key)
                elif r.op == DOES_NOT_EXIST:
                    found &= ~having(r.key)
                else:  # Gt / Lt: asked label map by label map
                    found &= np.array([ep.kind == "pod" and ep.pod is not None
                                       and r.matches(self._labels_of(ep, endpoint)) for ep in self.ends], dtype=bool)
        self._selected[key] = found
        return found


class _CiliumTier:
    """Cilium's deny rules (``deny``: what they match is denied) or its allow rules and default deny."""

    def __init__(self, side: CiliumSide, *, deny: bool) -> None:
        self.side = side
        self.deny = deny
        self.name = "Cilium deny rules" if deny else "Cilium allow rules"

    def sparse_masks(self, direction: str, word: Any) -> Any:
        return self._deny_rows(direction, word) if self.deny else self._allow_cells(direction, word)

    def _deny_rows(self, direction: str, word: Any) -> Any:
        """The deny tier as one row per group of classes the same deny rules select (compressed as made): what a
        deny rule matches is decided, as denied."""
        from ..sparse_rows import GroupRowsBuilder, SparseTier

        side = self.side
        n = side.n
        dt = word.dtype
        rows, firsts = side.groups(direction, True)
        accepts, decideds = GroupRowsBuilder(n, dt, word.full), GroupRowsBuilder(n, dt, word.full)
        for _ in firsts:
            accepts.add_constant(0)  # a deny tier accepts nothing
        decideds.add_constant(0)  # group 0: no deny rule selects the class
        for c, selecting in firsts[1:]:
            hits = np.zeros(n, dtype=dt)
            for policy in selecting:
                for rule in policy.deny_rules(direction) or ():
                    peers = side.peers(policy, rule, direction, c)
                    if not len(peers):
                        continue
                    mask = side.atom_masks.rule(rule, word)
                    if isinstance(mask, int):
                        if mask:
                            hits[peers] |= dt(mask)
                    elif direction == INGRESS:
                        value = int(mask[c])  # a named port resolves on the subject, the destination
                        if value:
                            hits[peers] |= dt(value)
                    else:
                        hits[peers] |= mask[peers].astype(dt)  # ...on egress, on the peer
            decideds.add(hits)
        empty = np.zeros(0, dtype=np.int64)
        return SparseTier(accepts.done(), decideds.done(), rows, empty, np.zeros(0, dt), np.zeros(0, dt))

    def _allow_cells(self, direction: str, word: Any) -> Any:
        """The allow tier as two group rows (not isolated: nothing; isolated: everything denied) and a cell per
        (subject, peer) an allow rule matches: one row per isolated group would be a dense row over the classes for
        each Deployment, its own policy selecting it."""
        from ..sparse_rows import SparseTier, cross_cells

        side = self.side
        n = side.n
        dt = word.dtype
        groups, firsts = side.groups(direction, False)
        order = np.argsort(groups, kind="stable")
        starts = np.searchsorted(groups[order], np.arange(len(firsts) + 1))
        items: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for g, (c, selecting) in enumerate(firsts):
            if g == 0:
                continue
            members = order[starts[g]:starts[g + 1]]
            for policy in selecting:
                for rule in policy.rules(direction) or ():
                    peers = side.peers(policy, rule, direction, c)
                    if not len(peers):
                        continue
                    mask = side.atom_masks.rule(rule, word)
                    if isinstance(mask, int):
                        bits = np.full(len(peers), mask, dtype=dt)
                    elif direction == INGRESS:  # a named port resolves on the subject (alike in the group)
                        bits = np.full(len(peers), int(mask[c]), dtype=dt)
                    else:  # ...on egress, on the peer
                        bits = mask[peers].astype(dt)
                    items.append((members, peers, bits))
        keys, accept = cross_cells(items, n, dt)
        rows = (groups != 0).astype(np.int64)
        return SparseTier(np.zeros((2, 1), dtype=dt), np.array([[0], [word.full]], dtype=dt), rows, keys, accept,
                          np.full(len(keys), word.full, dtype=dt))


__all__ = ["CiliumSide"]
