"""Antrea policies that are valid but probably wrong are findings of ``policy lint`` (and the doctor): an appliedTo
that selects nothing, a Pass in the baseline tier, a rule an earlier catch-all rule shadows; and pods an Antrea
policy applies to are not "selected by no policy"."""

from __future__ import annotations

from knetsim.policy.engine import policy_index
from knetsim.policy.lint import lint

from .test_antrea_reachability import acnp, build, dropped, labels, rule

X = [{"namespaceSelector": labels(ns="x")}]


def codes(s: object) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in lint(s):  # type: ignore[arg-type]
        out.setdefault(f.code, []).append(f"{f.subject}: {f.message}")
    return out


def test_applied_to_nothing_names_the_policy() -> None:
    typo = acnp("typo", 1, [{"namespaceSelector": labels(ns="prodd")}], ingress=[rule("Drop")])
    found = codes(build(typo))
    assert found["AntreaAppliedToNothing"] == [
        "ClusterNetworkPolicy.crd.antrea.io typo: applies to no pod right now (its appliedTo selects none)"]
    missing_group = acnp("grouped", 1, [{"group": "nope"}], ingress=[rule("Drop")])
    s = build(missing_group)
    assert "AntreaAppliedToNothing" in codes(s)
    assert any("group 'nope': no such ClusterGroup: it selects nothing" in p for p in policy_index(s).problems)


def test_a_pass_in_the_baseline_tier_is_refused_as_antreas_webhook_refuses_it() -> None:
    """A Pass in the baseline tier would hand over to Kubernetes NetworkPolicy, already evaluated: Antrea's webhook
    refuses the policy (validate.go validateTierForPassAction), so it is left out and named, and drops nothing."""
    s = build(acnp("base", 1, X, tier="baseline", ingress=[rule("Pass"), rule("Drop")]))
    assert dropped(s) == set()
    assert any("ClusterNetworkPolicy.crd.antrea.io base: admission webhook \"acnpvalidator.antrea.io\" denied the "
               "request: `Pass` action should not be set for Baseline Tier policy rules" in p
               for p in policy_index(s).problems)


def test_a_rule_after_a_catch_all_is_shadowed() -> None:
    first = acnp("drop-all", 1, X, ingress=[rule("Drop", None, None)])
    later = acnp("allow-z", 2, X, ingress=[rule("Allow", [{"namespaceSelector": labels(ns="z")}])])
    found = codes(build(first, later))
    assert found["AntreaRuleShadowed"] == [
        "ClusterNetworkPolicy.crd.antrea.io allow-z: spec.ingress[0] (Allow) is never reached: "
        "ClusterNetworkPolicy.crd.antrea.io drop-all spec.ingress[0] (Drop) comes first in tier `application` and "
        "matches every peer and port of the same pods"]
    assert "AntreaRuleShadowed" not in codes(build(later, acnp("drop-all", 3, X, ingress=[rule("Drop", None, None)])))


def test_pods_an_antrea_policy_applies_to_are_not_reported_as_unisolated() -> None:
    found = codes(build(acnp("drop-z", 1, X, ingress=[rule("Drop", [{"namespaceSelector": labels(ns="z")}])])))
    loose = " ".join(found.get("PodsNotIsolated", []))
    assert "Namespace x" not in loose and "Namespace y" in loose
