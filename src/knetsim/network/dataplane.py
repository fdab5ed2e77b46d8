"""The dataplane stage of a trace: ask the configured backend what it does with a packet.

The backend (``knetsim.dataplane``: iptables, nftables or ebpf) traces the packet through the
rules it rendered for the node the packet is processed on and returns the possible DNAT
targets. This module turns that into a Hop and into candidates the next stages can use.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..cluster.state import ClusterState
from ..model.objects import Pod
from .trace import Hop


@dataclass(frozen=True, slots=True)
class Candidate:
    pod: Pod
    ip: str
    port: int
    node: str
    snat: str | None = None  # the source address the backend pod sees, when masqueraded


def dataplane_hop(state: ClusterState, plane: str, src_ip: str, protocol: str, dst_ip: str, port: int,
                  node: str) -> tuple[Hop, str, list[Candidate]]:
    """(hop, verdict, candidates); verdict is DNAT, REJECT, DROP, or NONE (no rule matched)."""
    from ..dataplane import trace_packet

    result = trace_packet(state, src_ip=src_ip, protocol=protocol, dst_ip=dst_ip, dst_port=port, node=node,
                          backend=plane)
    candidates = []
    node_ip = state.nodes[node].internal_ip if node in state.nodes else None
    for target in result.targets:
        pod = state.pod_by_ip(target.ip)
        if pod is None:
            continue
        candidates.append(Candidate(pod, target.ip, target.port, pod.node_name,
                                    node_ip if result.masquerade else None))
    verdict = result.verdict if result.verdict in ("DNAT", "REJECT", "DROP") else "NONE"
    detail = result.summary
    data = {"backend": plane, "node": node, "rules": list(result.matched), "masquerade": result.masquerade}
    return Hop("dataplane", "ok" if verdict == "DNAT" else "fail", detail, data), verdict, candidates
