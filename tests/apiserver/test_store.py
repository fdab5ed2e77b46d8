"""The store's two kinds of writes: durable (a client's, fsynced before the answer) and deferred
(the controllers', announced at once and written to SQLite with what follows them).

Given a store in a temporary directory, then what a second connection sees on disk tells which
writes reached SQLite; reopening after an unclean stop never reuses a resourceVersion.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from knetsim.apiserver.store import FLUSH_DELAY, HISTORY, Change, Store, Write


def cm(name: str) -> Write:
    return Write(("ConfigMap", "default", name), {"apiVersion": "v1", "kind": "ConfigMap",
                                                  "metadata": {"name": name, "namespace": "default"}}, "controller")


def on_disk(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {name for (name,) in db.execute("SELECT name FROM objects")}


def test_deferred_writes_are_announced_at_once_and_reach_the_disk_within_the_flush_delay(tmp_path: Path) -> None:
    """A client's write is on disk when acknowledged and does not wait for the controllers' rows; those
    follow within FLUSH_DELAY, together."""
    path = tmp_path / "store.db"

    async def run() -> tuple[set[str], set[str], set[str], list[str]]:
        store = Store(path)
        seen: list[str] = []

        def listener(changes: list[Change]) -> None:
            seen.extend(c.obj["metadata"]["name"] for c in changes)
        store.listeners.append(listener)
        store.commit([cm("derived")], durable=False)
        before = on_disk(path)
        store.commit([cm("client")])
        after_durable = on_disk(path)
        store.commit([cm("later")], durable=False)
        await asyncio.sleep(FLUSH_DELAY * 3)
        after_delay = on_disk(path)
        store.close()
        return before, after_durable, after_delay, seen

    before, after_durable, after_delay, seen = asyncio.run(run())
    assert seen == ["derived", "client", "later"]
    assert before == set()
    assert after_durable == {"client"}
    assert after_delay == {"derived", "client", "later"}


def test_a_restart_after_a_crash_never_reuses_a_resource_version(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = Store(path)
    store.commit([cm("a")])
    seen_rv = store.rv
    # No close(): as after kill -9. A clean close and reopen keeps counting from where it was.
    again = Store(path)
    assert again.rv == seen_rv + HISTORY
    again.commit([cm("b")])
    again.close()
    clean = Store(path)
    assert clean.rv == seen_rv + HISTORY + 1
    clean.close()
