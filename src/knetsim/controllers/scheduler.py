"""The scheduler: binds each pod without a node to the least-loaded node it may run on.

Feasibility is the core's (``cluster.workloads.unfit_reason``: taints, nodeSelector, required node
affinity, host ports another pod of the node holds, the node's pod capacity); the load is the number of
pods bound to each node (the informer's index), ties broken by node order, as ``cluster.workloads.schedule``
places pods offline. A pod no node accepts stays Pending with ``PodScheduled=False`` (Unschedulable) and a
FailedScheduling event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..apiserver.store import Change, Key
from ..cluster.hostports import HostPort
from ..cluster.hostports import in_use as host_ports_in_use
from ..cluster.hostports import wanted as wanted_host_ports
from ..cluster.storage import Volumes, claim_names
from ..cluster.workloads import fit_error, select_claims_node, unfit_reason, volume_verdict
from ..cluster.workloadstatus import TERMINAL, phase
from ..model.jsonvalue import json_copy
from ..model.objects import Node
from .base import Controller
from .informer import key_of

CONTROL_PLANE_HOST = "control-plane"  # where kind runs the scheduler (the events' reportingInstance)


def _unbound(body: Mapping[str, Any]) -> bool:
    return not (body.get("spec") or {}).get("nodeName") and phase(body) not in TERMINAL


def _frees_host_ports(change: Change) -> bool:
    """Did a pod bound to a node and holding host ports leave it (deleted, or finished)?"""
    old = change.old or {}
    if not (old.get("spec") or {}).get("nodeName") or not wanted_host_ports(old.get("spec") or {}):
        return False
    return change.type == "DELETED" or (change.new is not None and phase(change.new) in TERMINAL
                                        and phase(old) not in TERMINAL)


class Scheduler(Controller):
    name = "default-scheduler"
    field_manager = "kube-scheduler"

    def handle(self, change: Change) -> Iterable[Key]:
        if change.kind in ("PersistentVolumeClaim", "StorageClass") and change.type != "DELETED":
            # A claim that appears or is bound, or a class that appears, may let a waiting pod through
            # (VolumeBinding's queueing hints on PVC and StorageClass events).
            namespace = str((change.obj.get("metadata") or {}).get("namespace") or "")
            name = str(change.obj["metadata"]["name"])
            return [k for k in self.informer.keys("Pod") if _unbound(body := self.informer.get(k) or {})
                    and ((change.kind == "StorageClass" and claim_names(body.get("spec") or {}))
                         or (k[1] == namespace and name in claim_names(body.get("spec") or {})))]
        if change.kind != "Pod":
            return []
        if change.type != "DELETED" and change.new is not None and _unbound(change.new):
            return [key_of("Pod", change.new)]
        if _frees_host_ports(change):
            # A bound pod that held host ports left its node: the pods that waited for free ports are tried again
            # (the NodePorts plugin's queueing hint on a Pod delete, pkg/scheduler/framework/plugins/nodeports).
            return [k for k in self.informer.keys("Pod")
                    if _unbound(body := self.informer.get(k) or {}) and wanted_host_ports(body.get("spec") or {})]
        return []

    def resync(self) -> Iterable[Key]:
        return [k for k in self.informer.keys("Pod") if _unbound(self.informer.get(k) or {})]

    def _host_ports(self, node: str) -> set[HostPort]:
        """The host ports the running (not finished) pods bound to ``node`` hold."""
        bodies = (self.informer.get(k) or {} for k in self.informer.pods_on(node))
        return host_ports_in_use(body.get("spec") or {} for body in bodies if phase(body) not in TERMINAL)

    def _volumes(self, namespace: str) -> Volumes:
        """The claims of the pod's namespace, the classes and the volumes, as VolumeBinding reads them."""
        def bodies(kind: str, ns: str | None = None) -> list[Mapping[str, Any]]:
            return [b for k in self.informer.keys(kind) if (ns is None or k[1] == ns)
                    and (b := self.informer.get(k)) is not None]
        return Volumes.of(bodies("PersistentVolumeClaim", namespace), bodies("StorageClass"),
                          bodies("PersistentVolume"))

    def sync(self, key: Key) -> None:
        pod = self.informer.get(key)
        if pod is None or not _unbound(pod):
            return
        nodes = [n for k in self.informer.keys("Node") if isinstance(n := self.informer.typed(k), Node)]
        spec = pod.get("spec") or {}
        order = {n.name: i for i, n in enumerate(nodes)}
        load = {n.name: self.informer.node_load(n.name) for n in nodes}
        ports = {n.name: self._host_ports(n.name) for n in nodes} if wanted_host_ports(spec) else {}
        # The pod's claims first (VolumeBinding's PreFilter: a claim missing, deleting, or unbound for an Immediate
        # class refuses every node), then per node: taints, nodeSelector, affinity, free host ports, room (the
        # kubelet's maxPods, status.allocatable.pods), and a bound volume's node affinity.
        refused, volume_filter = volume_verdict(self._volumes(key[1]) if claim_names(spec) else None, pod, nodes)
        candidates = [] if refused is not None else [
            n for n in nodes if unfit_reason(spec, n, load[n.name], ports.get(n.name, ()), volume_filter) is None]
        batch = self.batch()
        if not candidates:
            message = refused or fit_error(spec, nodes, load, ports, volume_filter)
            condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
            status = pod.get("status") or {}
            if any({k: c.get(k) for k in condition} == condition for c in status.get("conditions") or []):
                return
            new = json_copy(pod)
            new["status"] = {"phase": "Pending", "conditions": [
                {**condition, "lastProbeTime": None, "lastTransitionTime": batch.now}]}
            batch.put_status(key, new)
            batch.event(new, "FailedScheduling", message, self.name, type_="Warning", host=CONTROL_PLANE_HOST,
                        action="Scheduling")
            batch.commit()
            return
        node = min(candidates, key=lambda n: (load[n.name], order[n.name]))
        if volume_filter is not None:
            # PreBind: the pod's WaitForFirstConsumer claims are given its node (the provisioner makes their
            # volume there, and their other pods follow).
            for claim in select_claims_node(self._volumes(key[1]), pod, node.name):
                batch.put(("PersistentVolumeClaim", key[1], str(claim["metadata"]["name"])), claim)
        new = {**pod, "metadata": dict(pod["metadata"]), "spec": {**spec, "nodeName": node.name}}
        # pods/binding: the binding storage sets the node without a field manager (no managedFields entry).
        batch.put(key, new, field_managed=False)
        batch.event(new, "Scheduled", f"Successfully assigned {key[1]}/{key[2]} to {node.name}", self.name,
                    host=CONTROL_PLANE_HOST, action="Binding")
        batch.commit()
