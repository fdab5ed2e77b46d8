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

Every container of a running pod has a log (``containerlog``: files under the state dir, in the
CRI format), servers included: a web server's log gets one access-log line per request it
serves (``served``, fed by exec tools, the Ingress entry and port-forward; formats in
``accesslog``). A container whose image cannot be pulled (the registry model of
``knetsim.cluster.images``) is handed to ``imagepull``, which records the kubelet's events and
keeps it waiting in ErrImagePull / ImagePullBackOff until the image is fixed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..apiserver.events import Recorder, involved
from ..apiserver.registry import commit_batch, status_write
from ..apiserver.store import Change
from ..cluster.containerruns import GRACEFUL_SERVERS
from ..cluster.images import pull_error
from ..cluster.workloads import pod_status
from ..cluster.workloadstatus import coredns_startup_error
from ..container.accesslog import Served, container_for, log_line
from ..container.cgroup import Cgroup, Killed
from ..model.jsonvalue import json_copy
from ..model.objects import Pod
from ..model.timestamps import now_rfc3339
from . import initcontainers
from .configwait import ConfigWait
from .containerlog import Log, LogStore
from .flows import FlowRecorder, probe_port
from .imagepull import ImagePuller, started
from .node import NodeView
from .podconfig import waiting_states
from .podstatus import PodStatusWriter, apply_phase, await_startup, complete, hold, stamp_conditions
from .prober import ContainerProbes, network_result, schedules
from .sandbox import Sandboxes

if TYPE_CHECKING:
    from ..container import shell
    from ..container.proc import Proc

log = logging.getLogger("knetsim.kubelet")

ATTACH_WAIT = 10.0  # kubectl attaches within about a second of the pod turning Running
BACKOFF_BASE, BACKOFF_MAX = 10.0, 300.0
# Images whose entrypoint is a shell-ish userland (busybox applets, curl, dig...): their
# commands are the ones the simulated shell imitates. Keyed by the last path component.
# agnhost's image is built on busybox (test/images/agnhost/BASEIMAGE), so its pods run shell loops and execs too.
SHELL_IMAGES = {"agnhost", "busybox", "alpine", "curl", "netshoot", "network-multitool", "ubuntu", "debian", "dnsutils",
                "jessie-dnsutils", "dnstools", "fedora", "centos", "toolbox"}
# The image's CMD when the pod sets neither command nor args.
DEFAULT_CMD = {"busybox": ["sh"], "alpine": ["/bin/sh"], "netshoot": ["zsh"], "ubuntu": ["bash"],
               "debian": ["bash"], "fedora": ["bash"], "centos": ["bash"], "curl": ["curl"]}


def image_name(image: str) -> str:
    """``docker.io/curlimages/curl:8.5.0@sha256:...`` → ``curl``."""
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


def _tools() -> Mapping[str, shell.Tool]:
    # The container's userland is loaded with the first container that runs a command: a cluster of
    # servers (every system pod) never needs it, and it is most of what the daemon would import.
    from ..container.proc import builtin_tools

    return builtin_tools()


def container_argv(container: Mapping[str, Any]) -> list[str] | None:
    """What the runtime executes: command + args, or the image's entrypoint/CMD they replace."""
    command = [str(a) for a in container.get("command") or []]
    args = [str(a) for a in container.get("args") or []]
    image = image_name(str(container.get("image") or ""))
    if command:
        return command + args
    if image == "agnhost":
        # The image's ENTRYPOINT is /agnhost: args pick its subcommand (with none it prints its help and exits,
        # which a pod would not be left to do: kept as the server it is meant to be).
        return ["/agnhost", *args] if args else None
    if image == "curl":
        # curlimages/curl's entrypoint.sh: `set -- curl "$@"` unless $1 is a command.
        if not args:
            return ["curl"]
        first = args[0].rsplit("/", 1)[-1]
        return args if first in _tools() and not args[0].startswith("-") else ["curl", *args]
    if args:
        return args
    return list(DEFAULT_CMD[image]) if image in DEFAULT_CMD else None


def script_supported(script: str) -> bool:
    """Whether every command a ``sh -c`` script runs is one the simulated shell has (pipes,
    redirections, loops and substitutions are the shell's own; a command name that is itself
    an expansion cannot be checked before it runs)."""
    from ..container.shell import static_commands

    names = static_commands(script)
    if names is None:
        return False
    return all(_known(name) for name in names)


def _known(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    # A name busybox lacks is `not found` in a real container too; an applet knetsim does not
    # imitate (ping, ps...) would print what it cannot tell, so such a script is left running.
    from ..container.shell import BUSYBOX_APPLETS

    return base in _tools() or base not in BUSYBOX_APPLETS


def argv_supported(argv: list[str]) -> bool:
    words = list(argv)
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        words.pop(0)
    if not words:
        return True
    name = words[0].rsplit("/", 1)[-1]
    if name in ("exec", "env") and len(words) > 1:
        return argv_supported(words[1:])
    from ..container.proc import SHELLS

    if name in SHELLS:
        if len(words) >= 3 and words[1] == "-c":
            return script_supported(words[2])
        return False
    if name == "agnhost":
        # Only the subcommands knetsim simulates run; another (logs-generator, mounttest...) is left running.
        from ..container.agnhost import SIMULATED

        return len(words) > 1 and words[1] in SIMULATED
    return name in _tools()


def runnable(container: Mapping[str, Any]) -> list[str] | None:
    """The argv the kubelet runs for this container, or None to leave it running untouched."""
    argv = container_argv(container)
    if container.get("stdin"):
        # Someone attaches (kubectl run -i): run whatever it is; an unknown program answers
        # `sh: X: not found` as busybox would, rather than leaving the client hanging.
        return argv or ["sh"]
    if argv is None or image_name(str(container.get("image") or "")) not in SHELL_IMAGES:
        return None
    from ..container.proc import is_interactive_shell

    if is_interactive_shell(argv):
        return None  # a shell reading an empty stdin exits at once; kept running (see README)
    return argv if argv_supported(argv) else None


def go_duration(seconds: float) -> str:
    """Go's time.Duration text for whole seconds: 10s, 1m20s, 5m0s."""
    m, sec = divmod(int(seconds), 60)
    return f"{m}m{sec}s" if m else f"{sec}s"


class Container:
    def __init__(self, kubelet: Kubelet, namespace: str, pod: str, uid: str, spec: Mapping[str, Any],
                 argv: list[str] | None, restart_policy: str, restarts: int) -> None:
        self.kubelet, self.namespace, self.pod, self.uid = kubelet, namespace, pod, uid
        self.name = str(spec.get("name"))
        self.image = str(spec.get("image") or "")
        self.argv = argv  # None: a server, which runs until it is killed (a failing liveness probe)
        self.exit_line: str | None = None  # set: the program prints it and exits 1 each time it starts
        self.tty, self.stdin, self.stdin_once = bool(spec.get("tty")), bool(spec.get("stdin")), \
            bool(spec.get("stdinOnce"))
        self.restart_policy = restart_policy
        self.restarts = restarts
        self.log: Log = Log()
        self.sinks: list[Any] = []  # attached wsexec.Channels
        self.attached = asyncio.Event()
        self.run_done = asyncio.Event()
        self.proc: Proc | None = None
        self.ctx: shell.Ctx | None = None
        self.final = False
        self.state: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}
        self.last_state: dict[str, Any] = {}
        self.task: asyncio.Task[None] | None = None
        self.killed = asyncio.Event()
        self.kill_code = 137
        self.oom_killed = False  # this run ended by the OOM killer: terminated with reason OOMKilled
        self.exited = False  # this run's program exited by itself (netexec's /exit): its code, not a kill
        self.started_at: str | None = None  # when the first run started, if before this object (a restart)
        self.ephemeral = False  # a `kubectl debug` container: reported in ephemeralContainerStatuses
        self.init = False  # an init container: reported in initContainerStatuses

    def kill(self) -> None:
        """Stop this run as the runtime does (SIGTERM, then SIGKILL): servers that shut down cleanly
        on SIGTERM exit 0, anything else is killed (137; the grace period is not waited for). Every
        process in the container goes with it, ``kubectl exec`` sessions included."""
        self.kill_code = 0 if image_name(self.image) in GRACEFUL_SERVERS else 137
        self.killed.set()
        cgroup = self.kubelet.sandboxes.cgroups.get((self.uid, self.name))
        if cgroup is not None:
            cgroup.kill(Killed("Killed", 137))

    def exit(self, code: int) -> None:
        """The program exited with ``code`` by itself (os.Exit): the run ends as a command's would, and the
        restartPolicy decides as for any exit."""
        self.exited, self.kill_code = True, code
        self.killed.set()
        cgroup = self.kubelet.sandboxes.cgroups.get((self.uid, self.name))
        if cgroup is not None:
            cgroup.kill(Killed("Killed", code))

    def oom(self) -> None:
        """The OOM killer took the container's processes (the main one is killed with the others)."""
        self.oom_killed = True
        self.kill_code = 137
        self.killed.set()

    async def _emit(self, channel: int, text: str) -> None:
        self.log.write(text, "stdout" if channel == 1 else "stderr")
        for sink in list(self.sinks):
            await sink.send(channel, text)

    async def out(self, text: str) -> None:
        await self._emit(1, text)

    async def err(self, text: str) -> None:
        await self._emit(2, text)

    def _new_proc(self, restart: bool) -> Proc:
        from ..container.proc import Proc

        # A restart gets a new writable layer. The first run keeps what an exec wrote: the pod can read Running
        # (and an exec, a `kubectl cp`, land) a moment before this task starts its process.
        self.ctx = self.kubelet.sandboxes.shell_ctx(self.namespace, self.pod, self.uid, self.name, self.out, self.err,
                                                    fresh_fs=restart)
        return Proc(self.ctx, self.tty, self.stdin)

    async def _command(self) -> int:
        assert self.proc is not None and self.argv is not None
        if self.exit_line is not None:
            # A program that exits at start (CoreDNS with a Corefile it refuses): its last words, exit code 1.
            await self.err(self.exit_line + "\n")
            return 1
        try:
            return await self.proc.run(self.argv)
        except Exception as exc:  # a tool bug must not leave the pod Running forever
            log.exception("container %s/%s/%s failed", self.namespace, self.pod, self.name)
            await self.err(f"knetsim: {type(exc).__name__}: {exc}\n")
            return 1

    async def _main(self) -> int:
        """The run's exit code: its command's, or the kill's."""
        kill = asyncio.ensure_future(self.killed.wait())
        work = asyncio.ensure_future(self._command()) if self.argv is not None else None
        try:
            await asyncio.wait([t for t in (kill, work) if t is not None], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (kill, work):
                if t is not None and not t.done():
                    t.cancel()
                    with contextlib.suppress(BaseException):
                        await t
        if self.killed.is_set() or work is None:
            return self.kill_code
        return work.result()

    async def run(self) -> None:
        exits = 0
        try:
            while True:
                # Each run of a command starts a new log file (a restart of the server runs an unfinished
                # command again: its earlier output is not kept twice); a server's log goes on.
                self.log = self.kubelet.logs.get(self.namespace, self.pod, self.uid, self.name, self.restarts,
                                                 fresh=self.argv is not None or exits > 0)
                # A server (no command: only its probes run here) has no process of the shell's.
                self.proc = self._new_proc(restart=exits > 0) if self.argv is not None else None
                self.run_done = asyncio.Event()
                # An OOM kill or an exit that came before the run (a server's exec, netexec's /exit) still ends it.
                if not self.oom_killed and not self.exited:
                    self.killed.clear()
                if self.stdin and not self.attached.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.attached.wait(), ATTACH_WAIT)
                started_at, self.started_at = self.started_at or now_rfc3339(), None
                self.state = {"running": {"startedAt": started_at}}
                probes = self.kubelet.probes(self)
                self.kubelet.report(self)
                probes.begin()
                try:
                    code = await self._main()
                finally:
                    probes.cancel()
                killed = self.killed.is_set() and not self.exited
                self.exited = False
                oom, self.oom_killed = self.oom_killed, False
                terminated = {"exitCode": code, "reason": "OOMKilled" if oom else "Completed" if code == 0 else "Error",
                              "startedAt": started_at, "finishedAt": now_rfc3339(),
                              "containerID": self.kubelet.container_id(self)}
                self.log.close()
                self.run_done.set()
                if self.restart_policy == "Never" or (self.restart_policy == "OnFailure" and code == 0 and
                                                      not killed):
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
                    self.kubelet.event(self, "BackOff", f"Back-off restarting failed container {self.name} in pod "
                                                        f"{self.pod}_{self.namespace}({self.uid})", "Warning")
                else:
                    self.state = {"terminated": terminated}
                self.kubelet.report(self)
                await asyncio.sleep(delay)
                self.restarts += 1
                self.kubelet.event(self, "Pulled", f'Container image "{self.image}" already present on machine')
                self.kubelet.event(self, "Created", f"Created container: {self.name}")
                self.kubelet.event(self, "Started", f"Started container {self.name}")
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
    def __init__(self, server: NodeView, tools: Mapping[str, shell.Tool] | None = None) -> None:
        self.server = server
        # The commands its containers' shells have (kernel mode hands real network tools; None: the
        # simulated container's own, loaded with the first shell).
        self._tools = tools
        self._balancer: Any = None
        self.containers: dict[tuple[str, str], dict[str, Container]] = {}  # (ns, name) → containers
        self.uids: dict[tuple[str, str], str] = {}
        self.logs = LogStore(Path(server.state_dir) / "pods" if server.state_dir else None)
        self.recorder = Recorder(server.store, "kubelet")
        self.pullers: dict[tuple[str, str], ImagePuller] = {}  # (uid, container) → its failing pulls
        self.images: dict[tuple[str, str], str] = {}  # (uid, container) → the image last acted on
        self.waits: dict[str, ConfigWait] = {}  # pod uid → its containers waiting for a ConfigMap/Secret
        # What the probes found, per (uid, container): a startup probe not yet passed, a readiness probe failing.
        self.starting: set[tuple[str, str]] = set()
        self.unready: set[tuple[str, str]] = set()
        self.pod_status = PodStatusWriter(server.store, lambda key: key in self.starting,
                                          lambda key: key in self.unready)
        # Per pod uid, the task running its init containers one by one (initcontainers.py).
        self.inits: dict[str, asyncio.Task[None]] = {}
        # What crossed the node's network, as Hubble records it (flows.py; served at /knetsim/flows).
        self.flows = FlowRecorder(server)
        # Each container's files, cgroup and environment, and the shell context its commands run in.
        self.sandboxes = Sandboxes(server, self.lookup, self._oom_killed, self.served, self.flows.observe,
                                   lambda: self.tools, lambda: self.balancer)
        self.sandboxes.peer_exit = self._program_exited

    @property
    def balancer(self) -> Any:
        """How the nodes' data planes pick each pod connection's backend over time (made with the first shell:
        the network layer loads with the first command that connects, not at start-up)."""
        if self._balancer is None:
            from ..network.balance import Balancer

            self._balancer = Balancer()
        return self._balancer

    @property
    def tools(self) -> Mapping[str, shell.Tool]:
        return self._tools if self._tools is not None else _tools()

    # --- lifecycle ----------------------------------------------------------------------

    def install(self) -> None:
        self.server.store.listeners.append(self._on_changes)
        self.server.state_listeners.append(self._on_state)
        for (kind, _ns, _name), stored in list(self.server.store.objects.items()):
            if kind == "Pod":
                self._consider(stored.body)

    async def close(self) -> None:
        for p in self.pullers.values():
            p.cancel()
        for w in self.waits.values():
            w.cancel()
        tasks = [c.task for cs in self.containers.values() for c in cs.values() if c.task is not None]
        tasks += [p.task for p in self.pullers.values() if p.task is not None]
        tasks += [w.task for w in self.waits.values() if w.task is not None]
        tasks += list(self.inits.values())
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t
        self.containers.clear()
        self.pullers.clear()
        self.waits.clear()
        self.inits.clear()

    def _on_changes(self, changes: list[Change]) -> None:
        for c in changes:
            if c.kind in ("ConfigMap", "Secret"):
                namespace = str(((c.new or c.old or {}).get("metadata") or {}).get("namespace") or "")
                for w in self.waits.values():
                    if w.namespace == namespace:
                        w.wake.set()
                continue
            if c.kind != "Pod":
                continue
            if c.type == "DELETED" and c.old is not None:
                meta = c.old.get("metadata") or {}
                self._stop((meta.get("namespace", ""), meta.get("name", "")), meta.get("uid", ""))
                self.logs.remove_pod(meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", ""))
            elif c.new is not None:
                self._consider(c.new)

    def _on_state(self, state: Any) -> None:
        for (ns, name), cs in self.containers.items():
            pod = state.pods.get(f"{ns}/{name}")
            for c in cs.values():
                if c.ctx is None:
                    continue
                # Every shell of the container's process, not only its first: a script runs in subshells
                # (`sh -c`, loops, $(...)) that copied the cluster they started with, and an `until nslookup
                # mydb` loop must see the Service created after it started.
                process = c.ctx.process
                scopes = [c.ctx, *(list(process.scopes.values()) if process is not None else [])]
                for scope in scopes:
                    if hasattr(scope, "state"):
                        scope.state = state
                        if pod is not None:
                            scope.pod = pod

    def _stop(self, key: tuple[str, str], uid: str) -> None:
        for pk in [k for k in self.pullers if k[0] == uid]:
            self.pullers.pop(pk).cancel()
        self.sandboxes.forget(uid)  # the pod is gone: so are its exec sessions
        for ik in [k for k in self.images if k[0] == uid]:
            self.images.pop(ik)
        self.starting = {k for k in self.starting if k[0] != uid}
        self.unready = {k for k in self.unready if k[0] != uid}
        wait = self.waits.pop(uid, None)
        if wait is not None:
            wait.cancel()
        init = self.inits.pop(uid, None)
        if init is not None:
            init.cancel()
        self.recorder.forget(uid)
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
        status = body.get("status") or {}
        spec = body.get("spec") or {}
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if status.get("phase") == "Pending" and not status.get("podIP") and spec.get("nodeName"):
            self._mounting(key, uid, status)
            return
        if status.get("phase") not in ("Running", "Pending") or not status.get("podIP") or not spec.get("nodeName"):
            return
        if self.uids.get(key) == uid:
            if uid not in self.inits:  # the pod's containers have not been created while init containers run
                self._check_images(key, uid, body)
            self._reassert_probes(key, uid, body)
            self._start_ephemeral(key, uid, body)
            return
        if key in self.uids:
            self._stop(key, self.uids[key])
        self.uids[key] = uid
        mounting = self.waits.pop(uid, None)
        if mounting is not None:
            mounting.cancel()  # its volumes are set up (the pod has an address now): the containers' turn
        self.containers[key] = {}
        if initcontainers.initializing(status, spec):
            # The init containers' turn first; the pod's containers start when the last one is through.
            self.inits[uid] = loop.create_task(self._run_init_containers(key, uid, body))
            self._start_ephemeral(key, uid, body)
            return
        self._start_containers(key, uid, body)

    def _start_containers(self, key: tuple[str, str], uid: str, body: Mapping[str, Any]) -> None:
        """Run the pod's containers (its init containers are through), each as its status says."""
        loop = asyncio.get_running_loop()
        status, spec = body.get("status") or {}, body.get("spec") or {}
        known = {cs.get("name"): cs for cs in status.get("containerStatuses") or []}
        self.containers.setdefault(key, {})
        # Volumes first (every container waits for them), then each container: its image, its environment.
        blocked = waiting_states(body, self.lookup)
        mounts_missing = any(w.get("reason") == "ContainerCreating" for w in blocked.values())
        pending: list[str] = []
        for spec_c in spec.get("containers") or []:
            name = str(spec_c.get("name"))
            cs = known.get(name) or {}
            self.images[(uid, name)] = str(spec_c.get("image") or "")
            if "terminated" in (cs.get("state") or {}) and spec.get("restartPolicy", "Always") != "Always":
                continue  # finished before a restart of the server
            if mounts_missing:
                pending.append(name)
                continue
            if self._pull_fails(body, spec_c):
                continue
            if name in blocked:
                pending.append(name)
                continue
            waiting = (cs.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in ("ContainerCreating", "CreateContainerConfigError"):
                self._launch(key, uid, body, spec_c)  # what it waited for came while the server was down
                continue
            self.sandboxes.remember_env(uid, body, spec_c)
            c = self._container(key, uid, spec_c, int(cs.get("restartCount") or 0))
            if c is not None:
                c.task = loop.create_task(c.run())
                self.containers[key][c.name] = c
        if pending:
            self._wait_for_config(key, uid, pending)
        self._start_ephemeral(key, uid, body)

    async def _run_init_containers(self, key: tuple[str, str], uid: str, body: Mapping[str, Any]) -> None:
        """Each init container in turn, as the kubelet runs them: one through (exited 0; a sidecar started)
        before the next; one that fails is run again under the pod's restart policy, or with Never fails the
        pod. Then the pod's containers start. An init container whose command the simulation cannot run
        (an image's own entrypoint) is taken as having done its work at once."""
        spec = body.get("spec") or {}
        pod_policy = str(spec.get("restartPolicy") or "Always")
        known = {cs.get("name"): cs for cs in (body.get("status") or {}).get("initContainerStatuses") or []}
        for i, spec_c in enumerate(initcontainers.init_containers(spec)):
            name = str(spec_c.get("name"))
            cs = known.get(name) or {}
            terminated = (cs.get("state") or {}).get("terminated")
            if terminated is not None and int(terminated.get("exitCode") or 0) == 0:
                continue
            sidecar = initcontainers.is_sidecar(spec_c)
            policy = "Always" if sidecar else ("Never" if pod_policy == "Never" else "OnFailure")
            argv = runnable(spec_c)
            c = Container(self, key[0], key[1], uid, spec_c, argv, policy, int(cs.get("restartCount") or 0))
            c.init = True
            self.containers.setdefault(key, {})[name] = c
            if i > 0 and "running" not in (cs.get("state") or {}):
                # The first one's events came with the pod's start (podstart.py).
                self.event(c, "Pulled", f'Container image "{c.image}" already present on machine')
                self.event(c, "Created", f"Created container: {name}")
                self.event(c, "Started", f"Started container {name}")
            self.sandboxes.remember_env(uid, body, spec_c)
            if sidecar or argv is not None:
                c.task = asyncio.get_running_loop().create_task(c.run())
            if sidecar:
                continue  # it keeps running beside the rest
            if argv is None:
                # Nothing of it to run here: it ran its entrypoint and exited 0 (an empty log).
                started_at = now_rfc3339()
                self.logs.get(key[0], key[1], uid, name, c.restarts).close()
                c.state = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started_at,
                                          "finishedAt": started_at, "containerID": self.container_id(c)}}
                c.final = True
                self.report(c)
                continue
            assert c.task is not None
            await c.task
            if int(((c.state.get("terminated") or {}).get("exitCode")) or 0) != 0 or not c.final:
                return  # with restartPolicy Never a failed init container fails the pod: nothing more starts
        self._initialized(key, uid)
        # Only now: the status write above must not look like an image change of containers not created yet.
        self.inits.pop(uid, None)

    def _initialized(self, key: tuple[str, str], uid: str) -> None:
        """The last init container is through: the pod's containers start, their status as at a pod's start."""
        stored = self.server.store.get(("Pod", key[0], key[1]))
        if stored is None or stored.body["metadata"].get("uid") != uid:
            return
        pod = stored.body
        old = pod.get("status") or {}
        ips = tuple(str(i.get("ip")) for i in old.get("podIPs") or () if i.get("ip"))
        host_ips = tuple(str(i.get("ip")) for i in old.get("hostIPs") or () if i.get("ip"))
        status = pod_status(pod, str(old.get("podIP") or ""), str(old.get("hostIP") or ""), self.server.config,
                            ips, host_ips)
        status["startTime"] = old.get("startTime") or now_rfc3339()
        status["initContainerStatuses"] = json_copy(old.get("initContainerStatuses") or [])
        for cs in status.get("containerStatuses") or []:
            if "running" in (cs.get("state") or {}):
                cs["state"] = {"running": {"startedAt": now_rfc3339()}}
        hold(status, waiting_states(pod, self.lookup), pod["spec"])
        await_startup(status, pod["spec"])
        apply_phase(status, pod["spec"])
        complete(pod, status)
        stamp_conditions(status, old, now_rfc3339())
        new = {**pod, "metadata": dict(pod["metadata"]), "status": status}
        write = status_write(stored, ("Pod", key[0], key[1]), new, by="kubelet")
        if write is not None:
            commit_batch(self.server.store, [write], by="kubelet", durable=True)
        waiting = {cs.get("name") for cs in status.get("containerStatuses") or []
                   if "waiting" in (cs.get("state") or {})}
        for spec_c in pod["spec"].get("containers") or []:
            name = str(spec_c.get("name"))
            if name in waiting:
                continue
            path = f"spec.containers{{{name}}}"
            for reason, message in (
                    ("Pulled", f'Container image "{spec_c.get("image")}" already present on machine'),
                    ("Created", f"Created container: {name}"), ("Started", f"Started container {name}")):
                self.recorder.record(involved(new, path), reason, message, host=str(pod["spec"].get("nodeName")))
        self._start_containers(key, uid, new)

    def _start_ephemeral(self, key: tuple[str, str], uid: str, body: Mapping[str, Any]) -> None:
        """`kubectl debug`'s containers, started once each when they appear in the spec and never restarted
        (the kubelet treats them as restartPolicy Never); one that already ended stays ended."""
        spec, status = body.get("spec") or {}, body.get("status") or {}
        ended = {cs.get("name") for cs in status.get("ephemeralContainerStatuses") or []
                 if "terminated" in (cs.get("state") or {})}
        running = self.containers.setdefault(key, {})
        for spec_c in spec.get("ephemeralContainers") or []:
            name = str(spec_c.get("name"))
            if name in running or name in ended:
                continue
            c = Container(self, key[0], key[1], uid, spec_c, runnable(spec_c), "Never", 0)
            c.ephemeral = True
            running[name] = c
            self.event(c, "Pulled", f'Container image "{c.image}" already present on machine')
            self.event(c, "Created", f"Created container: {name}")
            self.event(c, "Started", f"Started container {name}")
            c.task = asyncio.get_running_loop().create_task(c.run())

    def _mounting(self, key: tuple[str, str], uid: str, status: Mapping[str, Any]) -> None:
        """A pod whose volumes the pod-start controller found missing (it has no address yet): record the
        volume manager's FailedMount retries until they can be set up."""
        creating = [str(cs.get("name")) for cs in status.get("containerStatuses") or []
                    if ((cs.get("state") or {}).get("waiting") or {}).get("reason") == "ContainerCreating"]
        wait = self.waits.get(uid)
        if creating and (wait is None or wait.task is None or wait.task.done()):
            self._wait_for_config(key, uid, creating)

    def lookup(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        stored = self.server.store.get((kind, namespace, name))
        return stored.body if stored is not None else None

    def _wait_for_config(self, key: tuple[str, str], uid: str, pending: list[str]) -> None:
        def pod() -> Mapping[str, Any] | None:
            stored = self.server.store.get(("Pod", key[0], key[1]))
            return stored.body if stored is not None and stored.body["metadata"].get("uid") == uid else None

        def report(container: str, state: dict[str, Any]) -> None:
            self.pod_status.container_state(key[0], key[1], uid, container, state)

        def start(body: Mapping[str, Any], spec_c: Mapping[str, Any]) -> None:
            self._launch(key, uid, body, spec_c)
        wait = ConfigWait(self.recorder, self.lookup, pod, pending, report, self._pull_fails, start)
        self.waits[uid] = wait
        wait.begin()

    def _launch(self, key: tuple[str, str], uid: str, body: Mapping[str, Any], spec_c: Mapping[str, Any]) -> None:
        """Start a container the pod-start controller could not: its image is there now, or its config."""
        name = str(spec_c.get("name"))
        started(self.recorder, json_copy(body), name, str(spec_c.get("image") or ""))
        self.sandboxes.remember_env(uid, body, spec_c)
        self.pod_status.container_state(key[0], key[1], uid, name, {"running": {"startedAt": now_rfc3339()}})
        c = self._container(key, uid, spec_c, 0)
        if c is not None:
            c.task = asyncio.get_running_loop().create_task(c.run())
            self.containers.setdefault(key, {})[name] = c

    def _container(self, key: tuple[str, str], uid: str, spec_c: Mapping[str, Any], restarts: int) -> Container | None:
        argv = runnable(spec_c)
        stored = self.server.store.get(("Pod", key[0], key[1]))
        exit_line = self._startup_error(stored.body, spec_c) if stored is not None else None
        if argv is None and exit_line is None and not schedules(spec_c):
            return None  # a server without probes: nothing here ever changes its state
        policy = str(((stored.body if stored else {}).get("spec") or {}).get("restartPolicy") or "Always")
        if exit_line is not None:
            argv = container_argv(spec_c) or [image_name(str(spec_c.get("image") or ""))]
        c = Container(self, key[0], key[1], uid, spec_c, argv, policy, restarts)
        c.exit_line = exit_line
        return c

    def _startup_error(self, pod: Mapping[str, Any], spec_c: Mapping[str, Any]) -> str | None:
        """The line a CoreDNS container prints as it exits at start because of its Corefile (the ConfigMap
        as the API server holds it now, so each restart reads the current one), or None."""
        namespace = str(pod["metadata"].get("namespace") or "default")
        names = {"coredns", *(str(v["configMap"].get("name") or "") for v in (pod.get("spec") or {}).get("volumes")
                              or [] if isinstance(v, Mapping) and isinstance(v.get("configMap"), Mapping))}
        configmaps = {(namespace, name): body.get("data") or {} for name in sorted(names)
                      if (body := self.lookup("ConfigMap", namespace, name)) is not None}
        one = dict(pod, spec=dict(pod.get("spec") or {}, containers=[spec_c]))
        config = self.server.config
        crash = coredns_startup_error(one, configmaps, frozenset({config.dns_service_ip}),
                                      config.upstream_nameservers)
        return crash[1] if crash else None

    # --- images -----------------------------------------------------------------------------

    def _pull_fails(self, body: Mapping[str, Any], spec_c: Mapping[str, Any]) -> bool:
        """Start the image manager's loop for a container whose image cannot be pulled."""
        meta = body.get("metadata") or {}
        uid, name = str(meta.get("uid", "")), str(spec_c.get("name"))
        image = str(spec_c.get("image") or "")
        error = pull_error(image, self.server.config, str(spec_c.get("imagePullPolicy") or "IfNotPresent"))
        if error is None:
            return False
        namespace, pod = str(meta.get("namespace", "")), str(meta.get("name", ""))

        def report(state: dict[str, Any]) -> None:
            self.pod_status.container_state(namespace, pod, uid, name, state)
        puller = ImagePuller(self.recorder, json_copy(body), name, image, error, report)
        self.pullers[(uid, name)] = puller
        puller.begin()
        return True

    def _check_images(self, key: tuple[str, str], uid: str, body: Mapping[str, Any]) -> None:
        """A container's image changed (``kubectl set image pod/...``): pull the new one."""
        for spec_c in (body.get("spec") or {}).get("containers") or []:
            name = str(spec_c.get("name"))
            image = str(spec_c.get("image") or "")
            if self.images.get((uid, name)) == image:
                continue
            self.images[(uid, name)] = image
            puller = self.pullers.pop((uid, name), None)
            if puller is not None:
                puller.cancel()
            if self._pull_fails(body, spec_c):
                continue
            if puller is None:
                continue  # a running container whose image changed: not simulated (it keeps running)
            self._launch(key, uid, body, spec_c)

    def container_id(self, c: Container) -> str:
        return "containerd://" + hashlib.sha256(f"{c.uid}/{c.name}/{c.restarts}".encode()).hexdigest()

    # --- what reaches a container from outside its run: the OOM killer, the requests it serves ---------

    def _oom_killed(self, namespace: str, pod: str, uid: str, name: str, cgroup: Cgroup) -> None:
        """The kernel OOM-killed a container (all of its processes): the kubelet sees its main process end
        with 137, reason OOMKilled, and restarts it under its restartPolicy."""
        if self.sandboxes.cgroups.get((uid, name)) is not cgroup:
            return  # an earlier run's cgroup (exec sessions that outlived it)
        log.info("container %s/%s/%s OOM-killed (memory limit %d bytes)", namespace, pod, name,
                 cgroup.memory_limit)
        c = self.containers.get((namespace, pod), {}).get(name)
        if c is None:
            c = self._server_container(namespace, pod, uid, name)
            if c is None:
                return
        c.oom()

    def _program_exited(self, pod_key: str, port: int, code: int) -> None:
        """The program serving ``port`` of a pod exited by itself (agnhost netexec's /exit): its container's run
        ends with ``code`` and restarts under the pod's restartPolicy."""
        namespace, _, pod = pod_key.partition("/")
        stored = self.server.store.get(("Pod", namespace, pod))
        if stored is None:
            return
        specs = (stored.body.get("spec") or {}).get("containers") or []
        spec_c = container_for(list(specs), port)  # the container declaring the port, else the first
        if spec_c is None:
            return
        name, uid = str(spec_c.get("name")), str((stored.body.get("metadata") or {}).get("uid") or "")
        log.info("container %s/%s/%s exited with %d", namespace, pod, name, code)
        c = self.containers.get((namespace, pod), {}).get(name) or self._server_container(namespace, pod, uid, name)
        if c is not None:
            c.exit(code)

    def _server_container(self, namespace: str, pod: str, uid: str, name: str) -> Container | None:
        """A container the kubelet left to itself (a server: nothing of it is simulated) whose processes were
        killed: from now on its runs are watched, so its restart and its restart count are reported."""
        stored = self.server.store.get(("Pod", namespace, pod))
        if stored is None or (stored.body.get("metadata") or {}).get("uid") != uid:
            return None
        body = stored.body
        spec_c = next((c for c in (body.get("spec") or {}).get("containers") or [] if c.get("name") == name), None)
        if spec_c is None:
            return None
        cs = next((x for x in (body.get("status") or {}).get("containerStatuses") or [] if x.get("name") == name), {})
        policy = str((body.get("spec") or {}).get("restartPolicy") or "Always")
        c = Container(self, namespace, pod, uid, spec_c, None, policy, int(cs.get("restartCount") or 0))
        c.started_at = ((cs.get("state") or {}).get("running") or {}).get("startedAt")
        self.containers.setdefault((namespace, pod), {})[name] = c
        c.task = asyncio.get_running_loop().create_task(c.run())
        return c

    def served(self, request: Served) -> None:
        """A pod answered an HTTP request: its web server logs it, in its image's format."""
        namespace, _, name = request.pod.partition("/")
        stored = self.server.store.get(("Pod", namespace, name))
        if stored is None:
            return
        body = stored.body
        container = container_for(list((body.get("spec") or {}).get("containers") or []), request.port)
        if container is None:
            return
        line = log_line(str(container.get("image") or ""), request)
        if line is None:
            return
        cname = str(container.get("name"))
        cs = next((x for x in (body.get("status") or {}).get("containerStatuses") or [] if x.get("name") == cname),
                  {})
        if "running" not in (cs.get("state") or {}):
            return
        uid = str(body["metadata"].get("uid", ""))
        self.logs.get(namespace, name, uid, cname, int(cs.get("restartCount") or 0)).write(line)

    # --- probes ---------------------------------------------------------------------------

    def event(self, c: Container, reason: str, message: str, type_: str = "Normal") -> None:
        stored = self.server.store.get(("Pod", c.namespace, c.pod))
        if stored is None or stored.body["metadata"].get("uid") != c.uid:
            return
        pod = stored.body
        field = "spec.ephemeralContainers" if c.ephemeral else "spec.initContainers" if c.init else "spec.containers"
        self.recorder.record(involved(pod, f"{field}{{{c.name}}}"), reason, message,
                             host=str((pod.get("spec") or {}).get("nodeName") or ""), type_=type_)

    def probes(self, c: Container) -> ContainerProbes:
        """The probes of the container's new run (not begun yet): until its startup probe succeeds it is
        not started, and each run is ready until its readiness probe says otherwise."""
        stored = self.server.store.get(("Pod", c.namespace, c.pod))
        spec_c = next((x for x in ((stored.body if stored else {}).get("spec") or {}).get("containers") or []
                       if x.get("name") == c.name), {})
        key = (c.uid, c.name)

        def network(spec: Mapping[str, Any]) -> tuple[bool, str]:
            now = self.server.store.get(("Pod", c.namespace, c.pod))
            pod = Pod.parse(now.body if now else {})
            self.flows.probed(pod, probe_port(spec_c, spec))
            return network_result(self.server.state, pod, spec_c, spec)

        def ready(flag: bool) -> None:
            if flag != (key not in self.unready):
                (self.unready.discard if flag else self.unready.add)(key)
                self.report(c)

        def started() -> None:
            self.starting.discard(key)
            self.report(c)

        def kill(kind: str) -> None:
            again = ", will be restarted" if c.restart_policy != "Never" else ""
            self.event(c, "Killing", f"Container {c.name} failed {kind} probe{again}")
            c.kill()

        probes = ContainerProbes(spec_c, network, lambda argv, timeout: self._exec_probe(c, argv, timeout),
                                 lambda message: self.event(c, "Unhealthy", message, "Warning"), ready, started, kill)
        self.unready.discard(key)
        if not probes.start_done:
            self.starting.add(key)
        return probes

    async def _exec_probe(self, c: Container, argv: list[str], timeout: float) -> tuple[bool, str]:
        """An exec probe in the container's files and environment: (exit code 0, combined output)."""
        if not argv or not argv_supported(argv) or image_name(c.image) not in SHELL_IMAGES:
            return True, ""  # the image's own files and tools are not simulated: nothing to go on
        output: list[str] = []

        async def collect(text: str) -> None:
            output.append(text)
        from ..container.proc import Proc

        ctx = self.sandboxes.shell_ctx(c.namespace, c.pod, c.uid, c.name, collect, collect)
        try:
            code = await asyncio.wait_for(Proc(ctx, False, False).run(argv), timeout)
        except TimeoutError:
            return False, f'command "{" ".join(argv)}" timed out'
        return code == 0, "".join(output)

    def _reassert_probes(self, key: tuple[str, str], uid: str, body: Mapping[str, Any]) -> None:
        """Readiness computed again by the pod-start controller (a label or annotation changed) knows
        nothing of the probes: what they found still holds."""
        statuses = {cs.get("name"): cs for cs in (body.get("status") or {}).get("containerStatuses") or []}
        for c in self.containers.get(key, {}).values():
            cs = statuses.get(c.name) or {}
            if ((uid, c.name) in self.starting and cs.get("started")) or \
                    ((uid, c.name) in self.unready and cs.get("ready")):
                self.report(c)

    # --- status ---------------------------------------------------------------------------

    def report(self, c: Container) -> None:
        if c.ephemeral:
            self.pod_status.ephemeral_state(c.namespace, c.pod, c.uid, c.name, c.image, c.state, self.container_id(c))
            return
        self.pod_status.container_state(c.namespace, c.pod, c.uid, c.name, c.state, c.last_state, c.restarts,
                                        self.container_id(c))
