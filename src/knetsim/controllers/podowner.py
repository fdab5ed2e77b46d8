"""What the controllers that own pods share (ReplicaSet, StatefulSet, DaemonSet, Job).

Each looks at one owner at a time: its pods (by controller reference, claimed by selector where
the kind adopts), the pods the core's expansion says it should have
(``cluster.workloads.expand_workloads`` for this one owner: names, labels, surplus), and writes
the difference with the upstream events (``SuccessfulCreate``/``SuccessfulDelete``). A pod change
wakes its owner; an orphan pod wakes the owners whose selector matches it.

Pods a ReplicaSet or Job creates are named ``<owner>-<5 chars>`` from a per-owner counter kept
in the store, so a name the owner handed out is never handed out again (a replacement is a new
pod, as with upstream's random names).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..apiserver.registry import missing_service_account
from ..apiserver.store import Change, Key
from ..cluster.naming import random_suffix
from ..cluster.workloads import WorkloadInput, WorkloadResult, expand_workloads
from ..cluster.workloadstatus import is_active
from ..model.objects import Node
from .base import Batch, Context, Controller, being_deleted, status_only
from .claim import claim
from .informer import API_SOURCE, controller_ref, key_of

# At most this many pods created or deleted by one sync (replica_set.go's BurstReplicas, job_controller.go's
# MaxPodCreateDeletePerSync: both 500). A count typed with three zeros too many then fills in over time and
# the API answers meanwhile: a deferred burst waits in a timer, not in the queue every read waits for.
BURST = 500
BURST_INTERVAL = 0.05  # seconds between two bursts of one owner


class PodOwner(Controller):
    kind = ""
    api_version = "apps/v1"
    adopts = False  # claims orphans matching its selector and releases pods that stop matching

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self._next_burst: dict[Key, float] = {}  # owners whose last sync was cut at BURST

    def burst(self, key: Key, change: int) -> int:
        """How many of ``change`` pods (negative: deletions) this sync makes: 0 while the owner's last burst
        is too recent (it is looked at again then)."""
        if change == 0:
            return 0
        now = time.monotonic()
        wait = self._next_burst.get(key, now) - now
        if wait > 0:
            self.ctx.enqueue_after(self, key, wait)
            return 0
        step = max(-BURST, min(BURST, change))
        if step != change:
            self._next_burst[key] = now + BURST_INTERVAL
            self.ctx.enqueue_after(self, key, BURST_INTERVAL)
        else:
            self._next_burst.pop(key, None)
        return step

    # --- what wakes an owner ------------------------------------------------------------

    def handle(self, change: Change) -> Iterable[Key]:
        if change.kind == self.kind:
            return [] if status_only(change) else [key_of(change.kind, change.obj)]
        if change.kind == "ServiceAccount" and change.type == "ADDED":
            # An account a refused pod waited for: the namespace's owners try again (a sync that lacks nothing
            # writes nothing).
            namespace = str((change.obj.get("metadata") or {}).get("namespace") or "")
            return [k for k in self.informer.keys(self.kind) if k[1] == namespace]
        if change.kind != "Pod":
            return []
        keys: list[Key] = []
        bodies = [change.old, change.new if change.type != "DELETED" else None]
        for body in bodies:
            if body is None:
                continue
            ref = controller_ref(body)
            if ref is not None:
                if ref.get("kind") == self.kind:
                    key = self.informer.by_uid(str(ref.get("uid")))
                    if key is not None:
                        keys.append(key)
            elif self.adopts and body is bodies[1]:
                meta = body.get("metadata") or {}
                namespace = str(meta.get("namespace") or "")
                keys += [(self.kind, namespace, name) for name in
                         self.informer.selecting(self.kind, namespace, meta.get("labels") or {})]
        return keys

    def resync(self) -> Iterable[Key]:
        return self.informer.keys(self.kind)

    # --- one owner ----------------------------------------------------------------------

    def sync(self, key: Key) -> None:
        owner = self.informer.get(key)
        if owner is None or being_deleted(owner):
            return  # its pods are the garbage collector's
        batch = self.batch()
        self.manage(key, owner, self.pods_of(key, owner, batch), batch)
        batch.commit()

    def pods_of(self, key: Key, owner: dict[str, Any], batch: Batch) -> list[dict[str, Any]]:
        """The pods the owner controls (claimed by its selector when the kind adopts)."""
        if not self.adopts:
            return [body for k in self.informer.owned(owner, "Pod") if (body := self.informer.get(k)) is not None]
        selector = self.informer.selector(key)
        if selector is None:
            return []
        pods, writes = claim(self.informer, owner, self.api_version, "Pod", selector, is_active)
        for k, body in writes:
            batch.put(k, body)
        return pods

    def manage(self, key: Key, owner: dict[str, Any], pods: list[dict[str, Any]], batch: Batch) -> None:
        raise NotImplementedError

    # --- shared steps -------------------------------------------------------------------

    def nodes(self) -> list[Node]:
        return [n for k in self.informer.keys("Node") if isinstance(n := self.informer.typed(k), Node)]

    def expand(self, owner: dict[str, Any], pods: list[dict[str, Any]]) -> WorkloadResult:
        """The core's expansion of this one owner, given the pods it has."""
        return expand_workloads([WorkloadInput(owner, API_SOURCE)], [(p, API_SOURCE) for p in pods], self.nodes())

    def fresh_names(self, key: Key, count: int, batch: Batch, have: int) -> list[str]:
        """``count`` names never handed out by this owner (the counter lives in the store's meta; an owner
        without one, such as a system ReplicaSet made at start, counts from the ``have`` pods it has)."""
        kind, namespace, owner = key
        seq_key = f"podseq/{namespace}/{kind}/{owner}"
        counter = self.store.meta.get(seq_key)
        i = int(counter) if counter is not None else have
        taken = set(self.informer.names("Pod", namespace))
        names: list[str] = []
        while len(names) < count:
            name = f"{owner}-{random_suffix(namespace, owner, str(i))}"
            i += 1
            if name not in taken:
                names.append(name)
                taken.add(name)
        batch.meta[seq_key] = str(i)
        return names

    def create_pod(self, owner: Mapping[str, Any], pod: dict[str, Any], batch: Batch) -> str | None:
        """Create ``pod``; None, or the API server's refusal as its error reads (``pods "web-" is forbidden: ...``),
        which the owner's status may carry (a ReplicaSet's ReplicaFailure condition)."""
        meta = pod["metadata"]
        refused = missing_service_account(pod, self.store)
        if refused is not None:
            # The API server refuses the pod (the ServiceAccount admission plugin): the owner records it and tries
            # again when an account appears in the namespace (``handle``).
            named = meta.get("generateName") or meta["name"]
            batch.event(owner, "FailedCreate", self.failed_message(owner, named, f"is forbidden: {refused}"),
                        self.name, type_="Warning")
            return f'pods "{named}" is forbidden: {refused}'
        meta["uid"] = batch.new_uid("Pod", meta["namespace"], meta["name"])
        meta["creationTimestamp"] = batch.now
        batch.put(("Pod", meta["namespace"], meta["name"]), pod)
        batch.event(owner, "SuccessfulCreate", self.created_message(owner, meta["name"]), self.name)
        return None

    def delete_pod(self, owner: Mapping[str, Any], namespace: str, name: str, batch: Batch) -> None:
        batch.delete(("Pod", namespace, name))
        batch.event(owner, "SuccessfulDelete", self.deleted_message(owner, name), self.name)

    def created_message(self, owner: Mapping[str, Any], pod: str) -> str:
        return f"Created pod: {pod}"

    def failed_message(self, owner: Mapping[str, Any], pod: str, why: str) -> str:
        """replica_set.go's (and the DaemonSet's and Job's) FailedCreate: the API error as the client prints it."""
        return f'Error creating: pods "{pod}" {why}'

    def deleted_message(self, owner: Mapping[str, Any], pod: str) -> str:
        return f"Deleted pod: {pod}"

    def write_status(self, key: Key, owner: dict[str, Any], status: dict[str, Any], batch: Batch) -> None:
        if status != owner.get("status"):
            batch.put_status(key, {**owner, "status": status})

