"""Host ports: a container port published on its node (``ports[].hostPort``, on ``hostIP`` or every address).

Two programs care, and both read them from here:

* the scheduler's NodePorts filter: a node where another pod already holds the same host port, protocol and
  address (an unset address, 0.0.0.0, holds it on all of them) does not take the pod
  (kubernetes/kubernetes ``pkg/scheduler/framework/plugins/nodeports/node_ports.go`` and ``HostPortInfo`` in
  ``pkg/scheduler/framework/types.go``: the reason is ``ErrReason`` below, word for word);
* the CNI's portmap plugin on the node, which forwards a connection to ``hostIP:hostPort`` to the pod's
  ``containerPort`` (network/connect.py asks ``published`` which pod it reaches).

A hostNetwork pod's container ports are host ports too (the API server defaults ``hostPort`` to
``containerPort``, model/defaults.py).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from ..model.objects import Pod

# node_ports.go ErrReason: the FailedScheduling message's words for a node whose ports are taken.
NODE_PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"
# HostPortInfo's DefaultBindAllHostIP: an unset hostIP binds every address of the node.
BIND_ALL = "0.0.0.0"

HostPort = tuple[str, str, int]  # (hostIP, protocol, hostPort)


def _sanitized(ip: Any, protocol: Any, port: int) -> HostPort:
    return (str(ip or "") or BIND_ALL, str(protocol or "") or "TCP", port)


def wanted(spec: Mapping[str, Any]) -> list[HostPort]:
    """The host ports a pod spec asks for: its containers' and its sidecars' (restartable init containers, which
    run beside them). Asked for every pod the scheduler places, so the common pod (no hostPort) costs one pass."""
    out: list[HostPort] = []
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            if not isinstance(container, Mapping) or (key == "initContainers"
                                                      and container.get("restartPolicy") != "Always"):
                continue
            for port in container.get("ports") or ():
                host_port = port.get("hostPort") if isinstance(port, Mapping) else None
                if isinstance(host_port, int) and host_port > 0:
                    out.append(_sanitized(port.get("hostIP"), port.get("protocol"), host_port))
    return out


def in_use(specs: Iterable[Mapping[str, Any]]) -> set[HostPort]:
    """The host ports the pods of one node hold (their specs)."""
    return {port for spec in specs for port in wanted(spec)}


def conflicts(spec: Mapping[str, Any], used: Collection[HostPort]) -> bool:
    """Does the pod want a host port the node's pods already hold? 0.0.0.0 overlaps every address of the same
    protocol and port; two specific addresses only themselves."""
    if not used:
        return False
    for ip, protocol, port in wanted(spec):
        for other_ip, other_protocol, other_port in used:
            if (other_protocol, other_port) == (protocol, port) and (ip == other_ip or BIND_ALL in (ip, other_ip)):
                return True
    return False


def published(pods: Iterable[Pod], node: str, address: str, port: int, protocol: str) -> tuple[Pod, int] | None:
    """(pod, containerPort) that ``address:port/protocol`` on ``node`` reaches through a host port, or None. A
    pod's own network only: a hostNetwork pod listens on the node itself. An unset hostIP is every local address,
    the node's 127.0.0.1 included (portmap's DNAT matches ``--dst-type LOCAL`` and turns route_localnet on for
    it: containernetworking/plugins ``plugins/meta/portmap``)."""
    for pod in pods:
        if pod.node_name != node or pod.host_network or not pod.pod_ip or pod.phase in ("Succeeded", "Failed"):
            continue
        for container in pod.containers:
            for p in container.ports:
                if p.host_port != port or p.protocol != protocol:
                    continue
                if (p.host_ip or BIND_ALL) in (address, BIND_ALL):
                    return pod, p.container_port
    return None


__all__ = ["BIND_ALL", "NODE_PORTS_REASON", "HostPort", "conflicts", "in_use", "published", "wanted"]
