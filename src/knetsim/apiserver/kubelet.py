"""The simulated kubelet: runs a pod's command, keeps its log, reports how the container ended.

A container is run when its pod is Running and its command is something the simulated shell
can run to the end with the same result as the real one (``runnable``): a busybox-style
one-shot (``wget -qO- -T 2 http://web``, ``sh -c 'nslookup web; echo done'``), a sleep, or an
interactive shell with stdin (``kubectl run -it ... -- sh``), on a shell-ish image. Servers
(nginx, an app without a command) and scripts the shell does not understand (pipes, loops) are
left Running, as before: knetsim cannot tell what they would print or when they would exit.

Each run writes its stdout and stderr to the container log (``kubectl logs``, ``-f``,
``--tail``, ``--timestamps``, ``--previous``, ``--limit-bytes``, ``--since``) and, while
attached, to the attach streams. When the command exits, the container's state becomes
``terminated`` (exitCode, reason Completed/Error); with restartPolicy Never (or OnFailure
and exit 0) that is final and the pod turns Succeeded/Failed; otherwise the container restarts:
restartCount+1, ``lastState`` keeps the exit, and from the second exit on it waits in
``CrashLoopBackOff`` for 10 s, 20 s, 40 s ... 300 s first, as the kubelet's backoff does.

A container with ``stdin: true`` (``kubectl run -i``) waits for its first attach (at most
``ATTACH_WAIT``) before it starts, so the attached client sees all of the output, on the
right stream. Nothing here blocks the event loop: a command is a task, its waits are the
tools' own (``-T``, ``-w``, ``-m``, the kernel's connect timeout, ``sleep``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from ..model.objects import Pod
from . import shell
from .proc import SHELLS, Proc, is_interactive_shell
from .store import Change

log = logging.getLogger("knetsim.apiserver")

ATTACH_WAIT = 10.0  # kubectl attaches within about a second of the pod turning Running
LOG_LIMIT = 1 << 20  # bytes kept per container run (the kubelet rotates at 10 MiB)
BACKOFF_BASE, BACKOFF_MAX = 10.0, 300.0

# Images whose entrypoint is a shell-ish userland (busybox applets, curl, dig...): their
# commands are the ones the simulated shell imitates. Keyed by the last path component.
SHELL_IMAGES = {"busybox", "alpine", "curl", "netshoot", "network-multitool", "ubuntu", "debian", "dnsutils",
                "jessie-dnsutils", "dnstools", "fedora", "centos", "toolbox"}
# The image's CMD when the pod sets neither command nor args.
DEFAULT_CMD = {"busybox": ["sh"], "alpine": ["/bin/sh"], "netshoot": ["zsh"], "ubuntu": ["bash"],
               "debian": ["bash"], "fedora": ["bash"], "centos": ["bash"], "curl": ["curl"]}
_UNSUPPORTED = re.compile(r"(?<!\|)\|(?!\|)|(?<!&)&(?!&)|[<>`]|\$\(")


def image_name(image: str) -> str:
    """``docker.io/curlimages/curl:8.5.0@sha256:...`` → ``curl``."""
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


def container_argv(container: Mapping[str, Any]) -> list[str] | None:
    """What the runtime executes: command + args, or the image's entrypoint/CMD they replace."""
    command = [str(a) for a in container.get("command") or []]
    args = [str(a) for a in container.get("args") or []]
    image = image_name(str(container.get("image") or ""))
    if command:
        return command + args
    if image == "curl":
        # curlimages/curl's entrypoint.sh: `set -- curl "$@"` unless $1 is a command.
        if not args:
            return ["curl"]
        first = args[0].rsplit("/", 1)[-1]
        return args if first in shell.TOOLS and not args[0].startswith("-") else ["curl", *args]
    if args:
        return args
    return list(DEFAULT_CMD[image]) if image in DEFAULT_CMD else None


def script_supported(script: str) -> bool:
    """Whether every command of a ``sh -c`` script is one the simulated shell knows, with no
    syntax it lacks (pipes, redirections, background jobs, command substitution, loops)."""
    bare = re.sub(r"'[^']*'", "''", script)
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', lambda m: '""' if "$(" not in m.group(0) and "`" not in m.group(0)
                  else "$(", bare)
    if _UNSUPPORTED.search(bare):
        return False
    commands = shell.split_commands(script)
    if not commands:
        return True
    for _op, command in commands:
        try:
            words = shlex.split(command, posix=True)
        except ValueError:
            return False
        if not argv_supported(words):
            return False
    return True


def argv_supported(argv: list[str]) -> bool:
    words = list(argv)
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        words.pop(0)
    if not words:
        return True
    name = words[0].rsplit("/", 1)[-1]
    if name in ("exec", "env") and len(words) > 1:
        return argv_supported(words[1:])
    if name in SHELLS:
        if len(words) >= 3 and words[1] == "-c":
            return script_supported(words[2])
        return False
    return name in shell.TOOLS


def runnable(container: Mapping[str, Any]) -> list[str] | None:
    """The argv the kubelet runs for this container, or None to leave it running untouched."""
    argv = container_argv(container)
    if container.get("stdin"):
        # Someone attaches (kubectl run -i): run whatever it is; an unknown program answers
        # `sh: X: not found` as busybox would, rather than leaving the client hanging.
        return argv or ["sh"]
    if argv is None or image_name(str(container.get("image") or "")) not in SHELL_IMAGES:
        return None
    if is_interactive_shell(argv):
        return None  # a shell reading an empty stdin exits at once; kept running (see README)
    return argv if argv_supported(argv) else None


def go_duration(seconds: float) -> str:
    """Go's time.Duration text for whole seconds: 10s, 1m20s, 5m0s."""
    m, sec = divmod(int(seconds), 60)
    return f"{m}m{sec}s" if m else f"{sec}s"


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


@dataclass
class Log:
    """One run's output: (time, text) chunks in order, stdout and stderr interleaved as written."""

    chunks: list[tuple[datetime, str]] = field(default_factory=list)
    size: int = 0
    followers: list[asyncio.Queue[tuple[datetime, str] | None]] = field(default_factory=list)
    closed: bool = False

    def write(self, text: str) -> None:
        if not text:
            return
        item = (datetime.now(UTC), text)
        self.chunks.append(item)
        self.size += len(text)
        while self.size > LOG_LIMIT and len(self.chunks) > 1:
            self.size -= len(self.chunks.pop(0)[1])
        for q in self.followers:
            q.put_nowait(item)

    def close(self) -> None:
        self.closed = True
        for q in self.followers:
            q.put_nowait(None)

    def lines(self) -> list[tuple[datetime, str]]:
        """Whole lines (the last one may lack its newline), each with the time it started."""
        out: list[tuple[datetime, str]] = []
        open_line = False
        for t, text in self.chunks:
            for piece in text.splitlines(keepends=True):
                if open_line:
                    out[-1] = (out[-1][0], out[-1][1] + piece)
                else:
                    out.append((t, piece))
                open_line = not piece.endswith("\n")
        return out


class Container:
    def __init__(self, kubelet: Kubelet, namespace: str, pod: str, uid: str, spec: Mapping[str, Any],
                 argv: list[str], restart_policy: str, restarts: int) -> None:
        self.kubelet, self.namespace, self.pod, self.uid = kubelet, namespace, pod, uid
        self.name = str(spec.get("name"))
        self.argv = argv
        self.tty, self.stdin, self.stdin_once = bool(spec.get("tty")), bool(spec.get("stdin")), \
            bool(spec.get("stdinOnce"))
        self.restart_policy = restart_policy
        self.restarts = restarts
        self.log, self.previous = Log(), None  # type: Log, Log | None
        self.sinks: list[Any] = []  # attached wsexec.Channels
        self.attached = asyncio.Event()
        self.run_done = asyncio.Event()
        self.proc: Proc | None = None
        self.ctx: shell.Ctx | None = None
        self.final = False
        self.state: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}
        self.last_state: dict[str, Any] = {}
        self.task: asyncio.Task[None] | None = None

    async def _emit(self, channel: int, text: str) -> None:
        self.log.write(text)
        for sink in list(self.sinks):
            await sink.send(channel, text)

    async def out(self, text: str) -> None:
        await self._emit(1, text)

    async def err(self, text: str) -> None:
        await self._emit(2, text)

    def _new_proc(self) -> Proc:
        state = self.kubelet.server.state
        pod = state.pods.get(f"{self.namespace}/{self.pod}") if state is not None else None
        if pod is None:
            stored = self.kubelet.server.store.get(("Pod", self.namespace, self.pod))
            pod = Pod.parse(stored.body if stored else {"metadata": {"name": self.pod, "namespace": self.namespace}})
        self.ctx = shell.Ctx(state, pod, self.name, self.out, self.err, shell.pod_env(state, pod, self.name))
        return Proc(self.ctx, self.tty, self.stdin)

    async def run(self) -> None:
        exits = 0
        try:
            while True:
                self.proc = self._new_proc()
                self.run_done = asyncio.Event()
                if self.stdin and not self.attached.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.attached.wait(), ATTACH_WAIT)
                started = now_text()
                self.state = {"running": {"startedAt": started}}
                self.kubelet.report(self)
                try:
                    code = await self.proc.run(self.argv)
                except Exception as exc:  # a tool bug must not leave the pod Running forever
                    log.exception("container %s/%s/%s failed", self.namespace, self.pod, self.name)
                    await self.err(f"knetsim: {type(exc).__name__}: {exc}\n")
                    code = 1
                terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                              "startedAt": started, "finishedAt": now_text(),
                              "containerID": self.kubelet.container_id(self)}
                self.log.close()
                self.run_done.set()
                if self.restart_policy == "Never" or (self.restart_policy == "OnFailure" and code == 0):
                    self.state, self.final = {"terminated": terminated}, True
                    self.kubelet.report(self)
                    return
                self.last_state = {"terminated": terminated}
                # The first restart is immediate; the backoff starts with the second exit.
                exits += 1
                delay = 0.0 if exits == 1 else min(BACKOFF_BASE * 2 ** (exits - 2), BACKOFF_MAX)
                if delay:
                    self.state = {"waiting": {"reason": "CrashLoopBackOff", "message": (
                        f"back-off {go_duration(delay)} restarting failed container={self.name} "
                        f"pod={self.pod}_{self.namespace}({self.uid})")}}
                else:
                    self.state = {"terminated": terminated}
                self.kubelet.report(self)
                await asyncio.sleep(delay)
                self.restarts += 1
                self.previous, self.log = self.log, Log()
        except asyncio.CancelledError:
            self.log.close()
            self.run_done.set()

    def feed(self, data: bytes) -> None:
        if self.proc is not None:
            self.proc.feed(data)

    def close_stdin(self) -> None:
        if self.proc is not None:
            self.proc.eof()


class Kubelet:
    def __init__(self, server: Any) -> None:
        self.server = server
        self.containers: dict[tuple[str, str], dict[str, Container]] = {}  # (ns, name) → containers
        self.uids: dict[tuple[str, str], str] = {}

    # --- lifecycle ----------------------------------------------------------------------

    def install(self) -> None:
        self.server.store.listeners.append(self._on_changes)
        self.server.state_listeners.append(self._on_state)
        self.server.exec_handlers["kubelet"] = self
        self.server.exec_handlers["log"] = self.logs
        for (kind, _ns, _name), stored in list(self.server.store.objects.items()):
            if kind == "Pod":
                self._consider(stored.body)

    async def close(self) -> None:
        tasks = [c.task for cs in self.containers.values() for c in cs.values() if c.task is not None]
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t
        self.containers.clear()

    def _on_changes(self, changes: list[Change]) -> None:
        for c in changes:
            if c.kind != "Pod":
                continue
            if c.type == "DELETED" and c.old is not None:
                meta = c.old.get("metadata") or {}
                self._stop((meta.get("namespace", ""), meta.get("name", "")), meta.get("uid", ""))
            elif c.new is not None:
                self._consider(c.new)

    def _on_state(self, state: Any) -> None:
        for (ns, name), cs in self.containers.items():
            pod = state.pods.get(f"{ns}/{name}")
            for c in cs.values():
                if c.ctx is not None:
                    c.ctx.state = state
                    if pod is not None:
                        c.ctx.pod = pod

    def _stop(self, key: tuple[str, str], uid: str) -> None:
        if self.uids.get(key) != uid:
            return
        self.uids.pop(key, None)
        for c in self.containers.pop(key, {}).values():
            if c.task is not None:
                c.task.cancel()

    def _consider(self, body: Mapping[str, Any]) -> None:
        meta = body.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        uid = str(meta.get("uid", ""))
        if self.uids.get(key) == uid:
            return
        status = body.get("status") or {}
        spec = body.get("spec") or {}
        if status.get("phase") != "Running" or not status.get("podIP") or not spec.get("nodeName"):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if key in self.uids:
            self._stop(key, self.uids[key])
        self.uids[key] = uid
        known = {cs.get("name"): cs for cs in status.get("containerStatuses") or []}
        started: dict[str, Container] = {}
        for spec_c in spec.get("containers") or []:
            cs = known.get(spec_c.get("name")) or {}
            if "terminated" in (cs.get("state") or {}) and spec.get("restartPolicy", "Always") != "Always":
                continue  # finished before a restart of the server
            argv = runnable(spec_c)
            if argv is None:
                continue
            c = Container(self, key[0], key[1], uid, spec_c, argv, str(spec.get("restartPolicy") or "Always"),
                          int(cs.get("restartCount") or 0))
            c.task = loop.create_task(c.run())
            started[c.name] = c
        self.containers[key] = started

    def container_id(self, c: Container) -> str:
        return "containerd://" + hashlib.sha256(f"{c.uid}/{c.name}/{c.restarts}".encode()).hexdigest()

    # --- status ---------------------------------------------------------------------------

    def report(self, c: Container) -> None:
        """Write the container's state into the pod status; the controllers take it from there."""
        key = ("Pod", c.namespace, c.pod)
        stored = self.server.store.get(key)
        if stored is None or (stored.body.get("metadata") or {}).get("uid") != c.uid:
            return
        status = json.loads(json.dumps(stored.body.get("status") or {}))
        for cs in status.get("containerStatuses") or []:
            if cs.get("name") != c.name:
                continue
            cs["state"] = json.loads(json.dumps(c.state))
            if c.last_state:
                cs["lastState"] = json.loads(json.dumps(c.last_state))
            cs["restartCount"] = c.restarts
            running = "running" in c.state
            cs["started"] = running
            if not running:
                cs["ready"] = False
            if "running" in c.state or "terminated" in c.state:
                cs["containerID"] = self.container_id(c)
        spec = stored.body.get("spec") or {}
        apply_phase(status, spec)
        self.server.set_pod_status(c.namespace, c.pod, status)
        self.server.mark_dirty()

    # --- attach ---------------------------------------------------------------------------

    async def attach(self, channels: Any, namespace: str, pod: str, container: str, want_stdin: bool) -> None:
        c = self.containers.get((namespace, pod), {}).get(container)
        if c is None:
            # Not run here (a server): its output is not simulated; stay attached until the client leaves.
            await channels.read(lambda _b: None, lambda: None)
            return
        if c.final or (c.run_done.is_set() and not c.attached.is_set()):
            await channels.finish(0, c.argv)
            return
        use_stdin = want_stdin and c.stdin
        c.sinks.append(channels)
        c.attached.set()
        done = c.run_done
        reader = asyncio.ensure_future(channels.read(c.feed if use_stdin else (lambda _b: None),
                                                     c.close_stdin if use_stdin else (lambda: None)))
        waiter = asyncio.ensure_future(done.wait())
        try:
            await asyncio.wait([reader, waiter], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (reader, waiter):
                t.cancel()
                with contextlib.suppress(BaseException):
                    await t
            with contextlib.suppress(ValueError):
                c.sinks.remove(channels)
            if use_stdin and c.stdin_once and not done.is_set():
                c.close_stdin()  # stdinOnce: the first client's detach closes stdin for this run
        # The kubelet's attach reports Success whatever the exit code; `kubectl run -i` reads it
        # from the pod status.
        await channels.finish(0, c.argv)

    # --- logs -----------------------------------------------------------------------------

    async def logs(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        from .server import ApiError

        stored = self.server.store.get(("Pod", namespace, name))
        if stored is None:
            raise ApiError(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"})
        body = stored.body
        q = request.query
        names = [str(c.get("name")) for c in (body.get("spec") or {}).get("containers") or []]
        container = q.get("container", "")
        if not container:
            if len(names) != 1:
                raise ApiError(400, "BadRequest", f"a container name must be specified for pod {name}, choose one "
                                                  f"of: [{' '.join(names)}]")
            container = names[0]
        elif container not in names:
            raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {name}")
        statuses = {cs.get("name"): cs for cs in (body.get("status") or {}).get("containerStatuses") or []}
        cs = statuses.get(container)
        waiting = ((cs or {}).get("state") or {}).get("waiting") if cs else {"reason": "ContainerCreating"}
        if waiting is not None and not (cs or {}).get("lastState"):
            raise ApiError(400, "BadRequest", f'container "{container}" in pod "{name}" is waiting to start: '
                                              f'{waiting.get("reason") or "ContainerCreating"}')
        for _ in range(3):
            await asyncio.sleep(0)  # let a command that just started print what it prints at once
        c = self.containers.get((namespace, name), {}).get(container)
        previous = q.get("previous") in ("true", "1")
        if previous:
            if c is None or c.previous is None:
                raise ApiError(400, "BadRequest", f'previous terminated container "{container}" in pod "{name}" '
                                                  "not found")
            source: Log | None = c.previous
        else:
            source = c.log if c is not None else None
        render = Renderer(q)
        head = render.backlog(source.lines() if source is not None else [])
        follow = q.get("follow") in ("true", "1") and not previous
        if not follow:
            return web.Response(text=head, content_type="text/plain")
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        queue: asyncio.Queue[tuple[datetime, str] | None] = asyncio.Queue()
        if source is not None and not source.closed:
            source.followers.append(queue)
        try:
            with contextlib.suppress(ConnectionResetError):
                if head:
                    await resp.write(head.encode())
                if source is None or source.closed:
                    if source is None:
                        # A container knetsim does not run (a server) prints nothing; follow until it goes away.
                        await self._hold(request, namespace, name, stored.body["metadata"].get("uid"))
                    return resp
                while not self.server.closing:
                    try:
                        item = await asyncio.wait_for(queue.get(), 1.0)
                    except TimeoutError:
                        if request.transport is None or request.transport.is_closing():
                            break
                        continue
                    if item is None:
                        break
                    text = render.chunk(*item)
                    if text:
                        await resp.write(text.encode())
                    if render.exhausted:
                        break
        finally:
            if source is not None and queue in source.followers:
                source.followers.remove(queue)
        return resp

    async def _hold(self, request: web.Request, namespace: str, name: str, uid: Any) -> None:
        while not self.server.closing:
            stored = self.server.store.get(("Pod", namespace, name))
            if stored is None or stored.body["metadata"].get("uid") != uid:
                return
            if request.transport is None or request.transport.is_closing():
                return
            await asyncio.sleep(1.0)


class Renderer:
    """``tailLines``, ``timestamps``, ``sinceSeconds``/``sinceTime`` and ``limitBytes`` of a log request."""

    def __init__(self, q: Mapping[str, str]) -> None:
        self.timestamps = q.get("timestamps") in ("true", "1")
        self.tail = int(q["tailLines"]) if q.get("tailLines", "").lstrip("-").isdigit() else None
        self.limit = int(q["limitBytes"]) if q.get("limitBytes", "").isdigit() else None
        self.since: datetime | None = None
        if q.get("sinceSeconds", "").isdigit():
            self.since = datetime.now(UTC) - timedelta(seconds=int(q["sinceSeconds"]))
        elif q.get("sinceTime"):
            with contextlib.suppress(ValueError):
                self.since = datetime.fromisoformat(q["sinceTime"].replace("Z", "+00:00"))
        self.sent = 0
        self.at_line_start = True

    @property
    def exhausted(self) -> bool:
        return self.limit is not None and self.sent >= self.limit

    def _cap(self, text: str) -> str:
        if self.limit is None:
            return text
        room = self.limit - self.sent
        data = text.encode()[:max(room, 0)]
        self.sent += len(data)
        return data.decode(errors="ignore")

    def backlog(self, lines: list[tuple[datetime, str]]) -> str:
        if self.since is not None:
            lines = [(t, s) for t, s in lines if t >= self.since]
        if self.tail is not None and self.tail >= 0:
            lines = lines[len(lines) - self.tail:] if self.tail else []
        out = "".join((f"{_stamp(t)} " if self.timestamps else "") + s for t, s in lines)
        if lines:
            self.at_line_start = lines[-1][1].endswith("\n")
        return self._cap(out)

    def chunk(self, t: datetime, text: str) -> str:
        if not self.timestamps:
            return self._cap(text)
        out = []
        for piece in text.splitlines(keepends=True):
            if self.at_line_start:
                out.append(f"{_stamp(t)} ")
            out.append(piece)
            self.at_line_start = piece.endswith("\n")
        return self._cap("".join(out))


def apply_phase(status: dict[str, Any], spec: Mapping[str, Any]) -> None:
    """Pod phase and readiness conditions from the container states, as the kubelet computes them."""
    statuses = status.get("containerStatuses") or []
    names = [c.get("name") for c in spec.get("containers") or []]
    states = {cs.get("name"): cs.get("state") or {} for cs in statuses}
    if not names or any(n not in states for n in names):
        return
    policy = spec.get("restartPolicy") or "Always"
    terminated = [states[n].get("terminated") for n in names]
    final = all(t is not None for t in terminated) and (
        policy == "Never" or (policy == "OnFailure" and all(t["exitCode"] == 0 for t in terminated if t)))
    unready = [n for n, cs in zip(names, [next(s for s in statuses if s.get("name") == n) for n in names],
                                  strict=True) if not cs.get("ready")]
    if final:
        status["phase"] = "Succeeded" if all(t["exitCode"] == 0 for t in terminated if t) else "Failed"
    conditions = []
    for cond in status.get("conditions") or []:
        cond = dict(cond)
        if cond.get("type") in ("Ready", "ContainersReady"):
            if final:
                cond.update(status="False", reason="PodCompleted")
                cond.pop("message", None)
            elif unready:
                cond.update(status="False", reason="ContainersNotReady",
                            message=f"containers with unready status: [{' '.join(unready)}]")
        elif cond.get("type") == "PodReadyToStartContainers" and final:
            cond["status"] = "False"  # the sandbox is torn down once every container is done
        conditions.append(cond)
    status["conditions"] = conditions
