"""The node's own view on a kube-proxy cluster: `kubectl debug node/NAME` then `chroot /host`.

Given a live cluster whose data plane is kube-proxy in iptables or nftables mode (kind's default shape:
control-plane 172.18.0.2, worker .3, worker2 .4), then the debug pod's node root holds that node's
rules: `iptables-save` prints what `knetsim render iptables --node` prints (its comment line aside),
`nft list ruleset` the nftables mode's `table ip kube-proxy` and, on both, kindnetd's masquerade table.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from knetsim import Cluster as Model
from knetsim.cluster.config import load_config
from knetsim.dataplane import render
from knetsim.sources import Live

from .conftest import Cluster, running

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live

# kind's three nodes, in two zones: the live cluster's Nodes carry what the cluster config says.
ZONED_NODES = """nodes:
  - {name: control-plane, ip: 172.18.0.2, controlPlane: true, zone: zone-a}
  - {name: worker, ip: 172.18.0.3, zone: zone-a}
  - {name: worker2, ip: 172.18.0.4, zone: zone-b}
"""


@pytest.fixture(scope="module", params=["iptables", "nftables"])
def plane(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Cluster]]:
    with running(tmp_path_factory.mktemp(request.param), f"dataplane: {request.param}\n{ZONED_NODES}") as c:
        yield request.param, c


def on_node(cluster: Cluster, node: str, script: str) -> subprocess.CompletedProcess[str]:
    proc = cluster.kubectl("debug", f"node/{node}", "-i", "--image=busybox", "--", "sh", "-c", script, check=False)
    proc.stdout = "".join(line + "\n" for line in proc.stdout.splitlines()
                          if not line.startswith("Creating debugging pod"))
    return proc


def rendered(cluster: Cluster, mode: str, node: str) -> str:
    # The config the live cluster runs with: its state directory's copy.
    config = load_config(str(cluster.state / "cluster-config.yaml"))
    model = Model.from_sources([Live(cluster.kubeconfig)], config=config, strict=False)
    text = render(model.state, mode, node).text
    return "".join(line + "\n" for line in text.splitlines() if not line.startswith("# knetsim:"))


def test_the_nodes_rules_are_its_render(plane: tuple[str, Cluster]) -> None:
    mode, cluster = plane
    for node in ("worker", "worker2"):
        if mode == "iptables":
            proc = on_node(cluster, node, "chroot /host iptables-save")
            expected = rendered(cluster, mode, node)
            assert proc.stdout == expected
            counted = on_node(cluster, node, "chroot /host iptables-save | grep -c KUBE-").stdout
            assert counted == f"{sum('KUBE-' in line for line in expected.splitlines())}\n" != "0\n"
        else:
            proc = on_node(cluster, node, "chroot /host nft list table ip kube-proxy")
            assert proc.stdout == rendered(cluster, mode, node)
            # No xtables rules at all: kube-proxy's nftables mode writes none.
            assert on_node(cluster, node, "chroot /host iptables-save | grep -c KUBE-").stdout == "0\n"


def test_nft_lists_kindnets_masquerade_on_every_kube_proxy_cluster(plane: tuple[str, Cluster]) -> None:
    mode, cluster = plane
    tables = on_node(cluster, "worker", "chroot /host nft list tables").stdout
    expected = ["table ip kindnet-masq"] if mode == "iptables" else ["table ip kube-proxy", "table ip kindnet-masq"]
    assert tables.splitlines() == expected
    ruleset = on_node(cluster, "worker", "chroot /host nft list ruleset").stdout
    assert "ip daddr { 10.244.0.0/16, 172.18.0.2, 172.18.0.3, 172.18.0.4 } return" in ruleset
    missing = on_node(cluster, "worker", "chroot /host nft list table ip nosuch")
    assert "Error: No such file or directory\nlist table ip nosuch\n" in missing.stderr


def test_chroot_without_a_command_moves_the_session_to_the_nodes_root(plane: tuple[str, Cluster]) -> None:
    """As typed after `kubectl debug node/worker -it --image=busybox`: `chroot /host`, then the node's tools."""
    mode, cluster = plane
    typed = "iptables-save | wc -l\nchroot /host\ncat /etc/hostname\nnft list tables | wc -l\nexit\n"
    proc = cluster.kubectl("debug", "node/worker", "-i", "--image=busybox", input=typed, check=False)
    lines = [line for line in proc.stdout.splitlines() if not line.startswith("Creating debugging pod")]
    assert lines == ["0", "worker", "1" if mode == "iptables" else "2"]
    assert "sh: iptables-save: not found" in proc.stderr  # before the chroot: busybox's root


def test_the_nodes_are_the_cluster_configs(plane: tuple[str, Cluster]) -> None:
    _, cluster = plane
    table = cluster.kubectl("get", "nodes", "-L", "topology.kubernetes.io/zone", "-o",
                            "custom-columns=NAME:.metadata.name,IP:.status.addresses[0].address,"
                            "ZONE:.metadata.labels.topology\\.kubernetes\\.io/zone").stdout
    assert table.split() == ["NAME", "IP", "ZONE", "control-plane", "172.18.0.2", "zone-a", "worker", "172.18.0.3",
                             "zone-a", "worker2", "172.18.0.4", "zone-b"]
