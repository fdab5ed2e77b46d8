"""The live cluster as a ``ClusterState``, for what reads one: DNS, the Ingress entry, kernel mode,
exec's network tools, port-forward and the explorer.

Nothing is built or admitted again: the stored objects are already admitted, allocated, scheduled
and addressed, so the state is their typed views (``model.objects``, parsed once per change by the
informer) put into a ``ClusterState``'s collections. The collections are kept from the store's
changes; ``state()`` hands out a snapshot (shallow copies, so a reader keeps a consistent state
while the next change arrives) and rebuilds it only after something changed: whoever asks (the
entry, exec, DNS at each query) gets the cluster as it is. ``publish_soon`` (run whenever the
controllers are idle) gives the ``listeners`` that want to be told (the kubelet's running commands,
kernel mode) the new state once changes pause for ``QUIET`` seconds, and at least every
``MAX_DELAY``: a burst of a thousand writes is a few snapshots, not a thousand.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ..apiserver.store import Change, Key
from ..cluster.config import ClusterConfig
from ..cluster.state import COLLECTIONS, KEYED_BY_NAME, KEYED_BY_REF, ClusterState, collection_of
from ..model.objects import Object
from .informer import Informer, key_of

log = logging.getLogger("knetsim.controllers")
QUIET, MAX_DELAY = 0.02, 0.2  # seconds
NOT_IN_STATE = ("Event",)  # the simulation never reads them; thousands of them would only cost


class ClusterView:
    def __init__(self, informer: Informer, config: ClusterConfig,
                 listeners: list[Callable[[ClusterState], None]] | None = None) -> None:
        self.informer, self.config = informer, config
        self.listeners = listeners if listeners is not None else []
        self._collections: dict[str, dict[Any, Object]] = {name: {} for name in COLLECTIONS}
        self._dirty: set[Key] = {k for k in informer.store.objects if k[0] not in NOT_IN_STATE}
        self._copies: dict[str, dict[Any, Object]] = {}  # the last snapshot's collections (never changed)
        self._state: ClusterState | None = None
        self._published: ClusterState | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._waiting_since = 0.0
        informer.handlers.append(self._on_changes)

    def _on_changes(self, changes: list[Change]) -> None:
        for c in changes:
            if c.kind not in NOT_IN_STATE:
                self._dirty.add(key_of(c.kind, c.obj))
                self._state = None

    @staticmethod
    def _slot(key: Key) -> tuple[str, Any]:
        kind, namespace, name = key
        if kind in KEYED_BY_NAME:
            return KEYED_BY_NAME[kind], name
        ref = f"{namespace}/{name}" if namespace else name
        if kind in KEYED_BY_REF:
            return KEYED_BY_REF[kind], ref
        return collection_of(kind), (kind, ref)

    def state(self) -> ClusterState:
        """The cluster as stored now (the same object until the next change)."""
        if self._state is None:
            changed = set()
            for key in self._dirty:
                collection, slot = self._slot(key)
                changed.add(collection)
                obj = self.informer.typed(key)
                if obj is None:
                    self._collections[collection].pop(slot, None)
                else:
                    self._collections[collection][slot] = obj
            self._dirty.clear()
            # Only what changed is copied (and sorted: states iterate in (namespace, name) order).
            for name, objs in self._collections.items():
                if name in changed or name not in self._copies:
                    self._copies[name] = dict(sorted(objs.items()))
            self._state = ClusterState(config=self.config, **self._copies)
        return self._state

    def publish_soon(self) -> None:
        """``publish`` once changes pause (see the module docstring); at once without an event loop."""
        if not self.listeners:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.publish()
            return
        now = loop.time()
        if self._timer is not None:
            if now - self._waiting_since >= MAX_DELAY:
                return  # overdue: let the pending timer fire
            self._timer.cancel()
        else:
            self._waiting_since = now
        delay = min(QUIET, max(0.0, self._waiting_since + MAX_DELAY - now))
        self._timer = loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self.publish()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def publish(self) -> None:
        """Give the listeners the current state, if it changed since they last got one."""
        if not self.listeners:
            return
        state = self.state()
        if state is self._published:
            return
        self._published = state
        for fn in list(self.listeners):
            try:
                fn(state)
            except Exception:
                log.exception("state listener failed")
