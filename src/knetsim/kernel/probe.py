"""Real connections from inside a namespace, and what the kernel did with them.

A probe is a client socket created in the source's namespace (``netns.socket_in``), so its
packets leave through the pod's veth and cross the node's real rules. Outcomes use the
simulation's words (``network.trace.OUTCOMES``):

==============  ==========================================================================
connected       the handshake completed (TCP) or a reply came back (UDP); ``backend`` is
                the pod that answered the probe line and ``seen`` the source it saw
refused         ECONNREFUSED: a TCP reset, or ICMP port unreachable (kube-proxy's REJECT)
timeout         nothing came back within the timeout (a DROP, a policy drop)
no-route        EHOSTUNREACH / ENETUNREACH (ICMP host/net unreachable)
==============  ==========================================================================

DNS probes send one real query (dnspython's wire format) to the pod's nameserver.
"""

from __future__ import annotations

import asyncio
import errno
import socket
from dataclasses import dataclass

import dns.message
import dns.rcode
import dns.rdatatype

from .listeners import PROBE
from .netns import socket_in

TIMEOUT = 1.5  # seconds; every answer in a topology comes back in well under a millisecond
RESOLVER_ATTEMPTS = 2  # glibc's and musl's default resolv.conf `attempts`
SO_MARK = 36


@dataclass(frozen=True, slots=True)
class Probe:
    outcome: str
    backend: str = ""  # pod key that answered
    seen: str = ""  # the source address the backend saw
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"outcome": self.outcome}
        if self.backend:
            out["backend"] = self.backend
        if self.seen:
            out["seenSource"] = self.seen
        if self.detail:
            out["detail"] = self.detail
        return out


def _error(exc: OSError) -> Probe:
    if isinstance(exc, ConnectionRefusedError) or exc.errno == errno.ECONNREFUSED:
        return Probe("refused", detail="connection refused")
    if exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return Probe("no-route", detail=exc.strerror or str(exc))
    return Probe("timeout" if exc.errno == errno.ETIMEDOUT else "no-route", detail=exc.strerror or str(exc))


async def _exchange(loop: asyncio.AbstractEventLoop, sock: socket.socket, msg: dns.message.Message,
                    timeout: float, attempts: int) -> dns.message.Message:
    for attempt in range(attempts):
        await loop.sock_sendall(sock, msg.to_wire())
        try:
            while True:
                reply = dns.message.from_wire(await asyncio.wait_for(loop.sock_recv(sock, 65535), timeout))
                if reply.id == msg.id:
                    return reply
        except TimeoutError:
            if attempt == attempts - 1:
                raise
    raise TimeoutError


def _client(netns: str, kind: int, src: str | None, mark: int, dst: str = "") -> socket.socket:
    sock = socket_in(netns, kind, family=socket.AF_INET6 if ":" in dst else socket.AF_INET)
    if mark:
        sock.setsockopt(socket.SOL_SOCKET, SO_MARK, mark)
    if src:
        sock.bind((src, 0))
    return sock


def _parse(answer: bytes) -> tuple[str, str]:
    key, _, seen = answer.decode(errors="replace").strip().partition(" ")
    return key, seen


async def tcp(netns: str, dst: str, port: int, *, src: str | None = None, mark: int = 0,
              timeout: float = TIMEOUT) -> Probe:
    loop = asyncio.get_running_loop()
    sock = _client(netns, socket.SOCK_STREAM, src, mark, dst)
    try:
        try:
            await asyncio.wait_for(loop.sock_connect(sock, (dst, port)), timeout)
        except TimeoutError:
            return Probe("timeout", detail=f"no answer within {timeout:g}s")
        except OSError as exc:
            return _error(exc)
        try:
            await loop.sock_sendall(sock, PROBE)
            data = await asyncio.wait_for(loop.sock_recv(sock, 512), timeout)
        except (OSError, TimeoutError):
            return Probe("connected", detail="connected; the listener did not answer the probe line")
        key, seen = _parse(data)
        return Probe("connected", key, seen)
    finally:
        sock.close()


async def udp(netns: str, dst: str, port: int, *, src: str | None = None, mark: int = 0,
              timeout: float = TIMEOUT) -> Probe:
    loop = asyncio.get_running_loop()
    sock = _client(netns, socket.SOCK_DGRAM, src, mark, dst)
    try:
        try:
            sock.connect((dst, port))  # a connected UDP socket reports ICMP port unreachable as ECONNREFUSED
            await loop.sock_sendall(sock, PROBE)
            data = await asyncio.wait_for(loop.sock_recv(sock, 512), timeout)
        except TimeoutError:
            return Probe("timeout", detail=f"no answer within {timeout:g}s")
        except OSError as exc:
            return _error(exc)
        key, seen = _parse(data)
        return Probe("connected", key, seen)
    finally:
        sock.close()


async def connect(netns: str, dst: str, port: int, protocol: str, **kw: object) -> Probe:
    if protocol == "UDP":
        return await udp(netns, dst, port, **kw)  # type: ignore[arg-type]
    return await tcp(netns, dst, port, **kw)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class DnsAnswer:
    outcome: str  # ok | nxdomain | nodata | servfail | timeout | refused | no-route
    addresses: tuple[str, ...] = ()
    cnames: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.outcome == "ok":
            return ", ".join(self.addresses)
        if self.cnames:
            return f"{self.outcome} (CNAME {', '.join(self.cnames)})"
        return self.outcome


async def query(netns: str, nameserver: str, name: str, qtype: str = "A", *, timeout: float = TIMEOUT,
                attempts: int = RESOLVER_ATTEMPTS) -> DnsAnswer:
    """A UDP query as a stub resolver sends it (recursion desired), sent again after each timeout as the
    resolver does (resolv.conf ``attempts``): on a busy machine one datagram's answer may come late,
    and a single try would read that as the policy dropping DNS."""
    loop = asyncio.get_running_loop()
    msg = dns.message.make_query(name, qtype)
    sock = _client(netns, socket.SOCK_DGRAM, None, 0, nameserver)
    try:
        try:
            sock.connect((nameserver, 53))
            reply = await _exchange(loop, sock, msg, timeout, attempts)
        except TimeoutError:
            return DnsAnswer("timeout")
        except OSError as exc:
            return DnsAnswer(_error(exc).outcome)
    finally:
        sock.close()
    rcode = reply.rcode()
    cnames = tuple(str(rd.target) for rrset in reply.answer if rrset.rdtype == dns.rdatatype.CNAME for rd in rrset)
    addresses = tuple(sorted(rd.address for rrset in reply.answer
                             if rrset.rdtype in (dns.rdatatype.A, dns.rdatatype.AAAA) for rd in rrset))
    if rcode == dns.rcode.NXDOMAIN:
        return DnsAnswer("nxdomain", (), cnames)
    if rcode != dns.rcode.NOERROR:
        return DnsAnswer(dns.rcode.to_text(rcode).lower(), (), cnames)
    return DnsAnswer("ok" if addresses else "nodata", addresses, cnames)
