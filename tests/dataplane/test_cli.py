"""``knetsim render`` and ``knetsim packet``: output and exit codes (0 delivered, 1 refused, 2 bad input)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.helpers import knetsim as run

from knetsim.cli.main import cli

SHOP = str(Path(__file__).resolve().parents[2] / "examples" / "shop")



@pytest.mark.parametrize(("backend", "marker"), [
    ("iptables", "-A KUBE-SERVICES -m comment --comment \"shop/web:http cluster IP\""),
    ("nftables", "table ip kube-proxy {"),
    ("ebpf", "SERVICE ADDRESS"),
])
def test_render_text(backend, marker):
    result = run("render", backend, "-f", SHOP)
    assert result.exit_code == 0, result.output
    assert marker in result.output


def test_render_json_and_node():
    result = run("render", "ebpf", "-f", SHOP, "--node", "worker2", "-o", "json")
    data = json.loads(result.output)
    assert (data["backend"], data["node"], data["nodeIP"]) == ("ebpf", "worker2", "172.18.0.4")
    assert {"services", "backends", "revNAT"} <= set(data["ebpf"])


def test_render_unknown_node_is_bad_input():
    result = run("render", "iptables", "-f", SHOP, "--node", "nosuch")
    assert result.exit_code == 2
    assert "node 'nosuch' not found" in result.output


def test_packet_dnat_exits_0():
    result = run("packet", "-f", SHOP, "--src", "10.244.1.2", "--dst", "10.96.93.253", "--dport", "80")
    assert result.exit_code == 0, result.output
    assert "Verdict:     DNAT" in result.output
    assert "Targets:     10.244.1.5:80 (50%), 10.244.2.4:80 (50%)" in result.output


def test_packet_drop_exits_1():
    # web-lb is externalTrafficPolicy Local; the control-plane node runs no web pod.
    result = run("packet", "-f", SHOP, "--src", "203.0.113.9", "--dst", "172.18.0.2", "--dport", "31502",
                 "--dataplane", "nftables")
    assert result.exit_code == 1
    assert "Verdict:     DROP" in result.output


def test_packet_json():
    result = run("packet", "-f", SHOP, "--src", "10.244.1.2", "--dst", "10.96.0.10", "--dport", "53",
                 "--proto", "udp", "--dataplane", "ebpf", "-o", "json")
    data = json.loads(result.output)
    assert data["service"] == "kube-system/kube-dns:dns"
    assert [t["address"] for t in data["targets"]] == ["10.244.0.2:53", "10.244.0.3:53"]


def test_packet_bad_ip_is_bad_input():
    result = run("packet", "-f", SHOP, "--src", "nope", "--dst", "10.96.0.10", "--dport", "53")
    assert result.exit_code == 2
    assert "'nope' is not an IP address" in result.output


def test_default_dataplane_comes_from_cluster_config(tmp_path):
    config = tmp_path / "cluster.yaml"
    config.write_text("dataplane: nftables\n")
    result = run("render", "-f", SHOP, "--cluster-config", str(config))
    assert "table ip kube-proxy {" in result.output


def test_ebpf_bootstrap_finding():
    from knetsim.cluster.config import ClusterConfig
    from knetsim.dataplane import ebpf_bootstrap_finding

    finding = ebpf_bootstrap_finding(ClusterConfig(dataplane="ebpf"))
    assert finding is not None and "10.96.0.1" in finding.message and "k8sServiceHost: 172.18.0.2" in finding.fix
    assert ebpf_bootstrap_finding(ClusterConfig(dataplane="ebpf", k8s_service_host="172.18.0.2",
                                                k8s_service_port=6443)) is None
    assert ebpf_bootstrap_finding(ClusterConfig()) is None


def test_render_and_packet_on_a_dual_stack_cluster(tmp_path):
    config = tmp_path / "dual.yaml"
    config.write_text("ipFamily: dual\n")
    app = tmp_path / "app.yaml"
    app.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  ipFamilyPolicy: PreferDualStack\n"
                   "  clusterIP: 10.96.0.50\n  clusterIPs: [10.96.0.50, 'fd00:10:96::50']\n  selector: {app: web}\n"
                   "  ports: [{port: 80}]\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: web, labels: {app: web}}\n"
                   "spec: {nodeName: worker, containers: [{name: c, image: nginx:1.27}]}\n")
    iptables = run("render", "iptables", "-f", str(app), "--cluster-config", str(config))
    assert "(iptables-save), node worker (172.18.0.3)" in iptables.output
    assert "(ip6tables-save), node worker (fc00:f853:ccd:e793::3)" in iptables.output
    assert '-d fd00:10:96::50 --dport 80 -j KUBE-SVC-' in iptables.output
    nft = run("render", "nftables", "-f", str(app), "--cluster-config", str(config))
    assert "table ip kube-proxy {" in nft.output and "table ip6 kube-proxy {" in nft.output
    assert "fd00:10:96::50 . tcp . 80 : goto service-" in nft.output
    ebpf = run("render", "ebpf", "-f", str(app), "--cluster-config", str(config))
    assert "[fd00:10:96::50]:80/TCP (1)" in ebpf.output
    packet = run("packet", "-f", str(app), "--cluster-config", str(config), "--src", "fd00:10:244:1::9",
                 "--dst", "fd00:10:96::50", "--dport", "80", "--dataplane", "nftables")
    assert packet.exit_code == 0, packet.output
    assert "Packet:      fd00:10:244:1::9 -> [fd00:10:96::50]:80/TCP" in packet.output
    assert "Targets:     [fd00:10:244:1::2]:80 (100%)" in packet.output
    mixed = run("packet", "-f", str(app), "--cluster-config", str(config), "--src", "10.244.1.9",
                "--dst", "fd00:10:96::50", "--dport", "80")
    assert mixed.exit_code == 2 and "different IP families" in mixed.output


@pytest.mark.parametrize("mode", ["iptables", "nftables"])
def test_render_kube_proxy_rules_of_an_ebpf_cluster_says_there_is_no_kube_proxy(tmp_path, mode):
    """Given a kube-proxy-free cluster (seed 000: `iptables-save | grep -c KUBE-` is 0 on its nodes), then
    asking for kube-proxy's rules prints none and says why, instead of rules no node programs."""
    config = tmp_path / "ebpf.yaml"
    config.write_text("dataplane: ebpf\nk8sServiceHost: 172.18.0.2\nk8sServicePort: 6443\n")
    result = CliRunner().invoke(cli, ["render", mode, "-f", SHOP, "--cluster-config", str(config)])
    assert result.exit_code == 1
    assert "KUBE-" not in result.stdout and "kube-proxy {" not in result.stdout
    assert result.stderr.startswith("error: this cluster runs no kube-proxy: its dataplane is ebpf")
    assert "`knetsim render ebpf`" in result.stderr
    assert run("render", "ebpf", "-f", SHOP, "--cluster-config", str(config)).exit_code == 0
