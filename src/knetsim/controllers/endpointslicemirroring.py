"""The EndpointSliceMirroring controller's plumbing: a selector-less Service's Endpoints copied into slices.

The decisions are the core's planner, ``cluster.mirroring.mirror(service, endpoints, existing)``; a change of the
Service, its Endpoints or one of its slices wakes the Service, whose mirrored slices are then written, or deleted
when the Service gains a selector, the Endpoints is labelled ``endpointslice.kubernetes.io/skip-mirror`` or goes
(the garbage collector also removes slices whose Endpoints is deleted: they are owned by it).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..apiserver.store import Change, Key
from ..cluster.mirroring import MIRRORING_CONTROLLER, mirror
from ..model.objects import MANAGED_BY_LABEL, Service
from .base import Controller
from .endpointslice import service_of_slice, slices_of, write_slices
from .informer import key_of


class EndpointSliceMirroringController(Controller):
    name = "endpointslicemirroring-controller"

    def handle(self, change: Change) -> Iterable[Key]:
        # Only what can concern a mirror: a Service without a selector before or after the change, any
        # Endpoints, and the slices this controller manages.
        if change.kind == "Service" and not all((body.get("spec") or {}).get("selector")
                                                for body in (change.old, change.new) if body is not None):
            return [key_of("Service", change.obj)]
        if change.kind == "Endpoints":
            return [("Service", *key_of(change.kind, change.obj)[1:])]
        if change.kind == "EndpointSlice" and (((change.obj.get("metadata") or {}).get("labels") or {})
                                               .get(MANAGED_BY_LABEL) == MIRRORING_CONTROLLER):
            return service_of_slice(change.obj)
        return []

    def resync(self) -> Iterable[Key]:
        return sorted({("Service", ns, name) for _k, ns, name in self.informer.keys("Endpoints")})

    def sync(self, key: Key) -> None:
        _kind, namespace, name = key
        service = self.informer.typed(key)
        endpoints = self.informer.get(("Endpoints", namespace, name))
        plan = mirror(service if isinstance(service, Service) else None, endpoints,
                      slices_of(self.informer, namespace, name))
        if not (plan.create or plan.update or plan.delete):
            return
        batch = self.batch()
        write_slices(self.informer, batch, namespace, plan.create, plan.update, plan.delete)
        batch.commit()
