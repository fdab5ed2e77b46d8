"""Kernel mode with both IP families: a dual-stack and an IPv6-only cluster built as namespaces.

Given a kind-like cluster with ``ipFamily: dual`` (or ``ipv6``), then the plan gives every
node and pod its address of each family, kindnetd's routes to the other nodes' IPv6 pod
CIDRs, an IPv6 gateway and external client, and IPv6 LoadBalancer announcements; the policy
table names each address's family (``ip``/``ip6``) so an IPv6 ipBlock is enforced on IPv6
packets. In the kernel (root only): every flow of the scenario below, in each family, does
what ``knetsim trace`` says (docs/kernel.md's agreement table), and the dual-stack rows of
the packet-flow table (tests/dataplane) do at the packet level what ``trace_packet`` says.

The scenario (examples/dual-stack): two web pods behind a PreferDualStack ClusterIP, an IPv6-only NodePort and a
RequireDualStack LoadBalancer, a Service without endpoints, a client and a "blocked" pod, and
a NetworkPolicy whose IPv4 ipBlock admits everything while its IPv6 ipBlock excepts the pod
network: web admits the blocked pod over IPv4 and refuses it over IPv6.
"""

from __future__ import annotations

import pytest
from tests.conftest import EXAMPLES, cluster_from
from tests.dataplane.conftest import dual_stack_state
from tests.dataplane.flows import DUAL_FLOWS, OUTSIDE6, POD6_W1
from tests.kernel.conftest import doc_figures, needs_kernel

from knetsim.cluster.config import config_from_dict
from knetsim.dataplane import Packet, trace_packet
from knetsim.dataplane.model import split_host_port
from knetsim.kernel import Topology, probe
from knetsim.kernel.netpol import ruleset
from knetsim.kernel.plan import plan
from knetsim.kernel.verify import format_report, verify

OWNER = "knetsim-1.1-"

# examples/dual-stack: every ipFamilyPolicy, and a NetworkPolicy whose ipBlocks differ by family.
SCENARIO = (EXAMPLES / "dual-stack" / "app" / "app.yaml").read_text()


def scenario(family: str):
    config = config_from_dict({"ipFamily": family})
    # An IPv6-only cluster refuses RequireDualStack; the LoadBalancer asks for what it can get there.
    text = SCENARIO if family == "dual" else SCENARIO.replace("RequireDualStack", "PreferDualStack")
    return cluster_from(text, config=config)


@pytest.fixture(scope="module")
def dual():
    return scenario("dual")


@pytest.fixture(scope="module")
def ipv6_only():
    return scenario("ipv6")


def _pod(cluster, prefix):
    return next(p for k, p in sorted(cluster.state.pods.items()) if k.startswith(prefix))


# --- the plan (no root needed) ----------------------------------------------------------------


def test_plan_wires_both_families(dual):
    the_plan = plan(dual.state, OWNER)
    assert the_plan.families == ("IPv4", "IPv6")
    assert (the_plan.gateway, the_plan.gateways) == ("172.18.0.1", ("172.18.0.1", "fc00:f853:ccd:e793::1"))
    assert the_plan.clients == ("203.0.113.10", "2001:db8:203::10")
    worker = the_plan.node("worker")
    assert worker.addresses == ("172.18.0.3", "fc00:f853:ccd:e793::3")
    assert worker.pod_cidrs == ("10.244.1.0/24", "fd00:10:244:1::/64")
    # kindnetd: each other node's pod CIDR of each family, via that node's address of the family.
    assert set(worker.routes) == {("10.244.0.0/24", "172.18.0.2"), ("fd00:10:244::/64", "fc00:f853:ccd:e793::2"),
                                  ("10.244.2.0/24", "172.18.0.4"), ("fd00:10:244:2::/64", "fc00:f853:ccd:e793::4")}
    blocked = the_plan.pod("dual/blocked")
    assert blocked.addresses == (blocked.ip, blocked.address_of("IPv6"))
    assert blocked.address_of("IPv6").startswith("fd00:10:244:")
    lb = dual.state.services["dual/web-lb"].load_balancer_ips
    announced = dict(the_plan.announced)
    assert {ip for ip in lb} <= set(announced)
    assert all((":" in ip) == (":" in via) for ip, via in announced.items())


def test_plan_of_an_ipv6_only_cluster(ipv6_only):
    the_plan = plan(ipv6_only.state, OWNER)
    assert the_plan.families == ("IPv6",)
    assert the_plan.gateway == "fc00:f853:ccd:e793::1" and the_plan.clients == ("2001:db8:203::10",)
    assert the_plan.node("worker").routes[0] == ("fd00:10:244::/64", "fc00:f853:ccd:e793::2")
    assert all(":" in p.ip and p.addresses == (p.ip,) for p in the_plan.pods)


def test_policy_table_names_each_family(dual):
    the_plan = plan(dual.state, OWNER)
    web = _pod(dual, "dual/web-")
    text = ruleset(dual.state, the_plan, web.node_name)
    chain = text.split(f"chain ingress-{the_plan.pod(web.key).host_veth} {{", 1)[1].split("\n\t}", 1)[0]
    blocked6 = the_plan.pod("dual/blocked").address_of("IPv6")
    blocked4 = the_plan.pod("dual/blocked").ip
    accepts = [line for line in chain.splitlines() if line.strip().endswith("accept")]
    # The IPv4 ipBlock 0.0.0.0/0 admits the blocked pod's IPv4 address; the IPv6 one excepts the pod network.
    assert any(line.strip().startswith("ip saddr") and blocked4 in line for line in accepts)
    assert not any(blocked6 in line for line in accepts)
    assert any(line.strip().startswith("ip6 saddr") and blocked6 in line and line.strip().endswith("drop")
               for line in chain.splitlines())
    assert "meta nfproto ipv6" in chain  # the Internet of each family gets its own answer


def test_the_trace_masquerades_only_the_hairpin_backend(dual):
    # Found by the kernel run: a web pod reaching its own Service over IPv6 lands on the other web pod with its own
    # IPv6 address (only a hairpin is masqueraded), which the IPv6 ipBlock's except refuses.
    from knetsim.network.tracer import trace

    first, second = sorted(k for k in dual.state.pods if k.startswith("dual/web-"))
    six = next(ip for ip in dual.state.services["dual/web"].cluster_ips if ":" in ip)
    t = trace(dual.state, first, f"[{six}]:80")
    hop = next(h for h in t.hops if h.layer == "dataplane")
    assert "masqueraded when the backend is the client itself (hairpin" in hop.detail
    # Either backend may be the trace's pick; the other behaves differently (itself: hairpin, connects).
    assert any(f.code == "Intermittent" for f in t.findings)
    assert t.outcome == ("timeout" if t.backend.pod == second else "connected")
    direct = trace(dual.state, first, f"[{dual.state.pods[second].pod_ips[1]}]:80")
    assert direct.outcome == "timeout"
    four = trace(dual.state, first, f"{dual.state.pods[second].pod_ip}:80")
    assert four.outcome == "connected"


# --- in the kernel ---------------------------------------------------------------------------


@needs_kernel
@pytest.mark.parametrize("dataplane", ["iptables", "nftables"])
@pytest.mark.parametrize("family", ["dual", "ipv6"])
def test_every_flow_of_each_family_agrees_with_the_kernel(family, dataplane, no_leftovers):
    report = verify(scenario(family).state, dataplane)
    assert not report.disagree, format_report(report)
    key = "dual-stack scenario (tests/kernel)" if family == "dual" else "IPv6-only scenario (tests/kernel)"
    assert (report.flows, report.agree, len(report.disagree)) == doc_figures()[(key, dataplane)]
    families = {r.flow.family or ("IPv6" if ":" in r.flow.host else "") for r in report.results}
    assert "IPv6" in families


@needs_kernel
def test_the_ipv6_ipblock_refuses_what_the_ipv4_one_admits(dual, no_leftovers):
    web = _pod(dual, "dual/web-")
    web4, web6 = web.pod_ips
    with Topology.build(dual.state, "nftables") as topo:
        src = topo.netns_of("dual/blocked")
        four = topo.reactor.call(probe.tcp(src, web4, 80))
        six = topo.reactor.call(probe.tcp(src, web6, 80))
    assert (four.outcome, four.backend) == ("connected", web.key)
    assert six.outcome == "timeout"


# --- the dual-stack packet-flow rows, at the packet level --------------------------------------


@pytest.fixture(scope="module", params=["iptables", "nftables"])
def dual_topo(request):
    state = dual_stack_state()
    with Topology.build(state, request.param, clients=[OUTSIDE6, "203.0.113.2"],
                        client_pods=[(POD6_W1, "worker"), ("10.244.1.10", "worker")]) as t:
        yield t


def _send(topo: Topology, flow) -> probe.Probe:
    if flow.src in (OUTSIDE6, "203.0.113.2"):
        netns, src = topo.netns_of("ext"), flow.src
    else:
        netns, src = topo.netns_of(f"endpoint/{flow.src}"), None
    # 1.5 s: an IPv6 REJECT's ICMPv6 error comes back while connect() still holds the socket (everything runs
    # on one host) and is dropped (TcpExtLockDroppedIcmps); the SYN retransmitted after 1 s gets the refusal.
    return topo.reactor.call(probe.connect(netns, flow.dst, flow.dport, flow.proto, src=src, timeout=1.5))


@needs_kernel
@pytest.mark.parametrize("flow", DUAL_FLOWS, ids=lambda f: f.name)
def test_dual_stack_packet_flow_in_the_kernel(dual_topo, flow):
    topo = dual_topo
    got = _send(topo, flow)
    result = trace_packet(topo.state, Packet(flow.src, flow.dst, flow.dport, flow.proto, flow.node), topo.dataplane)
    if result.verdict == "DNAT":
        allowed = {f"connected endpoint/{split_host_port(t.address)[0]}" for t in result.targets}
        node = topo.plan.node(result.node)
        seen = node.address_of("IPv6" if ":" in flow.dst else "IPv4") if result.masquerade else flow.src
    elif result.verdict in ("REJECT", "DROP"):
        allowed, seen = {"refused" if result.verdict == "REJECT" else "timeout"}, ""
    elif any(flow.dst in n.addresses for n in topo.plan.nodes):
        allowed, seen = {"refused"}, ""  # no rule: the node itself answers, and nothing listens on that port
    else:
        at = topo.plan.pod(f"endpoint/{flow.dst}")
        allowed = ({f"connected endpoint/{flow.dst}"} if at is not None and (flow.dport, flow.proto) in at.listens
                   else {"timeout", "no-route"})
        seen = flow.src
    shown = f"connected {got.backend}" if got.outcome == "connected" else got.outcome
    assert shown in allowed, f"{topo.dataplane}: kernel {got}, trace_packet allows {sorted(allowed)}"
    if got.outcome == "connected":
        assert got.seen == seen, f"{topo.dataplane}: the backend saw {got.seen}, trace_packet says {seen}"


def test_docs_list_every_dual_stack_packet_flow_row():
    figures = doc_figures()
    for plane in ("iptables", "nftables"):
        assert figures[("kube-proxy dual-stack packet-flow rows (tests/dataplane)", plane)] == (
            len(DUAL_FLOWS), len(DUAL_FLOWS), 0)
