"""Every NetworkPolicy rule the engine claims, one row each: given these objects, src -> dst on port is (not) allowed.

Rows are (name, objects, src, dst, port, protocol, expected). Sources and destinations are
``ns/pod`` or IP addresses (see helpers.py for the address plan).
"""

from __future__ import annotations

from typing import Any

import pytest

from knetsim.api import InputError
from knetsim.policy import PolicyInputError, connections, evaluate
from knetsim.policy.matrix import matrix

from .helpers import ALLOW_DNS, DEFAULT_DENY_ALL, DEFAULT_DENY_INGRESS, netpol, ns, pod, state

APP = [ns("prod"), pod("prod/api", {"app": "api"}, ports={"http": 8080}), pod("prod/web", {"app": "web"}),
       pod("prod/other", {"app": "other"})]

# The seeds' AND/OR example: namespace alice (user=alice), a role=client pod in prod itself.
ALICE = [ns("alice", user="alice"), ns("bob", user="bob"), ns("prod"),
         pod("prod/db", {"app": "db"}), pod("prod/client", {"role": "client"}),
         pod("alice/client", {"role": "client"}), pod("alice/tool", {"role": "tool"}),
         pod("bob/client", {"role": "client"})]
AND = netpol("prod/and", {"podSelector": {"matchLabels": {"app": "db"}}, "ingress": [{"from": [
    {"namespaceSelector": {"matchLabels": {"user": "alice"}}, "podSelector": {"matchLabels": {"role": "client"}}}]}]})
OR = netpol("prod/or", {"podSelector": {"matchLabels": {"app": "db"}}, "ingress": [{"from": [
    {"namespaceSelector": {"matchLabels": {"user": "alice"}}}, {"podSelector": {"matchLabels": {"role": "client"}}}]}]})


def ingress_to_api(rule: dict[str, Any]) -> dict[str, Any]:
    return netpol("prod/api-in", {"podSelector": {"matchLabels": {"app": "api"}}, "policyTypes": ["Ingress"],
                                  "ingress": [rule]})


def egress_from_web(rule: dict[str, Any]) -> dict[str, Any]:
    return netpol("prod/web-out", {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Egress"],
                                   "egress": [rule]})


NAMED = [ns("prod"), pod("prod/api-a", {"app": "api"}, ports={"http": 8080}),
         pod("prod/api-b", {"app": "api"}, ports={"http": 9090}), pod("prod/web", {"app": "web"})]

CASES = [
    # isolation and policyTypes
    ("no policy: everything allowed", APP, "prod/web", "prod/api", 8080, "TCP", True),
    ("default-deny ingress isolates", [*APP, netpol("prod/deny", DEFAULT_DENY_INGRESS)],
     "prod/web", "prod/api", 8080, "TCP", False),
    ("default-deny ingress leaves egress open", [*APP, netpol("prod/deny", DEFAULT_DENY_INGRESS)],
     "prod/web", "192.0.2.1", 443, "TCP", True),
    ("policyTypes default: Ingress always, even with only egress rules",
     [*APP, netpol("prod/e", {"podSelector": {"matchLabels": {"app": "api"}},
                              "egress": [{"to": [{"podSelector": {}}]}]})],
     "prod/web", "prod/api", 8080, "TCP", False),
    ("policyTypes default: Egress when egress rules exist",
     [*APP, netpol("prod/e", {"podSelector": {"matchLabels": {"app": "web"}},
                              "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "api"}}}]}]})],
     "prod/web", "prod/other", 80, "TCP", False),
    ("rules of a type not in policyTypes are ignored",
     [*APP, netpol("prod/e", {"podSelector": {}, "policyTypes": ["Egress"], "ingress": [{"from": []}],
                              "egress": [{"to": [{"podSelector": {}}]}]})],
     "prod/web", "192.0.2.1", 80, "TCP", False),
    ("policies add up (union), order does not matter",
     [*APP, netpol("prod/a", {"podSelector": {"matchLabels": {"app": "api"}}, "ingress": [
         {"from": [{"podSelector": {"matchLabels": {"app": "other"}}}]}]}),
      netpol("prod/b", {"podSelector": {"matchLabels": {"app": "api"}}, "ingress": [
          {"from": [{"podSelector": {"matchLabels": {"app": "web"}}}]}]})],
     "prod/web", "prod/api", 8080, "TCP", True),
    ("egress of the source AND ingress of the destination",
     [*APP, egress_from_web({"to": [{"podSelector": {"matchLabels": {"app": "api"}}}]}),
      netpol("prod/deny", DEFAULT_DENY_INGRESS)],
     "prod/web", "prod/api", 8080, "TCP", False),
    ("ports and peers must both match",
     [*APP, ingress_to_api({"from": [{"podSelector": {"matchLabels": {"app": "web"}}}], "ports": [{"port": 9999}]})],
     "prod/web", "prod/api", 8080, "TCP", False),
    # the seeds' AND/OR pair
    ("AND: alice's role=client", [*ALICE, AND], "alice/client", "prod/db", 5432, "TCP", True),
    ("AND: alice's other pods are out", [*ALICE, AND], "alice/tool", "prod/db", 5432, "TCP", False),
    ("AND: role=client of the policy's namespace is out", [*ALICE, AND], "prod/client", "prod/db", 5432, "TCP",
     False),
    ("OR: any pod of alice", [*ALICE, OR], "alice/tool", "prod/db", 5432, "TCP", True),
    ("OR: role=client of the policy's namespace", [*ALICE, OR], "prod/client", "prod/db", 5432, "TCP", True),
    ("OR: role=client elsewhere is out", [*ALICE, OR], "bob/client", "prod/db", 5432, "TCP", False),
    # empty from vs missing vs podSelector: {} vs namespaceSelector: {}
    ("missing from: every source, external too", [*APP, ingress_to_api({"ports": [{"port": 8080}]})],
     "192.0.2.7", "prod/api", 8080, "TCP", True),
    ("empty from list: every source", [*APP, ingress_to_api({"from": []})], "192.0.2.7", "prod/api", 8080, "TCP",
     True),
    ("- podSelector: {} is the policy's namespace only", [*APP, ns("x"), pod("x/p", {"app": "web"}),
                                                          ingress_to_api({"from": [{"podSelector": {}}]})],
     "x/p", "prod/api", 8080, "TCP", False),
    ("- podSelector: {} admits same-namespace pods", [*APP, ingress_to_api({"from": [{"podSelector": {}}]})],
     "prod/web", "prod/api", 8080, "TCP", True),
    ("- namespaceSelector: {} is every pod, no external IPs", [*APP, ingress_to_api(
        {"from": [{"namespaceSelector": {}}]})], "192.0.2.7", "prod/api", 8080, "TCP", False),
    ("- namespaceSelector: {} admits pods of other namespaces", [*APP, ns("x"), pod("x/p"), ingress_to_api(
        {"from": [{"namespaceSelector": {}}]})], "x/p", "prod/api", 8080, "TCP", True),
    ("namespace by name: kubernetes.io/metadata.name", [*APP, ns("x"), pod("x/p"), ingress_to_api(
        {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "x"}}}]})],
     "x/p", "prod/api", 8080, "TCP", True),
    # default deny + DNS egress (seeds)
    ("default-deny egress blocks DNS", [*APP, netpol("prod/deny", DEFAULT_DENY_ALL)],
     "prod/web", "kube-system/coredns", 53, "UDP", False),
    ("allow-dns-egress lets UDP 53 through", [*APP, netpol("prod/deny", DEFAULT_DENY_ALL),
                                              netpol("prod/dns", ALLOW_DNS)],
     "prod/web", "kube-system/coredns", 53, "UDP", True),
    ("allow-dns-egress lets TCP 53 through", [*APP, netpol("prod/deny", DEFAULT_DENY_ALL),
                                              netpol("prod/dns", ALLOW_DNS)],
     "prod/web", "kube-system/coredns", 53, "TCP", True),
    ("allow-dns-egress allows nothing else", [*APP, netpol("prod/deny", DEFAULT_DENY_ALL),
                                              netpol("prod/dns", ALLOW_DNS)],
     "prod/web", "kube-system/coredns", 9153, "TCP", False),
    # named ports, endPort, protocols
    ("ingress named port resolves on each destination pod (a: 8080)", [*NAMED, netpol("prod/n", {
        "podSelector": {"matchLabels": {"app": "api"}}, "ingress": [{"ports": [{"port": "http"}]}]})],
     "prod/web", "prod/api-a", 8080, "TCP", True),
    ("ingress named port: a's 9090 is not its http", [*NAMED, netpol("prod/n", {
        "podSelector": {"matchLabels": {"app": "api"}}, "ingress": [{"ports": [{"port": "http"}]}]})],
     "prod/web", "prod/api-a", 9090, "TCP", False),
    ("ingress named port resolves on each destination pod (b: 9090)", [*NAMED, netpol("prod/n", {
        "podSelector": {"matchLabels": {"app": "api"}}, "ingress": [{"ports": [{"port": "http"}]}]})],
     "prod/web", "prod/api-b", 9090, "TCP", True),
    ("egress named port resolves on the destination pod", [*NAMED, egress_from_web(
        {"to": [{"podSelector": {"matchLabels": {"app": "api"}}}], "ports": [{"port": "http"}]})],
     "prod/web", "prod/api-b", 9090, "TCP", True),
    ("egress named port: b's 8080 is not its http", [*NAMED, egress_from_web(
        {"to": [{"podSelector": {"matchLabels": {"app": "api"}}}], "ports": [{"port": "http"}]})],
     "prod/web", "prod/api-b", 8080, "TCP", False),
    ("egress named port never matches an external IP", [*NAMED, egress_from_web({"ports": [{"port": "http"}]})],
     "prod/web", "192.0.2.1", 8080, "TCP", False),
    ("endPort: lower bound", [*APP, ingress_to_api({"ports": [{"port": 32000, "endPort": 32768}]})],
     "prod/web", "prod/api", 32000, "TCP", True),
    ("endPort: upper bound", [*APP, ingress_to_api({"ports": [{"port": 32000, "endPort": 32768}]})],
     "prod/web", "prod/api", 32768, "TCP", True),
    ("endPort: above", [*APP, ingress_to_api({"ports": [{"port": 32000, "endPort": 32768}]})],
     "prod/web", "prod/api", 32769, "TCP", False),
    ("SCTP port", [*APP, ingress_to_api({"ports": [{"port": 5000, "protocol": "SCTP"}]})],
     "prod/web", "prod/api", 5000, "SCTP", True),
    ("SCTP rule does not allow TCP", [*APP, ingress_to_api({"ports": [{"port": 5000, "protocol": "SCTP"}]})],
     "prod/web", "prod/api", 5000, "TCP", False),
    ("protocol defaults to TCP, not UDP", [*APP, ingress_to_api({"ports": [{"port": 53}]})],
     "prod/web", "prod/api", 53, "UDP", False),
    ("port without number: every port of the protocol", [*APP, ingress_to_api({"ports": [{"protocol": "UDP"}]})],
     "prod/web", "prod/api", 4242, "UDP", True),
    # ipBlock
    ("ipBlock egress inside the CIDR", [*APP, egress_from_web(
        {"to": [{"ipBlock": {"cidr": "192.0.2.0/24", "except": ["192.0.2.128/25"]}}]})],
     "prod/web", "192.0.2.5", 443, "TCP", True),
    ("ipBlock egress: except carves out", [*APP, egress_from_web(
        {"to": [{"ipBlock": {"cidr": "192.0.2.0/24", "except": ["192.0.2.128/25"]}}]})],
     "prod/web", "192.0.2.200", 443, "TCP", False),
    ("ipBlock ingress from an external client", [*APP, ingress_to_api(
        {"from": [{"ipBlock": {"cidr": "198.51.100.0/24"}}]})], "198.51.100.9", "prod/api", 8080, "TCP", True),
    ("ipBlock ingress: other external clients are out", [*APP, ingress_to_api(
        {"from": [{"ipBlock": {"cidr": "198.51.100.0/24"}}]})], "192.0.2.9", "prod/api", 8080, "TCP", False),
    ("ipBlock matches pod IPs (upstream netpol e2e expectation)", [*APP, egress_from_web(
        {"to": [{"ipBlock": {"cidr": "10.244.0.0/16"}}]})], "prod/web", "prod/api", 8080, "TCP", True),
    ("ipBlock except can exclude pod IPs", [*APP, egress_from_web(
        {"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.244.0.0/16"]}}]})],
     "prod/web", "prod/api", 8080, "TCP", False),
    # node-local, hostNetwork, self
    ("the pod's own node may always connect", [*APP, netpol("prod/deny", DEFAULT_DENY_INGRESS)],
     "172.18.0.3", "prod/api", 8080, "TCP", True),
    ("another node is not special", [*APP, netpol("prod/deny", DEFAULT_DENY_INGRESS)],
     "172.18.0.4", "prod/api", 8080, "TCP", False),
    ("hostNetwork pod on the same node: node traffic, allowed",
     [*APP, pod("prod/agent", {"app": "web"}, host_network=True, node="worker"),
      netpol("prod/deny", DEFAULT_DENY_INGRESS)], "prod/agent", "prod/api", 8080, "TCP", True),
    ("hostNetwork pod on another node: not matched by podSelector",
     [*APP, pod("prod/agent", {"app": "web"}, host_network=True, node="worker2"),
      ingress_to_api({"from": [{"podSelector": {"matchLabels": {"app": "web"}}}]})],
     "prod/agent", "prod/api", 8080, "TCP", False),
    ("hostNetwork pod on another node: matched by an ipBlock of node IPs",
     [*APP, pod("prod/agent", {"app": "web"}, host_network=True, node="worker2"),
      ingress_to_api({"from": [{"ipBlock": {"cidr": "172.18.0.0/16"}}]})],
     "prod/agent", "prod/api", 8080, "TCP", True),
    ("hostNetwork pod is not subject to its namespace's policies",
     [*APP, pod("prod/agent", {"app": "web"}, host_network=True, node="worker2"),
      netpol("prod/deny", DEFAULT_DENY_ALL)], "prod/web", "prod/agent", 10250, "TCP", False),
    ("a pod cannot block access to itself", [*APP, netpol("prod/deny", DEFAULT_DENY_ALL)],
     "prod/api", "prod/api", 8080, "TCP", True),
]


def _coredns(st: Any, ref: str) -> str:
    if ref == "kube-system/coredns":
        return next(k for k in sorted(st.pods) if k.startswith("kube-system/coredns"))
    return ref


@pytest.mark.parametrize(("name", "objects", "src", "dst", "port", "protocol", "expected"), CASES,
                         ids=[c[0] for c in CASES])
def test_semantics(name: str, objects: list[dict[str, Any]], src: str, dst: str, port: int, protocol: str,
                   expected: bool) -> None:
    st = state(*objects)
    src, dst = _coredns(st, src), _coredns(st, dst)
    verdict = evaluate(st, src, dst, port, protocol)
    assert verdict.allowed is expected, verdict.to_dict()
    # The per-pair connection set and the class-based matrix must say the same.
    assert connections(st, src, dst).contains(protocol, port) is expected
    m = matrix(st, pods=True, include_system=True)
    if src in m.names and dst in m.names:
        assert m.allowed_between(src, dst).contains(protocol, port) is expected


def test_hostnetwork_destination_is_not_enforced_and_says_so() -> None:
    st = state(*APP, pod("prod/agent", {"app": "web"}, host_network=True, node="worker2"),
               netpol("prod/deny", DEFAULT_DENY_ALL))
    # web's egress is isolated; the hostNetwork pod's own ingress is not enforced at all.
    v = evaluate(st, "prod/other", "prod/agent", 10250)
    assert not v.ingress.enforced
    assert "hostNetwork" in v.ingress.reason and "do not apply" in v.ingress.reason


def test_peer_with_empty_item_is_rejected_by_validation() -> None:
    # `- {}` is not "every peer": the API server rejects it (ValidateNetworkPolicyPeer).
    with pytest.raises(InputError, match="must specify a peer"):
        state(*APP, ingress_to_api({"from": [{}]}))


def test_verdict_names_policy_rule_peer_and_port() -> None:
    st = state(*ALICE, OR, netpol("prod/deny", DEFAULT_DENY_INGRESS))
    v = evaluate(st, "prod/client", "prod/db", 5432)
    assert v.allowed
    assert v.ingress.isolated
    assert set(v.ingress.policies) == {("NetworkPolicy", "prod/or"), ("NetworkPolicy", "prod/deny")}
    [match] = v.ingress.allowed_by
    assert (match.policy, match.rule, match.peer, match.port) == ("prod/or", 0, 1, -1)
    assert match.location == "NetworkPolicy prod/or ingress[0].from[1]"
    assert match.to_dict()["port"] == "any"
    assert not v.egress.isolated and v.egress.allowed


def test_denied_verdict_explains_each_rule() -> None:
    st = state(*ALICE, AND)
    v = evaluate(st, "alice/tool", "prod/db", 5432)
    assert not v.allowed and not v.egress.isolated
    [checked] = v.ingress.checked
    assert checked.peer is None
    assert "no peer matches alice/tool" in checked.reason
    assert "namespace AND pod selector must both match" in checked.reason


def test_reply_traffic_is_allowed_but_the_reverse_connection_is_its_own_question() -> None:
    st = state(*APP, netpol("prod/deny", DEFAULT_DENY_INGRESS), ingress_to_api(
        {"from": [{"podSelector": {"matchLabels": {"app": "web"}}}]}))
    forward = evaluate(st, "prod/web", "prod/api", 8080)
    assert forward.allowed and "stateful" in forward.reply
    assert not evaluate(st, "prod/api", "prod/web", 8080).allowed


@pytest.mark.parametrize(("src", "dst", "port", "message"), [
    ("prod/nope", "prod/api", 80, "pod prod/nope not found"),
    ("prod/web", "10.96.0.10", 53, "address of Service kube-system/kube-dns"),
    ("prod/web", "prod/api", "grpc", "no TCP container port named 'grpc'"),
    ("prod/web", "prod/api", 70000, "between 1 and 65535"),
])
def test_bad_references(src: str, dst: str, port: Any, message: str) -> None:
    with pytest.raises(PolicyInputError, match=message):
        evaluate(state(*APP), src, dst, port)


def test_named_port_can_be_asked_by_name() -> None:
    v = evaluate(state(*APP, ingress_to_api({"ports": [{"port": "http"}]})), "prod/web", "prod/api", "http")
    assert v.allowed and v.port == 8080
