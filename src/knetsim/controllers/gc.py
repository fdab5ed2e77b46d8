"""The garbage collector: dependents follow their owners as the owner's deletion asked.

Dependents are found by owner uid (the informer's index of ``ownerReferences``), as upstream's
graph builder finds them:

- **background** (the default): an object whose owners are all gone goes too, so deleting a
  Deployment removes its ReplicaSets, then their pods. A reference to an owner that is gone while
  another owner remains is dropped from the list, as ``attemptToDeleteItem`` patches dangling
  references away;
- **orphan** (``--cascade=orphan``): the owner waits with the ``orphan`` finalizer while its
  dependents lose their reference to it, then goes;
- **foreground** (``--cascade=foreground``): the owner waits with the ``foregroundDeletion``
  finalizer while its dependents are deleted (in the foreground those that have dependents of their
  own), then goes once no dependent with ``blockOwnerDeletion: true`` is left, as upstream's
  ``processDeletingDependentsItem`` waits only for its ``blockingDependents``
  (kubernetes/kubernetes pkg/controller/garbagecollector/garbagecollector.go).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..apiserver.registry import FOREGROUND_FINALIZER, ORPHAN_FINALIZER
from ..apiserver.store import Change, Key
from ..model.jsonvalue import json_copy
from ..model.strategy import Propagation
from .base import Controller
from .informer import key_of


def _refs(body: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    return [r for r in ((body or {}).get("metadata") or {}).get("ownerReferences") or [] if isinstance(r, Mapping)]


def _waiting(body: Mapping[str, Any] | None) -> set[str]:
    """The garbage collector's finalizers on an object being deleted."""
    meta = (body or {}).get("metadata") or {}
    if not meta.get("deletionTimestamp"):
        return set()
    return {f for f in meta.get("finalizers") or [] if f in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)}


class GarbageCollector(Controller):
    name = "garbage-collector"

    def handle(self, change: Change) -> Iterable[Key]:
        keys: list[Key] = []
        if change.type == "DELETED":
            uid = str((change.obj.get("metadata") or {}).get("uid") or "")
            keys += self.informer.dependents(uid) if uid else []
            # An owner deleted in the foreground waits for this dependent: look at it again.
            keys += [k for r in _refs(change.obj) if (k := self.informer.by_uid(str(r.get("uid") or ""))) is not None]
            return keys
        if _waiting(change.new):
            keys.append(key_of(change.kind, change.new))
        if change.new is not None and _refs(change.new) != _refs(change.old):
            if _refs(change.new):
                keys.append(key_of(change.kind, change.new))
            # A dependent that let go of an owner (or stopped blocking it) may be what that owner waits for.
            keys += [k for r in _refs(change.old) if (k := self.informer.by_uid(str(r.get("uid") or ""))) is not None
                     and _waiting(self.informer.get(k))]
        return keys

    def resync(self) -> Iterable[Key]:
        return sorted(key for key, stored in self.store.objects.items() if _refs(stored.body) or _waiting(stored.body))

    def sync(self, key: Key) -> None:
        body = self.informer.get(key)
        if body is None:
            return
        waiting = _waiting(body)
        if waiting:
            self._finish_deletion(key, body, waiting)
            return
        refs = _refs(body)
        if not refs:
            return
        present = [r for r in refs if self.informer.by_uid(str(r.get("uid") or "")) is not None]
        if len(present) == len(refs):
            return
        batch = self.batch()
        if not present:
            batch.delete(key)
        else:
            kept = json_copy(body)
            kept["metadata"]["ownerReferences"] = [dict(r) for r in present]
            batch.put(key, kept)
        batch.commit()

    def _solid(self, ref: Mapping[str, Any]) -> bool:
        """The owner a reference names exists and is not waiting for its dependents' deletion."""
        key = self.informer.by_uid(str(ref.get("uid") or ""))
        return key is not None and FOREGROUND_FINALIZER not in _waiting(self.informer.get(key))

    def _finish_deletion(self, key: Key, body: Mapping[str, Any], waiting: set[str]) -> None:
        uid = str(body["metadata"].get("uid") or "")
        dependents = self.informer.dependents(uid)
        batch = self.batch()
        if ORPHAN_FINALIZER in waiting:
            for dep in dependents:
                dependent = self.informer.get(dep)
                if dependent is None:
                    continue
                released = json_copy(dependent)
                refs = [r for r in _refs(dependent) if r.get("uid") != uid]
                if refs:
                    released["metadata"]["ownerReferences"] = [dict(r) for r in refs]
                else:
                    released["metadata"].pop("ownerReferences", None)
                batch.put(dep, released)
            batch.finalizer_done(key, ORPHAN_FINALIZER)
        else:
            blocking = False
            for dep in dependents:
                dependent = self.informer.get(dep)
                if dependent is None:
                    continue
                blocking = blocking or any(r.get("uid") == uid and r.get("blockOwnerDeletion") is True
                                           for r in _refs(dependent))
                if (dependent.get("metadata") or {}).get("deletionTimestamp"):
                    continue  # already going: nothing more to ask of it
                solid = [r for r in _refs(dependent) if r.get("uid") != uid and self._solid(r)]
                if solid:
                    # Another owner still stands: the dependent stays, without the references to owners that are
                    # gone or going in the foreground (upstream's attemptToDeleteItem with solid owners).
                    kept = json_copy(dependent)
                    kept["metadata"]["ownerReferences"] = [dict(r) for r in solid]
                    batch.put(dep, kept)
                    continue
                dep_uid = str((dependent.get("metadata") or {}).get("uid") or "")
                # Upstream deletes a dependent in the foreground only when it has dependents of its own.
                has_dependents = bool(dep_uid and self.informer.dependents(dep_uid))
                batch.delete(dep, Propagation.FOREGROUND if has_dependents else Propagation.BACKGROUND)
            if not blocking:
                batch.finalizer_done(key, FOREGROUND_FINALIZER)
        batch.commit()
