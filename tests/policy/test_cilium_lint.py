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


def test_a_selector_on_a_label_cilium_derives_is_not_called_a_typo() -> None:
    """io.cilium.k8s.policy.serviceaccount is a label Cilium gives each endpoint, not one of the pod's: knetsim
    cannot tell whether it selects anything, so it raises no "selects nothing" with a wrong nearest label."""
    by_account = policy("CiliumNetworkPolicy", "web")
    by_account["spec"]["endpointSelector"] = {"matchLabels": {"io.cilium.k8s.policy.serviceaccount": "default"}}
    state = Cluster.from_yaml(yaml.safe_dump_all([WEB, by_account]), config=ClusterConfig(cni="cilium")).state
    assert not [f for f in lint(state) if f.code == "PolicySelectsNothing"]


def test_each_spec_of_a_clusterwide_policy_is_judged_on_its_own() -> None:
    """A `specs` list is one rule per entry: the second one's typo is named (`#specs[1]`) though the first selects."""
    ccnp = policy("CiliumClusterwideNetworkPolicy", "web")
    rule = ccnp.pop("spec")
    ccnp["specs"] = [rule, {**rule, "endpointSelector": {"matchLabels": {"app": "wbe"}}}]
    state = Cluster.from_yaml(yaml.safe_dump_all([WEB, ccnp]), config=ClusterConfig(cni="cilium")).state
    assert [f.subject for f in lint(state) if f.code == "PolicySelectsNothing"] == [
        "CiliumClusterwideNetworkPolicy web-in#specs[1]"]
