"""Network flows, as Cilium's Hubble records them: what ``hubble observe -o json`` prints, read and written.

A flow is one observed packet event of a connection: its ends (address, and for a pod its namespace,
name, labels and workload), protocol and ports, the verdict (``FORWARDED``, ``DROPPED``), where it
was seen (``node_name``, ``traffic_direction``) and, for DNS and HTTP, the L7 record. The JSON is
the ``GetFlowsResponse`` of Hubble's observer API in protojson with the proto field names, one
object per line (``{"flow": {...}, "node_name": ..., "time": ...}``), the fields of
``api/v1/flow/flow.proto``; a line that holds no flow (an agent event, a lost-events notice) is
skipped, as ``hubble observe`` readers do. knetsim writes the same lines for what its live cluster
sees (``knetsim observe``) and reads any (``policy generate --flows``).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

PROTOCOLS = ("TCP", "UDP", "SCTP")
FORWARDED, DROPPED = "FORWARDED", "DROPPED"
INGRESS, EGRESS = "INGRESS", "EGRESS"
# Hubble's monitor message types (pkg/monitor/api): a trace notification, a drop, an L7 access-log record.
TRACE_EVENT, DROP_EVENT, L7_EVENT = 4, 1, 129


class FlowError(ValueError):
    """A line that is JSON but not a flow Hubble could have written (the message names line and field)."""


@dataclass(frozen=True, slots=True)
class FlowEnd:
    """One end of a flow: an address, and what Hubble knows of the pod behind it."""

    ip: str
    namespace: str = ""
    pod: str = ""
    labels: tuple[str, ...] = ()  # "k8s:app=web", as Hubble prefixes them with their source
    workloads: tuple[tuple[str, str], ...] = ()  # (name, kind)
    names: tuple[str, ...] = ()  # DNS names of the address (source_names / destination_names)

    @property
    def is_pod(self) -> bool:
        return bool(self.pod)

    @property
    def pod_key(self) -> str:
        return f"{self.namespace}/{self.pod}" if self.pod else ""

    def label_map(self) -> dict[str, str]:
        """``app=web`` labels of the pod (the ``k8s:`` source prefix dropped; reserved identities left out)."""
        out = {}
        for label in self.labels:
            source, _, rest = label.partition(":")
            if source != "k8s" or "=" not in rest:
                continue
            key, _, value = rest.partition("=")
            if not key.startswith("io.kubernetes.pod.") and not key.startswith("io.cilium.k8s."):
                out[key] = value
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.namespace:
            out["namespace"] = self.namespace
        if self.labels:
            out["labels"] = list(self.labels)
        if self.pod:
            out["pod_name"] = self.pod
        if self.workloads:
            out["workloads"] = [{"name": n, "kind": k} for n, k in self.workloads]
        return out


@dataclass(frozen=True, slots=True)
class Flow:
    time: str  # RFC 3339
    src: FlowEnd
    dst: FlowEnd
    protocol: str  # TCP | UDP | SCTP | ICMPv4 | ICMPv6
    src_port: int = 0
    dst_port: int = 0
    verdict: str = FORWARDED
    node: str = ""
    direction: str = ""  # INGRESS | EGRESS: the side of the connection it was seen on
    is_reply: bool = False
    l7: dict[str, Any] | None = None  # {"dns": {...}} or {"http": {...}}, as in flow.proto's Layer7
    summary: str = ""
    drop_reason: str = ""  # POLICY_DENIED, ...

    @property
    def connection(self) -> tuple[str, str, str, int]:
        """(source, destination, protocol, destination port): what a policy rule has to let through."""
        return (self.src.pod_key or self.src.ip, self.dst.pod_key or self.dst.ip, self.protocol, self.dst_port)

    def to_hubble(self) -> dict[str, Any]:
        """The ``hubble observe -o json`` object of this flow."""
        flow: dict[str, Any] = {"time": self.time, "verdict": self.verdict}
        if self.verdict == DROPPED and self.drop_reason:
            flow["drop_reason_desc"] = self.drop_reason
        flow["IP"] = {"source": self.src.ip, "destination": self.dst.ip,
                      "ipVersion": "IPv6" if ":" in self.src.ip else "IPv4"}
        if self.protocol in PROTOCOLS:
            flow["l4"] = {self.protocol: {"source_port": self.src_port, "destination_port": self.dst_port}}
            if self.protocol == "TCP":
                flow["l4"]["TCP"]["flags"] = {"SYN": True} if not self.is_reply else {"SYN": True, "ACK": True}
        elif self.protocol.startswith("ICMP"):
            flow["l4"] = {self.protocol: {"type": 8 if not self.is_reply else 0}}
        flow["source"] = self.src.to_json()
        flow["destination"] = self.dst.to_json()
        flow["Type"] = "L7" if self.l7 else "L3_L4"
        flow["node_name"] = self.node
        if self.src.names:
            flow["source_names"] = list(self.src.names)
        if self.dst.names:
            flow["destination_names"] = list(self.dst.names)
        if self.l7:
            flow["l7"] = {"type": "RESPONSE" if self.is_reply else "REQUEST", **self.l7}
        event = L7_EVENT if self.l7 else DROP_EVENT if self.verdict == DROPPED else TRACE_EVENT
        flow["event_type"] = {"type": event}
        if self.direction:
            flow["traffic_direction"] = self.direction
        flow["is_reply"] = self.is_reply
        if self.summary:
            flow["Summary"] = self.summary
        return {"flow": flow, "node_name": self.node, "time": self.time}


def _end(raw: Any, ip: str, names: Any) -> FlowEnd:
    if not isinstance(raw, dict):
        raw = {}
    workloads = tuple((str(w.get("name", "")), str(w.get("kind", ""))) for w in raw.get("workloads") or []
                      if isinstance(w, dict))
    labels = tuple(str(label) for label in raw.get("labels") or [] if isinstance(label, str))
    return FlowEnd(ip, str(raw.get("namespace") or ""), str(raw.get("pod_name") or ""), labels, workloads,
                   tuple(str(n) for n in names or () if isinstance(n, str)))


def from_hubble(obj: Any) -> Flow | None:
    """A flow from one ``hubble observe -o json`` object (a ``GetFlowsResponse``, or a bare ``Flow``); None for
    a response that carries no flow. Raises FlowError for a flow without addresses."""
    if not isinstance(obj, dict):
        raise FlowError("expected a JSON object")
    flow = obj.get("flow") if "flow" in obj else obj if "IP" in obj or "l4" in obj else None
    if flow is None:
        return None
    if not isinstance(flow, dict):
        raise FlowError("flow: expected an object")
    ip = flow.get("IP")
    if not isinstance(ip, dict) or not ip.get("source") or not ip.get("destination"):
        raise FlowError("flow.IP: a flow needs source and destination addresses")
    l4 = flow.get("l4") if isinstance(flow.get("l4"), dict) else {}
    protocol, ports = "", {}
    for name in (*PROTOCOLS, "ICMPv4", "ICMPv6"):
        if isinstance(l4.get(name), dict):
            protocol, ports = name, l4[name]
            break
    try:
        src_port, dst_port = int(ports.get("source_port") or 0), int(ports.get("destination_port") or 0)
    except (TypeError, ValueError):
        raise FlowError(f"flow.l4.{protocol}: ports must be integers") from None
    l7 = flow.get("l7") if isinstance(flow.get("l7"), dict) else None
    reply = flow.get("is_reply")
    if reply is None:
        reply = flow.get("reply")  # deprecated, still written by older Hubble versions
    return Flow(
        time=str(flow.get("time") or obj.get("time") or ""),
        src=_end(flow.get("source"), str(ip["source"]), flow.get("source_names")),
        dst=_end(flow.get("destination"), str(ip["destination"]), flow.get("destination_names")),
        protocol=protocol or "unknown", src_port=src_port, dst_port=dst_port,
        verdict=str(flow.get("verdict") or "VERDICT_UNKNOWN"), node=str(flow.get("node_name") or ""),
        direction=str(flow.get("traffic_direction") or ""), is_reply=bool(reply),
        l7={k: v for k, v in l7.items() if k in ("dns", "http")} or None if l7 else None,
        summary=str(flow.get("Summary") or ""),
        drop_reason=str(flow.get("drop_reason_desc") or ""))


def read_hubble(lines: Iterable[str], source: str = "-") -> tuple[list[Flow], list[str]]:
    """Every flow of ``hubble observe -o json`` output (one JSON object per line, blank lines ignored), and a
    problem per line that is not one (``flows.json, line 3: ...``)."""
    flows, problems = [], []
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        try:
            flow = from_hubble(json.loads(text))
        except json.JSONDecodeError as exc:
            problems.append(f"{source}, line {number}: not JSON ({exc.msg}, column {exc.colno})")
            continue
        except FlowError as exc:
            problems.append(f"{source}, line {number}: {exc}")
            continue
        if flow is not None:
            flows.append(flow)
    return flows, problems


def hubble_lines(flows: Iterable[Flow]) -> Iterator[str]:
    for f in flows:
        yield json.dumps(f.to_hubble(), separators=(",", ":")) + "\n"


@dataclass
class FlowLog:
    """The last ``limit`` flows a live cluster saw, oldest first (Hubble keeps a ring buffer of 4,095 by
    default: what is older is gone, and ``lost`` counts it)."""

    limit: int = 4095
    flows: deque[Flow] = field(default_factory=deque)
    lost: int = 0

    def add(self, flows: Iterable[Flow]) -> None:
        for f in flows:
            if len(self.flows) >= self.limit:
                self.flows.popleft()
                self.lost += 1
            self.flows.append(f)

    def last(self, n: int | None = None) -> list[Flow]:
        items = list(self.flows)
        return items if n is None else items[-n:] if n > 0 else []


__all__ = ["DROPPED", "EGRESS", "FORWARDED", "INGRESS", "Flow", "FlowEnd", "FlowError", "FlowLog", "from_hubble",
           "hubble_lines", "read_hubble"]
