"""The namespace controller: a namespace being deleted is emptied, then finalized.

Deleting a Namespace only marks it (``deletionTimestamp``, phase ``Terminating``: the registry's
NamespaceLifecycle refuses new objects in it). This controller then deletes every object in it, as
upstream's ``NamespacedResourcesDeleter`` does, each as its own deletion (one with finalizers of its
own waits for them), and once nothing is left removes the ``kubernetes`` finalizer
(``/finalize``), which lets the namespace go.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..apiserver.registry import NAMESPACE_FINALIZER
from ..apiserver.store import Change, Key
from .base import Controller


class NamespaceController(Controller):
    name = "namespace-controller"

    def handle(self, change: Change) -> Iterable[Key]:
        if change.kind == "Namespace" and change.new is not None and \
                (change.new.get("metadata") or {}).get("deletionTimestamp"):
            return [("Namespace", "", str(change.new["metadata"]["name"]))]
        namespace = str((change.obj.get("metadata") or {}).get("namespace") or "") if change.type == "DELETED" else ""
        if namespace and self._terminating(namespace):
            return [("Namespace", "", namespace)]  # one less object to wait for
        return []

    def resync(self) -> Iterable[Key]:
        return [key for key in self.informer.keys("Namespace") if self._terminating(key[2])]

    def _terminating(self, namespace: str) -> bool:
        body = self.informer.get(("Namespace", "", namespace))
        return body is not None and bool((body.get("metadata") or {}).get("deletionTimestamp"))

    def sync(self, key: Key) -> None:
        if not self._terminating(key[2]):
            return
        content = sorted(k for k in self.store.objects if k[1] == key[2] and k[0] != "Namespace")
        batch = self.batch()
        for k in content:
            batch.delete(k)
        batch.commit()
        if not any(k[1] == key[2] and k[0] != "Namespace" for k in self.store.objects):
            batch.finalizer_done(key, NAMESPACE_FINALIZER)
            batch.commit()
