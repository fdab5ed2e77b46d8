"""The ReplicaSet controller (pkg/controller/replicaset): keep ``spec.replicas`` pods, report status.

Pods are claimed by the selector (orphans adopted, pods relabelled away released), missing ones
created from the template, surplus ones deleted (not-ready first, then the youngest: the core's
``expand_workloads`` ranking). The status counts the pods claimed before this pass, as upstream's
``calculateStatus`` does; the pod changes that follow bring it up to date. A pod is available once
it has been Ready for ``minReadySeconds``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..apiserver.store import Key
from ..cluster.rollout import REPLICA_FAILURE, get_condition
from ..cluster.workloadstatus import is_active, replica_set_status
from .base import Batch
from .podowner import PodOwner


def replica_failure(status: dict[str, Any], before: dict[str, Any], failure: str | None, now: str) -> None:
    """The ReplicaFailure condition (replica_set_utils.go, calculateStatus): set when this pass could not make a pod
    (reason FailedCreate, the API error as its message) and the condition is not already there; kept while it is;
    removed by the first pass that fails nothing. Pods this controller deletes never fail here (no FailedDelete)."""
    current = get_condition(before, REPLICA_FAILURE)
    if failure is not None and current is None:
        current = {"type": REPLICA_FAILURE, "status": "True", "lastTransitionTime": now, "reason": "FailedCreate",
                   "message": failure}
    elif failure is None:
        current = None
    if current is not None:
        status["conditions"] = [current]


class ReplicaSetController(PodOwner):
    name = "replicaset-controller"
    kind = "ReplicaSet"
    adopts = True

    def manage(self, key: Key, rs: dict[str, Any], pods: list[dict[str, Any]], batch: Batch) -> None:
        active = [p for p in pods if is_active(p)]
        want = int((rs.get("spec") or {}).get("replicas", 1))
        step = self.burst(key, want - len(active))
        failure: str | None = None
        if step:
            # This burst's share of the difference (BURST at most; the rest comes in later syncs).
            this_burst = {**rs, "spec": {**(rs.get("spec") or {}), "replicas": len(active) + step}}
            plan = self.expand(this_burst, active)
            # One sync's pods in the order of their names (upstream creates a burst in parallel, in no order): the
            # node then starts them, and hands out their addresses, in the order the offline build does.
            names = sorted(self.fresh_names(key, len(plan.pods), batch, len(active)))
            for pod, name in zip([b for b, _ in plan.pods], names, strict=True):
                pod["metadata"]["name"] = name
                failure = self.create_pod(rs, pod, batch)
                if failure is not None:
                    # Upstream's slowStartBatch stops at a batch with a failure, and its first batch is one pod:
                    # one refused create ends the pass (one FailedCreate event, not one per missing pod).
                    break
            for victim in plan.surplus:
                namespace, _, name = victim.partition("/")
                self.delete_pod(rs, namespace, name, batch)
        status = self.status(key, rs, active)
        if step or want <= len(active):  # a pass that waits for its next burst tried nothing: it changes nothing
            replica_failure(status, rs.get("status") or {}, failure, batch.now)
        elif conditions := (rs.get("status") or {}).get("conditions"):
            status["conditions"] = conditions
        self.write_status(key, rs, status, batch)

    def status(self, key: Key, rs: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
        status, wait = replica_set_status(rs, pods, datetime.now(UTC).timestamp())
        if wait is not None:
            self.ctx.enqueue_after(self, key, wait + 0.01)  # IsPodAvailable turns true then
        return status
