"""The node's flow record, as Hubble keeps one on every node: the last flows, in a bounded ring.

What happens in the live cluster is told to ``FlowRecorder.observe`` where it happens — a traced
connection from ``kubectl exec`` (``wget``, ``curl``, ``nc``: the container's ``Ctx.observed``) or
from the Ingress/Gateway entry, a lookup (``nslookup``), a kubelet probe, a ``kubectl port-forward``
stream — and ``network.flows`` (a probe's and a port-forward's: ``network.flowends``, without the
simulation) turns each into the flows Hubble would record. The daemon serves
the ring at ``/knetsim/flows`` (``knetsim observe`` prints it as ``hubble observe -o json`` does);
the oldest flows go first when it is full, and ``lost`` counts them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..model.flows import FlowLog
from ..model.objects import Pod

log = logging.getLogger("knetsim.kubelet.flows")
RING = 4095  # Hubble's default ring buffer (hubble-event-buffer-capacity)


class HasState(Protocol):
    @property
    def state(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class Probed:
    """A kubelet probe of ``port`` on ``pod``."""

    pod: Pod
    port: int


@dataclass(frozen=True, slots=True)
class PortForwarded:
    """A ``kubectl port-forward`` stream to ``port`` of ``pod``."""

    pod: Pod
    port: int


class FlowRecorder:
    def __init__(self, node: HasState, limit: int = RING) -> None:
        self.node = node
        self.log = FlowLog(limit)

    def observe(self, event: Any) -> None:
        """Record what ``event`` (a Trace, a Resolution, a Probed, a PortForwarded) sent on the wire. Never raises:
        a record that cannot be made must not fail the connection it records."""
        state = self.node.state
        if state is None:
            return
        try:
            if isinstance(event, Probed | PortForwarded):
                # The node's own connections: the flow's ends alone (a probe loads none of the simulation).
                from ..network.flowends import port_forward_flow, probe_flow

                made = probe_flow if isinstance(event, Probed) else port_forward_flow
                self.log.add([made(state, event.pod, event.port)])
                return
            # A trace or a lookup: the simulation already ran it; its flows load with the first one.
            from ..dns.resolver import Resolution
            from ..network.flows import lookup_flows, trace_flows
            from ..network.trace import Trace

            if isinstance(event, Trace):
                self.log.add(trace_flows(state, event))
            elif isinstance(event, Resolution):
                pod = state.pods.get(event.pod)
                if pod is not None:
                    self.log.add(lookup_flows(state, pod, event))
        except Exception:  # pragma: no cover - a defect here must not reach the client
            log.exception("cannot record the flows of %r", type(event).__name__)

    def probed(self, pod: Pod, port: int | None) -> None:
        if port is not None:
            self.observe(Probed(pod, port))

    def to_lines(self, last: int | None = None) -> list[dict[str, Any]]:
        return [f.to_hubble() for f in self.log.last(last)]


def probe_port(container: Mapping[str, Any], spec: Mapping[str, Any]) -> int | None:
    """The port an httpGet, tcpSocket or grpc probe connects to (None for an exec probe or a bad port)."""
    from .prober import ProbeError, port_of

    action = next((a for a in ("httpGet", "tcpSocket", "grpc") if isinstance(spec.get(a), Mapping)), None)
    if action is None:
        return None
    try:
        return port_of(container, spec[action].get("port"))
    except ProbeError:
        return None


__all__ = ["RING", "FlowRecorder", "PortForwarded", "Probed", "probe_port"]
