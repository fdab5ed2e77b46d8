"""The status each workload controller writes, from the pods it owns: one computation for the live
controllers (``knetsim.controllers``) and the offline build, so ``knetsim get`` and ``kubectl get`` print
the same READY, UP-TO-DATE and AVAILABLE, and ``-o yaml`` the same fields.

Counts are omitted when zero, as the Go structs' ``omitempty`` marshals them. What needs a clock
(a Deployment's conditions, minReadySeconds, a Job's start time) is the live controllers' own: the
offline build has no clock and writes no times.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..model.timestamps import parse_rfc3339
from .naming import pod_template_hash

TERMINAL = ("Succeeded", "Failed")


def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_active(pod: Mapping[str, Any]) -> bool:
    """FilterActivePods: not finished and not being deleted."""
    return phase(pod) not in TERMINAL and not (pod.get("metadata") or {}).get("deletionTimestamp")


def is_ready(pod: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def observed_generation(owner: Mapping[str, Any]) -> int:
    return int((owner.get("metadata") or {}).get("generation") or 1)


def _nonzero(status: dict[str, Any], counts: Iterable[tuple[str, int]]) -> dict[str, Any]:
    for name, value in counts:
        if value:
            status[name] = value
    return status


def ready_since(pod: Mapping[str, Any]) -> float | None:
    """When the pod became Ready (epoch seconds; 0.0 when the condition has no time), None if it is not."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready" and c.get("status") == "True":
            stamp = c.get("lastTransitionTime")
            return parse_rfc3339(stamp).timestamp() if stamp else 0.0
    return None


def replica_set_status(rs: Mapping[str, Any], pods: list[Mapping[str, Any]], now: float | None = None
                       ) -> tuple[dict[str, Any], float | None]:
    """(ReplicaSetStatus, seconds until a ready pod becomes available under minReadySeconds, or None).
    ``now`` None: no clock (offline), a ready pod counts as available."""
    spec = rs.get("spec") or {}
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    fully = ready = available = 0
    wait: float | None = None
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if all(labels.get(k) == v for k, v in template_labels.items()):
            fully += 1
        if is_ready(pod):
            ready += 1
            since = ready_since(pod) or 0.0
            if now is None or not min_ready or since + min_ready <= now:
                available += 1
            else:
                wait = min(wait if wait is not None else min_ready, since + min_ready - now)
    status = _nonzero({"replicas": len(pods)}, (("fullyLabeledReplicas", fully), ("readyReplicas", ready),
                                                ("availableReplicas", available)))
    status["observedGeneration"] = observed_generation(rs)
    return status, wait


def daemon_set_status(ds: Mapping[str, Any], pods: list[Mapping[str, Any]], scheduled: int) -> dict[str, Any]:
    """DaemonSetStatus: ``scheduled`` is every pod it runs, the ``pods`` it had plus those it just made."""
    ready = sum(1 for p in pods if is_ready(p))
    status: dict[str, Any] = {"currentNumberScheduled": scheduled, "numberMisscheduled": 0,
                              "desiredNumberScheduled": scheduled, "numberReady": ready,
                              "observedGeneration": observed_generation(ds)}
    return _nonzero(status, (("updatedNumberScheduled", scheduled), ("numberAvailable", ready),
                             ("numberUnavailable", scheduled - ready)))


def stateful_set_status(sts: Mapping[str, Any], pods: list[Mapping[str, Any]]) -> dict[str, Any]:
    """StatefulSetStatus of the pods it keeps (all of one revision: template changes are not rolled out)."""
    ready = sum(1 for p in pods if is_ready(p))
    name = str((sts.get("metadata") or {}).get("name") or "")
    revision = f"{name}-{pod_template_hash((sts.get('spec') or {}).get('template') or {})}"
    status = _nonzero({"observedGeneration": observed_generation(sts), "replicas": len(pods)},
                      (("readyReplicas", ready), ("currentReplicas", len(pods)), ("updatedReplicas", len(pods))))
    status.update(currentRevision=revision, updateRevision=revision, collisionCount=0, availableReplicas=ready)
    return status
