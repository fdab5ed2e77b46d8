"""Never silent: the cluster's CNI decides which policy kinds count, kinds are told apart by group, and every
policy object a verdict leaves out is named on it (issue 30, items 1 and 6)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.helpers import knetsim_raising as run

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig, ConfigError, config_from_dict
from knetsim.policy import evaluate
from knetsim.policy.engine import policy_index
from knetsim.policy.lint import lint
from knetsim.policy.matrix import matrix

from .helpers import netpol, ns, pod

PODS = [ns("shop"), ns("other"), pod("shop/a", {"app": "a"}), pod("shop/b", {"app": "b"}, ports={"http": 80}),
        pod("other/c", {"app": "c"}, ports={"http": 80})]
# The issue's reproducer: Calico's recommended cluster-wide default deny.
DENY_ALL = {"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy", "metadata": {"name": "deny-all"},
            "spec": {"selector": "all()", "types": ["Ingress", "Egress"]}}
CALICO_NP = {"apiVersion": "projectcalico.org/v3", "kind": "NetworkPolicy",
             "metadata": {"name": "b-in", "namespace": "shop"},
             "spec": {"selector": "app == 'b'", "ingress": [{"action": "Deny"}]}}
ANTREA_NP = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "NetworkPolicy",
             "metadata": {"name": "anp", "namespace": "shop"},
             "spec": {"priority": 5, "appliedTo": [{"podSelector": {}}],
                      "ingress": [{"action": "Drop", "from": [{"podSelector": {}}]}]}}
ANTREA_ACNP = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "ClusterNetworkPolicy", "metadata": {"name": "acnp"},
               "spec": {"priority": 5, "tier": "securityops", "appliedTo": [{"podSelector": {}}],
                        "ingress": [{"action": "Drop", "from": [{"podSelector": {}}]}]}}
CCNP = {"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy", "metadata": {"name": "ccnp"},
        "spec": {"endpointSelector": {}, "ingressDeny": [{"fromEntities": ["all"]}]}}


def build(*objects: dict[str, Any], **config: Any) -> Any:
    return Cluster.from_yaml(yaml.safe_dump_all([*PODS, *objects], sort_keys=False),
                             config=ClusterConfig(**config)).state


# --- kinds are told apart by group ------------------------------------------------------------------------------


def test_a_calico_networkpolicy_is_not_read_as_a_kubernetes_one() -> None:
    s = build(CALICO_NP, cni="kindnet")
    assert s.network_policies == {}
    v = evaluate(s, "shop/a", "shop/b", 80)
    assert v.ingress.policies == ()  # nothing isolates b as a Kubernetes NetworkPolicy would
    assert [c.object.ref for c in v.caveats] == ["NetworkPolicy.projectcalico.org shop/b-in"]


def test_an_antrea_networkpolicy_is_not_read_as_a_kubernetes_one() -> None:
    s = build(ANTREA_NP, cni="kindnet")
    assert s.network_policies == {}
    assert matrix(s, pods=True).allowed_between("shop/a", "shop/b").describe() == "All connections"


def test_an_antrea_clusternetworkpolicy_is_not_read_as_the_network_policy_api_kind() -> None:
    s = build(ANTREA_ACNP, cni="antrea")
    index = policy_index(s)
    assert index.cluster == () and index.problems == ()  # no "KeyError: 'subject'" note any more
    v = evaluate(s, "shop/a", "shop/b", 80)
    # Evaluated as Antrea's own kind since policy/antrea (tests/policy/test_antrea_*.py): no caveat, its Drop decides.
    assert v.caveats == () and not v.allowed
    assert v.ingress.antrea is not None and v.ingress.antrea.match is not None
    assert v.ingress.antrea.match.kind == "ClusterNetworkPolicy.crd.antrea.io"


def test_a_kubernetes_and_a_calico_policy_of_one_name_are_both_kept() -> None:
    k8s = netpol("shop/b-in", {"podSelector": {"matchLabels": {"app": "b"}}, "policyTypes": ["Ingress"]})
    s = build(k8s, CALICO_NP, cni="kindnet")
    assert list(s.network_policies) == ["shop/b-in"]
    assert not evaluate(s, "shop/a", "shop/b", 80).allowed  # the Kubernetes one isolates b
    assert ("NetworkPolicy.projectcalico.org", "shop/b-in") in s.others


# --- never silent ------------------------------------------------------------------------------------------------


def test_a_calico_policy_on_a_kindnet_cluster_is_named_as_not_enforced() -> None:
    v = evaluate(build(DENY_ALL, cni="kindnet"), "shop/a", "shop/b", 80)
    assert v.allowed
    (caveat,) = v.caveats
    assert not caveat.enforced
    assert caveat.text() == (
        "GlobalNetworkPolicy.projectcalico.org deny-all: Calico's kind, not enforced: the cluster's CNI kindnet "
        "(cluster config) does not enforce it; set cni: calico in the cluster config if the cluster runs Calico")


def test_a_namespaced_policy_caveats_only_verdicts_with_an_end_in_its_namespace() -> None:
    s = build(CALICO_NP, cni="kindnet")
    assert evaluate(s, "shop/a", "other/c", 80).caveats  # a's egress could be decided in shop
    assert not evaluate(s, "other/c", "other/c", 80).caveats


def test_cilium_clusterwide_policies_are_evaluated_on_cilium_and_named_elsewhere() -> None:
    on_cilium = evaluate(build(CCNP, dataplane="ebpf"), "shop/a", "shop/b", 80)
    assert not on_cilium.allowed and not on_cilium.caveats  # evaluated (policy/cilium/), no longer a caveat
    assert "denied by CiliumClusterwideNetworkPolicy ccnp ingressDeny[0]" in on_cilium.ingress.reason
    elsewhere = evaluate(build(CCNP), "shop/a", "shop/b", 80)
    assert elsewhere.allowed
    assert any(n.startswith("CiliumClusterwideNetworkPolicy ccnp is not enforced") for n in elsewhere.notes)


def test_an_unknown_network_policy_kind_is_named() -> None:
    odd = {"apiVersion": "security.example.com/v1", "kind": "FirewallNetworkPolicy",
           "metadata": {"name": "fw", "namespace": "shop"}, "spec": {}}
    kyverno = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "k"}, "spec": {}}
    v = evaluate(build(odd, kyverno), "shop/a", "shop/b", 80)
    assert [c.object.ref for c in v.caveats] == ["FirewallNetworkPolicy.security.example.com shop/fw"]
    assert "a kind knetsim does not know (group security.example.com)" in v.caveats[0].reason


def test_staged_policies_are_listed_and_change_nothing() -> None:
    staged = {**DENY_ALL, "kind": "StagedGlobalNetworkPolicy"}
    v = evaluate(build(staged, cni="calico"), "shop/a", "shop/b", 80)
    assert v.allowed and v.caveats == ()
    assert "StagedGlobalNetworkPolicy.projectcalico.org deny-all: staged, never enforced" in v.notes[0]


def test_an_ill_shaped_staged_kubernetes_policy_is_named_and_set_aside(tmp_path: Path) -> None:
    """Its spec is a Kubernetes NetworkPolicy's: one the API server would refuse is named, never a traceback. A
    value of the wrong type is refused at admission, by the kind's declared fields (left out, as kubectl apply
    leaves it); a selector the reader refuses is set aside with a note."""
    staged = {"apiVersion": "projectcalico.org/v3", "kind": "StagedKubernetesNetworkPolicy",
              "metadata": {"name": "s", "namespace": "shop"}, "spec": {"podSelector": {}, "ingress": "nope"}}
    bad_operator = {**staged, "spec": {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}}}
    (tmp_path / "cluster.yaml").write_text("cni: calico\n")
    for policy, said in ((staged, 'StagedKubernetesNetworkPolicy shop/s: spec.ingress: Invalid value: "string": '
                                  "spec.ingress in body must be of type array"),
                         (bad_operator, "StagedKubernetesNetworkPolicy shop/s: spec.podSelector.matchExpressions[0]."
                                        'operator: Invalid value: "Bogus": not a valid selector operator (the staged '
                                        "policy is ignored)")):
        (tmp_path / "in.yaml").write_text(yaml.safe_dump_all([*PODS, policy], sort_keys=False))
        for command in (["matrix"], ["policy", "check", "--from", "shop/a", "--to", "shop/b", "--port", "80"]):
            out = run(*command, "-f", str(tmp_path / "in.yaml"), "--cluster-config", str(tmp_path / "cluster.yaml"))
            assert out.exit_code == 0, out.output
            assert said in out.output


def test_flannel_enforces_no_network_policy_and_says_so() -> None:
    deny = netpol("shop/deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
    s = build(deny, cni="flannel")
    v = evaluate(s, "shop/a", "shop/b", 80)
    assert v.allowed
    assert [c.text() for c in v.caveats] == [
        "NetworkPolicy.networking.k8s.io shop/deny: not enforced: flannel enforces no network policy "
        "(it is a pod network only)"]
    assert any("flannel" in n for n in matrix(s, pods=True).notes)


# --- which CNI ---------------------------------------------------------------------------------------------------


def test_kind_like_cluster_keeps_kindnet() -> None:
    index = policy_index(build())
    assert (index.cni.name, index.cni.how) == ("kindnet", "default")


def test_calico_is_inferred_from_its_kinds_and_the_answer_says_so() -> None:
    v = evaluate(build(DENY_ALL), "shop/a", "shop/b", 80)
    assert v.cni is not None and (v.cni.name, v.cni.how) == ("calico", "inferred")
    assert v.cni.text() == ("CNI Calico (inferred from GlobalNetworkPolicy.projectcalico.org deny-all: set cni in "
                            "the cluster config to say otherwise)")


def test_two_cnis_kinds_infer_nothing_and_caveat_both() -> None:
    v = evaluate(build(DENY_ALL, ANTREA_NP), "shop/a", "shop/b", 80)
    assert v.cni is not None and v.cni.name == "kindnet"
    assert sorted(c.object.group for c in v.caveats) == ["crd.antrea.io", "projectcalico.org"]


def test_the_cni_is_detected_from_what_runs_in_a_cluster() -> None:
    agent = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "calico-node", "namespace":
                                                                          "calico-system"},
             "spec": {"selector": {"matchLabels": {"k8s-app": "calico-node"}},
                      "template": {"metadata": {"labels": {"k8s-app": "calico-node"}},
                                   "spec": {"containers": [{"name": "calico-node", "image": "calico/node"}]}}}}
    index = policy_index(build(agent, ANTREA_NP))  # what runs wins over what is stored
    assert (index.cni.name, index.cni.how, index.cni.evidence) == (
        "calico", "detected", "DaemonSet calico-system/calico-node")


def test_cni_config_setting() -> None:
    assert config_from_dict({"cni": "calico"}).cni == "calico"
    assert config_from_dict({"dataplane": "nftables", "cni": "cilium"}).cni == "cilium"
    with pytest.raises(ConfigError, match="cni: Unsupported value: 'weave'"):
        config_from_dict({"cni": "weave"})
    with pytest.raises(ConfigError, match="dataplane ebpf is Cilium's kube-proxy replacement"):
        config_from_dict({"dataplane": "ebpf", "cni": "calico"})


def test_cilium_without_kube_proxy_replacement_enforces_cilium_policies() -> None:
    cilium_np = {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
                 "metadata": {"name": "b-in", "namespace": "shop"},
                 "spec": {"endpointSelector": {"matchLabels": {"app": "b"}}, "ingress": [{"fromEndpoints": [
                     {"matchLabels": {"app": "nobody"}}]}]}}
    assert not evaluate(build(cilium_np, cni="cilium"), "shop/a", "shop/b", 80).allowed
    assert evaluate(build(cilium_np, cni="kindnet"), "shop/a", "shop/b", 80).allowed


# --- every command that reads it ----------------------------------------------------------------------------------


@pytest.fixture()
def antrea_cluster(tmp_path: Path) -> str:
    """Antrea's pre-v1.0 group: enforced by the (inferred) Antrea CNI, not evaluated by knetsim (its crd.antrea.io
    kinds are, since policy/antrea)."""
    path = tmp_path / "cluster.yaml"
    legacy = {**ANTREA_ACNP, "apiVersion": "security.antrea.tanzu.vmware.com/v1alpha1"}
    path.write_text(yaml.safe_dump_all([*PODS, legacy], sort_keys=False))
    return str(path)



def test_policy_check_names_the_cni_and_the_left_out_policy(antrea_cluster: str) -> None:
    args = ("policy", "check", "-f", antrea_cluster, "--from", "shop/a", "--to", "shop/b", "--port", "80")
    text = run(*args).output
    assert "cni: CNI Antrea (inferred from ClusterNetworkPolicy.security.antrea.tanzu.vmware.com acnp" in text
    assert ("caveat: ClusterNetworkPolicy.security.antrea.tanzu.vmware.com acnp: enforced by Antrea, but knetsim does "
            "not evaluate") in text
    doc = json.loads(run(*args, "-o", "json").output)
    assert doc["cni"] == {"name": "antrea", "how": "inferred",
                          "evidence": "ClusterNetworkPolicy.security.antrea.tanzu.vmware.com acnp"}
    assert [(c["group"], c["kind"], c["name"], c["enforcedByCNI"]) for c in doc["caveats"]] == [
        ("security.antrea.tanzu.vmware.com", "ClusterNetworkPolicy", "acnp", True)]


def test_trace_matrix_and_doctor_name_it(antrea_cluster: str) -> None:
    trace = run("trace", "-f", antrea_cluster, "--from", "shop/a", "10.244.1.3:80").output
    policy_line = next(line for line in trace.splitlines() if " policy " in line)
    assert "caveat: ClusterNetworkPolicy.security.antrea.tanzu.vmware.com acnp" in policy_line
    table = run("matrix", "-f", antrea_cluster).output
    assert "caveat: ClusterNetworkPolicy.security.antrea.tanzu.vmware.com acnp" in table
    doc = json.loads(run("matrix", "-f", antrea_cluster, "-o", "json").output)
    assert any("acnp" in n for n in doc["notes"])
    doctor = " ".join(run("doctor", "-f", antrea_cluster).output.split())
    # The finding names the file the policy was written in, after the object.
    assert re.search(r"ClusterNetworkPolicy\.security\.antrea\.tanzu\.vmware\.com acnp \([^)]*\.yaml:\d+\): "
                     "PolicyNotEvaluated", doctor)
    assert "unless ClusterNetworkPolicy.security.antrea.tanzu.vmware.com acnp" in doctor


def test_lint_findings() -> None:
    found = [(f.code, f.subject) for f in lint(build(DENY_ALL, cni="kindnet"))]
    assert ("PolicyNotEnforced", "GlobalNetworkPolicy.projectcalico.org deny-all") in found


def test_a_detected_cni_whose_policies_were_not_read_is_named() -> None:
    agent = pod("kube-system/calico-node-x7k2p", {"k8s-app": "calico-node"})
    v = evaluate(build(agent), "shop/a", "shop/b", 80)
    assert v.cni is not None and (v.cni.name, v.cni.how, v.cni.evidence) == (
        "calico", "detected", "pod kube-system/calico-node-x7k2p")
    assert any(n.startswith("Calico runs in this cluster (pod kube-system/calico-node-x7k2p) but none of its own "
                            "policy kinds") for n in v.notes)


def test_any_kind_of_a_known_name_in_another_group_is_kept_apart() -> None:
    # An Istio Gateway is not a Gateway API Gateway: keyed by kind name alone it was routed as one.
    istio = {"apiVersion": "networking.istio.io/v1", "kind": "Gateway", "metadata": {"name": "gw",
                                                                                   "namespace": "shop"},
             "spec": {"selector": {"istio": "ingressgateway"}}}
    s = build(istio)
    assert s.gateways == {}
    assert ("Gateway.networking.istio.io", "shop/gw") in s.others


def test_the_issue_reproducer_through_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([*PODS, DENY_ALL], sort_keys=False))
    check = run("policy", "check", "-f", str(path), "--from", "shop/a", "--to", "shop/b", "--port", "80")
    assert check.exit_code == 1 and check.output.startswith("DENIED")
    assert "cni: CNI Calico (inferred from GlobalNetworkPolicy.projectcalico.org deny-all" in check.output
    assert "PodsNotIsolated" not in run("doctor", "-f", str(path)).output
    doc = json.loads(run("matrix", "-f", str(path), "-o", "json").output)
    assert doc["connections"] == []


def test_the_doctor_names_a_deny_the_cni_would_refuse() -> None:
    """A deny-all whose selector does not parse (Calico refuses it: it never exists on the cluster) and an Antrea
    policy in a tier that does not exist: the doctor says what was set aside, instead of reading as clean."""
    from knetsim.policy.lint import lint

    broken = {**DENY_ALL, "spec": {"selector": "app = = 'b'", "types": ["Ingress"]}}
    [finding] = [f for f in lint(build(broken, cni="calico")) if f.code == "PolicySetAside"]
    assert finding.severity == "warning"
    assert "GlobalNetworkPolicy.projectcalico.org deny-all: spec.selector: Invalid value: \"app = = 'b'\"" in \
        finding.message
    antrea = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "ClusterNetworkPolicy", "metadata": {"name": "drop"},
              "spec": {"tier": "securityopps", "priority": 5, "appliedTo": [{"podSelector": {}}],
                       "ingress": [{"action": "Drop", "from": [{"podSelector": {}}]}]}}
    [finding] = [f for f in lint(build(antrea, cni="antrea")) if f.code == "PolicySetAside"]
    assert ('admission webhook "acnpvalidator.antrea.io" denied the request: tier securityopps does not exist'
            in finding.message)
    assert not [f for f in lint(build(DENY_ALL, cni="calico")) if f.code == "PolicySetAside"]
