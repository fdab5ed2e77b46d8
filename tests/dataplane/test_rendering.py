"""The rendered artefacts themselves: golden text, rule counts, determinism, real tools.

Goldens have an independent source. tests/dataplane/golden/{iptables,nftables}.txt are
what the kernel holds after loading the render of conftest.py's upstream-like Services on
node ``worker`` into a throwaway network namespace, printed by the kernel tools themselves
(``iptables-save``, ``nft list table``): a render the kernel rejects, or reads differently,
fails. The eBPF maps have no kernel form here; golden/ebpf.txt pins the render and
test_ebpf_layout.py checks its layout against Cilium's own printer. After an intended
change, regenerate them (as root, for the kernel's versions) with

    KNETSIM_UPDATE_GOLDENS=1 .venv/bin/pytest tests/dataplane/test_rendering.py

and review the diff like code.
"""

from __future__ import annotations

import difflib
import os
import random
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from knetsim.dataplane import BACKENDS, render
from knetsim.dataplane.iptables import compute_probability, endpoint_chain_name, port_proto_hash
from knetsim.dataplane.nftables import hash_and_truncate
from knetsim.dataplane.synthetic import state_of, synthetic_state
from knetsim.kernel import KERNEL_DATAPLANES, missing_requirements
from knetsim.kernel.topology import kernel_dump

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("KNETSIM_UPDATE_GOLDENS") == "1"


KERNEL_MISSING = missing_requirements()


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_golden(flow_state, backend):
    text = render(flow_state, backend, "worker").text
    if backend in KERNEL_DATAPLANES:
        if KERNEL_MISSING:
            pytest.skip("the goldens are the kernel's own dump of the render: " + "; ".join(KERNEL_MISSING))
        text = kernel_dump(backend, text)
    path = GOLDEN / f"{backend}.txt"
    if UPDATE:
        path.write_text(text)
    expected = path.read_text()
    diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), "golden", "rendered"))
    assert text == expected, f"{backend} render differs from {path} (KNETSIM_UPDATE_GOLDENS=1 to accept):\n{diff}"


@pytest.mark.skipif(bool(KERNEL_MISSING), reason="needs the kernel: " + "; ".join(KERNEL_MISSING))
@pytest.mark.parametrize("backend", KERNEL_DATAPLANES)
def test_golden_is_the_kernels_own_form(backend):
    """Loading the golden and dumping it again changes nothing: the file is in the kernel's words."""
    golden = (GOLDEN / f"{backend}.txt").read_text()
    assert kernel_dump(backend, golden) == golden


# Upstream literals (pkg/proxy/iptables/proxier_test.go, nftables/proxier_test.go).
@pytest.mark.parametrize(("name", "proto", "expected"), [
    ("ns1/svc1:p80", "tcp", "XPGD46QRK7WJZT7O"),
    ("ns2/svc2:p80", "tcp", "GNZBNJ2PO5MGZ6GT"),
    ("ns5/svc5:p80", "tcp", "NUKIZ6OKUXPJNT4C"),
    ("kube-system/kube-dns:dns", "udp", "TCOU7JCQXEZGVUNU"),
    ("default/kubernetes:https", "tcp", "NPX46M4PTMTKRN6Y"),
])
def test_iptables_chain_hash(name, proto, expected):
    assert port_proto_hash(name, proto) == expected


def test_iptables_endpoint_hash_and_probability():
    assert endpoint_chain_name("ns1/svc1:p80", "tcp", "10.180.0.1:80") == "KUBE-SEP-SXIVWICOYRO3J4NJ"
    assert [compute_probability(n) for n in (1, 2, 100001)] == ["1.0000000000", "0.5000000000", "0.0000099999"]


@pytest.mark.parametrize(("base", "prefix"), [
    ("ns1/svc1/tcp/p80", "ULMVA6XW"), ("ns4/svc4/tcp/p80", "LAUZTJTB"),
    ("ns1/svc1/tcp/p80__10.180.0.1/80", "5OJB2KTY"), ("ns5/svc5/tcp/p80__10.180.0.3/80", "GTK6MW7G"),
])
def test_nftables_chain_hash(base, prefix):
    assert hash_and_truncate(base) == f"{prefix}-{base}"


# TestNumberIptablesRules: ClusterIP nat rules = 5 + S·(2 + 3E). Our filter table has one
# more rule than upstream's fixture: kubelet's KUBE-FIREWALL guard, which kube-proxy writes
# when localhost NodePorts are on (the default, and what a kind node runs).
@pytest.mark.parametrize(("services", "endpoints", "filter_rules", "nat_rules"), [
    (0, 0, 3, 5), (1, 0, 4, 5), (1, 1, 3, 10), (1, 2, 3, 13), (1, 10, 3, 37),
    (10, 0, 13, 5), (10, 1, 3, 55), (10, 2, 3, 85), (10, 10, 3, 325),
])
def test_iptables_rule_counts_clusterip(services, endpoints, filter_rules, nat_rules):
    counts = render(synthetic_state(services, endpoints), "iptables").counts
    assert (counts["filterRules"] - 1, counts["natRules"]) == (filter_rules, nat_rules)
    assert counts["natRules"] == 5 + services * (2 + 3 * endpoints) if endpoints else 5


@pytest.mark.parametrize(("services", "endpoints"), [(1, 0), (1, 1), (10, 0), (10, 10)])
def test_iptables_rule_counts_loadbalancer(services, endpoints):
    # Per LoadBalancer port (policy Cluster, one LB IP): KUBE-SERVICES cluster IP + LB IP,
    # KUBE-NODEPORTS, SVC masquerade, 2 EXT rules, 3 per endpoint; without endpoints 3 REJECTs.
    counts = render(synthetic_state(services, endpoints, "LoadBalancer"), "iptables").counts
    if endpoints:
        assert (counts["filterRules"], counts["natRules"]) == (4, 5 + services * (6 + 3 * endpoints))
    else:
        assert (counts["filterRules"], counts["natRules"]) == (4 + 3 * services, 5)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_same_input_in_any_order_renders_identically(flow_state, backend):
    shuffled_services = list(flow_state.services.values())
    shuffled_slices = list(flow_state.endpoint_slices.values())
    random.Random(7).shuffle(shuffled_services)
    random.Random(7).shuffle(shuffled_slices)
    again = state_of(shuffled_services, shuffled_slices)
    assert render(again, backend, "worker").text == render(flow_state, backend, "worker").text


def test_ebpf_has_no_kube_chains(shop_state):
    text = render(shop_state, "ebpf").text
    assert "KUBE-" not in text
    assert "SERVICE ADDRESS" in text and "BACKEND ADDRESS (REVNAT_ID) (SLOT)" in text


def test_rules_depend_on_the_node(flow_state):
    worker = render(flow_state, "iptables", "worker").text
    worker2 = render(flow_state, "iptables", "worker2").text
    assert '"ns2/svc2:p80 has no local endpoints"' in worker
    assert '"ns2/svc2:p80 has no local endpoints"' not in worker2


@pytest.fixture(scope="module")
def shop_state():
    from knetsim import Cluster

    return Cluster.from_paths([str(Path(__file__).resolve().parents[2] / "examples" / "shop")]).state


# --- real tools in a throw-away network namespace -------------------------------------

def _needs(*tools: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to create a network namespace (ip netns add)")
    missing = [t for t in ("ip", *tools) if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (Debian: apt-get install -y iptables nftables iproute2)")


@pytest.fixture
def netns():
    _needs()
    name = f"knetsim-test-{uuid.uuid4().hex[:8]}"
    add = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if add.returncode != 0:
        pytest.skip(f"cannot create a network namespace: {add.stderr.strip()}")
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], capture_output=True)


@pytest.mark.parametrize("which", ["flow", "shop"])
def test_iptables_restore_accepts_the_rendered_rules(netns, flow_state, shop_state, which):
    _needs("iptables-restore", "iptables-save")
    text = render(flow_state if which == "flow" else shop_state, "iptables").text
    run = subprocess.run(["ip", "netns", "exec", netns, "iptables-restore"], input=text, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    saved = subprocess.run(["ip", "netns", "exec", netns, "iptables-save", "-t", "nat"], capture_output=True,
                           text=True).stdout
    for line in text.splitlines():
        if line.startswith(":KUBE-SVC-"):
            assert line.split()[0] in saved


@pytest.mark.parametrize("which", ["flow", "shop"])
def test_nft_accepts_the_rendered_ruleset(netns, flow_state, shop_state, which):
    _needs("nft")
    text = render(flow_state if which == "flow" else shop_state, "nftables").text
    check = subprocess.run(["ip", "netns", "exec", netns, "nft", "-c", "-f", "-"], input=text, capture_output=True,
                           text=True)
    assert check.returncode == 0, check.stderr
    load = subprocess.run(["ip", "netns", "exec", netns, "nft", "-f", "-"], input=text, capture_output=True, text=True)
    assert load.returncode == 0, load.stderr
    listed = subprocess.run(["ip", "netns", "exec", netns, "nft", "list", "map", "ip", "kube-proxy", "service-ips"],
                            capture_output=True, text=True).stdout
    assert "goto service-" in listed


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_dual_stack_synthetic_renders_each_family_alike(backend):
    # The benchmark's dual-stack cluster: every Service has a ClusterIP and an EndpointSlice of each family,
    # so the IPv6 part is the IPv4 part over other addresses, and a packet of either family reaches an
    # endpoint of its own.
    from knetsim.dataplane import Packet, trace_packet

    state = synthetic_state(20, 3, "NodePort", dual_stack=True)
    ruleset = render(state, backend, "worker")
    assert set(ruleset.views) == {"IPv4", "IPv6"}  # one text each, but Cilium's one listing holds both
    single = render(synthetic_state(20, 3, "NodePort"), backend, "worker")
    assert {k: v for k, v in ruleset.counts.items() if k != "filterRules"} == \
        {k: 2 * v for k, v in single.counts.items() if k != "filterRules"}
    four, six = state.services["ns0/svc7"].cluster_ips
    for dst, family in ((four, "IPv4"), (six, "IPv6")):
        src = "10.244.1.250" if family == "IPv4" else "fd00:10:244:1::fa"
        result = trace_packet(state, Packet(src, dst, 80), backend, "worker")
        assert result.family == family and result.verdict == "DNAT", result.to_dict()
        assert {t.address.startswith("[") for t in result.targets} == {family == "IPv6"}
