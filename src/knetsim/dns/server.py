"""The cluster DNS on a loopback port, for the real ``dig`` (UDP and TCP, dnspython wire format).

    server = DNSServer(state)
    host, port = await server.start("127.0.0.1", 0)   # 0: any free port, the same for UDP and TCP
    server.update(new_state)                            # the cluster changed (cheap: indexed on the next query)
    await server.close()

Answers come from ``records.ClusterDNS`` and carry what CoreDNS sets: ``aa`` on everything
the kubernetes plugin answers, no ``ra`` (so dig warns "recursion requested but not
available", as it does against kube-dns), the SOA in the authority section of NXDOMAIN and
NODATA, EDNS echoed when the query had it, and TC over UDP when the answer does not fit.
Names outside the cluster domain are answered as a cluster without upstream access answers
them: SERVFAIL (CoreDNS's ``forward`` cannot reach ``/etc/resolv.conf``'s nameservers).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Callable, Iterable

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from ..cluster.state import ClusterState
from .records import Answer, ClusterDNS, Record, Upstream

UDP_DEFAULT_SIZE = 512  # RFC 1035 4.2.1, when the query carries no EDNS payload size


class DNSServer:
    """An asyncio DNS server answering a ClusterState's records; ``update`` swaps the state."""

    def __init__(self, state: ClusterState, *, upstream: Upstream | None = None, ttl: int | None = None,
                 pods: str | None = None) -> None:
        self._options = {"upstream": upstream or Upstream(mode="servfail"), "ttl": ttl, "pods": pods}
        self._dns = self._build(state)
        self._pending: ClusterState | None = None
        self._source: Callable[[], ClusterState] | None = None
        self._followed: ClusterState | None = None
        self._udp: asyncio.DatagramTransport | None = None
        self._tcp: asyncio.Server | None = None
        self._tcp_clients: set[asyncio.Task[None]] = set()
        self.address: tuple[str, int] | None = None

    def _build(self, state: ClusterState) -> ClusterDNS:
        ttl, pods = self._options["ttl"], self._options["pods"]
        return ClusterDNS(state, ttl=ttl,  # type: ignore[arg-type]
                          pods=pods, upstream=self._options["upstream"])  # type: ignore[arg-type]

    @property
    def cluster_dns(self) -> ClusterDNS:
        """The records answered now: the last state given to ``update`` (or the followed source's current
        one), indexed on first use (a burst of changes between two queries costs one index, not one each)."""
        if self._source is not None:
            state = self._source()
            if state is not self._followed:
                self._followed, self._pending = state, state
        if self._pending is not None:
            self._dns, self._pending = self._build(self._pending), None
        return self._dns

    def follow(self, source: Callable[[], ClusterState]) -> None:
        """Answer each query from ``source()``'s state (a live cluster: the answer is never behind a write)."""
        self._source = source

    def update(self, state: ClusterState) -> None:
        """Serve ``state`` from the next query on. The swap is one assignment: a query sees old or new,
        never a mix."""
        self._pending = state

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> tuple[str, int]:
        """Listen on ``host:port`` over UDP and TCP; port 0 picks a port free for both."""
        loop = asyncio.get_running_loop()
        for _ in range(20):
            transport, _protocol = await loop.create_datagram_endpoint(
                lambda: _UDPProtocol(self), local_addr=(host, port))
            bound = transport.get_extra_info("sockname")[1]
            try:
                self._tcp = await asyncio.start_server(self._serve_tcp, host, bound)
            except OSError:
                transport.close()
                if port:
                    raise
                continue  # the UDP port was free but its TCP twin is taken: pick again
            self._udp = transport
            self.address = (host, bound)
            return self.address
        raise OSError(f"no port on {host} is free for both UDP and TCP")

    async def close(self) -> None:
        if self._udp is not None:
            self._udp.close()
            self._udp = None
        if self._tcp is not None:
            self._tcp.close()
            for task in list(self._tcp_clients):
                task.cancel()
            with contextlib.suppress(Exception):
                await self._tcp.wait_closed()
            self._tcp = None

    async def __aenter__(self) -> DNSServer:
        if self.address is None:
            await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- wire format ---------------------------------------------------------------------

    def handle(self, wire: bytes, *, tcp: bool = False) -> bytes | None:
        """One query in wire format → the response in wire format (None: not worth an answer)."""
        try:
            query = dns.message.from_wire(wire)
        except dns.message.ShortHeader:
            return None
        except (dns.exception.DNSException, ValueError):
            return _formerr(wire)
        if query.flags & dns.flags.QR:
            return None  # a response sent to us: never answer those
        response = dns.message.make_response(query)
        response.flags &= ~dns.flags.RA
        if query.opcode() != dns.opcode.QUERY:
            response.set_rcode(dns.rcode.NOTIMP)
        elif len(query.question) != 1:
            response.set_rcode(dns.rcode.FORMERR)
        else:
            question = query.question[0]
            qtype = dns.rdatatype.to_text(question.rdtype)
            if question.rdclass != dns.rdataclass.IN or qtype in ("AXFR", "IXFR"):
                response.set_rcode(dns.rcode.REFUSED)
            else:
                dns_now = self.cluster_dns
                if not dns_now.serving:
                    # No CoreDNS pod is ready, or CoreDNS cannot start with its Corefile: nothing answers, the
                    # client times out (dns/coredns.py).
                    return None
                fill(response, dns_now.query(question.name.to_text(), qtype))
        max_size = 65535 if tcp else max(UDP_DEFAULT_SIZE, query.payload if query.edns >= 0 else 0)
        # dnspython shuffles RRsets by default; sorted answers keep runs comparable.
        return response.to_wire(max_size=max_size, prefer_truncation=True, want_shuffle=False)

    async def _serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tcp_clients.add(task)
        try:
            while True:
                header = await reader.readexactly(2)
                (length,) = struct.unpack("!H", header)
                wire = await reader.readexactly(length)
                reply = self.handle(wire, tcp=True)
                if reply is None:
                    break
                writer.write(struct.pack("!H", len(reply)) + reply)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            if task is not None:
                self._tcp_clients.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


class _UDPProtocol(asyncio.DatagramProtocol):
    def __init__(self, server: DNSServer) -> None:
        self.server = server
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        reply = self.server.handle(data)
        if reply is not None and self.transport is not None:
            self.transport.sendto(reply, addr)


def fill(response: dns.message.Message, answer: Answer) -> None:
    """Copy an ``Answer`` into a dnspython response: rcode, flags and the three sections."""
    response.set_rcode(dns.rcode.from_text(answer.rcode))
    if answer.authoritative:
        response.flags |= dns.flags.AA
    if answer.recursion_available:
        response.flags |= dns.flags.RA
    response.answer = _rrsets(answer.answer)
    response.authority = _rrsets(answer.authority)
    response.additional = _rrsets(answer.additional)


def _rrsets(records: Iterable[Record]) -> list[dns.rrset.RRset]:
    """Group records into RRsets in order of first appearance, as they go on the wire."""
    grouped: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        grouped.setdefault((record.name.lower(), record.type), []).append(record)
    out = []
    for rows in grouped.values():
        first = rows[0]
        out.append(dns.rrset.from_text(dns.name.from_text(first.name), min(r.ttl for r in rows), "IN",
                                       first.type, *(r.data for r in rows)))
    return out


def _formerr(wire: bytes) -> bytes | None:
    if len(wire) < 12:
        return None
    # Echo the id, set QR and FORMERR, no sections: all that can be said about a broken query.
    ident, flags = struct.unpack("!HH", wire[:4])
    flags = (flags | 0x8000) & 0xFBF0 | dns.rcode.FORMERR
    return struct.pack("!HHHHHH", ident, flags, 0, 0, 0, 0)
