"""``pods/portforward``: ``kubectl port-forward`` to a simulated pod, answered by its simulated app.

kubectl 1.31+ upgrades to WebSocket with subprotocol ``SPDY/3.1+portforward.k8s.io`` and speaks
SPDY/3.1 inside the binary messages; when that upgrade fails (or with
``KUBECTL_PORT_FORWARD_WEBSOCKETS=false``) it sends ``POST .../portforward`` with
``Upgrade: SPDY/3.1`` and ``X-Stream-Protocol-Version: portforward.k8s.io``. Both are served
(``spdy.Session`` does the framing).

Per local connection kubectl opens two streams with the same ``requestID`` header (the kubelet's
``httpstream.go`` pairs them): an *error* stream, which the server writes an error message to
(or nothing) and closes, and a *data* stream carrying the connection's bytes. The data stream
here is the pod's app as ``kubectl exec ... wget`` reaches it, minus the network on the way:
``localhost:PORT`` inside the pod, so no Service, data plane or NetworkPolicy is involved (as on a
real cluster). HTTP requests on it (``curl localhost:18080``, a browser) are parsed with ``h11``
and each gets the simulated reply (``knetsim.network.app``), logged by the server's access log; a
port nothing listens on gets the runtime's "connection refused" on the error stream; a port that
speaks another protocol accepts the connection and says nothing, as a database would to curl.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Callable
from email.utils import formatdate
from typing import Any

import h11
from aiohttp import WSMsgType, web

from ..apiserver.errors import ApiError
from ..apiserver.registry import Target
from ..container.accesslog import Served
from ..container.nettools import reason
from ..model.objects import Pod
from .flows import PortForwarded
from .node import NodeView
from .spdy import Session, SpdyError, Stream

WS_PROTOCOL = "SPDY/3.1+portforward.k8s.io"
PORTFORWARD_PROTOCOL = "portforward.k8s.io"
PAIR_TIMEOUT = 30.0  # the kubelet waits this long for a stream's partner
MAX_REQUEST = 1 << 20  # bytes of one forwarded request the simulation buffers


async def handle(server: NodeView, request: web.Request, t: Target,
                 served: Callable[[Served], None] | None = None,
                 observed: Callable[[Any], None] | None = None) -> web.StreamResponse:
    """``served`` is told of each HTTP request the pod's app answers (the kubelet's access log), ``observed`` of
    each stream to a port (the node's flow record)."""
    upgrade = request.headers.get("Upgrade", "").lower()
    if upgrade not in ("websocket", "spdy/3.1"):
        raise ApiError(400, "BadRequest", "Upgrade request required")
    await server.settle()
    stored = server.store.get(("Pod", t.namespace, t.name))
    if stored is None:
        raise ApiError(404, "NotFound", f'pods "{t.name}" not found', {"name": t.name, "kind": "pods"})
    phase = (stored.body.get("status") or {}).get("phase")
    if phase != "Running":
        raise ApiError(400, "BadRequest", f"unable to upgrade connection: pod {t.name} is not running (phase "
                                          f"{phase or 'Pending'})")
    forwarder = Forwarder(server, t.namespace, t.name, str(stored.body["metadata"].get("uid", "")), served, observed)
    if upgrade == "websocket":
        offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")]
        if WS_PROTOCOL not in offered:
            raise ApiError(400, "BadRequest", f"unable to upgrade connection: no supported subprotocol in "
                                              f"{offered}; knetsim speaks {WS_PROTOCOL}")
        return await _websocket(request, forwarder)
    versions = [v.strip() for v in request.headers.getall("X-Stream-Protocol-Version", [])]
    if PORTFORWARD_PROTOCOL not in versions:
        raise ApiError(400, "BadRequest", f"unable to upgrade: unable to negotiate protocol: client supports "
                                          f"{versions}, server supports [{PORTFORWARD_PROTOCOL}]")
    return await _spdy(request, forwarder)


async def _websocket(request: web.Request, forwarder: Forwarder) -> web.StreamResponse:
    ws = web.WebSocketResponse(protocols=(WS_PROTOCOL,), autoping=True, heartbeat=None, max_msg_size=0)
    await ws.prepare(request)
    session = Session(ws.send_bytes, forwarder.on_stream)
    forwarder.session = session
    try:
        async for msg in ws:
            if msg.type != WSMsgType.BINARY:
                continue
            try:
                session.feed(msg.data)
            except SpdyError:
                await session.goaway()
                break
            await session.flush()
            if session.closed.is_set():
                break
    except (ConnectionResetError, RuntimeError):
        pass
    finally:
        await forwarder.stop()
    return ws


class _RawReader:
    """The parser aiohttp hands an upgraded connection's bytes to (as it does for WebSocket)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self.queue.put_nowait(bytes(data))
        return False, b""

    def feed_eof(self) -> None:
        self.queue.put_nowait(b"")


async def _spdy(request: web.Request, forwarder: Forwarder) -> web.StreamResponse:
    resp = web.StreamResponse(status=101, reason="Switching Protocols", headers={
        "Connection": "Upgrade", "Upgrade": "SPDY/3.1", "X-Stream-Protocol-Version": PORTFORWARD_PROTOCOL})
    reader = _RawReader()
    await resp.prepare(request)
    transport = request.transport
    if transport is None:
        return resp
    request.protocol.set_parser(reader)  # type: ignore[arg-type]

    async def send(data: bytes) -> None:
        if not transport.is_closing():
            transport.write(data)

    session = Session(send, forwarder.on_stream)
    forwarder.session = session
    try:
        while not session.closed.is_set():
            data = await reader.queue.get()
            if not data:
                break
            try:
                session.feed(data)
            except SpdyError:
                await session.goaway()
                break
            await session.flush()
    finally:
        await forwarder.stop()
        transport.close()
    return resp


class Forwarder:
    """The kubelet's port-forward handler for one connection: pairs streams, runs each pair."""

    def __init__(self, server: NodeView, namespace: str, pod: str, uid: str,
                 served: Callable[[Served], None] | None = None,
                 observed: Callable[[Any], None] | None = None) -> None:
        self.server, self.namespace, self.pod, self.uid = server, namespace, pod, uid
        self.served = served
        self.observed = observed
        self.session: Session | None = None
        self.waiting: dict[str, dict[str, Stream]] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    def on_stream(self, stream: Stream) -> None:
        request_id = stream.headers.get("requestid", "")
        kind = stream.headers.get("streamtype", "")
        pair = self.waiting.setdefault(request_id, {})
        pair[kind] = stream
        if "error" in pair and "data" in pair:
            del self.waiting[request_id]
            task = asyncio.ensure_future(self._forward(pair["error"], pair["data"]))
        elif len(pair) == 1:
            task = asyncio.ensure_future(self._expire(request_id))
        else:
            return
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _expire(self, request_id: str) -> None:
        await asyncio.sleep(PAIR_TIMEOUT)
        pair = self.waiting.pop(request_id, None)
        if pair and self.session is not None:
            for s in pair.values():
                await self.session.close_stream(s)

    async def stop(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        for task in list(self.tasks):
            with contextlib.suppress(BaseException):
                await task

    async def _forward(self, error: Stream, data: Stream) -> None:
        session = self.session
        assert session is not None
        port_text = data.headers.get("port", "")
        try:
            message = await self._serve(data, port_text)
            if message:
                await session.write(error, message.encode())
        except (ConnectionResetError, RuntimeError):
            return
        finally:
            with contextlib.suppress(ConnectionResetError, RuntimeError):
                await session.close_stream(data)
                await session.close_stream(error)

    def _pod(self) -> Pod | None:
        state = self.server.state
        pod = state.pods.get(f"{self.namespace}/{self.pod}") if state is not None else None
        return pod  # type: ignore[no-any-return]

    async def _serve(self, data: Stream, port_text: str) -> str:
        """Answer the connection; the text for the error stream when it cannot be made."""
        from ..network.trace import listening

        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            return f'invalid port header "{port_text}"'
        port = int(port_text)
        pod = self._pod()
        if pod is None:
            return f"pod {self.namespace}/{self.pod} is gone"
        if not listening(pod, port, "TCP"):
            sandbox = hashlib.sha256(f"sandbox/{self.uid}".encode()).hexdigest()
            netns = hashlib.sha256(f"netns/{self.uid}".encode()).hexdigest()
            netns_id = f"{netns[:8]}-{netns[8:12]}-{netns[12:16]}-{netns[16:20]}-{netns[20:32]}"
            return (f"error forwarding port {port} to pod {sandbox}, uid : failed to execute portforward in network "
                    f'namespace "/var/run/netns/cni-{netns_id}": failed to connect to localhost:{port} inside '
                    f'namespace "{sandbox}", IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused IPv6 '
                    f"dial tcp6 [::1]:{port}: connect: connection refused ")
        if self.observed is not None:
            self.observed(PortForwarded(pod, port))
        await HttpConnection(self, pod, port, data).run()
        return ""


class HttpConnection:
    """One forwarded TCP connection to an app: HTTP/1.1 requests in, the simulated replies out."""

    def __init__(self, forwarder: Forwarder, pod: Pod, port: int, stream: Stream) -> None:
        self.forwarder, self.pod, self.port, self.stream = forwarder, pod, port, stream
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST)

    async def _send(self, *events: Any) -> None:
        session = self.forwarder.session
        assert session is not None
        payload = b"".join(self.conn.send(e) or b"" for e in events)
        await session.write(self.stream, payload)

    async def run(self) -> None:
        while True:
            chunk = await self.stream.read()
            if self.stream.reset:
                return
            self.conn.receive_data(chunk)  # b"" is the client's FIN
            if not await self._events():
                return
            if not chunk:
                return

    async def _events(self) -> bool:
        """Handle what the bytes so far complete; False once the connection is done."""
        while True:
            try:
                event = self.conn.next_event()
            except h11.RemoteProtocolError:
                await self._bad_request()
                return False
            if event is h11.NEED_DATA:
                return True
            if isinstance(event, h11.ConnectionClosed):
                return False
            if isinstance(event, h11.Request):
                await self._answer(event)
            if self.conn.our_state in (h11.MUST_CLOSE, h11.CLOSED):
                return False
            if self.conn.our_state is h11.DONE and self.conn.their_state is h11.DONE:
                self.conn.start_next_cycle()  # keep-alive: the next request on the same connection
            elif event is h11.PAUSED:
                return True

    async def _answer(self, request: h11.Request) -> None:
        from ..network.app import app_reply
        from ..network.trace import Target as NetTarget

        state = self.forwarder.server.state
        headers = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in request.headers}
        lower = {k.lower(): v for k, v in headers.items()}
        target = request.target.decode(errors="replace")
        method = request.method.decode(errors="replace")
        host = lower.get("host", f"localhost:{self.port}")
        _hop, reply = app_reply(state, state.config.dataplane, "127.0.0.1", self.pod, self.port,
                                NetTarget("http", host.split(":", 1)[0], self.port, target.split("?", 1)[0]),
                                method, headers)
        if reply is None or reply.status is None:
            return  # the app does not speak HTTP: nothing comes back
        body = reply.body.encode() if method != "HEAD" else b""
        out_headers = [(k, str(v)) for k, v in reply.headers.items() if k.lower() != "content-length"]
        out_headers += [("Date", formatdate(usegmt=True)), ("Content-Length", str(len(reply.body.encode())))]
        await self._send(h11.Response(status_code=reply.status, headers=out_headers,
                                      reason=reason(reply.status).encode()), h11.Data(data=body),
                         h11.EndOfMessage())
        if self.forwarder.served is not None:
            self.forwarder.served(Served(self.pod.key, self.port, "127.0.0.1", method, target, reply.status,
                                  len(reply.body.encode()), lower.get("user-agent", ""), lower.get("referer", ""),
                                  lower.get("x-forwarded-for", ""),
                                  f"HTTP/{request.http_version.decode()}"))

    async def _bad_request(self) -> None:
        # nginx's answer to bytes that are not HTTP; other servers differ, the client sees an error either way.
        body = b"<html>\r\n<head><title>400 Bad Request</title></head>\r\n<body>\r\n<center><h1>400 Bad Request" \
               b"</h1></center>\r\n</body>\r\n</html>\r\n"
        session = self.forwarder.session
        assert session is not None
        await session.write(self.stream, b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nContent-Length: "
                            + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)

