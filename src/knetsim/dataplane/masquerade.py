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


def kindnet_table(pod_cidr: str, node_ips: list[str] | tuple[str, ...], family: str = "IPv4") -> str:
    """kindnetd's masquerade table of one family, as ``nft list table ip|ip6 kindnet-masq`` prints it (kindnetd
    keeps a list of ranges not to masquerade per family)."""
    keep = ", ".join([pod_cidr, *node_ips])
    table = "ip6" if family == "IPv6" else "ip"
    return (f"table {table} {KINDNET_TABLE} {{\n\tchain postrouting {{\n"
            f"\t\ttype nat hook postrouting priority srcnat + 10; policy accept;\n"
            f"\t\tfib daddr type local return\n\t\t{table} daddr {{ {keep} }} return\n"
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


def egress_masquerade(state: ClusterState, node: str, family: str | None = None) -> EgressMasquerade:
    """How ``node`` masquerades its pods' traffic of ``family`` (default: the cluster's primary one) to the outside:
    a dual-stack node rewrites IPv6 sources to its IPv6 address, by the ``ip6`` twin of the table."""
    config = state.config
    family = family or config.ip_families[0]
    this = next((n for n in config.nodes if n.name == node), None)
    addresses = this.addresses if this is not None else (config.api_server_ip,)
    node_ip = next((ip for ip in addresses if (":" in ip) == (family == "IPv6")), addresses[0])
    node_ips = tuple(ip for n in config.nodes for ip in n.addresses if (":" in ip) == (family == "IPv6"))
    pod_cidr = config.pod_cidr_of(family) or config.pod_cidr
    exempt = (*config.pod_cidrs, *(f"{ip}/{32 if ':' not in ip else 128}" for n in config.nodes for ip in n.addresses))
    if config.dataplane == "ebpf":
        return EgressMasquerade("ebpf", node, node_ip, "Cilium",
                                "Cilium's BPF masquerading (bpf.masquerade) on the node's egress device", exempt)
    table = "ip6" if family == "IPv6" else "ip"
    return EgressMasquerade(config.dataplane, node, node_ip, "kindnetd",
                            f"kindnetd's nftables rule (table {table} {KINDNET_TABLE}, chain postrouting: "
                            "masquerade)", exempt, KINDNET_TABLE, kindnet_table(pod_cidr, node_ips, family))
