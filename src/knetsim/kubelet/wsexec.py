"""``pods/exec`` and ``pods/attach`` over WebSocket, subprotocol ``v5.channel.k8s.io``.

Binary frames, first byte the channel: 0 stdin, 1 stdout, 2 stderr, 3 status (one
``metav1.Status``, then close), 4 resize, 255 close-stream (v5: the client half-closes
stdin). kubectl 1.32 offers only v5 and falls back to SPDY only when the upgrade fails, so
SPDY is not served.

With ``tty`` the simulated pty does what a real one does: echo, line editing (backspace,
Ctrl-C, Ctrl-D) and ``\\n`` → ``\\r\\n``. An exec runs a command of its own (``proc.Proc``); an
attach (``kubectl run --rm -it``, ``kubectl attach``) connects to the container's main process,
which the simulated kubelet runs (``kubelet.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

from ..apiserver.errors import ApiError
from ..apiserver.registry import Target
from ..container.podfs import as_bytes
from ..container.proc import Proc
from ..model.objects import Pod
from .attach import attach
from .node import NodeView

if TYPE_CHECKING:
    from .kubelet import Kubelet

log = logging.getLogger("knetsim.kubelet")

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
# client-go's WebSocket executor starts reading frames before it has registered its streams, and drops a frame
# for a stream it does not have yet ("Unknown stream id 1, discarding message": an exec's whole output lost,
# exit 0, when the command answers at once on a busy machine). A real cluster's first byte comes after the API
# server has dialled the kubelet and the runtime has started the process; here it would come at once. So the
# first frame waits for the client: for its first frame where it sends one (stdin data, the close of stdin, a
# resize: each sent once its streams exist), at most STDIN_WAIT; otherwise STREAMS_GRACE after the upgrade.
STREAMS_GRACE = 0.05
STDIN_WAIT = 0.5
MAX_FRAME = 4 << 20  # bytes a client may send in one frame (kubectl sends stdin in 32 KiB pieces)


async def handle(server: NodeView, kubelet: Kubelet, request: web.Request, t: Target) -> web.StreamResponse:
    if request.headers.get("Upgrade", "").lower() != "websocket":
        raise ApiError(400, "BadRequest", "knetsim serves exec and attach over WebSocket (v5.channel.k8s.io) only; "
                                          "upgrade request required")
    await server.settle()
    stored = server.store.get(("Pod", t.namespace, t.name))
    if stored is None:
        raise ApiError(404, "NotFound", f'pods "{t.name}" not found', {"name": t.name, "kind": "pods"})
    body = stored.body
    spec = body.get("spec") or {}
    containers = [c.get("name") for c in spec.get("containers") or []]
    q = request.query
    container = q.get("container") or (containers[0] if containers else "")
    # `kubectl debug` attaches to its ephemeral container by name, as one may to an init container.
    if container not in containers + [c.get("name") for f in ("initContainers", "ephemeralContainers")
                                      for c in spec.get(f) or []]:
        raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {t.name}")
    phase = (body.get("status") or {}).get("phase")
    if phase != "Running":
        raise ApiError(400, "BadRequest", f"unable to upgrade connection: pod {t.name} is not running (phase "
                                          f"{phase or 'Pending'})")
    tty = q.get("tty") in ("true", "1")
    want_stdin = q.get("stdin") in ("true", "1")
    ws = web.WebSocketResponse(protocols=PROTOCOLS, autoping=True, heartbeat=None, max_msg_size=MAX_FRAME)
    await ws.prepare(request)
    channels = Channels(ws, tty, want_stdin)
    if t.sub == "attach":
        await upgraded(channels, attach(kubelet, channels, t.namespace, t.name, container, want_stdin))
        return ws
    state = server.state
    pod = state.pods.get(f"{t.namespace}/{t.name}") if state is not None else None
    argv = list(q.getall("command", []))

    async def session() -> None:
        running = Session(channels, kubelet, pod if pod is not None else Pod.parse(body), container, tty, want_stdin,
                          str(body["metadata"].get("uid", "")))
        await channels.finish(await running.run(argv), argv)
    await upgraded(channels, session())
    return ws


async def upgraded(channels: Channels, work: Awaitable[None]) -> None:
    """Run a stream's work once the connection is a WebSocket: from here on every answer is a frame. A
    failure (a bug: its traceback goes to the log) ends the stream with an InternalError Status, as the
    kubelet reports an executor's error; it never reaches the HTTP layer, which would write an HTTP 500
    into the WebSocket (kubectl: "websocket: RSV1 set, FIN not set on control")."""
    try:
        await work
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("exec stream failed")
        await channels.fail(f"{type(exc).__name__}: {exc}")


class Channels:
    """The output side of a v5 stream: stdout/stderr frames (a tty merges them, with CRLF), the status."""

    def __init__(self, ws: web.WebSocketResponse, tty: bool, client_sends: bool = False) -> None:
        self.ws, self.tty = ws, tty
        loop = asyncio.get_running_loop()
        # When the first frame may go (see STREAMS_GRACE); None once it has gone.
        self._hold_until: float | None = loop.time() + (STDIN_WAIT if client_sends or tty else STREAMS_GRACE)
        self._client_spoke = asyncio.Event()

    async def _client_ready(self) -> None:
        if self._hold_until is None:
            return
        remaining = self._hold_until - asyncio.get_running_loop().time()
        if remaining > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._client_spoke.wait(), remaining)
        self._hold_until = None

    @property
    def closed(self) -> bool:
        return self.ws.closed

    async def send(self, channel: int, text: str) -> None:
        if self.ws.closed or not text:
            return
        if self.tty:
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
            channel = STDOUT
        await self._client_ready()
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await self.ws.send_bytes(bytes([channel]) + as_bytes(text))

    async def out(self, text: str) -> None:
        await self.send(STDOUT, text)

    async def err(self, text: str) -> None:
        await self.send(STDERR, text)

    async def read(self, feed: Callable[[bytes], None], eof: Callable[[], None],
                   room: asyncio.Event | None = None) -> None:
        """Pass stdin frames to ``feed`` and the client's close of stdin to ``eof``, until the socket ends.
        While ``room`` is clear (the command has not read what it was sent) no more is read from the socket,
        so a client that sends faster than the command reads is held back, as a full pipe holds a writer."""
        async for msg in self.ws:
            self._client_spoke.set()
            if msg.type != WSMsgType.BINARY or not msg.data:
                continue
            data: bytes = msg.data
            channel, payload = data[0], data[1:]
            if channel == STDIN:
                feed(payload)
                if room is not None:
                    await room.wait()
            elif channel == CLOSE and payload[:1] == bytes([STDIN]):
                eof()

    async def fail(self, message: str) -> None:
        """End the stream with an InternalError Status (kubectl: ``error: Internal error occurred: ...``)."""
        status = {"metadata": {}, "status": "Failure", "message": f"Internal error occurred: {message}",
                  "reason": "InternalError", "details": {"causes": [{"message": message}]}, "code": 500}
        await self._close_with(status)

    async def finish(self, code: int, argv: list[str]) -> None:
        if self.ws.closed:
            return
        if code == 0:
            status: dict[str, Any] = {"metadata": {}, "status": "Success"}
        else:
            status = {"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                      "message": f"command terminated with non-zero exit code: error executing command "
                                 f"[{' '.join(argv)}], exit code {code}",
                      "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
        await self._close_with(status)

    async def _close_with(self, status: dict[str, Any]) -> None:
        if self.ws.closed:
            return
        await self._client_ready()
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await self.ws.send_bytes(bytes([ERROR]) + json.dumps(status).encode())
            await self.ws.close()


class Session:
    """One exec: a command of its own in the pod (not the container's main process)."""

    def __init__(self, channels: Channels, kubelet: Kubelet, pod: Pod, container: str, tty: bool,
                 stdin: bool, uid: str = "") -> None:
        self.channels = channels
        # The container's environment and files, its tools, and the access log of the pods it talks to.
        ctx = kubelet.sandboxes.shell_ctx(pod.namespace, pod.name, uid, container, self.channels.out,
                                          self.channels.err, pod=pod)
        self.proc = Proc(ctx, tty, stdin)

    async def run(self, argv: list[str]) -> int:
        task = asyncio.ensure_future(self.proc.run(argv))
        reader = asyncio.ensure_future(self.channels.read(self.proc.feed, self.proc.eof, self.proc.room))
        try:
            await asyncio.wait([task, reader], return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                # The client went away: stop the command, as the runtime kills an exec's process.
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
                return 130
            return task.result()
        except asyncio.CancelledError:
            task.cancel()
            return 130
        finally:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader
