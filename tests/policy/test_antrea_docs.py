"""docs/policy.md's picture of Antrea's evaluation order is the order knetsim walks: its static tiers and priorities
are model.STATIC_TIERS, Kubernetes NetworkPolicy sits between application and baseline, and a policy placed in each
pictured tier decides before the next one (the transcripts of the section run in tests/test_docs_examples.py)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from knetsim.policy import evaluate
from knetsim.policy.antrea.model import STATIC_TIERS

from .helpers import netpol
from .test_antrea_reachability import acnp, build, labels, rule

ROOT = Path(__file__).resolve().parents[2]


def picture() -> list[str]:
    text = (ROOT / "docs" / "policy.md").read_text()
    section = text.split("### Antrea's evaluation order", 1)[1]
    block = section.split("```\n", 2)[1]
    return block.splitlines()


def test_the_picture_lists_the_static_tiers_with_their_priorities_in_order() -> None:
    pictured = [(m[1], int(m[2])) for line in picture() if (m := re.match(r" tier (\w+)\s+\(priority (\d+)\)", line))]
    assert pictured == [(name, int(priority)) for name, priority in STATIC_TIERS.items()]
    steps = [line[1:] for line in picture() if line.startswith(" ") and not line.startswith("  ")]
    order = [" ".join(step.split()[:2]) for step in steps if not step.startswith("in a tier")]
    assert order.index("Kubernetes NetworkPolicy") == order.index("tier application") + 1
    assert order.index("tier baseline") == order.index("Kubernetes NetworkPolicy") + 1


def test_each_pictured_tier_decides_before_the_next() -> None:
    names = list(STATIC_TIERS)
    x, from_z = [{"namespaceSelector": labels(ns="x")}], [{"namespaceSelector": labels(ns="z")}]
    for earlier, later in itertools.pairwise(names):
        if later == "baseline":
            continue
        s = build(acnp("first", 9, x, tier=earlier, ingress=[rule("Allow", from_z)]),
                  acnp("second", 1, x, tier=later, ingress=[rule("Drop", from_z)]))
        v = evaluate(s, "z/a", "x/a", 80)
        assert v.allowed and v.ingress.tier == earlier, (earlier, later)
    # application, then Kubernetes NetworkPolicy, then baseline
    deny = netpol("x/deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
    s = build(acnp("app", 1, x, tier="application", ingress=[rule("Allow", from_z)]), deny,
              acnp("base", 1, x, tier="baseline", ingress=[rule("Allow", from_z)]))
    assert evaluate(s, "z/a", "x/a", 80).ingress.tier == "application"
    s = build(deny, acnp("base", 1, x, tier="baseline", ingress=[rule("Allow", from_z)]))
    assert evaluate(s, "z/a", "x/a", 80).ingress.tier == "NetworkPolicy"
