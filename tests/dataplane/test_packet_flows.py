"""One packet-flow table, every backend (kube-proxy's packetFlowTest, run through each tracer).

Given the upstream-like Services of conftest.py, each row sends one packet and states what
any data plane must do with it: the DNAT targets ("ip:port, ip:port", all possible
backends), a verdict (REJECT/DROP/ACCEPT), or "" (no Service matched; routed unchanged),
and whether it is masqueraded. Identical expectations across iptables, nftables and ebpf
are the equivalence test. The one documented exception is upstream's own: nftables
rejects traffic to a ClusterIP port the Service does not expose (cluster-ips-check), where
iptables lets it through (TestClusterIPGeneral in pkg/proxy/{iptables,nftables}).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from knetsim.dataplane import BACKENDS, Packet, trace_packet

OUTSIDE = "203.0.113.2"
BLOCKED = "203.0.113.130"
POD_W1 = "10.244.1.10"  # a client pod on worker
POD_W2 = "10.244.2.10"  # a client pod on worker2


@dataclass(frozen=True)
class Flow:
    name: str
    src: str
    dst: str
    dport: int
    output: str
    masq: bool = False
    proto: str = "TCP"
    node: str | None = None
    overrides: dict[str, str] = field(default_factory=dict)  # backend -> output, only where upstream differs


FLOWS = [
    Flow("pod to ClusterIP", POD_W1, "10.96.100.41", 80, "10.244.1.2:80"),
    Flow("hairpin: pod to its own Service", "10.244.1.2", "10.96.100.41", 80, "10.244.1.2:80", masq=True),
    Flow("ClusterIP with two endpoints", POD_W1, "10.96.100.44", 80, "10.244.1.4:80, 10.244.2.4:80"),
    Flow("NodePort on control-plane", OUTSIDE, "172.18.0.2", 30004, "10.244.1.4:80, 10.244.2.4:80", masq=True),
    Flow("NodePort on worker", OUTSIDE, "172.18.0.3", 30004, "10.244.1.4:80, 10.244.2.4:80", masq=True),
    Flow("NodePort on worker2", OUTSIDE, "172.18.0.4", 30004, "10.244.1.4:80, 10.244.2.4:80", masq=True),
    Flow("externalIP, policy Cluster", OUTSIDE, "192.168.99.33", 80, "10.244.1.4:80, 10.244.2.4:80", masq=True),
    Flow("LoadBalancer IP, source in range", OUTSIDE, "172.18.255.201", 80, "10.244.2.5:80", masq=True),
    Flow("LoadBalancer IP, source outside loadBalancerSourceRanges", BLOCKED, "172.18.255.201", 80, "DROP"),
    Flow("NodePort bypasses loadBalancerSourceRanges", BLOCKED, "172.18.0.3", 30005, "10.244.2.5:80", masq=True),
    Flow("eTP Local LoadBalancer on a node without local endpoints", OUTSIDE, "172.18.255.200", 80, "DROP",
         node="worker"),
    Flow("eTP Local LoadBalancer on the endpoint's node", OUTSIDE, "172.18.255.200", 80, "10.244.2.2:80",
         node="worker2"),
    Flow("eTP Local NodePort on a node without local endpoints", OUTSIDE, "172.18.0.3", 30001, "DROP"),
    Flow("eTP Local NodePort on the endpoint's node", OUTSIDE, "172.18.0.4", 30001, "10.244.2.2:80"),
    Flow("eTP Local externalIP without local endpoints", OUTSIDE, "192.168.99.22", 80, "DROP", node="worker"),
    Flow("pod to eTP Local LoadBalancer is short-circuited", POD_W1, "172.18.255.200", 80, "10.244.2.2:80"),
    Flow("iTP Local from a node without local endpoints", POD_W1, "10.96.100.47", 80, "DROP"),
    Flow("iTP Local from the endpoint's node", POD_W2, "10.96.100.47", 80, "10.244.2.7:80", node="worker2"),
    # Found on the way (upstream's "iTP: Local, eTP: Local, all endpoints remote" CategorizeEndpoints case): a pod
    # reaching the NodePort short-circuits to every Cluster endpoint in kube-proxy. Cilium keeps one scope for
    # both policies Local, with only this node's backends.
    Flow("eTP+iTP Local NodePort from a pod, no local endpoint", POD_W1, "172.18.0.3", 30008, "10.244.2.8:80",
         overrides={"ebpf": "DROP"}),
    Flow("eTP+iTP Local ClusterIP from a node without local endpoints", POD_W1, "10.96.100.48", 80, "DROP"),
    Flow("eTP+iTP Local NodePort from outside, no local endpoint", OUTSIDE, "172.18.0.3", 30008, "DROP"),
    Flow("eTP+iTP Local NodePort from outside on the endpoint's node", OUTSIDE, "172.18.0.4", 30008,
         "10.244.2.8:80"),
    Flow("sessionAffinity ClientIP (first packet)", POD_W1, "10.96.100.45", 80, "10.244.2.5:80"),
    Flow("no endpoints: REJECT", POD_W1, "10.96.100.46", 80, "REJECT"),
    Flow("port the Service does not expose", POD_W1, "10.96.100.41", 443, "", overrides={"nftables": "REJECT"}),
    Flow("UDP to a TCP-only port", POD_W1, "10.96.100.41", 80, "", proto="UDP", overrides={"nftables": "REJECT"}),
    Flow("not a Service IP: passes through", POD_W1, "10.244.2.4", 80, ""),
]


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("flow", FLOWS, ids=lambda f: f.name)
def test_packet_flow(flow_state, backend, flow):
    result = trace_packet(flow_state, Packet(flow.src, flow.dst, flow.dport, flow.proto, flow.node), backend)
    expected = flow.overrides.get(backend, flow.output)
    matched = "\n".join(f"  {s.where}: {s.text}" for s in result.steps)
    assert (result.output, result.masquerade and bool(result.targets)) == (expected, flow.masq), (
        f"{backend} on {result.node}: got {result.output!r} masq={result.masquerade}, "
        f"want {expected!r} masq={flow.masq}\nrules that matched:\n{matched}")


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_every_backend_satisfies_the_protocol(backend):
    from knetsim.dataplane.model import Backend

    assert isinstance(BACKENDS[backend], Backend)
    assert BACKENDS[backend].name == backend


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_probabilities_split_evenly(flow_state, backend):
    result = trace_packet(flow_state, Packet(POD_W1, "10.96.100.44", 80), backend)
    assert [round(t.probability, 6) for t in result.targets] == [0.5, 0.5]


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_session_affinity_is_explained(flow_state, backend):
    result = trace_packet(flow_state, Packet(POD_W1, "10.96.100.45", 80), backend)
    text = " ".join(result.notes) + " ".join(s.text for s in result.steps)
    assert "affinity" in text.lower() or "recent" in text


def test_iptables_cost_grows_with_position_nftables_and_ebpf_do_not():
    from knetsim.dataplane.synthetic import synthetic_state

    costs = {}
    for size in (10, 200):
        state = synthetic_state(size, 1)
        last_ip = state.services[sorted(state.services)[-1]].cluster_ip
        for name in BACKENDS:
            r = trace_packet(state, Packet("10.244.1.200", last_ip, 80), name, node="worker")
            assert r.verdict == "DNAT"
            costs[(name, size)] = r.cost
    assert costs[("iptables", 200)] > costs[("iptables", 10)] + 150
    assert costs[("nftables", 200)] == costs[("nftables", 10)]
    assert costs[("ebpf", 200)] == costs[("ebpf", 10)]


POD6_W1 = "fd00:10:244:1::10"  # a client pod on worker
OUTSIDE6 = "2001:db8::2"

DUAL_FLOWS = [
    Flow("IPv6 pod to the IPv6 ClusterIP of a dual-stack Service", POD6_W1, "fd00:10:96::61", 80,
         "[fd00:10:244:1::61]:80"),
    Flow("IPv4 pod to the IPv4 ClusterIP of the same Service", "10.244.1.10", "10.96.100.61", 80, "10.244.1.61:80"),
    Flow("IPv6 hairpin", "fd00:10:244:1::61", "fd00:10:96::61", 80, "[fd00:10:244:1::61]:80", masq=True),
    Flow("IPv6 NodePort on worker", OUTSIDE6, "fc00:f853:ccd:e793::3", 30062, "[fd00:10:244:2::62]:80", masq=True),
    Flow("IPv6 NodePort on control-plane", OUTSIDE6, "fc00:f853:ccd:e793::2", 30062, "[fd00:10:244:2::62]:80",
         masq=True),
    Flow("IPv6 Service without endpoints: REJECT", POD6_W1, "fd00:10:96::63", 80, "REJECT"),
    Flow("an IPv6 port the Service does not expose", POD6_W1, "fd00:10:96::61", 443, "",
         overrides={"nftables": "REJECT"}),
    Flow("IPv6 address nobody allocated", POD6_W1, "fd00:10:96::99", 80, "", overrides={"nftables": "DROP"}),
    Flow("an IPv4 NodePort of an IPv6-only Service does not exist", "203.0.113.2", "172.18.0.3", 30062, ""),
]


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("flow", DUAL_FLOWS, ids=lambda f: f.name)
def test_dual_stack_packet_flow(dual_state, backend, flow):
    result = trace_packet(dual_state, Packet(flow.src, flow.dst, flow.dport, flow.proto, flow.node), backend)
    expected = flow.overrides.get(backend, flow.output)
    matched = "\n".join(f"  {s.where}: {s.text}" for s in result.steps)
    assert (result.output, result.masquerade and bool(result.targets)) == (expected, flow.masq), (
        f"{backend} on {result.node}: got {result.output!r} masq={result.masquerade}, "
        f"want {expected!r} masq={flow.masq}\nrules that matched:\n{matched}")


def test_a_packet_is_of_one_family():
    from knetsim.dataplane import DataplaneError

    with pytest.raises(DataplaneError, match="different IP families"):
        Packet("10.244.1.2", "fd00:10:96::61", 80)
