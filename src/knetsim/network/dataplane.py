"""The dataplane stage of a trace: ask the configured backend what it does with a packet.

The backend (``knetsim.dataplane``: iptables, nftables or ebpf) traces the packet through the
rules it rendered for the node the packet is processed on and returns the possible DNAT
targets. This module turns that into a Hop and into candidates the next stages can use.
Rendered rulesets are cached per (state, backend, node): the state is read-only, and a doctor
run traces many packets through the same node.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from ..cluster.state import ClusterState
from ..dataplane import Packet, Ruleset, backend_for, trace_packet
from ..dataplane.model import endpoints_by_port, join_host_port, proxied_elsewhere, split_host_port, usable_endpoints
from ..model.listeners import pod_listens
from ..model.objects import Pod, Service, ServicePort
from .trace import Hop


@dataclass(frozen=True, slots=True)
class Candidate:
    pod: Pod | None  # None: an endpoint outside the pod network (a selector-less Service's own slice)
    ip: str
    port: int
    node: str | None
    snat: str | None = None  # the source address the backend sees, when masqueraded

    @property
    def name(self) -> str:
        return self.pod.key if self.pod is not None else self.ip


def endpoint_pod(state: ClusterState, ip: str, port: int, protocol: str) -> Pod | None:
    """The pod behind an endpoint address: a pod IP's pod, or on a node address the hostNetwork pod
    listening there (the API server behind ``default/kubernetes``'s 172.18.0.2:6443)."""
    pod = state.pod_by_ip(ip)
    if pod is not None:
        return pod
    node = state.node_by_ip(ip)
    if node is None:
        return None
    return next((p for _, p in sorted(state.pods.items()) if p.host_network and p.node_name == node.name
                 and (port, protocol) in pod_listens(p)), None)


def usable_candidates(state: ClusterState, service: Service, port: ServicePort,
                      family: str | None = None) -> list[Candidate]:
    """The endpoints the data plane would use for ``port``: ready ones, else serving-terminating ones; those of
    ``family``'s EndpointSlices (default: the Service's primary family), as that family's proxier sees them.

    The data plane's own bookkeeping (``dataplane.model``) decides, so the endpoints hop of a
    trace and the DNAT targets of the dataplane hop can never disagree.
    """
    infos = endpoints_by_port(state, service, family).get((port.name, port.protocol), [])
    out = []
    for info in usable_endpoints(infos):
        pod = endpoint_pod(state, info.ip, info.port, port.protocol)
        out.append(Candidate(pod, info.ip, info.port, info.node or (pod.node_name if pod else None)))
    return sorted(out, key=lambda c: (c.ip, c.port))


_RULESETS: weakref.WeakKeyDictionary[ClusterState, dict[tuple[str, str], Ruleset]] = weakref.WeakKeyDictionary()


def _ruleset(state: ClusterState, plane: str, node: str) -> Ruleset:
    per_state = _RULESETS.setdefault(state, {})
    key = (plane, node)
    if key not in per_state:
        per_state[key] = backend_for(state, plane).render(state, node)
    return per_state[key]


def dataplane_hop(state: ClusterState, plane: str, src_ip: str, protocol: str, dst_ip: str, port: int,
                  node: str) -> tuple[Hop, str, list[Candidate]]:
    """(hop, verdict, candidates); verdict is DNAT, REJECT, DROP, or NONE (no rule matched)."""
    packet = Packet(src_ip, dst_ip, port, protocol, node or None)
    result = trace_packet(state, packet, plane, node or None,
                          ruleset=_ruleset(state, plane, node) if node else None)
    node_ip = state.nodes[result.node].internal_ip if result.node in state.nodes else None
    candidates = []
    if result.family == "IPv6" and result.node in state.nodes:
        node_ip = next((ip for ip in state.nodes[result.node].internal_ips if ":" in ip), node_ip)
    # A pod reaching a ClusterIP is masqueraded only when the backend is the pod itself (KUBE-SEP's "-s <ip>",
    # Cilium's hairpin SNAT): every other backend sees the pod's own address.
    svc = state.service_by_ip(dst_ip)
    src_pod = state.pod_by_ip(src_ip)
    hairpin_only = (result.masquerade and svc is not None and dst_ip in (svc.cluster_ips or (svc.cluster_ip,))
                    and src_pod is not None and not src_pod.host_network)
    for target in result.targets:
        ip, number = split_host_port(target.address)
        pod = endpoint_pod(state, ip, number, protocol)
        masq = result.masquerade and (not hairpin_only or ip == src_ip)
        candidates.append(Candidate(pod, ip, number, pod.node_name if pod else None, node_ip if masq else None))
    verdict = result.verdict if result.verdict in ("DNAT", "REJECT", "DROP") else "NONE"
    if result.verdict == "DNAT":
        odds = ", ".join(f"{t.address} ({t.probability:.0%})" for t in result.targets)
        detail = f"{plane} on {result.node}: DNAT {join_host_port(dst_ip, port)} → one of {odds}"
        if hairpin_only and len(result.targets) > 1:
            detail += f"; masqueraded when the backend is the client itself (hairpin: it sees {node_ip})"
        elif result.masquerade:
            detail += f"; masqueraded (the pod sees {node_ip})"
    elif result.verdict == "REJECT":
        detail = f"{plane} on {result.node}: REJECT {join_host_port(dst_ip, port)}/{protocol}: connection refused"
    elif result.verdict == "DROP":
        detail = f"{plane} on {result.node}: DROP {join_host_port(dst_ip, port)}/{protocol}: the client times out"
    else:
        detail = (f"{plane} on {result.node}: no rule for {join_host_port(dst_ip, port)}/{protocol}; the packet leaves "
                  "the node "
                  "untranslated and nothing answers")

    if result.verdict in ("REJECT", "DROP") and result.steps:
        detail += f" — rule: {result.steps[-1].text.strip()}"
    if result.notes:
        detail += " (" + "; ".join(result.notes) + ")"
    label = proxied_elsewhere(svc) if svc is not None and verdict != "DNAT" else ""
    if svc is not None and label:
        detail += (f"; Service {svc.namespace}/{svc.name} carries the label {label}={svc.labels[label]!r}, so "
                   "kube-proxy (and Cilium) leave it to another proxy and program nothing for it")
    data = {"backend": plane, "node": result.node, "rules": [s.to_dict() for s in result.steps],
            "masquerade": result.masquerade}
    return Hop("dataplane", "ok" if verdict == "DNAT" else "fail", detail, data), verdict, candidates
