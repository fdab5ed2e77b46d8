"""Cilium's own peers: entities, CIDR rules with except, toServices, enableDefaultDeny, toFQDNs with DNS rules.

Restated from cilium/cilium: the connectivity-test manifests (cilium-cli/connectivity/manifests/
``allow-all-except-world.yaml``, ``client-egress-to-entities-world.yaml``,
``client-egress-to-fqdns-one-one-one-one.yaml``, ``client-egress-only-dns.yaml``) and the policy language
docs (Documentation/security/policy/language.rst: "Entities Based", "CIDR based", "Services based", "DNS
based", and pkg/policy/api/rule.go's EnableDefaultDeny).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig
from knetsim.policy import evaluate
from knetsim.policy.matrix import matrix

from .helpers import DEFAULT_DENY_ALL, cnp, netpol, ns, pod

NS = "cilium-test"
CLIENT = f"{NS}/client"
ECHO = f"{NS}/echo-same-node"
PODS = [ns(NS), ns("other"),
        pod(CLIENT, {"name": "client", "kind": "client"}),
        pod(f"{NS}/client2", {"name": "client2", "kind": "client", "other": "client"}),
        pod(ECHO, {"name": "echo-same-node", "kind": "echo"}, ports={"http": 8080}),
        pod("other/echo", {"kind": "echo"}, ports={"http": 8080}, node="worker2")]
CONTROL_PLANE, WORKER2 = "172.18.0.2", "172.18.0.4"


def build(*objects: dict[str, Any], **config: Any) -> Any:
    config.setdefault("dataplane", "ebpf")
    return Cluster.from_yaml(yaml.safe_dump_all([*PODS, *objects], sort_keys=False),
                             config=ClusterConfig(**config)).state


def client_policy(name: str, **spec: Any) -> dict[str, Any]:
    return cnp(f"{NS}/{name}", {"endpointSelector": {"matchLabels": {"kind": "client"}}, **spec})


ALLOW_ALL_EXCEPT_WORLD = cnp(f"{NS}/allow-all-except-world", {
    "endpointSelector": {},
    "egress": [{"toEntities": ["host", "remote-node", "cluster", "init", "health", "kube-apiserver"]},
               {"toEndpoints": [{}]}],
    "ingress": [{"fromEntities": ["host", "remote-node", "cluster", "init", "health", "kube-apiserver"]},
                {"fromEndpoints": [{}]}]})

DNS_RULE = {"toPorts": [{"ports": [{"port": "53", "protocol": "ANY"}], "rules": {"dns": [{"matchPattern": "*"}]}}],
            "toEndpoints": [{"matchExpressions": [
                {"key": "k8s-app", "operator": "In", "values": ["kube-dns", "coredns", "node-local-dns"]},
                {"key": "io.kubernetes.pod.namespace", "operator": "In", "values": ["kube-system"]}]}]}
TO_ONE_ONE = {"toPorts": [{"ports": [{"port": "80", "protocol": "TCP"}],
                           "rules": {"http": [{"method": "GET", "path": "/"}]}}],
              "toFQDNs": [{"matchName": "one.one.one.one"}]}


@pytest.mark.parametrize("config", [{"dataplane": "ebpf"}, {"dataplane": "nftables", "cni": "cilium"}])
def test_allow_all_except_world(config: dict[str, Any]) -> None:
    s = build(ALLOW_ALL_EXCEPT_WORLD, **config)
    assert evaluate(s, CLIENT, "other/echo", 8080).allowed  # cluster
    assert evaluate(s, CLIENT, CONTROL_PLANE, 6443).allowed  # kube-apiserver / remote-node
    world = evaluate(s, CLIENT, "1.1.1.1", 443)
    assert not world.allowed and "isolated by CiliumNetworkPolicy cilium-test/allow-all-except-world" in \
        world.egress.reason
    assert not evaluate(s, "192.0.2.7", ECHO, 8080).allowed
    m = matrix(s, pods=True)
    assert m.allowed_between(CLIENT, "other/echo").is_all


def test_kube_apiserver_is_the_control_plane_node_only() -> None:
    s = build(client_policy("to-apiserver", egress=[{"toEntities": ["kube-apiserver"]}]))
    ok = evaluate(s, CLIENT, CONTROL_PLANE, 6443)
    assert ok.allowed and ok.egress.reason == ("allowed by CiliumNetworkPolicy cilium-test/to-apiserver "
                                               "egress[0].to[0]")
    assert not evaluate(s, CLIENT, WORKER2, 10250).allowed
    assert not evaluate(s, CLIENT, "other/echo", 8080).allowed


@pytest.mark.parametrize(("entity", "target", "allowed"), [
    ("world", "1.1.1.1", True), ("world", "other/echo", False),
    ("cluster", "other/echo", True), ("cluster", WORKER2, True), ("cluster", "1.1.1.1", False),
    ("remote-node", WORKER2, True), ("host", WORKER2, False),
    ("health", WORKER2, False), ("init", "other/echo", False), ("ingress", "other/echo", False),
    ("all", "1.1.1.1", True), ("world-ipv4", "1.1.1.1", True), ("world-ipv6", "1.1.1.1", False),
])
def test_entities(entity: str, target: str, allowed: bool) -> None:
    s = build(client_policy("to-entity", egress=[{"toEntities": [entity]}]))
    assert evaluate(s, CLIENT, target, 8080).allowed is allowed


def test_an_unknown_entity_is_an_error_naming_the_field() -> None:
    s = build(client_policy("bad", egress=[{"toEntities": ["internet"]}]))
    v = evaluate(s, CLIENT, "1.1.1.1", 80)
    assert any("spec.egress[0].toEntities: Unsupported value: 'internet'" in n for n in v.notes)


def test_cidr_set_with_except_and_cidr_never_matches_cluster_addresses() -> None:
    s = build(client_policy("to-cidr", egress=[{"toCIDRSet": [{"cidr": "192.0.2.0/24", "except": ["192.0.2.128/25"]}]},
                                               {"toCIDR": ["10.244.0.0/16"]}]))
    assert evaluate(s, CLIENT, "192.0.2.10", 443).allowed
    assert not evaluate(s, CLIENT, "192.0.2.200", 443).allowed
    assert not evaluate(s, CLIENT, "other/echo", 8080).allowed  # a pod IP in the CIDR: not matched (#9209)


def test_to_services_by_name_and_by_selector() -> None:
    echo_svc = {"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "echo", "namespace": NS, "labels": {"svc": "echo"}},
                "spec": {"selector": {"kind": "echo"}, "ports": [{"port": 8080, "targetPort": 8080}]}}
    by_name = build(echo_svc, client_policy("to-svc", egress=[{"toServices": [
        {"k8sService": {"serviceName": "echo", "namespace": NS}}]}]))
    assert evaluate(by_name, CLIENT, ECHO, 8080).allowed
    assert not evaluate(by_name, CLIENT, "other/echo", 8080).allowed
    by_selector = build(echo_svc, client_policy("to-svc", egress=[{"toServices": [
        {"k8sServiceSelector": {"selector": {"matchLabels": {"svc": "echo"}}, "namespace": NS}}]}]))
    assert evaluate(by_selector, CLIENT, ECHO, 8080).allowed
    assert not evaluate(by_selector, CLIENT, "other/echo", 8080).allowed


def test_enable_default_deny_false_adds_allows_without_isolating() -> None:
    # language.rst's example: every pod's DNS through the proxy, without putting any pod in default deny.
    dns_everywhere = cnp(f"{NS}/dns-visibility", {"endpointSelector": {},
                                                  "enableDefaultDeny": {"egress": False, "ingress": False},
                                                  "egress": [DNS_RULE]})
    s = build(dns_everywhere)
    open_ = evaluate(s, CLIENT, "1.1.1.1", 443)
    assert open_.allowed and "enableDefaultDeny.egress: false" in open_.egress.reason
    # Beside a NetworkPolicy that isolates, its allows still add up.
    s2 = build(dns_everywhere, netpol(f"{NS}/deny-all", DEFAULT_DENY_ALL))
    assert not evaluate(s2, CLIENT, "1.1.1.1", 443).allowed
    dns = evaluate(s2, CLIENT, "kube-system/" + _coredns(s2), 53, "UDP")
    assert dns.egress.allowed and "dns-visibility egress[0]" in dns.egress.reason


def _coredns(s: Any) -> str:
    return next(p.name for p in s.pods_in("kube-system") if p.labels.get("k8s-app") == "kube-dns")


def test_to_fqdns_with_its_dns_rule() -> None:
    s = build(client_policy("client-egress-to-fqdns-one-one-one-one", egress=[TO_ONE_ONE, DNS_RULE]))
    for address in ("1.1.1.1", "1.0.0.1"):  # one.one.one.one's addresses, as the cluster's DNS answers them
        v = evaluate(s, CLIENT, address, 80)
        assert v.allowed and "egress[0].to[0].toPorts.ports[0]" in v.egress.reason
    assert not evaluate(s, CLIENT, "1.1.1.1", 443).allowed  # the port is part of the rule
    assert not evaluate(s, CLIENT, "8.8.8.8", 80).allowed  # dns.google: no toFQDNs names it
    assert evaluate(s, CLIENT, "kube-system/" + _coredns(s), 53, "UDP").allowed


def test_to_fqdns_without_a_dns_rule_names_the_missing_rule() -> None:
    plain_dns = {"toPorts": [{"ports": [{"port": "53", "protocol": "UDP"}]}],
                 "toEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system",
                                                  "k8s-app": "kube-dns"}}]}
    s = build(client_policy("fqdn-no-dns-rule", egress=[TO_ONE_ONE, plain_dns]))
    v = evaluate(s, CLIENT, "1.1.1.1", 80)
    assert not v.allowed
    assert ("CiliumNetworkPolicy cilium-test/fqdn-no-dns-rule egress[0].toFQDNs (matchName one.one.one.one) would "
            "allow 1.1.1.1 (one.one.one.one), but no egress rule with toPorts.rules.dns allowing one.one.one.one") \
        in v.egress.reason
    assert "toPorts.rules.dns" in v.egress.fix()
    assert v.to_dict()["egress"]["cilium"]["missingDNSRule"]
    # A DNS rule that does not allow this name is as good as none.
    narrow = {**DNS_RULE, "toPorts": [{"ports": [{"port": "53", "protocol": "ANY"}],
                                        "rules": {"dns": [{"matchName": "dns.google"}]}}]}
    assert not evaluate(build(client_policy("narrow", egress=[TO_ONE_ONE, narrow])), CLIENT, "1.1.1.1", 80).allowed


def test_fqdn_match_pattern() -> None:
    to_google = {"toFQDNs": [{"matchPattern": "*.google"}]}
    s = build(client_policy("google", egress=[to_google, DNS_RULE]))
    assert evaluate(s, CLIENT, "8.8.8.8", 443).allowed
    assert not evaluate(s, CLIENT, "1.1.1.1", 443).allowed
    m = matrix(s, pods=True)
    assert "evaluated under Cilium's deny-before-allow walk over classes of pods alike" in m.notes


def test_lint_and_doctor_name_an_fqdn_rule_without_its_dns_rule() -> None:
    from knetsim.policy.lint import lint

    plain_dns = {"toPorts": [{"ports": [{"port": "53", "protocol": "UDP"}]}],
                 "toEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system",
                                                  "k8s-app": "kube-dns"}}]}
    s = build(client_policy("fqdn-no-dns-rule", egress=[TO_ONE_ONE, plain_dns]))
    found = [f for f in lint(s) if f.code == "CiliumFQDNWithoutDNSRule"]
    assert [(f.subject, f.severity) for f in found] == [("CiliumNetworkPolicy cilium-test/fqdn-no-dns-rule", "warning")]
    assert found[0].message.startswith("egress[0].toFQDNs (matchName one.one.one.one) can never match for 2 pod(s) "
                                       "(cilium-test/client, cilium-test/client2)")
    fine = build(client_policy("fqdn", egress=[TO_ONE_ONE, DNS_RULE]))
    assert not [f for f in lint(fine) if f.code == "CiliumFQDNWithoutDNSRule"]
    doctor = Cluster.from_yaml(yaml.safe_dump_all([*PODS, client_policy("fqdn-no-dns-rule",
                                                                        egress=[TO_ONE_ONE, plain_dns])]),
                               config=ClusterConfig(dataplane="ebpf")).doctor()
    assert "CiliumFQDNWithoutDNSRule" in {f.code for f in doctor.findings}


def test_http_rules_still_answer_under_the_cilium_walk() -> None:
    from knetsim.policy.l7 import http_allowed

    s = build(client_policy("client-egress-to-fqdns-one-one-one-one", egress=[TO_ONE_ONE, DNS_RULE]))
    ok, why = http_allowed(s, CLIENT, "1.1.1.1", 80, "GET", "/")
    assert ok and "passes every HTTP rule" in why
    denied, why = http_allowed(s, CLIENT, "1.1.1.1", 80, "POST", "/")
    assert not denied
    assert why.startswith("403 Access denied: POST / matches no HTTP rule for egress of cilium-test/client")


def test_to_nodes_selects_node_addresses_by_label() -> None:
    s = build(client_policy("to-cp", egress=[{"toNodes": [
        {"matchLabels": {"node-role.kubernetes.io/control-plane": ""}}]}]))
    assert evaluate(s, CLIENT, CONTROL_PLANE, 10250).allowed
    assert not evaluate(s, CLIENT, WORKER2, 10250).allowed


def test_fields_not_simulated_are_named_on_every_answer() -> None:
    s = build(client_policy("icmp", egress=[{"toEntities": ["world"], "icmps": [{"fields": [{"type": 8}]}]}]))
    v = evaluate(s, CLIENT, "1.1.1.1", 443)
    assert v.allowed
    assert any("CiliumNetworkPolicy cilium-test/icmp: spec.egress[0].icmps: not simulated" in n for n in v.notes)


@pytest.mark.parametrize(("pattern", "name", "matches"), [
    # Cilium's matchPattern (pkg/fqdn/matchpattern): "*" is one label's characters, never a dot.
    ("*.cilium.io", "docs.cilium.io", True), ("*.cilium.io", "cilium.io", False),
    ("*.cilium.io", "a.b.cilium.io", False), ("*", "anything.example", True),
    ("**.cilium.io", "a.b.cilium.io", True), ("**.cilium.io", "cilium.io", False),
    ("sub*.example.com", "subdomain.example.com", True), ("sub*.example.com", "other.example.com", False),
])
def test_match_pattern(pattern: str, name: str, matches: bool) -> None:
    from knetsim.policy.cilium import DNSMatch

    assert DNSMatch(pattern=pattern).matches(name) is matches
    assert DNSMatch(pattern=pattern).matches(name.upper() + ".") is matches  # case and the trailing dot aside


def test_a_dns_rule_is_useless_when_the_dns_servers_ingress_drops_the_query() -> None:
    locked_dns = cnp("kube-system/lock-dns", {"endpointSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                                              "ingressDeny": [{"fromEndpoints": [
                                                  {"matchLabels": {"io.kubernetes.pod.namespace": NS}}]}],
                                              "ingress": [{"fromEntities": ["all"]}]})
    s = build(locked_dns, client_policy("fqdn", egress=[TO_ONE_ONE, DNS_RULE]))
    v = evaluate(s, CLIENT, "1.1.1.1", 80)
    assert not v.allowed and "Cilium's DNS proxy never sees the lookup" in v.egress.reason
