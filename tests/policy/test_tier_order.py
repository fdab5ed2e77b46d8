"""The tier pipeline as kube-network-policies runs its evaluator array: one ordered list, first Accept or
Deny wins, Next hands on, the default (allow) held by the loop alone.

Given mock tiers answering fixed verdicts, the pipeline's answer and the tier named as deciding are
those of the first tier in ``ORDER`` that does not answer Next; the engine, the matrix and the
explorer all iterate that one list, so reordering it would show in every answer.
"""

from __future__ import annotations

import pytest

from knetsim.policy.tiers import ACCEPTED, DENIED, NEXT, ORDER, Answer, TierRuleMatch, run

from .helpers import clusterpolicy, netpol, ns, pod, state


def _pass(tier: str) -> TierRuleMatch:
    return TierRuleMatch("ClusterNetworkPolicy", f"{tier.lower()}-pass", tier, 10, "ingress", 0, "p", "Pass", 0, -1)


# admin, networkpolicy, baseline (None: the tier selects nothing) -> (allowed, deciding tier)
ROWS = [
    ("empty pipeline allows", None, None, None, True, None),
    ("admin deny beats a networkpolicy allow", DENIED, ACCEPTED, None, False, "Admin"),
    ("admin accept beats a networkpolicy deny", ACCEPTED, DENIED, None, True, "Admin"),
    ("admin next, networkpolicy decides", NEXT, DENIED, ACCEPTED, False, "NetworkPolicy"),
    ("isolated pods never reach baseline", None, ACCEPTED, DENIED, True, "NetworkPolicy"),
    ("baseline decides what no networkpolicy selects", NEXT, None, DENIED, False, "Baseline"),
    ("every tier passes: default allow", NEXT, None, NEXT, True, None),
]


@pytest.mark.parametrize(("name", "admin", "network_policy", "baseline", "allowed", "tier"), ROWS,
                         ids=[r[0] for r in ROWS])
def test_the_first_tier_that_decides_wins(name: str, admin: str | None, network_policy: str | None,
                                          baseline: str | None, allowed: bool, tier: str | None) -> None:
    answers = dict(zip(ORDER, (admin, network_policy, baseline), strict=True))
    asked: list[str] = []

    def evaluate(t: str) -> Answer[str] | None:
        asked.append(t)
        verdict = answers[t]
        if verdict is None:
            return None
        return Answer(verdict, t, _pass(t) if verdict == NEXT else None)

    result = run(evaluate)
    assert (result.allowed, result.tier) == (allowed, tier)
    # Tiers after the deciding one are never asked; the Pass rules met on the way are kept in order.
    assert asked == list(ORDER[:ORDER.index(tier) + 1] if tier else ORDER)
    assert [m.tier for m in result.passed] == [t for t in asked if answers[t] == NEXT]


def test_the_order_is_admin_then_networkpolicy_then_baseline() -> None:
    assert ORDER == ("Admin", "NetworkPolicy", "Baseline")


def test_engine_and_matrix_iterate_the_same_list() -> None:
    """Both tiers present: the matrix's tiers are ORDER, and each cell's deciding tier is the engine's."""
    from knetsim.policy import evaluate
    from knetsim.policy.matrix import matrix

    objects = [ns("a"), ns("b"), pod("a/x", {"app": "x"}), pod("b/y", {"app": "y"}, node="worker2"),
               netpol("b/only-x", {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {}}]}]}),
               clusterpolicy("deny-a", "Admin", 5, {"namespaces": {}}, egress=[
                   {"name": "no-b-53", "action": "Deny", "to": [{"namespaces": {"matchLabels": {
                       "kubernetes.io/metadata.name": "b"}}}], "protocols": [{"udp": {"destinationPort": {
                           "number": 53}}}]}]),
               clusterpolicy("baseline-a", "Baseline", 5, {"namespaces": {"matchLabels": {
                   "kubernetes.io/metadata.name": "a"}}}, ingress=[{"name": "none", "action": "Deny",
                                                                      "from": [{"namespaces": {}}]}])]
    s = state(*objects)
    m = matrix(s)
    assert [t.name for t in m.tiers] == list(ORDER)
    seen = set()
    for protocol, port in (("UDP", 53), ("TCP", 80)):
        codes = m.deciding_tiers(protocol, port)
        for src, dst in (("a/x", "b/y"), ("b/y", "a/x")):
            v = evaluate(s, src, dst, port, protocol)
            i, j = m.index(f"{src}[Pod]"), m.index(f"{dst}[Pod]")
            assert m.tier_of(codes, i, j) == (v.egress.tier, v.ingress.tier), (src, dst, protocol, port)
            seen |= {v.egress.tier, v.ingress.tier}
    assert seen == {*ORDER, "default"}  # each tier decided some cell
