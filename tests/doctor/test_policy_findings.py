"""Policy findings name the deciding object: the NetworkPolicy that isolates, the label that would match."""

from __future__ import annotations

from tests.conftest import EXAMPLES

from knetsim import Cluster


def test_a_dns_egress_block_names_the_policies_that_isolate() -> None:
    text = "\n---\n".join(p.read_text() for p in sorted((EXAMPLES / "broken" / "dns-egress-blocked").glob("*.yaml")))
    [found] = [f for f in Cluster.from_yaml(text).doctor().findings if f.code == "DNSEgressBlocked"]
    assert "isolated for egress by NetworkPolicy default/client-to-web, NetworkPolicy default/default-deny-egress" \
        in found.message
    assert "isolatedBy: NetworkPolicy default/default-deny-egress" in found.evidence
    # -n names the namespace the finding is about: it is kept.
    assert "DNSEgressBlocked" in {f.code for f in Cluster.from_yaml(text).doctor(namespace="default").findings}


def test_a_peer_selector_that_matches_nothing_names_the_label_that_would() -> None:
    text = """
apiVersion: v1
kind: Pod
metadata: {name: db, labels: {app: db}}
spec: {containers: [{name: db, image: postgres:16}]}
---
apiVersion: v1
kind: Pod
metadata: {name: api, labels: {app: api}}
spec: {containers: [{name: api, image: nginx:1.27}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-from-api}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress: [{from: [{podSelector: {matchLabels: {app: apl}}}]}]
"""
    [found] = [f for f in Cluster.from_yaml(text).doctor().findings if f.code == "PeerSelectsNothing"]
    assert found.subject == "NetworkPolicy default/db-from-api"
    assert "app=apl is not on any of them, nearest is app=api" in found.message
