"""What a container's processes share, per (pod uid, container): its files, its cgroup (a new one for each
run), its environment as fixed when it started; and the shell context a command in it is given — its main
process, an exec session, an exec probe. The kubelet keeps one ``Sandboxes`` and forgets a pod's when the
pod goes; what the shell context needs of the kubelet (the access log, the flow record, the tool table,
the data plane's balancer) it is handed as callables, read when a context is made."""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..container.accesslog import Served
from ..container.cgroup import Cgroup, Killed
from ..container.podfs import PodFS, Volume
from ..model.objects import Pod
from .node import NodeView
from .podconfig import ConfigError, container_env, mounted_files, pod_env, pod_files

# How long a command netexec's /shell runs in its pod may take before it is killed.
PEER_SHELL_TIMEOUT = 30.0

if TYPE_CHECKING:
    from ..container import shell

# (kind, namespace, name) → the stored object's body, or None.
Lookup = Callable[[str, str, str], Mapping[str, Any] | None]
# (namespace, pod, pod uid, container, its cgroup): the kernel OOM-killed the container's processes.
OomHandler = Callable[[str, str, str, str, Cgroup], None]


class Sandboxes:
    def __init__(self, server: NodeView, lookup: Lookup, on_oom: OomHandler, served: Callable[[Served], None],
                 observed: Callable[[Any], None], tools: Callable[[], Mapping[str, shell.Tool]],
                 balancer: Callable[[], Any]) -> None:
        self.server = server
        self._lookup, self._on_oom = lookup, on_oom
        self._served, self._observed, self._tools, self._balancer = served, observed, tools, balancer
        self.filesystems: dict[tuple[str, str], PodFS] = {}
        # The pods' emptyDir volumes, per (uid, volume name): shared by the containers that mount them (an init
        # container's files are there for the next one) and kept across container restarts, for the pod's life.
        self.volumes: dict[tuple[str, str], Volume] = {}
        # Each running container's cgroup (its processes, its memory and CPU limits), per (uid, container).
        self.cgroups: dict[tuple[str, str], Cgroup] = {}
        self.envs: dict[tuple[str, str], dict[str, str]] = {}  # (uid, container) → its env, fixed at its start
        # (pod key, port, exit code): the program serving that port exits (the kubelet sets it).
        self.peer_exit: Callable[[str, int, int], None] | None = None

    def forget(self, uid: str) -> None:
        """The pod is gone: its files, its environments, and its cgroups, whose processes (exec sessions
        included) are killed."""
        for fk in [k for k in self.filesystems if k[0] == uid]:
            self.filesystems.pop(fk)
        for vk in [k for k in self.volumes if k[0] == uid]:
            self.volumes.pop(vk)
        for gk in [k for k in self.cgroups if k[0] == uid]:
            self.cgroups.pop(gk).kill(Killed("Killed", 137))
        for ek in [k for k in self.envs if k[0] == uid]:
            self.envs.pop(ek)

    def remember_env(self, uid: str, body: Mapping[str, Any], spec_c: Mapping[str, Any]) -> None:
        """The container's variables as they are when it starts (a later ConfigMap change does not reach it)."""
        with contextlib.suppress(ConfigError):
            self.envs[(uid, str(spec_c.get("name")))] = container_env(body, spec_c, self._lookup)

    def cgroup(self, namespace: str, pod: str, uid: str, spec_c: Mapping[str, Any], fresh: bool = False) -> Cgroup:
        """The container's cgroup; a new one for each run of it (``fresh``), as the runtime makes one per
        container it creates."""
        name = str(spec_c.get("name", ""))
        key = (uid, name)
        if fresh or key not in self.cgroups:
            self.cgroups[key] = Cgroup.for_container(
                spec_c, f"{namespace}/{pod}/{name}", lambda g: self._on_oom(namespace, pod, uid, name, g))
        return self.cgroups[key]

    def filesystem(self, uid: str, container: str, fresh: bool = False) -> PodFS:
        key = (uid, container)
        if fresh or key not in self.filesystems:
            self.filesystems[key] = PodFS()
        return self.filesystems[key]

    def empty_dirs(self, uid: str, body: Mapping[str, Any], spec_c: Mapping[str, Any]) -> dict[str, Volume]:
        """The container's emptyDir mounts (mount path → the pod's volume); a subPath mount is left out, as
        knetsim gives it no directory of its own."""
        empty = {str(v.get("name")) for v in (body.get("spec") or {}).get("volumes") or []
                 if isinstance(v, Mapping) and "emptyDir" in v}
        return {PodFS.resolve(str(m["mountPath"])): self.volumes.setdefault((uid, str(m["name"])), Volume())
                for m in spec_c.get("volumeMounts") or []
                if isinstance(m, Mapping) and m.get("name") in empty and m.get("mountPath") and not m.get("subPath")}

    async def peer_shell(self, pod_key: str, script: str) -> tuple[str, int]:
        """``/bin/sh -c SCRIPT`` in the first container of ``pod_key`` (agnhost netexec's /shell runs it so):
        its combined output and exit code."""
        namespace, _, name = pod_key.partition("/")
        stored = self.server.store.get(("Pod", namespace, name))
        containers = ((stored.body.get("spec") or {}).get("containers") or []) if stored is not None else []
        if not containers:
            return "", 127
        output: list[str] = []

        async def collect(text: str) -> None:
            output.append(text)
        from ..container.proc import Proc

        uid = str((stored.body.get("metadata") or {}).get("uid") or "")
        ctx = self.shell_ctx(namespace, name, uid, str(containers[0].get("name")), collect, collect)
        try:
            code = await asyncio.wait_for(Proc(ctx, False, False).run(["/bin/sh", "-c", script]), PEER_SHELL_TIMEOUT)
        except TimeoutError:
            code = 137  # what a killed command reports; netexec itself would wait for ever
        return "".join(output), code

    def shell_ctx(self, namespace: str, pod_name: str, uid: str, container: str, out: Any, err: Any,
                  pod: Pod | None = None, fresh_fs: bool = False) -> shell.Ctx:
        """The shell context of a command in this container: the cluster, env, files, access log."""
        state = self.server.state
        stored = self.server.store.get(("Pod", namespace, pod_name))
        if pod is None:
            pod = state.pods.get(f"{namespace}/{pod_name}") if state is not None else None
        if pod is None:
            pod = Pod.parse(stored.body if stored else {"metadata": {"name": pod_name, "namespace": namespace}})
        body = stored.body if stored is not None else pod.raw
        spec_c = next((c for field in ("containers", "initContainers", "ephemeralContainers")
                       for c in (body.get("spec") or {}).get(field) or [] if c.get("name") == container), {})
        if fresh_fs or (uid, container) not in self.envs:
            self.remember_env(uid, body, spec_c)  # a restart resolves the environment again, as the kubelet does
        env = pod_env(state, pod, container)
        env.update(self.envs.get((uid, container), {}))
        from ..container.nodetools import NODE_DIRS, host_root_mounts, node_root_files
        from ..container.shell import Ctx

        cgroup = self.cgroup(namespace, pod_name, uid, {**spec_c, "name": container}, fresh=fresh_fs)
        ctx = Ctx(state, pod, container, out, err, env, served=self._served, observed=self._observed,
                  tools=self._tools(), process=cgroup.process(container), balancer=self._balancer(),
                  peer_shell=self.peer_shell, peer_exit=self.peer_exit)
        fresh = fresh_fs or (uid, container) not in self.filesystems
        fs = self.filesystem(uid, container, fresh=fresh_fs)
        fs.volumes = self.empty_dirs(uid, body, spec_c)
        # `kubectl debug node/NAME`: the node's root mounted (hostPath /), at /host.
        node_roots = host_root_mounts(body, spec_c)
        if fresh:
            for mount in spec_c.get("volumeMounts") or []:
                if mount.get("mountPath") and not mount.get("subPath"):
                    path = PodFS.resolve(str(mount["mountPath"]))
                    with contextlib.suppress(OSError):
                        # The directories above a volume's mount path exist in the container too.
                        fs.mkdir(posixpath.dirname(path), parents=True)
                        fs.mkdir(path, parents=True)
            for root in node_roots:
                for directory in NODE_DIRS:
                    with contextlib.suppress(OSError):
                        fs.mkdir(root + directory, parents=True)

        def files() -> dict[str, str]:
            # Volumes follow their ConfigMap/Secret at once (the kubelet syncs them within a minute; a
            # real subPath mount keeps what it had at start, here it follows too).
            now = self.server.store.get(("Pod", namespace, pod_name))
            node_files = node_root_files(state, pod.node_name) if node_roots and pod.node_name else {}
            return {**pod_files(state, pod), **mounted_files(now.body if now else body, spec_c, self._lookup),
                    **{root + path: text for root in node_roots for path, text in node_files.items()}}
        fs.static = files
        ctx.fs = fs
        return ctx
