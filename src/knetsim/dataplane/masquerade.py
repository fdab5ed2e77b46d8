"""Traffic leaving the cluster: which source address the world outside sees, and who rewrites it.

A pod's address is private to the cluster, so a packet bound for an address outside the pod network
and the nodes leaves its node masqueraded to the node's own address (SNAT); the reply comes back to
the node, which undoes it. Who does it depends on the data plane, not on kube-proxy (kube-proxy only
masquerades Service traffic):

* ``iptables`` and ``nftables`` (kind): kindnetd's masquerade agent, an nftables table
  (``images/kindnetd/cmd/kindnetd/masq.go``): local destinations, the pod CIDR and the nodes return,
  everything else is ``masquerade``d;
* ``ebpf``: Cilium's masquerading in its BPF datapath (``bpf.masquerade=true``; with the chart's
  default the agent installs an iptables ``MASQUERADE`` rule instead, with the same result): traffic
  to the pod CIDR (``ipv4-native-routing-cidr``) and the nodes keeps its pod source, the rest leaves
  with the node's.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..cluster.state import ClusterState

KINDNET_TABLE = "kindnet-masq"


def kindnet_table(pod_cidr: str, node_ips: list[str] | tuple[str, ...]) -> str:
    """kindnetd's masquerade table, as ``nft list table ip kindnet-masq`` prints it."""
    keep = ", ".join([pod_cidr, *node_ips])
    return (f"table ip {KINDNET_TABLE} {{\n\tchain postrouting {{\n"
            f"\t\ttype nat hook postrouting priority srcnat + 10; policy accept;\n"
            f"\t\tfib daddr type local return\n\t\tip daddr {{ {keep} }} return\n"
            f'\t\tmasquerade comment "kind-masq-agent: outbound traffic is subject to MASQUERADE"\n\t}}\n}}\n')


@dataclass(frozen=True, slots=True)
class EgressMasquerade:
    """How node ``node`` rewrites the source of its pods' traffic to the outside."""

    dataplane: str
    node: str
    node_ip: str
    agent: str  # who does it: kindnetd or Cilium
    how: str  # in words, for a trace
    exempt: tuple[str, ...]  # destinations (CIDRs) that keep the pod's source
    nft_table_name: str = ""
    nft_table: str = ""  # the rules as `nft list table` prints them, where they are nftables rules

    def applies(self, dst: str) -> bool:
        """Is a pod's packet to ``dst`` masqueraded when it leaves the node?"""
        try:
            address = ipaddress.ip_address(dst)
        except ValueError:
            return False
        for cidr in self.exempt:
            network = ipaddress.ip_network(cidr, strict=False)
            if network.version == address.version and address in network:
                return False
        return True


def egress_masquerade(state: ClusterState, node: str) -> EgressMasquerade:
    config = state.config
    node_ip = next((n.ip for n in config.nodes if n.name == node), config.api_server_ip)
    node_ips = tuple(n.ip for n in config.nodes)
    exempt = (config.pod_cidr, *(f"{ip}/{32 if ':' not in ip else 128}" for ip in node_ips))
    if config.dataplane == "ebpf":
        return EgressMasquerade("ebpf", node, node_ip, "Cilium",
                                "Cilium's BPF masquerading (bpf.masquerade) on the node's egress device", exempt)
    return EgressMasquerade(config.dataplane, node, node_ip, "kindnetd",
                            f"kindnetd's nftables rule (table ip {KINDNET_TABLE}, chain postrouting: "
                            "masquerade)", exempt, KINDNET_TABLE, kindnet_table(config.pod_cidr, node_ips))
