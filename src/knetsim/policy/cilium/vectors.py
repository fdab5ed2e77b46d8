"""Cilium's walk (``evaluate.side_set``) over classes, for the matrix (``policy/matrix.py``).

``side_set`` answers one subject pod and one peer: (the allow rules of the policies selecting the pod, or
everything when none of them isolates it) minus their deny rules. Over classes that is two tiers, in the order
Cilium applies them (Documentation/security/policy/language.rst, "Deny Policies"): a deny tier that decides
what a deny rule matches as denied, then an allow tier that, for an isolated class, accepts what an allow rule
matches and denies the rest. Subject classes that read the same (the same selecting policies and, where a rule
reads them, the same node, the same pod for the names its DNS lookups learn, the same named ports) share one row.

Each rule's peer is matched against every class's representative by the walk's own ``evaluate._peer``, once
per distinct (policy, rule, peer, what the subject decides of it): the cost is classes x distinct peers, not
classes squared x rules. ``tests/policy/test_cilium_matrix_vectorised.py`` holds this equal to the pair-by-pair
walk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..classes import POD, Classes
from ..rules import INGRESS, Endpoint, Rule
from .evaluate import CiliumIndex, _peer
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
        self._groups: dict[str, tuple[np.ndarray, list[tuple[int, list[CiliumPolicy]]]]] = {}

    def tiers(self) -> list[Any]:
        return [_CiliumTier(self, deny=True), _CiliumTier(self, deny=False)]

    def groups(self, direction: str) -> tuple[np.ndarray, list[tuple[int, list[CiliumPolicy]]]]:
        """``rows[class]`` (0: no policy selects it, or it is no pod) and per group its first class and policies."""
        found = self._groups.get(direction)
        if found is not None:
            return found
        rows = np.zeros(self.n, dtype=np.int64)
        groups: dict[tuple[Any, ...], int] = {}
        firsts: list[tuple[int, list[CiliumPolicy]]] = [(-1, [])]
        position = {id(p): k for k, p in enumerate(self.index.policies)}
        for c in np.flatnonzero(self.classes.kind == POD).tolist():
            end = self.ends[c]
            pod = end.pod
            assert pod is not None
            ctx = self.on_node(pod.node_name)
            selecting = self.index.selecting(pod, direction, ctx)
            if not selecting:
                continue
            signature: list[Any] = [tuple(position[id(p)] for p in selecting)]
            if any(_reads_node(p, direction) for p in selecting):
                signature.append(("node", pod.node_name))
            if any(_reads_pod(p, direction) for p in selecting):
                signature.append(("pod", pod.key))
            if direction == INGRESS:  # a named port resolves on the subject (its every named port, Cilium's too)
                signature.append(("ports", tuple(sorted((p.name, p.protocol, p.container_port)
                                                        for container in pod.containers for p in container.ports
                                                        if p.name))))
            key = tuple(signature)
            g = groups.get(key)
            if g is None:
                g = groups[key] = len(firsts)
                firsts.append((c, selecting))
            rows[c] = g
        found = self._groups[direction] = (rows, firsts)
        return found

    def peers(self, policy: CiliumPolicy, rule: Rule, direction: str, subject: int) -> np.ndarray:
        """The classes ``rule`` of ``policy`` matches as peers of subject class ``subject`` (``evaluate._peer``)."""
        end = self.ends[subject]
        assert end.pod is not None
        reads = (end.pod.node_name if _reads_node(policy, direction) else None,
                 end.pod.key if _reads_pod(policy, direction) else None)
        key = (id(policy), direction, id(rule), reads)
        found = self._peers.get(key)
        if found is not None:
            return found
        if rule.peers is None:
            found = np.ones(self.n, dtype=bool)
        else:
            ctx = self.on_node(end.pod.node_name)
            found = np.array([any(_peer(self.index, policy, rule, peer, ep, end.pod, ctx) for peer in rule.peers)
                              for ep in self.ends], dtype=bool)
        self._peers[key] = found
        return found


class _CiliumTier:
    """Cilium's deny rules (``deny``: what they match is denied) or its allow rules and default deny."""

    def __init__(self, side: CiliumSide, *, deny: bool) -> None:
        self.side = side
        self.deny = deny
        self.name = "Cilium deny rules" if deny else "Cilium allow rules"

    def sparse_masks(self, direction: str, word: Any) -> Any:
        from ..sparse_rows import grouped

        side = self.side
        n = side.n
        dt = word.dtype
        rows, firsts = side.groups(direction)
        accept = np.zeros((len(firsts), n), dtype=dt)
        decided = np.zeros((len(firsts), n), dtype=dt)
        for g, (c, selecting) in enumerate(firsts):
            if g == 0:
                continue
            if not self.deny and not any(p.isolates(direction) for p in selecting):
                continue  # not isolated: what no deny rule takes is allowed
            hits = np.zeros(n, dtype=dt)
            for policy in selecting:
                for rule in (policy.deny_rules(direction) if self.deny else policy.rules(direction)) or ():
                    peers = side.peers(policy, rule, direction, c)
                    mask = side.atom_masks.rule(rule, word)
                    if isinstance(mask, int):
                        if mask:
                            hits |= np.where(peers, dt(mask), dt(0))
                    elif direction == INGRESS:
                        value = int(mask[c])  # a named port resolves on the subject, the destination
                        if value:
                            hits |= np.where(peers, dt(value), dt(0))
                    else:
                        hits |= np.where(peers, mask, dt(0)).astype(dt)  # ...on egress, on the peer
            if self.deny:
                decided[g] = hits
            else:
                accept[g] = hits
                decided[g] = word.full
        return grouped(accept, decided, rows, n)


__all__ = ["CiliumSide"]
