"""kube-controller-manager: one work queue, the controllers' handlers feeding it, a loop draining it.

Each committed change goes to every controller's ``handle``; the keys they name are queued (a key
already waiting is not queued twice, as client-go's workqueue dedups) and the drain starts on the
next turn of the event loop. So a change is processed right after the request that made it, and
two writes in two requests are two passes: two quick ``kubectl scale`` commands give two
ScalingReplicaSet events, as on a real cluster. The drain yields to the server every few
milliseconds, so a long cascade (a namespace of a thousand objects) never stalls requests.

``settle`` is the server's consistency hook: it returns once the queue is empty (every write
acknowledged before it has been seen by the controllers); a controller that failed makes it
raise, once per reader, after one retry (a passing failure heals, a bug is a 500 naming it).
When the queue empties, ``idle_hooks`` run (the ClusterState view publishes).

An object the informer leaves out for its shape (``Informer.unreadable``) is reported once, by a
Warning event ``Unreadable`` on it; a sync that fails on an object of the wrong shape, or of a kind
knetsim has no types for, is that object's problem, not a bug: the same event and a log line, and
the other objects go on being reconciled (no 500 for every reader).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence

from ..apiserver.shape import shape_error, typed
from ..apiserver.store import Change, Key
from .base import Batch, Context, Controller

log = logging.getLogger("knetsim.controllers")

SLICE = 0.02  # seconds of controller work between two turns of the event loop
# How long a read waits for the controllers before it answers what is stored. kube-apiserver never waits;
# knetsim waits so that `kubectl apply` then `kubectl get pods` shows the pods at once, which takes
# milliseconds, and seconds on a loaded machine: the bound sits far above that, so that a read still shows
# what a write caused. Work that goes on and on (a ReplicaSet filling 100,000 replicas 500 at a time) must
# not hold every read until it ends: past this, the read answers, as a real cluster's would, mid-rollout.
SETTLE_BUDGET = 15.0


class ControllerManager:
    def __init__(self, ctx: Context, controllers: Sequence[Callable[[Context], Controller]]) -> None:
        self.ctx = ctx
        ctx.enqueue_after = self.enqueue_after
        self.controllers = [make(ctx) for make in controllers]
        self._queue: deque[tuple[Controller, Key]] = deque()
        self._queued: set[tuple[str, Key]] = set()
        self._failed: dict[tuple[str, Key], tuple[Controller, BaseException]] = {}
        self._task: asyncio.Task[None] | None = None
        self._draining = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._timers: dict[tuple[str, Key], asyncio.TimerHandle] = {}
        self.idle_hooks: list[Callable[[], None]] = []
        self.close_hooks: list[Callable[[], None]] = []
        self.closing = False
        ctx.informer.handlers.append(self._on_changes)

    # --- feeding the queue ------------------------------------------------------------------

    def _on_changes(self, changes: list[Change]) -> None:
        for change in changes:
            for ctl in self.controllers:
                try:
                    keys = list(ctl.handle(change))
                except Exception as exc:
                    # The client's write is committed; the bug is the next reader's 500, not this writer's.
                    log.exception("%s: handling a change of %s failed", ctl.name, change.kind)
                    self._failed[(ctl.name, ("", "", change.kind))] = (ctl, exc)
                    continue
                for key in keys:
                    self._push(ctl, key)
        self._kick()

    def _push(self, ctl: Controller, key: Key) -> None:
        marker = (ctl.name, key)
        if marker not in self._queued:
            self._queued.add(marker)
            self._queue.append((ctl, key))

    def enqueue(self, ctl: Controller, key: Key) -> None:
        self._push(ctl, key)
        self._kick()

    def enqueue_after(self, ctl: Controller, key: Key, delay: float) -> None:
        """Look at ``key`` again in ``delay`` seconds (a later call for the same key replaces this one)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop, no later (a unit test's synchronous drain)
        marker = (ctl.name, key)
        previous = self._timers.pop(marker, None)
        if previous is not None:
            previous.cancel()

        def fire() -> None:
            self._timers.pop(marker, None)
            if not self.closing:
                self.enqueue(ctl, key)
        self._timers[marker] = loop.call_later(max(0.0, delay), fire)

    def start(self, only: type[Controller] | None = None) -> None:
        """Queue every key each controller knows of (the start-up resync); ``only``: of that controller alone,
        when what it publishes has just become known (the root CA once the serving certificate exists)."""
        for ctl in self.controllers:
            if only is not None and not isinstance(ctl, only):
                continue
            for key in ctl.resync():
                self._push(ctl, key)
        self._kick()

    def _kick(self) -> None:
        if self.closing or self._draining:
            return
        if self._task is not None and not self._task.done():
            if self._queue:
                self._idle.clear()  # a drain is about to start (after a synchronous drain_now set idle)
            return
        self._idle.clear()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.drain_now()  # no loop (a script or a unit test): process at once
            return
        self._task = loop.create_task(self._drain())

    # --- draining ---------------------------------------------------------------------------

    def _step(self) -> None:
        ctl, key = self._queue.popleft()
        self._queued.discard((ctl.name, key))
        try:
            ctl.sync(key)
        except Exception as exc:
            why = self._unreadable(key)
            if why is not None:
                log.warning("%s: %s %s/%s cannot be reconciled: %s (%s: %s)", ctl.name, *key, why,
                            type(exc).__name__, exc)
                self.ctx.informer.left_out(key, why)
                self._failed.pop((ctl.name, key), None)
                return
            # Kept for the next reader (a 500 naming it) and retried then; the rest goes on.
            log.exception("%s: sync of %s %s/%s failed", ctl.name, *key)
            self._failed[(ctl.name, key)] = (ctl, exc)
        else:
            self._failed.pop((ctl.name, key), None)

    def _unreadable(self, key: Key) -> str | None:
        """Why the object a failed sync was about is to blame (None: the controller is)."""
        stored = self.ctx.store.objects.get(key)
        if stored is None:
            return None
        problem = shape_error(key[0], stored.body)
        if problem is not None:
            return problem
        if not typed(key[0]):
            return f"knetsim has no types for {key[0]} to read it by"
        return None

    def _report_unreadable(self) -> None:
        """A Warning event on each object newly left out (in a batch of its own: never inside a commit)."""
        keys, self.ctx.informer.newly_unreadable = self.ctx.informer.newly_unreadable, []
        batch = Batch(self.ctx.store, self.ctx.clock())
        for key in keys:
            stored = self.ctx.store.objects.get(key)
            if stored is None or key[0] == "Event":
                continue
            why = self.ctx.informer.unreadable.get(key, "")
            batch.event(stored.body, "Unreadable", f"knetsim leaves this {key[0]} out of the cluster (no "
                        f"controller acts on it): it cannot be read: {why}"[:1024], "knetsim-controller-manager",
                        type_="Warning")
        batch.commit()

    def drain_now(self) -> None:
        self._draining = True
        try:
            if self.ctx.informer.newly_unreadable:
                self._report_unreadable()
            while self._queue:
                self._step()
        finally:
            self._draining = False
        self._became_idle()

    async def _drain(self) -> None:
        try:
            started = time.perf_counter()
            if self.ctx.informer.newly_unreadable:
                self._report_unreadable()
            while self._queue and not self.closing:
                self._step()
                if time.perf_counter() - started > SLICE:
                    await asyncio.sleep(0)
                    started = time.perf_counter()
        finally:
            self._became_idle()

    def _became_idle(self) -> None:
        if self._queue and not self.closing:
            return
        for fn in self.idle_hooks:
            try:
                fn()
            except Exception:
                log.exception("idle hook failed")
        self._idle.set()

    async def settle(self) -> None:
        """Return once the controllers have seen every change so far (or ``SETTLE_BUDGET`` has passed); raise
        what made one of them fail."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_BUDGET
        retried = False
        while not self.closing:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            if self._task is not None and not self._task.done():
                await asyncio.wait([self._task], timeout=remaining)  # the drain under way, or about to start
                continue
            if self._queue:
                self._kick()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._idle.wait(), remaining)
                continue
            if not self._failed:
                return
            if retried:
                _ctl, exc = next(iter(self._failed.values()))
                raise exc
            retried = True
            for (_name, key), (ctl, _exc) in list(self._failed.items()):
                self._push(ctl, key)
            self._kick()

    async def close(self) -> None:
        self.closing = True
        for fn in self.close_hooks:
            fn()
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        self._idle.set()
