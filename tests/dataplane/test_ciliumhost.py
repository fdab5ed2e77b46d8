"""Cilium's own iptables rules on a node of a kube-proxy-free cluster (``knetsim.dataplane.ciliumhost``)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from knetsim import Cluster
from knetsim.cluster.config import config_from_dict
from knetsim.dataplane.ciliumhost import cilium_host_rules, dns_proxy_port, save_text

CHAINS = {"filter": ("CILIUM_FORWARD", "CILIUM_INPUT", "CILIUM_OUTPUT"),
          "nat": ("CILIUM_OUTPUT_nat", "CILIUM_POST_nat", "CILIUM_PRE_nat"),
          "mangle": ("CILIUM_POST_mangle", "CILIUM_PRE_mangle"),
          "raw": ("CILIUM_OUTPUT_raw", "CILIUM_PRE_raw")}
FEEDS = {"CILIUM_INPUT": "INPUT", "CILIUM_OUTPUT": "OUTPUT", "CILIUM_FORWARD": "FORWARD",
         "CILIUM_PRE_nat": "PREROUTING", "CILIUM_OUTPUT_nat": "OUTPUT", "CILIUM_POST_nat": "POSTROUTING",
         "CILIUM_PRE_mangle": "PREROUTING", "CILIUM_POST_mangle": "POSTROUTING",
         "CILIUM_PRE_raw": "PREROUTING", "CILIUM_OUTPUT_raw": "OUTPUT"}


def _state(ip_family: str = "ipv4") -> object:
    return Cluster.from_yaml("", config=config_from_dict({"dataplane": "ebpf", "ipFamily": ip_family})).state


def _tables(text: str) -> dict[str, list[str]]:
    tables: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("*"):
            current = tables.setdefault(line[1:], [])
        current.append(line)
    return tables


def test_one_nodes_rules_have_ciliums_chains_feeders_and_its_own_masquerade() -> None:
    state = _state()
    worker_cidr = state.nodes["worker"].pod_cidrs[0]
    text = save_text(state, "worker", "IPv4")
    tables = _tables(text)
    assert list(tables) == ["mangle", "raw", "filter", "nat"]  # iptables-nft-save's order
    for table, chains in CHAINS.items():
        lines = tables[table]
        assert [line for line in lines if line.startswith(":CILIUM_")] == [f":{c} - [0:0]" for c in chains]
        for chain in chains:
            assert (f'-A {FEEDS[chain]} -m comment --comment "cilium-feeder: {chain}" -j {chain}') in lines
    assert "KUBE-" not in text
    masquerade = (f"-A CILIUM_POST_nat -s {worker_cidr} ! -d {worker_cidr} ! -o cilium_+ "
                  '-m comment --comment "cilium masquerade non-cluster" -j MASQUERADE')
    assert masquerade in tables["nat"]
    # Each node masquerades its own pod CIDR, and SNATs to its own cilium_host address.
    other = save_text(state, "worker2", "IPv4")
    assert worker_cidr not in other and state.nodes["worker2"].pod_cidrs[0] in other
    assert "cilium: any->cluster on cilium_host forward accept" in text
    assert "-A CILIUM_PRE_raw -m mark --mark 0x200/0xf00" in text
    # The DNS proxy's TPROXY rules carry its port in the mark, in network byte order.
    port = dns_proxy_port("worker")
    mark = 0x200 | (((port & 0xFF) << 8 | port >> 8) << 16)
    tproxy = [line for line in tables["mangle"] if "-j TPROXY" in line]
    assert [line.split()[3] for line in tproxy] == ["tcp", "udp"]
    assert all(f"--mark {mark:#x} " in line and f"--on-port {port} --on-ip 127.0.0.1 " in line for line in tproxy)
    assert save_text(state, "worker", "IPv4") == text  # deterministic


def test_ipv6_has_only_the_chains_cilium_makes_for_ip6tables() -> None:
    assert save_text(_state(), "worker", "IPv6") == ""  # Helm's default: IPv6 off
    state = _state("dual")
    rules = cilium_host_rules(state, "worker", "IPv6")
    assert rules is not None and ":" in rules.pod_cidr
    text = rules.save_text()
    assert "CILIUM_PRE_nat" not in text and "CILIUM_OUTPUT_nat" not in text and "CILIUM_POST_mangle" not in text
    assert "-A CILIUM_POST_nat -s ::1/128 -o cilium_host" in text and "--on-ip ::1 " in text


def _real_save(text: str, family: str) -> str:
    prefix = "ip6tables" if family == "IPv6" else "iptables"
    script = f"{prefix}-nft-restore && {prefix}-nft-save"
    result = subprocess.run(["unshare", "-rn", "sh", "-c", script], input=text, capture_output=True, text=True,
                            timeout=30)
    if result.returncode != 0:
        pytest.skip(f"no iptables-nft in a user namespace here: {result.stderr.strip()}")
    return "".join(line + "\n" for line in result.stdout.splitlines() if not line.startswith("#"))


@pytest.mark.parametrize("family", ["IPv4", "IPv6"])
def test_the_real_iptables_nft_saves_the_rules_exactly_as_generated(family: str) -> None:
    """Restored into an empty network namespace, the real iptables-nft prints back the same text: the tables,
    the chain declarations and every rule are in iptables-save's normal form."""
    if shutil.which("unshare") is None or shutil.which("iptables-nft-restore") is None:
        pytest.skip("needs unshare and iptables-nft")
    text = save_text(_state("dual"), "worker", family)
    assert text and _real_save(text, family) == text
