"""Cilium selectors match the labels Cilium gives an endpoint, not only the pod's own: the service account
(``io.cilium.k8s.policy.serviceaccount``) and the cluster name (``io.cilium.k8s.policy.cluster``), with or without
the ``k8s:`` source prefix. Such a selector used to match no pod: an allow by service account allowed nothing and a
deny by service account denied nothing.

The policy restates cilium/cilium Documentation/security/policy/kubernetes.rst, "ServiceAccounts": pods running
under the service account ``leia`` accept HTTP GET ``/public`` on port 80 from pods running under ``luke``. The
label names are pkg/k8s/apis/cilium.io/const.go's; pkg/k8s/utils/utils.go (``SanitizePodLabels``) sets them from
the pod's ``spec.serviceAccountName`` and the agent's cluster name, and drops a pod's own labels under
``io.cilium.k8s`` (a pod cannot claim another account by labelling itself).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from knetsim import Cluster
from knetsim.cli.main import cli
from knetsim.cluster.config import ClusterConfig

from .helpers import assert_same_cells, matrix_cells, vectorised_and_pairwise

SAME_LABELS = {"app": "starwars"}  # every pod labelled alike: only the service account tells them apart


def account_pod(name: str, account: str | None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": "worker", "containers": [{"name": "c", "image": "busybox",
                                                                  "ports": [{"containerPort": 80, "name": "http"}]}]}
    if account is not None:
        spec["serviceAccountName"] = account
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec,
            "metadata": {"name": name, "namespace": "default", "labels": {**SAME_LABELS, **(labels or {})}}}


# kubernetes.rst "ServiceAccounts": the example policy, as written there.
SVC_ACCOUNT_POLICY = {
    "apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
    "metadata": {"name": "k8s-svc-account", "namespace": "default"},
    "spec": {"endpointSelector": {"matchLabels": {"io.cilium.k8s.policy.serviceaccount": "leia"}},
             "ingress": [{"fromEndpoints": [{"matchLabels": {"io.cilium.k8s.policy.serviceaccount": "luke"}}],
                          "toPorts": [{"ports": [{"port": "80", "protocol": "TCP"}],
                                       "rules": {"http": [{"method": "GET", "path": "/public$"}]}}]}]},
}
PODS = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
    account_pod("leia", "leia"),
    account_pod("luke", "luke"),
    account_pod("vader", None),  # no serviceAccountName: the `default` account
    # Claims luke's account by a label of its own: Cilium drops a pod's io.cilium.k8s labels.
    account_pod("impostor", "vader", {"io.cilium.k8s.policy.serviceaccount": "luke"}),
]


def write(tmp_path: Path, *objects: dict[str, Any]) -> tuple[str, str]:
    manifests, config = tmp_path / "app.yaml", tmp_path / "cluster.yaml"
    manifests.write_text(yaml.safe_dump_all([*PODS, *objects], sort_keys=False))
    config.write_text("cni: cilium\n")
    return str(manifests), str(config)


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def check(files: tuple[str, str], src: str, dst: str, *more: str) -> Any:
    return run("policy", "check", "-f", files[0], "--cluster-config", files[1], "--from", src, "--to", dst,
               "--port", "80", *more)


def test_the_docs_service_account_policy_through_policy_check(tmp_path: Path) -> None:
    files = write(tmp_path, SVC_ACCOUNT_POLICY)
    luke = check(files, "default/luke", "default/leia")
    assert luke.exit_code == 0, luke.output
    assert ("ingress of default/leia: allowed by CiliumNetworkPolicy default/k8s-svc-account "
            "ingress[0].from[0].toPorts.ports[0]") in luke.output
    for other in ("default/vader", "default/impostor"):
        denied = check(files, other, "default/leia")
        assert denied.exit_code == 1, denied.output
        assert "isolated by CiliumNetworkPolicy default/k8s-svc-account (default deny)" in denied.output
    # leia's account is what the endpointSelector picks: luke, labelled alike, is not isolated.
    assert check(files, "default/vader", "default/luke").exit_code == 0


def test_the_k8s_source_prefix_reads_the_same(tmp_path: Path) -> None:
    prefixed = json.loads(json.dumps(SVC_ACCOUNT_POLICY).replace('"io.cilium.k8s.policy.serviceaccount"',
                                                                 '"k8s:io.cilium.k8s.policy.serviceaccount"'))
    files = write(tmp_path, prefixed)
    assert check(files, "default/luke", "default/leia").exit_code == 0
    assert check(files, "default/vader", "default/leia").exit_code == 1


def test_the_docs_service_account_policy_through_the_matrix(tmp_path: Path) -> None:
    files = write(tmp_path, SVC_ACCOUNT_POLICY)
    out = run("matrix", "-f", files[0], "--cluster-config", files[1], "--pods", "-o", "json")
    assert out.exit_code == 0, out.output
    into_leia = {c["from"]: c["allowed"] for c in json.loads(out.output)["connections"]
                 if c["to"] == "default/leia"}
    assert into_leia == {"default/luke": [{"protocol": "TCP", "ports": [[80, 80]]}]}


def test_the_vectorised_matrix_tells_accounts_apart_as_the_walk_does(monkeypatch: pytest.MonkeyPatch) -> None:
    deny_vader = {"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy",
                  "metadata": {"name": "no-default-account"},
                  "spec": {"endpointSelector": {"matchLabels": {"io.cilium.k8s.policy.cluster": "default"}},
                           "egressDeny": [{"toEndpoints": [{"matchExpressions": [
                               {"key": "k8s:io.cilium.k8s.policy.serviceaccount", "operator": "In",
                                "values": ["default"]}]}]}],
                           # a deny-only policy would put every pod in egress default deny (rule.go)
                           "egress": [{"toEntities": ["all"]}]}}
    text = yaml.safe_dump_all([*PODS, SVC_ACCOUNT_POLICY, deny_vader])
    state = Cluster.from_yaml(text, config=ClusterConfig(cni="cilium")).state
    vectorised, pairwise = vectorised_and_pairwise(state, monkeypatch, pods=True)
    cells = assert_same_cells(vectorised, pairwise, "service accounts")
    assert cells == matrix_cells(vectorised)
    into = {k: v[0] for k, v in cells.items()
            if v[0] and k[0].startswith("default/") and k[1] in ("default/leia", "default/vader")}
    # From the pods, into leia: luke on TCP/80 only; into vader (the `default` account): nothing, every pod's egress
    # to it is denied (an address outside the cluster has no egress here to deny).
    assert into == {("default/luke", "default/leia"): [{"protocol": "TCP", "ports": [[80, 80]]}]}


def test_a_deny_by_service_account_denies(tmp_path: Path) -> None:
    """A clusterwide ingressDeny from the `default` account, beside an allow from everyone in the cluster."""
    lockdown = {"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy",
                "metadata": {"name": "deny-default-account"},
                "spec": {"endpointSelector": {},
                         "ingressDeny": [{"fromEndpoints": [{"matchLabels": {
                             "k8s:io.cilium.k8s.policy.serviceaccount": "default"}}]}],
                         "ingress": [{"fromEntities": ["cluster"]}]}}
    files = write(tmp_path, lockdown)
    vader = check(files, "default/vader", "default/luke", "-o", "json")
    assert vader.exit_code == 1
    assert json.loads(vader.output)["ingress"]["cilium"]["deniedBy"] == (
        "CiliumClusterwideNetworkPolicy deny-default-account ingressDeny[0].from[0]")
    assert check(files, "default/leia", "default/luke").exit_code == 0


def test_the_cluster_name_label(tmp_path: Path) -> None:
    def isolates(cluster: str) -> bool:
        policy = json.loads(json.dumps(SVC_ACCOUNT_POLICY))
        policy["spec"]["endpointSelector"] = {"matchLabels": {"io.cilium.k8s.policy.cluster": cluster,
                                                              "app": "starwars"}}
        return check(write(tmp_path, policy), "default/vader", "default/luke").exit_code == 1
    assert isolates("default")  # Cilium's cluster name unless cilium-config sets cluster-name
    assert not isolates("prod")


def test_a_label_knetsim_does_not_derive_is_named_on_every_answer(tmp_path: Path) -> None:
    policy = json.loads(json.dumps(SVC_ACCOUNT_POLICY))
    policy["spec"]["ingress"][0]["fromEndpoints"] = [{"matchLabels": {
        "io.cilium.k8s.policy.istiosidecarproxy": "true"}}]
    files = write(tmp_path, policy)
    note = ("spec.ingress[0].fromEndpoints[0]: io.cilium.k8s.policy.istiosidecarproxy is a label Cilium may give an "
            "endpoint that knetsim does not model")
    answer = check(files, "default/luke", "default/leia")
    assert answer.exit_code == 1 and note in answer.output
    matrix = run("matrix", "-f", files[0], "--cluster-config", files[1])
    assert note in matrix.output
    lint = run("policy", "lint", "-f", files[0], "--cluster-config", files[1])
    assert "PolicySetAside" in lint.output and "istiosidecarproxy" in lint.output


def test_describe_counts_the_pods_an_account_peer_matches(tmp_path: Path) -> None:
    files = write(tmp_path, SVC_ACCOUNT_POLICY)
    out = run("policy", "describe", "-f", files[0], "--cluster-config", files[1], "default/k8s-svc-account")
    assert out.exit_code == 0, out.output
    assert "pods with io.cilium.k8s.policy.serviceaccount=luke in namespace default [1 pod(s)]" in out.output
    assert ("Applies to:   pods with io.cilium.k8s.policy.serviceaccount=leia in namespace default "
            "(1: default/leia)") in out.output


def test_lint_names_a_misspelt_account_in_a_peer(tmp_path: Path) -> None:
    """`policy lint` judges fromEndpoints/toEndpoints on the endpoints' labels: the docs' policy is clean, and with
    `luke` misspelt its rule matches no pod, named with the account the pods do have."""
    clean = run("policy", "lint", "-f", write(tmp_path, SVC_ACCOUNT_POLICY)[0], "--cluster-config",
                str(tmp_path / "cluster.yaml"), "-o", "json")
    assert not [f for f in json.loads(clean.output)["findings"]
                if f["code"] in ("PeerSelectsNothing", "PolicySelectsNothing")]
    misspelt = json.loads(json.dumps(SVC_ACCOUNT_POLICY).replace('"luke"', '"lkue"'))
    files = write(tmp_path, misspelt)
    found = json.loads(run("policy", "lint", "-f", files[0], "--cluster-config", files[1], "-o", "json").output)[
        "findings"]
    [peer] = [f for f in found if f["code"] == "PeerSelectsNothing"]
    assert peer["subject"] == "CiliumNetworkPolicy default/k8s-svc-account"
    assert peer["message"].startswith("spec.ingress[0].fromEndpoints[0] (pods with "
                                      "io.cilium.k8s.policy.serviceaccount=lkue")
    assert "nearest is io.cilium.k8s.policy.serviceaccount=luke" in peer["message"]


def test_a_label_ciliums_default_filter_leaves_out_is_named(tmp_path: Path) -> None:
    """Cilium selects by an endpoint's identity labels, and its default filter (pkg/labelsfilter; the docs' page
    "Limiting Identity-Relevant Labels") leaves out statefulset.kubernetes.io/pod-name: on Cilium's defaults such a
    selector matches no pod. The agent's --labels can keep it, so knetsim matches the pod's labels and says so."""
    policy = json.loads(json.dumps(SVC_ACCOUNT_POLICY))
    policy["spec"]["ingress"][0]["fromEndpoints"] = [{"matchLabels": {"statefulset.kubernetes.io/pod-name": "db-0"}}]
    files = write(tmp_path, policy)
    answer = check(files, "default/luke", "default/leia")
    assert ("spec.ingress[0].fromEndpoints[0]: statefulset.kubernetes.io/pod-name is a label Cilium's default "
            "identity-relevant label filter leaves out of an endpoint's identity (pkg/labelsfilter): on Cilium this "
            "selector matches no pod unless the agent's --labels keeps it") in answer.output
    clean = check(write(tmp_path, SVC_ACCOUNT_POLICY), "default/luke", "default/leia")
    assert "identity-relevant" not in clean.output and "does not model" not in clean.output


def test_a_reserved_label_in_from_endpoints_is_its_entity(tmp_path: Path) -> None:
    """`fromEndpoints: [{matchLabels: {"reserved:host": ""}}]` is the host entity (cilium/cilium's own policy tests
    write it so; entity.go maps each entity to its reserved label): it used to drop the whole policy as invalid.
    An endpointSelector on a reserved identity (reserved:host: a host policy) is left out with a note, as
    nodeSelector is."""
    policy = json.loads(json.dumps(SVC_ACCOUNT_POLICY))
    policy["spec"]["ingress"][0]["fromEndpoints"] = [{"matchLabels": {"reserved:world": ""}}]
    files = write(tmp_path, policy)
    world = run("policy", "check", "-f", files[0], "--cluster-config", files[1], "--from", "192.0.2.1",
                "--to", "default/leia", "--port", "80")
    assert world.exit_code == 0, world.output
    assert "allowed by CiliumNetworkPolicy default/k8s-svc-account ingress[0].from[0]" in world.output
    assert check(files, "default/luke", "default/leia").exit_code == 1  # a pod is not `world`
    mixed = json.loads(json.dumps(policy).replace('"reserved:world": ""', '"reserved:world": "", "app": "x"'))
    refused = check(write(tmp_path, mixed), "default/luke", "default/leia")
    assert "spec.ingress[0].fromEndpoints[0]: reserved label 'reserved:world': a reserved identity carries no " \
        "other label" in refused.output
    host = json.loads(json.dumps(SVC_ACCOUNT_POLICY))
    host["spec"]["endpointSelector"] = {"matchLabels": {"reserved:host": ""}}
    left_out = check(write(tmp_path, host), "default/vader", "default/leia")
    assert left_out.exit_code == 0
    assert ("spec.endpointSelector: selects the reserved identity reserved:host (not a pod): host and "
            "reserved-identity policies are not simulated: this spec is left out") in left_out.output


def test_trace_follows_the_service_account_policy(tmp_path: Path) -> None:
    files = write(tmp_path, SVC_ACCOUNT_POLICY)
    state = Cluster.from_yaml(Path(files[0]).read_text(), config=ClusterConfig(cni="cilium")).state
    leia = state.pods["default/leia"].pod_ip

    def trace(src: str, path: str = "/public") -> Any:
        return run("trace", "-f", files[0], "--cluster-config", files[1], "--from", src, f"http://{leia}:80{path}")
    luke = trace("default/luke")
    assert luke.exit_code == 0, luke.output
    assert "ingress: allowed by CiliumNetworkPolicy default/k8s-svc-account ingress[0].from[0].toPorts.ports[0]" \
        in luke.output
    vader = trace("default/vader")
    assert vader.exit_code != 0 and "Outcome: timeout" in vader.output
    # The docs' HTTP rule: luke may GET /public only; Cilium's proxy answers anything else itself.
    private = trace("default/luke", "/private")
    assert private.exit_code != 0 and "Outcome: connected (HTTP 403)" in private.output
