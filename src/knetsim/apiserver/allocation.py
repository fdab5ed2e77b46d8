"""Service allocation at write time, as a transaction around the write.

kube-apiserver's Service storage allocates ClusterIPs and NodePorts before the object is written
and gives them back when the write fails (``beginCreate``/``beginUpdate`` returning a finish func
in pkg/registry/core/service/storage/storage.go). Here the allocators' bitmaps
(``cluster.services.Allocator``) are filled once from the stored Services and then changed only
by committed writes, which the store announces: a request never re-reads the other Services.

    txn = allocations.begin(obj, old)   # claims what obj needs (raises ApiError 422 when it cannot)
    store.commit(...)                   # the store's notification makes the claim the stored state
    txn.commit()                        # ... or txn.revert() when anything after begin failed
"""

from __future__ import annotations

from typing import Any

from ..cluster import servicecidrs
from ..cluster.config import ClusterConfig
from ..cluster.services import Allocator, Held, ServiceCIDRRange, allocate_services, default_ranges, held_by
from ..model.fielderr import FieldError
from ..model.loader import Source
from .store import Change, Store

REQUEST = Source("<request>", 1)


class AllocationFailed(Exception):
    """The new object cannot get what it asks for; ``errors`` are its field errors, ``internal`` the message of a
    500 (a full range: no field is at fault)."""

    def __init__(self, errors: list[FieldError], internal: str | None = None) -> None:
        super().__init__(internal or "; ".join(str(e) for e in errors))
        self.errors = errors
        self.internal = internal


def _written_by_hand(body: dict[str, Any]) -> bool:
    labels = (body.get("metadata") or {}).get("labels") or {}
    return labels.get(servicecidrs.LABEL_MANAGED_BY) != servicecidrs.IPALLOCATOR


class Txn:
    """What one write claimed; ``revert`` gives it back and returns the old object's values."""

    def __init__(self, alloc: Allocator, claimed: Held, before: Held) -> None:
        self._alloc, self._claimed, self._before = alloc, claimed, before
        self._open = True

    def commit(self) -> None:
        self._open = False

    def revert(self) -> None:
        if self._open:
            self._alloc.release(self._claimed)
            self._alloc.hold(self._before)
            self._open = False


class ServiceAllocations:
    def __init__(self, store: Store, config: ClusterConfig) -> None:
        self.store, self.config = store, config
        self._alloc: Allocator | None = None
        store.listeners.append(self._on_changes)

    @property
    def alloc(self) -> Allocator:
        """Filled from the stored Services on first use (after the start-up recheck has run), drawing from the
        stored ServiceCIDRs (the ``kubernetes`` one from the config when there is none yet)."""
        if self._alloc is None:
            self._alloc = Allocator(self.config, self._ranges())
            for (kind, _ns, _name), stored in self.store.objects.items():
                if kind == "Service":
                    self._alloc.hold(held_by(stored.body))
                elif kind == "IPAddress" and _written_by_hand(stored.body):
                    self._alloc.keep_ip(stored.body["metadata"]["name"])
        return self._alloc

    def _ranges(self) -> list[ServiceCIDRRange] | None:
        bodies = [s.body for (kind, _, _), s in sorted(self.store.objects.items()) if kind == "ServiceCIDR"]
        return servicecidrs.ranges(bodies) if bodies else None

    def _on_changes(self, changes: list[Change]) -> None:
        if self._alloc is None:
            return
        for c in changes:
            if c.kind == "ServiceCIDR":
                ranges = self._ranges()
                self.alloc.set_ranges(ranges if ranges is not None else default_ranges(self.config))
            elif c.kind == "IPAddress":
                # An address a user reserved by writing its IPAddress; the allocator's own follow the Services.
                if c.old is not None and _written_by_hand(c.old):
                    self.alloc.release(Held(frozenset({c.old["metadata"]["name"]})))
                if c.type != "DELETED" and c.new is not None and _written_by_hand(c.new):
                    self.alloc.keep_ip(c.new["metadata"]["name"])
            if c.kind != "Service":
                continue
            if c.old is not None:
                self.alloc.release(held_by(c.old))
            if c.type != "DELETED" and c.new is not None:
                self.alloc.hold(held_by(c.new))

    def begin(self, obj: dict[str, Any], old: dict[str, Any] | None) -> Txn:
        """Allocate ``obj`` in place (the old object's values are its own to keep)."""
        before = held_by(old) if old is not None else Held()
        self.alloc.release(before)
        self.alloc.record()
        try:
            failures = allocate_services([(obj, REQUEST)], self.config, alloc=self.alloc, old=old)
        finally:
            claimed = self.alloc.recorded()
        txn = Txn(self.alloc, claimed, before)
        if failures:
            txn.revert()
            internal = next((f.error for f in failures if isinstance(f.error, str)), None)
            raise AllocationFailed([f.error for f in failures if isinstance(f.error, FieldError)], internal)
        return txn
