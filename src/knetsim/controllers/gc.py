"""The garbage collector: an object whose owners are all gone goes too (background propagation).

Dependents are found by owner uid (the informer's index of ``ownerReferences``), so deleting a
Deployment removes its ReplicaSets, then their pods, then nothing else is looked at. A reference
to an owner that is gone while another owner remains is dropped from the list, as upstream's
``attemptToDeleteItem`` patches dangling references away. ``--cascade=orphan`` is the API
server's (it removes the references before deleting the owner).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..apiserver.store import Change, Key
from .base import Controller, copy
from .informer import key_of


def _refs(body: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    return [r for r in ((body or {}).get("metadata") or {}).get("ownerReferences") or [] if isinstance(r, Mapping)]


class GarbageCollector(Controller):
    name = "garbage-collector"

    def handle(self, change: Change) -> Iterable[Key]:
        if change.type == "DELETED":
            uid = str((change.obj.get("metadata") or {}).get("uid") or "")
            return self.informer.dependents(uid) if uid else []
        if change.new is not None and _refs(change.new) and _refs(change.new) != _refs(change.old):
            return [key_of(change.kind, change.new)]
        return []

    def resync(self) -> Iterable[Key]:
        return sorted(key for key, stored in self.store.objects.items() if _refs(stored.body))

    def sync(self, key: Key) -> None:
        body = self.informer.get(key)
        refs = _refs(body)
        if body is None or not refs:
            return
        present = [r for r in refs if self.informer.by_uid(str(r.get("uid") or "")) is not None]
        if len(present) == len(refs):
            return
        batch = self.batch()
        if not present:
            batch.delete(key)
        else:
            kept = copy(body)
            kept["metadata"]["ownerReferences"] = [dict(r) for r in present]
            batch.put(key, kept)
        batch.commit()
