"""A Cilium policy whose endpointSelector selects no pod (a one-letter typo) is named with the label that would
match, namespaced or clusterwide, as a Kubernetes NetworkPolicy's podSelector is: it used to be silent, and the
pods it was written for read only as "selected by no policy"."""

from __future__ import annotations

import pytest
import yaml

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig
from knetsim.policy.lint import lint

WEB = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
       "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}}


def policy(kind: str, app: str) -> dict:
    meta = {"name": "web-in"} if kind == "CiliumClusterwideNetworkPolicy" else {"name": "web-in",
                                                                                "namespace": "default"}
    return {"apiVersion": "cilium.io/v2", "kind": kind, "metadata": meta,
            "spec": {"endpointSelector": {"matchLabels": {"app": app}}, "ingress": [{"fromEntities": ["cluster"]}]}}


@pytest.mark.parametrize(("kind", "subject", "where"), [
    ("CiliumNetworkPolicy", "CiliumNetworkPolicy default/web-in", "namespace default"),
    ("CiliumClusterwideNetworkPolicy", "CiliumClusterwideNetworkPolicy web-in", "any namespace"),
])
def test_an_endpoint_selector_typo_is_named_with_the_label_that_would_match(kind: str, subject: str,
                                                                            where: str) -> None:
    def findings(app: str) -> list:
        text = yaml.safe_dump_all([WEB, policy(kind, app)])
        state = Cluster.from_yaml(text, config=ClusterConfig(cni="cilium")).state
        return [f for f in lint(state) if f.code == "PolicySelectsNothing"]
    [finding] = findings("wbe")
    assert (finding.subject, finding.severity) == (subject, "warning")
    assert finding.message == (f"spec.endpointSelector (app=wbe) selects no pod in {where}; app=wbe is not on any of "
                               "them, nearest is app=web (value differs by 1 character(s))")
    assert findings("web") == []


@pytest.mark.parametrize("kind", ["CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy"])
def test_a_service_account_selector_is_judged_on_the_endpoints_labels(kind: str) -> None:
    """io.cilium.k8s.policy.serviceaccount is a label Cilium gives each endpoint (the pod's serviceAccountName,
    `default` when unset): a selector on the right name selects the pod, and a typo in the name is found, with the
    account the pod has as the nearest label."""
    def findings(account: str, cluster: str = "default", *more: dict) -> list:
        by_account = policy(kind, "web")
        by_account["spec"]["endpointSelector"] = {"matchLabels": {
            "k8s:io.cilium.k8s.policy.serviceaccount": account, "io.cilium.k8s.policy.cluster": cluster}}
        text = yaml.safe_dump_all([WEB, by_account, *more])
        state = Cluster.from_yaml(text, config=ClusterConfig(cni="cilium")).state
        return [f for f in lint(state) if f.code == "PolicySelectsNothing"]
    assert findings("default") == []
    [typo] = findings("defualt")
    assert "io.cilium.k8s.policy.serviceaccount=defualt is not on any of them, nearest is " \
        "io.cilium.k8s.policy.serviceaccount=default" in typo.message
    assert typo.message.startswith("spec.endpointSelector (")
    assert len(findings("default", "prod")) == 1  # the cluster is named `default` unless cilium-config says...
    config = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "cilium-config", "namespace": "kube-system"}, "data": {"cluster-name": "prod"}}
    assert findings("default", "prod", config) == []  # ...otherwise (the agent's cluster-name)


def test_each_spec_of_a_clusterwide_policy_is_judged_on_its_own() -> None:
    """A `specs` list is one rule per entry: the second one's typo is named (`#specs[1]`) though the first selects."""
    ccnp = policy("CiliumClusterwideNetworkPolicy", "web")
    rule = ccnp.pop("spec")
    ccnp["specs"] = [rule, {**rule, "endpointSelector": {"matchLabels": {"app": "wbe"}}}]
    state = Cluster.from_yaml(yaml.safe_dump_all([WEB, ccnp]), config=ClusterConfig(cni="cilium")).state
    [finding] = [f for f in lint(state) if f.code == "PolicySelectsNothing"]
    assert finding.subject == "CiliumClusterwideNetworkPolicy web-in#specs[1]"
    assert finding.message.startswith("specs[1].endpointSelector (app=wbe) selects no pod")


def test_a_namespaced_policys_spec_is_named_by_its_place_in_specs() -> None:
    cilium = policy("CiliumNetworkPolicy", "web")
    rule = cilium.pop("spec")
    cilium["specs"] = [rule, {**rule, "endpointSelector": {"matchLabels": {"app": "wbe"}}}]
    state = Cluster.from_yaml(yaml.safe_dump_all([WEB, cilium]), config=ClusterConfig(cni="cilium")).state
    [finding] = [f for f in lint(state) if f.code == "PolicySelectsNothing"]
    assert finding.subject == "CiliumNetworkPolicy default/web-in#specs[1]"
    assert finding.message.startswith("specs[1].endpointSelector (app=wbe) selects no pod in namespace default")
