"""The data plane layer: one small ``Backend`` protocol, three implementations.

    >>> from knetsim.dataplane import render, trace_packet, Packet
    >>> rules = render(state, "nftables", node="worker")
    >>> trace_packet(state, Packet("10.244.1.2", "10.96.0.10", 53, "UDP"), "iptables").output
    '10.244.0.2:53, 10.244.0.3:53'

Backends consume only the ClusterState the controllers produced (Services and
EndpointSlices, through ``model.proxy_view``), as kube-proxy and Cilium consume the API.
Exceptions: ``DataplaneError`` (bad backend, node or packet; exit code 2).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .bootstrap import BootstrapFinding, ebpf_bootstrap_finding
from .ebpf import EbpfBackend
from .iptables import IptablesBackend
from .model import (
    AffinityMemory,
    Backend,
    DataplaneError,
    Packet,
    Ruleset,
    Step,
    Target,
    TraceResult,
    default_node,
)
from .nftables import NftablesBackend

__all__ = [
    "BACKENDS",
    "AffinityMemory",
    "Backend",
    "BootstrapFinding",
    "Connection",
    "DataplaneError",
    "Packet",
    "Ruleset",
    "Step",
    "Target",
    "TraceResult",
    "arrival_node",
    "backend_for",
    "default_node",
    "ebpf_bootstrap_finding",
    "render",
    "trace_connections",
    "trace_packet",
]

BACKENDS: dict[str, Backend] = {b.name: b for b in (IptablesBackend(), NftablesBackend(), EbpfBackend())}


def backend_for(state_or_name: object, name: str | None = None) -> Backend:
    """The backend called ``name``, or the cluster config's ``dataplane`` when ``name`` is None."""
    if name is None:
        name = getattr(getattr(state_or_name, "config", None), "dataplane", None) or "iptables"
    try:
        return BACKENDS[name]
    except KeyError:
        raise DataplaneError(f"unknown data plane {name!r}; supported values: {', '.join(BACKENDS)}") from None


def render(state, backend: str | None = None, node: str | None = None) -> Ruleset:  # type: ignore[no-untyped-def]
    """What ``backend`` (default: the cluster's) programs on ``node`` (default: the first worker)."""
    return backend_for(state, backend).render(state, node)


def arrival_node(state, packet: Packet) -> str:  # type: ignore[no-untyped-def]
    """The node whose data plane translates ``packet``.

    Packets to a node's IP (NodePorts) are translated by that node; anything else by the
    node it enters first: the source pod's or source node's. Traffic from outside the
    cluster to a LoadBalancer/external IP lands on the default node unless ``--node`` says.
    """
    if packet.node:
        return packet.node
    for n in state.config.nodes:
        if packet.dst in n.addresses:
            return n.name
    pod = state.pod_by_ip(packet.src)
    if pod is not None and pod.node_name:
        return pod.node_name
    for n in state.config.nodes:
        if packet.src in n.addresses:
            return n.name
    return default_node(state)


def trace_packet(state, packet: Packet, backend: str | None = None,  # type: ignore[no-untyped-def]
                 node: str | None = None, ruleset: Ruleset | None = None) -> TraceResult:
    """Render (or reuse ``ruleset``) for the arrival node and walk ``packet`` through it."""
    impl = backend_for(state, backend)
    where = node or arrival_node(state, packet)
    if ruleset is None or ruleset.node != where or ruleset.backend != impl.name:
        ruleset = impl.render(state, where)
    result = impl.trace(ruleset, packet)
    why = topology_decision(ruleset, result)
    if why:
        result.notes.append(f"topology: {why}")
    return result


@dataclass(frozen=True, slots=True)
class Connection:
    """One of a client's successive connections (``packet --count``): what the data plane did with its first
    packet, which backend it went to, and where the data plane remembered that (sessionAffinity)."""

    index: int
    at: float  # seconds after the first connection
    result: TraceResult
    backend: str | None  # the target it went to ("ip:port"), None when not DNATed
    remembered: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"connection": self.index, "at": self.at, "backend": self.backend, "pinned": self.result.pinned,
                "remembered": self.remembered, "trace": self.result.to_dict()}


def trace_connections(state, packet: Packet, count: int, interval: float,  # type: ignore[no-untyped-def]
                      backend: str | None = None, node: str | None = None) -> list[Connection]:
    """``count`` new connections from one client, ``interval`` seconds apart, through one node's data plane.

    Without affinity every connection is balanced anew; with sessionAffinity ClientIP the first one is, and the
    data plane remembers the client (a recent list, a dynamic set, the affinity map) so the next ones go to the
    same backend until ``timeoutSeconds`` pass without a connection. Where the first choice is random, knetsim
    picks one target deterministically from the client and the connection's number.
    """
    if count < 1:
        raise DataplaneError(f"--count: {count}: must be at least 1")
    if interval < 0:
        raise DataplaneError(f"--interval: {interval}: must not be negative")
    impl = backend_for(state, backend)
    where = node or arrival_node(state, packet)
    ruleset = impl.render(state, where)
    memory = AffinityMemory()
    out = []
    for i in range(count):
        memory.now = i * interval
        result = impl.trace(ruleset, packet, memory)
        why = topology_decision(ruleset, result)
        if why:
            result.notes.append(f"topology: {why}")
        chosen, remembered = None, ""
        if result.verdict == "DNAT" and result.targets:
            target = _pick(result.targets, f"{packet.src}->{packet.dst}:{packet.dport}/{packet.proto}#{i}")
            chosen = target.address
            remembered = impl.remember(ruleset, result, target, memory)
        out.append(Connection(i + 1, memory.now, result, chosen, remembered))
    return out


def _pick(targets: list[Target], key: str) -> Target:
    """A target by its probability, from a stable hash of ``key`` (upstream: the kernel's random number)."""
    if len(targets) == 1:
        return targets[0]
    point = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64
    total = 0.0
    for target in targets:
        total += target.probability
        if point < total:
            return target
    return targets[-1]


def topology_decision(ruleset: Ruleset, result: TraceResult) -> str:
    """Why the Service port the packet hit kept the endpoints it kept on this node (hints), or ""."""
    view = ruleset.views.get(result.family) if ruleset.views else ruleset.view
    if view is None or not result.service:
        return ""
    proto = result.packet.proto.upper()
    for entry in view.ports:
        if entry.info.name_string == result.service and entry.info.protocol == proto:
            return entry.categorized.why
    return ""
