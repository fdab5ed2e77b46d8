"""A container's cgroup: the memory and CPU its processes may use, enforced as the kernel enforces them.

Every command the simulated shell runs (the container's main process, each ``kubectl exec``, an exec
probe) is a ``Process`` in its container's ``Cgroup``. They run in the daemon's own event loop, so a
runaway one must not take the daemon with it:

**Memory.** What a process holds is what a busybox shell would hold: its variables and positional
parameters, the bytes waiting in its pipes and here-documents, the output a ``$(...)`` is collecting,
and the value an expansion is building (counted before it is built, so ``x=$x$x`` is refused before the
copy is made). Files a command writes are the container's writable layer (``podfs``, a disk, bounded
on its own), not memory. When the processes of a container hold more than its
``resources.limits.memory``, the container is OOM-killed as a whole, as the kernel kills a cgroup v2
container on a kind node (``memory.oom.group``, the kubelet's default since v1.28): every process in
it ends with 137 (SIGKILL), and the kubelet reports the container ``OOMKilled`` and restarts it.
Across all containers, pod processes may hold ``NODE_MEMORY`` together; past it the container holding
the most is killed, as the kernel's global OOM killer picks the largest process of a BestEffort pod.

**CPU.** A process never holds the event loop for more than ``SLICE`` at a time: the interpreter
calls ``tick`` at every step, every pipe write and in the applets' loops over their input, and it
yields there once its slice is used (``Metered`` times every step of a process's tasks, so waiting
is never counted). A container may run ``resources.limits.cpu`` cores (CFS's quota, refilled over
each 100 ms ``PERIOD``); all pod processes together may run ``NODE_SHARE`` of the loop, the rest
being the API server's, the controllers', DNS's and the front door's (a node's kube-reserved CPU).
A process past its quota sleeps until the quota has refilled what it overdrew, as a throttled cgroup
does.

Limits without a value are the defaults below; limits above the caps are capped (see the package
README's Differences).
"""

from __future__ import annotations

import asyncio
import collections.abc
import math
import time
import weakref
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.quantity import quantity

DEFAULT_MEMORY = 32 << 20  # bytes, a container without resources.limits.memory
MAX_MEMORY = 64 << 20  # bytes: a larger limit is capped here (one copy of it takes the loop ~50 ms)
NODE_MEMORY = 256 << 20  # bytes all pod processes together may hold
PERIOD = 0.1  # seconds, the CFS period (cpu.cfs_period_us = 100000)
SLICE = 0.005  # seconds a process runs before it yields the event loop
NODE_SHARE = 0.5  # of each period, what all pod processes together may run
OOM_EXIT = 137  # 128 + SIGKILL


def limits_of(container: Mapping[str, Any]) -> tuple[int, float | None]:
    """(memory bytes, CPU cores or None) a container's processes may use: its limits, defaulted and capped."""
    limits = ((container.get("resources") or {}) if isinstance(container.get("resources"), Mapping) else {}).get(
        "limits") or {}
    if not isinstance(limits, Mapping):
        limits = {}
    memory = quantity(limits.get("memory"))
    cpu = quantity(limits.get("cpu"))
    mem_bytes = DEFAULT_MEMORY if memory is None or memory <= 0 else min(math.ceil(memory), MAX_MEMORY)
    cores = None if cpu is None or cpu <= 0 else float(cpu)
    return mem_bytes, cores


def _size(value: Any) -> int:
    if isinstance(value, str | bytes | bytearray):
        return len(value)
    # A function's body: its parse tree, about as large as its text.
    return int(getattr(value, "end_byte", 0)) - int(getattr(value, "start_byte", 0))


class Killed(BaseException):
    """The process was killed (SIGKILL): by the OOM killer, or because its container was stopped. A
    BaseException, so no ``except Exception`` in a tool can swallow it."""

    def __init__(self, reason: str, code: int = OOM_EXIT) -> None:
        super().__init__(reason)
        self.reason, self.code = reason, code


class Held:
    """Something a process holds bytes in (a pipe, an input buffer, a ``$(...)`` being collected)."""

    def held(self) -> int:
        raise NotImplementedError


class Process:
    """One process tree of the shell (an exec, a container's main process, an exec probe) in a cgroup."""

    def __init__(self, cgroup: Cgroup, name: str = "") -> None:
        self.cgroup, self.name = cgroup, name
        # The shells (Ctx) of the tree, by identity (a shell is a dataclass: equal ones are still two).
        self.scopes: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        self.buffers: weakref.WeakSet[Held] = weakref.WeakSet()
        self.task: asyncio.Task[Any] | None = None
        self.killed: Killed | None = None
        self.unmetered_since = time.perf_counter()
        cgroup.processes.add(self)

    # --- memory -------------------------------------------------------------------------------

    def holds(self) -> int:
        """The bytes held now: every distinct value of the shells' variables, arguments and functions (a
        subshell's copy shares what it did not change, as a forked process does), and the buffers."""
        seen: set[int] = set()
        total = 0
        for scope in list(self.scopes.values()):
            for values in scope.memory():
                if id(values) in seen:
                    continue
                seen.add(id(values))
                items = [*values.keys(), *values.values()] if isinstance(values, dict) else values
                for value in items:
                    if id(value) not in seen:
                        seen.add(id(value))
                        total += _size(value)
        return total + sum(b.held() for b in list(self.buffers))

    def track(self, scope: Any) -> None:
        self.scopes[id(scope)] = scope

    def hold(self, buffer: Held) -> None:
        self.buffers.add(buffer)

    def grew(self, nbytes: int) -> None:
        """``nbytes`` more are held (a variable set, a chunk written to a pipe): killed when over."""
        self.cgroup.grew(self, nbytes)

    def building(self, nbytes: int) -> None:
        """A value of ``nbytes`` is about to be built (and held, for a moment, besides what is held now)."""
        self.cgroup.building(self, nbytes)

    # --- lifecycle ----------------------------------------------------------------------------

    def kill(self, reason: Killed) -> None:
        """SIGKILL: the process's task is cancelled; whoever waits for it reads ``killed``."""
        if self.killed is None:
            self.killed = reason
        if self.task is not None and not self.task.done() and self.task is not _current_task():
            self.task.cancel()

    def exit(self) -> None:
        self.cgroup.processes.discard(self)

    def raise_if_killed(self) -> None:
        if self.killed is not None:
            raise self.killed

    # --- CPU ----------------------------------------------------------------------------------

    def spawn(self, coro: collections.abc.Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """A task of this process: its steps are timed against the slice and the quotas."""
        return asyncio.ensure_future(Metered(coro, self))

    async def tick(self) -> None:
        """Called by the interpreter at every step: yield once this step ran a slice, sleep when a quota is
        used up, and die here if the process was killed meanwhile."""
        self.raise_if_killed()
        started = _STEP.started if _STEP.process is self else self.unmetered_since
        now = time.perf_counter()
        if now - started < SLICE:
            return
        if _STEP.process is not self:
            self.cgroup.charge_cpu(now - started)
        wait = self.cgroup.throttle(now - started if _STEP.process is self else 0.0)
        await asyncio.sleep(wait)
        self.unmetered_since = time.perf_counter()
        self.raise_if_killed()


@dataclass
class _Step:
    """The process whose task step is running now (one at a time: one event loop), and since when."""

    process: Process | None = None
    started: float = 0.0


_STEP = _Step()


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


class Metered(collections.abc.Coroutine):  # type: ignore[type-arg]
    """A coroutine whose every step (from one suspension to the next) is timed and charged to a process's
    cgroup: the CPU time it used, without counting the time it waited."""

    __slots__ = ("_coro", "_process")

    def __init__(self, coro: collections.abc.Coroutine[Any, Any, Any], process: Process) -> None:
        self._coro, self._process = coro, process

    def _step(self, action: Callable[[], Any]) -> Any:
        outer = (_STEP.process, _STEP.started)
        started = time.perf_counter()
        _STEP.process, _STEP.started = self._process, started
        try:
            return action()
        finally:
            _STEP.process, _STEP.started = outer
            self._process.cgroup.charge_cpu(time.perf_counter() - started)

    def send(self, value: Any) -> Any:
        return self._step(lambda: self._coro.send(value))

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:  # type: ignore[override]
        if val is None and tb is None:
            return self._step(lambda: self._coro.throw(typ))
        return self._step(lambda: self._coro.throw(typ, val, tb))

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Generator[Any, None, Any]:
        return self._coro.__await__()


class Bucket:
    """CPU seconds a group may still run: refilled at ``rate`` cores, at most a period's worth ahead; a step
    that ran longer than what was left overdraws it, and the group then waits until it is repaid."""

    def __init__(self, rate: float) -> None:
        self.rate, self.level, self.stamp = rate, rate * PERIOD, time.perf_counter()

    def _refill(self, now: float) -> None:
        self.level = min(self.rate * PERIOD, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def spend(self, now: float, seconds: float) -> None:
        self._refill(now)
        self.level -= seconds

    def wait(self, now: float, running: float) -> float:
        """Seconds to sleep before a step that has run ``running`` (not yet spent) may go on."""
        self._refill(now)
        deficit = running - self.level
        return deficit / self.rate if deficit > 0 else 0.0


@dataclass(eq=False)
class Cgroup:
    """One container's processes, with its limits. ``on_oom`` is told when the OOM killer killed them."""

    memory_limit: int = DEFAULT_MEMORY
    cpu_limit: float | None = None
    name: str = ""
    on_oom: Callable[[Cgroup], None] | None = None
    processes: set[Process] = field(default_factory=set)
    measured: int = 0  # what the last count found
    grown: int = 0  # bytes charged since that count (an upper bound of what was added)
    oom_kills: int = 0
    cpu: Bucket | None = None

    def __post_init__(self) -> None:
        if self.cpu_limit is not None:
            self.cpu = Bucket(self.cpu_limit)

    @classmethod
    def for_container(cls, container: Mapping[str, Any], name: str = "",
                      on_oom: Callable[[Cgroup], None] | None = None) -> Cgroup:
        memory, cpu = limits_of(container)
        cgroup = cls(memory, cpu, name, on_oom)
        NODE.cgroups.add(cgroup)
        return cgroup

    def process(self, name: str = "") -> Process:
        return Process(self, name)

    # --- memory -------------------------------------------------------------------------------

    def usage(self) -> int:
        before = self.measured
        self.measured = sum(p.holds() for p in list(self.processes))
        self.grown = 0
        NODE.measured += self.measured - before
        return self.measured

    def grew(self, process: Process, nbytes: int) -> None:
        process.raise_if_killed()
        self.grown += nbytes
        if self.measured + self.grown > self.memory_limit:
            self.usage()
            if self.measured > self.memory_limit:
                self.oom(process)
        NODE.grew(nbytes, process)

    def building(self, process: Process, nbytes: int) -> None:
        process.raise_if_killed()
        if self.measured + self.grown + nbytes > self.memory_limit and self.usage() + nbytes > self.memory_limit:
            self.oom(process)
        NODE.grew(0, process, transient=nbytes)

    def kill(self, reason: Killed, current: Process | None = None) -> None:
        """Kill every process of the container (the one running now last: it raises)."""
        for p in list(self.processes):
            if p is not current:
                p.kill(reason)
        if current is not None:
            current.kill(reason)
            raise reason

    def oom(self, current: Process | None = None) -> None:
        self.oom_kills += 1
        NODE.measured -= self.measured
        self.measured, self.grown = 0, 0
        if self.on_oom is not None:
            self.on_oom(self)
        self.kill(Killed("OOMKilled"), current if current is not None and current.cgroup is self else None)

    # --- CPU ----------------------------------------------------------------------------------

    def charge_cpu(self, seconds: float) -> None:
        now = time.perf_counter()
        if self.cpu is not None:
            self.cpu.spend(now, seconds)
        NODE.cpu.spend(now, seconds)

    def throttle(self, running: float) -> float:
        """Seconds to sleep before running on: 0 (just yield) within the quotas, else until repaid."""
        now = time.perf_counter()
        wait = NODE.cpu.wait(now, running)
        if self.cpu is not None:
            wait = max(wait, self.cpu.wait(now, running))
        return wait


class Node:
    """What all pod processes share: the node's memory, and the part of the loop that is theirs."""

    def __init__(self) -> None:
        self.cgroups: weakref.WeakSet[Cgroup] = weakref.WeakSet()
        self.cpu = Bucket(NODE_SHARE)
        self.measured = 0  # the sum of the cgroups' last counts
        self._grown = 0

    def grew(self, nbytes: int, process: Process, transient: int = 0) -> None:
        self._grown += nbytes
        if self.measured + self._grown + transient <= NODE_MEMORY:
            return
        groups = sorted(self.cgroups, key=lambda g: g.name)
        held = sum(g.usage() for g in groups)
        self.measured, self._grown = held, 0  # a counted sum again (cgroups gone since no longer in it)
        total = held + transient
        if total <= NODE_MEMORY:
            return
        # The kernel's global OOM killer: the container holding the most (BestEffort pods all score alike).
        victim = max(groups, key=lambda g: g.measured)
        victim.oom(process if process.cgroup is victim else None)


NODE = Node()


