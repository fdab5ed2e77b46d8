"""Policies that write the same rule share one Rule (``rules.SharedRules``, issue 30's matrix speed), and sharing
never carries one namespace's meaning into another: a podSelector-only peer is the policy's own namespace.

Address plan: DESIGN defaults (pods 10.244.1.x on worker).
"""

from __future__ import annotations

from typing import Any

from knetsim.policy.engine import policy_index
from knetsim.policy.matrix import matrix

from .helpers import netpol, ns, pod, state

# The same policy, word for word, in two namespaces: api admits web of its own namespace, and anything from a
# namespace labelled tier=ops.
SAME_RULES = {"podSelector": {"matchLabels": {"role": "api"}}, "policyTypes": ["Ingress"], "ingress": [
    {"from": [{"podSelector": {"matchLabels": {"role": "web"}}}], "ports": [{"port": 80}]},
    {"from": [{"namespaceSelector": {"matchLabels": {"tier": "ops"}}}]},
]}
OBJECTS = [ns("a"), ns("b"), ns("ops", tier="ops"),
           pod("a/web", {"role": "web"}), pod("a/api", {"role": "api"}),
           pod("b/web", {"role": "web"}), pod("b/api", {"role": "api"}),
           pod("ops/probe", {"role": "probe"}),
           netpol("a/api-in", SAME_RULES), netpol("b/api-in", SAME_RULES)]


def test_a_shared_own_namespace_peer_keeps_each_policys_namespace() -> None:
    m = matrix(state(*OBJECTS), pods=True)
    assert m.allowed_between("a/web", "a/api").contains("TCP", 80)
    assert m.allowed_between("b/web", "b/api").contains("TCP", 80)
    assert not m.allowed_between("b/web", "a/api")
    assert not m.allowed_between("a/web", "b/api")
    assert m.allowed_between("ops/probe", "a/api").describe() == "All connections"
    assert m.allowed_between("ops/probe", "b/api").describe() == "All connections"


def test_a_rule_that_names_no_namespace_of_its_own_is_one_object_for_both_policies() -> None:
    index = policy_index(state(*OBJECTS))
    a, b = (next(p for p in index.policies if p.key == key) for key in ("a/api-in", "b/api-in"))
    assert a.ingress is not None and b.ingress is not None
    assert a.ingress[0].peers is not None and b.ingress[0].peers is not None
    assert (a.ingress[0].peers[0].namespace, b.ingress[0].peers[0].namespace) == ("a", "b")
    assert a.ingress[1] is b.ingress[1]


def test_a_selector_split_by_namespace_answers_as_each_namespace_asked_alone(monkeypatch: Any) -> None:
    """A selector many namespaces ask for is split by namespace once (``classes.SPLIT_AFTER``); the split must give
    each namespace its own pods, never a neighbour's: eight namespaces with the same policy, split from the first
    ask and never split, answer alike and admit only their own web pods."""
    import knetsim.policy.classes as classes

    names = [f"n{i}" for i in range(8)]
    objects = [ns("ops", tier="ops"), pod("ops/probe", {"role": "probe"})]
    for name in names:
        objects += [ns(name), pod(f"{name}/web", {"role": "web"}), pod(f"{name}/api", {"role": "api"}),
                    netpol(f"{name}/api-in", SAME_RULES)]
    answers = []
    for split_after in (1, 10**9):
        monkeypatch.setattr(classes, "SPLIT_AFTER", split_after)
        m = matrix(state(*objects), pods=True)
        for name in names:
            assert m.allowed_between(f"{name}/web", f"{name}/api").contains("TCP", 80)
            assert m.allowed_between("ops/probe", f"{name}/api").describe() == "All connections"
            other = names[(names.index(name) + 1) % len(names)]
            assert not m.allowed_between(f"{other}/web", f"{name}/api")
        answers.append(m.to_dict())
    assert answers[0] == answers[1]


def test_a_rule_mixing_own_namespace_and_namespace_selector_peers_shares_only_the_latter() -> None:
    """One from-list of a podSelector alone (this namespace) and a namespaceSelector: each policy's Rule is its own,
    the namespaceSelector's Peer is one object (rules.SharedRules.peer), and each namespace admits its own web."""
    mixed = {"podSelector": {"matchLabels": {"role": "api"}}, "policyTypes": ["Ingress"], "ingress": [
        {"from": [{"podSelector": {"matchLabels": {"role": "web"}}},
                  {"namespaceSelector": {"matchLabels": {"tier": "ops"}}}]}]}
    objects = [ns("a"), ns("b"), ns("ops", tier="ops"),
               pod("a/web", {"role": "web"}), pod("a/api", {"role": "api"}),
               pod("b/web", {"role": "web"}), pod("b/api", {"role": "api"}),
               pod("ops/probe", {"role": "probe"}),
               netpol("a/api-in", mixed), netpol("b/api-in", mixed)]
    index = policy_index(state(*objects))
    a, b = (next(p for p in index.policies if p.key == key) for key in ("a/api-in", "b/api-in"))
    assert a.ingress is not None and b.ingress is not None
    assert a.ingress[0] is not b.ingress[0]
    assert a.ingress[0].peers is not None and b.ingress[0].peers is not None
    assert (a.ingress[0].peers[0].namespace, b.ingress[0].peers[0].namespace) == ("a", "b")
    assert a.ingress[0].peers[1] is b.ingress[0].peers[1]
    m = matrix(state(*objects), pods=True)
    assert m.allowed_between("a/web", "a/api") and m.allowed_between("b/web", "b/api")
    assert not m.allowed_between("a/web", "b/api") and not m.allowed_between("b/web", "a/api")
    assert m.allowed_between("ops/probe", "a/api") and m.allowed_between("ops/probe", "b/api")
