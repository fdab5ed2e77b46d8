"""NetworkPolicy as nftables rules, written from the policy engine's own answers.

Nothing here knows NetworkPolicy semantics: for every pod of a node and every address the
topology holds (pods, nodes, external clients), ``knetsim.policy.direction_connections``
says which protocols and ports that pod's egress (its ingress) allows, and each answer
becomes one nft rule. Whatever the engine learns (ClusterNetworkPolicy tiers, Cilium
policies on ebpf) the kernel enforces on the next build, with no change here.

Where the two directions are enforced follows the simulation's trace (``network.connect``):

* **egress** on the sender's node, on packets coming out of the pod's veth, after
  kube-proxy's DNAT (hooks ``forward`` and ``input``): the sender's policy sees the backend
  pod, or the node address of another node's NodePort;
* **ingress** on the receiver's node, on packets going into the pod's veth, after SNAT
  (hook ``postrouting`` at priority ``srcnat + 10``): a masqueraded NodePort arrives from a
  node address, as the simulation says.

Replies and ICMP errors of allowed connections pass (``ct state established,related``):
NetworkPolicy is stateful. kube-network-policies (the reference implementation) also
diverts in ``postrouting``, but before SNAT and through nfqueue to its Go engine; here the
verdicts are precomputed, which is what makes a rule per (pod, peer) affordable.

Addresses outside the topology get the answer the engine gives for ``192.0.2.1``
(TEST-NET-1) as a representative of "the Internet" (``2001:db8:ffff::1`` for IPv6 on a
topology that wires it): ipBlocks that single out other external ranges are not reproduced
(nothing answers out there in the topology anyway). Every rule names its family (``ip`` or
``ip6``), so ipBlocks of either family are enforced on the packets that carry them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..cluster.state import ClusterState
from ..model.objects import Pod
from ..policy import ConnSet, direction_connections
from .plan import Plan, PodPlan

TABLE = "knetsim-policy"
WORLD = "192.0.2.1"
WORLD6 = "2001:db8:ffff::1"
_PROTOS = {"TCP": "tcp", "UDP": "udp", "SCTP": "sctp"}


def _peers(state: ClusterState, plan: Plan) -> list[tuple[str, Pod | str]]:
    """(address, engine reference) for every address in the topology a pod can talk to."""
    out: list[tuple[str, Pod | str]] = []
    seen = set()
    for p in plan.pods:
        pod = state.pods.get(p.key)
        out.append((p.ip, pod if pod is not None and pod.pod_ip == p.ip else p.ip))
        seen.add(p.ip)
        # A dual-stack pod's other address: the engine finds the pod by it and keeps the address for ipBlocks.
        for ip in p.addresses[1:]:
            out.append((ip, ip))
            seen.add(ip)
    for ip in (*(a for n in plan.nodes for a in n.addresses), *(plan.gateways or (plan.gateway,)), *plan.clients,
               *(ip for ip, _ in plan.outside)):
        if ip not in seen:
            out.append((ip, ip))
            seen.add(ip)
    return out


def _match(connset: ConnSet) -> list[str]:
    """The nft match expressions (one rule each) that together accept exactly ``connset``."""
    if connset.is_all:
        return [""]
    out = []
    for protocol, ranges in connset.ranges:
        proto = _PROTOS[protocol]
        if ranges == ((1, 65535),):
            out.append(f"meta l4proto {proto}")
            continue
        ports = ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in ranges)
        out.append(f"meta l4proto {proto} th dport {{ {ports} }}")
    if connset.other:
        out.append("meta l4proto != { tcp, udp, sctp }")
    return out


def _chain(state: ClusterState, pod: Pod, direction: str, peers: Sequence[tuple[str, Pod | str]]
           ) -> list[str] | None:
    """The rules of one pod's chain for one direction, or None when nothing is restricted."""
    field = "daddr" if direction == "egress" else "saddr"
    families = ["ip6" if ":" in ip else "ip" for ip, _ in peers]
    # (family, connections) -> addresses: an nft set holds addresses of one family only.
    groups: dict[tuple[str, ConnSet], list[str]] = {}
    for (ip, ref), family in zip(peers, families, strict=True):
        groups.setdefault((family, direction_connections(state, direction, pod, ref)), []).append(ip)
    worlds = {"ip": direction_connections(state, direction, pod, WORLD)}
    if "ip6" in families:
        worlds["ip6"] = direction_connections(state, direction, pod, WORLD6)
    if all(c.is_all for _, c in groups) and all(w.is_all for w in worlds.values()):
        return None
    rules = []
    for (family, connset), ips in sorted(groups.items(), key=lambda kv: (kv[0][0] == "ip6", kv[1][0])):
        if connset.is_empty:
            continue
        addresses = ", ".join(ips)
        for match in _match(connset):
            rules.append(f"{family} {field} {{ {addresses} }} {match} accept".replace("  ", " "))
    for family in dict.fromkeys(families):
        known = ", ".join(ip for (ip, _), f in zip(peers, families, strict=True) if f == family)
        rules.append(f"{family} {field} {{ {known} }} drop")
    if len(worlds) == 1:
        rules += [f"{m} accept".strip() for m in _match(worlds["ip"])] if not worlds["ip"].is_empty else []
    else:
        for family, world in worlds.items():
            proto = "ipv6" if family == "ip6" else "ipv4"
            rules += [f"meta nfproto {proto} {m} accept".strip() for m in _match(world)] if not world.is_empty else []
    rules.append("drop")
    return rules


def ruleset(state: ClusterState, plan: Plan, node: str) -> str:
    """The whole ``inet knetsim-policy`` table for ``node``, as one atomic ``nft -f`` replacement."""
    peers = _peers(state, plan)
    local: list[tuple[PodPlan, Pod]] = []
    for p in plan.pods:
        pod = state.pods.get(p.key)
        if p.node == node and pod is not None and p.is_pod:
            local.append((p, pod))
    chains: list[str] = []
    egress_jumps, ingress_jumps = [], []
    for p, pod in local:
        for direction, jumps in (("egress", egress_jumps), ("ingress", ingress_jumps)):
            rules = _chain(state, pod, direction, peers)
            if rules is None:
                continue
            name = f"{direction}-{p.host_veth}"
            jumps.append(f'"{p.host_veth}" : jump {name}')
            body = "\n".join(f"\t\t{r}" for r in rules)
            chains.append(f'\tchain {name} {{\n\t\tcomment "{direction} of {p.key} ({p.ip})"\n{body}\n\t}}')
    lines = [f"table inet {TABLE}", f"delete table inet {TABLE}", f"table inet {TABLE} {{",
             f'\tcomment "NetworkPolicy of the pods on node {node}, from knetsim.policy"']
    lines += _base("egress-forward", "forward", 10, "iifname", egress_jumps)
    lines += _base("egress-input", "input", 10, "iifname", egress_jumps)
    lines += _base("ingress", "postrouting", 110, "oifname", ingress_jumps)
    lines += chains
    lines.append("}")
    return "\n".join(lines) + "\n"


def _base(name: str, hook: str, priority: int, field: str, jumps: Iterable[str]) -> list[str]:
    jumps = list(jumps)
    out = [f"\tchain {name} {{", f"\t\ttype filter hook {hook} priority {priority}; policy accept;"]
    if jumps:
        out.append("\t\tct state established,related accept")
        out.append(f"\t\t{field} vmap {{ {', '.join(jumps)} }}")
    out.append("\t}")
    return out
