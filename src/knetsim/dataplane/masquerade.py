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

On a cluster whose CNI is not kind's (``cni:`` in the cluster config), that CNI's own agent does it,
with the same result for traffic leaving the cluster, by its own iptables rule (``_CNI_RULES``).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..cluster.state import ClusterState

KINDNET_TABLE = "kindnet-masq"

# The other CNIs' masquerading of pod traffic bound outside the pod network: (agent, the rule in words).
# Calico: felix's NAT-outgoing chain for an IP pool with natOutgoing (the default pool has it;
# projectcalico/calico felix/rules/nat.go). Antrea: antrea-agent's iptables rule (antrea-io/antrea
# pkg/agent/route/route_linux.go). flannel: flanneld --ip-masq (the kube-flannel.yml default). Cilium
# beside kube-proxy: the agent's iptables rule (the chart's default, enable-bpf-masquerade=false).
_CNI_RULES = {
    "calico": ("calico-node (felix)", "Calico's iptables rule (nat chain cali-nat-outgoing: from an IP pool with "
               "natOutgoing to outside every IP pool, MASQUERADE)"),
    "antrea": ("antrea-agent", "Antrea's iptables rule (nat chain ANTREA-POSTROUTING: \"Antrea: masquerade Pod "
               "to external packets\", MASQUERADE)"),
    "flannel": ("flanneld", "flannel's iptables rule (nat chain FLANNEL-POSTRTG, flanneld --ip-masq: MASQUERADE)"),
    "cilium": ("Cilium", "Cilium's iptables rule (nat chain CILIUM_POST_nat: MASQUERADE)"),
}


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
    agent: str  # who does it: kindnetd, the CNI's agent or Cilium
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
    if config.cni in _CNI_RULES:
        agent, rule = _CNI_RULES[config.cni]
        return EgressMasquerade(config.dataplane, node, node_ip, agent, rule, exempt)
    table = "ip6" if family == "IPv6" else "ip"
    return EgressMasquerade(config.dataplane, node, node_ip, "kindnetd",
                            f"kindnetd's nftables rule (table {table} {KINDNET_TABLE}, chain postrouting: "
                            "masquerade)", exempt, KINDNET_TABLE, kindnet_table(pod_cidr, node_ips, family))
