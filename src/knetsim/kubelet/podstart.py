"""A bound pod starts on its node: the node's side of the pod's life, as the control plane sees it.

For a pod the scheduler (or its DaemonSet) bound and that has no address yet: the sandbox gets the
lowest free address of the node's pod CIDR from ``.2`` (host-local IPAM; ``hostNetwork`` pods use
the node's address), and the pod the status the kubelet reports once its containers run
(``cluster.workloads.pod_status``: readiness by knetsim's rules, a container whose image cannot be
pulled waiting in ErrImagePull), with the kubelet's Pulled/Created/Started events. The simulated
kubelet (``kubelet.py``) takes over from there: it runs commands and reports container states.

A pod whose ConfigMap/Secret volume cannot be set up gets no address yet (the kubelet mounts volumes
before it creates the sandbox): its containers wait in ContainerCreating, and the pod starts when
the ConfigMap or Secret it waits for is written.

When a client changes what readiness depends on (the ``knetsim.io/ready`` annotation, the listen
annotation, probes), readiness is evaluated again, keeping what the kubelet reported.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from ..apiserver.store import Change, Key
from ..cluster.hostports import NODE_PORTS_REASON
from ..cluster.hostports import conflicts as host_port_conflict
from ..cluster.hostports import in_use as host_ports_in_use
from ..cluster.hostports import wanted as wanted_host_ports
from ..cluster.workloads import pod_status
from ..controllers.base import Batch, Context, Controller
from ..controllers.informer import key_of
from ..model.objects import Node
from . import initcontainers
from .podconfig import mount_error, references, waiting_states
from .podstatus import apply_phase, await_startup, complete, hold, refreshed, stamp_conditions


def _waits_for_address(body: Mapping[str, Any]) -> bool:
    status = body.get("status") or {}
    return bool((body.get("spec") or {}).get("nodeName")) and not status.get("podIP") and \
        status.get("phase") not in ("Succeeded", "Failed")


def _inputs(body: Mapping[str, Any] | None) -> Any:
    """What readiness depends on besides the container states: labels, annotations, the spec."""
    if body is None:
        return None
    meta = body.get("metadata") or {}
    return meta.get("labels"), meta.get("annotations"), body.get("spec")


class PodStart(Controller):
    name = "kubelet"
    field_manager = "kubelet"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        # Per node, the lowest offset of its pod CIDR that may be free (below it, all are taken): address
        # assignment stays proportional to the pods started, not to the pods already on the node.
        self._floor: dict[str, int] = {}
        # Pods whose volumes wait for a ConfigMap/Secret → the (kind, name)s they refer to.
        self._mounting: dict[Key, set[tuple[str, str]]] = {}

    def handle(self, change: Change) -> Iterable[Key]:
        if change.kind in ("ConfigMap", "Secret"):
            _, ns, name = key_of(change.kind, change.obj)
            return sorted(k for k, refs in self._mounting.items() if k[1] == ns and (change.kind, name) in refs)
        if change.kind != "Pod":
            return []
        if change.type == "DELETED" or change.new is None:
            self._mounting.pop(key_of("Pod", change.old or {}), None)
            self._freed(change.old)
            return []
        if _waits_for_address(change.new) or _inputs(change.old) != _inputs(change.new):
            return [key_of("Pod", change.new)]
        return []

    def resync(self) -> Iterable[Key]:
        return self.informer.keys("Pod")

    def sync(self, key: Key) -> None:
        pod = self.informer.get(key)
        if pod is None:
            return
        batch = self.batch()
        if _waits_for_address(pod):
            self.start(key, pod, batch)
        else:
            status = refreshed(pod)
            if status is None:
                return
            stamp_conditions(status, pod.get("status") or {}, batch.now)
            if status != pod.get("status"):
                batch.put_status(key, {**pod, "status": status})
        batch.commit()

    def start(self, key: Key, pod: dict[str, Any], batch: Batch) -> None:
        node_name = str(pod["spec"]["nodeName"])
        node = self.informer.typed(("Node", "", node_name))
        if not isinstance(node, Node) or all(n.name != node_name for n in self.config.nodes):
            # A node this cluster does not have, or a Node a client wrote with no kubelet behind it: the pod
            # stays Pending, as with a kubelet that never comes.
            return
        if self._host_ports_taken(key, pod, node_name):
            self._reject(key, pod, batch, "NodePorts", f"Predicate NodePorts failed: {NODE_PORTS_REASON}")
            return
        lookup = self._lookup
        if mount_error(pod, lookup) is not None:
            self._wait_for_volumes(key, pod, node.internal_ip, batch)
            return
        self._mounting.pop(key, None)
        ip = node.internal_ip if pod["spec"].get("hostNetwork") else self.free_address(node)
        if not ip:
            return  # the node's pod CIDR is full, or it has no address: the sandbox cannot start
        status = pod_status(pod, ip, node.internal_ip, self.config, self._addresses(node, ip, pod),
                            node.internal_ips or (node.internal_ip,))
        status["startTime"] = batch.now
        # A ConfigMap/Secret its environment needs is missing: the kubelet keeps the container waiting.
        hold(status, waiting_states(pod, lookup), pod["spec"])
        await_startup(status, pod["spec"])
        # Init containers first: the first one runs, the rest of the pod waits (kubelet.py runs them).
        initcontainers.begin(status, pod["spec"], batch.now)
        apply_phase(status, pod["spec"])
        complete(pod, status)
        stamp_conditions(status, {}, batch.now)
        started = {**pod, "metadata": dict(pod["metadata"]), "status": status}
        batch.put_status(key, started)
        waiting = {cs.get("name") for cs in status.get("containerStatuses") or []
                   if "waiting" in (cs.get("state") or {})}
        spec = pod.get("spec") or {}
        inits = initcontainers.init_containers(spec)
        # With init containers only the first starts now; the kubelet records the others as their turn comes.
        starting = [("initContainers", inits[:1])] if inits else [("containers", spec.get("containers") or [])]
        for section, containers in starting:
            for c in containers:
                name = c.get("name")
                if name in waiting:
                    continue  # the image cannot be pulled or its config is missing: the kubelet records that
                path = f"spec.{section}{{{name}}}"
                batch.event(started, "Pulled", f'Container image "{c.get("image")}" already present on machine',
                            self.name, host=node_name, field_path=path)
                batch.event(started, "Created", f"Created container: {name}", self.name, host=node_name,
                            field_path=path)
                batch.event(started, "Started", f"Started container {name}", self.name, host=node_name,
                            field_path=path)

    def _host_ports_taken(self, key: Key, pod: Mapping[str, Any], node: str) -> bool:
        """The kubelet's admission (pkg/kubelet/lifecycle/predicate.go generalFilter): a pod bound to the node
        by name, past the scheduler, may want a host port a pod already running there holds."""
        spec = pod.get("spec") or {}
        if not wanted_host_ports(spec):
            return False
        running = (self.informer.get(k) or {} for k in self.informer.pods_on(node) if k != key)
        held = host_ports_in_use(body.get("spec") or {} for body in running
                                 if (body.get("status") or {}).get("podIP")
                                 and (body.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))
        return host_port_conflict(spec, held)

    @staticmethod
    def _reject(key: Key, pod: dict[str, Any], batch: Batch, reason: str, message: str) -> None:
        """kubelet.rejectPod: a Warning event of the predicate's name, and the pod Failed, "Pod was rejected: "."""
        rejected = {**pod, "status": {"phase": "Failed", "reason": reason, "message": f"Pod was rejected: {message}",
                                      "startTime": batch.now}}
        batch.put_status(key, rejected)
        batch.event(rejected, reason, message, "kubelet", type_="Warning", host=str(pod["spec"]["nodeName"]))

    def _lookup(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.informer.get((kind, namespace, name))

    def _wait_for_volumes(self, key: Key, pod: dict[str, Any], host_ip: str, batch: Batch) -> None:
        """The kubelet sets up volumes before the sandbox: until a ConfigMap/Secret volume can be set up
        the pod has no address, its containers wait in ContainerCreating (the kubelet records FailedMount)."""
        self._mounting[key] = references(pod)
        old = pod.get("status") or {}
        status = pod_status(pod, "", host_ip)
        for field in ("podIP", "podIPs"):
            status.pop(field, None)
        status["startTime"] = old.get("startTime") or batch.now
        for cond in status["conditions"]:
            if cond["type"] == "PodReadyToStartContainers":
                cond["status"] = "False"
        hold(status, {str(c.get("name")): {"reason": "ContainerCreating"} for c in pod["spec"].get("containers") or []},
             pod["spec"])
        initcontainers.not_started(status, pod["spec"])
        apply_phase(status, pod["spec"])
        stamp_conditions(status, old, batch.now)
        if status != old:
            batch.put_status(key, {**pod, "status": status})

    @staticmethod
    def _addresses(node: Node, ip: str, pod: Mapping[str, Any]) -> tuple[str, ...]:
        """Every address of the pod: on a dual-stack node the same host number in its other pod CIDR too."""
        if pod["spec"].get("hostNetwork"):
            return node.internal_ips or (ip,)
        if len(node.pod_cidrs) < 2:
            return (ip,)
        offset = int(ipaddress.ip_address(ip)) - int(ipaddress.ip_network(node.pod_cidrs[0]).network_address)
        return (ip, *(str(ipaddress.ip_network(c)[offset]) for c in node.pod_cidrs[1:]))

    def free_address(self, node: Node) -> str | None:
        if not node.pod_cidr:
            return None  # a Node written without spec.podCIDR: no range to draw from
        network = ipaddress.ip_network(node.pod_cidr)
        for offset in range(self._floor.get(node.name, 2), network.num_addresses - 1):  # .1 is the bridge
            candidate = str(network[offset])
            if not self.informer.ip_in_use(candidate):
                self._floor[node.name] = offset + 1
                return candidate
        return None

    def _freed(self, pod: Mapping[str, Any] | None) -> None:
        """A deleted pod's address is free again: the next search starts at or below it."""
        node = str(((pod or {}).get("spec") or {}).get("nodeName") or "")
        ip = ((pod or {}).get("status") or {}).get("podIP")
        target = self.informer.typed(("Node", "", node)) if node and ip else None
        if isinstance(target, Node) and target.pod_cidr:
            network = ipaddress.ip_network(target.pod_cidr)
            address = ipaddress.ip_address(str(ip))
            if address in network:
                offset = int(address) - int(network.network_address)
                self._floor[node] = min(self._floor.get(node, 2), offset)
