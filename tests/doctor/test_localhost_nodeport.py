"""A node-local client (a hostNetwork pod) configured with ``localhost:<NodePort>``: the doctor traces it through
kube-proxy's rules, which serve it or not as the cluster config's ``nodePortAddresses`` and the mode say
(dataplane/nodeports.py), and says how to reach the Service when they do not. ``localhost`` is never reported as
a name that does not resolve: /etc/hosts answers it before DNS."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import knetsim

ROOT = Path(__file__).resolve().parents[2]
AGENT = """apiVersion: v1
kind: Pod
metadata: {name: node-agent, namespace: shop}
spec:
  hostNetwork: true
  nodeName: worker
  containers:
  - name: agent
    image: busybox:1.36
    command: ["sh", "-c", "while true; do wget -qO- http://localhost:30080/; sleep 10; done"]
"""


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    app = tmp_path / "shop"
    shutil.copytree(ROOT / "examples" / "shop", app)
    (app / "90-agent.yaml").write_text(AGENT)
    return app


def agent_findings(shop: Path, config: str, *flags: str) -> list[dict[str, Any]]:
    cluster = shop.parent / "cluster.yaml"
    cluster.write_text(config)
    result = knetsim("doctor", "-f", str(shop), "-n", "shop", "--cluster-config", str(cluster), "-o", "json", *flags)
    assert result.exit_code in (0, 1), result.output
    return [f for f in json.loads(result.stdout)["findings"] if f["subject"] == "Pod shop/node-agent"]


def test_iptables_serves_the_nodes_localhost_nodeport_by_default(shop: Path) -> None:
    assert agent_findings(shop, "dataplane: iptables\n") == []  # no NameDoesNotResolve for localhost either


def test_nftables_primary_refuses_it_and_the_fix_names_the_nodes_address(shop: Path) -> None:
    [finding] = agent_findings(shop, "dataplane: nftables\n", "--kubernetes-version", "1.37")
    assert finding["code"] == "ClientCannotConnect" and finding["layer"] == "dataplane"
    assert "the connection ends refused at the dataplane layer" in finding["message"]
    assert "127.0.0.1:30080 is NodePort shop/web-np on localhost" in finding["message"]
    assert finding["fix"].startswith("connect to 172.18.0.3:30080 (the node's address, where kube-proxy accepts "
                                     "NodePorts), or add 127.0.0.0/8 to kube-proxy's nodePortAddresses")
    assert finding["fix"].endswith("nftables mode serves localhost NodePorts from Kubernetes 1.38 only (this is 1.37)")


def test_nftables_naming_loopback_serves_it_from_1_38(shop: Path) -> None:
    config = "dataplane: nftables\nnodePortAddresses: [172.18.0.0/16, 127.0.0.0/8]\n"
    assert agent_findings(shop, config, "--kubernetes-version", "1.38") == []
    assert [f["code"] for f in agent_findings(shop, config, "--kubernetes-version", "1.37")] == ["ClientCannotConnect"]


def test_iptables_primary_refuses_it(shop: Path) -> None:
    [finding] = agent_findings(shop, "nodePortAddresses: [primary]\n")
    assert "kube-proxy's iptables mode accepts NodePorts on 127.0.0.1 only where nodePortAddresses takes it" \
        in finding["message"]
