"""A client on the node asking for ``localhost:<NodePort>`` under kube-proxy's nftables mode: never served with the
default ``--nodeport-addresses primary``, and the trace says what each Kubernetes version would need
(KubeProxyNFTablesLocalhostNodePorts, KEP-6032: absent before 1.37, alpha and off in 1.37, beta and on in 1.38;
model/versions.py). iptables mode serves it on every version (route_localnet)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from knetsim.cli.main import cli

SHOP = str(Path(__file__).resolve().parents[2] / "examples" / "shop")
LOCALHOST = ["--src", "127.0.0.1", "--dst", "127.0.0.1", "--dport", "30080", "--node", "worker", "-f", SHOP]


def packet(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["packet", *LOCALHOST, *args])
    return result.exit_code, result.output


@pytest.mark.parametrize(("version", "why"), [
    ("1.33", "Kubernetes 1.33 has no way to serve them on localhost"),
    ("1.36", "Kubernetes 1.36 has no way to serve them on localhost"),
    ("1.37", "Kubernetes 1.37 serves them there only with the alpha feature gate KubeProxyNFTablesLocalhostNodePorts "
             "enabled and nodePortAddresses naming loopback (e.g. [172.18.0.0/16, 127.0.0.0/8])"),
    ("1.38", "on Kubernetes 1.38 (KubeProxyNFTablesLocalhostNodePorts on by default) nodePortAddresses naming "
             "loopback (e.g. [172.18.0.0/16, 127.0.0.0/8]) would have kube-proxy's userspace proxy accept it (TCP "
             "only)"),
])
def test_nftables_says_why_localhost_nodeports_are_not_served(version: str, why: str) -> None:
    code, out = packet("--dataplane", "nftables", "--kubernetes-version", version)
    assert code == 1 and "Verdict:     NONE" in out
    assert ("Note: 127.0.0.1:30080 is NodePort shop/web-np on localhost: kube-proxy's nftables mode accepts "
            "NodePorts only on the addresses nodePortAddresses takes (--nodeport-addresses primary (nftables mode's "
            "default)), never on localhost") in out
    assert why in out


def test_a_localhost_port_that_is_no_nodeport_keeps_the_plain_note() -> None:
    result = CliRunner().invoke(cli, ["packet", "--src", "127.0.0.1", "--dst", "127.0.0.1", "--dport", "30999",
                                      "--node", "worker", "-f", SHOP, "--dataplane", "nftables"])
    assert "no kube-proxy map entry matched: not a Service address/port on this node" in result.output
    assert "localhost:" not in result.output and "NodePort" not in result.output


@pytest.mark.parametrize("version", ["1.33", "1.38"])
def test_iptables_serves_localhost_nodeports_on_every_version(version: str) -> None:
    code, out = packet("--dataplane", "iptables", "--kubernetes-version", version)
    assert code == 0 and "Verdict:     DNAT" in out and "Service:     shop/web-np" in out
