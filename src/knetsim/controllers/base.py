"""What every controller shares: the store it writes, the informer it reads, the clock and events.

A controller is a watcher of the store (kube-controller-manager's shape): ``handle`` maps one
committed change to the keys it must look at again, ``sync`` brings one key in line and commits
what that takes as one batch. ``resync`` names every key at start, so whatever happened while the
server was down is reconciled (controllers are level-triggered).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..apiserver.events import EventNames, involved, make_event
from ..apiserver.registry import (
    SERVER_BOOKKEEPING,
    Registry,
    commit_batch,
    controller_write,
    deletion,
    finalizer_done,
    status_write,
)
from ..apiserver.store import Change, Key, Store, Stored, Write
from ..cluster.config import ClusterConfig
from ..cluster.state import ClusterState
from ..model.objects import stable_uid
from ..model.strategy import Propagation
from ..model.timestamps import now_rfc3339
from .informer import Informer


def being_deleted(body: Mapping[str, Any] | None) -> bool:
    """Marked for deletion and waiting for its finalizers: an owner's controller makes nothing new for it
    (upstream's controllers skip their work on a non-nil DeletionTimestamp), or it would refill what the
    garbage collector empties, forever."""
    return bool(((body or {}).get("metadata") or {}).get("deletionTimestamp"))


def _same_as_stored(body: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    """``body`` is ``stored`` but for the resourceVersion and managedFields (which a write replaces anyway)."""
    if body.keys() != stored.keys():
        return False
    meta, stored_meta = body.get("metadata") or {}, stored.get("metadata") or {}
    return all(body[k] == stored[k] for k in body if k != "metadata") and \
        {k: v for k, v in meta.items() if k not in SERVER_BOOKKEEPING} == \
        {k: v for k, v in stored_meta.items() if k not in SERVER_BOOKKEEPING}


def status_only(change: Change, annotations: tuple[str, ...] = ()) -> bool:
    """Did this update change only the status (and the ``annotations`` named), as a controller's own
    status write does? Its controller has nothing more to do for it."""
    old, new = change.old, change.new
    if change.type != "MODIFIED" or old is None or new is None:
        return False
    if {k: v for k, v in old.items() if k not in ("status", "metadata")} != \
            {k: v for k, v in new.items() if k not in ("status", "metadata")}:
        return False

    def meta(body: dict[str, Any]) -> dict[str, Any]:
        m = {k: v for k, v in (body.get("metadata") or {}).items() if k not in SERVER_BOOKKEEPING}
        if annotations and m.get("annotations"):
            m["annotations"] = {k: v for k, v in m["annotations"].items() if k not in annotations}
        return m
    return meta(old) == meta(new)


@dataclass
class Context:
    store: Store
    informer: Informer
    config: ClusterConfig
    # The API's write path, for a controller that writes as a client of the API (admission, allocation).
    registry: Registry | None = None
    # The cluster as a ClusterState now, for a controller whose decisions read all of it (Gateway API).
    state: Callable[[], ClusterState] | None = None
    clock: Callable[[], str] = now_rfc3339
    # The bundle that verifies the API server (PEM), None until it exists: what kube-root-ca.crt publishes.
    root_ca: Callable[[], str | None] = lambda: None
    # Set by the manager: look at a key again after some seconds (deadlines, minReadySeconds).
    enqueue_after: Callable[[Controller, Key, float], None] = lambda ctl, key, delay: None


class Controller:
    name = "controller"
    # The manager its writes are recorded under in managedFields: the binary upstream runs it in (client-go's
    # default field manager is the User-Agent's program name).
    field_manager = "kube-controller-manager"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.store, self.informer, self.config = ctx.store, ctx.informer, ctx.config

    def handle(self, change: Change) -> Iterable[Key]:
        return ()

    def resync(self) -> Iterable[Key]:
        return ()

    def sync(self, key: Key) -> None:
        raise NotImplementedError

    def batch(self) -> Batch:
        return Batch(self.store, self.ctx.clock(), manager=self.field_manager)


@dataclass
class Batch:
    """The writes of one sync, committed together (events included, named in the order recorded)."""

    store: Store
    now: str
    writes: list[Write] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    # Who writes: its managedFields entries' manager (and the name the registry's log lines give it).
    manager: str = "kube-controller-manager"

    _names: EventNames | None = None
    _start: int = 0
    # Where in ``writes`` each object's write is (put, put_status, delete, finalizer_done): a status write after a
    # write of the same object in this batch joins it.
    _at: dict[Key, int] = field(default_factory=dict)

    def _write(self, write: Write) -> None:
        at = self._at.get(write.key)
        if at is not None:
            self.writes[at] = write
        else:
            self._at[write.key] = len(self.writes)
            self.writes.append(write)

    @property
    def names(self) -> EventNames:
        """Event names, continuing the store's sequence (read when the first event of the batch is made)."""
        if self._names is None:
            self._names = EventNames(self.now, self.store.meta)
            self._start = self._names.count
        return self._names

    def new_uid(self, kind: str, namespace: str, name: str) -> str:
        """The uid of an object this batch creates: derived from its identity (the offline core's, so a fresh cluster
        equals its offline build), unless an object of that identity was deleted before (a StatefulSet's ``db-0``, a
        Deployment's ReplicaSet, a Service's slices come back under the same name): then also from the
        resourceVersion it is made at, a new object as on a real cluster. ``kubectl delete`` waits until the uid it
        deleted is gone; with the old uid back it waited forever."""
        uid = stable_uid(kind, namespace, name)
        deleting = {str((stored.body.get("metadata") or {}).get("uid")) for w in self.writes
                    if w.body is None and (stored := self.store.objects.get(w.key)) is not None}
        if uid in self.store.retired_uids or uid in deleting:
            uid = stable_uid(kind, namespace, f"{name}@{self.store.rv + len(self.writes) + 1}")
        return uid

    def put(self, key: Key, body: dict[str, Any], *, field_managed: bool = True) -> None:
        """Create or replace ``key``. ``body`` may share parts with stored objects (the store never changes
        one in place); what the caller changes must be its own copy. Its managedFields entry is recorded
        (``field_managed=False``: a write the API server records none for, as a pod's binding)."""
        stored = self.store.objects.get(key)
        if stored is not None and _same_as_stored(body, stored.body):
            return  # what is stored already: a write would only wake every watcher to find nothing new
        if field_managed:
            self.writes.append(controller_write(stored, key, body, by=self.manager, time=self.now))
        else:
            self.writes.append(Write(key, body, stored.managed if stored is not None else "controller"))
        self._at[key] = len(self.writes) - 1

    def put_status(self, key: Key, body: dict[str, Any]) -> None:
        """Write ``body``'s status to ``key``, as a ``PUT .../status`` of it: the kind's status strategy takes
        the status (and the metadata its status may carry) over the stored object, spec and generation stay,
        and the status rules validate it (a refused write is logged and dropped, as a 422 the controller's
        next sync would meet). A write to ``key`` earlier in this batch is the object it applies to: the
        two become one write, as the spec-then-status of one sync lands together."""
        stored = self.store.objects.get(key)
        earlier = self._at.get(key)
        if earlier is not None:
            pending = self.writes[earlier]
            if pending.body is None:
                return  # deleted in this batch
            base = Stored(pending.body, stored.rv if stored is not None else 0, pending.managed)
        elif stored is not None:
            base = stored
        else:
            return  # gone: the API server would answer 404; the next sync sees it so
        write = status_write(base, key, body, by=self.manager)
        if write is not None:
            self._write(write)

    def delete(self, key: Key, propagation: Propagation = Propagation.BACKGROUND) -> None:
        """Delete as a client of the API would: at once, or marked until the object's finalizers are done."""
        stored = self.store.objects.get(key)
        if stored is None:
            return
        write = deletion(key, stored, propagation, lambda: self.now)
        if write.body != stored.body:  # already marked: nothing more until its finalizers are done
            self.writes.append(write)
            self._at[key] = len(self.writes) - 1

    def finalizer_done(self, key: Key, finalizer: str) -> None:
        stored = self.store.objects.get(key)
        write = finalizer_done(key, stored, finalizer) if stored is not None else None
        if write is not None:
            self.writes.append(write)
            self._at[key] = len(self.writes) - 1

    def event(self, subject: Mapping[str, Any], reason: str, message: str, component: str, *,
              type_: str = "Normal", host: str = "", action: str = "", field_path: str = "") -> None:
        self.writes.append(make_event(self.names, involved(subject, field_path), reason, message, component,
                                      self.now, host=host, type_=type_, action=action))

    def commit(self) -> None:
        if self._names is not None and self._names.count != self._start:
            self.meta["eventseq"] = str(self._names.count)
        if self.writes or self.meta:
            commit_batch(self.store, self.writes, self.meta, by=self.manager, durable=False)
        self.writes, self.meta, self._names, self._at = [], {}, None, {}
