"""Cilium's own documentation examples, asked of knetsim as a user pasting them would, on a Cilium cluster.

Sources: cilium/cilium ``Documentation/security/policy/kubernetes.rst`` (its "Namespaces", "Match Expressions",
"ServiceAccounts" and "Clusterwide Policies" sections) and the manifests it includes from ``examples/policies/``
(``kubernetes/namespace/*.yaml``, ``kubernetes/serviceaccount/serviceaccount-policy.yaml``,
``kubernetes/clusterwide/wildcard-from-endpoints.yaml``, ``l3/match-expressions/or-statement.yaml``,
``l3/cidr/cidr.yaml``, ``l3/requires/requires.yaml``), each restated in our own words with the pods the doc implies.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from knetsim import Cluster
from knetsim.api import InputError
from knetsim.cluster.config import ClusterConfig, config_from_dict
from knetsim.policy import evaluate
from knetsim.policy.engine import policy_index
from knetsim.policy.lint import lint
from knetsim.policy.matrix import matrix

from .helpers import cnp, ns, pod


def state(*objects: dict[str, Any]) -> Any:
    return Cluster.from_yaml(yaml.safe_dump_all(list(objects), sort_keys=False),
                             config=ClusterConfig(cni="cilium")).state


def dns_pod(s: Any) -> str:
    return next(key for key, p in sorted(s.pods.items()) if p.labels.get("k8s-app") == "kube-dns")


STAR_WARS = [ns("ns1"), ns("ns2"), ns("public"),
             pod("ns1/leia", {"name": "leia"}, ports={"http": 80}), pod("ns1/han", {"name": "han"}, ports={"http": 80}),
             pod("ns2/luke", {"name": "luke"}, ports={"http": 80}, node="worker2"),
             pod("ns2/vader", {"name": "vader"}, ports={"http": 80}, node="worker2"),
             pod("public/p", {"app": "p"}, ports={"http": 80})]


def isolate(namespace: str) -> dict[str, Any]:
    # examples/policies/kubernetes/namespace/isolate-namespaces.yaml (both documents are named isolate-ns1)
    return cnp(f"{namespace}/isolate-ns1", {"endpointSelector": {"matchLabels": {}},
                                            "ingress": [{"fromEndpoints": [{"matchLabels": {}}]}]})


def test_isolate_namespaces_locks_ingress_to_the_same_namespace_only() -> None:
    s = state(*STAR_WARS, isolate("ns1"), isolate("ns2"))
    assert evaluate(s, "ns1/han", "ns1/leia", 80).allowed
    assert evaluate(s, "ns2/vader", "ns2/luke", 80).allowed
    assert not evaluate(s, "ns2/luke", "ns1/leia", 80).allowed
    assert not evaluate(s, "public/p", "ns1/leia", 80).allowed
    # The doc's note: egress is not locked down, so ns1 reaches pods outside ns1 and ns2.
    assert evaluate(s, "ns1/leia", "public/p", 80).allowed
    m = matrix(s, pods=True)
    assert not m.allowed_between("ns2/luke", "ns1/leia").contains("TCP", 80)
    assert m.allowed_between("ns1/han", "ns1/leia").contains("TCP", 80)


def test_expose_across_namespaces_admits_luke_of_ns2_only() -> None:
    # examples/policies/kubernetes/namespace/namespace-policy.yaml
    expose = cnp("ns1/k8s-expose-across-namespace", {
        "endpointSelector": {"matchLabels": {"name": "leia"}},
        "ingress": [{"fromEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "ns2", "name": "luke"}}]}]})
    s = state(*STAR_WARS, expose)
    v = evaluate(s, "ns2/luke", "ns1/leia", 80)
    assert v.allowed and "k8s-expose-across-namespace" in v.ingress.reason
    assert not evaluate(s, "ns2/vader", "ns1/leia", 80).allowed
    assert not evaluate(s, "ns1/han", "ns1/leia", 80).allowed  # leia is isolated; han is not luke
    assert evaluate(s, "ns2/luke", "ns1/han", 80).allowed  # han is not selected


def test_kube_dns_egress_from_public_allows_udp_53_and_nothing_else() -> None:
    # examples/policies/kubernetes/namespace/kubedns-policy.yaml, created in the public namespace
    policy = cnp("public/allow-to-kubedns", {
        "endpointSelector": {},
        "egress": [{"toEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system",
                                                     "k8s-app": "kube-dns"}}],
                    "toPorts": [{"ports": [{"port": "53", "protocol": "UDP"}]}]}]})
    s = state(*STAR_WARS, policy)
    dns = dns_pod(s)
    assert evaluate(s, "public/p", dns, 53, "UDP").allowed
    assert not evaluate(s, "public/p", dns, 53, "TCP").allowed
    assert not evaluate(s, "public/p", "ns1/leia", 80).allowed
    assert evaluate(s, "ns1/leia", "public/p", 80).allowed  # only public's pods are selected


def test_service_account_selection_admits_lukes_account_only() -> None:
    # examples/policies/kubernetes/serviceaccount/serviceaccount-policy.yaml
    def running_as(account: str) -> Any:
        return lambda body: body["spec"].__setitem__("serviceAccountName", account)

    s = state(ns("default"),
              pod("default/leia", {"app": "leia"}, ports={"http": 80}, tweak=running_as("leia")),
              pod("default/luke", {"app": "luke"}, tweak=running_as("luke")),
              pod("default/other", {"app": "other"}),
              cnp("default/k8s-svc-account", {
                  "endpointSelector": {"matchLabels": {"io.cilium.k8s.policy.serviceaccount": "leia"}},
                  "ingress": [{"fromEndpoints": [{"matchLabels": {"io.cilium.k8s.policy.serviceaccount": "luke"}}]}]}))
    assert evaluate(s, "default/luke", "default/leia", 80).allowed
    assert not evaluate(s, "default/other", "default/leia", 80).allowed


OR_STATEMENT_WORLD = [ns("default"), ns("production"),
                      pod("default/target", {"app": "target"}, ports={"http": 80}),
                      pod("default/strict", {"cilium.example.com/policy": "strict"}),
                      pod("default/plain", {"app": "plain"})]


def or_statement(operator: str) -> dict[str, Any]:
    # examples/policies/l3/match-expressions/or-statement.yaml, its second expression; the selected pods narrowed
    # to one so the rest of the namespace stays open.
    return cnp("default/or-statement-policy", {
        "endpointSelector": {"matchLabels": {"app": "target"}},
        "ingress": [{"fromEndpoints": [
            {"matchExpressions": [{"key": "k8s:cilium.example.com/policy", "operator": operator,
                                   "values": ["strict"]}]}]}]})


def test_or_statement_as_written_is_refused_for_its_lower_case_operator() -> None:
    # The example writes `operator: "in"`; the CRD's enum (pkg/k8s/apis/cilium.io/client/crds/v2) is case-sensitive:
    # In, NotIn, Exists, DoesNotExist. The API server refuses the object, and knetsim says so in its words.
    s = state(*OR_STATEMENT_WORLD, or_statement("in"))
    assert any('or-statement-policy: spec.ingress[0].fromEndpoints[0].matchExpressions[0].operator: Unsupported '
               'value: "in": supported values: "In", "NotIn", "Exists", "DoesNotExist"' in p
               for p in policy_index(s).problems)
    assert evaluate(s, "default/plain", "default/target", 80).allowed  # not in force


def test_or_statement_with_the_operator_spelled_in_admits_the_matching_pods() -> None:
    s = state(*OR_STATEMENT_WORLD, or_statement("In"))
    assert evaluate(s, "default/strict", "default/target", 80).allowed
    assert not evaluate(s, "default/plain", "default/target", 80).allowed


def wildcard_from_endpoints(*, description_at_top: bool) -> dict[str, Any]:
    # examples/policies/kubernetes/clusterwide/wildcard-from-endpoints.yaml
    spec: dict[str, Any] = {
        "endpointSelector": {"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system", "k8s-app": "kube-dns"}},
        "ingress": [{"fromEndpoints": [{}], "toPorts": [{"ports": [{"port": "53", "protocol": "UDP"}]}]}]}
    text = "Policy for ingress allow to kube-dns from all Cilium managed endpoints in the cluster"
    body: dict[str, Any] = {"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy",
                            "metadata": {"name": "wildcard-from-endpoints"}, "spec": spec}
    if description_at_top:
        body["description"] = text
    else:
        spec["description"] = text
    return body


def test_clusterwide_wildcard_from_endpoints_opens_udp_53_from_every_pod_only() -> None:
    s = state(*STAR_WARS, wildcard_from_endpoints(description_at_top=False))
    dns = dns_pod(s)
    for client in ("ns1/leia", "ns2/luke", "public/p"):
        assert evaluate(s, client, dns, 53, "UDP").allowed, client
    assert not evaluate(s, "ns1/leia", dns, 53, "TCP").allowed
    assert not evaluate(s, "192.0.2.7", dns, 53, "UDP").allowed  # no Cilium endpoint
    # doctor: every pod's DNS over TCP fails, and the clusterwide policy on kube-dns is named as the reason
    # (before, only clients isolated for egress were looked at, and none is here).
    tcp = [f for f in lint(s) if f.code == "DNSOverTCPBlocked"]
    assert {"Namespace ns1", "Namespace ns2", "Namespace public"} <= {f.subject for f in tcp}
    assert all("CiliumClusterwideNetworkPolicy wildcard-from-endpoints" in f.message for f in tcp)


def test_clusterwide_example_with_its_top_level_description_is_refused_and_said() -> None:
    # The example puts `description` beside `spec`, where the CRD has no such field: strict field validation
    # (kubectl apply's default) refuses the object, so the policy is not in force.
    with pytest.raises(InputError) as refused:
        state(*STAR_WARS, wildcard_from_endpoints(description_at_top=True))
    assert ('CiliumClusterwideNetworkPolicy wildcard-from-endpoints: CiliumClusterwideNetworkPolicy in version "v2" '
            'cannot be handled as a CiliumClusterwideNetworkPolicy: strict decoding error: unknown field '
            '"description"') in str(refused.value)


def test_cidr_rule_allows_the_listed_addresses_and_keeps_the_except_out() -> None:
    # examples/policies/l3/cidr/cidr.yaml
    s = state(ns("default"), pod("default/svc", {"app": "myService"}), pod("default/peer", {"app": "peer"}),
              cnp("default/cidr-rule", {"endpointSelector": {"matchLabels": {"app": "myService"}},
                                        "egress": [{"toCIDR": ["20.1.1.1/32"]},
                                                   {"toCIDRSet": [{"cidr": "10.0.0.0/8",
                                                                   "except": ["10.96.0.0/12"]}]}]}))
    assert evaluate(s, "default/svc", "20.1.1.1", 443).allowed
    assert not evaluate(s, "default/svc", "20.1.1.2", 443).allowed
    assert evaluate(s, "default/svc", "10.1.2.3", 443).allowed
    assert not evaluate(s, "default/svc", "10.100.0.1", 443).allowed  # in the except
    # CIDR rules never select cluster endpoints, though pod addresses are in 10.0.0.0/8.
    assert not evaluate(s, "default/svc", "default/peer", 80).allowed


def test_from_requires_is_said_to_be_left_out() -> None:
    # examples/policies/l3/requires/requires.yaml: the rule is fromRequires alone, which allows nothing by itself.
    s = state(ns("default"), pod("default/prod1", {"env": "prod"}, ports={"http": 80}),
              pod("default/prod2", {"env": "prod"}), pod("default/dev", {"env": "dev"}),
              {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
               "metadata": {"name": "requires-rule", "namespace": "default"},
               "specs": [{"endpointSelector": {"matchLabels": {"env": "prod"}},
                          "ingress": [{"fromRequires": [{"matchLabels": {"env": "prod"}}]}]}]})
    v = evaluate(s, "default/dev", "default/prod1", 80)
    assert not v.allowed
    assert any("requires-rule: specs[0].ingress[0].fromRequires: not simulated" in n for n in v.notes)


def test_egress_deny_wins_over_the_allow_all_entity() -> None:
    # examples/policies/l3/egress-deny/egress-deny.yaml (language.rst, "Deny Policies")
    s = state(ns("default"), pod("default/fe", {"role": "frontend"}),
              pod("default/be", {"role": "backend"}, ports={"http": 80}),
              pod("default/other", {"role": "other"}, ports={"http": 80}),
              cnp("default/deny-egress-example", {
                  "endpointSelector": {"matchLabels": {"role": "frontend"}},
                  "egress": [{"toEntities": ["all"]}],
                  "egressDeny": [{"toEndpoints": [{"matchLabels": {"role": "backend"}}]}]}))
    v = evaluate(s, "default/fe", "default/be", 80)
    assert not v.allowed and "egressDeny[0]" in v.egress.reason
    assert evaluate(s, "default/fe", "default/other", 80).allowed
    assert evaluate(s, "default/fe", "192.0.2.1", 443).allowed


def test_the_fqdn_example_without_a_dns_rule_learns_no_address_and_says_why() -> None:
    # examples/policies/l3/fqdn/fqdn.yaml: it allows kube-dns but with no toPorts.rules.dns, so Cilium's DNS proxy
    # never sees the lookup (language.rst, "DNS based": the DNS rule is what lets toFQDNs learn addresses).
    objects = [ns("default"), pod("default/t", {"app": "test-app"}),
               cnp("default/to-fqdn", {
                   "endpointSelector": {"matchLabels": {"app": "test-app"}},
                   "egress": [{"toEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system",
                                                                "k8s:k8s-app": "kube-dns"}}]},
                              {"toFQDNs": [{"matchName": "my-remote-service.com"}]}]})]
    config = config_from_dict({"cni": "cilium", "outside": {"hosts": {"my-remote-service.com": ["198.51.100.30"]}}})
    s = Cluster.from_yaml(yaml.safe_dump_all(objects, sort_keys=False), config=config).state
    v = evaluate(s, "default/t", "198.51.100.30", 443)
    assert not v.allowed
    assert "no egress rule with toPorts.rules.dns allowing my-remote-service.com" in v.egress.reason
    assert evaluate(s, "default/t", dns_pod(s), 53, "UDP").allowed


def deny_all_egress(egress: Any) -> dict[str, Any]:
    # examples/policies/l3/egress-default-deny/egress-default-deny.yaml (language.rst, "Ingress/Egress Default Deny")
    return cnp("default/deny-all-egress", {"endpointSelector": {"matchLabels": {"role": "restricted"}},
                                           "egress": egress})


RESTRICTED_WORLD = [ns("default"), pod("default/r", {"role": "restricted"}),
                    pod("default/o", {"role": "o"}, ports={"http": 80})]


def test_egress_default_deny_with_an_empty_rule_denies_all_egress() -> None:
    s = state(*RESTRICTED_WORLD, deny_all_egress([{}]))
    assert not evaluate(s, "default/r", "default/o", 80).allowed
    assert not evaluate(s, "default/r", "192.0.2.9", 80).allowed
    assert evaluate(s, "default/o", "default/r", 80).allowed  # ingress untouched


def test_egress_default_deny_written_as_an_empty_key_is_refused_and_said() -> None:
    # Older versions of the example write `egress:` with nothing after it: null, which the API server drops before
    # the CRD's anyOf (one rule section required) refuses the object. Before, knetsim read it as a policy with no
    # rules and said nothing.
    s = state(*RESTRICTED_WORLD, deny_all_egress(None))
    v = evaluate(s, "default/r", "default/o", 80)
    assert v.allowed
    assert any('deny-all-egress: spec: Invalid value: "object": spec must validate at least one schema (anyOf)' in n
               for n in v.notes)
