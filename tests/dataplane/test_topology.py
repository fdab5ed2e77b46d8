"""Which endpoints a node's proxy keeps: kube-proxy's CategorizeEndpoints (pkg/proxy/topology.go).

The first table restates upstream's TestCategorizeEndpoints (topology_test.go) row by row; the
PreferSameNode rows follow topologyModeFromHints (v1.35: PreferSameTrafficDistribution GA). Then the
same decision through every data plane of a three-zone cluster, and how trace and render show it.
"""

from __future__ import annotations

import pytest
from tests.conftest import cluster_from

from knetsim.cluster.config import config_from_dict
from knetsim.dataplane import BACKENDS, Packet, render, trace_packet
from knetsim.dataplane.model import EndpointInfo, ServicePortInfo, categorize


def info(itp: bool = False, etp: bool = False, node_port: int = 0) -> ServicePortInfo:
    return ServicePortInfo("ns", "svc", "p80", "TCP", 80, "10.96.0.99", node_port=node_port,
                           external_policy="Local" if etp else "Cluster", internal_policy="Local" if itp else "Cluster")


def ep(text: str, zones: str = "", ready: bool = True, local: bool = False, nodes: str = "",
       serving: bool | None = None, terminating: bool = False) -> EndpointInfo:
    ip, port = text.rsplit(":", 1)
    return EndpointInfo(ip, int(port), "this" if local else "other", ready, ready if serving is None else serving,
                        terminating, zone_hints=frozenset(z for z in zones.split(",") if z),
                        node_hints=frozenset(n for n in nodes.split(",") if n))


A, B, C, D = "10.1.2.3:80", "10.1.2.4:80", "10.1.2.5:80", "10.1.2.6:80"
E0, E1, E2, E3 = "10.0.0.0:80", "10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"

# (name, zone, service, endpoints, cluster, local, all, only remote endpoints); None: the service does not
# use that kind of endpoints; all None: the union of cluster and local.
CASES = [
    ("should use topology since all endpoints have hints, node has a zone label and there are endpoints for the "
     "node's zone", "zone-a", info(),
     [ep(A, "zone-a"), ep(B, "zone-b"), ep(C, "zone-c"), ep(D, "zone-a")], {A, D}, None, None, False),
    ("externalTrafficPolicy: Local, topology ignored for Local endpoints", "zone-a", info(etp=True, node_port=8080),
     [ep(A, "zone-a", local=True), ep(B, "zone-b", local=True), ep(C, "zone-c"), ep(D, "zone-a")],
     {A, D}, {A, B}, {A, B, D}, False),
    ("internalTrafficPolicy: Local, topology ignored for Local endpoints", "zone-a", info(itp=True, node_port=8080),
     [ep(A, "zone-a", local=True), ep(B, "zone-b", local=True), ep(C, "zone-c"), ep(D, "zone-a")],
     {A, D}, {A, B}, {A, B, D}, False),
    ("empty node labels", "", info(), [ep(A, "zone-a")], {A}, None, None, False),
    ("node in different zone, no endpoint filtering", "zone-b", info(), [ep(A, "zone-a")], {A}, None, None, False),
    ("unready endpoint", "zone-a", info(),
     [ep(A, "zone-a"), ep(B, "zone-b"), ep(C, "zone-c"), ep(D, "zone-a", ready=False)], {A}, None, None, False),
    ("only unready endpoints in same zone (should not filter)", "zone-a", info(),
     [ep(A, "zone-a", ready=False), ep(B, "zone-b"), ep(C, "zone-c"), ep(D, "zone-a", ready=False)],
     {B, C}, None, None, False),
    ("missing hints, no filtering applied", "zone-a", info(),
     [ep(A, "zone-a"), ep(B, "zone-b"), ep(C), ep(D, "zone-a")], {A, B, C, D}, None, None, False),
    ("multiple hints per endpoint, filtering includes any endpoint with zone included", "zone-c", info(),
     [ep(A, "zone-a,zone-b,zone-c"), ep(B, "zone-b,zone-c"), ep(C, "zone-b,zone-d"), ep(D, "zone-c")],
     {A, B, D}, None, None, False),
    ("conflicting topology and localness require merging allEndpoints", "zone-a", info(etp=True, node_port=8080),
     [ep(E0, "zone-a", local=True), ep(E1, "zone-b", local=True), ep(E2, "zone-a"), ep(E3, "zone-b")],
     {E0, E2}, {E0, E1}, {E0, E1, E2}, False),
    ("internalTrafficPolicy: Local, with empty endpoints", "", info(itp=True), [], None, set(), None, False),
    ("internalTrafficPolicy: Local, but all endpoints are remote", "", info(itp=True), [ep(E0), ep(E1)],
     None, set(), None, True),
    ("internalTrafficPolicy: Local, all endpoints are local", "", info(itp=True),
     [ep(E0, local=True), ep(E1, local=True)], None, {E0, E1}, None, False),
    ("internalTrafficPolicy: Local, some endpoints are local", "", info(itp=True), [ep(E0, local=True), ep(E1)],
     None, {E0}, None, False),
    ("Cluster traffic policy, endpoints not Ready", "", info(), [ep(E0, ready=False), ep(E1, ready=False)],
     set(), None, None, False),
    ("Cluster traffic policy, some endpoints are Ready", "", info(), [ep(E0, ready=False), ep(E1)],
     {E1}, None, None, False),
    ("Cluster traffic policy, all endpoints are terminating", "", info(),
     [ep(E0, ready=False, serving=True, terminating=True, local=True),
      ep(E1, ready=False, serving=True, terminating=True)], {E0, E1}, None, None, False),
    ("iTP: Local, eTP: Cluster, some endpoints local", "", info(itp=True, node_port=8080),
     [ep(E0, local=True), ep(E1)], {E0, E1}, {E0}, {E0, E1}, False),
    ("iTP: Cluster, eTP: Local, some endpoints local", "", info(etp=True, node_port=8080),
     [ep(E0, local=True), ep(E1)], {E0, E1}, {E0}, {E0, E1}, False),
    ("iTP: Local, eTP: Local, some endpoints local", "", info(itp=True, etp=True, node_port=8080),
     [ep(E0, local=True), ep(E1)], {E0, E1}, {E0}, {E0, E1}, False),
    ("iTP: Local, eTP: Local, all endpoints remote", "", info(itp=True, etp=True, node_port=8080),
     [ep(E0), ep(E1)], {E0, E1}, set(), {E0, E1}, False),
    ("iTP: Local, eTP: Local, all endpoints remote and terminating", "", info(itp=True, etp=True, node_port=8080),
     [ep(E0, ready=False, serving=True, terminating=True), ep(E1, ready=False, serving=True, terminating=True)],
     {E0, E1}, set(), {E0, E1}, True),
    ("iTP: Cluster, eTP: Local, with terminating endpoints", "", info(etp=True, node_port=8080),
     [ep(E0), ep(E1, ready=False, serving=False, local=True),
      ep(E2, ready=False, serving=True, terminating=True, local=True),
      ep(E3, ready=False, serving=True, terminating=True)], {E0}, {E2}, {E0, E2}, False),
    ("externalTrafficPolicy ignored if not externally accessible", "", info(etp=True),
     [ep(E0), ep(E1, local=True)], {E0, E1}, None, {E0, E1}, False),
    ("no cluster endpoints for iTP:Local internal-only service", "", info(itp=True),
     [ep(E0), ep(E1, local=True)], None, {E1}, {E1}, False),
    # PreferSameNode (topologyModeFromHints): node hints win when every ready endpoint has one and one is ours.
    ("node hints for this node", "zone-a", info(),
     [ep(A, "zone-a", nodes="this"), ep(B, "zone-a", nodes="other"), ep(C, "zone-b", nodes="far")],
     {A}, None, None, False),
    ("no node hint for this node falls back to zone hints", "zone-a", info(),
     [ep(B, "zone-a", nodes="other"), ep(C, "zone-b", nodes="far")], {B}, None, None, False),
    ("an endpoint without node hint: zone hints decide", "zone-b", info(),
     [ep(A, "zone-a", nodes="this"), ep(C, "zone-b")], {C}, None, None, False),
    ("no close endpoint at all: every endpoint", "zone-c", info(),
     [ep(B, "zone-a", nodes="other"), ep(C, "zone-b", nodes="far")], {B, C}, None, None, False),
]


@pytest.mark.parametrize(("name", "zone", "svc", "endpoints", "cluster", "local", "every", "only_remote"), CASES,
                         ids=[c[0] for c in CASES])
def test_categorize_endpoints(name, zone, svc, endpoints, cluster, local, every, only_remote):
    got = categorize(svc, endpoints, "this", zone)
    assert {e.string for e in got.cluster} == (cluster or set())
    assert bool(got.cluster) or not cluster
    if cluster is None:
        assert not svc.uses_cluster_endpoints or not endpoints
    if local is None:
        assert not svc.uses_local_endpoints
    else:
        assert {e.string for e in got.local} == local
    expected_all = every if every is not None else (cluster if local is None else local) or set()
    assert {e.string for e in got.reachable} == expected_all
    assert got.has_endpoints == (bool(expected_all) or only_remote)


# --- through the data planes of a three-zone cluster ---------------------------------------------------

ZONED_NODES = [
    {"name": "control-plane", "ip": "172.18.0.2", "controlPlane": True, "zone": "zone-a"},
    {"name": "worker", "ip": "172.18.0.3", "zone": "zone-a"},
    {"name": "worker2", "ip": "172.18.0.4", "zone": "zone-b"},
    {"name": "worker3", "ip": "172.18.0.5", "zone": "zone-c"},
]
# Cilium honours hints only with its service topology on (off by default): these clusters turn it on, so
# every data plane keeps the same endpoints; test_cilium_ignores_hints_unless_told shows the default.
THREE_ZONES = config_from_dict({"nodes": ZONED_NODES, "ciliumServiceTopology": True})


NODES = ("worker", "worker2", "worker3")


def manifests(spec: str) -> str:
    pods = "".join(f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: web-{node}, labels: {{app: web}}}}
spec: {{nodeName: {node}, containers: [{{name: web, image: nginx:1.27}}]}}""" for node in NODES)
    return f"""
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec:
  clusterIP: 10.96.0.80
  selector: {{app: web}}
  ports: [{{port: 80}}]
  {spec}
---
apiVersion: v1
kind: Pod
metadata: {{name: client}}
spec: {{nodeName: worker, containers: [{{name: c, image: busybox:1.36}}]}}{pods}
"""


@pytest.fixture(scope="module")
def zoned():
    return cluster_from(manifests("trafficDistribution: PreferSameZone"), config=THREE_ZONES).state


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_prefer_same_zone_keeps_the_zones_endpoint_on_every_data_plane(zoned, backend):
    client = zoned.pods["default/client"].pod_ip
    worker_pod = zoned.pods["default/web-worker"].pod_ip
    result = trace_packet(zoned, Packet(client, "10.96.0.80", 80), backend)
    assert result.output == f"{worker_pod}:80"
    assert any(n.startswith("topology: PreferSameZone: 1 of 3 ready endpoint(s) are hinted for zone zone-a (node "
                            "worker)") for n in result.notes), result.notes
    # worker3 is the only node of zone-c: its proxy keeps its own endpoint.
    on_worker3 = trace_packet(zoned, Packet(client, "10.96.0.80", 80, node="worker3"), backend)
    assert on_worker3.output == f"{zoned.pods['default/web-worker3'].pod_ip}:80"


def test_render_says_what_the_node_kept(zoned):
    text = render(zoned, "iptables", "worker").text
    assert ("# topology: default/web/TCP: PreferSameZone: 1 of 3 ready endpoint(s) are hinted for zone zone-a (node "
            "worker); Cluster endpoints kept on worker: 10.244.1.3:80") in text


def test_a_zone_without_a_ready_endpoint_falls_back_to_every_endpoint():
    # worker's web pod becomes another app: zone-a (the client's) has no endpoint left.
    text = manifests("trafficDistribution: PreferSameZone").replace(
        "metadata: {name: web-worker, labels: {app: web}}", "metadata: {name: other, labels: {app: other}}")
    state = cluster_from(text, config=THREE_ZONES).state
    result = trace_packet(state, Packet(state.pods["default/client"].pod_ip, "10.96.0.80", 80), "nftables")
    assert len(result.targets) == 2
    assert any("no endpoint is hinted for zone zone-a" in n for n in result.notes), result.notes


def test_internal_traffic_policy_local_wins_over_the_distribution():
    text = manifests("trafficDistribution: PreferSameZone\n  internalTrafficPolicy: Local")
    state = cluster_from(text.replace("nodeName: worker, containers: [{name: c", "nodeName: worker2, containers: "
                                      "[{name: c"), config=THREE_ZONES).state
    result = trace_packet(state, Packet(state.pods["default/client"].pod_ip, "10.96.0.80", 80), "iptables")
    assert result.output == f"{state.pods['default/web-worker2'].pod_ip}:80"


def test_cilium_ignores_hints_unless_its_service_topology_is_on():
    """The seed's Cilium (Helm defaults but kubeProxyReplacement) runs without --enable-service-topology: its
    agent balances over every ready endpoint whatever the hints say, where kube-proxy keeps the zone's, and the
    doctor says why and how to turn it on."""
    config = config_from_dict({"nodes": ZONED_NODES, "dataplane": "ebpf"})
    cluster = cluster_from(manifests("trafficDistribution: PreferSameZone"), config=config)
    state = cluster.state
    result = trace_packet(state, Packet(state.pods["default/client"].pod_ip, "10.96.0.80", 80), "ebpf")
    assert len(result.targets) == 3
    assert any(n.startswith("topology: hints ignored (Cilium's service topology is off") for n in result.notes)
    kube_proxy = trace_packet(state, Packet(state.pods["default/client"].pod_ip, "10.96.0.80", 80), "iptables")
    assert kube_proxy.output == f"{state.pods['default/web-worker'].pod_ip}:80"
    [finding] = [f for f in cluster.doctor().findings if f.code == "TopologyHintsIgnored"]
    assert "Cilium ignores every hint" in finding.message
    assert "loadBalancer.serviceTopology=true" in finding.fix
