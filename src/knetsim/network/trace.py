"""One connection, end to end, layer by layer: the Trace.

The stages run in the order of DESIGN.md and each one either answers (a verdict that ends
the trace) or passes to the next:

    dns → service → endpoints → dataplane → policy → listener → app

* **dns** — the source pod's resolver (search list, ndots) against cluster DNS. Each query is
  itself a UDP flow to kube-dns through the data plane and NetworkPolicy: when the pod may
  not reach any CoreDNS pod on 53/UDP the outcome is ``dns-timeout`` (busybox: ``bad
  address``), which is not the same as ``nxdomain``.
* **service** — which Service owns the destination address and whether it exposes the port.
* **endpoints** — the Service's EndpointSlices; no ready endpoint means the data plane
  rejects (``refused``), as kube-proxy's REJECT rule does.
* **dataplane** — the configured backend (iptables, nftables, ebpf) traces the packet through
  the rules it rendered and names the possible DNAT targets; one is chosen deterministically
  from the source address, and the others are checked too (a finding when they differ).
* **policy** — egress of the source, then ingress of the destination, on the post-DNAT pod IP
  and port; a drop is a ``timeout``.
* **listener** — does anything in the destination pod listen on that port? Else ``refused``.
* **app** — the simulated reply (an HTTP status and a body naming the pod).

External clients enter through an Ingress (client → controller pod → backend pod; policy
applies to the hop from the controller pod), a NodePort on a node IP, or a LoadBalancer IP.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..model.listeners import LISTEN_ANNOTATION, container_listens, listen_source, listeners_known, pod_listens
from ..model.objects import Pod, Service, ServicePort

LAYERS = ("dns", "service", "endpoints", "dataplane", "policy", "listener", "app")
OUTCOMES = ("connected", "refused", "timeout", "dns-timeout", "nxdomain", "no-route")
EXTERNAL_CLIENT_IP = "203.0.113.10"  # TEST-NET-3: an address on the Internet, outside every cluster range
# The same client's IPv6 address (the documentation prefix, RFC 3849), for IPv6 destinations.
EXTERNAL_CLIENT_IP6 = "2001:db8:203::10"
# How long a client waits on what the trace calls a timeout, where it sets no limit of its own.
KERNEL_CONNECT_TIMEOUT = 127.0  # Linux's tcp_syn_retries=6: 1+2+4+8+16+32+64 s
RESOLVER_TIMEOUT = 10.0  # musl/busybox's resolver: timeout 5 s, attempts 2


def external_client_ip(destination: str) -> str:
    """The external client's address of ``destination``'s family."""
    return EXTERNAL_CLIENT_IP6 if ":" in destination else EXTERNAL_CLIENT_IP


class TraceInputError(ValueError):
    """A source or target the trace cannot start from (maps to exit code 2)."""


@dataclass(frozen=True, slots=True)
class Hop:
    layer: str
    verdict: str  # ok | fail | skip | info
    detail: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"layer": self.layer, "verdict": self.verdict, "detail": self.detail}
        out.update(self.data)
        return out


@dataclass(frozen=True, slots=True)
class Backend:
    pod: str
    ip: str
    port: int
    # The source address the backend sees: the client's own address of the connection's family, or
    # the node's when the data plane masqueraded ("" where no packet reached a pod). Its access log
    # writes this one; to_dict leaves it out (the hops say it).
    client_ip: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"pod": self.pod, "ip": self.ip, "port": self.port}


@dataclass(frozen=True, slots=True)
class Reply:
    status: int | None
    body: str
    headers: Mapping[str, str] = field(default_factory=dict)
    # Who wrote the answer, which decides the header lines on the wire (``network.wire``): "nginx" (the
    # ingress controller), "envoy" (a Gateway's or Cilium's proxy, its own local reply), "" (the pod's server).
    writer: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "body": self.body, "headers": dict(self.headers)}


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    layer: str
    message: str
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "layer": self.layer, "message": self.message, "fix": self.fix}


@dataclass(frozen=True, slots=True)
class Target:
    scheme: str  # http | https | tcp | udp
    host: str
    port: int
    path: str
    query: str = ""  # the URL's query string, without '?' (Gateway API query matches read it)

    def __str__(self) -> str:
        if self.scheme in ("http", "https"):
            return f"{self.scheme}://{self.host}:{self.port}{self.path}"
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Trace:
    source: str
    target: str
    protocol: str
    outcome: str
    backend: Backend | None
    hops: tuple[Hop, ...]
    findings: tuple[Finding, ...] = ()
    reply: Reply | None = None
    dataplane: str = "iptables"

    @property
    def connected(self) -> bool:
        return self.outcome == "connected"

    @property
    def failing_hop(self) -> Hop | None:
        return next((h for h in self.hops if h.verdict == "fail"), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "target": self.target,
            "protocol": self.protocol,
            "dataplane": self.dataplane,
            "outcome": self.outcome,
            "backend": self.backend.to_dict() if self.backend else None,
            "hops": [h.to_dict() for h in self.hops],
            "findings": [f.to_dict() for f in self.findings],
            "reply": self.reply.to_dict() if self.reply else None,
        }


# --- parsing --------------------------------------------------------------------------


def parse_target(text: str, protocol: str = "TCP") -> Target:
    """``http://web.default:80/api``, ``https://host/``, ``name:port``, ``ip:port`` or a bare name (port 80)."""
    text = text.strip()
    if not text:
        raise TraceInputError("empty target")
    if "://" in text:
        try:
            parts = urlsplit(text)
        except ValueError as exc:  # an unclosed "[" (IPv6 literal), a port that is no number
            raise TraceInputError(f"target {text!r}: {exc}") from None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https", "tcp", "udp"):
            raise TraceInputError(f"target {text!r}: unsupported scheme {scheme!r} (http, https, tcp, udp)")
        if not parts.hostname:
            raise TraceInputError(f"target {text!r}: no host")
        try:
            given = parts.port
        except ValueError:  # a port that is no number, or one above 65535
            if not parts.netloc.rpartition(":")[2].isdigit():
                raise TraceInputError(f"target {text!r}: invalid port") from None
            given = 65536
        if given is not None and not 1 <= given <= 65535:  # ":0" is no port to connect to, not the default one
            raise TraceInputError(f"target {text!r}: port must be between 1 and 65535, inclusive")
        port = given or {"http": 80, "https": 443}.get(scheme)
        if port is None:
            raise TraceInputError(f"target {text!r}: a {scheme} target needs a port")
        return Target(scheme, parts.hostname, port, parts.path or "/", parts.query)
    if text.startswith("["):
        # An IPv6 literal, net.JoinHostPort-style: [fd00:10:96::a]:80, or [fd00:10:96::a] (port 80).
        host, close, rest = text[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            raise TraceInputError(f"target {text!r}: an IPv6 address goes in brackets, then :port")
        port_text = rest[1:] if rest else "80"
    elif text.count(":") > 1:
        host, port_text = text, "80"  # a bare IPv6 address: no port can follow it unbracketed
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            host, port_text = text, "80"
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise TraceInputError(f"target {text!r}: port must be between 1 and 65535, inclusive")
    scheme = "http" if protocol == "TCP" and int(port_text) in (80, 8080) else protocol.lower()
    return Target(scheme, host, int(port_text), "/")


def choose(candidates: list[Any], key: str) -> int:
    """A deterministic pick among equal candidates (stands in for the kernel's random choice)."""
    if not candidates:
        raise ValueError("no candidates")
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:4], "big") % len(candidates)


def service_port_for(svc: Service, port: int, protocol: str, *, node_port: bool = False) -> ServicePort | None:
    for sp in svc.ports:
        if sp.protocol != protocol:
            continue
        if (sp.node_port if node_port else sp.port) == port:
            return sp
    return None


def listening(pod: Pod, port: int, protocol: str) -> bool:
    return (port, protocol) in pod_listens(pod)


# The waiting reasons of a container that is not running now and will not be soon: its port has no socket.
_NOT_RUNNING = frozenset({"CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "ErrImagePull",
                          "ImagePullBackOff", "InvalidImageName", "RunContainerError"})


def _down_serving(pod: Pod, port: int, protocol: str) -> tuple[str, str] | None:
    """(container, waiting reason) of the container that would serve ``port`` while it is not running (a crash
    loop, a config it waits for): between restarts no process holds the socket, so the kernel refuses."""
    waiting = pod.waiting_reasons()
    for container in pod.containers:
        reason = waiting.get(container.name, "")
        if reason in _NOT_RUNNING and (port, protocol) in container_listens(container):
            return container.name, reason
    return None


def listener_hop(pod: Pod, port: int, protocol: str) -> Hop:
    down = _down_serving(pod, port, protocol) if listening(pod, port, protocol) else None
    if down is not None:
        return Hop("listener", "fail",
                   f"container {down[0]!r} of {pod.key}, which would listen on {port}/{protocol}, is not running "
                   f"({down[1]}): connection refused", {"container": down[0], "waiting": down[1]})
    if listening(pod, port, protocol):
        return Hop("listener", "ok", f"{pod.key} listens on {port}/{protocol} ({listen_source(pod, port, protocol)})")
    ports = ", ".join(f"{p}/{proto}" for p, proto in pod_listens(pod)) or "nothing"
    # An image knetsim does not know: its declared ports are an assumption, and the refusal says so.
    caveat = "" if listeners_known(pod) else (f"; assumed: {', '.join(sorted({c.image for c in pod.containers}))} "
                                              f"is not an image knetsim knows (annotate {LISTEN_ANNOTATION} if it "
                                              "listens elsewhere)")
    return Hop("listener", "fail",
               f"nothing in {pod.key} listens on {port}/{protocol} (it listens on {ports}): connection refused{caveat}",
               {"listening": [list(p) for p in pod_listens(pod)]})
