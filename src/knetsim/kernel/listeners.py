"""The processes of the pods, as far as the network sees them: listeners that answer as the simulation does.

Every port ``model.listeners.pod_listens`` says a pod listens on gets a real socket in the
pod's namespace (hostNetwork pods: in their node's). What it answers:

* an HTTP request: the simulated app's reply (``network.app.app_reply``: status, body naming
  the pod; a server that does not speak HTTP closes without a reply);
* the CoreDNS pods' port 53 (UDP and TCP): knetsim's DNS server (``dns.server.DNSServer``);
* a probe line (``PROBE``, what ``verify`` sends): the pod's key and the source address the
  pod saw, so a probe learns which backend answered and whether it was masqueraded;
* anything else on TCP: read and ignored until the client closes, as a server that waits for
  its own protocol would.

All sockets are served by one asyncio loop on one thread (``Reactor``); the ``Context``
holds the ClusterState the replies come from and is swapped, not mutated, on an update.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
import threading
from collections.abc import Awaitable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..cluster.state import ClusterState
from ..dns.records import Answer, ClusterDNS
from ..dns.server import DNSServer
from ..model.listeners import image_repository
from ..network.app import app_reply
from ..network.egress import outside_reply
from ..network.trace import Target
from .netns import socket_in

PROBE = b"KNETSIM-PROBE\n"
UPSTREAM_KEY = "node-resolver"  # the listener key of the nameserver at the Docker network's gateway
OUTSIDE_PREFIX = "outside/"  # listener keys of the world outside's hosts (cluster/outside.py), in ``ext``
HTTP_METHODS = (b"GET ", b"HEAD ", b"POST ", b"PUT ", b"DELETE ", b"PATCH ", b"OPTIONS ")
REASONS = {200: "OK", 308: "Permanent Redirect", 403: "Forbidden", 404: "Not Found", 405: "Not Allowed",
           502: "Bad Gateway",
           503: "Service Unavailable", 504: "Gateway Timeout"}
IDLE = 30.0  # an idle client is dropped after this long (a real server would wait longer)

log = logging.getLogger("knetsim.kernel")
T = TypeVar("T")


class Reactor:
    """One asyncio loop on a daemon thread: every listener and probe of a topology runs here."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="knetsim-kernel", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


class UpstreamDNS(DNSServer):
    """The node's nameserver (``172.18.0.1``, where a kind node's resolv.conf points), and the outside's
    public resolvers: every name is answered by the world outside (the cluster config's outside, as the
    offline resolver answers it: pods with dnsPolicy Default, CoreDNS's ``forward``)."""

    def _build(self, state: ClusterState) -> ClusterDNS:
        cluster = super()._build(state)
        return _ForwardOnly(cluster)


class _ForwardOnly:
    # The world's resolvers answer whatever becomes of CoreDNS: this server is not CoreDNS (dns/server.py asks).
    serving = True

    def __init__(self, cluster: ClusterDNS) -> None:
        self._cluster = cluster

    def query(self, name: str, qtype: str) -> Answer:
        return self._cluster.upstream.answer(name, qtype, self._cluster.external_targets)


@dataclass
class Context:
    state: ClusterState
    dataplane: str
    dns: DNSServer
    upstream: DNSServer


def serves_dns(state: ClusterState, key: str) -> bool:
    pod = state.pods.get(key)
    if pod is None:
        return False
    return pod.labels.get("k8s-app") == "kube-dns" or any(image_repository(c.image) == "coredns"
                                                           for c in pod.containers)


@dataclass
class PodListeners:
    """The open sockets of one pod (or of one hostNetwork pod in its node's namespace)."""

    key: str
    netns: str
    servers: list[asyncio.AbstractServer] = field(default_factory=list)
    transports: list[asyncio.BaseTransport] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def close(self) -> None:
        for s in self.servers:
            s.close()
        for t in self.transports:
            t.close()
        self.servers.clear()
        self.transports.clear()


async def open_listeners(ctx_ref: list[Context], key: str, netns: str, ports: tuple[tuple[int, str], ...],
                         address: str | tuple[str, ...] = "0.0.0.0") -> PodListeners:
    """Bind every (port, protocol) in ``netns`` on ``address`` (or each of several: ``("0.0.0.0", "::")`` on a
    dual-stack topology, an IPv4 and an IPv6-only socket per port); runs on the reactor loop."""
    loop = asyncio.get_running_loop()
    out = PodListeners(key, netns)
    addresses = (address,) if isinstance(address, str) else address
    for port, proto in ports:
        if proto not in ("TCP", "UDP"):
            out.failed.append(f"{port}/{proto}: not served (kernel mode serves TCP and UDP)")
            continue
        for addr in addresses:
            family = socket.AF_INET6 if ":" in addr else socket.AF_INET
            try:
                if proto == "TCP":
                    sock = _bound(netns, socket.SOCK_STREAM, family, addr, port)
                    sock.listen(256)
                    server = await asyncio.start_server(_tcp_handler(ctx_ref, key, port), sock=sock)
                    out.servers.append(server)
                else:
                    sock = _bound(netns, socket.SOCK_DGRAM, family, addr, port)
                    transport, _ = await loop.create_datagram_endpoint(lambda p=port: _Udp(ctx_ref, key, p),
                                                                       sock=sock)
                    out.transports.append(transport)
            except OSError as exc:
                out.failed.append(f"{port}/{proto}{f' on {addr}' if len(addresses) > 1 else ''}: "
                                  f"{exc.strerror or exc}")
    return out


def _bound(netns: str, kind: int, family: int, address: str, port: int) -> socket.socket:
    sock = socket_in(netns, kind, family=family)
    try:
        if kind == socket.SOCK_STREAM:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            # Beside the IPv4 socket on the same port, as a dual-stack server binds both.
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((address, port))
    except OSError:
        sock.close()
        raise
    return sock


def probe_answer(key: str, peer: Any) -> bytes:
    host = peer[0] if isinstance(peer, tuple) and peer else "?"
    return f"{key} {host}\n".encode()


def _tcp_handler(ctx_ref: list[Context], key: str, port: int) -> Any:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        try:
            first = await asyncio.wait_for(reader.read(65536), IDLE)
            if first.startswith(PROBE):
                writer.write(probe_answer(key, peer))
            elif port == 53 and (dns := _dns_for(ctx_ref[0], key)) is not None:
                await _dns_tcp(dns, first, reader, writer)
            elif first.startswith(HTTP_METHODS):
                await _http(ctx_ref[0], key, port, peer, first, reader, writer)
            else:
                while first:
                    first = await asyncio.wait_for(reader.read(65536), IDLE)
            await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:  # one bad request must not stop the listener
            log.exception("listener %s:%d", key, port)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
    return handle


def _dns_for(ctx: Context, key: str) -> DNSServer | None:
    if key == UPSTREAM_KEY or key.startswith(OUTSIDE_PREFIX):
        return ctx.upstream
    return ctx.dns if serves_dns(ctx.state, key) else None


async def _dns_tcp(dns: DNSServer, buffered: bytes, reader: asyncio.StreamReader,
                   writer: asyncio.StreamWriter) -> None:
    data = buffered
    while True:
        while len(data) < 2 or len(data) < 2 + struct.unpack("!H", data[:2])[0]:
            more = await asyncio.wait_for(reader.read(65536), IDLE)
            if not more:
                return
            data += more
        length = struct.unpack("!H", data[:2])[0]
        wire, data = data[2:2 + length], data[2 + length:]
        reply = dns.handle(wire, tcp=True)
        if reply is None:
            return
        writer.write(struct.pack("!H", len(reply)) + reply)
        await writer.drain()


async def _http(ctx: Context, key: str, port: int, peer: Any, first: bytes, reader: asyncio.StreamReader,
                writer: asyncio.StreamWriter) -> None:
    data = first
    while b"\r\n\r\n" not in data and b"\n\n" not in data and len(data) < 65536:
        more = await asyncio.wait_for(reader.read(65536), IDLE)
        if not more:
            break
        data += more
    head = data.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0].decode("latin-1")
    lines = head.replace("\r\n", "\n").split("\n")
    method, _, rest = lines[0].partition(" ")
    path = rest.rsplit(" ", 1)[0] if " " in rest else rest
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    host = headers.get("host", "").rsplit(":", 1)[0] if headers.get("host") else ""
    state = ctx.state
    pod = state.pods.get(key)
    outside = state.config.outside.hosts.get(key[len(OUTSIDE_PREFIX):]) if key.startswith(OUTSIDE_PREFIX) else None
    if outside is not None:
        answer = outside_reply(outside, method, path or "/")
        status, body, ctype = answer.status or 200, answer.body, answer.headers.get("content-type", "text/html")
    elif pod is None:
        status, body, ctype = 200, f"Hello from {key}\n", "text/plain"
    else:
        peer_ip = peer[0] if isinstance(peer, tuple) else ""
        src = state.pod_by_ip(peer_ip) or peer_ip
        target = Target("http", host or pod.pod_ip, port, path or "/")
        _, reply = app_reply(state, ctx.dataplane, src, pod, port, target, method, headers)
        if reply is None:
            return  # the server does not speak HTTP: the client gets an empty reply
        status, body = reply.status or 200, reply.body
        ctype = dict(reply.headers).get("content-type", "text/plain")
    payload = b"" if method == "HEAD" else body.encode()
    writer.write((f"HTTP/1.1 {status} {REASONS.get(status, 'OK')}\r\nContent-Type: {ctype}\r\n"
                  f"Content-Length: {len(body.encode())}\r\nConnection: close\r\n\r\n").encode() + payload)


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, ctx_ref: list[Context], key: str, port: int) -> None:
        self.ctx_ref, self.key, self.port = ctx_ref, key, port
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        if self.transport is None:
            return
        if data.startswith(PROBE):
            self.transport.sendto(probe_answer(self.key, addr), addr)
        elif self.port == 53 and (dns := _dns_for(self.ctx_ref[0], self.key)) is not None:
            reply = dns.handle(data)
            if reply is not None:
                self.transport.sendto(reply, addr)

    def error_received(self, exc: Exception) -> None:  # ICMP errors for replies: nothing to do
        pass


async def gather_bounded(coros: list[Awaitable[T]], limit: int) -> list[T]:
    """``asyncio.gather`` with at most ``limit`` running at once (file descriptors are finite)."""
    gate = asyncio.Semaphore(limit)

    async def one(c: Awaitable[T]) -> T:
        async with gate:
            return await c
    return list(await asyncio.gather(*(one(c) for c in coros)))
