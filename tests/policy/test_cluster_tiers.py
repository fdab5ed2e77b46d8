"""ClusterNetworkPolicy's tiers around NetworkPolicy: every precedence rule, one test (or row) each.

Given the objects, src -> dst on a port is (not) allowed, the verdict names the tier, policy and
rule that decided, and the v1alpha1 AdminNetworkPolicy / BaselineAdminNetworkPolicy give the
same answers as the ClusterNetworkPolicies they map to.

Address plan as in helpers.py: namespaces shop (db, backend, web), tenant-a and tenant-b
(labelled tenant=yes), pods 10.244.<node>.x, external 192.0.2.0/24.
"""

from __future__ import annotations

from typing import Any

import pytest

from knetsim.policy import connections, direction_connections, evaluate
from knetsim.policy.engine import policy_index
from knetsim.policy.lint import lint
from knetsim.policy.matrix import matrix

from .helpers import (
    DEFAULT_DENY_ALL,
    DEFAULT_DENY_INGRESS,
    adminpolicy,
    clusterpolicy,
    namespace_is,
    netpol,
    ns,
    pod,
    state,
)

BASE = [ns("shop"), ns("tenant-a", tenant="yes"), ns("tenant-b", tenant="yes"),
        pod("shop/db", {"app": "db"}, ports={"pg": 5432}), pod("shop/backend", {"role": "backend"}),
        pod("shop/web", {"app": "web"}, ports={"http": 80}),
        pod("tenant-a/t", {"role": "backend"}), pod("tenant-b/u", {"role": "backend"}, node="worker2")]
DB = {"pods": {"namespaceSelector": namespace_is("shop"), "podSelector": {"matchLabels": {"app": "db"}}}}
TENANTS = {"namespaces": {"matchLabels": {"tenant": "yes"}}}
DB_ALLOW_BACKEND = netpol("shop/db-allow-backend", {
    "podSelector": {"matchLabels": {"app": "db"}},
    "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"role": "backend"}}}],
                 "ports": [{"port": 5432}]}]})
BLOCK_DB = clusterpolicy("block-db", "Admin", 10, DB, ingress=[
    {"name": "deny-from-tenants", "action": "Deny", "from": [TENANTS]}])
TCP_5432 = [{"tcp": {"destinationPort": {"number": 5432}}}]


def check(objects: list[dict[str, Any]], src: str, dst: str, port: int | str = 5432, protocol: str = "TCP", *,
          experimental: bool = False) -> Any:
    return evaluate(state(*objects, experimental=experimental), src, dst, port, protocol)


# --- the example, word for word -------------------------------------------------------


def test_an_admin_deny_beats_a_networkpolicy_allow_and_says_so() -> None:
    v = check([*BASE, DB_ALLOW_BACKEND, BLOCK_DB], "tenant-a/t", "shop/db")
    assert not v.allowed
    assert v.ingress.tier == "Admin"
    assert v.ingress.reason == ("denied by ClusterNetworkPolicy `block-db` rule `deny-from-tenants` (Admin tier, "
                                "priority 10); the NetworkPolicy `db-allow-backend` would have allowed it")
    assert v.ingress.decided_by is not None and v.ingress.decided_by.to_dict() == {
        "kind": "ClusterNetworkPolicy", "name": "block-db", "tier": "Admin", "priority": 10, "direction": "ingress",
        "rule": 0, "ruleName": "deny-from-tenants", "action": "Deny", "peer": 0, "port": "any"}
    # ... and only the tenants: the backend of shop itself still gets in through the NetworkPolicy.
    ok = check([*BASE, DB_ALLOW_BACKEND, BLOCK_DB], "shop/backend", "shop/db")
    assert ok.allowed and ok.ingress.tier == "NetworkPolicy" and ok.ingress.decided_by is None


def test_an_admin_accept_beats_a_networkpolicy_deny() -> None:
    accept = clusterpolicy("monitoring", "Admin", 5, DB, ingress=[
        {"name": "from-tenant-a", "action": "Accept", "from": [{"namespaces": namespace_is("tenant-a")}]}])
    v = check([*BASE, netpol("shop/default-deny", DEFAULT_DENY_INGRESS), accept], "tenant-a/t", "shop/db")
    assert v.allowed and v.ingress.tier == "Admin"
    assert v.ingress.reason == ("allowed by ClusterNetworkPolicy `monitoring` rule `from-tenant-a` (Admin tier, "
                                "priority 5); the NetworkPolicies isolating it (`default-deny`) would have denied it")
    assert not check([*BASE, netpol("shop/default-deny", DEFAULT_DENY_INGRESS), accept], "tenant-b/u",
                     "shop/db").allowed


# --- Pass ------------------------------------------------------------------------------------------


def test_pass_hands_an_isolated_pod_to_its_networkpolicies() -> None:
    passing = clusterpolicy("delegate", "Admin", 1, DB, ingress=[
        {"name": "tenants-decide", "action": "Pass", "from": [TENANTS]}])
    objects = [*BASE, DB_ALLOW_BACKEND, passing, BLOCK_DB]  # the Deny comes later in the tier: skipped
    v = check(objects, "tenant-a/t", "shop/db")
    assert v.allowed and v.ingress.tier == "NetworkPolicy"
    assert v.ingress.reason == (
        "passed by ClusterNetworkPolicy `delegate` rule `tenants-decide` (Admin tier, priority 1) to the "
        "NetworkPolicy tier; isolated by NetworkPolicy shop/db-allow-backend; allowed by NetworkPolicy "
        "shop/db-allow-backend ingress[0].from[0].ports[0]")
    assert [m.action for m in v.ingress.passed_by] == ["Pass"]
    # The NetworkPolicy still decides, and it decides no on a port it does not list.
    assert not check(objects, "tenant-a/t", "shop/db", 22).allowed


def test_pass_skips_only_its_own_tier_the_baseline_still_decides() -> None:
    passing = clusterpolicy("delegate", "Admin", 1, DB, ingress=[{"action": "Pass", "from": [TENANTS]}])
    baseline = clusterpolicy("isolate-tenants", "Baseline", 1, DB, ingress=[
        {"name": "no-tenants", "action": "Deny", "from": [TENANTS]}])
    v = check([*BASE, passing, baseline], "tenant-a/t", "shop/db")  # no NetworkPolicy selects db
    assert not v.allowed and v.ingress.tier == "Baseline"
    assert v.ingress.reason == (
        "passed by ClusterNetworkPolicy `delegate` rule #1 (spec.ingress[0]) (Admin tier, priority 1); denied by "
        "ClusterNetworkPolicy `isolate-tenants` rule `no-tenants` (Baseline tier, priority 1); no NetworkPolicy "
        "selects shop/db for ingress")


def test_a_baseline_pass_leaves_the_default_allow() -> None:
    baseline = [clusterpolicy("a-pass", "Baseline", 1, DB, ingress=[{"action": "Pass", "from": [TENANTS]}]),
                clusterpolicy("b-deny", "Baseline", 2, DB, ingress=[{"action": "Deny", "from": [TENANTS]}])]
    v = check([*BASE, *baseline], "tenant-a/t", "shop/db")
    assert v.allowed and v.ingress.tier == "default"
    assert "allowed by default" in v.ingress.reason


# --- the Baseline tier only sees pods no NetworkPolicy selects (in that direction) ----------------


def test_baseline_is_overridden_by_any_networkpolicy_that_isolates_the_pod() -> None:
    baseline = clusterpolicy("default", "Baseline", 10, {"namespaces": {}}, ingress=[
        {"name": "deny-all", "action": "Deny", "from": [{"namespaces": {}}]}])
    assert not check([*BASE, baseline], "shop/backend", "shop/db").allowed
    # A NetworkPolicy that selects db for ingress takes db out of the Baseline tier's hands, both ways:
    with_np = [*BASE, baseline, DB_ALLOW_BACKEND]
    assert check(with_np, "shop/backend", "shop/db").allowed
    denied = check(with_np, "shop/web", "shop/db")
    assert not denied.allowed and denied.ingress.tier == "NetworkPolicy"
    # ... while pods it does not select stay under the baseline.
    assert not check(with_np, "shop/db", "shop/web", 80).allowed


def test_baseline_sees_the_direction_networkpolicy_does_not_isolate() -> None:
    baseline = clusterpolicy("default", "Baseline", 10, {"namespaces": namespace_is("shop")}, egress=[
        {"name": "no-internet", "action": "Deny", "to": [{"networks": ["0.0.0.0/0"]}]}])
    ingress_only = netpol("shop/in", DEFAULT_DENY_INGRESS)
    v = check([*BASE, baseline, ingress_only], "shop/web", "192.0.2.10", 443)
    assert not v.allowed and v.egress.tier == "Baseline"
    # A NetworkPolicy that isolates egress (and allows it) overrides the baseline's egress deny.
    allow_out = netpol("shop/out", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{}]})
    assert check([*BASE, baseline, ingress_only, allow_out], "shop/web", "192.0.2.10", 443).allowed


# --- priorities and rule order -------------------------------------------------------------------


def test_lower_priority_number_decides_first_whatever_the_names_and_file_order() -> None:
    deny = clusterpolicy("aaa-deny", "Admin", 20, DB, ingress=[{"action": "Deny", "from": [TENANTS]}])
    accept = clusterpolicy("zzz-accept", "Admin", 3, DB, ingress=[{"action": "Accept", "from": [TENANTS]}])
    for objects in ([*BASE, deny, accept], [*BASE, accept, deny]):
        v = check(objects, "tenant-a/t", "shop/db")
        assert v.allowed and v.ingress.decided_by is not None and v.ingress.decided_by.policy == "zzz-accept"


def test_rules_within_a_policy_apply_in_order() -> None:
    rules = [{"name": "accept-pg", "action": "Accept", "from": [TENANTS], "protocols": TCP_5432},
             {"name": "deny-rest", "action": "Deny", "from": [TENANTS]}]
    objects = [*BASE, clusterpolicy("ordered", "Admin", 1, DB, ingress=rules)]
    assert check(objects, "tenant-a/t", "shop/db").allowed
    v = check(objects, "tenant-a/t", "shop/db", 22)
    assert not v.allowed and v.ingress.decided_by is not None and v.ingress.decided_by.name == "deny-rest"
    swapped = [*BASE, clusterpolicy("ordered", "Admin", 1, DB, ingress=rules[::-1])]
    assert not check(swapped, "tenant-a/t", "shop/db").allowed


def test_equal_priorities_that_overlap_are_taken_by_name_and_the_verdict_says_so() -> None:
    deny = clusterpolicy("b-deny", "Admin", 7, DB, ingress=[{"action": "Deny", "from": [TENANTS]}])
    accept = clusterpolicy("a-accept", "Admin", 7, DB, ingress=[{"action": "Accept", "from": [TENANTS]}])
    v = check([*BASE, deny, accept], "tenant-a/t", "shop/db")
    assert v.allowed and v.ingress.decided_by is not None and v.ingress.decided_by.policy == "a-accept"
    assert [m.policy for m in v.ingress.contested] == ["b-deny"]
    assert ("(equal priority 7 with ClusterNetworkPolicy `b-deny` (Deny): the API leaves the order to the "
            "implementation; knetsim takes them by name, as kube-network-policies and Calico do)") in v.ingress.reason
    # Equal priorities that agree are no contest.
    agree = clusterpolicy("c-accept", "Admin", 7, DB, ingress=[{"action": "Accept", "from": [TENANTS]}])
    assert check([*BASE, agree, accept], "tenant-a/t", "shop/db").ingress.contested == ()


# --- both sides of a connection ------------------------------------------------------------------


def test_the_egress_of_the_source_and_the_ingress_of_the_destination_both_count() -> None:
    no_egress = clusterpolicy("tenants-no-db", "Admin", 1, {"namespaces": {"matchLabels": {"tenant": "yes"}}},
                              egress=[{"name": "not-db", "action": "Deny", "to": [DB]}])
    v = check([*BASE, no_egress], "tenant-a/t", "shop/db")
    assert not v.allowed and v.egress.tier == "Admin" and v.ingress.allowed
    # An Accept at the source does not open the destination: its ingress still decides.
    yes_egress = clusterpolicy("tenants-db", "Admin", 1, {"namespaces": {"matchLabels": {"tenant": "yes"}}},
                               egress=[{"action": "Accept", "to": [DB]}])
    both = check([*BASE, yes_egress, BLOCK_DB], "tenant-a/t", "shop/db")
    assert both.egress.allowed and not both.ingress.allowed and not both.allowed


# --- peers and ports ------------------------------------------------------------------------------


def test_networks_match_pod_ips_node_ips_and_external_addresses() -> None:
    s = state(*BASE)
    db_ip = s.pods["shop/db"].pod_ip
    deny = clusterpolicy("cidr", "Admin", 1, {"namespaces": namespace_is("tenant-a")}, egress=[
        {"name": "db-ip", "action": "Deny", "to": [{"networks": [f"{db_ip}/32"]}]},
        {"name": "nodes", "action": "Deny", "to": [{"networks": ["172.18.0.0/24"]}]},
        {"name": "doc-range", "action": "Deny", "to": [{"networks": ["192.0.2.0/24"]}]}])
    objects = [*BASE, deny]
    assert not check(objects, "tenant-a/t", "shop/db").allowed
    assert check(objects, "tenant-a/t", "shop/backend").allowed
    assert not check(objects, "tenant-a/t", "172.18.0.3", 10250).allowed
    v = check(objects, "tenant-a/t", "192.0.2.7", 443)
    assert not v.allowed and v.egress.decided_by is not None and v.egress.decided_by.name == "doc-range"
    assert check(objects, "tenant-a/t", "198.51.100.1", 443).allowed


def test_a_named_port_resolves_on_each_destination_pod_with_its_own_protocol() -> None:
    objects = [ns("a"), ns("b"), pod("a/client", {"role": "c"}),
               pod("b/tcp", {"app": "s"}, ports={"svc": 8080}), pod("b/udp", {"app": "s"}, udp={"svc": 5353})]
    deny = clusterpolicy("named", "Admin", 1, {"namespaces": namespace_is("a")}, egress=[
        {"action": "Deny", "to": [{"namespaces": namespace_is("b")}], "protocols": [{"destinationNamedPort": "svc"}]}])
    s = state(*objects, deny)
    assert not evaluate(s, "a/client", "b/tcp", 8080, "TCP").allowed
    assert evaluate(s, "a/client", "b/tcp", 5353, "UDP").allowed
    assert not evaluate(s, "a/client", "b/udp", 5353, "UDP").allowed
    assert evaluate(s, "a/client", "b/udp", 8080, "TCP").allowed
    assert direction_connections(s, "egress", "a/client", "b/tcp").describe() == (
        "SCTP all ports; TCP 1-8079,8081-65535; UDP all ports; other protocols")


def test_ranges_and_protocols_and_a_rule_without_protocols_takes_every_protocol() -> None:
    rules = [{"action": "Accept", "from": [TENANTS], "protocols": [
                 {"tcp": {"destinationPort": {"range": {"start": 8000, "end": 8100}}}},
                 {"udp": {"destinationPort": {"number": 53}}}]},
             {"action": "Deny", "from": [TENANTS]}]
    s = state(*BASE, clusterpolicy("r", "Admin", 1, DB, ingress=rules))
    assert connections(s, "tenant-a/t", "shop/db").describe() == "TCP 8000-8100; UDP 53"


def test_ingress_peers_never_match_outside_addresses_or_hostnetwork_pods() -> None:
    deny_all = clusterpolicy("all", "Admin", 1, DB, ingress=[{"action": "Deny", "from": [{"namespaces": {}}]}])
    objects = [*BASE, deny_all, pod("tenant-a/hostnet", {"role": "backend"}, host_network=True, node="worker2")]
    assert not check(objects, "tenant-a/t", "shop/db").allowed
    assert check(objects, "192.0.2.9", "shop/db").allowed
    assert check(objects, "tenant-a/hostnet", "shop/db").allowed


def test_the_subject_never_includes_hostnetwork_pods() -> None:
    deny_all = clusterpolicy("all", "Admin", 1, {"namespaces": {}}, egress=[
        {"action": "Deny", "to": [{"networks": ["0.0.0.0/0"]}]}])
    objects = [*BASE, deny_all, pod("tenant-a/hostnet", {}, host_network=True)]
    assert not check(objects, "tenant-a/t", "192.0.2.9", 443).allowed
    v = check(objects, "tenant-a/hostnet", "192.0.2.9", 443)
    assert v.allowed and not v.egress.enforced


# --- v1alpha1: the same answers ---------------------------------------------------------------------


V1ALPHA2 = [
    clusterpolicy("guard", "Admin", 10, {"namespaces": namespace_is("shop")}, ingress=[
        {"name": "tenants-pg", "action": "Pass", "from": [TENANTS], "protocols": TCP_5432},
        {"name": "no-tenants", "action": "Deny", "from": [TENANTS]},
        {"name": "shop", "action": "Accept", "from": [{"pods": {"namespaceSelector": namespace_is("shop"),
                                                                "podSelector": {}}}]}],
        egress=[{"name": "no-doc-range", "action": "Deny", "to": [{"networks": ["192.0.2.0/24"]}],
                 "protocols": [{"tcp": {"destinationPort": {"range": {"start": 400, "end": 500}}}}]}]),
    clusterpolicy("default", "Baseline", 0, {"namespaces": {}}, ingress=[
        {"name": "deny-tenants", "action": "Deny", "from": [TENANTS]}]),
]
V1ALPHA1 = [
    adminpolicy("guard", 10, {"namespaces": namespace_is("shop")}, ingress=[
        {"name": "tenants-pg", "action": "Pass", "from": [TENANTS], "ports": [{"portNumber": {"port": 5432}}]},
        {"name": "no-tenants", "action": "Deny", "from": [TENANTS]},
        {"name": "shop", "action": "Allow", "from": [{"pods": {"namespaceSelector": namespace_is("shop"),
                                                               "podSelector": {}}}]}],
        egress=[{"name": "no-doc-range", "action": "Deny", "to": [{"networks": ["192.0.2.0/24"]}],
                 "ports": [{"portRange": {"protocol": "TCP", "start": 400, "end": 500}}]}]),
    adminpolicy("default", None, {"namespaces": {}}, ingress=[
        {"name": "deny-tenants", "action": "Deny", "from": [TENANTS]}]),
]


@pytest.mark.parametrize("extra", [[], [DB_ALLOW_BACKEND], [netpol("shop/all", DEFAULT_DENY_ALL)]],
                         ids=["no-networkpolicy", "db-allow-backend", "default-deny"])
def test_admin_and_baseline_admin_network_policies_answer_as_their_cluster_network_policies(
        extra: list[dict[str, Any]]) -> None:
    new, old = state(*BASE, *extra, *V1ALPHA2), state(*BASE, *extra, *V1ALPHA1)
    assert [(p.tier, p.name) for p in policy_index(old).cluster] == [("Admin", "guard"), ("Baseline", "default")]
    endpoints = [*sorted(new.pods), "192.0.2.10"]
    for src in endpoints:
        for dst in endpoints:
            if src[0].isdigit() and dst[0].isdigit():
                continue
            assert connections(new, src, dst) == connections(old, src, dst), (src, dst)
    v = evaluate(old, "tenant-a/t", "shop/db", 22)
    assert v.ingress.reason.startswith("denied by AdminNetworkPolicy `guard` rule `no-tenants` (Admin tier, "
                                       "priority 10)")
    assert matrix(new).to_dict() == matrix(old).to_dict()


def test_the_baseline_admin_network_policy_comes_after_every_baseline_cluster_network_policy() -> None:
    banp = adminpolicy("default", None, DB, ingress=[{"name": "deny", "action": "Deny", "from": [TENANTS]}])
    cnp = clusterpolicy("late", "Baseline", 1000, DB, ingress=[{"name": "ok", "action": "Accept", "from": [TENANTS]}])
    v = check([*BASE, banp, cnp], "tenant-a/t", "shop/db")
    assert v.allowed and v.ingress.reason.startswith(
        "allowed by ClusterNetworkPolicy `late` rule `ok` (Baseline tier, priority 1000)")
    alone = check([*BASE, banp], "tenant-a/t", "shop/db")
    assert alone.ingress.reason.startswith(
        "denied by BaselineAdminNetworkPolicy `default` rule `deny` (Baseline tier); no NetworkPolicy selects")


# --- where they are not enforced ------------------------------------------------------------------


def test_cilium_does_not_enforce_them_and_every_verdict_says_so() -> None:
    s = state(*BASE, BLOCK_DB, dataplane="ebpf")
    v = evaluate(s, "tenant-a/t", "shop/db", 5432)
    assert v.allowed
    assert v.notes == ("ClusterNetworkPolicy block-db is not enforced: Cilium (the ebpf data plane) does not "
                       "implement the network-policy-api kinds (cilium/cilium#23380)",)


# --- the matrix says which tier decided ------------------------------------------------------------


def test_matrix_cells_name_the_tier_that_denied_them() -> None:
    from pathlib import Path

    from knetsim import Cluster
    from knetsim.policy.render import grid_rows

    example = Path(__file__).resolve().parents[2] / "examples" / "cluster-policy"
    s = Cluster.from_paths([str(example)]).state
    m = matrix(s)
    marks = {"Admin": "A", "Baseline": "B", "NetworkPolicy": "X"}
    seen = set()
    for port in (80, 5432, 8080, 9090):
        codes = m.deciding_tiers("TCP", port)
        for i, line in grid_rows(m, "TCP", port):
            for j, mark in enumerate(line.split(" ")):
                a, b = m.rows.members[i][0], m.rows.members[j][0]
                if a.kind == "external" or b.kind == "external" or a is b:
                    continue
                v = evaluate(s, a.pod, b.pod, port)
                assert m.tier_of(codes, i, j) == (v.egress.tier, v.ingress.tier), (m.names[i], m.names[j], port)
                if v.allowed:
                    assert mark == ".", (m.names[i], m.names[j], port)
                    continue
                side = v.egress if not v.egress.allowed else v.ingress
                assert mark == marks[side.tier], (m.names[i], m.names[j], port)
                seen.add(mark)
    assert seen == {"A", "B", "X"}


# --- experimental-channel peers, and objects the CRD refuses ----------------------------------------


def test_a_nodes_peer_matches_the_addresses_of_the_nodes_it_selects() -> None:
    to_worker = clusterpolicy("nodes", "Admin", 1, {"namespaces": namespace_is("tenant-a")}, egress=[
        {"name": "no-worker", "action": "Deny",
         "to": [{"nodes": {"matchLabels": {"kubernetes.io/hostname": "worker"}}}]}])
    hostnet = pod("shop/agent", {}, host_network=True, node="worker", ports={"metrics": 9100})
    objects = [*BASE, to_worker, hostnet]
    assert not check(objects, "tenant-a/t", "172.18.0.3", 10250, experimental=True).allowed  # worker's address
    # a hostNetwork pod there is the node
    assert not check(objects, "tenant-a/t", "shop/agent", 9100, experimental=True).allowed
    assert check(objects, "tenant-a/t", "172.18.0.4", 10250, experimental=True).allowed  # worker2 is not selected
    assert check(objects, "tenant-a/t", "shop/db", experimental=True).allowed  # pods are not nodes


def test_domain_names_match_nothing_here_and_the_rule_says_why() -> None:
    domains = clusterpolicy("egress", "Admin", 1, {"namespaces": namespace_is("tenant-a")}, egress=[
        {"name": "apis", "action": "Accept", "to": [{"domainNames": ["*.example.com"]}]},
        {"name": "rest", "action": "Deny", "to": [{"networks": ["0.0.0.0/0"]}]}])
    v = check([*BASE, domains], "tenant-a/t", "192.0.2.10", 443, experimental=True)
    assert not v.allowed and v.egress.decided_by is not None and v.egress.decided_by.name == "rest"
    from knetsim.policy.describe import describe

    (d,) = describe(state(*BASE, domains, experimental=True), "egress")
    assert d.egress[0].peers[0].text == ("domain names *.example.com (not simulated: knetsim resolves no name outside "
                                         "the cluster, so this peer matches nothing)")


@pytest.mark.parametrize(("spec", "messages"), [
    ({"tier": "Admin", "priority": 1, "subject": {"namespaces": {}},
      "ingress": [{"action": "Allow", "from": [{"namespaces": {}}]}]},
     ['spec.ingress[0].action: Unsupported value: "Allow": supported values: "Accept", "Deny", "Pass"']),
    ({"tier": "Admin", "subject": {"namespaces": {}}}, ["spec.priority: Required value"]),
    ({"tier": "Top", "priority": 1, "subject": {"namespaces": {}}},
     ['spec.tier: Unsupported value: "Top": supported values: "Admin", "Baseline"']),
    ({"tier": "Admin", "priority": 2000, "subject": {"namespaces": {}}},
     ["spec.priority: Invalid value: 2000: spec.priority in body should be less than or equal to 1000"]),
    ({"tier": "Admin", "priority": 1, "subject": {"namespaces": {}},
      "egress": [{"action": "Deny", "to": [{"networks": ["10.0.0.0/33"]}]}]},
     ['spec.egress[0].to[0].networks[0]: Invalid value: "string": Invalid CIDR format provided']),
    ({"tier": "Admin", "priority": 1, "subject": {"namespaces": {}},
      "ingress": [{"action": "Deny", "from": [{"namespaces": {}}],
                   "protocols": [{"tcp": {"destinationPort": {"range": {"start": 9, "end": 3}}}}]}]},
     ['spec.ingress[0].protocols[0].tcp.destinationPort.range: Invalid value: "object": Start port must be less '
      'than End port']),
    ({"tier": "Admin", "priority": 1, "subject": {"namespaces": {}},
      "ingress": [{"action": "Deny", "from": [{"namespaces": {}, "pods": {"podSelector": {}}}]}]},
     ["spec.ingress[0].from[0]: Too many: 2: must have at most 1 item"]),
    ({"tier": "Admin", "priority": 1, "subject": "everyone", "ingress": "all"},
     ['spec.subject: Invalid value: "string": spec.subject in body must be of type object: "string"',
      'spec.ingress: Invalid value: "string": spec.ingress in body must be of type array: "string"']),
])
def test_a_cluster_policy_the_crd_refuses_is_left_out_in_the_api_servers_words(spec: dict[str, Any],
                                                                              messages: list[str]) -> None:
    """Given a ClusterNetworkPolicy its CRD refuses, then it is left out and reported with the field named, as
    kube-apiserver words it; the rest is simulated (the connection it would have denied is allowed)."""
    import yaml
    from click.testing import CliRunner

    from knetsim import Cluster
    from knetsim.cli.main import cli

    bad = {"apiVersion": "policy.networking.k8s.io/v1alpha2", "kind": "ClusterNetworkPolicy",
           "metadata": {"name": "bad"}, "spec": spec}
    c = Cluster.from_yaml(yaml.safe_dump_all([*BASE, bad]), strict=False)
    errors = [str(e.error) for e in c.errors]
    assert sorted(e for e in errors if not e.startswith("<nil>: Invalid value: null: some validation rules")) == \
        sorted(messages)
    assert evaluate(c.state, "tenant-a/t", "shop/db", 5432, "TCP").allowed
    assert not [f for f in lint(c.state) if f.code == "ClusterPolicyInvalid"]
    result = CliRunner().invoke(cli, ["validate", "-f", "-"], input=yaml.safe_dump_all([*BASE, bad]))
    assert result.exit_code == 2 and all(m in result.output for m in messages)
    assert "-, document 9: ClusterNetworkPolicy bad: " in result.output


def test_a_cluster_policy_its_crd_admits_but_no_implementation_can_enforce_is_ignored_and_linted() -> None:
    """Given a ClusterNetworkPolicy whose selector operator is misspelt (the CRD takes any string there), then it
    is stored, ignored by every verdict (which says so), and lint reports it with the field named."""
    import yaml
    from click.testing import CliRunner

    from knetsim.cli.main import cli

    odd = clusterpolicy("odd", "Admin", 1, {"namespaces": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "Inn", "values": ["tenant-a"]}]}},
        ingress=[{"action": "Deny", "from": [{"namespaces": {}}]}])
    message = ('spec.subject.namespaces.matchExpressions[0].operator: Unsupported value: "Inn": supported values: '
               '"In", "NotIn", "Exists", "DoesNotExist"')
    assert CliRunner().invoke(cli, ["validate", "-f", "-"], input=yaml.safe_dump_all([*BASE, odd])).exit_code == 0
    v = check([*BASE, odd], "tenant-a/t", "shop/db")
    assert v.allowed and len(v.notes) == 1 and message in v.notes[0] and v.notes[0].startswith("ignored: ")
    (found,) = [f for f in lint(state(*BASE, odd)) if f.code == "ClusterPolicyInvalid"]
    assert found.severity == "error" and message in found.message


def test_the_policy_check_json_in_the_docs_is_the_real_output() -> None:
    import json
    import re
    from pathlib import Path

    from click.testing import CliRunner

    from knetsim.cli.main import cli

    root = Path(__file__).resolve().parents[2]
    section = (root / "docs" / "policy.md").read_text().split("## `policy check -o json`", 1)[1].split("\n## ", 1)[0]
    shop_doc, tiers_doc = (json.loads(b) for b in re.findall(r"```json\n(.*?)```", section, re.S))

    def run(*args: str) -> dict[str, Any]:
        return json.loads(CliRunner().invoke(cli, ["policy", "check", *args, "-o", "json"]).output)

    shop = run("-f", str(root / "examples" / "shop"), "--from", "shop/web-7c8c4869fb-knbt7", "--to", "shop/db-0",
               "--port", "5432")
    for side in ("egress", "ingress"):  # the example abridges rule lists, never a field
        assert set(shop_doc[side]) == set(shop[side])
        assert {k: shop[side][k] for k in ("reason", "tier", "allowed", "isolated")} == \
            {k: shop_doc[side][k] for k in ("reason", "tier", "allowed", "isolated")}
    tiers = run("-f", str(root / "examples" / "cluster-policy"), "--from", "tenant-a/app-0", "--to", "shop/db-0",
                "--port", "5432")
    assert {k: tiers["ingress"][k] for k in tiers_doc} == tiers_doc
