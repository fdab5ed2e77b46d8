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
from .base import Batch
from .podowner import PodOwner, is_active, is_ready, observed_generation


def _ready_since(pod: dict[str, Any]) -> float | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready" and c.get("status") == "True":
            stamp = c.get("lastTransitionTime")
            if not stamp:
                return 0.0
            return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    return None


class ReplicaSetController(PodOwner):
    name = "replicaset-controller"
    kind = "ReplicaSet"
    adopts = True

    def manage(self, key: Key, rs: dict[str, Any], pods: list[dict[str, Any]], batch: Batch) -> None:
        active = [p for p in pods if is_active(p)]
        want = int((rs.get("spec") or {}).get("replicas", 1))
        if len(active) != want:
            plan = self.expand(rs, active)
            for pod, name in zip([b for b, _ in plan.pods], self.fresh_names(key, len(plan.pods), batch,
                                                                            len(active)), strict=True):
                pod["metadata"]["name"] = name
                self.create_pod(rs, pod, batch)
            for victim in plan.surplus:
                namespace, _, name = victim.partition("/")
                self.delete_pod(rs, namespace, name, batch)
        self.write_status(key, rs, self.status(key, rs, active), batch)

    def status(self, key: Key, rs: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
        template_labels = (((rs.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
        now = datetime.now(UTC).timestamp()
        fully = ready = available = 0
        wait: float | None = None
        for pod in pods:
            labels = (pod.get("metadata") or {}).get("labels") or {}
            if all(labels.get(k) == v for k, v in template_labels.items()):
                fully += 1
            if is_ready(pod):
                ready += 1
                since = _ready_since(pod) or 0.0
                if not min_ready or since + min_ready <= now:
                    available += 1
                else:
                    wait = min(wait if wait is not None else min_ready, since + min_ready - now)
        if wait is not None:
            self.ctx.enqueue_after(self, key, wait + 0.01)  # IsPodAvailable turns true then
        status: dict[str, Any] = {"replicas": len(pods)}
        for name, value in (("fullyLabeledReplicas", fully), ("readyReplicas", ready),
                            ("availableReplicas", available)):
            if value:
                status[name] = value
        status["observedGeneration"] = observed_generation(rs)
        return status
