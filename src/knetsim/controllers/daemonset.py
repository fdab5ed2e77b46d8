"""The DaemonSet controller: one pod on each node whose taints the template tolerates and whose
labels its nodeSelector and required affinity accept (the core's expansion), bound to that node."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..apiserver.store import Change, Key
from ..cluster.workloads import feasible
from ..cluster.workloadstatus import daemon_set_status, is_active
from .base import Batch
from .podowner import PodOwner


class DaemonSetController(PodOwner):
    name = "daemonset-controller"
    kind = "DaemonSet"

    def handle(self, change: Change) -> Iterable[Key]:
        if change.kind == "Node":
            # A node joins, or its labels or taints change: every DaemonSet looks at it (upstream's nodeAdded,
            # nodeUpdated handlers).
            if change.type == "MODIFIED" and _placement(change.old) == _placement(change.new):
                return []
            return self.informer.keys(self.kind)
        return super().handle(change)

    def manage(self, key: Key, ds: dict[str, Any], pods: list[dict[str, Any]], batch: Batch) -> None:
        active = [p for p in pods if is_active(p)]
        # A node the template no longer accepts (a nodeSelector edited to a label no node has, a NoExecute taint it
        # does not tolerate) loses its daemon pod, as upstream's podsShouldBeOnNode decides (kubernetes/kubernetes
        # pkg/controller/daemon/daemon_controller.go): otherwise a kube-proxy pinned nowhere would keep running
        # everywhere. A NoSchedule taint only keeps new pods off: a running one stays.
        spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
        accepted = {node.name for node in self.nodes() if feasible(spec, node, effects=("NoExecute",))}
        for pod in [p for p in active if (p.get("spec") or {}).get("nodeName") not in accepted]:
            meta = pod["metadata"]
            self.delete_pod(ds, meta["namespace"], meta["name"], batch)
            active.remove(pod)
        plan = self.expand(ds, active)
        for pod, _source in plan.pods:
            self.create_pod(ds, pod, batch)
        status = daemon_set_status(ds, active, len(active) + len(plan.pods))
        self.write_status(key, ds, status, batch)


def _placement(node: Mapping[str, Any] | None) -> tuple[Any, Any]:
    """What decides which DaemonSets a node runs: its labels and its taints."""
    return ((node or {}).get("metadata") or {}).get("labels"), ((node or {}).get("spec") or {}).get("taints")
