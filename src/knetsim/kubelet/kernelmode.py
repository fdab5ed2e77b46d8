"""``knetsim up --kernel``: the live cluster's pods are real network namespaces.

Wired by the daemon through two seams:

* the node's ``state_listeners`` — each new ClusterState goes to a worker thread that applies it
  to the topology (pods come and go, kube-proxy's rules and the NetworkPolicy table are
  reloaded); a burst of states is coalesced into the newest, so a ``kubectl apply`` reaches the
  kernel in well under a second;
* a tool table for the kubelet's shells (``tool_table``) — ``wget``, ``nslookup``, ``nc``,
  ``ping``, ``dig``, ``curl``, ``ip``, ``ss`` run for real inside the pod's namespace (busybox's
  applets where busybox is installed, else the host's tools), as user ``nobody``: their packets
  cross the real rules, and ``/etc/resolv.conf`` is the kubelet's (``ip netns exec`` binds
  ``/etc/netns/<ns>/``). Every other command stays simulated, so no exec reaches the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ..container import shell
from ..kernel import Topology
from .node import NodeView

log = logging.getLogger("knetsim.kubelet")

BUSYBOX_APPLETS = ("wget", "nslookup", "nc", "ping", "traceroute")
HOST_TOOLS = ("dig", "curl", "ip", "ss", "host")
UNPRIVILEGED = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def real_argv(name: str, argv: list[str]) -> list[str] | None:
    """The command line that runs ``name`` for real, or None when this machine has no such tool."""
    if name in BUSYBOX_APPLETS and shutil.which("busybox"):
        return ["busybox", name, *argv[1:]]
    path = shutil.which(name)
    return [path, *argv[1:]] if path else None


class KernelMode:
    def __init__(self, node: NodeView, dataplane: str | None = None) -> None:
        self.node = node
        self.topology = Topology.build(node.state, dataplane)
        self._pending: Any = None
        self._submitted = self._applied = 0
        self._wake = threading.Condition()
        self._stopping = False
        self._worker = threading.Thread(target=self._apply_loop, name="knetsim-kernel-sync", daemon=True)

    def install(self) -> KernelMode:
        self.node.state_listeners.append(self.on_state)
        self._worker.start()
        return self

    def tool_table(self, simulated: Mapping[str, shell.Tool]) -> Mapping[str, shell.Tool]:
        """``simulated`` with the network tools replaced by the real ones run in the pod's namespace
        (each falls back to its simulated twin for a pod the kernel does not hold yet)."""
        real = {name: self._tool(name, simulated.get(name)) for name in (*BUSYBOX_APPLETS, *HOST_TOOLS)}
        return MappingProxyType({**simulated, **real})

    # --- state ----------------------------------------------------------------------------

    def on_state(self, state: Any) -> None:
        with self._wake:
            self._pending = state
            self._submitted += 1
            self._wake.notify_all()

    def _apply_loop(self) -> None:
        while True:
            with self._wake:
                while self._pending is None and not self._stopping:
                    self._wake.wait()
                if self._stopping:
                    return
                state, self._pending, target = self._pending, None, self._submitted
            try:
                self.topology.update(state)
            except Exception:  # the API server goes on; the next state tries again
                log.exception("kernel mode: applying the new state failed")
            with self._wake:
                self._applied = target
                self._wake.notify_all()

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until every state handed over so far is in the kernel."""
        with self._wake:
            return self._wake.wait_for(lambda: self._applied >= self._submitted, timeout)

    # --- exec ------------------------------------------------------------------------------

    def _tool(self, name: str, simulated: shell.Tool | None) -> shell.Tool:
        async def run(ctx: shell.Ctx, argv: list[str]) -> int:
            key = str(ctx.pod.key)
            argv_real = real_argv(name, argv)
            if argv_real is None or not self.topology.has(key):
                if simulated is None:
                    await ctx.err(f"sh: {argv[0]}: not found\n")
                    return 127
                return await simulated(ctx, argv)
            deadline = None
            if argv_real[:2] == ["busybox", "wget"]:
                argv_real, deadline = _wget_deadline(argv_real)
            return await _run_in(self.topology.netns_of(key), argv_real, ctx, deadline)
        return run

    def close(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        with contextlib.suppress(ValueError):
            self.node.state_listeners.remove(self.on_state)
        self._worker.join(timeout=10)
        self.topology.close()


def _wget_deadline(argv: list[str]) -> tuple[list[str], float | None]:
    """Debian bookworm's busybox 1.35 crashes (SIGSEGV) on ``wget -T N``: keep N as our own deadline."""
    out, deadline, i = [], None, 0
    while i < len(argv):
        a = argv[i]
        if a == "-T" and i + 1 < len(argv) and argv[i + 1].replace(".", "", 1).isdigit():
            deadline, i = float(argv[i + 1]), i + 2
            continue
        if a.startswith("-T") and a[2:].replace(".", "", 1).isdigit():
            deadline, i = float(a[2:]), i + 1
            continue
        out.append(a)
        i += 1
    return out, deadline


async def _run_in(netns: str, argv: list[str], ctx: shell.Ctx, deadline: float | None = None) -> int:
    proc = await asyncio.create_subprocess_exec(
        "ip", "netns", "exec", netns, *UNPRIVILEGED, *argv, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd="/")

    async def pump(stream: asyncio.StreamReader | None, write: Any) -> None:
        assert stream is not None
        while chunk := await stream.read(4096):
            await write(chunk.decode(errors="replace"))
    try:
        await asyncio.wait_for(asyncio.gather(pump(proc.stdout, ctx.out), pump(proc.stderr, ctx.err)), deadline)
        return await proc.wait()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        await ctx.err("wget: download timed out\n")  # what busybox prints when -T expires
        return 1
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise


def install(node: NodeView, dataplane: str | None = None) -> KernelMode:
    return KernelMode(node, dataplane).install()
