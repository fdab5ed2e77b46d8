"""Antrea's own documentation examples, asked of knetsim as a user pasting them would, on an Antrea cluster.

Source: antrea-io/antrea ``docs/antrea-network-policy.md`` (sections named on each test). Each test restates the
doc's scenario in our own words: the example's policy (its fields as the doc gives them), the few pods and
namespaces it implies, and the outcome the doc says Antrea gives. Where knetsim does not simulate what an
example uses, the test checks that the answer says so.
"""

from __future__ import annotations

from typing import Any

import yaml

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig, config_from_dict
from knetsim.network.tracer import trace
from knetsim.policy import evaluate
from knetsim.policy.engine import policy_index
from knetsim.policy.lint import lint
from knetsim.policy.matrix import matrix

from .helpers import netpol, ns, pod

ACNP = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "ClusterNetworkPolicy"}


def acnp(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {**ACNP, "metadata": {"name": name}, "spec": spec}


def state(*objects: dict[str, Any], outside: dict[str, list[str]] | None = None) -> Any:
    config = ClusterConfig(cni="antrea") if outside is None else \
        config_from_dict({"cni": "antrea", "outside": {"hosts": outside}})
    return Cluster.from_yaml(yaml.safe_dump_all(list(objects), sort_keys=False), config=config).state


def xyz_world() -> list[dict[str, Any]]:
    """The doc's "minimalistic cluster": namespaces labelled ns=x, ns=y, ns=z, each with pods app=a, app=b, app=c."""
    out: list[dict[str, Any]] = []
    for n in "xyz":
        out.append(ns(n, ns=n))
        out += [pod(f"{n}/{p}", {"app": p}, ports={"http": 80}, node=["worker", "worker2", "control-plane"][i])
                for i, p in enumerate("abc")]
    return out


# --- "Selecting Pods in the same Namespace with Self" -------------------------------------------------------------

ALLOW_SELF_NS = acnp("allow-self-ns", {
    "priority": 1, "tier": "platform", "appliedTo": [{"namespaceSelector": {}}],
    "ingress": [{"action": "Allow", "from": [{"namespaces": {"match": "Self"}}]}, {"action": "Drop"}],
    "egress": [{"action": "Allow", "to": [{"namespaces": {"match": "Self"}}]}, {"action": "Drop"}]})
DENY_SELF_A_TO_B = acnp("deny-self-ns-a-to-b", {
    "priority": 1, "tier": "securityops",
    "appliedTo": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "b"}}}],
    "ingress": [{"action": "Drop", "from": [{"namespaces": {"match": "Self"},
                                             "podSelector": {"matchLabels": {"app": "a"}}}]}]})


def test_self_namespace_policies_leave_x_a_only_x_c() -> None:
    # The doc: with both policies applied, the only other pod x/a can reach in the cluster is x/c.
    s = state(*xyz_world(), ALLOW_SELF_NS, DENY_SELF_A_TO_B)
    others = [f"{n}/{p}" for n in "xyz" for p in "abc" if f"{n}/{p}" != "x/a"]
    assert [p for p in others if evaluate(s, "x/a", p, 80).allowed] == ["x/c"]
    m = matrix(s, pods=True)
    assert [p for p in others if m.allowed_between("x/a", p).contains("TCP", 80)] == ["x/c"]
    v = evaluate(s, "x/a", "x/b", 80)
    assert v.ingress.antrea.match.policy == "deny-self-ns-a-to-b"  # type: ignore[union-attr]


def test_the_docs_deny_action_is_refused_and_said() -> None:
    # The doc writes `action: Deny` in these two examples; Antrea's CRD admits Allow, Drop, Reject and Pass only
    # (build/charts/antrea/crds/clusternetworkpolicy.yaml), so the API server refuses them: knetsim says so.
    verbatim = yaml.safe_load(yaml.safe_dump(ALLOW_SELF_NS).replace("Drop", "Deny"))
    s = state(*xyz_world(), verbatim)
    problems = policy_index(s).problems
    assert any("allow-self-ns: spec.ingress[1].action: Unsupported value: 'Deny': supported values: Allow, Drop, "
               "Reject, Pass" in p for p in problems)


# --- "ACNP for strict Namespace isolation" -----------------------------------------------------------------------

STRICT_NS_ISOLATION = acnp("strict-ns-isolation", {
    "priority": 5, "tier": "securityops",
    "appliedTo": [{"namespaceSelector": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]}}],
    "ingress": [{"action": "Pass", "from": [{"namespaces": {"match": "Self"}}], "name": "PassFromSameNS"},
                {"action": "Drop", "from": [{"namespaceSelector": {}}], "name": "DropFromAllOtherNS"}],
    "egress": [{"action": "Pass", "to": [{"namespaces": {"match": "Self"}}], "name": "PassToSameNS"},
               {"action": "Drop", "to": [{"namespaceSelector": {}}], "name": "DropToAllOtherNS"}]})


def test_strict_namespace_isolation_passes_same_namespace_to_kubernetes_policy() -> None:
    s = state(*xyz_world(), STRICT_NS_ISOLATION)
    same = evaluate(s, "x/a", "x/b", 80)
    assert same.allowed and same.egress.antrea.match.action == "Pass"  # type: ignore[union-attr]
    across = evaluate(s, "x/a", "y/a", 80)
    assert not across.allowed
    assert "`DropToAllOtherNS`" in across.egress.reason
    # Pass hands same-namespace traffic to Kubernetes NetworkPolicy, which can still deny it.
    s = state(*xyz_world(), STRICT_NS_ISOLATION, netpol("x/deny", {"podSelector": {}, "policyTypes": ["Ingress"]}))
    assert not evaluate(s, "x/a", "x/b", 80).allowed


# --- "ACNP for default zero-trust cluster security posture" + "Static tiers" (baseline after K8s NP) ------------

DEFAULT_CLUSTER_DENY = acnp("default-cluster-deny", {
    "priority": 1, "tier": "baseline", "appliedTo": [{"namespaceSelector": {}}],
    "ingress": [{"action": "Drop"}], "egress": [{"action": "Drop"}]})


def test_zero_trust_baseline_drops_what_no_kubernetes_policy_allows() -> None:
    s = state(*xyz_world(), DEFAULT_CLUSTER_DENY)
    assert not evaluate(s, "x/a", "x/b", 80).allowed
    # Developers lift it with Kubernetes NetworkPolicy, which comes before the baseline tier.
    lift = [netpol("x/b-from-a", {"podSelector": {"matchLabels": {"app": "b"}},
                                  "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "a"}}}]}]}),
            netpol("x/a-to-b", {"podSelector": {"matchLabels": {"app": "a"}}, "policyTypes": ["Egress"],
                                "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "b"}}}]}]})]
    s = state(*xyz_world(), DEFAULT_CLUSTER_DENY, *lift)
    assert evaluate(s, "x/a", "x/b", 80).allowed
    assert not evaluate(s, "y/a", "x/b", 80).allowed


def test_zero_trust_baseline_is_named_as_what_blocks_dns() -> None:
    # The example's Drop applies to every pod, DNS lookups included: doctor must say it, naming the policy, even
    # for pods no Kubernetes NetworkPolicy selects (before, only NetworkPolicy isolation was looked at).
    s = state(*xyz_world(), DEFAULT_CLUSTER_DENY)
    blocked = [f for f in lint(s) if f.code == "DNSEgressBlocked"]
    assert {f.subject for f in blocked} >= {"Namespace x", "Namespace y", "Namespace z"}
    assert all("ClusterNetworkPolicy.crd.antrea.io default-cluster-deny" in f.message for f in blocked)


# --- "ClusterGroup CRD": selectors, ipBlocks, serviceReference, childGroups --------------------------------------


def cluster_group(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "crd.antrea.io/v1beta1", "kind": "ClusterGroup", "metadata": {"name": name}, "spec": spec}


GROUPS = [
    cluster_group("test-cg-sel", {"podSelector": {"matchLabels": {"role": "db"}},
                                  "namespaceSelector": {"matchLabels": {"env": "prod"}}}),
    cluster_group("test-cg-ip-block", {"ipBlocks": [{"cidr": "10.0.10.0/24"}]}),
    cluster_group("test-cg-svc-ref", {"serviceReference": {"name": "test-service", "namespace": "default"}}),
    cluster_group("test-cg-nested", {"childGroups": ["test-cg-sel", "test-cg-ip-block", "test-cg-svc-ref"]}),
]
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "test-service", "namespace": "default"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
GROUP_WORLD = [ns("default"), ns("prod", env="prod"), pod("default/client", {"role": "client"}),
               pod("default/web", {"app": "web"}, ports={"http": 80}), pod("default/other", {"app": "other"}),
               pod("prod/db", {"role": "db"}, ports={"http": 80}, node="worker2"),
               pod("default/db", {"role": "db"}, ports={"http": 80})]
DROP_TO_NESTED = acnp("drop-to-nested", {"priority": 5,
                                         "appliedTo": [{"podSelector": {"matchLabels": {"role": "client"}}}],
                                         "egress": [{"action": "Drop", "to": [{"group": "test-cg-nested"}]}]})


def test_a_nested_cluster_group_is_the_union_of_its_children_service_reference_included() -> None:
    s = state(*GROUP_WORLD, SERVICE, *GROUPS, DROP_TO_NESTED)
    # serviceReference: the Service's backend pods (before, such a group silently selected nothing).
    assert not evaluate(s, "default/client", "default/web", 80).allowed
    assert not evaluate(s, "default/client", "prod/db", 80).allowed  # the selector child
    assert not evaluate(s, "default/client", "10.0.10.7", 80).allowed  # the ipBlocks child
    assert evaluate(s, "default/client", "default/db", 80).allowed  # role=db, but not in an env=prod namespace
    assert evaluate(s, "default/client", "default/other", 80).allowed


def test_a_service_reference_to_a_missing_service_is_said() -> None:
    s = state(*GROUP_WORLD, *GROUPS, DROP_TO_NESTED)
    assert evaluate(s, "default/client", "default/web", 80).allowed
    assert any("test-cg-svc-ref: spec.serviceReference default/test-service: no such Service: it selects nothing"
               in p for p in policy_index(s).problems)


# --- "ACNP for toServices rule" / "toServices egress rules" -------------------------------------------------------


def test_to_services_drops_the_cluster_ip_but_not_the_endpoint_itself() -> None:
    objects = [ns("prod", env="prod"), ns("svc-ns"), pod("prod/client", {"role": "client"}),
               pod("svc-ns/backend", {"app": "backend"}, ports={"http": 80}, node="worker2"),
               {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc-name", "namespace": "svc-ns"},
                "spec": {"selector": {"app": "backend"}, "ports": [{"port": 80}]}},
               acnp("acnp-drop-to-services", {
                   "priority": 5, "tier": "securityops",
                   "appliedTo": [{"podSelector": {"matchLabels": {"role": "client"}},
                                  "namespaceSelector": {"matchLabels": {"env": "prod"}}}],
                   "egress": [{"action": "Drop", "toServices": [{"name": "svc-name", "namespace": "svc-ns"}],
                               "name": "DropToServices"}]}),
               # Another policy's Drop on the same pods, which the toServices rule must not be said to shadow.
               acnp("drop-third-party", {
                   "priority": 6, "tier": "securityops",
                   "appliedTo": [{"namespaceSelector": {"matchLabels": {"env": "prod"}}}],
                   "egress": [{"action": "Drop", "to": [{"ipBlock": {"cidr": "10.0.10.0/24"}}],
                               "ports": [{"protocol": "TCP", "port": 5978}]}]})]
    s = state(*objects)
    via_service = trace(s, "prod/client", "svc-name.svc-ns:80")
    assert via_service.outcome == "timeout"
    failing = via_service.failing_hop
    assert failing is not None and failing.layer == "policy" and "`DropToServices`" in failing.detail
    # The doc's caveat: direct access to the Service's endpoints is not affected.
    assert evaluate(s, "prod/client", "svc-ns/backend", 80).allowed
    assert not [f for f in lint(s) if f.code == "AntreaRuleShadowed"]
    assert not evaluate(s, "prod/client", "10.0.10.3", 5978).allowed


# --- "Node Selector" and "ACNP for Kubernetes Node traffic" -------------------------------------------------------


def test_node_selector_peer_drops_egress_to_control_plane_nodes_only() -> None:
    s = state(ns("x"), pod("x/tester", {"app": "antrea-test-app"}), acnp("egress-control-plane", {
        "priority": 1, "appliedTo": [{"podSelector": {"matchLabels": {"app": "antrea-test-app"}}}],
        "egress": [{"action": "Drop", "to": [{"nodeSelector": {"matchLabels": {
            "node-role.kubernetes.io/control-plane": ""}}}], "ports": [{"protocol": "TCP", "port": 6443}]}]}))
    assert not evaluate(s, "x/tester", "172.18.0.2", 6443).allowed  # the control-plane node
    assert evaluate(s, "x/tester", "172.18.0.3", 6443).allowed  # a worker
    assert not any("nodeSelector" in p for p in policy_index(s).problems)  # simulated now, so not "not simulated"


def test_a_node_policy_applies_to_no_pod_and_says_so() -> None:
    node_policy = acnp("acnp-node-egress-traffic-drop", {
        "priority": 5, "tier": "securityops",
        "appliedTo": [{"nodeSelector": {"matchLabels": {"kubernetes.io/os": "linux"}}}],
        "egress": [{"action": "Drop", "to": [{"ipBlock": {"cidr": "192.168.1.0/24"}}],
                    "ports": [{"protocol": "TCP", "port": 80}], "name": "dropHTTPTrafficToCIDR"}]})
    s = state(ns("x"), pod("x/a", {"app": "a"}), node_policy)
    # Before, an appliedTo of nodes was read as "every pod" and dropped this pod's traffic.
    assert evaluate(s, "x/a", "192.168.1.7", 80).allowed
    assert any("acnp-node-egress-traffic-drop: spec.appliedTo[0].nodeSelector: a Node NetworkPolicy" in p
               for p in policy_index(s).problems)


# --- "FQDN based filtering" ---------------------------------------------------------------------------------------

FQDN_POLICY = acnp("acnp-fqdn-all-foobar", {
    "priority": 1, "appliedTo": [{"podSelector": {"matchLabels": {"app": "client"}}}],
    "egress": [{"action": "Allow", "to": [{"fqdn": "*foobar.com"}], "ports": [{"protocol": "TCP", "port": 8080}]},
               {"action": "Drop"}]})
OUTSIDE = {"foobar.com": ["198.51.100.9"], "www.foobar.com": ["198.51.100.10"],
           "test.uswest.foobar.com": ["198.51.100.11"], "other.org": ["198.51.100.20"]}


def test_fqdn_wildcard_spans_subdomains_and_everything_else_is_dropped() -> None:
    s = state(ns("x"), pod("x/client", {"app": "client"}), pod("x/web", {"app": "web"}, ports={"h": 8080}),
              FQDN_POLICY, outside=OUTSIDE)
    for address in ("198.51.100.9", "198.51.100.10", "198.51.100.11"):  # foobar.com, www., test.uswest.
        assert evaluate(s, "x/client", address, 8080).allowed, address
    assert not evaluate(s, "x/client", "198.51.100.10", 443).allowed
    assert not evaluate(s, "x/client", "198.51.100.20", 8080).allowed
    # "all other egress traffic are dropped, in-cluster or out-of-cluster": the FQDN peer is no pod
    # (before, it matched every pod, as an empty peer does).
    assert not evaluate(s, "x/client", "x/web", 8080).allowed
    # The example drops DNS too: doctor names it, as the pod could then learn no address at all.
    assert any(f.code == "DNSEgressBlocked" and "acnp-fqdn-all-foobar" in f.message for f in lint(s))


def test_an_fqdn_no_outside_name_matches_is_said() -> None:
    s = state(ns("x"), pod("x/client", {"app": "client"}), FQDN_POLICY)
    assert any("spec.egress[0].to[0].fqdn '*foobar.com': no name the cluster's DNS answers outside the cluster"
               in p for p in policy_index(s).problems)


# --- "ACNP for HTTP traffic" --------------------------------------------------------------------------------------


def test_l7_examples_are_refused_as_antreas_webhook_refuses_them_without_the_feature_gate() -> None:
    annp = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "NetworkPolicy",
            "metadata": {"name": "ingress-allow-http-request-to-api-v2", "namespace": "default"},
            "spec": {"priority": 5, "tier": "application",
                     "appliedTo": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                     "ingress": [{"name": "allow-http", "action": "Allow",
                                  "from": [{"podSelector": {"matchLabels": {"app": "client"}}}],
                                  "l7Protocols": [{"http": {"path": "/api/v2/*", "host": "foo.bar.com",
                                                            "method": "GET"}}]},
                                 {"name": "drop-other", "action": "Drop"}]}}
    s = state(ns("default"), pod("default/web", {"app": "web"}), pod("default/client", {"app": "client"}), annp)
    v = evaluate(s, "default/client", "default/web", 80)
    assert v.allowed  # the policy is not in force, and the answer says why
    assert any("ingress-allow-http-request-to-api-v2: admission webhook \"annpvalidator.antrea.io\" denied the "
               "request: layer 7 protocols can only be used when L7NetworkPolicy is enabled" in p
               for p in policy_index(s).problems)


def test_the_docs_nested_group_as_written_misses_its_ip_block_child_and_says_so() -> None:
    # The doc's nested ClusterGroup names `test-cg-ip-blocks`, but the group it defines is `test-cg-ip-block`.
    # Antrea admits a missing child (pkg/controller/networkpolicy/validate.go), which then adds no member.
    verbatim = cluster_group("test-cg-nested", {"childGroups": ["test-cg-sel", "test-cg-ip-blocks", "test-cg-svc-ref"]})
    s = state(*GROUP_WORLD, SERVICE, *GROUPS[:3], verbatim, DROP_TO_NESTED)
    assert evaluate(s, "default/client", "10.0.10.7", 80).allowed
    assert not evaluate(s, "default/client", "default/web", 80).allowed  # the children that exist still count
    assert any("ClusterGroup.crd.antrea.io test-cg-nested: spec.childGroups: 'test-cg-ip-blocks': no such "
               "ClusterGroup: it adds no member" in p for p in policy_index(s).problems)


# --- "ACNP for ICMP traffic" --------------------------------------------------------------------------------------


def test_an_icmp_only_reject_rule_leaves_tcp_alone_and_says_icmp_is_not_simulated() -> None:
    reject_ping = acnp("acnp-reject-ping-request", {
        "priority": 5, "tier": "securityops",
        "appliedTo": [{"podSelector": {"matchLabels": {"role": "server"}},
                       "namespaceSelector": {"matchLabels": {"env": "prod"}}}],
        "egress": [{"action": "Reject", "protocols": [{"icmp": {"icmpType": 8, "icmpCode": 0}}],
                    "name": "DropPingRequest"}]})
    s = state(ns("prod", env="prod"), pod("prod/server", {"role": "server"}),
              pod("prod/other", {"role": "other"}, ports={"http": 80}), reject_ping)
    # Before, the rule was read without its `protocols` and refused every TCP connection of the server.
    assert evaluate(s, "prod/server", "prod/other", 80).allowed
    assert any("acnp-reject-ping-request: spec.egress[0].protocols: not simulated, it matches only those "
               "protocols, so no TCP, UDP or SCTP connection" in p for p in policy_index(s).problems)


# --- "Antrea NetworkPolicy with Group reference" and "Group CRD" -------------------------------------------------


def group(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "crd.antrea.io/v1beta1", "kind": "Group",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def test_antrea_network_policy_with_group_references() -> None:
    groups = [group("test-grp-with-db-selector", {"podSelector": {"matchLabels": {"role": "db"}}}),
              group("frontends", {"podSelector": {"matchLabels": {"role": "frontend"}}}),
              group("nondb-in-db-namespaces", {"podSelector": {"matchLabels": {"role": "nondb"}},
                                               "namespaceSelector": {"matchLabels": {"role": "db"}}}),
              group("test-grp-with-frontend-selector", {"childGroups": ["frontends", "nondb-in-db-namespaces"]}),
              group("test-grp-with-ip-block", {"ipBlocks": [{"cidr": "10.0.10.0/24"}]})]
    annp = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "NetworkPolicy",
            "metadata": {"name": "annp-with-groups", "namespace": "default"},
            "spec": {"priority": 5, "tier": "securityops", "appliedTo": [{"group": "test-grp-with-db-selector"}],
                     "ingress": [{"action": "Allow", "from": [{"group": "test-grp-with-frontend-selector"}],
                                  "ports": [{"protocol": "TCP", "port": 8080, "endPort": 9000}],
                                  "name": "AllowFromFrontend"},
                                 {"action": "Drop", "name": "DropOthers"}],
                     "egress": [{"action": "Drop", "to": [{"group": "test-grp-with-ip-block"}],
                                 "ports": [{"protocol": "TCP", "port": 5978}], "name": "DropToThirdParty"}]}}
    s = state(ns("default"), ns("dbns", role="db"), pod("default/db", {"role": "db"}, ports={"http": 8500}),
              pod("default/fe", {"role": "frontend"}), pod("dbns/nondb", {"role": "nondb"}, node="worker2"),
              pod("default/nondb", {"role": "nondb"}), *groups, annp)
    assert evaluate(s, "default/fe", "default/db", 8500).allowed
    assert evaluate(s, "dbns/nondb", "default/db", 8500).allowed
    assert not evaluate(s, "default/nondb", "default/db", 8500).allowed  # not in a role=db namespace
    assert not evaluate(s, "default/fe", "default/db", 7000).allowed  # outside 8080-9000
    assert not evaluate(s, "default/db", "10.0.10.9", 5978).allowed
    assert evaluate(s, "default/db", "10.0.11.9", 5978).allowed


# --- "ServiceAccount based selection" and "Apply to NodePort Service" ---------------------------------------------


def test_service_account_selection_drops_from_sa_1_pods_to_sa_2_pods() -> None:
    def running_as(account: str) -> Any:
        return lambda body: body["spec"].__setitem__("serviceAccountName", account)

    s = state(ns("ns-1"), ns("ns-2"),
              pod("ns-1/a", {"app": "a"}, tweak=running_as("sa-1")), pod("ns-1/b", {"app": "b"}),
              pod("ns-2/c", {"app": "c"}, ports={"http": 80}, tweak=running_as("sa-2"), node="worker2"),
              pod("ns-2/d", {"app": "d"}, ports={"http": 80}),
              acnp("acnp-service-account", {
                  "priority": 5, "tier": "securityops",
                  "appliedTo": [{"serviceAccount": {"name": "sa-1", "namespace": "ns-1"}}],
                  "egress": [{"action": "Drop", "to": [{"serviceAccount": {"name": "sa-2", "namespace": "ns-2"}}],
                              "name": "ServiceAccountEgressRule"}]}))
    assert not evaluate(s, "ns-1/a", "ns-2/c", 80).allowed
    assert evaluate(s, "ns-1/a", "ns-2/d", 80).allowed
    assert evaluate(s, "ns-1/b", "ns-2/c", 80).allowed


def test_a_nodeport_service_policy_applies_to_no_pod_and_says_so() -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc-1", "namespace": "ns-1"},
               "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80}]}}
    s = state(ns("ns-1"), pod("ns-1/web", {"app": "web"}, ports={"http": 80}),
              pod("ns-1/other", {"app": "other"}, ports={"http": 80}), service,
              acnp("acnp-deny-external-client-nodeport-svc-access", {
                  "priority": 5, "tier": "securityops",
                  "appliedTo": [{"service": {"name": "svc-1", "namespace": "ns-1"}}],
                  "ingress": [{"action": "Drop", "from": [{"ipBlock": {"cidr": "1.1.1.0/24"}}]}]}))
    # Before, an appliedTo of a Service was read as "every pod", and 1.1.1.5 was dropped everywhere.
    assert evaluate(s, "1.1.1.5", "ns-1/other", 80).allowed
    assert any("acnp-deny-external-client-nodeport-svc-access: spec.appliedTo[0].service ns-1/svc-1: a policy on a "
               "NodePort Service's external traffic is not simulated" in p for p in policy_index(s).problems)


def _external_row_holding(names: list[str], address: str) -> str:
    import ipaddress

    ip = ipaddress.ip_address(address)
    for name in names:
        if "/" in name or "[" in name:
            try:
                if "[" not in name and ip in ipaddress.ip_network(name, strict=False):
                    return name
            except ValueError:
                pass
            continue
        low, _, high = name.partition("-")
        try:
            if ipaddress.ip_address(low) <= ip <= ipaddress.ip_address(high or low):
                return name
        except ValueError:
            continue
    raise AssertionError(f"no matrix row holds {address}")


def test_the_matrix_agrees_with_the_verdict_for_an_fqdn_allowed_address() -> None:
    """The address an fqdn peer selects is a piece of the external space of its own (it shared one with others,
    whose representative was not it, and the matrix denied what the verdict allowed)."""
    s = state(ns("x"), pod("x/client", {"app": "client"}), FQDN_POLICY, outside=OUTSIDE)
    assert evaluate(s, "x/client", "198.51.100.10", 8080).allowed
    m = matrix(s, pods=True)
    row = _external_row_holding(m.names, "198.51.100.10")
    assert m.allowed_between("x/client", row).contains("TCP", 8080)


# --- "ACNP for complete Pod isolation in selected Namespaces" and "Selecting Namespace by Name" -------------------


def test_complete_isolation_drops_everything_but_the_pods_own_node() -> None:
    s = state(ns("locked", app="no-network-access-required"), ns("free"),
              pod("locked/a", {"app": "a"}, ports={"http": 80}), pod("free/b", {"app": "b"}, ports={"http": 80},
                                                                      node="worker2"),
              acnp("isolate-all-pods-in-namespace", {
                  "priority": 1, "tier": "securityops",
                  "appliedTo": [{"namespaceSelector": {"matchLabels": {"app": "no-network-access-required"}}}],
                  "ingress": [{"action": "Drop", "name": "drop-all-ingress"}],
                  "egress": [{"action": "Drop", "name": "drop-all-egress"}]}))
    assert not evaluate(s, "free/b", "locked/a", 80).allowed
    assert not evaluate(s, "locked/a", "free/b", 80).allowed
    assert not evaluate(s, "172.18.0.4", "locked/a", 80).allowed  # another node
    # "Node Selector": traffic from a pod's own node (kubelet probes) is always allowed.
    assert evaluate(s, "172.18.0.3", "locked/a", 80).allowed


def test_antrea_network_policy_selecting_kube_dns_by_namespace_name_allows_it_and_isolates_nothing() -> None:
    annp = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "NetworkPolicy",
            "metadata": {"name": "test-annp-by-name", "namespace": "default"},
            "spec": {"priority": 5, "tier": "application", "appliedTo": [{"podSelector": {}}],
                     "egress": [{"action": "Allow", "name": "AllowToCoreDNS",
                                 "to": [{"podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                                         "namespaceSelector": {"matchLabels": {
                                             "kubernetes.io/metadata.name": "kube-system"}}}],
                                 "ports": [{"protocol": "TCP", "port": 53}, {"protocol": "UDP", "port": 53}]}]}}
    s = state(ns("default"), pod("default/a", {"app": "a"}), pod("default/b", {"app": "b"}, ports={"http": 80}),
              annp)
    dns = next(key for key, p in sorted(s.pods.items()) if p.labels.get("k8s-app") == "kube-dns")
    v = evaluate(s, "default/a", dns, 53, "UDP")
    assert v.allowed and "`AllowToCoreDNS`" in v.egress.reason
    assert evaluate(s, "default/a", "default/b", 80).allowed  # an Antrea policy isolates no pod by itself
