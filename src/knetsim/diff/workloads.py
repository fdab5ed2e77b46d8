"""Pods named by their workload, as the matrix names its rows (``shop/web[Deployment]``).

A rollout renames pods (a new pod-template-hash) and may move their addresses; what a diff reports
is what happened to a workload's pods, so endpoints and targets are counted per workload.
"""

from __future__ import annotations

from ..cluster.state import ClusterState
from ..model.objects import Pod
from ..policy.matrix import workload_of


class Workloads:
    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._cache: dict[tuple[str, str, str], tuple[str, str]] = {}
        self._pods: dict[str, list[Pod]] | None = None

    def of(self, pod: Pod) -> str:
        kind, name = workload_of(self.state, pod, self._cache)
        return f"{pod.namespace}/{name}[{kind}]"

    def of_ip(self, ip: str) -> str:
        """The workload of the pod with this address, or the address itself (an endpoint written by hand)."""
        pod = self.state.pod_by_ip(ip)
        return self.of(pod) if pod is not None else ip

    def pods(self, workload: str) -> list[Pod]:
        if self._pods is None:
            self._pods = {}
            for _, pod in sorted(self.state.pods.items()):
                self._pods.setdefault(self.of(pod), []).append(pod)
        return self._pods.get(workload, [])


def counted(names: list[str]) -> str:
    """``shop/web[Deployment] ×2, shop/api[Deployment]``: each name once, with its count when above one."""
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return ", ".join(f"{n} ×{c}" if c > 1 else n for n, c in sorted(counts.items()))


__all__ = ["Workloads", "counted"]
