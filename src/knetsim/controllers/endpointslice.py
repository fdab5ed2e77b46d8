"""The EndpointSlice controller's plumbing: which Services a change concerns, and the writes.

The decisions are the core's planner, ``cluster.endpointslices.reconcile(service, pods, existing,
nodes)``, run for one Service over the pods its selector picks (the informer's label index) and
its existing slices. A Service change wakes that Service; a pod change wakes every Service whose
selector matches the pod's labels before or after it; an edit of a managed slice wakes its Service,
which puts it back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..apiserver.store import Change, Key
from ..cluster.endpointslices import reconcile
from ..cluster.topology import hints_enabled
from ..model.labels import Selector
from ..model.objects import ENDPOINTSLICE_CONTROLLER, SERVICE_NAME_LABEL, EndpointSlice, Node, Pod, Service
from .base import Batch, Context, Controller
from .informer import Informer, key_of


def slices_of(informer: Informer, namespace: str, service: str) -> list[EndpointSlice]:
    """The slices labelled with the Service's name (``kubernetes.io/service-name``), as consumers find them."""
    names = informer.select("EndpointSlice", namespace, Selector.from_map({SERVICE_NAME_LABEL: service}))
    return [s for n in names if isinstance(s := informer.typed(("EndpointSlice", namespace, n)), EndpointSlice)]


def service_of_slice(body: Mapping[str, Any]) -> list[Key]:
    """The Service a slice is labelled for (``kubernetes.io/service-name``), if any."""
    meta = body.get("metadata") or {}
    service = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
    return [("Service", str(meta.get("namespace") or ""), str(service))] if service else []


def services_selecting(informer: Informer, pod: Mapping[str, Any] | None) -> list[Key]:
    if pod is None:
        return []
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    return [("Service", namespace, n) for n in informer.selecting("Service", namespace, meta.get("labels") or {})]


def write_slices(informer: Informer, batch: Batch, namespace: str, create: Iterable[dict[str, Any]],
                 update: Iterable[dict[str, Any]], delete: Iterable[str]) -> None:
    """A slice plan's writes (this controller's and the mirroring controller's): a created slice gets its uid
    (a new one where a deleted slice had the name), an updated one keeps its uid and counts a generation."""
    for body in create:
        meta = body["metadata"]
        meta.update(uid=batch.new_uid("EndpointSlice", namespace, meta["name"]), creationTimestamp=batch.now,
                    generation=1)
        batch.put(("EndpointSlice", namespace, meta["name"]), body)
    for body in update:
        meta = body["metadata"]
        old = (informer.get(("EndpointSlice", namespace, meta["name"])) or {}).get("metadata") or {}
        meta.update({f: old[f] for f in ("uid", "creationTimestamp") if f in old})
        meta["generation"] = int(old.get("generation") or 1) + 1
        batch.put(("EndpointSlice", namespace, meta["name"]), body)
    for slice_name in delete:
        batch.delete(("EndpointSlice", namespace, slice_name))


class EndpointSliceController(Controller):
    name = "endpointslice-controller"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        # The topology events last recorded per Service: recorded again only when they change.
        self._events: dict[Key, tuple[tuple[str, str, str], ...]] = {}

    def handle(self, change: Change) -> Iterable[Key]:
        if change.kind == "Service":
            return [key_of("Service", change.obj)]
        if change.kind == "Node":
            # Zones, readiness and allocatable CPU decide topology-mode Auto's allocation (SetNodes).
            return [k for k in self.informer.keys("Service") if hints_enabled(
                ((self.informer.get(k) or {}).get("metadata") or {}).get("annotations") or {})]
        if change.kind == "Pod":
            return [*services_selecting(self.informer, change.old),
                    *services_selecting(self.informer, change.new if change.type != "DELETED" else None)]
        if change.kind == "EndpointSlice":
            return service_of_slice(change.obj)
        return []

    def resync(self) -> Iterable[Key]:
        return self.informer.keys("Service")

    def sync(self, key: Key) -> None:
        service = self.informer.typed(key)
        if not isinstance(service, Service):
            return  # gone: the garbage collector removes its slices
        _kind, namespace, name = key
        pods: list[Pod] = []
        if service.selector:
            pods = [p for n in self.informer.select("Pod", namespace, service.selector_view)
                    if isinstance(p := self.informer.typed(("Pod", namespace, n)), Pod)]
        nodes = {n.name: n for k in self.informer.keys("Node") if isinstance(n := self.informer.typed(k), Node)}
        existing, foreign = [], []
        for es in slices_of(self.informer, namespace, name):
            # A managed slice another Service of this name owned (one deleted with --cascade=orphan) is not this
            # one's: upstream's reconciler deletes it and makes the Service its own (reconciler.go, ownedBy).
            owned = any(r.get("kind") == "Service" and r.get("uid") == service.meta.uid
                        for r in (es.raw.get("metadata") or {}).get("ownerReferences") or [])
            (existing if owned or es.managed_by != ENDPOINTSLICE_CONTROLLER else foreign).append(es)
        plan = reconcile(service, pods, existing, nodes)
        create = plan.create
        if (service.raw.get("metadata") or {}).get("deletionTimestamp"):
            # A Service being deleted gets no new slices: the garbage collector is deleting them (foreground
            # deletion) and a replacement would be deleted again, forever. Upstream's reconciler skips
            # creates on a non-nil DeletionTimestamp too (kubernetes/kubernetes
            # staging/src/k8s.io/endpointslice/reconciler.go, finalize).
            create = ()
        events = tuple((e.type, e.reason, e.message) for e in plan.events)
        new_events = events != self._events.get(key, ())
        self._events[key] = events
        if not (create or plan.update or plan.delete or foreign or (new_events and events)):
            return
        batch = self.batch()
        if new_events:
            for type_, reason, message in events:
                batch.event(service.raw, reason, message, "endpoint-slice-controller", type_=type_)
        for es in foreign:
            # First: the name the planner picks for this Service's own slice may be the foreign one's.
            batch.delete(("EndpointSlice", namespace, es.name))
        write_slices(self.informer, batch, namespace, create, plan.update, plan.delete)
        batch.commit()
