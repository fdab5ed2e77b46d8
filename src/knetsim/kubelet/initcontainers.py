"""Init containers in the pod status, as the kubelet reports them while it runs them one by one.

A pod with init containers starts Pending and not Initialized: its first init container runs, the
others and every regular container wait in ``PodInitializing``. Each init container that exits 0 is
``terminated: Completed`` (ready, no longer started) and the next one starts; when the last is done
the pod is Initialized and its containers start (``kubelet.py`` runs them, ``podstart.py`` writes the
first status). An init container that fails is run again under the pod's restart policy (OnFailure
for Always), or, with restartPolicy Never, fails the pod. A sidecar (an init container with
``restartPolicy: Always``) starts in its turn and keeps running beside the others, as a regular
container does. kubectl's STATUS column (``Init:0/2``, ``Init:CrashLoopBackOff``, ``Init:Error``) and
``kubectl logs POD -c INIT`` read these statuses (pkg/kubelet/kuberuntime, computeInitContainerActions;
the condition's words from pkg/kubelet/status/generate.go).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PODINITIALIZING = {"waiting": {"reason": "PodInitializing"}}


def is_sidecar(container: Mapping[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def init_containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in spec.get("initContainers") or [] if isinstance(c, Mapping)]


def _status_of(c: Mapping[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    return {"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": False,
            "started": "running" in state, "restartCount": 0, "state": state}


def begin(status: dict[str, Any], spec: Mapping[str, Any], now: str) -> None:
    """The first status of a pod with init containers: the first one running, everything else waiting."""
    inits = init_containers(spec)
    if not inits:
        return
    statuses = []
    for i, c in enumerate(inits):
        state = {"running": {"startedAt": now}} if i == 0 else dict(PODINITIALIZING)
        statuses.append(_status_of(c, state))
    status["initContainerStatuses"] = statuses
    for cs in status.get("containerStatuses") or []:
        cs.update(state=dict(PODINITIALIZING), ready=False, started=False)
    status["phase"] = "Pending"


def not_started(status: dict[str, Any], spec: Mapping[str, Any]) -> None:
    """A pod whose volumes cannot be set up yet: no init container has started (kubectl shows ``Init:0/N``)."""
    inits = init_containers(spec)
    if inits:
        status["initContainerStatuses"] = [_status_of(c, dict(PODINITIALIZING)) for c in inits]


def incomplete(status: Mapping[str, Any], spec: Mapping[str, Any]) -> list[str]:
    """The init containers not through yet, in order (the Initialized condition names them)."""
    states = {cs.get("name"): cs for cs in status.get("initContainerStatuses") or []}
    out = []
    for c in init_containers(spec):
        cs = states.get(c.get("name")) or {}
        state = cs.get("state") or {}
        terminated = state.get("terminated")
        if is_sidecar(c) and cs.get("started"):
            continue
        if terminated is not None and int(terminated.get("exitCode") or 0) == 0:
            continue
        out.append(str(c.get("name")))
    return out


def initializing(status: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    """Init containers still to run (the kubelet's turn before the pod's containers)."""
    return bool(status.get("initContainerStatuses")) and bool(incomplete(status, spec))


def failed(status: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    """With restartPolicy Never an init container that exits non-zero fails the pod."""
    if (spec.get("restartPolicy") or "Always") != "Never":
        return False
    return any(int(((cs.get("state") or {}).get("terminated") or {}).get("exitCode") or 0) != 0
               for cs in status.get("initContainerStatuses") or [])


def initialized_condition(cond: dict[str, Any], status: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
    """The Initialized condition from the init containers' states."""
    if not status.get("initContainerStatuses"):
        return
    waiting = incomplete(status, spec)
    if waiting:
        cond.update(status="False", reason="ContainersNotInitialized",
                    message=f"containers with incomplete status: [{' '.join(waiting)}]")
    else:
        cond.update(status="True")
        cond.pop("reason", None)
        cond.pop("message", None)


def set_state(cs: dict[str, Any], state: dict[str, Any], sidecar: bool) -> None:
    """An init container's status for a new state: started while it runs; ready once it has exited 0 (a
    sidecar: while it runs)."""
    cs["state"] = state
    running = "running" in state
    terminated = state.get("terminated")
    cs["started"] = running
    cs["ready"] = running if sidecar else (terminated is not None and int(terminated.get("exitCode") or 0) == 0)
