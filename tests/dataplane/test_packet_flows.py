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

import pytest

from knetsim.dataplane import BACKENDS, Packet, trace_packet

from .flows import DUAL_FLOWS, FLOWS, POD_W1


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
