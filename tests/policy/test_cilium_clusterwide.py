"""CiliumClusterwideNetworkPolicy beside CiliumNetworkPolicy, and deny rules that win over every allow.

Restated from cilium/cilium's connectivity-test manifests (cilium-cli/connectivity/manifests/): the
``client``/``echo`` pods of the ``cilium-test`` namespace, ``client-egress-to-echo-deny.yaml`` (an
egressDeny to the echo pods on 8080), ``client-egress-to-cidr-1111-deny.yaml`` (a toCIDRSet deny with an
except, whose comment says the deny alone puts the client in default deny), and the docs' clusterwide
``external-lockdown`` example (Documentation/security/policy/language.rst, "Deny Policies": deny from world,
allow from all).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig
from knetsim.policy import evaluate
from knetsim.policy.engine import policy_index
from knetsim.policy.matrix import matrix

from .helpers import cnp, netpol, ns, pod

TEST_NS = "cilium-test"
PODS = [ns(TEST_NS), ns("other"),
        pod(f"{TEST_NS}/client", {"name": "client", "kind": "client"}),
        pod(f"{TEST_NS}/client2", {"name": "client2", "kind": "client", "other": "client"}),
        pod(f"{TEST_NS}/echo-same-node", {"name": "echo-same-node", "kind": "echo"}, ports={"http": 8080}),
        pod("other/echo", {"kind": "echo"}, ports={"http": 8080}, node="worker2")]


def ccnp(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy", "metadata": {"name": name},
            "spec": spec}


def build(*objects: dict[str, Any], **config: Any) -> Any:
    config.setdefault("dataplane", "ebpf")
    return Cluster.from_yaml(yaml.safe_dump_all([*PODS, *objects], sort_keys=False),
                             config=ClusterConfig(**config)).state


# Both Cilium settings: with its kube-proxy replacement (dataplane ebpf) and without it (cni: cilium, iptables).
CILIUM = [{"dataplane": "ebpf"}, {"dataplane": "iptables", "cni": "cilium"}]

ECHO_DENY = cnp(f"{TEST_NS}/client-egress-to-echo-deny", {
    "endpointSelector": {"matchLabels": {"kind": "client"}},
    "egressDeny": [{"toPorts": [{"ports": [{"port": "8080", "protocol": "TCP"}]}],
                    "toEndpoints": [{"matchLabels": {"io.kubernetes.pod.namespace": TEST_NS, "kind": "echo"}}]}]})
ALLOW_ALL_EGRESS = cnp(f"{TEST_NS}/allow-all-egress", {"endpointSelector": {}, "egress": [{"toEntities": ["all"]}]})


@pytest.mark.parametrize("config", CILIUM)
def test_clusterwide_default_deny_selects_every_namespace(config: dict[str, Any]) -> None:
    s = build(ccnp("deny-all-ingress", {"endpointSelector": {}, "ingress": [{}]}), **config)
    v = evaluate(s, f"{TEST_NS}/client", "other/echo", 8080)
    assert not v.allowed
    assert v.ingress.policies == (("CiliumClusterwideNetworkPolicy", "deny-all-ingress"),)
    assert "isolated by CiliumClusterwideNetworkPolicy deny-all-ingress" in v.ingress.reason
    assert not v.caveats  # evaluated now, not a "PolicyNotEvaluated" caveat
    assert not evaluate(s, "other/echo", f"{TEST_NS}/echo-same-node", 8080).allowed
    assert evaluate(s, f"{TEST_NS}/echo-same-node", f"{TEST_NS}/echo-same-node", 8080).allowed  # itself


def test_clusterwide_endpoint_selector_picks_namespaces_by_the_pod_namespace_label() -> None:
    only_test = ccnp("lock-cilium-test", {
        "endpointSelector": {"matchLabels": {"k8s:io.kubernetes.pod.namespace": TEST_NS}},
        "ingress": [{"fromEndpoints": [{"matchLabels": {"kind": "client"}}]}]})
    s = build(only_test)
    assert evaluate(s, f"{TEST_NS}/client", f"{TEST_NS}/echo-same-node", 8080).allowed
    denied = evaluate(s, "other/echo", f"{TEST_NS}/echo-same-node", 8080)
    assert not denied.allowed
    # The other namespace is not selected: its pods stay open.
    assert evaluate(s, f"{TEST_NS}/echo-same-node", "other/echo", 8080).ingress.reason.startswith("no policy selects")
    # A clusterwide policy's fromEndpoints are not limited to a namespace: a client anywhere matches.
    anywhere = build(ccnp("echo-from-clients", {
        "endpointSelector": {"matchLabels": {"kind": "echo"}},
        "ingress": [{"fromEndpoints": [{"matchLabels": {"kind": "client"}}]}]}))
    assert evaluate(anywhere, f"{TEST_NS}/client", "other/echo", 8080).allowed
    assert not evaluate(anywhere, "other/echo", f"{TEST_NS}/echo-same-node", 8080).allowed


def test_specs_and_a_host_policy() -> None:
    s = build(ccnp("two", {}) | {"spec": None, "specs": [
        {"endpointSelector": {"matchLabels": {"kind": "echo"}}, "ingress": [{}]},
        {"nodeSelector": {}, "ingress": [{"fromEntities": ["cluster"]}]}]})
    index = policy_index(s)
    assert any("specs[1].nodeSelector: host policies (a node's own traffic) are not simulated: this spec is left "
               "out" in p for p in index.problems)
    # The other spec still counts: echo pods are in default deny for ingress.
    v = evaluate(s, f"{TEST_NS}/client", "other/echo", 8080)
    assert not v.allowed and "CiliumClusterwideNetworkPolicy two#specs[0]" in v.ingress.reason
    assert any("ignored:" in n and "nodeSelector" in n for n in v.notes)


@pytest.mark.parametrize("config", CILIUM)
def test_egress_deny_wins_over_an_allow_and_is_named(config: dict[str, Any]) -> None:
    s = build(ECHO_DENY, ALLOW_ALL_EGRESS, **config)
    v = evaluate(s, f"{TEST_NS}/client", f"{TEST_NS}/echo-same-node", 8080)
    assert not v.allowed
    assert v.egress.reason == (f"denied by CiliumNetworkPolicy {TEST_NS}/client-egress-to-echo-deny egressDeny[0]"
                               ".to[0].toPorts.ports[0] (Cilium: a deny rule wins over every allow)")
    assert "no allow rule overrides a deny" in v.egress.fix()
    # The deny names only echo of its own namespace and port 8080: the rest is allowed by allow-all-egress.
    assert evaluate(s, f"{TEST_NS}/client", "other/echo", 8080).allowed
    assert evaluate(s, f"{TEST_NS}/client", f"{TEST_NS}/client2", 8080).allowed
    m = matrix(s, pods=True)
    assert not m.allowed_between(f"{TEST_NS}/client", f"{TEST_NS}/echo-same-node").contains("TCP", 8080)
    assert m.allowed_between(f"{TEST_NS}/client", f"{TEST_NS}/echo-same-node").contains("TCP", 8081)
    assert "evaluated under Cilium's deny-before-allow walk over classes of pods alike" in m.notes
    assert v.to_dict()["egress"]["cilium"]["deniedBy"].startswith("CiliumNetworkPolicy cilium-test/client-egress")


def test_a_deny_wins_over_a_kubernetes_network_policy_allow_too() -> None:
    allow = netpol(f"{TEST_NS}/allow-egress", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{}]})
    v = evaluate(build(ECHO_DENY, allow), f"{TEST_NS}/client", f"{TEST_NS}/echo-same-node", 8080)
    assert not v.allowed and v.egress.cilium is not None and v.egress.cilium.denied_by is not None


def test_cidr_deny_with_except_puts_the_client_in_default_deny() -> None:
    deny = cnp(f"{TEST_NS}/client-egress-to-cidr-deny", {
        "endpointSelector": {"matchLabels": {"kind": "client"}},
        "egressDeny": [{"toCIDRSet": [{"cidr": "1.0.0.0/8", "except": ["1.1.1.1/32"]}]}]})
    s = build(deny)
    denied = evaluate(s, f"{TEST_NS}/client", "1.0.0.1", 443)
    assert not denied.allowed and "egressDeny[0].to[0]" in denied.egress.reason
    # 1.1.1.1 is excepted from the deny, yet denied: the deny policy alone isolates the client (the manifest's note).
    kept = evaluate(s, f"{TEST_NS}/client", "1.1.1.1", 443)
    assert not kept.allowed and "default deny" in kept.egress.reason
    with_allow = build(deny, cnp(f"{TEST_NS}/world", {"endpointSelector": {"matchLabels": {"kind": "client"}},
                                                      "egress": [{"toEntities": ["world"]}]}))
    assert evaluate(with_allow, f"{TEST_NS}/client", "1.1.1.1", 443).allowed
    assert not evaluate(with_allow, f"{TEST_NS}/client", "1.0.0.1", 443).allowed


def test_docs_external_lockdown_clusterwide_deny_from_world() -> None:
    lockdown = ccnp("external-lockdown", {"endpointSelector": {}, "ingressDeny": [{"fromEntities": ["world"]}],
                                          "ingress": [{"fromEntities": ["all"]}]})
    s = build(lockdown)
    world = evaluate(s, "192.0.2.10", "other/echo", 8080)
    assert not world.allowed
    assert "denied by CiliumClusterwideNetworkPolicy external-lockdown ingressDeny[0].from[0]" in world.ingress.reason
    assert evaluate(s, f"{TEST_NS}/client", "other/echo", 8080).allowed


def test_not_enforced_without_cilium() -> None:
    s = build(ccnp("deny-all-ingress", {"endpointSelector": {}, "ingress": [{}]}), dataplane="iptables")
    v = evaluate(s, f"{TEST_NS}/client", "other/echo", 8080)
    assert v.allowed
    assert any("CiliumClusterwideNetworkPolicy deny-all-ingress is not enforced" in n for n in v.notes)


def test_kubectl_names_of_the_clusterwide_kind() -> None:
    from knetsim.model.kinds import BY_KIND

    info = BY_KIND["CiliumClusterwideNetworkPolicy"]
    assert (info.group, info.version, info.plural, info.namespaced, info.short_names) == (
        "cilium.io", "v2", "ciliumclusterwidenetworkpolicies", False, ("ccnp",))


def test_lint_counts_a_clusterwide_default_deny() -> None:
    from knetsim.policy.lint import lint

    s = build(ccnp("deny-all", {"endpointSelector": {}, "ingress": [{}], "egress": [{}]}))
    codes = {(f.code, f.subject): f for f in lint(s)}
    # Every pod is selected: none is "selected by no policy" (the issue's doctor advised a default deny it had).
    assert not any(code == "PodsNotIsolated" for code, _ in codes)
    blocked = codes[("DNSEgressBlocked", f"Namespace {TEST_NS}")]
    assert "isolated for egress by CiliumClusterwideNetworkPolicy deny-all" in blocked.message
