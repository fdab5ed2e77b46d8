"""Antrea's tiers, restated from antrea-io/antrea ``test/e2e/antreapolicy_test.go``: the same pods (x/a,b,c,
y/a,b,c, z/a,b,c, namespaces labelled ns=<name>), the same policies written as our own objects, and the
reachability each test expects on TCP 80, checked through ``evaluate`` (policy check, trace) and the matrix.

Each expectation is the set of (from, to) pairs the e2e test expects Dropped; every other pair is Connected
(a pod always reaches itself). Cases not in the e2e suite (Pass, Reject) say where their facts come from.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig
from knetsim.network.tracer import trace
from knetsim.policy import evaluate
from knetsim.policy.engine import policy_index
from knetsim.policy.matrix import matrix

from .helpers import netpol

PODS = [f"{n}/{p}" for n in "xyz" for p in "abc"]


def world(account: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Namespaces x, y, z with pods a, b, c each; ``account``: the service account a pod ("y/b") runs as."""
    out: list[dict[str, Any]] = []
    for n in "xyz":
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": {"ns": n}}})
        for i, p in enumerate("abc"):
            spec: dict[str, Any] = {"nodeName": ["worker", "worker2", "control-plane"][i], "containers": [
                {"name": "c", "image": "busybox",
                 "ports": [{"containerPort": 80, "name": "serve-80"}, {"containerPort": 81, "name": "serve-81"}]}]}
            if (account or {}).get(f"{n}/{p}"):
                spec["serviceAccountName"] = (account or {})[f"{n}/{p}"]
            out.append({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": p, "namespace": n, "labels": {"pod": p}}, "spec": spec})
    return out


def build(*objects: dict[str, Any], cni: str | None = "antrea", account: dict[str, str] | None = None) -> Any:
    return Cluster.from_yaml(yaml.safe_dump_all([*world(account), *objects], sort_keys=False),
                             config=ClusterConfig(cni=cni)).state


def labels(**kv: str) -> dict[str, Any]:
    return {"matchLabels": kv}


def acnp(name: str, priority: float, applied_to: list[dict[str, Any]] | None, *, tier: str | None = None,
         ingress: list[dict[str, Any]] | None = None, egress: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"priority": priority}
    if tier:
        spec["tier"] = tier
    if applied_to is not None:
        spec["appliedTo"] = applied_to
    if ingress:
        spec["ingress"] = ingress
    if egress:
        spec["egress"] = egress
    return {"apiVersion": "crd.antrea.io/v1beta1", "kind": "ClusterNetworkPolicy", "metadata": {"name": name},
            "spec": spec}


def rule(action: str, peers: list[dict[str, Any]] | None = None, port: int | None = 80, *, side: str = "from",
         **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"action": action, **extra}
    if peers is not None:
        out[side] = peers
    if port is not None:
        out["ports"] = [{"protocol": "TCP", "port": port}]
    return out


def dropped(s: Any, port: int = 80) -> set[tuple[str, str]]:
    """The pairs policy does not let through on TCP ``port``, by the verdict and by the matrix (which must agree)."""
    by_verdict = {(a, b) for a in PODS for b in PODS if not evaluate(s, a, b, port).allowed}
    m = matrix(s, pods=True)
    by_matrix = {(a, b) for a in PODS for b in PODS if not m.allowed_between(a, b).contains("TCP", port)}
    assert by_verdict == by_matrix
    return by_verdict


def ns_pairs(src: str, dst: str, *, src_pods: str = "abc", dst_pods: str = "abc") -> set[tuple[str, str]]:
    return {(f"{src}/{p}", f"{dst}/{q}") for p in src_pods for q in dst_pods if (src, p) != (dst, q)}


def everything() -> set[tuple[str, str]]:
    return {(a, b) for a in PODS for b in PODS if a != b}


DEFAULT_DENY_ALL_NAMESPACES = [netpol(f"{n}/default-deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
                               for n in "xyz"]


# --- testACNPPriorityOverrideDefaultDeny: Antrea tiers come before Kubernetes NetworkPolicy ------------------------


def test_priority_override_over_kubernetes_default_deny() -> None:
    allow_z_to_x = acnp("acnp-priority2", 2, [{"namespaceSelector": labels(ns="x")}],
                        ingress=[rule("Allow", [{"namespaceSelector": labels(ns="z")}])])
    drop_z_to_xa = acnp("acnp-priority1", 1, [{"podSelector": labels(pod="a"), "namespaceSelector": labels(ns="x")}],
                        ingress=[rule("Drop", [{"namespaceSelector": labels(ns="z")}])])
    s = build(allow_z_to_x, drop_z_to_xa, *DEFAULT_DENY_ALL_NAMESPACES)
    assert dropped(s) == everything() - ns_pairs("z", "x", dst_pods="bc")
    v = evaluate(s, "z/a", "x/b", 80)
    assert v.allowed and v.ingress.reason == (
        "allowed by ClusterNetworkPolicy.crd.antrea.io `acnp-priority2` ingress[0] (Allow; Antrea tier "
        "`application` priority 250, policy priority 2)")
    assert evaluate(s, "z/a", "x/a", 80).ingress.antrea.match.policy == "acnp-priority1"  # type: ignore[union-attr]


# --- testACNPPriorityOverride / testACNPTierOverride / testACNPCustomTiers ----------------------------------------

XA = [{"podSelector": labels(pod="a"), "namespaceSelector": labels(ns="x")}]
X = [{"namespaceSelector": labels(ns="x")}]
FROM_Z = [{"namespaceSelector": labels(ns="z")}]
FROM_ZB = [{"podSelector": labels(pod="b"), "namespaceSelector": labels(ns="z")}]
TWO = ns_pairs("z", "x", dst_pods="bc")
ALL_THREE = TWO | {("z/b", "x/a")}


def test_priority_override() -> None:
    p1 = acnp("acnp-priority1", 1.001, XA, ingress=[rule("Drop", FROM_ZB)])
    p2 = acnp("acnp-priority2", 1.002, XA, ingress=[rule("Allow", FROM_Z)])
    p3 = acnp("acnp-priority3", 1.003, X, ingress=[rule("Drop", FROM_Z)])
    assert dropped(build(p3, p2)) == TWO
    assert dropped(build(p3, p1, p2)) == ALL_THREE


def test_tier_override() -> None:
    emergency = acnp("acnp-tier-emergency", 100, XA, tier="emergency", ingress=[rule("Drop", FROM_ZB)])
    securityops = acnp("acnp-tier-securityops", 10, XA, tier="securityops", ingress=[rule("Allow", FROM_Z)])
    application = acnp("acnp-tier-application", 1, X, tier="application", ingress=[rule("Drop", FROM_Z)])
    assert dropped(build(application, securityops)) == TWO
    s = build(application, emergency, securityops)
    assert dropped(s) == ALL_THREE
    v = evaluate(s, "z/b", "x/a", 80)
    assert v.ingress.tier == "emergency" and "tier `emergency` priority 50, policy priority 100" in v.ingress.reason


def test_custom_tiers_by_their_priority() -> None:
    tiers = [{"apiVersion": "crd.antrea.io/v1beta1", "kind": "Tier", "metadata": {"name": name},
              "spec": {"priority": priority}} for name, priority in (("high-priority", 245), ("low-priority", 246))]
    high = acnp("acnp-tier-high", 100, XA, tier="high-priority", ingress=[rule("Allow", FROM_Z)])
    low = acnp("acnp-tier-low", 1, X, tier="low-priority", ingress=[rule("Drop", FROM_Z)])
    assert dropped(build(*tiers, low, high)) == TWO


def test_a_policy_naming_a_missing_tier_is_refused_and_named() -> None:
    s = build(acnp("lost", 1, X, tier="nowhere", ingress=[rule("Drop")]))
    assert dropped(s) == set()
    assert any('admission webhook "acnpvalidator.antrea.io" denied the request: tier nowhere does not exist' in p
               for p in policy_index(s).problems)


# --- testACNPRulePriority: equal-priority policies interleave rule by rule -----------------------------------------


def test_rule_priority_interleaves_policies_of_equal_priority() -> None:
    to_y, to_z = [{"namespaceSelector": labels(ns="y")}], [{"namespaceSelector": labels(ns="z")}]
    deny = acnp("acnp-deny", 5, X, egress=[rule("Drop", to_y, side="to"), rule("Drop", to_z, side="to")])
    allow = acnp("acnp-allow", 5, X, egress=[rule("Allow", to_z, side="to"), rule("Allow", to_y, side="to")])
    assert dropped(build(allow, deny)) == ns_pairs("x", "y")


# --- testBaselineNamespaceIsolation: Kubernetes NetworkPolicy before the baseline tier -----------------------------


def test_baseline_after_kubernetes_networkpolicy() -> None:
    not_x = {"matchExpressions": [{"key": "ns", "operator": "NotIn", "values": ["x"]}]}
    baseline = acnp("acnp-baseline-isolate-ns-x", 1, X, tier="baseline",
                    ingress=[rule("Drop", [{"namespaceSelector": not_x}])])
    k8s = netpol("x/allow-ns-x-and-y-a", {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [
        {"from": [{"namespaceSelector": labels(ns="x")}], "ports": [{"protocol": "TCP", "port": 80}]},
        {"from": [{"namespaceSelector": labels(ns="y"), "podSelector": labels(pod="a")}],
         "ports": [{"protocol": "TCP", "port": 80}]}]})
    s = build(baseline, k8s)
    assert dropped(s) == ns_pairs("y", "x", src_pods="bc") | ns_pairs("z", "x")
    # y/a is let in by the Kubernetes NetworkPolicy: the baseline tier is never reached.
    v = evaluate(s, "y/a", "x/a", 80)
    assert v.allowed and v.ingress.tier == "NetworkPolicy"
    # Without the Kubernetes NetworkPolicy the baseline tier drops every other namespace.
    only = build(baseline)
    assert dropped(only) == ns_pairs("y", "x") | ns_pairs("z", "x")
    assert evaluate(only, "y/a", "x/a", 80).ingress.reason.startswith(
        "no Kubernetes NetworkPolicy isolates x/a for ingress; dropped by ClusterNetworkPolicy.crd.antrea.io "
        "`acnp-baseline-isolate-ns-x` ingress[0]")


def test_an_isolated_pod_is_not_reopened_by_a_baseline_allow() -> None:
    # docs/antrea-network-policy.md: baseline policies cannot counteract the isolation of a Kubernetes NetworkPolicy.
    allow = acnp("baseline-allow", 1, X, tier="baseline", ingress=[rule("Allow")])
    deny = netpol("x/deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
    assert dropped(build(allow, deny)) == ns_pairs("x", "x") | ns_pairs("y", "x") | ns_pairs("z", "x")


# --- testACNPAppliedToRuleCGWithPodsAToNsZ / testACNPEgressRulePodsAToCGWithNsZ: groups, per-rule appliedTo ---------

A_TO_Z = ns_pairs("x", "z", src_pods="a") | ns_pairs("y", "z", src_pods="a") | {("z/a", "z/b"), ("z/a", "z/c")}


def test_rule_level_applied_to_a_cluster_group() -> None:
    group = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "ClusterGroup", "metadata": {"name": "cg-pods-a"},
             "spec": {"podSelector": labels(pod="a")}}
    policy = acnp("acnp-deny-cg-with-a-to-z", 1, None,
                  egress=[rule("Drop", [{"namespaceSelector": labels(ns="z")}], side="to",
                               appliedTo=[{"group": "cg-pods-a"}])])
    assert dropped(build(policy, group)) == A_TO_Z


def test_a_cluster_group_as_peer() -> None:
    group = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "ClusterGroup", "metadata": {"name": "cg-ns-z"},
             "spec": {"namespaceSelector": labels(ns="z")}}
    policy = acnp("acnp-deny-a-to-cg-with-z-egress", 1, [{"podSelector": labels(pod="a")}],
                  egress=[rule("Drop", [{"group": "cg-ns-z"}], side="to")])
    assert dropped(build(policy, group)) == A_TO_Z


def test_drop_egress_with_stand_alone_selectors_and_no_default_isolation() -> None:
    policy = acnp("acnp-deny-a-to-z-egress", 1, [{"podSelector": labels(pod="a")}],
                  egress=[rule("Drop", [{"namespaceSelector": labels(ns="z")}], side="to")])
    s = build(policy)
    assert dropped(s) == A_TO_Z
    assert dropped(s, 81) == set()  # testACNPAllowNoDefaultIsolation's point: a rule isolates nothing else


# --- namespaces: {match: Self} (docs/antrea-network-policy.md, "ACNP for strict Namespace isolation") -------------


def test_namespaces_match_self() -> None:
    isolation = acnp("strict-ns-isolation", 5, [{"namespaceSelector": {}}], tier="securityops",
                     ingress=[rule("Pass", [{"namespaces": {"match": "Self"}}], None),
                              rule("Drop", [{"namespaceSelector": {}}], None)])
    s = build(isolation)
    cross = {(a, b) for a in PODS for b in PODS if a.split("/")[0] != b.split("/")[0]}
    assert dropped(s) == cross
    # Within a namespace the Pass hands over to Kubernetes NetworkPolicy, which isolates x/a here.
    s2 = build(isolation, netpol("x/only-b", {"podSelector": labels(pod="a"), "policyTypes": ["Ingress"],
                                              "ingress": [{"from": [{"podSelector": labels(pod="b")}]}]}))
    assert dropped(s2) == cross | {("x/c", "x/a")}
    v = evaluate(s2, "x/c", "x/a", 80)
    assert v.ingress.reason.startswith("passed to Kubernetes NetworkPolicy by ClusterNetworkPolicy.crd.antrea.io "
                                       "`strict-ns-isolation` ingress[0]")


# --- Pass skips every later Antrea tier (pkg/apis/crd/v1beta1/types.go, RuleActionPass) ---------------------------


def test_pass_skips_the_later_tiers_to_kubernetes_networkpolicy() -> None:
    passing = acnp("pass-z", 1, X, tier="securityops", ingress=[rule("Pass", FROM_Z)])
    dropping = acnp("drop-z", 1, X, tier="application", ingress=[rule("Drop", FROM_Z)])
    assert dropped(build(passing, dropping)) == set()
    assert dropped(build(dropping)) == ns_pairs("z", "x")
    # ... but not the baseline tier, which comes after Kubernetes NetworkPolicy.
    base = acnp("base-drop-z", 1, X, tier="baseline", ingress=[rule("Drop", FROM_Z)])
    assert dropped(build(passing, dropping, base)) == ns_pairs("z", "x")


# --- Antrea NetworkPolicy (namespaced): its podSelector stays in its namespace ------------------------------------


def test_antrea_networkpolicy_scopes_selectors_to_its_namespace() -> None:
    ya = {"namespaceSelector": labels(ns="y"), "podSelector": labels(pod="a")}
    annp = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "NetworkPolicy",
            "metadata": {"name": "annp-deny-ya-to-xa", "namespace": "x"},
            "spec": {"priority": 1, "appliedTo": [{"podSelector": labels(pod="a")}],
                     "ingress": [rule("Drop", [{"podSelector": labels(pod="b")}]), rule("Drop", [ya])]}}
    s = build(annp)
    assert dropped(s) == {("x/b", "x/a"), ("y/a", "x/a")}
    assert evaluate(s, "x/b", "x/a", 80).ingress.antrea.match.kind == "NetworkPolicy.crd.antrea.io"  # type: ignore


# --- Drop times out, Reject refuses (types.go: "the client will receive a response") ---------------------------------


@pytest.mark.parametrize(("action", "outcome"), [("Drop", "timeout"), ("Reject", "refused")])
def test_drop_times_out_and_reject_refuses(action: str, outcome: str) -> None:
    policy = acnp("z-out", 1, [{"namespaceSelector": labels(ns="z")}],
                  egress=[rule(action, [{"namespaceSelector": labels(ns="x")}], side="to")])
    s = build(policy)
    target = s.pods["x/a"].pod_ip
    result = trace(s, "z/a", f"{target}:80")
    assert result.outcome == outcome
    assert not evaluate(s, "z/a", "x/a", 80).allowed
    assert evaluate(s, "z/a", "x/a", 80).egress.rejected is (action == "Reject")


# --- the CNI decides: Antrea's kinds do nothing on another CNI -----------------------------------------------------


def test_not_enforced_on_another_cni_and_inferred_without_one() -> None:
    policy = acnp("drop-z", 1, X, ingress=[rule("Drop", FROM_Z)])
    kindnet = build(policy, cni="kindnet")
    assert dropped(kindnet) == set()
    v = evaluate(kindnet, "z/a", "x/a", 80)
    assert [c.object.ref for c in v.caveats] == ["ClusterNetworkPolicy.crd.antrea.io drop-z"]
    inferred = evaluate(build(policy, cni=None), "z/a", "x/a", 80)
    assert not inferred.allowed and inferred.cni is not None and inferred.cni.how == "inferred"


# --- kinds by group: Antrea's NetworkPolicy is not Kubernetes', its ClusterNetworkPolicy not the network-policy-api's


def test_antrea_kinds_are_kept_under_their_qualified_names() -> None:
    annp = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "NetworkPolicy",
            "metadata": {"name": "np", "namespace": "x"},
            "spec": {"priority": 1, "appliedTo": [{"podSelector": {}}], "ingress": [rule("Drop")]}}
    s = build(annp, acnp("np", 1, X, ingress=[rule("Drop")]))
    assert s.network_policies == {}  # not isolating x as a Kubernetes NetworkPolicy would
    assert {k for k in s.others if k[0].endswith(".crd.antrea.io")} == {
        ("NetworkPolicy.crd.antrea.io", "x/np"), ("ClusterNetworkPolicy.crd.antrea.io", "np")}
    assert policy_index(s).cluster == ()  # nor read as a policy.networking.k8s.io ClusterNetworkPolicy


def test_a_cluster_group_of_ip_blocks_in_applied_to_selects_no_pod() -> None:
    # docs/antrea-network-policy.md: a ClusterGroup with ipBlocks referenced in appliedTo is ignored.
    s0 = build()
    cidr = f"{s0.pods['x/a'].pod_ip}/32"
    group = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "ClusterGroup", "metadata": {"name": "xa-by-ip"},
             "spec": {"ipBlocks": [{"cidr": cidr}]}}
    as_target = acnp("target-by-ip", 1, [{"group": "xa-by-ip"}], ingress=[rule("Drop")])
    assert dropped(build(group, as_target)) == set()
    as_peer = acnp("peer-by-ip", 1, X, ingress=[rule("Drop", [{"group": "xa-by-ip"}])])
    assert dropped(build(group, as_peer)) == {("x/a", "x/b"), ("x/a", "x/c")}


def test_equal_priority_across_kinds_is_by_priority_only() -> None:
    # docs/antrea-network-policy.md, "Ordering based on policy priority": the kind does not order, the priority does.
    annp = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "NetworkPolicy",
            "metadata": {"name": "allow-z", "namespace": "x"},
            "spec": {"priority": 1, "appliedTo": [{"podSelector": {}}], "ingress": [rule("Allow", FROM_Z)]}}
    later = acnp("drop-z", 2, X, ingress=[rule("Drop", FROM_Z)])
    assert dropped(build(annp, later)) == set()


def test_detected_from_the_antrea_agent_running_in_the_cluster() -> None:
    agent = {"apiVersion": "apps/v1", "kind": "DaemonSet",
             "metadata": {"name": "antrea-agent", "namespace": "kube-system"},
             "spec": {"selector": {"matchLabels": {"app": "antrea", "component": "antrea-agent"}},
                      "template": {"metadata": {"labels": {"app": "antrea", "component": "antrea-agent"}},
                                   "spec": {"containers": [{"name": "agent", "image": "antrea/antrea-agent"}]}}}}
    v = evaluate(build(agent, acnp("drop-z", 1, X, ingress=[rule("Drop", FROM_Z)]), cni=None), "z/a", "x/a", 80)
    assert v.cni is not None and (v.cni.name, v.cni.how, v.cni.evidence) == (
        "antrea", "detected", "DaemonSet kube-system/antrea-agent")
    assert not v.allowed and v.caveats == ()


# --- testACNPAllowXBtoYA (run with Kubernetes default deny everywhere): a named port, resolved on the pod ----------


def test_named_port_over_kubernetes_default_deny() -> None:
    policy = acnp("acnp-allow-xb-to-ya", 2, [{"podSelector": labels(pod="a"), "namespaceSelector": labels(ns="y")}],
                  ingress=[{"action": "Allow", "from": [{"podSelector": labels(pod="b"),
                                                         "namespaceSelector": labels(ns="x")}],
                            "ports": [{"protocol": "TCP", "port": "serve-81"}]}])
    s = build(policy, *DEFAULT_DENY_ALL_NAMESPACES)
    assert dropped(s, 81) == everything() - {("x/b", "y/a")}
    assert not evaluate(s, "x/b", "y/a", 80).allowed  # the name is 81 on y/a, not 80


def test_ip_block_to_an_external_address_and_an_end_port_range() -> None:
    policy = acnp("no-docs-range", 1, [{"podSelector": labels(pod="a")}], egress=[
        {"action": "Drop", "to": [{"ipBlock": {"cidr": "192.0.2.0/24", "except": ["192.0.2.128/25"]}}],
         "ports": [{"protocol": "TCP", "port": 8080, "endPort": 8082}]}])
    s = build(policy)
    assert not evaluate(s, "x/a", "192.0.2.10", 8081).allowed
    assert evaluate(s, "x/a", "192.0.2.10", 8083).allowed
    assert evaluate(s, "x/a", "192.0.2.200", 8081).allowed  # in the except
    assert evaluate(s, "x/b", "192.0.2.10", 8081).allowed  # not applied to b
    external = {c["to"]: c["allowed"] for c in matrix(s, pods=True).to_dict()["connections"] if c["from"] == "x/a"}
    assert external["192.0.2.128/25"] == "all"
    assert {"protocol": "TCP", "ports": [[1, 8079], [8083, 65535]]} in external["192.0.2.0/25"]


def test_same_labels_is_left_out_and_named() -> None:
    policy = acnp("same-labels", 1, X, ingress=[rule("Drop", [{"namespaces": {"sameLabels": ["team"]}}])])
    s = build(policy)
    assert dropped(s) == set()
    assert any("spec.ingress[0].from[0].namespaces.sameLabels: not simulated by knetsim" in p
               for p in policy_index(s).problems)
    assert any("namespaces.sameLabels" in n for n in evaluate(s, "z/a", "x/a", 80).notes)
