"""A pod's status as the kubelet reports it, shared by the two writers of pod status.

The simulated kubelet (``kubelet.py``) changes container states (a command exited, a restart
waits in CrashLoopBackOff, an image cannot be pulled); the pod-start controller
(``controllers/podstart.py``) gives a bound pod its address and first status and re-evaluates
readiness when a client changes what it depends on (annotations, probes). Both derive the phase
and the Ready conditions from the container states the same way, here.

``PodStatusWriter`` is the kubelet's side: it writes one container's new state into the stored pod
(its status entry, then the phase and conditions derived again), for every kind of container the
kubelet runs (the pod's, init and ephemeral ones).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..apiserver.registry import commit_batch, status_write
from ..cluster import workloads as core_workloads
from ..model.jsonvalue import json_copy
from ..model.timestamps import now_rfc3339
from . import initcontainers

if TYPE_CHECKING:
    from ..apiserver.store import Key, Store, Stored


def apply_phase(status: dict[str, Any], spec: Mapping[str, Any]) -> None:
    """Pod phase and readiness conditions from the container states, as the kubelet computes them."""
    statuses = status.get("containerStatuses") or []
    names = [c.get("name") for c in spec.get("containers") or []]
    states = {cs.get("name"): cs.get("state") or {} for cs in statuses}
    if not names or any(n not in states for n in names):
        return
    policy = spec.get("restartPolicy") or "Always"
    terminated = [states[n].get("terminated") for n in names]
    final = all(t is not None for t in terminated) and (
        policy == "Never" or (policy == "OnFailure" and all(t["exitCode"] == 0 for t in terminated if t)))
    init_failed = initcontainers.failed(status, spec)
    unready = [n for n, cs in zip(names, [next(s for s in statuses if s.get("name") == n) for n in names],
                                  strict=True) if not cs.get("ready")]
    # getPhase: a container waiting without ever having run (an image that cannot be pulled)
    # keeps the pod Pending.
    never_ran = [n for n in names if "waiting" in states[n] and not next(
        (s.get("lastState") for s in statuses if s.get("name") == n), None)]
    if init_failed:
        final = True
        status["phase"] = "Failed"
    elif final:
        status["phase"] = "Succeeded" if all(t["exitCode"] == 0 for t in terminated if t) else "Failed"
    elif never_ran or initcontainers.initializing(status, spec):
        status["phase"] = "Pending"
    elif status.get("phase") == "Pending":
        status["phase"] = "Running"
    conditions = []
    for cond in status.get("conditions") or []:
        cond = dict(cond)
        if cond.get("type") in ("Ready", "ContainersReady"):
            if final:
                cond.update(status="False", reason="PodCompleted")
                cond.pop("message", None)
            elif unready:
                cond.update(status="False", reason="ContainersNotReady",
                            message=f"containers with unready status: [{' '.join(unready)}]")
            elif cond.get("status") == "False" and cond.get("reason") == "ContainersNotReady":
                cond.update(status="True")  # the last waiting container started
                cond.pop("reason", None)
                cond.pop("message", None)
        elif cond.get("type") == "PodReadyToStartContainers" and final:
            cond["status"] = "False"  # the sandbox is torn down once every container is done
        elif cond.get("type") == "Initialized":
            initcontainers.initialized_condition(cond, status, spec)
        conditions.append(cond)
    status["conditions"] = conditions


def hold(status: dict[str, Any], waiting: Mapping[str, Mapping[str, Any]], spec: Mapping[str, Any]) -> None:
    """Containers the kubelet cannot create yet (a volume or an env reference it cannot resolve) wait
    with the given state; the pod stays Pending and not ready. An image that cannot be pulled fails
    before the environment is made, so its ErrImagePull stays; volumes come before both."""
    if not waiting:
        return
    for cs in status.get("containerStatuses") or []:
        state = waiting.get(cs.get("name"))
        if state is not None and ("waiting" not in (cs.get("state") or {}) or state.get("reason") ==
                                  "ContainerCreating"):
            cs.update(state={"waiting": json_copy(state)}, ready=False, started=False)
    apply_phase(status, spec)


def _startup_probed(spec: Mapping[str, Any]) -> set[str]:
    return {str(c.get("name")) for c in spec.get("containers") or [] if isinstance(c.get("startupProbe"), Mapping)}


def await_startup(status: dict[str, Any], spec: Mapping[str, Any]) -> None:
    """A container with a startup probe starts neither started nor ready: the kubelet's prober says when."""
    probed = _startup_probed(spec)
    if not probed:
        return
    for cs in status.get("containerStatuses") or []:
        if cs.get("name") in probed and "running" in (cs.get("state") or {}):
            cs.update(started=False, ready=False)
    apply_phase(status, spec)


def keep_kubelet_state(fresh: dict[str, Any], old: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
    """What the simulated kubelet reported (a container that exited, restarted or waits in
    CrashLoopBackOff) survives a re-evaluation of readiness; such a container is not ready."""
    before = {cs.get("name"): cs for cs in old.get("containerStatuses") or []}
    probed = _startup_probed(spec)
    touched = False
    if old.get("initContainerStatuses"):
        # The core's status knows nothing of init containers: what the kubelet reported of them stays.
        fresh["initContainerStatuses"] = json_copy(old["initContainerStatuses"])
        touched = True
    for cs in fresh.get("containerStatuses") or []:
        prev = before.get(cs.get("name"))
        if not prev:
            continue
        for f in ("state", "lastState", "restartCount", "containerID", "imageID"):
            if f in prev:
                cs[f] = json_copy(prev[f])
        if "running" not in (cs.get("state") or {}) or (cs.get("name") in probed and prev.get("started") is False):
            cs["ready"] = cs["started"] = False  # not running, or its startup probe has not passed yet
            touched = True
        elif prev.get("restartCount") or prev.get("lastState"):
            touched = True
    if touched:
        apply_phase(fresh, spec)


def refreshed(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The status of a started pod with readiness computed again (annotations and probes a client may
    have changed), the kubelet's container states kept; None for a pod that has not started."""
    status = body.get("status") or {}
    phase = status.get("phase")
    if phase in ("Succeeded", "Failed"):
        return json_copy(status)  # type: ignore[no-any-return]
    if phase not in ("Running", "Pending") or not status.get("podIP") or not (body.get("spec") or {}).get("nodeName"):
        return None
    # No registry check here: whether an image can be pulled is the kubelet's to report (kept below).
    fresh = core_workloads.pod_status(body, status["podIP"], status.get("hostIP") or "", None,
                                      tuple(str(i.get("ip")) for i in status.get("podIPs") or () if i.get("ip")),
                                      tuple(str(i.get("ip")) for i in status.get("hostIPs") or () if i.get("ip")))
    if status.get("startTime"):
        fresh["startTime"] = status["startTime"]
    keep_kubelet_state(fresh, status, body.get("spec") or {})
    complete(body, fresh)
    return fresh


def complete(body: Mapping[str, Any], status: dict[str, Any]) -> None:
    """What the kubelet reports and the core leaves out: container and image IDs, start times."""
    started = status.get("startTime")
    uid = (body.get("metadata") or {}).get("uid", "")
    if status.get("initContainerStatuses"):
        status["initContainerStatuses"] = _with_ids(status["initContainerStatuses"], uid, None)
    statuses = _with_ids(status.get("containerStatuses") or [], uid, started)
    if statuses:
        status["containerStatuses"] = statuses


def _with_ids(container_statuses: list[dict[str, Any]], uid: str, started: str | None) -> list[dict[str, Any]]:
    statuses = []
    for cs in container_statuses:
        cs = dict(cs)
        if "waiting" in (cs.get("state") or {}) and not cs.get("lastState"):
            statuses.append(cs)  # never ran (its image cannot be pulled): no container, no image yet
            continue
        image = str(cs.get("image") or "")
        if not cs.get("containerID"):
            cs["containerID"] = "containerd://" + hashlib.sha256(f"{uid}/{cs.get('name')}".encode()).hexdigest()
        if image and not cs.get("imageID"):
            cs["imageID"] = image_id(image)
        state = cs.get("state")
        if isinstance(state, dict) and isinstance(state.get("running"), dict) and started:
            cs["state"] = dict(state, running=dict(state["running"]))
            cs["state"]["running"].setdefault("startedAt", started)
        statuses.append(cs)
    return statuses


def image_id(image: str) -> str:
    """``docker.io/library/nginx@sha256:...``: the repository digest the runtime reports (a stable hash here)."""
    repo = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    if "/" not in repo:
        repo = f"docker.io/library/{repo}"
    elif "." not in repo.split("/", 1)[0]:
        repo = f"docker.io/{repo}"
    return f"{repo}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def stamp_conditions(status: dict[str, Any], old: Mapping[str, Any], now: str) -> None:
    """Condition times as the kubelet keeps them: ``lastTransitionTime`` moves only when the status
    flips (what minReadySeconds counts from), ``lastProbeTime`` is null."""
    before = {c.get("type"): c for c in old.get("conditions") or []}
    stamped = []
    for cond in status.get("conditions") or []:
        cond = dict(cond)
        prev = before.get(cond.get("type")) or {}
        cond["lastProbeTime"] = None
        cond["lastTransitionTime"] = prev.get("lastTransitionTime") if prev.get("status") == cond.get("status") \
            and prev.get("lastTransitionTime") else now
        stamped.append(cond)
    status["conditions"] = stamped


# (pod uid, container name) → whether the container's probes say so: the kubelet's probe results.
ProbeVerdict = Callable[[tuple[str, str]], bool]


class PodStatusWriter:
    """The kubelet's writes of container states into the stored pod status. What the probes found
    (a startup probe not passed yet, a readiness probe failing) is asked of the kubelet, which keeps it."""

    def __init__(self, store: Store, starting: ProbeVerdict, unready: ProbeVerdict) -> None:
        self.store = store
        self.starting, self.unready = starting, unready

    def ephemeral_state(self, namespace: str, pod: str, uid: str, container: str, image: str,
                        state: Mapping[str, Any], container_id: str) -> None:
        """An ephemeral container's status: never ready, no part in the pod's phase or conditions."""
        key = ("Pod", namespace, pod)
        stored = self.store.get(key)
        if stored is None or (stored.body.get("metadata") or {}).get("uid") != uid:
            return
        new = json_copy(stored.body)
        statuses = new.setdefault("status", {}).setdefault("ephemeralContainerStatuses", [])
        entry = next((cs for cs in statuses if cs.get("name") == container), None)
        if entry is None:
            entry = {"name": container, "image": image, "imageID": image_id(image), "ready": False,
                     "restartCount": 0}
            statuses.append(entry)
        entry["state"] = json_copy(state)
        if "running" in state or "terminated" in state:
            entry["containerID"] = container_id
        if new != stored.body:
            self._write_status(stored, key, new)

    def container_state(self, namespace: str, pod: str, uid: str, container: str, state: dict[str, Any],
                        last_state: dict[str, Any] | None = None, restarts: int | None = None,
                        container_id: str = "") -> None:
        """Write a container's state into the pod status; the controllers take it from there."""
        key = ("Pod", namespace, pod)
        stored = self.store.get(key)
        if stored is None or (stored.body.get("metadata") or {}).get("uid") != uid:
            return
        status = json_copy(stored.body.get("status") or {})
        changed: dict[str, Any] = {}
        for cs in status.get("containerStatuses") or []:
            if cs.get("name") != container:
                continue
            changed = cs
            cs["state"] = json_copy(state)
            if last_state:
                cs["lastState"] = json_copy(last_state)
            if restarts is not None:
                cs["restartCount"] = restarts
            cs["started"] = "running" in state and not self.starting((uid, container))
            if container_id and ("running" in state or "terminated" in state):
                cs["containerID"] = container_id
        spec = stored.body.get("spec") or {}
        for cs in status.get("initContainerStatuses") or []:
            if cs.get("name") != container:
                continue
            sidecar = any(initcontainers.is_sidecar(c) and c.get("name") == container
                          for c in initcontainers.init_containers(spec))
            initcontainers.set_state(cs, json_copy(state), sidecar)
            if last_state:
                cs["lastState"] = json_copy(last_state)
            if restarts is not None:
                cs["restartCount"] = restarts
            if container_id and ("running" in state or "terminated" in state):
                cs["containerID"] = container_id
                cs["imageID"] = cs.get("imageID") or image_id(str(cs.get("image") or ""))
        # Ready: started, its readiness probe passing, and ready by knetsim's readiness rules.
        core = refreshed({**stored.body, "status": status}) or {}
        if changed:
            changed["ready"] = bool(changed["started"]) and not self.unready((uid, container)) and any(
                cs.get("name") == container and cs.get("ready") for cs in core.get("containerStatuses") or [])
        apply_phase(status, spec)
        _keep_explanation(status, core)
        stamp_conditions(status, stored.body.get("status") or {}, now_rfc3339())
        if status != stored.body.get("status"):
            new = json_copy(stored.body)
            new["status"] = status
            self._write_status(stored, key, new)

    def _write_status(self, stored: Stored, key: Key, new: dict[str, Any]) -> None:
        """Through the registry's status path, as the kubelet's PATCH of pods/status would go: flushed at
        once (a pod's state is what a user waits on after a restart)."""
        write = status_write(stored, key, new, by="kubelet")
        if write is not None:
            commit_batch(self.store, [write], by="kubelet", durable=True)


def _keep_explanation(status: dict[str, Any], core: Mapping[str, Any]) -> None:
    """Where knetsim's readiness rules say not ready too, their reason (the probe's port where nothing
    listens, the annotation) stays in the Ready conditions: it names the cause, not just the container."""
    explained = {c.get("type"): c for c in core.get("conditions") or [] if c.get("status") == "False"}
    for cond in status.get("conditions") or []:
        theirs = explained.get(cond.get("type"))
        if cond.get("type") in ("Ready", "ContainersReady") and cond.get("status") == "False" and theirs:
            for field in ("reason", "message"):
                if theirs.get(field):
                    cond[field] = theirs[field]
