"""Every Gateway listener reachable from the machine: one loopback socket per Gateway port, answering as the
Gateway's Envoy would, so real clients (curl, openssl s_client, nc, dig, gRPC clients) talk to it.

A Gateway's ports are bound on 127.0.0.1 as soon as a listener there is programmed (an ephemeral local port
each: the listener's own port may be privileged or taken), and closed when none is left; ``describe()``
lists them (gateway, listener, protocol, port, local address) for ``ready.json`` and ``knetsim status``.
What a connection gets is decided by ``knetsim.gateway`` from the live cluster's state at that moment:

* **HTTP** (HTTP/1.1, or HTTP/2 with prior knowledge: gRPC's cleartext h2c) and **HTTPS**: the TLS
  handshake of ``gateway.handshake`` for real — the ClientHello's SNI selects the listener and its
  Secret's certificate is served, client certificates are asked for where the Gateway validates them,
  ALPN offers h2 and http/1.1 — then ``gateway.route`` (or ``route_grpc`` for ``application/grpc``)
  with the connection's SNI: a 421 for a Host of another listener, Envoy's own 404/500/503, redirects;
  a proxied request goes from the proxy pod to the chosen endpoint through ``network.trace`` (policy,
  listener, the app's answer), and a gRPC call to an echo-basic pod gets its echo service's answer;
* **TLS**: passthrough hands the handshake to the backend pod's own TLS server (its mounted certificate,
  or one derived from its identity), terminate completes it with the listener's certificate; then the
  backend answers the decrypted stream — HTTP if the client speaks HTTP, else as an echo server;
* **TCP** and **UDP**: the listener's route's backend answers as an echo server (UDP to a CoreDNS pod:
  the cluster's DNS answers, as that CoreDNS would).

A connection the Gateway would refuse is closed; a datagram it would drop gets nothing.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging
import os
import ssl
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any

import h11
from cryptography import x509
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import ConnectionTerminated, DataReceived, RequestReceived, StreamEnded, StreamReset
from h2.exceptions import ProtocolError

from ..container.accesslog import Served
from ..gateway import envoypolicies, route, translate
from ..gateway.backendtls import pod_certificate
from ..gateway.certs import ServingCertificate
from ..gateway.grpc import GRPCCall, route_grpc
from ..gateway.handshake import handshake, serving_certificate
from ..gateway.listeners import FrontendValidation, ListenerContext
from ..gateway.streams import route_stream
from ..gateway.upstream import Endpoint, choose_endpoint
from ..model.http import HTTPRequest, HTTPRequestError
from ..model.programs import image_repository
from ..network.trace import EXTERNAL_CLIENT_IP, TraceInputError
from ..network.tracer import trace
from . import grpcecho
from .tlsstream import NotTLS, PlainStream, TLSStream, read_client_hello

log = logging.getLogger("knetsim.daemon")
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HTTP_METHODS = (b"GET ", b"POST ", b"PUT ", b"HEAD ", b"DELETE ", b"PATCH ", b"OPTIONS ", b"CONNECT ", b"TRACE ")
ENVOY_BODIES = {503: "no healthy upstream", 421: "", 404: "", 500: ""}
# Envoy's HTTP → gRPC status for its local replies to gRPC requests (Grpc::Utility::httpToGrpcStatus).
_HTTP_TO_GRPC = {400: 13, 401: 16, 403: 7, 404: 12, 429: 14, 502: 14, 503: 14, 504: 14}
Key = tuple[str, int, str]  # (gateway namespace/name, listener port, TCP | UDP)


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


async def _rest_of_request(conn: h11.Connection, io: Any) -> bool:
    """Read the request's body up to its end (False: the client went away first). Only an h11 that needs
    more bytes is given more: a body that came with the headers is already buffered."""
    while True:
        event = conn.next_event()
        if isinstance(event, h11.EndOfMessage):
            return True
        if event is h11.NEED_DATA:
            if conn.they_are_waiting_for_100_continue:  # Envoy answers Expect: 100-continue itself
                await io.send(conn.send(h11.InformationalResponse(status_code=100, headers=[])))
            data = await io.recv()
            if not data:
                return False
            conn.receive_data(data)


_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3


def _wants_websocket(method: bytes, headers: list[tuple[str, str]]) -> bool:
    lower = {n.lower(): v.lower() for n, v in headers}
    return method == b"GET" and lower.get("upgrade", "") == "websocket" and "upgrade" in lower.get("connection", "")


def _ws_frame(data: bytes) -> tuple[int, bytes, int] | None:
    """One client frame (RFC 6455 section 5.2): (FIN and opcode byte, unmasked payload, bytes used); None: more
    bytes are needed."""
    if len(data) < 2:
        return None
    length, at = data[1] & 0x7F, 2
    if length == 126:
        if len(data) < 4:
            return None
        length, at = int.from_bytes(data[2:4], "big"), 4
    elif length == 127:
        if len(data) < 10:
            return None
        length, at = int.from_bytes(data[2:10], "big"), 10
    masked = bool(data[1] & 0x80)
    mask = data[at:at + 4] if masked else b""
    at += 4 if masked else 0
    if len(data) < at + length:
        return None
    payload = data[at:at + length]
    if masked:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return data[0], payload, at + length


def _ws_encode(fin_opcode: int, payload: bytes) -> bytes:
    """A server frame: never masked (section 5.1)."""
    size = len(payload)
    if size < 126:
        head = bytes([fin_opcode, size])
    elif size < 1 << 16:
        head = bytes([fin_opcode, 126]) + size.to_bytes(2, "big")
    else:
        head = bytes([fin_opcode, 127]) + size.to_bytes(8, "big")
    return head + payload


def _transport(protocol: str) -> str:
    return "UDP" if protocol == "UDP" else "TCP"


def desired(state: Any) -> set[Key]:
    """The ports Envoy listens on: each port of a programmed Gateway with a programmed listener."""
    out: set[Key] = set()
    for key, gctx in translate(state).gateways.items():
        if not gctx.conditions.is_true("Programmed"):
            continue
        for lc in gctx.listeners:
            if lc.programmed and lc.port:
                out.add((key, lc.port, _transport(lc.protocol)))
    return out


class GatewayListeners:
    """The Gateways' ports on loopback, following the live cluster's state."""

    def __init__(self, server: Any, host: str = "127.0.0.1", served: Callable[[Served], None] | None = None,
                 on_change: Callable[[], None] | None = None) -> None:
        self.server, self.host, self.served, self.on_change = server, host, served, on_change
        self.bound: dict[Key, Any] = {}  # asyncio.Server, or a DatagramTransport
        self._latest: Any = None
        self._listed: list[dict[str, Any]] = []
        self._ports: dict[Key, int] = {}  # the local port each listener had last
        self._syncing: asyncio.Task[None] | None = None
        self._certs = tempfile.TemporaryDirectory(prefix="knetsim-gateway-")
        os.chmod(self._certs.name, 0o700)
        self._contexts: dict[tuple[str, str, tuple[str, ...]], ssl.SSLContext] = {}
        self._dns: Any = None
        self._dns_state: Any = None
        self._rate_limits = envoypolicies.TokenBuckets(time.monotonic)

    # --- following the state ----------------------------------------------------------------

    def follow(self) -> None:
        self.server.state_listeners.append(self.update)
        state = self.server.state
        if state is not None:
            self.update(state)

    def update(self, state: Any) -> None:
        self._latest = state
        if self._syncing is None or self._syncing.done():
            self._syncing = asyncio.get_event_loop().create_task(self._sync())

    async def _sync(self) -> None:
        while True:
            state = self._latest
            try:
                want = desired(state)
            except Exception:
                log.exception("gateway listeners: the translation failed")
                return
            changed = False
            for key in sorted(set(self.bound) - want):
                await self._unbind(key)
                changed = True
            for key in sorted(want - set(self.bound)):
                try:
                    await self._bind(key)
                    changed = True
                except OSError as exc:
                    log.warning("gateway listener %s:%d/%s cannot be bound: %s", *key, exc)
            # A listener can become programmed on a port already bound (a ListenerSet's, once its Secret
            # arrives): the listing changes though no port did.
            rows = self.describe()
            if (changed or rows != self._listed) and self.on_change is not None:
                self.on_change()
            self._listed = rows
            if self._latest is state:
                return

    async def _bind(self, key: Key) -> None:
        # A listener that comes back (its Gateway programmed again, a proxy rollout) gets its old local port
        # back when it is free, so a client that read ready.json before keeps working.
        previous = self._ports.get(key)
        for port in ((previous, 0) if previous else (0,)):
            try:
                await self._bind_port(key, port)
                break
            except OSError:
                if port == 0:
                    raise
        self._ports[key] = self.local_port(key)

    async def _bind_port(self, key: Key, port: int) -> None:
        loop = asyncio.get_running_loop()
        if key[2] == "UDP":
            transport, _ = await loop.create_datagram_endpoint(lambda: _UDP(self, key), local_addr=(self.host, port))
            self.bound[key] = transport
            return

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._tcp(key, PlainStream(reader, writer))

        self.bound[key] = await asyncio.start_server(handle, self.host, port)

    async def _unbind(self, key: Key) -> None:
        bound = self.bound.pop(key)
        bound.close()
        if isinstance(bound, asyncio.Server):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(bound.wait_closed(), 1)

    def local_port(self, key: Key) -> int:
        bound = self.bound[key]
        if isinstance(bound, asyncio.Server):
            return int(bound.sockets[0].getsockname()[1])
        return int(bound.get_extra_info("sockname")[1])

    def describe(self) -> list[dict[str, Any]]:
        """One row per programmed listener whose port is bound: what ready.json and ``knetsim status`` list."""
        state = self._latest
        if state is None:
            return []
        t = translate(state)
        rows = []
        for key in sorted(self.bound):
            gw, port, transport = key
            gctx = t.gateways.get(gw)
            for lc in gctx.listeners if gctx is not None else ():
                if lc.port == port and lc.programmed and _transport(lc.protocol) == transport:
                    rows.append({"gateway": gw, "listener": lc.name,
                                 "listener_set": lc.listener_set.key if lc.listener_set else None,
                                 "protocol": lc.protocol, "port": port, "hostname": lc.hostname,
                                 "address": f"{self.host}:{self.local_port(key)}"})
        return rows

    async def close(self) -> None:
        for key in sorted(self.bound):
            await self._unbind(key)
        self._certs.cleanup()

    async def _state(self) -> Any:
        await self.server.settle()
        return self.server.state

    # --- TCP: what each listener protocol does ----------------------------------------------

    async def _tcp(self, key: Key, stream: PlainStream) -> None:
        gw, port, _ = key
        try:
            state = await self._state()
            gctx = translate(state).gateways.get(gw)
            if gctx is None:
                return
            on_port = [lc for lc in gctx.listeners if lc.port == port and lc.programmed and lc.protocol != "UDP"]
            protocols = {lc.protocol for lc in on_port}
            if protocols & {"HTTPS", "TLS"}:
                await self._tls(state, gw, port, gctx.listeners, stream)
            elif "HTTP" in protocols:
                await self._http(gw, port, stream, "http", None, None)
            elif "TCP" in protocols:
                result = route_stream(state, gw, "tcp", port, client=":".join(map(str, stream.peer())))
                await self._forward(state, result, stream)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError, NotTLS, ssl.SSLError):
            pass
        except Exception:
            log.exception("gateway listener %s:%d failed", gw, port)
        finally:
            await stream.close()

    async def _tls(self, state: Any, gw: str, port: int, listeners: list[ListenerContext], stream: PlainStream) -> None:
        hello, replay = await read_client_hello(stream)
        _hs, chain = handshake(listeners, port, hello.sni, None, translate(state).now, check_client=False)
        if chain is None:
            return  # no filter chain: Envoy closes the connection during the handshake
        lc = chain.listener
        peer = ":".join(map(str, stream.peer()))
        if lc.protocol == "TLS" and lc.listener.tls_mode == "Passthrough":
            result = route_stream(state, gw, "tls", port, sni=hello.sni, client=peer)
            if not result.proxied or result.endpoint is None:
                return
            pod = state.pods.get(result.endpoint.pod)
            if pod is None or not self._reachable(state, result.proxy_pod, result.endpoint, "TCP"):
                return
            tls = TLSStream(stream, self._context(pod_certificate(state, pod), None, ()))
            await tls.handshake(replay)
            await self._backend(state, result.proxy_pod, result.endpoint, tls, "https")
            return
        serving = serving_certificate(lc, hello.sni)
        if serving is None:
            return
        is_https = lc.protocol == "HTTPS"
        alpn = tuple(p for p in ("h2", "http/1.1") if p in hello.alpn) if is_https else ()
        tls = TLSStream(stream, self._context(serving, lc.frontend if is_https else None, alpn))
        await tls.handshake(replay)
        chain_certs = [x509.load_der_x509_certificate(der) for der in tls.peer_chain_der()]
        if is_https:
            if tls.alpn == "h2":
                await self._h2(gw, port, tls, "https", hello.sni, chain_certs)
            else:
                await self._http(gw, port, tls, "https", hello.sni, chain_certs)
            return
        result = route_stream(state, gw, "tls", port, sni=hello.sni, client_chain=chain_certs, client=peer)
        await self._forward(state, result, tls)

    def _context(self, serving: ServingCertificate, frontend: FrontendValidation | None,
                 alpn: tuple[str, ...]) -> ssl.SSLContext:
        """A server TLS context for one certificate (and client-certificate validation), cached."""
        ident = (serving.info.sha256_fingerprint, frontend.source if frontend else "", alpn)
        ctx = self._contexts.get(ident)
        if ctx is not None:
            return ctx
        base = Path(self._certs.name) / serving.info.sha256_fingerprint.replace(":", "")
        cert_file, key_file = base.with_suffix(".crt"), base.with_suffix(".key")
        for path, data in ((cert_file, serving.chain_pem()), (key_file, serving.key_pem())):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert_file, key_file)
        if frontend is not None and frontend.cas:
            from cryptography.hazmat.primitives.serialization import Encoding

            ctx.load_verify_locations(cadata="".join(c.public_bytes(Encoding.PEM).decode() for c in frontend.cas))
            # AllowInsecureFallback asks for a certificate without requiring one (a presented certificate
            # that does not verify still fails the handshake: OpenSSL checks what it is given).
            ctx.verify_mode = ssl.CERT_OPTIONAL if frontend.mode == "AllowInsecureFallback" else ssl.CERT_REQUIRED
        if alpn:
            ctx.set_alpn_protocols(list(alpn))
        self._contexts[ident] = ctx
        return ctx

    # --- HTTP/1.1 and HTTP/2 ---------------------------------------------------------------------

    async def _http(self, gw: str, port: int, io: Any, scheme: str, sni: str | None,
                    chain: list[Any] | None) -> None:
        first = await io.recv()
        if not first:
            return
        if first.startswith(H2_PREFACE[:len(first)]) and scheme == "http":
            while len(first) < len(H2_PREFACE) and H2_PREFACE.startswith(first):
                more = await io.recv()
                if not more:
                    return
                first += more
            if first.startswith(H2_PREFACE):
                await self._h2(gw, port, io, scheme, sni, chain, first)
                return
        conn = h11.Connection(h11.SERVER)
        conn.receive_data(first)
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await io.recv()
                conn.receive_data(data)
                if not data and conn.their_state is not h11.SEND_BODY:
                    return
                continue
            if isinstance(event, (h11.ConnectionClosed,)) or event is h11.PAUSED:
                return
            if not isinstance(event, h11.Request):
                continue
            if not await _rest_of_request(conn, io):
                return
            headers = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in event.headers]
            if _wants_websocket(event.method, headers):
                await self._websocket(gw, port, io, scheme, sni, chain, conn, event.target.decode("latin-1"), headers)
                return
            answer = await self._answer_http(gw, port, scheme, event.method.decode(), event.target.decode("latin-1"),
                                             headers, sni, chain, f"HTTP/{event.http_version.decode()}")
            if answer is None:
                return  # the proxy resets the connection
            out_headers = [*answer.headers, ("content-length", str(len(answer.body)))]
            await io.send(conn.send(h11.Response(status_code=answer.status, headers=out_headers,
                                                 reason=_reason(answer.status))))
            if event.method != b"HEAD":
                await io.send(conn.send(h11.Data(data=answer.body)))
            await io.send(conn.send(h11.EndOfMessage()))
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()

    async def _websocket(self, gw: str, port: int, io: Any, scheme: str, sni: str | None, chain: list[Any] | None,
                         conn: h11.Connection, target: str, headers: list[tuple[str, str]]) -> None:
        """A WebSocket upgrade (RFC 6455) on a route that proxies: 101 Switching Protocols, then the backend's echo of
        every message — conformance httproute-backend-protocol-websocket.go (HTTPRouteBackendProtocolWebSocket) sends
        a text and a binary message to the suite's echo backend and expects each back. Envoy Gateway upgrades any
        HTTPRoute's connection (its ``upgrade_configs`` allow websocket on every route); a request the route does not
        proxy gets the proxy's ordinary answer."""
        answer = await self._answer_http(gw, port, scheme, "GET", target, headers, sni, chain, "HTTP/1.1")
        if answer is None:
            return
        if answer.status != 200 or not any(n == "x-knetsim-backend" for n, _ in answer.headers):
            out = [*answer.headers, ("content-length", str(len(answer.body))), ("connection", "close")]
            await io.send(conn.send(h11.Response(status_code=answer.status, headers=out,
                                                 reason=_reason(answer.status))))
            await io.send(conn.send(h11.Data(data=answer.body)))
            await io.send(conn.send(h11.EndOfMessage()))
            return
        key = next((v for n, v in headers if n.lower() == "sec-websocket-key"), "")
        accept = base64.b64encode(hashlib.sha1((key.strip() + _WS_GUID).encode()).digest()).decode()
        backend = next(v for n, v in answer.headers if n == "x-knetsim-backend")
        await io.send(conn.send(h11.InformationalResponse(status_code=101, reason=b"Switching Protocols", headers=[
            ("upgrade", "websocket"), ("connection", "Upgrade"), ("sec-websocket-accept", accept),
            ("x-knetsim-backend", backend)])))
        buffered = conn.trailing_data[0]
        while True:
            frame = _ws_frame(buffered)
            if frame is None:
                more = await io.recv()
                if not more:
                    return
                buffered += more
                continue
            fin_opcode, payload, used = frame
            buffered = buffered[used:]
            opcode = fin_opcode & 0x0F
            if opcode == 0x9:  # ping: the proxy passes it on, the backend answers pong
                await io.send(_ws_encode(0x80 | 0xA, payload))
                continue
            await io.send(_ws_encode(fin_opcode, payload))  # the echo backend sends each message back
            if opcode == 0x8:  # close: echoed, then the connection ends
                return

    async def _h2(self, gw: str, port: int, io: Any, scheme: str, sni: str | None, chain: list[Any] | None,
                  first: bytes = b"") -> None:
        conn = H2Connection(H2Configuration(client_side=False, header_encoding="utf-8"))
        conn.initiate_connection()
        await io.send(conn.data_to_send())
        requests: dict[int, list[tuple[str, str]]] = {}
        bodies: dict[int, bytes] = {}
        data = first
        while True:
            if not data:
                data = await io.recv()
                if not data:
                    return
            try:
                events = conn.receive_data(data)
            except ProtocolError:
                await io.send(conn.data_to_send())
                return
            data = b""
            for event in events:
                if isinstance(event, RequestReceived):
                    requests[event.stream_id] = [(str(n), str(v)) for n, v in event.headers]
                    bodies[event.stream_id] = b""
                elif isinstance(event, DataReceived):
                    bodies[event.stream_id] = bodies.get(event.stream_id, b"") + event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, StreamEnded) and event.stream_id in requests:
                    await self._h2_answer(gw, port, conn, event.stream_id, requests.pop(event.stream_id), scheme,
                                          sni, chain)
                elif isinstance(event, StreamReset):
                    requests.pop(event.stream_id, None)
                elif isinstance(event, ConnectionTerminated):
                    await io.send(conn.data_to_send())
                    return
            await io.send(conn.data_to_send())

    async def _h2_answer(self, gw: str, port: int, conn: H2Connection, stream_id: int, headers: list[tuple[str, str]],
                         scheme: str, sni: str | None, chain: list[Any] | None) -> None:
        pseudo = {n: v for n, v in headers if n.startswith(":")}
        plain = [(n, v) for n, v in headers if not n.startswith(":")]
        content_type = next((v for n, v in plain if n == "content-type"), "")
        if content_type.startswith("application/grpc"):
            status_headers, body, trailers = await self._answer_grpc(gw, port, scheme, pseudo, plain, sni, chain)
            conn.send_headers(stream_id, status_headers, end_stream=not body and not trailers)
            if body:
                conn.send_data(stream_id, body, end_stream=not trailers)
            if trailers:
                conn.send_headers(stream_id, trailers, end_stream=True)
            return
        host = pseudo.get(":authority", "")
        answer = await self._answer_http(gw, port, scheme, pseudo.get(":method", "GET"), pseudo.get(":path", "/"),
                                         [("host", host), *plain], sni, chain, "HTTP/2")
        if answer is None:
            conn.reset_stream(stream_id)
            return
        conn.send_headers(stream_id, [(":status", str(answer.status)),
                                      *((n.lower(), v) for n, v in answer.headers if n.lower() not in
                                        ("connection", "transfer-encoding")),
                                      ("content-length", str(len(answer.body)))], end_stream=not answer.body)
        if answer.body:
            conn.send_data(stream_id, answer.body, end_stream=True)

    async def _answer_http(self, gw: str, port: int, scheme: str, method: str, target: str,
                           headers: list[tuple[str, str]], sni: str | None, chain: list[Any] | None,
                           protocol: str) -> Answer | None:
        """One HTTP request at a Gateway listener: the proxy's own answer, or the backend's (None: reset)."""
        state = await self._state()
        host = next((v for n, v in headers if n.lower() == "host"), "")
        length = next((v for n, v in headers if n.lower() == "content-length"), None)
        try:
            # The client is the simulated one outside the cluster (the Gateway's address is public).
            request = HTTPRequest(host, target if target.startswith("/") else "/", method.upper(), scheme, port,
                                  tuple((n, v) for n, v in headers if n.lower() != "host"),
                                  body_size=int(length) if length is not None and length.strip().isdigit() else None)
            result = route(state, gw, request, explain=False, sni=sni, client_chain=chain)
        except (HTTPRequestError, ValueError) as exc:
            return Answer(400, [("content-type", "text/plain")], f"knetsim: {exc}\n".encode())
        response_headers = [(n, v) for n, v in result.response_headers.items()]
        decision = result.policy
        if decision is not None and decision.answered:
            # Envoy Gateway's filters answer themselves (a preflight, 401, 403, 413, 500), in Envoy's words.
            return Answer(result.http_status or 500, [("content-type", "text/plain"), *response_headers],
                          decision.body.encode())
        if decision is not None and decision.buckets:
            limited = self._rate_limits.take(decision.buckets)
            if limited is not None:
                bucket, reset = limited
                ratelimit = envoypolicies.rate_limited_headers(bucket, 0, reset)
                return Answer(429, [("content-type", "text/plain"), *decision.headers.items(), *ratelimit.items()],
                              envoypolicies.RATE_LIMITED_BODY.encode())
        if result.outcome == "proxied" and result.backend is not None and result.upstream_request is not None:
            endpoint = self._endpoint(state, result.backend.service, result.backend.port, "TCP",
                                      f"{request.method} {request.url}")
            if endpoint is None or result.proxy_pod is None:
                return Answer(503, [("content-type", "text/plain")], b"no healthy upstream")
            upstream = result.upstream_request
            backend_scheme = "https" if result.backend_tls is not None else "http"
            url = f"{backend_scheme}://{endpoint.ip}:{endpoint.port}{upstream.path}"
            t = self._trace(state, result.proxy_pod, url, method=upstream.method,
                            headers={"Host": upstream.host, **upstream.headers})
            if t is None or t.outcome == "refused":
                return Answer(503, [("content-type", "text/plain")], b"upstream connect error or disconnect/reset "
                              b"before headers. reset reason: connection failure")
            if t.outcome != "connected" or t.reply is None or t.reply.status is None:
                return Answer(504, [("content-type", "text/plain")], b"upstream request timeout")
            reply_headers = [(k, v) for k, v in t.reply.headers.items()
                             if k.lower() not in ("content-length", *result.response_headers_removed)]
            reply_headers = [(k, v) for k, v in reply_headers if k.lower() not in result.response_headers]
            body = t.reply.body.encode()
            self._report(state, endpoint, result.proxy_pod, method, target, t.reply.status, len(body), headers,
                         protocol)
            self._mirror(state, result, headers, method, target, protocol)
            # An auth verdict knetsim assumed (an extAuth program it does not know) is said on the answer.
            unverified = [("x-knetsim-unverified", n.split("unverified: ", 1)[1].encode("ascii", "replace").decode())
                          for n in result.notes if "unverified: " in n]
            return Answer(t.reply.status, [*reply_headers, *response_headers,
                                           ("x-knetsim-backend", endpoint.describe()), *unverified], body)
        if result.redirect is not None:
            return Answer(result.redirect.status, [("location", result.redirect.location), *response_headers], b"")
        if result.http_status is None:
            return None  # no listener, a TLS failure, a passthrough port: nothing answers HTTP
        # The implementation's own reply where the spec leaves it open (NGINX's page, Kong's JSON...).
        body = result.reply.body if result.reply is not None else ENVOY_BODIES.get(result.http_status, "")
        content_type = result.reply.content_type if result.reply is not None else "text/plain"
        if result.outcome == "backend-tls-failed":
            from ..gateway.upstream import ENVOY_TLS_VERIFY_FAILED

            body = ENVOY_TLS_VERIFY_FAILED
        return Answer(result.http_status, [("content-type", content_type), *response_headers], body.encode())

    async def _answer_grpc(self, gw: str, port: int, scheme: str, pseudo: dict[str, str],
                           metadata: list[tuple[str, str]], sni: str | None,
                           chain: list[Any] | None) -> tuple[list[tuple[str, str]], bytes, list[tuple[str, str]]]:
        """One gRPC call: (response headers, body, trailers) as the proxy, or the echo service behind it, sends them."""
        state = await self._state()
        path = pseudo.get(":path", "/")
        authority = pseudo.get(":authority", "")
        user_metadata = tuple((n, v) for n, v in metadata if n not in ("content-type", "te", "user-agent",
                                                                        "grpc-accept-encoding", "grpc-timeout"))
        try:
            call = GRPCCall.parse(authority, path, metadata=user_metadata, port=port, tls=scheme == "https")
            result = route_grpc(state, gw, call, sni=sni, client_chain=chain)
        except (HTTPRequestError, ValueError) as exc:
            return self._grpc_status(grpcecho.UNIMPLEMENTED, str(exc))
        decision = result.policy
        if decision is not None and decision.answered and result.grpc_status is not None:
            # Envoy answers a gRPC request's local reply in gRPC: the status its HTTP status maps to.
            return self._grpc_status(result.grpc_status, decision.body or decision.why)
        if decision is not None and decision.buckets and result.outcome == "proxied" and \
                self._rate_limits.take(decision.buckets) is not None:
            return self._grpc_status(14, envoypolicies.RATE_LIMITED_BODY)
        if result.outcome != "proxied" or result.backend is None:
            return self._grpc_local_reply(result.http_status or 503, "")
        endpoint = self._endpoint(state, result.backend.service, result.backend.port, "TCP", path)
        if endpoint is None or result.proxy_pod is None or not self._reachable(state, result.proxy_pod, endpoint,
                                                                                 "TCP"):
            return self._grpc_local_reply(503, ENVOY_BODIES[503])
        pod = state.pods.get(endpoint.pod)
        if pod is None or not any(image_repository(c.image) == "echo-basic" for c in pod.containers):
            return self._grpc_status(grpcecho.UNIMPLEMENTED, f"unknown service {call.service}")
        code, message = grpcecho.answer(path)
        if code != grpcecho.OK:
            return self._grpc_status(code, message)
        received = [(":authority", authority), ("content-type", "application/grpc"),
                    *((n, v) for n, v in metadata if n == "user-agent"), *result.upstream_metadata.items()]
        service = result.backend.service.split("/", 1)[1]
        message_bytes = grpcecho.echo_response(path, received, authority,
                                               grpcecho.PodContext(pod.namespace, service, pod.name))
        agent = [("user-agent", next((v for n, v in metadata if n == "user-agent"), ""))]
        self._report(state, endpoint, result.proxy_pod, "POST", path, 200, len(message_bytes), agent, "HTTP/2")
        for copy in result.mirrors:
            # RequestMirror: the echo service behind each mirror answers its copy too (its log shows it).
            mirror_pod = state.pods.get(copy.endpoint.pod) if copy.sent and copy.endpoint is not None else None
            echoes = mirror_pod is not None and any(image_repository(c.image) == "echo-basic"
                                                    for c in mirror_pod.containers)
            if echoes and copy.endpoint is not None and self._reachable(state, result.proxy_pod, copy.endpoint, "TCP"):
                self._report(state, copy.endpoint, result.proxy_pod, "POST", path, 200, len(message_bytes), agent,
                             "HTTP/2")
        headers = [(":status", "200"), ("content-type", "application/grpc"),
                   ("x-knetsim-backend", endpoint.describe()), *result.response_metadata.items()]
        return headers, grpcecho.frame(message_bytes), [("grpc-status", "0")]

    @classmethod
    def _grpc_local_reply(cls, http_status: int, body: str) -> tuple[list[tuple[str, str]], bytes,
                                                                      list[tuple[str, str]]]:
        """The proxy's own answer to a gRPC call (a route miss, no healthy upstream): Envoy sends a local reply to
        a gRPC request as a trailers-only gRPC response, its HTTP status mapped to a gRPC one
        (source/common/grpc/common.cc httpToGrpcStatus), so a gRPC client reads a status, not an HTTP error."""
        code = _HTTP_TO_GRPC.get(http_status, 2)  # UNKNOWN
        return cls._grpc_status(code, body)

    @staticmethod
    def _grpc_status(code: int, message: str) -> tuple[list[tuple[str, str]], bytes, list[tuple[str, str]]]:
        headers = [(":status", "200"), ("content-type", "application/grpc"), ("grpc-status", str(code))]
        return headers + ([("grpc-message", message)] if message else []), b"", []

    # --- streams -----------------------------------------------------------------------------------

    async def _forward(self, state: Any, result: Any, io: Any) -> None:
        """A TCP or terminated TLS connection the Gateway forwards to its route's backend."""
        if not result.proxied or result.endpoint is None or result.proxy_pod is None:
            return
        if result.backend_tls is not None and not result.backend_tls.verdict.ok:
            return
        if not self._reachable(state, result.proxy_pod, result.endpoint, "TCP"):
            return
        await self._backend(state, result.proxy_pod, result.endpoint, io, "http")

    async def _backend(self, state: Any, proxy: str, endpoint: Endpoint, io: Any, scheme: str) -> None:
        """What the backend pod's program answers on an established stream: HTTP to an HTTP request (its
        app's answer), else an echo of every byte."""
        first = await io.recv()
        if first.startswith(HTTP_METHODS):
            conn = h11.Connection(h11.SERVER)
            conn.receive_data(first)
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = await io.recv()
                    if not data:
                        return
                    conn.receive_data(data)
                    continue
                if not isinstance(event, h11.Request):
                    if event is h11.PAUSED or isinstance(event, h11.ConnectionClosed):
                        return
                    continue
                if not await _rest_of_request(conn, io):
                    return
                headers = {n.decode("latin-1"): v.decode("latin-1") for n, v in event.headers}
                url = f"{scheme}://{endpoint.ip}:{endpoint.port}{event.target.decode('latin-1')}"
                t = self._trace(state, proxy, url, method=event.method.decode(), headers=headers)
                if t is None or t.reply is None or t.reply.status is None:
                    return
                body = t.reply.body.encode()
                self._report(state, endpoint, proxy, event.method.decode(), event.target.decode("latin-1"),
                             t.reply.status, len(body), list(headers.items()), "HTTP/1.1")
                reply_headers = [(k, v) for k, v in t.reply.headers.items() if k.lower() != "content-length"]
                out = [*reply_headers, ("x-knetsim-backend", endpoint.describe()), ("content-length", str(len(body)))]
                await io.send(conn.send(h11.Response(status_code=t.reply.status, reason=_reason(t.reply.status),
                                                     headers=out)))
                await io.send(conn.send(h11.Data(data=body)))
                await io.send(conn.send(h11.EndOfMessage()))
                if conn.our_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()
        data = first
        while data:
            await io.send(data)
            data = await io.recv()

    def _udp(self, key: Key, data: bytes, addr: tuple[str, int], transport: asyncio.DatagramTransport) -> None:
        gw, port, _ = key
        state = self.server.state
        if state is None:
            return
        try:
            result = route_stream(state, gw, "udp", port, client=f"{addr[0]}:{addr[1]}")
            if not result.proxied or result.endpoint is None or result.proxy_pod is None:
                return
            if not self._reachable(state, result.proxy_pod, result.endpoint, "UDP"):
                return
            pod = state.pods.get(result.endpoint.pod)
            if pod is not None and any(image_repository(c.image) == "coredns" for c in pod.containers):
                answer = self._dns_answer(state, data)
                if answer is not None:
                    transport.sendto(answer, addr)
                return
            transport.sendto(data, addr)
        except Exception:
            log.exception("gateway UDP listener %s:%d failed", gw, port)

    def _dns_answer(self, state: Any, wire: bytes) -> bytes | None:
        from ..dns.server import DNSServer

        if self._dns is None:
            self._dns = DNSServer(state)
        elif self._dns_state is not state:
            self._dns.update(state)
        self._dns_state = state
        return self._dns.handle(wire)  # type: ignore[no-any-return]

    # --- the proxy's upstream leg --------------------------------------------------------------------

    @staticmethod
    def _endpoint(state: Any, service: str, port: int | None, protocol: str, ident: str) -> Endpoint | None:
        svc = state.services.get(service)
        sp = next((p for p in svc.ports if p.port == port and p.protocol == protocol), None) if svc else None
        if svc is None or sp is None:
            return None
        out = []
        for es in state.slices_for(svc):
            ep_port = next((p for p in es.ports if p.name == sp.name and p.port), None)
            if ep_port is None or ep_port.port is None:
                continue
            for e in es.endpoints:
                if e.ready and e.addresses and e.target_ref and e.target_ref[0] == "Pod":
                    out.append(Endpoint(f"{e.target_ref[1]}/{e.target_ref[2]}", e.addresses[0], ep_port.port))
        return choose_endpoint(sorted(set(out), key=lambda e: (e.ip, e.port, e.pod)), ident)

    @staticmethod
    def _trace(state: Any, proxy: str, url: str, **kwargs: Any) -> Any:
        try:
            return trace(state, proxy, url, **kwargs)
        except TraceInputError:
            return None

    def _reachable(self, state: Any, proxy: str, endpoint: Endpoint, protocol: str) -> bool:
        """Does the proxy pod's connection reach the endpoint (policy, a listener there)?"""
        t = self._trace(state, proxy, f"{endpoint.ip}:{endpoint.port}", protocol=protocol)
        return t is not None and t.outcome == "connected"

    def _mirror(self, state: Any, result: Any, headers: list[tuple[str, str]], method: str, target: str,
                protocol: str) -> None:
        """RequestMirror: each copy goes to its mirror's endpoint (its access log shows it); the answer is dropped."""
        upstream = result.upstream_request
        for copy in result.mirrors:
            if not copy.sent or copy.endpoint is None:
                continue
            t = self._trace(state, result.proxy_pod, f"http://{copy.endpoint.ip}:{copy.endpoint.port}{upstream.path}",
                            method=upstream.method, headers={"Host": upstream.host, **upstream.headers})
            if t is not None and t.outcome == "connected" and t.reply is not None and t.reply.status is not None:
                self._report(state, copy.endpoint, result.proxy_pod, method, target, t.reply.status,
                             len(t.reply.body.encode()), headers, protocol)

    def _report(self, state: Any, endpoint: Endpoint, proxy: str, method: str, target: str, status: int,
                size: int, headers: list[tuple[str, str]], protocol: str) -> None:
        if self.served is None:
            return
        proxy_pod = state.pods.get(proxy)
        lower = {n.lower(): v for n, v in headers}
        forwarded = lower.get("x-forwarded-for", "")
        self.served(Served(endpoint.pod, endpoint.port, proxy_pod.pod_ip if proxy_pod else EXTERNAL_CLIENT_IP,
                           method, target, status, size, lower.get("user-agent", ""), lower.get("referer", ""),
                           f"{forwarded}, {EXTERNAL_CLIENT_IP}" if forwarded else EXTERNAL_CLIENT_IP, protocol))


class _UDP(asyncio.DatagramProtocol):
    def __init__(self, owner: GatewayListeners, key: Key) -> None:
        self.owner, self.key = owner, key
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        if self.transport is not None:
            self.owner._udp(self.key, data, addr, self.transport)
