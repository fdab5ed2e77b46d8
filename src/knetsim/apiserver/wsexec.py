"""``pods/exec`` and ``pods/attach`` over WebSocket, subprotocol ``v5.channel.k8s.io``.

Binary frames, first byte the channel: 0 stdin, 1 stdout, 2 stderr, 3 status (one
``metav1.Status``, then close), 4 resize, 255 close-stream (v5: the client half-closes
stdin). kubectl 1.32 offers only v5 and falls back to SPDY only when the upgrade fails, so
SPDY is not served.

With ``tty`` the simulated pty does what a real one does: echo, line editing (backspace,
Ctrl-C, Ctrl-D) and ``\\n`` → ``\\r\\n``. An attach (``kubectl run --rm -it``) runs the
container's command; when the session ends the pod is marked Succeeded/Failed with the exit
code, because kubectl waits for that before deleting the pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from aiohttp import WSMsgType, web

from ..model.objects import Pod
from . import shell
from .server import ApiError, ApiServer, Target, now_rfc3339

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


def install(server: ApiServer) -> None:
    server.exec_handlers["ws"] = handle


async def handle(server: ApiServer, request: web.Request, t: Target) -> web.StreamResponse:
    if request.headers.get("Upgrade", "").lower() != "websocket":
        raise ApiError(400, "BadRequest", "knetsim serves exec and attach over WebSocket (v5.channel.k8s.io) only; "
                                          "upgrade request required")
    await server.settle()
    stored = server.store.get(("Pod", t.namespace, t.name))
    if stored is None:
        raise ApiError(404, "NotFound", f'pods "{t.name}" not found', {"name": t.name, "kind": "pods"})
    body = stored.body
    containers = [c.get("name") for c in (body.get("spec") or {}).get("containers") or []]
    q = request.query
    container = q.get("container") or (containers[0] if containers else "")
    if container not in containers:
        raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {t.name}")
    phase = (body.get("status") or {}).get("phase")
    if phase != "Running":
        raise ApiError(400, "BadRequest", f"unable to upgrade connection: pod {t.name} is not running (phase "
                                          f"{phase or 'Pending'})")
    state = server.state
    pod = state.pods.get(f"{t.namespace}/{t.name}") if state is not None else None
    if pod is None:
        pod = Pod.parse(body)
    ws = web.WebSocketResponse(protocols=PROTOCOLS, autoping=True, heartbeat=None, max_msg_size=0)
    await ws.prepare(request)
    tty = q.get("tty") in ("true", "1")
    want_stdin = q.get("stdin") in ("true", "1")
    if t.sub == "exec":
        argv = list(q.getall("command", []))
    else:
        spec = next(c for c in body["spec"]["containers"] if c.get("name") == container)
        argv = list(spec.get("command") or []) + list(spec.get("args") or []) or ["sh"]
    session = Session(ws, state, pod, container, tty, want_stdin)
    code = await session.run(argv)
    # The kubelet's ServeAttach reports Success whatever the container's exit code (only exec
    # reports NonZeroExitCode); `kubectl run -i` reads the code from the pod status instead.
    await session.finish(code if t.sub == "exec" else 0, argv)
    if t.sub == "attach" and (body.get("spec") or {}).get("restartPolicy") in ("Never", "OnFailure"):
        _terminate(server, t, container, code)
    return ws


def _terminate(server: ApiServer, t: Target, container: str, code: int) -> None:
    stored = server.store.get(("Pod", t.namespace, t.name))
    if stored is None:
        return
    status = json.loads(json.dumps(stored.body.get("status") or {}))
    now = now_rfc3339()
    status["phase"] = "Succeeded" if code == 0 else "Failed"
    for c in status.get("containerStatuses") or []:
        if c.get("name") == container:
            c["ready"] = False
            c["started"] = False
            c["state"] = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                         "startedAt": status.get("startTime", now), "finishedAt": now}}
    for cond in status.get("conditions") or []:
        if cond.get("type") in ("Ready", "ContainersReady"):
            cond["status"] = "False"
            cond["reason"] = "PodCompleted"
    server.set_pod_status(t.namespace, t.name, status)


class Session:
    def __init__(self, ws: web.WebSocketResponse, state: Any, pod: Pod, container: str, tty: bool,
                 stdin: bool) -> None:
        self.ws, self.state, self.pod, self.container, self.tty = ws, state, pod, container, tty
        self.stdin_open = stdin
        self.inbox: asyncio.Queue[bytes] = asyncio.Queue()  # b"" = EOF
        self.current: asyncio.Task[int] | None = None
        self.closed = False
        self.ctx = shell.Ctx(state, pod, container, self.out, self.err, shell.pod_env(state, pod, container),
                             stdin=self._stdin if stdin else None)

    async def _send(self, channel: int, text: str) -> None:
        if self.closed or self.ws.closed or not text:
            return
        if self.tty:
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
            channel = STDOUT
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await self.ws.send_bytes(bytes([channel]) + text.encode())

    async def out(self, text: str) -> None:
        await self._send(STDOUT, text)

    async def err(self, text: str) -> None:
        await self._send(STDERR, text)

    async def _stdin(self) -> bytes:
        return await self.inbox.get()

    async def _reader(self) -> None:
        async for msg in self.ws:
            if msg.type != WSMsgType.BINARY or not msg.data:
                continue
            data: bytes = msg.data
            channel, payload = data[0], data[1:]
            if channel == STDIN:
                if self.tty and b"\x03" in payload and self.current is not None and not self.current.done():
                    self.current.cancel()
                    continue
                self.inbox.put_nowait(payload)
            elif channel == CLOSE and payload[:1] == bytes([STDIN]):
                self.inbox.put_nowait(b"")
        self.closed = True
        self.inbox.put_nowait(b"")
        if self.current is not None and not self.current.done():
            self.current.cancel()

    async def _run_task(self, coro: Any) -> int:
        self.current = asyncio.ensure_future(coro)
        try:
            return int(await self.current)
        except asyncio.CancelledError:
            if self.closed:
                raise
            await self.out("^C\n")
            return 130
        except shell.ExitShell as exc:
            raise exc
        finally:
            self.current = None

    async def run(self, argv: list[str]) -> int:
        reader = asyncio.ensure_future(self._reader())
        try:
            interactive = self.stdin_open and argv and argv[0].rsplit("/", 1)[-1] in ("sh", "ash", "bash") and \
                len(argv) == 1
            if interactive:
                return await self._repl()
            try:
                return await self._run_task(shell.run_argv(self.ctx, argv))
            except shell.ExitShell as exc:
                return exc.code
        except asyncio.CancelledError:
            return 130
        finally:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader

    async def _readline(self, buf: bytearray) -> str | None:
        """One line of input; with a tty, echo and line editing as the pty's line discipline does."""
        while True:
            nl = buf.find(b"\n") if not self.tty else -1
            if nl >= 0:
                line = bytes(buf[:nl])
                del buf[:nl + 1]
                return line.decode(errors="replace")
            chunk = await self.inbox.get()
            if not chunk:
                if buf:
                    line = bytes(buf)
                    buf.clear()
                    return line.decode(errors="replace")
                return None
            if not self.tty:
                buf.extend(chunk)
                continue
            for b in chunk:
                if b in (0x0D, 0x0A):
                    await self.out("\n")
                    line = bytes(buf)
                    buf.clear()
                    return line.decode(errors="replace")
                if b in (0x7F, 0x08):
                    if buf:
                        del buf[-1]
                        await self.out("\b \b")
                elif b == 0x04:
                    if not buf:
                        return None
                elif b == 0x03:
                    buf.clear()
                    await self.out("^C\n/ # ")
                elif b >= 0x20 or b == 0x09:
                    buf.append(b)
                    await self.out(chr(b))

    async def _repl(self) -> int:
        buf = bytearray()
        code = 0
        while True:
            if self.tty:
                await self.out("/ # ")
            line = await self._readline(buf)
            if line is None:
                return code
            try:
                code = await self._run_task(shell.run_line(self.ctx, line))
            except shell.ExitShell as exc:
                return exc.code

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
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await self.ws.send_bytes(bytes([ERROR]) + json.dumps(status).encode())
            await self.ws.close()
