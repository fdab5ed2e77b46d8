"""Durable object store: SQLite in WAL mode, one global resourceVersion, watch fan-out.

Every client write is one transaction committed (``synchronous=FULL``) before the caller gets
the new object back, so an acknowledged write survives ``kill -9`` and power loss alike. All
objects are also held in memory: reads never touch SQLite.

Controller writes are ``durable=False``: applied in memory and announced at once, written to
SQLite ``FLUSH_DELAY`` later in one transaction (one fsync for a burst instead of one per derived
object; nobody waits for an acknowledgement of them, and a client's write does not wait for them).
A crash can lose the last of them; the controllers derive them again at start. Since a watcher
may have seen their resourceVersions, a start after a crash continues ``HISTORY`` past the last
stored one, so no resourceVersion is ever handed out twice.

The controllers' writes are counted per object (``WriteCounter``): one written more than LOOP_BOUND times
within LOOP_WINDOW seconds is a loop, logged once per window with LOOP_MARK (tests/*/conftest.py fail the
test). The uids of deleted objects are remembered (``retired_uids``) so a controller making an object again
under the same name gives it a new one.

Rows are keyed (kind, namespace, name). ``managed`` is ``user`` for objects a client wrote
(the controllers' input) and ``controller`` for objects the controllers derived (ReplicaSets,
Pods of workloads, EndpointSlices, system objects); a client write to a controller object
makes it ``user``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Key = tuple[str, str, str]  # (kind, namespace, name)
log = logging.getLogger("knetsim.apiserver")

HISTORY = 20_000  # watch events kept for resuming watches (etcd keeps ~5 minutes; this is by count)
FLUSH_DELAY = 0.05  # seconds a controller write may wait for SQLite (batched with what follows it)
# A controller loop: one object written by the controllers more than LOOP_BOUND times within LOOP_WINDOW
# seconds. A loop runs as fast as the work queue drains (thousands of writes a second: 3.5 million revisions
# in 12 minutes, issue 34); the busiest legitimate writer is an owner filling a replica typo in bursts, its
# status written once every BURST_INTERVAL (controllers/podowner.py: 20 a second, 40 in a window), so the
# bound is five times that and far below any loop.
LOOP_WINDOW = 2.0
LOOP_BOUND = 200
LOOP_MARK = "controller loop:"  # the log line's start; the live test suites fail a test whose cluster logs it
RETIRED_UIDS = 100_000  # uids of deleted objects remembered (a controller gives an object made again a new one)


def shared(new: Any, old: Any) -> Any:
    """``new``, with every part equal to a part of ``old`` at the same place replaced by ``old``'s."""
    if new is old:
        return new
    if type(new) is dict and type(old) is dict:
        out = {k: shared(v, old[k]) if k in old else v for k, v in new.items()}
        return old if len(out) == len(old) and all(out[k] is old.get(k, out) for k in out) else out
    if type(new) is list and type(old) is list:
        items = [shared(a, b) for a, b in zip(new, old, strict=False)] + new[len(old):]
        return old if len(new) == len(old) and all(a is b for a, b in zip(items, old, strict=True)) else items
    return old if type(new) is type(old) and new == old else new


@dataclass(slots=True)
class Stored:
    body: dict[str, Any]
    rv: int
    managed: str


@dataclass(frozen=True, slots=True)
class Change:
    """One committed change: ADDED / MODIFIED / DELETED, with the object before and after."""

    type: str
    kind: str
    rv: int
    old: dict[str, Any] | None
    new: dict[str, Any] | None

    @property
    def obj(self) -> dict[str, Any]:
        return self.new if self.new is not None else self.old  # type: ignore[return-value]


@dataclass(slots=True)
class Write:
    """A write to apply atomically: body None deletes."""

    key: Key
    body: dict[str, Any] | None
    managed: str = "user"


class WriteCounter:
    """The controllers' writes per object in the current LOOP_WINDOW; an object written more than LOOP_BOUND
    times in one is logged once (LOOP_MARK), naming it, so a loop is seen instead of felt as a slow cluster."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.window_start = clock()
        self.counts: Counter[Key] = Counter()
        self.reported: list[Key] = []  # every object reported since start, in order

    def count(self, changes: Iterable[Change]) -> None:
        now = self.clock()
        if now - self.window_start >= LOOP_WINDOW:
            self.window_start, self.counts = now, Counter()
        for c in changes:
            meta = c.obj.get("metadata") or {}
            key = (c.kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
            self.counts[key] += 1
            if self.counts[key] == LOOP_BOUND + 1:
                self.reported.append(key)
                log.error("%s %s %s written by the controllers more than %d times within %.0f s (resourceVersion "
                          "%d)", LOOP_MARK, key[0], "/".join(p for p in key[1:] if p), LOOP_BOUND, LOOP_WINDOW, c.rv)


@dataclass
class Watcher:
    kind: str
    namespace: str
    accept: Callable[[dict[str, Any]], bool]
    queue: asyncio.Queue[Change | None] = field(default_factory=asyncio.Queue)


class Store:
    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        # check_same_thread off: the server runs on one event loop, but tests may open
        # the store from a helper thread.
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("CREATE TABLE IF NOT EXISTS objects (kind TEXT NOT NULL, namespace TEXT NOT NULL, "
                         "name TEXT NOT NULL, rv INTEGER NOT NULL, managed TEXT NOT NULL, body TEXT NOT NULL, "
                         "PRIMARY KEY (kind, namespace, name))")
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        # Objects a newer knetsim refused to serve (they fail today's admission): kept, never served.
        self._db.execute("CREATE TABLE IF NOT EXISTS quarantine (kind TEXT NOT NULL, namespace TEXT NOT NULL, "
                         "name TEXT NOT NULL, rv INTEGER NOT NULL, reason TEXT NOT NULL, body TEXT NOT NULL)")
        self.objects: dict[Key, Stored] = {}
        self.unreadable: list[tuple[Key, str]] = []
        for kind, ns, name, rv, managed, body in self._db.execute(
                "SELECT kind, namespace, name, rv, managed, body FROM objects"):
            try:
                obj = json.loads(body)
                if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
                    raise ValueError("not an object with metadata")
            except (ValueError, RecursionError) as exc:
                self.unreadable.append(((kind, ns, name), f"unreadable row: {exc}"))
                continue
            self.objects[(kind, ns, name)] = Stored(obj, rv, managed)
        self.meta: dict[str, str] = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        self.rv = int(self.meta.get("rv", "0"))
        if self.meta.get("open") == "1":
            self.rv += HISTORY  # not closed cleanly: unflushed resourceVersions may have been seen
        self._pending: dict[Key, tuple[int, str, dict[str, Any]] | None] = {}  # written in memory, not yet to disk
        self._pending_meta: dict[str, str] = {}
        self._flush_handle: asyncio.TimerHandle | None = None
        self._write_meta({"open": "1", "rv": str(self.rv)})
        # A watch may resume from any rv >= this one; older ones get 410 Gone.
        self.oldest_rv = self.rv
        self.history: deque[Change] = deque(maxlen=HISTORY)
        self.watchers: list[Watcher] = []
        self.listeners: list[Callable[[list[Change]], None]] = []
        self.controller_writes = WriteCounter()
        # The uids of objects deleted since start, the most recent RETIRED_UIDS (insertion order: oldest first).
        self.retired_uids: dict[str, None] = {}

    def close(self) -> None:
        for w in list(self.watchers):
            w.queue.put_nowait(None)
        self.flush()
        self._write_meta({"open": "0"})
        self._db.close()

    def _write_meta(self, meta: dict[str, str]) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for k, v in meta.items():
                db.execute("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET "
                           "value=excluded.value", (k, v))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self.meta.update(meta)

    # --- reads -----------------------------------------------------------------------

    def get(self, key: Key) -> Stored | None:
        return self.objects.get(key)

    def list(self, kind: str, namespace: str = "") -> list[Stored]:
        items = [s for (k, ns, _), s in self.objects.items() if k == kind and (not namespace or ns == namespace)]
        items.sort(key=lambda s: (s.body["metadata"].get("namespace", ""), s.body["metadata"]["name"]))
        return items

    # --- writes ----------------------------------------------------------------------

    def commit(self, writes: Iterable[Write], meta: dict[str, str] | None = None, *,
               durable: bool = True) -> list[Change]:
        """Apply writes (and bookkeeping ``meta``) in one transaction; each write gets its own
        resourceVersion. Returns the changes. ``durable=False`` leaves the disk write for the next
        flush (see the module docstring)."""
        changes: list[Change] = []
        staged: list[tuple[Key, Stored | None, Stored | None]] = []
        rv = self.rv
        for w in writes:
            old = self.objects.get(w.key)
            if w.body is None:
                if old is None:
                    continue
                rv += 1
                gone = {**old.body, "metadata": {**old.body["metadata"], "resourceVersion": str(rv)}}
                staged.append((w.key, old, None))
                changes.append(Change("DELETED", w.key[0], rv, old.body, gone))
                continue
            rv += 1
            body = w.body
            if old is not None:
                # What did not change is the previous version's (the same objects): the versions the watch
                # history keeps cost only what changed. Stored bodies are never changed in place.
                body = {k: shared(v, old.body[k]) if k in old.body else v for k, v in body.items()}
            body["metadata"] = dict(body["metadata"], resourceVersion=str(rv))
            new = Stored(body, rv, w.managed)
            staged.append((w.key, old, new))
            changes.append(Change("MODIFIED" if old else "ADDED", w.key[0], rv, old.body if old else None, body))
        if not staged and not meta:
            return []
        rows = {key: (new.rv, new.managed, new.body) if new is not None else None for key, _old, new in staged}
        if durable:
            self._flush(rows, {**(meta or {}), "rv": str(rv)})
        else:
            self._pending.update(rows)
            self._pending_meta.update(meta or {})
            self._schedule_flush()
        self.rv = rv
        self.meta.update(meta or {})
        self.meta["rv"] = str(rv)
        for key, _old, new in staged:
            if new is None:
                self.objects.pop(key, None)
            else:
                self.objects[key] = new
        if not durable:
            self.controller_writes.count(changes)
        for c in changes:
            if c.type == "DELETED" and (uid := (c.obj.get("metadata") or {}).get("uid")):
                self.retired_uids[str(uid)] = None
        while len(self.retired_uids) > RETIRED_UIDS:
            del self.retired_uids[next(iter(self.retired_uids))]
        self.history.extend(changes)
        if len(self.history) == self.history.maxlen:
            self.oldest_rv = self.history[0].rv - 1
        for w in self.watchers:
            for c in changes:
                if c.kind == w.kind:
                    w.queue.put_nowait(c)
        for fn in self.listeners:
            fn(changes)
        return changes

    def flush(self) -> None:
        """Write what non-durable commits left in memory (one transaction)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if self._pending or self._pending_meta:
            self._flush({}, {"rv": str(self.rv)}, pending=True)

    def _schedule_flush(self) -> None:
        if self._flush_handle is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()  # no loop to come back on (a script, a test): write now
            return
        self._flush_handle = loop.call_later(FLUSH_DELAY, self._flush_later)

    def _flush_later(self) -> None:
        self._flush_handle = None
        try:
            self.flush()
        except Exception:
            # The disk refused (full, gone): keep the rows and try again with the next write.
            log.exception("writing controller changes to the store failed")

    def _flush(self, rows: dict[Key, tuple[int, str, dict[str, Any]] | None], meta: dict[str, str], *,
               pending: bool = False) -> None:
        """One SQLite transaction: ``rows`` and ``meta`` (and the pending controller rows, with ``pending``);
        nothing changes on failure. A client's write does not carry the controllers' rows: it would make
        the client wait for the fsync of everything derived since its last write; they follow within
        ``FLUSH_DELAY``, and what a crash loses of them the controllers derive again."""
        all_rows = {**self._pending, **rows} if pending else rows
        all_meta = {**self._pending_meta, **meta} if pending else meta
        db = self._db
        deletes = [key for key, row in all_rows.items() if row is None]
        upserts = [(*key, row[0], row[1], json.dumps(row[2], separators=(",", ":")))
                   for key, row in all_rows.items() if row is not None]
        db.execute("BEGIN IMMEDIATE")
        try:
            # One statement per kind of change (executemany): a client write flushes every row the
            # controllers changed since the last one, often dozens.
            db.executemany("DELETE FROM objects WHERE kind=? AND namespace=? AND name=?", deletes)
            db.executemany("INSERT INTO objects(kind, namespace, name, rv, managed, body) VALUES(?,?,?,?,?,?) "
                           "ON CONFLICT(kind, namespace, name) DO UPDATE SET rv=excluded.rv, "
                           "managed=excluded.managed, body=excluded.body", upserts)
            db.executemany("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET "
                           "value=excluded.value", list(all_meta.items()))
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
        if pending:
            self._pending.clear()
            self._pending_meta.clear()
        else:
            for key in rows:
                self._pending.pop(key, None)  # superseded by the newer version just written

    def quarantine(self, key: Key, reason: str, body: dict[str, Any] | str | None = None) -> None:
        """Move an object out of service (into the quarantine table) in one transaction; nothing is lost."""
        old = self.objects.get(key)
        raw = body if isinstance(body, str) else json.dumps(body if body is not None else (old.body if old else None))
        if old is None and body is None:
            row = self._db.execute("SELECT body FROM objects WHERE kind=? AND namespace=? AND name=?", key).fetchone()
            raw = row[0] if row else "null"
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("INSERT INTO quarantine(kind, namespace, name, rv, reason, body) VALUES(?,?,?,?,?,?)",
                       (*key, old.rv if old else 0, reason, raw))
            db.execute("DELETE FROM objects WHERE kind=? AND namespace=? AND name=?", key)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._pending.pop(key, None)
        self.objects.pop(key, None)

    def quarantined(self) -> list[tuple[Key, str]]:
        return [((k, ns, n), reason) for k, ns, n, reason in
                self._db.execute("SELECT kind, namespace, name, reason FROM quarantine ORDER BY rowid")]

    # --- watch -----------------------------------------------------------------------

    def since(self, kind: str, rv: int) -> list[Change] | None:
        """Changes of ``kind`` after ``rv``, or None when they are no longer known (410 Gone)."""
        if rv < self.oldest_rv:
            return None
        return [c for c in self.history if c.rv > rv and c.kind == kind]

    def subscribe(self, watcher: Watcher) -> None:
        self.watchers.append(watcher)

    def unsubscribe(self, watcher: Watcher) -> None:
        if watcher in self.watchers:
            self.watchers.remove(watcher)
