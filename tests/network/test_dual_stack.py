"""Dual-stack and IPv6-only clusters end to end: DNS answers A, AAAA and ip6.arpa PTR, a dual-stack pod
connects over the family getaddrinfo puts first, and NetworkPolicy ipBlocks match the address the packet
carries, of either family."""

from __future__ import annotations

import pytest
from tests.conftest import cluster_from

from knetsim.cluster.config import config_from_dict
from knetsim.dns import lookup
from knetsim.dns.hostsfile import hosts_file
from knetsim.network.tracer import trace
from knetsim.policy.engine import evaluate

APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.27}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ipFamilyPolicy: PreferDualStack
  clusterIP: 10.96.0.80
  clusterIPs: [10.96.0.80, "fd00:10:96::80"]
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: web-headless}
spec:
  clusterIP: None
  ipFamilyPolicy: RequireDualStack
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec: {nodeName: worker, containers: [{name: c, image: busybox:1.36}]}
"""


@pytest.fixture(scope="module")
def dual():
    return cluster_from(APP, config=config_from_dict({"ipFamily": "dual"})).state


def records(state, name: str, qtype: str) -> list[str]:
    return [r.data for r in lookup(state, name, qtype).answer]


def test_dns_answers_both_families(dual):
    assert records(dual, "web.default.svc.cluster.local", "A") == ["10.96.0.80"]
    assert records(dual, "web.default.svc.cluster.local", "AAAA") == ["fd00:10:96::80"]
    six = records(dual, "web-headless.default.svc.cluster.local", "AAAA")
    assert len(six) == 2 and all(ip.startswith("fd00:10:244:") for ip in six)
    assert records(dual, "0.8.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa", "PTR") == [
        "web.default.svc.cluster.local."]


def test_a_dual_stack_pod_connects_over_ipv4_first(dual):
    result = trace(dual, "default/client", "http://web")
    assert result.outcome == "connected"
    assert "A and AAAA both answer; getaddrinfo puts IPv4 first" in result.hops[0].detail
    assert result.backend is not None and ":" not in result.backend.ip


def test_an_ipv6_address_connects_over_ipv6(dual):
    result = trace(dual, "default/client", "http://[fd00:10:96::80]/")
    assert result.outcome == "connected", [h.detail for h in result.hops]
    assert result.backend is not None and result.backend.ip.startswith("fd00:10:244:")
    # The backend sees (and its access log writes) the client's IPv6 address.
    client = next(p for p in dual.pods_in("default") if p.name == "client")
    assert result.backend.client_ip == client.pod_ips[1]
    assert trace(dual, "default/client", "http://10.96.0.80/").backend.client_ip == client.pod_ips[0]


def test_an_ipv6_only_cluster_resolves_aaaa_and_connects():
    state = cluster_from(APP.replace("clusterIPs: [10.96.0.80, \"fd00:10:96::80\"]", "")
                         .replace("clusterIP: 10.96.0.80", "clusterIP: fd00:10:96::80")
                         .replace("ipFamilyPolicy: RequireDualStack", "ipFamilyPolicy: PreferDualStack"),
                         config=config_from_dict({"ipFamily": "ipv6"})).state
    result = trace(state, "default/client", "http://web")
    assert result.outcome == "connected"
    assert "fd00:10:96::80" in result.hops[0].detail


def test_ip_blocks_match_the_address_family_the_packet_carries(dual):
    policy = """
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: from-worker-v6}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{ipBlock: {cidr: "fd00:10:244:1::/64"}}]}]
"""
    state = cluster_from(APP + policy, config=config_from_dict({"ipFamily": "dual"})).state
    client = state.pods["default/client"]
    web = next(p for p in state.pods.values() if p.labels.get("app") == "web")
    v4, v6 = client.pod_ips
    assert evaluate(state, v6, web.pod_ips[1], 80).allowed
    assert not evaluate(state, v4, web.pod_ips[0], 80).allowed
    # Through a trace: the IPv4 connection (getaddrinfo's first) is dropped, the IPv6 one gets through.
    assert trace(state, "default/client", "http://web").outcome == "timeout"
    assert trace(state, "default/client", "http://[fd00:10:96::80]/").outcome == "connected"


def test_the_hosts_file_lists_the_pods_address_of_each_family(dual):
    # kubelet's managedHostsFileContent writes one line per status.podIPs entry, primary family first,
    # and separates a subdomain pod's names by tabs.
    client = next(p for p in dual.pods_in("default") if p.name == "client")
    assert len(client.pod_ips) == 2
    lines = hosts_file(dual, client).splitlines()
    assert lines[-2:] == [f"{client.pod_ips[0]}\tclient", f"{client.pod_ips[1]}\tclient"]
    assert ":" not in client.pod_ips[0] and ":" in client.pod_ips[1]


def test_a_single_stack_nodeport_opens_on_the_node_addresses_of_its_family_only():
    web6 = """
---
apiVersion: v1
kind: Service
metadata: {name: web6}
spec:
  type: NodePort
  ipFamilyPolicy: SingleStack
  ipFamilies: [IPv6]
  selector: {app: web}
  ports: [{port: 8080, targetPort: 80, nodePort: 31215}]
"""
    state = cluster_from(APP + web6, config=config_from_dict({"ipFamily": "dual"})).state
    worker = next(n for n in state.nodes.values() if n.name == "worker")
    v4, v6 = worker.internal_ips
    assert trace(state, "default/client", f"http://[{v6}]:31215/").outcome == "connected"
    # kube-proxy's IPv4 proxier never saw the Service: the node's own kernel resets the connection.
    refused = trace(state, "default/client", f"http://{v4}:31215/")
    assert refused.outcome == "refused", [h.detail for h in refused.hops]
    assert "no NodePort 31215/TCP" in refused.hops[1].detail
