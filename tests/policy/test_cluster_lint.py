"""Lint (and so the doctor) on ClusterNetworkPolicy tiers: each finding where it applies, and not where it does not.

Namespaces and pods as in test_cluster_tiers.py; examples/cluster-policy is the worked example of
docs/policy.md.
"""

from __future__ import annotations

from pathlib import Path

from knetsim import Cluster
from knetsim.policy.lint import lint

from .helpers import clusterpolicy, namespace_is, netpol, state
from .test_cluster_tiers import BASE, DB, DB_ALLOW_BACKEND, TENANTS

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster-policy"


def findings(*objects: dict) -> list:
    return lint(state(*objects))


def test_the_worked_example_finds_the_overridden_allow_and_the_baselines_nobody_opens() -> None:
    found = lint(Cluster.from_paths([str(EXAMPLE)]).state)
    assert [(f.code, f.severity, f.subject) for f in found] == [
        ("NetworkPolicyAllowOverridden", "warning", "NetworkPolicy shop/db-allow-backend"),
        ("BaselineDenyNotOpened", "info", "ClusterNetworkPolicy tenant-a-isolation"),
        ("BaselineDenyNotOpened", "info", "ClusterNetworkPolicy tenant-b-isolation"),
    ]
    overridden, baseline_a, _ = found
    assert overridden.message == (
        "NetworkPolicy shop/db-allow-backend ingress[0].from[0].ports[0] allows tenant-a/app-0 -> shop/db-0 TCP/5432, "
        "but ClusterNetworkPolicy `block-db` rule `deny-from-tenants` (Admin tier, priority 10) denies it first: the "
        "Admin tier decides before any NetworkPolicy, so the connection times out")
    assert baseline_a.message == (
        "spec.ingress[1] (other-tenants, Deny) drops tenant-b/app-0 -> tenant-a/app-0 TCP/80, and no NetworkPolicy "
        "selects tenant-a/app-0 for ingress to override it (2 pod(s) affected: tenant-a/app-0, tenant-a/app-1)")
    # The Pass in shop-api-delegate matters (it lets the shop's NetworkPolicy decide port 8080): not reported.
    assert not [f for f in found if f.code == "PassChangesNothing"]


def test_a_networkpolicy_that_opens_the_pod_silences_the_baseline_finding() -> None:
    baseline = clusterpolicy("iso", "Baseline", 1, DB, ingress=[{"action": "Deny", "from": [TENANTS]}])
    assert "BaselineDenyNotOpened" in {f.code for f in findings(*BASE, baseline)}
    assert "BaselineDenyNotOpened" not in {f.code for f in findings(*BASE, baseline, DB_ALLOW_BACKEND)}


def test_a_pass_with_nothing_after_it_in_its_tier_changes_nothing() -> None:
    alone = clusterpolicy("lonely", "Admin", 1, DB, ingress=[{"name": "p", "action": "Pass", "from": [TENANTS]}])
    found = [f for f in findings(*BASE, alone) if f.code == "PassChangesNothing"]
    assert [f.message for f in found] == [
        "spec.ingress[0] (p, Pass) changes nothing: no later rule of the tier decides what it passes, and what it "
        "matches would go on to the NetworkPolicy tier anyway"]
    # Followed by a Deny it skips, the same Pass matters.
    deny = clusterpolicy("later", "Admin", 2, DB, ingress=[{"action": "Deny", "from": [TENANTS]}])
    assert "PassChangesNothing" not in {f.code for f in findings(*BASE, alone, deny)}


def test_a_pass_that_matches_nobody_changes_nothing() -> None:
    nobody = clusterpolicy("typo", "Baseline", 1, DB, ingress=[
        {"action": "Pass", "from": [{"namespaces": {"matchLabels": {"tenant": "tpyo"}}}]},
        {"action": "Deny", "from": [{"namespaces": {}}]}])
    found = [f for f in findings(*BASE, nobody) if f.code == "PassChangesNothing"]
    assert [f.message for f in found] == [
        "spec.ingress[0] (#1, Pass) changes nothing: it matches no existing connection"]


def test_equal_priorities_are_a_finding_only_when_they_disagree() -> None:
    deny = clusterpolicy("b", "Admin", 4, DB, ingress=[{"action": "Deny", "from": [TENANTS]}])
    accept = clusterpolicy("a", "Admin", 4, DB, ingress=[{"action": "Accept", "from": [TENANTS]}])
    found = [f for f in findings(*BASE, deny, accept) if f.code == "EqualPriorityOverlap"]
    assert len(found) == 1 and found[0].subject == "ClusterNetworkPolicy a"
    assert "(a: Accept, b: Deny)" in found[0].message
    agree = clusterpolicy("c", "Admin", 4, DB, ingress=[{"action": "Accept", "from": [TENANTS]}])
    assert "EqualPriorityOverlap" not in {f.code for f in findings(*BASE, accept, agree)}
    # Different tiers never compete, whatever their priorities.
    baseline = clusterpolicy("d", "Baseline", 4, DB, ingress=[{"action": "Deny", "from": [TENANTS]}])
    assert "EqualPriorityOverlap" not in {f.code for f in findings(*BASE, accept, baseline)}


def test_pods_a_cluster_policy_selects_are_not_reported_as_open() -> None:
    shop_guard = clusterpolicy("guard", "Baseline", 1, {"namespaces": namespace_is("shop")},
                               ingress=[{"action": "Deny", "from": [TENANTS]}])
    subjects = {f.subject for f in findings(*BASE, shop_guard, netpol("tenant-a/x", {"podSelector": {}}))
                if f.code == "PodsNotIsolated"}
    assert subjects == {"Namespace tenant-b"}
