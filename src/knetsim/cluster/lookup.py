"""Naming pods the way kubectl lets people name them: ``ns/pod``, ``pod``, or ``[ns/]deploy/NAME``."""

from __future__ import annotations

from ..model.objects import Pod
from .state import ClusterState

WORKLOAD_ALIASES = {"deploy": "Deployment", "deployment": "Deployment", "sts": "StatefulSet",
                    "statefulset": "StatefulSet", "ds": "DaemonSet", "daemonset": "DaemonSet",
                    "rs": "ReplicaSet", "replicaset": "ReplicaSet", "job": "Job"}


class PodNotFound(LookupError):
    pass


def is_workload_ref(ref: str) -> bool:
    parts = ref.split("/")
    return len(parts) == 3 or (len(parts) == 2 and parts[0].lower() in WORKLOAD_ALIASES)


def owned_by(state: ClusterState, pod: Pod, kind: str, name: str) -> bool:
    owner = pod.meta.owner
    if owner is None:
        return False
    if owner.kind == kind and owner.name == name:
        return True
    if kind == "Deployment" and owner.kind == "ReplicaSet":
        rs = state.workloads.get(("ReplicaSet", f"{pod.namespace}/{owner.name}"))
        return rs is not None and rs.meta.owner is not None and rs.meta.owner.name == name
    return False


def resolve_pod(state: ClusterState, ref: str, default_namespace: str = "default") -> Pod:
    """The pod ``ref`` names; for a workload its first pod by name, as ``kubectl exec deploy/web`` picks one."""
    parts = ref.split("/")
    if is_workload_ref(ref):
        namespace = parts[0] if len(parts) == 3 else default_namespace
        kind = WORKLOAD_ALIASES.get(parts[-2].lower())
        if kind is None:
            raise PodNotFound(f"{ref!r}: unknown workload kind {parts[-2]!r} (deploy, sts, ds, rs, job)")
        owned = [p for p in state.pods_in(namespace) if owned_by(state, p, kind, parts[-1])]
        if not owned:
            raise PodNotFound(f"{ref!r}: no pod of {kind} {namespace}/{parts[-1]}")
        return owned[0]
    namespace, _, name = ref.rpartition("/")
    namespace = namespace or default_namespace
    pod = state.pods.get(f"{namespace}/{name}")
    if pod is None:
        related = [p.name for p in state.pods_in(namespace) if p.name.startswith(name + "-")]
        hint = f"; pods named after it: {', '.join(related)} (or use {namespace}/deploy/{name})" if related else ""
        raise PodNotFound(f'pods "{name}" not found in namespace "{namespace}"{hint}')
    return pod
