"""ServiceCIDRs and IPAddresses live: kube-controller-manager's servicecidrs controller, and the IPAddress
bookkeeping the API server's allocator and its repair loop do.

The decisions are the core's (``cluster.servicecidrs``): the finalizer and Ready condition of a ServiceCIDR,
and, for one being deleted, whether an IPAddress still depends on it alone. Once none does the finalizer
goes and, it being the last one, the object with it (the generic store deletes an object being deleted whose
last finalizer is removed). Each Service's ClusterIPs have their IPAddress, labelled and parented as the
allocator writes them; an allocator-managed IPAddress whose Service no longer holds it goes (the repair
controller's job).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..apiserver.store import Change, Key
from ..cluster import servicecidrs
from ..model.jsonvalue import json_copy
from ..model.objects import stable_uid
from .base import Controller


def _parent_of(body: dict[str, Any] | None) -> tuple[str, str] | None:
    """The Service an IPAddress belongs to, by its parentRef (core group, resource services)."""
    ref = ((body or {}).get("spec") or {}).get("parentRef") or {}
    if ref.get("resource") == "services" and not ref.get("group"):
        return str(ref.get("namespace") or ""), str(ref.get("name") or "")
    return None


class ServiceCIDRController(Controller):
    name = "servicecidrs-controller"
    # IPAddress names by parent Service, built at the first Service sync and kept by handle(): a Service's
    # sync reads its own addresses, not every address of the cluster (a thousand Services were a million reads).
    _by_parent: dict[tuple[str, str], set[str]] | None = None

    def handle(self, change: Change) -> Iterable[Key]:
        if change.kind == "IPAddress" and self._by_parent is not None:
            name = str((change.obj.get("metadata") or {}).get("name") or "")
            for body, present in ((change.old, False), (change.new, change.type != "DELETED")):
                parent = _parent_of(body)
                if parent is not None:
                    names = self._by_parent.setdefault(parent, set())
                    (names.add if present else names.discard)(name)
        if change.kind == "ServiceCIDR":
            # Adding or removing a range may unblock another one's deletion: look at them all (a handful).
            return self.informer.keys("ServiceCIDR")
        if change.kind == "IPAddress":
            # An address only matters to a ServiceCIDR waiting to be deleted (it may block or free it).
            deleting = [k for k in self.informer.keys("ServiceCIDR")
                        if ((self.informer.get(k) or {}).get("metadata") or {}).get("deletionTimestamp")]
            # Its Service's sync made it; a changed or deleted one is put back in line.
            return [*deleting, *(self._parents(change) if change.type != "ADDED" else ())]
        if change.kind == "Service":
            return [("Service", str(change.obj["metadata"].get("namespace") or ""), change.obj["metadata"]["name"])]
        return ()

    def _parents(self, change: Change) -> list[Key]:
        return [("Service", *parent) for body in (change.old, change.new) if (parent := _parent_of(body))]

    def _addresses_of(self, namespace: str, name: str) -> list[str]:
        if self._by_parent is None:
            self._by_parent = {}
            for key in self.informer.keys("IPAddress"):
                if (parent := _parent_of(self.informer.get(key))) is not None:
                    self._by_parent.setdefault(parent, set()).add(key[2])
        return sorted(self._by_parent.get((namespace, name), ()))

    def resync(self) -> Iterable[Key]:
        return [*self.informer.keys("ServiceCIDR"), *self.informer.keys("Service")]

    def sync(self, key: Key) -> None:
        if key[0] == "ServiceCIDR":
            self._service_cidr(key)
        elif key[0] == "Service":
            self._ip_addresses(key)

    def _bodies(self, kind: str) -> list[dict[str, Any]]:
        return [b for k in self.informer.keys(kind) if (b := self.informer.get(k)) is not None]

    def _service_cidr(self, key: Key) -> None:
        body = self.informer.get(key)
        if body is None:
            return
        batch = self.batch()
        verdict = servicecidrs.reconcile(body, self._bodies("ServiceCIDR"), self._bodies("IPAddress"), batch.now)
        meta = body.get("metadata") or {}
        if meta.get("deletionTimestamp") and servicecidrs.FINALIZER not in verdict.finalizers:
            # Its finalizer removed; the last one gone, the API server lets it go.
            batch.finalizer_done(key, servicecidrs.FINALIZER)
            batch.commit()
            return
        conditions = (body.get("status") or {}).get("conditions") or []
        old = next((c for c in conditions if c.get("type") == "Ready"), None)
        same = old is not None and all(old.get(f) == verdict.condition.get(f) for f in ("status", "reason", "message"))
        if same and list(meta.get("finalizers") or []) == list(verdict.finalizers):
            return
        new = json_copy(body)
        new["metadata"]["finalizers"] = list(verdict.finalizers)
        condition = dict(verdict.condition)
        if same and old is not None and old.get("lastTransitionTime"):
            condition["lastTransitionTime"] = old["lastTransitionTime"]
        new["status"] = {"conditions": [*(c for c in conditions if c.get("type") != "Ready"), condition]}
        # Through /status, whose strategy takes the finalizers with the condition (a built-in kind's status
        # strategy resets only the spec).
        batch.put_status(key, new)
        batch.commit()

    def _ip_addresses(self, key: Key) -> None:
        """The Service's ClusterIPs each have their IPAddress; its stale ones go."""
        _, namespace, name = key
        service = self.informer.get(key)
        wanted = {b["metadata"]["name"]: b for b in servicecidrs.service_ip_addresses([service] if service else [])}
        batch = self.batch()
        for held in self._addresses_of(namespace, name):
            meta = ((self.informer.get(("IPAddress", "", held)) or {}).get("metadata")) or {}
            managed = (meta.get("labels") or {}).get(servicecidrs.LABEL_MANAGED_BY) == servicecidrs.IPALLOCATOR
            if managed and held not in wanted:
                batch.delete(("IPAddress", "", held))
        # An address held already (by this Service, or by another: the allocator's call) is not written again.
        wanted = {ip: body for ip, body in wanted.items() if self.informer.get(("IPAddress", "", ip)) is None}
        for ip, body in sorted(wanted.items()):
            body["metadata"].update(uid=stable_uid("IPAddress", "", ip), creationTimestamp=batch.now)
            batch.put(("IPAddress", "", ip), body)
        batch.commit()
