"""The world outside the cluster: public names, egress through the node, and the classic egress exercises.

Address plan: DESIGN defaults (client pod 10.244.1.2 on worker 172.18.0.3); the outside's built-in hosts
(cluster/outside.py): example.com 93.184.215.14, one.one.one.one 1.1.1.1, dns.google 8.8.8.8; nothing
answers at 169.254.169.254 (a kind node has no cloud metadata service).

Given a pod with no policy, then `wget example.com` resolves through CoreDNS's forward, leaves its node
masqueraded by whoever masquerades on that data plane, and gets a plain web server's page; given the
exercise's egress policy (0.0.0.0/0 except the metadata address, plus DNS), then the metadata address is
dropped at the pod's egress while the Internet stays reachable; ClusterNetworkPolicy `networks` and
Cilium's `toCIDRSet` decide the same way for the tiers and the data plane that carry them.
"""

from __future__ import annotations

import pytest
from tests.conftest import cluster_from

from knetsim import Cluster
from knetsim.cluster.config import ConfigError, config_from_dict
from knetsim.network.tracer import trace

CLIENT = """
apiVersion: v1
kind: Pod
metadata: {name: client, labels: {app: client}}
spec:
  containers: [{name: c, image: busybox:1.36, command: [sleep, infinity]}]
---
"""
EXTERNAL_NAME = """
apiVersion: v1
kind: Service
metadata: {name: ext}
spec: {type: ExternalName, externalName: example.com}
---
"""
NO_METADATA = """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: internet-but-not-metadata}
spec:
  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
  egress:
  - to: [{ipBlock: {cidr: 0.0.0.0/0, except: [169.254.169.254/32]}}]
  - to:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}
      podSelector: {matchLabels: {k8s-app: kube-dns}}
    ports: [{protocol: UDP, port: 53}, {protocol: TCP, port: 53}]
---
"""


def run(cluster: Cluster, target: str, **kwargs):  # type: ignore[no-untyped-def]
    return trace(cluster.state, source="default/client", target=target, **kwargs)


def hop(t, layer: str):  # type: ignore[no-untyped-def]
    return next(h for h in t.hops if h.layer == layer)


@pytest.mark.parametrize(("dataplane", "cni", "agent", "rule"), [
    ("iptables", None, "kindnetd", "kindnet-masq"), ("nftables", None, "kindnetd", "kindnet-masq"),
    ("ebpf", None, "Cilium", "bpf.masquerade"),
    # Another CNI masquerades by its own agent's rule, whatever kube-proxy's mode.
    ("iptables", "calico", "calico-node (felix)", "cali-nat-outgoing"),
    ("nftables", "antrea", "antrea-agent", "ANTREA-POSTROUTING"),
    ("iptables", "flannel", "flanneld", "FLANNEL-POSTRTG"),
    ("iptables", "cilium", "Cilium", "CILIUM_POST_nat"),
])
def test_a_pod_reaches_example_com_through_its_node(dataplane: str, cni: str | None, agent: str, rule: str) -> None:
    cluster = cluster_from(CLIENT, config=config_from_dict({"dataplane": dataplane, **({"cni": cni} if cni else {})}))
    t = run(cluster, "http://example.com/")
    assert t.outcome == "connected"
    assert (t.backend.pod, t.backend.ip, t.backend.port) == ("example.com", "93.184.215.14", 80)
    assert t.reply.status == 200 and "<title>example.com</title>" in t.reply.body
    assert "example.com → example.com. → 93.184.215.14" in hop(t, "dns").detail
    snat = hop(t, "dataplane").data["snat"]
    assert snat == {"from": "10.244.1.2", "to": "172.18.0.3", "by": agent}
    assert rule in hop(t, "dataplane").detail


def test_the_outside_answers_as_a_plain_web_server() -> None:
    cluster = cluster_from(CLIENT)
    assert run(cluster, "http://example.com/nope").reply.status == 404
    assert run(cluster, "http://example.com/", method="POST").reply.status == 405
    assert run(cluster, "https://www.example.com/").reply.status == 200
    assert run(cluster, "tcp://dns.google:53").outcome == "connected"
    closed = run(cluster, "tcp://example.com:22")
    assert closed.outcome == "timeout" and "its firewall drops 22/TCP" in hop(closed, "listener").detail
    nobody = run(cluster, "http://169.254.169.254/latest/meta-data/")
    assert nobody.outcome == "no-route"
    assert run(cluster, "http://no-such-name.example.org/").outcome == "nxdomain"


def test_an_external_name_to_a_public_host_connects_and_warns_about_the_host_header() -> None:
    cluster = cluster_from(CLIENT + EXTERNAL_NAME)
    t = run(cluster, "http://ext/")
    assert t.outcome == "connected" and t.backend.pod == "example.com"
    assert "(CNAME example.com., answered by the upstream) → 93.184.215.14" in hop(t, "dns").detail
    assert [f.code for f in t.findings] == ["ExternalNameHostHeader"]


def test_egress_to_the_internet_except_the_metadata_address() -> None:
    """The classic exercise: egress to 0.0.0.0/0 except 169.254.169.254/32, and DNS to kube-dns."""
    cluster = cluster_from(CLIENT + NO_METADATA)
    assert run(cluster, "http://example.com/").outcome == "connected"
    assert run(cluster, "http://1.1.1.1/").outcome == "connected"
    blocked = run(cluster, "http://169.254.169.254/")
    assert blocked.outcome == "timeout"
    assert blocked.failing_hop.layer == "policy"
    assert [f.code for f in blocked.findings] == ["PolicyDrop"]


def test_default_deny_egress_without_dns_fails_at_dns_not_at_the_internet() -> None:
    deny = """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-egress}
spec: {podSelector: {}, policyTypes: [Egress]}
"""
    cluster = cluster_from(CLIENT + deny)
    assert run(cluster, "http://example.com/").outcome == "dns-timeout"
    assert run(cluster, "http://93.184.215.14/").outcome == "timeout"


def test_cluster_network_policy_networks_decide_before_any_network_policy() -> None:
    admin = """
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: no-metadata}
spec:
  tier: Admin
  priority: 5
  subject: {namespaces: {}}
  egress:
  - name: metadata
    action: Deny
    to: [{networks: [169.254.169.254/32, 8.8.0.0/16]}]
---
"""
    cluster = cluster_from(CLIENT + admin)
    assert run(cluster, "http://169.254.169.254/").outcome == "timeout"
    assert run(cluster, "tcp://dns.google:53").outcome == "timeout"  # 8.8.8.8 or 8.8.4.4: both in 8.8.0.0/16
    assert run(cluster, "http://one.one.one.one/").outcome == "connected"


def test_cilium_to_cidr_set_applies_on_ebpf() -> None:
    cnp = """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: world-but-metadata}
spec:
  endpointSelector: {matchLabels: {app: client}}
  egress:
  - toCIDRSet: [{cidr: 0.0.0.0/0, except: [169.254.169.254/32]}]
  - toEndpoints: [{matchLabels: {io.kubernetes.pod.namespace: kube-system, k8s-app: kube-dns}}]
    toPorts: [{ports: [{port: "53", protocol: ANY}]}]
---
"""
    cluster = cluster_from(CLIENT + cnp, config=config_from_dict({"dataplane": "ebpf"}))
    assert run(cluster, "http://example.com/").outcome == "connected"
    assert run(cluster, "http://169.254.169.254/").outcome == "timeout"


def test_a_host_network_pod_leaves_with_the_nodes_own_address() -> None:
    pod = """
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  hostNetwork: true
  containers: [{name: c, image: busybox:1.36, command: [sleep, infinity]}]
"""
    t = run(cluster_from(pod), "http://example.com/")
    assert t.outcome == "connected"
    assert "snat" not in hop(t, "dataplane").data
    assert hop(t, "dataplane").detail.startswith("leaves with the node's own address 172.18.0.")


def test_the_cluster_config_overrides_the_outside() -> None:
    config = config_from_dict({"outside": {"hosts": {"example.com": ["192.0.2.80"], "intranet.corp": ["10.1.2.3"],
                                                     "dns.google": []}}})
    cluster = cluster_from(CLIENT, config=config)
    t = run(cluster, "http://example.com/")
    assert t.outcome == "connected" and t.backend.ip == "192.0.2.80"
    assert run(cluster, "http://intranet.corp/").backend.ip == "10.1.2.3"
    assert run(cluster, "http://dns.google/").outcome == "nxdomain"
    assert run(cluster, "http://www.example.com/").backend.ip == "93.184.215.14"  # the built-in one stays


@pytest.mark.parametrize(("outside", "message"), [
    ({"hosts": {"example.com": ["not-an-ip"]}}, "outside.hosts[example.com]: 'not-an-ip' is not an IP address"),
    ({"hosts": {"bad..name": ["1.2.3.4"]}}, "outside.hosts[bad..name]: not a DNS name"),
    ({"hosts": ["example.com"]}, "outside.hosts: expected a mapping of names to address lists"),
    ({"names": {}}, "outside: unknown field(s) names; known: hosts"),
])
def test_a_bad_outside_section_names_the_field(outside: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_from_dict({"outside": outside}, "lab.yaml")
    assert str(info.value) == f"lab.yaml: {message}"
