"""Which of a node's addresses accept NodePort traffic: kube-proxy's ``nodePortAddresses``
(``--nodeport-addresses``), per mode and IP family, and so whether ``localhost:<NodePort>`` works.

kube-proxy's rules, restated (kubernetes/kubernetes pkg/proxy/util/nodeport_addresses.go, cmd/kube-proxy/app
server_linux.go ``platformApplyDefaults``, pkg/proxy/iptables/proxier.go, pkg/proxy/nftables/proxier.go; the
cluster config's ``nodePortAddresses`` is validated as kube-proxy validates it, in cluster/config.py):

* The setting is a list of CIDRs, or the single word ``primary`` (the node's primary IP of each family, as its
  Node object says). Unset, iptables mode accepts NodePorts on every local address; nftables mode defaults to
  ``primary``.
* A proxier keeps the CIDRs of its own family; none left means every address (or, for ``primary``, the primary
  IP). Every address of the family (``0.0.0.0/0``, ``::/0``) is "match all": iptables matches
  ``--dst-type LOCAL``, nftables ``fib daddr type local`` but never loopback.
* localhost: iptables serves ``127.0.0.1:<NodePort>`` (IPv4 only, by ``route_localnet=1`` and the KUBE-FIREWALL
  guard) when the addresses contain 127.0.0.1 and ``iptables.localhostNodePorts`` is on (its default); never
  ``[::1]``. nftables writes no rule for a loopback address ("--nodeport-addresses includes localhost but
  localhost NodePorts are not supported"); from v1.38 (KEP-6032, gate ``KubeProxyNFTablesLocalhostNodePorts``,
  beta) a userspace proxy on the loopback address accepts TCP there instead, when the addresses name it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

PRIMARY = "primary"
MODES_DEFAULTING_TO_PRIMARY = frozenset({"nftables"})
MATCH_ALL = {"IPv4": "0.0.0.0/0", "IPv6": "::/0"}
LOOPBACK = {"IPv4": "127.0.0.1", "IPv6": "::1"}


@dataclass(frozen=True, slots=True)
class NodePortAddresses:
    """What one proxier (one mode, one family) makes of the setting."""

    mode: str
    family: str
    setting: tuple[str, ...]  # as configured, () when unset
    cidrs: tuple[str, ...]  # this family's, after the defaults

    @property
    def effective_setting(self) -> tuple[str, ...]:
        """The setting after kube-proxy's per-mode default: nftables mode's unset is ``primary``."""
        if not self.setting and self.mode in MODES_DEFAULTING_TO_PRIMARY:
            return (PRIMARY,)
        return self.setting

    @property
    def match_all(self) -> bool:
        return self.cidrs == (MATCH_ALL[self.family],)

    def contains(self, address: str) -> bool:
        ip = ipaddress.ip_address(address)
        return any(ip in ipaddress.ip_network(c, strict=False) for c in self.cidrs)

    def contains_loopback(self) -> bool:
        return self.contains(LOOPBACK[self.family])

    def node_ips(self, primary_ip: str) -> list[str]:
        """The node's addresses these CIDRs take: knetsim's nodes have two per family, their IP then loopback
        (kube-proxy's GetNodeIPs returns a Go map's order: any order is its)."""
        local = [ip for ip in (primary_ip, LOOPBACK[self.family]) if ip]
        return [ip for ip in local if self.contains(ip)]

    def describe(self) -> str:
        """``--nodeport-addresses`` as kube-proxy's flag spells it, with where the value came from."""
        effective = self.effective_setting
        if not effective:
            return "--nodeport-addresses unset: every local address"
        default = " (nftables mode's default)" if not self.setting else ""
        return f"--nodeport-addresses {','.join(effective)}{default}"


def node_port_addresses(setting: tuple[str, ...], mode: str, family: str, primary_ip: str) -> NodePortAddresses:
    """kube-proxy's ``NewNodePortAddresses(family, setting)`` for a proxier of ``mode``."""
    effective = setting or ((PRIMARY,) if mode in MODES_DEFAULTING_TO_PRIMARY else ())
    v4 = family == "IPv4"
    cidrs = tuple(c for c in effective if c != PRIMARY and (ipaddress.ip_network(c, strict=False).version == 4) == v4)
    if not cidrs:
        if effective == (PRIMARY,) and primary_ip:
            cidrs = (f"{primary_ip}/{32 if v4 else 128}",)
        else:
            cidrs = (MATCH_ALL[family],)
    return NodePortAddresses(mode, family, setting, cidrs)


# kube-proxy's iptables.localhostNodePorts (--iptables-localhost-nodeports): on by default; knetsim's kube-proxy
# runs with the default.
LOCALHOST_NODE_PORTS = True
LOCALHOST_GATE = "KubeProxyNFTablesLocalhostNodePorts"


def serves_localhost(addresses: NodePortAddresses) -> bool:
    """Does iptables mode accept ``127.0.0.1:<NodePort>``? Only IPv4 (route_localnet), only where the addresses
    take 127.0.0.1, only with localhostNodePorts on."""
    return addresses.family == "IPv4" and LOCALHOST_NODE_PORTS and addresses.contains_loopback()


def userspace_localhost(addresses: NodePortAddresses, version: Any) -> bool:
    """Does nftables mode's userspace proxy (KEP-6032) accept ``localhost:<NodePort>``? Where the addresses name
    loopback and the version has the gate on (beta, on by default, from 1.38)."""
    return addresses.contains_loopback() and not addresses.match_all and version.enabled(LOCALHOST_GATE)


def refusal(addresses: NodePortAddresses, dst: str, dport: int, proto: str, service: str, version: Any = None) -> str:
    """Why ``dst:dport``, a NodePort of ``service`` on one of the node's own addresses, found no rule."""
    where = join(dst, dport)
    loopback = ipaddress.ip_address(dst).is_loopback
    head = (f"{where} is NodePort {service} on localhost" if loopback
            else f"{where} is NodePort {service} on node address {dst}")
    taken = addresses.describe()
    tail = "; the packet is routed unchanged and nothing listens there"
    if not loopback:
        return f"{head}, which kube-proxy does not accept NodePorts on ({taken}){tail}"
    if addresses.mode == "iptables":
        if addresses.family == "IPv6":
            return f"{head}: kube-proxy never serves NodePorts on IPv6 loopback (there is no route_localnet){tail}"
        return (f"{head}: kube-proxy's iptables mode accepts NodePorts on 127.0.0.1 only where nodePortAddresses "
                f"takes it ({taken}: it does not){tail}")
    # nftables mode writes no rule for a loopback address; a userspace proxy may accept there instead (KEP-6032).
    if addresses.contains_loopback():
        head = (f"{head}: kube-proxy's nftables mode writes no NodePort rule for a loopback address, though "
                f"nodePortAddresses takes one ({taken})")
    else:
        head = (f"{head}: kube-proxy's nftables mode accepts NodePorts only on the addresses nodePortAddresses "
                f"takes ({taken}), never on localhost")
    if version is None:
        return head + tail
    from ..model.versions import GATE

    gate = GATE[LOCALHOST_GATE]
    wanted = "nodePortAddresses naming loopback (e.g. [172.18.0.0/16, 127.0.0.0/8])"
    if gate.alpha is None or version < gate.alpha:
        return f"{head}, and Kubernetes {version} has no way to serve them on localhost{tail}"
    if not version.enabled(LOCALHOST_GATE):
        return (f"{head}; Kubernetes {version} serves them there only with the alpha feature gate {LOCALHOST_GATE} "
                f"enabled and {wanted}{tail}")
    if proto.upper() != "TCP" and addresses.contains_loopback():
        return f"{head}; kube-proxy's userspace proxy for localhost NodePorts ({LOCALHOST_GATE}) serves TCP only{tail}"
    return (f"{head}; on Kubernetes {version} ({LOCALHOST_GATE} on by default) {wanted} would have kube-proxy's "
            f"userspace proxy accept it (TCP only){tail}")


def join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
