"""kube-proxy's packet-flow table (tests/dataplane/test_packet_flows.py), replayed in the kernel.

Given the upstream-like Services of tests/dataplane/conftest.py loaded into three node
namespaces as iptables-nft or nftables rules, with a listener at every endpoint address and
client namespaces at the table's source addresses, then each row's packet does in the
kernel what ``trace_packet`` says the rules do with it: a connection to one of the DNAT
targets (masqueraded or not, as the backend sees the source), REJECT as connection refused,
DROP as a timeout, and "" (no rule) as a packet that leaves untranslated.
"""

from __future__ import annotations

import asyncio

import pytest
from tests.dataplane.conftest import upstream_like_state
from tests.dataplane.flows import FLOWS, POD_W1, POD_W2, Flow
from tests.kernel.conftest import needs_kernel

from knetsim.dataplane import Packet, trace_packet
from knetsim.kernel import Topology, probe
from knetsim.kernel.topology import ENTRY_MARK

pytestmark = needs_kernel
OUTSIDE_CLIENTS = sorted({f.src for f in FLOWS if f.src.startswith("203.0.113.")})


@pytest.fixture(scope="module", params=["iptables", "nftables"])
def topo(request):
    state = upstream_like_state()
    with Topology.build(state, request.param, clients=OUTSIDE_CLIENTS,
                        client_pods=[(POD_W1, "worker"), (POD_W2, "worker2")]) as t:
        yield t


def _send(topo: Topology, flow: Flow) -> probe.Probe:
    if flow.src in OUTSIDE_CLIENTS:
        nodes = [n.name for n in topo.plan.nodes]
        mark = ENTRY_MARK + nodes.index(flow.node) if flow.node else 0
        netns, src = topo.netns_of("ext"), flow.src
    else:
        netns, src, mark = topo.netns_of(f"endpoint/{flow.src}"), None, 0
    return topo.reactor.call(probe.connect(netns, flow.dst, flow.dport, flow.proto, src=src, mark=mark, timeout=0.7))


def _expected_kernel(topo: Topology, flow: Flow) -> tuple[set[str], str]:
    """(outcomes the kernel may show, the source a backend sees) for trace_packet's answer."""
    result = trace_packet(topo.state, Packet(flow.src, flow.dst, flow.dport, flow.proto, flow.node), topo.dataplane)
    if result.verdict == "DNAT":
        seen = next(n.ip for n in topo.plan.nodes if n.name == result.node) if result.masquerade else flow.src
        return {f"connected endpoint/{t.address.rsplit(':', 1)[0]}" for t in result.targets}, seen
    if result.verdict == "REJECT":
        return {"refused"}, ""
    if result.verdict == "DROP":
        return {"timeout"}, ""
    # No rule: the packet is routed as addressed; an endpoint there answers, anything else is lost.
    at = topo.plan.pod(f"endpoint/{flow.dst}")
    return ({f"connected endpoint/{flow.dst}"} if at is not None and (flow.dport, flow.proto) in at.listens
            else {"timeout", "no-route"}), flow.src


@pytest.mark.parametrize("flow", FLOWS, ids=lambda f: f.name)
def test_packet_flow_in_the_kernel(topo, flow):
    got = _send(topo, flow)
    allowed, seen = _expected_kernel(topo, flow)
    shown = f"connected {got.backend}" if got.outcome == "connected" else got.outcome
    assert shown in allowed, f"{topo.dataplane}: kernel {got}, trace_packet allows {sorted(allowed)}"
    if got.outcome == "connected":
        assert got.seen == seen, f"{topo.dataplane}: the backend saw {got.seen}, trace_packet says {seen}"


def test_every_target_is_reachable(topo):
    """Two endpoints, 50/50 (statistic/numgen random): both answer within a few dozen connections."""
    async def many():
        return await asyncio.gather(*(probe.tcp(topo.netns_of(f"endpoint/{POD_W1}"), "10.96.100.44", 80)
                                      for _ in range(24)))
    backends = {p.backend for p in topo.reactor.call(many())}
    assert backends == {"endpoint/10.244.1.4", "endpoint/10.244.2.4"}
