"""The (deprecated, still running) endpoints controller: v1 Endpoints mirrored from the slices.

One Endpoints per Service with a selector, plus ``default/kubernetes``: addresses grouped into
subsets by port set, ready ones in ``addresses``, the others in ``notReadyAddresses``; a Service
without endpoints gets no ``subsets``. An Endpoints whose Service is gone (or lost its selector)
is deleted, unless a client wrote it (a selector-less Service's hand-made Endpoints).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..apiserver.store import Change, Key
from ..cluster.endpoints import endpoints_for
from ..model.objects import Service
from .base import Controller
from .endpointslice import service_of_slice, slices_of
from .informer import key_of


class EndpointsController(Controller):
    name = "endpoints-controller"

    def handle(self, change: Change) -> Iterable[Key]:
        if change.kind in ("Service", "Endpoints"):
            return [("Service", *key_of(change.kind, change.obj)[1:])]
        if change.kind == "EndpointSlice":
            return service_of_slice(change.obj)
        return []

    def resync(self) -> Iterable[Key]:
        return sorted({("Service", ns, name) for _k, ns, name in [*self.informer.keys("Service"),
                                                                   *self.informer.keys("Endpoints")]})

    def sync(self, key: Key) -> None:
        _kind, namespace, name = key
        ep_key: Key = ("Endpoints", namespace, name)
        stored = self.store.objects.get(ep_key)
        service = self.informer.typed(key)
        want = endpoints_for(service, slices_of(self.informer, namespace, name)) if isinstance(service, Service) \
            else None
        batch = self.batch()
        if want is None:
            if stored is None or stored.managed == "user":
                return
            batch.delete(ep_key)
        else:
            old = stored.body if stored is not None else None
            if old is not None and {k: v for k, v in old.items() if k != "metadata"} == \
                    {k: v for k, v in want.items() if k != "metadata"} and \
                    (old.get("metadata") or {}).get("labels") == want["metadata"].get("labels"):
                return
            old_meta = (old or {}).get("metadata") or {}
            want["metadata"]["uid"] = old_meta.get("uid") or batch.new_uid("Endpoints", namespace, name)
            want["metadata"]["creationTimestamp"] = old_meta.get("creationTimestamp") or batch.now
            batch.put(ep_key, want)
        batch.commit()
