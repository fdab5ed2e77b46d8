"""The ends of a flow as Hubble names them, and the flows the node makes itself (a probe, a port-forward).

Apart from ``flows.py`` (which reads a Trace and asks the policy engine) so that the node records its
own probes with none of the simulation loaded: a probe's flow needs the pod and its node, nothing more.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ..cluster.state import ClusterState
from ..model.flows import FORWARDED, INGRESS, Flow, FlowEnd
from ..model.objects import Pod

WORLD = "reserved:world"
HOST = "reserved:host"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def pod_end(state: ClusterState, pod: Pod) -> FlowEnd:
    """A pod as Hubble names it: labels with their source prefix, its namespace label, its top workload."""
    labels = [f"k8s:{k}={v}" for k, v in sorted(pod.labels.items())]
    labels.append(f"k8s:io.kubernetes.pod.namespace={pod.namespace}")
    owner = pod.meta.owner
    workloads: tuple[tuple[str, str], ...] = ()
    if owner is not None:
        kind, name = owner.kind, owner.name
        parent = state.workloads.get((kind, f"{pod.namespace}/{name}"))
        if parent is not None and parent.meta.owner is not None and kind in ("ReplicaSet", "Job"):
            kind, name = parent.meta.owner.kind, parent.meta.owner.name
        workloads = ((name, kind),)
    return FlowEnd(pod.pod_ip, pod.namespace, pod.name, tuple(sorted(labels)), workloads)


def end_of(state: ClusterState, ip: str, pod_key: str = "") -> FlowEnd:
    pod = state.pods.get(pod_key) if pod_key else None
    if pod is None and ip:
        pod = state.pod_by_ip(ip)
    if pod is not None and not pod.host_network:
        return pod_end(state, pod)
    if state.node_by_ip(ip) is not None or (pod is not None and pod.host_network):
        return FlowEnd(ip, labels=(HOST,))
    return FlowEnd(ip, labels=(WORLD,))


def probe_flow(state: ClusterState, pod: Pod, port: int, time: str | None = None) -> Flow:
    """A kubelet probe: from the pod's node to the pod's port."""
    node = state.nodes.get(pod.node_name)
    src = FlowEnd(node.internal_ip if node is not None else pod.host_ip, labels=(HOST,))
    return Flow(time or now(), src, pod_end(state, pod), "TCP", 40000, port, FORWARDED, pod.node_name, INGRESS,
                False, None, "kubelet probe")


def port_forward_flow(state: ClusterState, pod: Pod, port: int, time: str | None = None) -> Flow:
    """A ``kubectl port-forward`` stream: a connection to the port from inside the pod (its loopback)."""
    return Flow(time or now(), FlowEnd("127.0.0.1", labels=(HOST,)), pod_end(state, pod), "TCP", 40000, port,
                FORWARDED, pod.node_name, INGRESS, False, None, "kubectl port-forward (the pod's own loopback)")


__all__ = ["HOST", "WORLD", "end_of", "now", "pod_end", "port_forward_flow", "probe_flow"]
