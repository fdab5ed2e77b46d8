"""The reachability diff against netpol-analyzer's ``diff`` on its admin-tier inputs: AdminNetworkPolicy and
BaselineAdminNetworkPolicy (policy.networking.k8s.io/v1alpha1), restated as our own manifests.

Its cases keep the network-policy-api conformance cast (four namespaces, one StatefulSet each) and change one thing:
the order of two rules of a policy (rules are evaluated in order, the first match decides, API reference of
AdminNetworkPolicySpec.ingress/egress), a priority (the lower number wins), or the removal of the NetworkPolicy a
``Pass`` handed the decision to. The categories map onto ours as test_connectivity_semantics.py says. Namespaces are
selected by ``kubernetes.io/metadata.name``, which the API server sets on every namespace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .semantics import all_but, conns, netpol, pairs, write
from .semantics import namespace as namespace_doc
from .semantics import workload as workload_doc

CAST = {"gryffindor": "harry-potter", "slytherin": "draco-malfoy", "hufflepuff": "cedric-diggory",
        "ravenclaw": "luna-lovegood"}
Rule = tuple[str, str, tuple[tuple[str, int], ...]]  # action, house, (protocol, port)... (none: every port)


def who(house: str) -> str:
    return f"{house}/{CAST[house]}[StatefulSet]"


def cast() -> list[str]:
    docs = []
    for house, name in CAST.items():
        docs.append(namespace_doc(house, **{"conformance-house": house}))
        docs.append(workload_doc("StatefulSet", house, name, {"conformance-house": house}))
    return docs


def rules(direction: str, listed: list[Rule]) -> list[dict[str, Any]]:
    peer = "from" if direction == "ingress" else "to"
    out = []
    for k, (action, house, ports) in enumerate(listed):
        rule: dict[str, Any] = {"name": f"rule-{k}", "action": action, peer: [
            {"namespaces": {"matchLabels": {"kubernetes.io/metadata.name": house}}}]}
        if ports:
            rule["ports"] = [{"portNumber": {"protocol": p, "port": n}} for p, n in ports]
        out.append(rule)
    return out


def subject(house: str) -> dict[str, Any]:
    return {"namespaces": {"matchLabels": {"kubernetes.io/metadata.name": house}}}


def anp(name: str, priority: int, house: str, **gress: list[Rule]) -> str:
    return json.dumps({"apiVersion": "policy.networking.k8s.io/v1alpha1", "kind": "AdminNetworkPolicy",
                       "metadata": {"name": name}, "spec": {"priority": priority, "subject": subject(house),
                                                             **{d: rules(d, r) for d, r in gress.items()}}})


def banp(house: str, **gress: list[Rule]) -> str:
    return json.dumps({"apiVersion": "policy.networking.k8s.io/v1alpha1", "kind": "BaselineAdminNetworkPolicy",
                       "metadata": {"name": "default"}, "spec": {"subject": subject(house),
                                                                  **{d: rules(d, r) for d, r in gress.items()}}})


def every(house: str, action: str) -> Rule:
    return action, house, ()


ALL = "all"
NONE: list[Any] = []
# Each case: netpol-analyzer's pair of folders; the subject house and direction; the rules before and after; and
# the lines of its expected output as {(source house, destination house): (ref1, ref2)}.
CASES = [
    pytest.param("ingress", "hufflepuff",
                 [every("ravenclaw", "Allow"), every("ravenclaw", "Deny"), every("ravenclaw", "Pass"),
                  ("Deny", "slytherin", (("UDP", 5353),)), ("Pass", "slytherin", (("UDP", 5353),)),
                  ("Allow", "gryffindor", (("UDP", 53),)), every("gryffindor", "Deny")],
                 [every("ravenclaw", "Deny"), every("ravenclaw", "Allow"), every("ravenclaw", "Pass"),
                  ("Pass", "slytherin", (("UDP", 5353),)), ("Deny", "slytherin", (("UDP", 5353), ("UDP", 5000))),
                  ("Allow", "gryffindor", (("UDP", 53),)), every("gryffindor", "Deny")],
                 {("slytherin", "hufflepuff"): (all_but("UDP", 5353), all_but("UDP", 5000)),
                  ("ravenclaw", "hufflepuff"): (ALL, NONE)}, id="anp_test_6-ingress-udp"),
    pytest.param("ingress", "gryffindor",
                 [every("ravenclaw", "Allow"), every("ravenclaw", "Deny"), every("ravenclaw", "Pass"),
                  ("Deny", "slytherin", (("TCP", 80),)), ("Pass", "slytherin", (("TCP", 80),)),
                  ("Allow", "hufflepuff", (("TCP", 80),)), every("hufflepuff", "Deny")],
                 [every("ravenclaw", "Pass"), every("ravenclaw", "Allow"), every("ravenclaw", "Deny"),
                  ("Pass", "slytherin", (("TCP", 80),)), ("Deny", "slytherin", (("TCP", 80),)),
                  every("hufflepuff", "Deny"), ("Allow", "hufflepuff", (("TCP", 80),))],
                 {("slytherin", "gryffindor"): (all_but("TCP", 80), ALL),
                  ("hufflepuff", "gryffindor"): (conns(TCP=[(80, 80)]), NONE)}, id="anp_test_7-ingress-tcp"),
    pytest.param("ingress", "ravenclaw",
                 [every("gryffindor", "Allow"), every("gryffindor", "Deny"), every("gryffindor", "Pass"),
                  ("Deny", "slytherin", (("SCTP", 9003),)), ("Pass", "slytherin", (("SCTP", 9003),)),
                  ("Allow", "hufflepuff", (("SCTP", 9003),)), every("hufflepuff", "Deny")],
                 [every("gryffindor", "Deny"), every("gryffindor", "Allow"), every("gryffindor", "Pass"),
                  ("Pass", "slytherin", (("SCTP", 9003),)), ("Deny", "slytherin", (("SCTP", 9003),)),
                  ("Allow", "hufflepuff", (("SCTP", 9003),)), every("hufflepuff", "Deny")],
                 {("slytherin", "ravenclaw"): (all_but("SCTP", 9003), ALL),
                  ("gryffindor", "ravenclaw"): (ALL, NONE)}, id="anp_test_8-ingress-sctp"),
    pytest.param("egress", "hufflepuff",
                 [every("ravenclaw", "Allow"), every("ravenclaw", "Deny"), every("ravenclaw", "Pass"),
                  ("Deny", "slytherin", (("UDP", 5353),)), ("Pass", "slytherin", (("UDP", 5353),)),
                  ("Allow", "gryffindor", (("UDP", 53),)), every("gryffindor", "Deny")],
                 [every("ravenclaw", "Deny"), every("ravenclaw", "Allow"), every("ravenclaw", "Pass"),
                  ("Deny", "slytherin", (("UDP", 5353),)), ("Pass", "slytherin", (("UDP", 5353),)),
                  every("gryffindor", "Deny"), ("Allow", "gryffindor", (("UDP", 53),))],
                 {("hufflepuff", "ravenclaw"): (ALL, NONE),
                  ("hufflepuff", "gryffindor"): (conns(UDP=[(53, 53)]), NONE)}, id="anp_test_10-egress-udp"),
    pytest.param("egress", "gryffindor",
                 [every("ravenclaw", "Allow"), every("ravenclaw", "Deny"), every("ravenclaw", "Pass"),
                  ("Deny", "slytherin", (("TCP", 80),)), ("Pass", "slytherin", (("TCP", 80),)),
                  ("Allow", "hufflepuff", (("TCP", 8080),)), every("hufflepuff", "Deny")],
                 [every("ravenclaw", "Deny"), every("ravenclaw", "Allow"), every("ravenclaw", "Pass"),
                  ("Pass", "slytherin", (("TCP", 80),)), ("Deny", "slytherin", (("TCP", 80),)),
                  ("Allow", "hufflepuff", (("TCP", 8080),)), every("hufflepuff", "Deny")],
                 {("gryffindor", "slytherin"): (all_but("TCP", 80), ALL),
                  ("gryffindor", "ravenclaw"): (ALL, NONE)}, id="anp_test_11-egress-tcp"),
    pytest.param("egress", "ravenclaw",
                 [every("gryffindor", "Allow"), every("gryffindor", "Deny"), every("gryffindor", "Pass"),
                  ("Deny", "slytherin", (("SCTP", 9003),)), ("Pass", "slytherin", (("SCTP", 9003),)),
                  ("Allow", "hufflepuff", (("SCTP", 9003),)), every("hufflepuff", "Deny")],
                 [every("gryffindor", "Deny"), every("gryffindor", "Allow"), every("gryffindor", "Pass"),
                  ("Pass", "slytherin", (("SCTP", 9003),)), ("Deny", "slytherin", (("SCTP", 9003),)),
                  ("Allow", "hufflepuff", (("SCTP", 9003),)), every("hufflepuff", "Deny")],
                 {("ravenclaw", "slytherin"): (all_but("SCTP", 9003), ALL),
                  ("ravenclaw", "gryffindor"): (ALL, NONE)}, id="anp_test_12-egress-sctp"),
]


def named(expected: dict[tuple[str, str], tuple[Any, Any]]) -> dict[tuple[str, str], tuple[Any, Any]]:
    return {(who(src), who(dst)): change for (src, dst), change in expected.items()}


@pytest.mark.parametrize(("direction", "house", "before", "after", "expected"), CASES)
def test_swapping_two_rules_of_an_admin_policy_changes_what_the_first_match_decides(
        tmp_path: Path, direction: str, house: str, before: list[Rule], after: list[Rule],
        expected: dict[tuple[str, str], tuple[Any, Any]]) -> None:
    """anp_test_N -> anp_test_N_swapping_rules: the same rules in another order (and, in one case, one port more)."""
    found = pairs(write(tmp_path / "a", *cast(), anp("rules", 4, house, **{direction: before})),
                  write(tmp_path / "b", *cast(), anp("rules", 4, house, **{direction: after})))
    assert found == named(expected)


BANP_CASES = [
    pytest.param({"ingress": [every("ravenclaw", "Allow"), every("ravenclaw", "Deny"),
                              ("Deny", "slytherin", (("TCP", 80),)), ("Allow", "hufflepuff", (("TCP", 80),)),
                              every("hufflepuff", "Deny")]},
                 {"ingress": [every("ravenclaw", "Allow"), every("ravenclaw", "Deny"),
                              ("Deny", "slytherin", (("TCP", 80),)), every("hufflepuff", "Deny"),
                              ("Allow", "hufflepuff", (("TCP", 80),))]},
                 {("hufflepuff", "gryffindor"): (conns(TCP=[(80, 80)]), NONE)}, id="banp-ingress-tcp"),
    pytest.param({"egress": [every("ravenclaw", "Allow"), every("ravenclaw", "Deny"),
                             ("Deny", "slytherin", (("TCP", 80),)), ("Allow", "hufflepuff", (("TCP", 8080),)),
                             every("hufflepuff", "Deny")]},
                 {"egress": [every("ravenclaw", "Allow"), every("ravenclaw", "Deny"),
                             ("Deny", "slytherin", (("TCP", 80),)), every("hufflepuff", "Deny"),
                             ("Allow", "hufflepuff", (("TCP", 8080),))]},
                 {("gryffindor", "hufflepuff"): (conns(TCP=[(8080, 8080)]), NONE)}, id="banp-egress-tcp"),
    pytest.param({d: [every("ravenclaw", "Allow"), every("ravenclaw", "Deny"),
                      ("Deny", "slytherin", (("TCP", 80), ("UDP", 53), ("SCTP", 9003))),
                      ("Allow", "hufflepuff", (("TCP", 80 if d == "ingress" else 8080), ("UDP", 5353),
                                               ("SCTP", 9003))), every("hufflepuff", "Deny")]
                  for d in ("ingress", "egress")},
                 {d: [every("ravenclaw", "Deny"), every("ravenclaw", "Allow"),
                      ("Deny", "slytherin", (("TCP", 80), ("UDP", 53), ("SCTP", 9003))),
                      ("Allow", "hufflepuff", (("TCP", 80 if d == "ingress" else 8080), ("UDP", 5353),
                                               ("SCTP", 9003))), every("hufflepuff", "Deny")]
                  for d in ("ingress", "egress")},
                 {("gryffindor", "ravenclaw"): (ALL, NONE), ("ravenclaw", "gryffindor"): (ALL, NONE)},
                 id="banp-gress"),
]


@pytest.mark.parametrize(("before", "after", "expected"), BANP_CASES)
def test_swapping_two_rules_of_the_baseline_policy(tmp_path: Path, before: dict[str, list[Rule]],
                                                   after: dict[str, list[Rule]],
                                                   expected: dict[tuple[str, str], tuple[Any, Any]]) -> None:
    """banp_test_core_*_rules -> *_swapping_rules: the baseline decides only what nothing above it did."""
    found = pairs(write(tmp_path / "a", *cast(), banp("gryffindor", **before)),
                  write(tmp_path / "b", *cast(), banp("gryffindor", **after)))
    assert found == named(expected)


def both_ways(action: str) -> dict[str, list[Rule]]:
    return {"ingress": [every("slytherin", action)], "egress": [every("slytherin", action)]}


def test_a_pass_raised_above_a_deny_hands_the_pair_to_the_baseline(tmp_path: Path) -> None:
    """anp_test_4 -> anp_test_4_with_priority_chang_pass_to_banp: gryffindor denies slytherin both ways at priority
    50 and passes it at 60; the pass moves to 40 (now first) and a baseline allowing slytherin is added: `added`
    gryffindor <-> slytherin, No Connections -> All Connections."""
    deny = anp("priority-50-example", 50, "gryffindor", **both_ways("Deny"))
    found = pairs(write(tmp_path / "a", *cast(), deny, anp("old-priority-60", 60, "gryffindor", **both_ways("Pass"))),
                  write(tmp_path / "b", *cast(), deny, anp("new-priority-40", 40, "gryffindor", **both_ways("Pass")),
                        banp("gryffindor", **both_ways("Allow"))))
    assert found == named({("gryffindor", "slytherin"): (NONE, ALL), ("slytherin", "gryffindor"): (NONE, ALL)})


def test_removing_the_network_policy_a_pass_deferred_to_leaves_the_baseline_to_decide(tmp_path: Path) -> None:
    """anp_np_banp_core_test -> anp_banp_core_test: an ANP passes gryffindor <-> slytherin; a NetworkPolicy on every
    gryffindor pod admits slytherin only (both ways); the baseline denies slytherin. Without the NetworkPolicy:
    `removed` gryffindor <-> slytherin (the baseline's deny), `added` gryffindor <-> every other house and the
    outside world (no longer isolated)."""
    passing = anp("pass-example", 10, "gryffindor", **both_ways("Pass"))
    np = netpol("gryffindor", "allow-gress-from-to-slytherin-to-gryffindor", {
        "podSelector": {}, "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"conformance-house": "slytherin"}}}]}],
        "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"conformance-house": "slytherin"}}}]}]})
    deny = banp("gryffindor", **both_ways("Deny"))
    found = pairs(write(tmp_path / "a", *cast(), passing, np, deny), write(tmp_path / "b", *cast(), passing, deny))
    harry = who("gryffindor")
    expected = named({("gryffindor", "slytherin"): (ALL, NONE), ("slytherin", "gryffindor"): (ALL, NONE),
                      **{pair: (NONE, ALL) for h in ("hufflepuff", "ravenclaw")
                         for pair in (("gryffindor", h), (h, "gryffindor"))}})
    for outside in ("0.0.0.0-10.243.255.255", "10.245.0.0-255.255.255.255"):
        expected[(outside, harry)] = expected[(harry, outside)] = (NONE, ALL)
    assert found == expected


def test_swapping_rules_on_both_sides_of_one_admin_policy(tmp_path: Path) -> None:
    """anp_test_9 -> anp_test_9_swapping_rules: one policy on gryffindor, ingress and egress alike: ravenclaw's
    Allow-all and Deny-all swap, and slytherin's Deny then Pass on TCP 80, UDP 53, SCTP 9003 become Pass then Deny.
    netpol-analyzer's lines: `changed` gryffindor <-> slytherin, both ways, every port but those three -> all;
    `removed` gryffindor <-> ravenclaw, both ways."""
    three = (("TCP", 80), ("UDP", 53), ("SCTP", 9003))

    def gress(ravenclaw: tuple[str, str], slytherin: tuple[str, str], huff_tcp: int) -> list[Rule]:
        return [every("ravenclaw", ravenclaw[0]), every("ravenclaw", ravenclaw[1]), every("ravenclaw", "Pass"),
                (slytherin[0], "slytherin", three), (slytherin[1], "slytherin", three),
                ("Allow", "hufflepuff", (("TCP", huff_tcp), ("UDP", 5353), ("SCTP", 9003))),
                every("hufflepuff", "Deny")]

    def policy(ravenclaw: tuple[str, str], slytherin: tuple[str, str]) -> str:
        return anp("gress-rules", 15, "gryffindor", ingress=gress(ravenclaw, slytherin, 80),
                   egress=gress(ravenclaw, slytherin, 8080))

    found = pairs(write(tmp_path / "a", *cast(), policy(("Allow", "Deny"), ("Deny", "Pass"))),
                  write(tmp_path / "b", *cast(), policy(("Deny", "Allow"), ("Pass", "Deny"))))
    but_three = conns(TCP=[(1, 79), (81, 65535)], UDP=[(1, 52), (54, 65535)], SCTP=[(1, 9002), (9004, 65535)])
    assert found == named({("gryffindor", "slytherin"): (but_three, ALL), ("slytherin", "gryffindor"): (but_three, ALL),
                           ("gryffindor", "ravenclaw"): (ALL, NONE), ("ravenclaw", "gryffindor"): (ALL, NONE)})
