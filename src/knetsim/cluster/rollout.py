"""The Deployment controller's decisions, as a planner over copies (pkg/controller/deployment).

``sync(deployment, replica_sets, now)`` runs one ``syncDeployment`` on copies of the Deployment
and the ReplicaSets it owns and returns a ``Rollout``: the ReplicaSets to create, update (scale,
annotations) and delete, the Deployment with its revision annotation and status, and the
ScalingReplicaSet events, in the order the controller issues them. The controller
(``deployment.py``) commits it. Functions follow upstream's (sync.go, rolling.go, recreate.go,
progress.go, util/deployment_util.go) and keep their names in snake case, so each can be read
next to its original:

* revisions: the new ReplicaSet (the one whose template equals the Deployment's, ignoring
  ``pod-template-hash``) gets ``deployment.kubernetes.io/revision`` = max(old) + 1, copied to the
  Deployment; a ReplicaSet brought back (``rollout undo``) keeps its old numbers in
  ``deployment.kubernetes.io/revision-history``; the Deployment's other annotations
  (``kubernetes.io/change-cause``) are copied to it;
* RollingUpdate: the new ReplicaSet grows while all pods stay within replicas + maxSurge, old
  ones shrink while the available pods stay above replicas - maxUnavailable, so pods that never
  become ready (an image that cannot be pulled) stall the rollout with the old pods serving;
  Recreate: old ReplicaSets go to 0 first;
* a scaling (replicas changed, or paused) scales proportionally without rolling;
* old ReplicaSets at 0 are kept down to ``revisionHistoryLimit``;
* status and conditions: Available (MinimumReplicasAvailable/Unavailable), Progressing
  (NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable,
  ProgressDeadlineExceeded, DeploymentPaused/Resumed).

Only what is deterministic here differs: the new ReplicaSet's name hashes the template with
knetsim's ``pod_template_hash``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from ..model.jsonvalue import json_copy
from .naming import pod_template_hash

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
HASH_LABEL = "pod-template-hash"
# Annotations not copied from the Deployment to its ReplicaSets (annotationsToSkip).
SKIPPED = {"kubectl.kubernetes.io/last-applied-configuration", REVISION, REVISION_HISTORY, DESIRED_REPLICAS,
           MAX_REPLICAS, "deprecated.deployment.rollback.to"}
REVISION_HISTORY_LIMIT_CHARS = 2000  # the controller's --deployment-controller-... default for the history annotation

PROGRESSING, AVAILABLE, REPLICA_FAILURE = "Progressing", "Available", "ReplicaFailure"
NEW_RS_CREATED, FOUND_NEW_RS, RS_UPDATED = "NewReplicaSetCreated", "FoundNewReplicaSet", "ReplicaSetUpdated"
NEW_RS_AVAILABLE, TIMED_OUT = "NewReplicaSetAvailable", "ProgressDeadlineExceeded"
PAUSED, RESUMED = "DeploymentPaused", "DeploymentResumed"


def _seconds(timestamp: str) -> float:
    return datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


# --- util/deployment_util.go ----------------------------------------------------------------


def spec_replicas(obj: Mapping[str, Any]) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def status_count(obj: Mapping[str, Any], name: str) -> int:
    return int((obj.get("status") or {}).get(name) or 0)


def annotations(obj: dict[str, Any]) -> dict[str, str]:
    return obj.setdefault("metadata", {}).setdefault("annotations", {})  # type: ignore[no-any-return]


def revision(rs: Mapping[str, Any]) -> int:
    text = ((rs.get("metadata") or {}).get("annotations") or {}).get(REVISION, "")
    return int(text) if str(text).isdigit() else 0


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, ``25%`` of ``total`` rounded."""
    if isinstance(value, int):
        return value
    return _scaled_text(str(value), total, round_up)


@lru_cache(maxsize=1024)
def _scaled_text(text: str, total: int, round_up: bool) -> int:
    # Remembered: the build resolves the default "25%" of 9,000 Deployments of a few replica counts (~0.02 s).
    if text.endswith("%") and text[:-1].isdigit():
        exact = int(text[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(text) if text.isdigit() else 0


def is_rolling_update(d: Mapping[str, Any]) -> bool:
    return ((d.get("spec") or {}).get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"


def resolve_fenceposts(d: Mapping[str, Any]) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) in pods; both 0 would never progress, so unavailable becomes 1."""
    rolling = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    desired = spec_replicas(d)
    surge = scaled_value(rolling.get("maxSurge", "25%"), desired, True)
    unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: Mapping[str, Any]) -> int:
    return resolve_fenceposts(d)[0] if is_rolling_update(d) else 0


def max_unavailable(d: Mapping[str, Any]) -> int:
    if not is_rolling_update(d) or spec_replicas(d) == 0:
        return 0
    return min(resolve_fenceposts(d)[1], spec_replicas(d))


def by_creation(rss: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ReplicaSetsByCreationTimestamp: oldest first, ties by name."""
    return sorted(rss, key=lambda rs: (rs["metadata"].get("creationTimestamp") or "", rs["metadata"]["name"]))


def active(rss: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [rs for rs in rss if spec_replicas(rs) > 0]


def without_hash(template: Mapping[str, Any]) -> dict[str, Any]:
    out = json_copy(template)
    labels = (out.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return out  # type: ignore[no-any-return]


def _shallow_without_hash(template: Mapping[str, Any]) -> Mapping[str, Any]:
    """The template without its hash label, copying only the two dicts on the way to it."""
    meta = template.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    if not isinstance(labels, dict) or HASH_LABEL not in labels:
        return template
    return {**template, "metadata": {**meta, "labels": {k: v for k, v in labels.items() if k != HASH_LABEL}}}


def equal_ignore_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    # Equal without copying is equal once copied too; the deep copies decide the rest (a tuple in one is a
    # list in the other once copied). Two deep copies per ReplicaSet were a tenth of building 10,000 pods.
    return _shallow_without_hash(a) == _shallow_without_hash(b) or without_hash(a) == without_hash(b)


def find_new_replica_set(d: Mapping[str, Any], rss: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The oldest ReplicaSet whose template is the Deployment's (several can match after a hash change)."""
    template = (d.get("spec") or {}).get("template") or {}
    # One ReplicaSet (9,000 of bench/calico.py's 9,003 Deployments) needs no sorting.
    candidates = rss if len(rss) < 2 else by_creation(rss)
    return next((rs for rs in candidates if equal_ignore_hash((rs.get("spec") or {}).get("template") or {},
                                                               template)), None)


def replica_count(rss: list[dict[str, Any]]) -> int:
    return sum(spec_replicas(rs) for rs in rss)


def actual_count(rss: list[dict[str, Any]], field_name: str = "replicas") -> int:
    return sum(status_count(rs, field_name) for rs in rss)


def set_replicas_annotations(rs: dict[str, Any], desired: int, maximum: int) -> bool:
    ann = annotations(rs)
    changed = False
    for key, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(maximum))):
        if ann.get(key) != value:
            ann[key] = value
            changed = True
    return changed


def copy_annotations_to_replica_set(d: Mapping[str, Any], rs: dict[str, Any]) -> bool:
    ann = annotations(rs)
    changed = False
    for key, value in ((d.get("metadata") or {}).get("annotations") or {}).items():
        if key in SKIPPED or ann.get(key) == value:
            continue
        ann[key] = value
        changed = True
    return changed


def set_new_replica_set_annotations(d: dict[str, Any], rs: dict[str, Any], new_revision: str, exists: bool) -> bool:
    changed = copy_annotations_to_replica_set(d, rs)
    ann = annotations(rs)
    old_revision = ann.get(REVISION, "")
    old_int = int(old_revision) if old_revision.isdigit() else 0
    if old_int < int(new_revision):
        ann[REVISION] = new_revision
        changed = True
        if old_revision:
            # Brought back (a rollback): its earlier numbers stay in the history annotation.
            history = [h for h in ann.get(REVISION_HISTORY, "").split(",") if h]
            history.append(old_revision)
            while len(",".join(history)) > REVISION_HISTORY_LIMIT_CHARS and len(history) > 1:
                history.pop(0)
            ann[REVISION_HISTORY] = ",".join(history)
    if not exists and set_replicas_annotations(rs, spec_replicas(d), spec_replicas(d) + max_surge(d)):
        changed = True
    return changed


def new_rs_new_replicas(d: Mapping[str, Any], all_rss: list[dict[str, Any]], new_rs: Mapping[str, Any]) -> int:
    """NewRSNewReplicas: how far the new ReplicaSet may grow now."""
    if not is_rolling_update(d):
        return spec_replicas(d)
    current = replica_count(all_rss)
    max_total = spec_replicas(d) + max_surge(d)
    if current >= max_total:
        return spec_replicas(new_rs)
    scale_up = min(max_total - current, spec_replicas(d) - spec_replicas(new_rs))
    return spec_replicas(new_rs) + scale_up


def is_saturated(d: Mapping[str, Any], rs: Mapping[str, Any] | None) -> bool:
    if rs is None:
        return False
    desired = ((rs.get("metadata") or {}).get("annotations") or {}).get(DESIRED_REPLICAS)
    return desired == str(spec_replicas(d)) and status_count(rs, "availableReplicas") == spec_replicas(d) and \
        spec_replicas(rs) == spec_replicas(d)


def find_active_or_latest(new_rs: dict[str, Any] | None, old_rss: list[dict[str, Any]]) -> dict[str, Any] | None:
    if new_rs is None and not old_rss:
        return None
    newest_first = list(reversed(by_creation(old_rss)))
    live = active([*newest_first, *([new_rs] if new_rs is not None else [])])
    if not live:
        return new_rs if new_rs is not None else newest_first[0]
    return live[0] if len(live) == 1 else None


def replica_set_fraction(rs: Mapping[str, Any], d: Mapping[str, Any]) -> int:
    if spec_replicas(d) == 0:
        return -spec_replicas(rs)
    deployment_replicas = spec_replicas(d) + max_surge(d)
    text = ((rs.get("metadata") or {}).get("annotations") or {}).get(MAX_REPLICAS, "")
    annotated = int(text) if str(text).isdigit() else status_count(d, "replicas")
    if annotated == 0:
        return 0
    # integer.RoundToInt32: halves away from zero.
    exact = spec_replicas(rs) * deployment_replicas / annotated
    return math.floor(exact + 0.5) - spec_replicas(rs)


def proportion(rs: Mapping[str, Any], d: Mapping[str, Any], to_add: int, added: int) -> int:
    if spec_replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = replica_set_fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


# --- conditions (util.go: NewDeploymentCondition, SetDeploymentCondition...) ---------------------


def get_condition(status: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), None)


def new_condition(type_: str, status: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {"type": type_, "status": status, "lastUpdateTime": now, "lastTransitionTime": now, "reason": reason,
            "message": message}


def set_condition(status: dict[str, Any], condition: dict[str, Any]) -> None:
    current = get_condition(status, condition["type"])
    if current is not None and current["status"] == condition["status"] and current.get("reason") == \
            condition["reason"]:
        return
    if current is not None and current["status"] == condition["status"]:
        condition["lastTransitionTime"] = current.get("lastTransitionTime", condition["lastTransitionTime"])
    remove_condition(status, condition["type"])
    status.setdefault("conditions", []).append(condition)


def remove_condition(status: dict[str, Any], type_: str) -> None:
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != type_]
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)


def replica_failure(new_rs: Mapping[str, Any] | None, all_rss: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The Deployment's ReplicaFailure condition from its ReplicaSets' (the new one's first), as
    ReplicaSetToDeploymentCondition makes it: the same fields, lastUpdateTime the lastTransitionTime."""
    for rs in ([new_rs] if new_rs is not None else []) + all_rss:
        condition = get_condition(rs.get("status") or {}, REPLICA_FAILURE)
        if condition is not None:
            return {"type": REPLICA_FAILURE, "status": condition.get("status"),
                    "lastUpdateTime": condition.get("lastTransitionTime"),
                    "lastTransitionTime": condition.get("lastTransitionTime"), "reason": condition.get("reason"),
                    "message": condition.get("message")}
    return None


def has_progress_deadline(d: Mapping[str, Any]) -> bool:
    deadline = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return deadline is not None and int(deadline) != 2**31 - 1


def deployment_complete(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    want = spec_replicas(d)
    return (int(status.get("updatedReplicas") or 0) == want and int(status.get("replicas") or 0) == want
            and int(status.get("availableReplicas") or 0) == want
            and int(status.get("observedGeneration") or 0) >= int((d.get("metadata") or {}).get("generation") or 0))


def deployment_progressing(d: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    old = d.get("status") or {}

    def get(st: Mapping[str, Any], name: str) -> int:
        return int(st.get(name) or 0)
    old_old = get(old, "replicas") - get(old, "updatedReplicas")
    new_old = get(new, "replicas") - get(new, "updatedReplicas")
    return (get(new, "updatedReplicas") > get(old, "updatedReplicas") or new_old < old_old
            or get(new, "readyReplicas") > get(old, "readyReplicas")
            or get(new, "availableReplicas") > get(old, "availableReplicas"))


def deployment_timed_out(d: Mapping[str, Any], status: Mapping[str, Any], now: str) -> bool:
    if not has_progress_deadline(d):
        return False
    condition = get_condition(status, PROGRESSING)
    if condition is None or condition.get("reason") == NEW_RS_AVAILABLE:
        return False
    if condition.get("reason") == TIMED_OUT:
        return True
    deadline = int((d.get("spec") or {}).get("progressDeadlineSeconds") or 0)
    return _seconds(condition["lastUpdateTime"]) + deadline < _seconds(now)


def deployment_counts(all_rss: list[dict[str, Any]], new_rs: Mapping[str, Any] | None,
                      d: Mapping[str, Any]) -> dict[str, Any]:
    """The counts of a DeploymentStatus (zero counts omitted, as Go's omitempty does): what the READY,
    UP-TO-DATE and AVAILABLE columns print, live and offline alike."""
    # One pass over the ReplicaSets (the build adds up 9,000 Deployments' statuses; four sums each were most of it).
    replicas = ready = available = desired = 0
    for rs in all_rss:
        replicas += status_count(rs, "replicas")
        ready += status_count(rs, "readyReplicas")
        available += status_count(rs, "availableReplicas")
        desired += spec_replicas(rs)
    counts = {"observedGeneration": int((d.get("metadata") or {}).get("generation") or 1),
              "replicas": replicas,
              "updatedReplicas": status_count(new_rs, "replicas") if new_rs is not None else 0,
              "readyReplicas": ready,
              "availableReplicas": available,
              "unavailableReplicas": max(0, desired - available)}
    return {k: v for k, v in counts.items() if v}


def calculate_status(all_rss: list[dict[str, Any]], new_rs: dict[str, Any] | None, d: Mapping[str, Any],
                     now: str) -> dict[str, Any]:
    """The DeploymentStatus the ReplicaSets add up to, with its Available condition at ``now``."""
    status = deployment_counts(all_rss, new_rs, d)
    available = status.get("availableReplicas", 0)
    old = d.get("status") or {}
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    if old.get("conditions"):
        status["conditions"] = json_copy(old["conditions"])
    if available >= spec_replicas(d) - max_unavailable(d):
        set_condition(status, new_condition(AVAILABLE, "True", "MinimumReplicasAvailable",
                                            "Deployment has minimum availability.", now))
    else:
        set_condition(status, new_condition(AVAILABLE, "False", "MinimumReplicasUnavailable",
                                            "Deployment does not have minimum availability.", now))
    return status


# --- one sync -------------------------------------------------------------------------------------


@dataclass
class Rollout:
    """One syncDeployment over copies; what changed is named in ``created``/``updated``/``deleted``."""

    d: dict[str, Any]
    rss: list[dict[str, Any]]
    now: str
    # Whether a ReplicaSet name in the namespace is another's (not this Deployment's).
    taken: Callable[[str], bool] = lambda name: False
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message) on the Deployment
    # Look again after this many seconds (the progress deadline), or None.
    requeue_after: float | None = None

    @property
    def name(self) -> str:
        return str(self.d["metadata"]["name"])

    def _touch(self, rs: dict[str, Any]) -> None:
        name = rs["metadata"]["name"]
        if name not in self.created and name not in self.updated:
            self.updated.append(name)

    def replica_set(self, name: str) -> dict[str, Any]:
        return next(rs for rs in self.rss if rs["metadata"]["name"] == name)

    # --- sync.go -----------------------------------------------------------------------------

    def sync_deployment(self) -> Rollout:
        self.check_paused_conditions()
        if (self.d.get("spec") or {}).get("paused"):
            return self.sync()
        if self.is_scaling_event():
            return self.sync()
        if is_rolling_update(self.d):
            return self.rollout_rolling()
        return self.rollout_recreate()

    def check_paused_conditions(self) -> None:
        if not has_progress_deadline(self.d):
            return
        status = self.d.setdefault("status", {})
        cond = get_condition(status, PROGRESSING)
        if cond is not None and cond.get("reason") == TIMED_OUT:
            return
        paused_cond = cond is not None and cond.get("reason") == PAUSED
        if (self.d.get("spec") or {}).get("paused") and not paused_cond:
            set_condition(status, new_condition(PROGRESSING, "Unknown", PAUSED, "Deployment is paused", self.now))
        elif not (self.d.get("spec") or {}).get("paused") and paused_cond:
            set_condition(status, new_condition(PROGRESSING, "Unknown", RESUMED, "Deployment is resumed", self.now))

    def get_all_replica_sets_and_sync_revision(self, create: bool) -> tuple[dict[str, Any] | None,
                                                                             list[dict[str, Any]]]:
        new_rs = find_new_replica_set(self.d, self.rss)
        old_rss = [rs for rs in self.rss if rs is not new_rs]
        return self.get_new_replica_set(new_rs, old_rss, create), old_rss

    def get_new_replica_set(self, existing: dict[str, Any] | None, old_rss: list[dict[str, Any]],
                            create: bool) -> dict[str, Any] | None:
        """The ReplicaSet of the current template, its revision synced; created (scaled as the strategy
        allows) when ``create`` and there is none."""
        new_revision = str(max((revision(rs) for rs in old_rss), default=0) + 1)
        status = self.d.setdefault("status", {})
        if existing is not None:
            changed = set_new_replica_set_annotations(self.d, existing, new_revision, True)
            min_ready = int((self.d.get("spec") or {}).get("minReadySeconds") or 0)
            if min_ready != int((existing.get("spec") or {}).get("minReadySeconds") or 0):
                _set_min_ready(existing, min_ready)
                changed = True
            if changed:
                self._touch(existing)
            annotations(self.d)[REVISION] = annotations(existing)[REVISION]
            if has_progress_deadline(self.d) and get_condition(status, PROGRESSING) is None:
                set_condition(status, new_condition(PROGRESSING, "True", FOUND_NEW_RS,
                                                    f'Found new replica set "{existing["metadata"]["name"]}"',
                                                    self.now))
            return existing
        if not create:
            return None
        spec = self.d.get("spec") or {}
        collisions = int(status.get("collisionCount") or 0)
        template_hash = pod_template_hash(spec.get("template") or {}, collisions)
        while self.taken(f"{self.name}-{template_hash}"):
            # Another ReplicaSet has the name (not ours, or another template): the hash takes the count
            # of collisions (status.collisionCount), as upstream does after an AlreadyExists.
            collisions += 1
            status["collisionCount"] = collisions
            template_hash = pod_template_hash(spec.get("template") or {}, collisions)
        # The template's spec is the Deployment's own object (stored bodies are never changed in place).
        template = dict(spec.get("template") or {})
        template_meta = dict(template.get("metadata") or {})
        template_meta["labels"] = {**(template_meta.get("labels") or {}), HASH_LABEL: template_hash}
        template["metadata"] = template_meta
        selector = json_copy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = template_hash
        meta = self.d["metadata"]
        new_rs: dict[str, Any] = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{meta['name']}-{template_hash}", "namespace": meta.get("namespace", "default"),
                         "labels": dict(template["metadata"]["labels"]),
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": meta["name"],
                                              "uid": meta.get("uid", ""), "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": {"replicas": 0, "selector": selector, "template": template},
        }
        _set_min_ready(new_rs, int(spec.get("minReadySeconds") or 0))
        new_rs["spec"]["replicas"] = new_rs_new_replicas(self.d, [*old_rss, new_rs], new_rs)
        set_new_replica_set_annotations(self.d, new_rs, new_revision, False)
        self.rss.append(new_rs)
        self.created.append(new_rs["metadata"]["name"])
        if spec_replicas(new_rs) > 0:
            self.events.append(("Normal", "ScalingReplicaSet", f"Scaled up replica set {new_rs['metadata']['name']} "
                                                               f"from 0 to {spec_replicas(new_rs)}"))
        annotations(self.d)[REVISION] = new_revision
        if has_progress_deadline(self.d):
            set_condition(status, new_condition(PROGRESSING, "True", NEW_RS_CREATED,
                                                f'Created new replica set "{new_rs["metadata"]["name"]}"', self.now))
        return new_rs

    def is_scaling_event(self) -> bool:
        new_rs, old_rss = self.get_all_replica_sets_and_sync_revision(False)
        for rs in active([*old_rss, *([new_rs] if new_rs is not None else [])]):
            desired = annotations(rs).get(DESIRED_REPLICAS)
            if desired is not None and desired != str(spec_replicas(self.d)):
                return True
        return False

    def sync(self) -> Rollout:
        """Scaling, or a paused Deployment: no rollout, only proportional scaling and clean-up."""
        new_rs, old_rss = self.get_all_replica_sets_and_sync_revision(False)
        self.scale(new_rs, old_rss)
        if (self.d.get("spec") or {}).get("paused"):
            self.cleanup_deployment(old_rss)
        all_rss = [*old_rss, *([new_rs] if new_rs is not None else [])]
        self.d["status"] = calculate_status(all_rss, new_rs, self.d, self.now)
        return self

    def scale(self, new_rs: dict[str, Any] | None, old_rss: list[dict[str, Any]]) -> None:
        target = find_active_or_latest(new_rs, old_rss)
        if target is not None:
            if spec_replicas(target) != spec_replicas(self.d):
                self.scale_replica_set_and_record_event(target, spec_replicas(self.d))
            return
        if is_saturated(self.d, new_rs):
            for old in active(old_rss):
                self.scale_replica_set_and_record_event(old, 0)
            return
        if not is_rolling_update(self.d):
            return
        all_rss = active([*old_rss, *([new_rs] if new_rs is not None else [])])
        allowed = spec_replicas(self.d) + max_surge(self.d) if spec_replicas(self.d) > 0 else 0
        to_add = allowed - replica_count(all_rss)
        operation = ""
        if to_add:
            # ReplicaSetsBySizeNewer (scaling up) / BySizeOlder (down): the largest first; among equals the
            # newest (up) or the oldest (down).
            all_rss = by_creation(all_rss)
            if to_add > 0:
                all_rss.reverse()
            all_rss.sort(key=lambda rs: -spec_replicas(rs))
            operation = "up" if to_add > 0 else "down"
        sizes: dict[str, int] = {}
        added = 0
        for rs in all_rss:
            share = proportion(rs, self.d, to_add, added) if to_add else 0
            sizes[rs["metadata"]["name"]] = spec_replicas(rs) + share
            added += share
        for i, rs in enumerate(all_rss):
            name = rs["metadata"]["name"]
            if i == 0 and to_add:
                sizes[name] = max(0, sizes[name] + to_add - added)
            self.scale_replica_set(rs, sizes[name], operation)

    def scale_replica_set_and_record_event(self, rs: dict[str, Any], new_scale: int) -> bool:
        if spec_replicas(rs) == new_scale:
            return False
        return self.scale_replica_set(rs, new_scale, "up" if spec_replicas(rs) < new_scale else "down")

    def scale_replica_set(self, rs: dict[str, Any], new_scale: int, operation: str) -> bool:
        size_changes = spec_replicas(rs) != new_scale
        annotations_change = set_replicas_annotations(rs, spec_replicas(self.d),
                                                      spec_replicas(self.d) + max_surge(self.d))
        if not (size_changes or annotations_change):
            return False
        old_scale = spec_replicas(rs)
        rs.setdefault("spec", {})["replicas"] = new_scale
        self._touch(rs)
        if size_changes:
            rs_name = rs["metadata"]["name"]
            self.events.append(("Normal", "ScalingReplicaSet",
                                f"Scaled {operation} replica set {rs_name} from {old_scale} to {new_scale}"))
        return size_changes

    def cleanup_deployment(self, old_rss: list[dict[str, Any]]) -> None:
        """Old ReplicaSets beyond revisionHistoryLimit go, oldest revision first, once they are empty."""
        limit = (self.d.get("spec") or {}).get("revisionHistoryLimit")
        if limit is None:
            return
        cleanable = [rs for rs in old_rss if rs["metadata"]["name"] not in self.deleted]
        surplus = len(cleanable) - int(limit)
        if surplus <= 0:
            return
        cleanable.sort(key=lambda rs: (revision(rs), rs["metadata"].get("creationTimestamp") or "",
                                       rs["metadata"]["name"]))
        for rs in cleanable[:surplus]:
            observed = int((rs.get("status") or {}).get("observedGeneration") or 0)
            if status_count(rs, "replicas") != 0 or spec_replicas(rs) != 0 or \
                    int(rs["metadata"].get("generation") or 0) > observed:
                continue
            self.deleted.append(rs["metadata"]["name"])

    # --- rolling.go -------------------------------------------------------------------------------

    def rollout_rolling(self) -> Rollout:
        new_rs, old_rss = self.get_all_replica_sets_and_sync_revision(True)
        assert new_rs is not None
        all_rss = [*old_rss, new_rs]
        if self.reconcile_new_replica_set(all_rss, new_rs):
            return self.sync_rollout_status(all_rss, new_rs)
        if self.reconcile_old_replica_sets(all_rss, active(old_rss), new_rs):
            return self.sync_rollout_status(all_rss, new_rs)
        if deployment_complete(self.d, self.d.get("status") or {}):
            self.cleanup_deployment(old_rss)
        return self.sync_rollout_status(all_rss, new_rs)

    def reconcile_new_replica_set(self, all_rss: list[dict[str, Any]], new_rs: dict[str, Any]) -> bool:
        if spec_replicas(new_rs) == spec_replicas(self.d):
            return False
        if spec_replicas(new_rs) > spec_replicas(self.d):
            return self.scale_replica_set_and_record_event(new_rs, spec_replicas(self.d))
        return self.scale_replica_set_and_record_event(new_rs, new_rs_new_replicas(self.d, all_rss, new_rs))

    def reconcile_old_replica_sets(self, all_rss: list[dict[str, Any]], old_rss: list[dict[str, Any]],
                                   new_rs: dict[str, Any]) -> bool:
        if replica_count(old_rss) == 0:
            return False
        min_available = spec_replicas(self.d) - max_unavailable(self.d)
        new_unavailable = spec_replicas(new_rs) - status_count(new_rs, "availableReplicas")
        max_scaled_down = replica_count(all_rss) - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        # Unhealthy old replicas go first: removing them costs no availability (kubernetes#16737).
        cleaned = self.cleanup_unhealthy_replicas(old_rss, max_scaled_down)
        scaled = self.scale_down_old_replica_sets_for_rolling_update([*old_rss, new_rs], old_rss)
        return cleaned + scaled > 0

    def cleanup_unhealthy_replicas(self, old_rss: list[dict[str, Any]], max_cleanup: int) -> int:
        total = 0
        for rs in by_creation(old_rss):
            if total >= max_cleanup:
                break
            if spec_replicas(rs) == 0 or spec_replicas(rs) == status_count(rs, "availableReplicas"):
                continue
            count = min(max_cleanup - total, spec_replicas(rs) - status_count(rs, "availableReplicas"))
            self.scale_replica_set_and_record_event(rs, spec_replicas(rs) - count)
            total += count
        return total

    def scale_down_old_replica_sets_for_rolling_update(self, all_rss: list[dict[str, Any]],
                                                       old_rss: list[dict[str, Any]]) -> int:
        min_available = spec_replicas(self.d) - max_unavailable(self.d)
        available = actual_count(all_rss, "availableReplicas")
        if available <= min_available:
            return 0
        total, wanted = 0, available - min_available
        for rs in by_creation(old_rss):
            if total >= wanted:
                break
            if spec_replicas(rs) == 0:
                continue
            count = min(spec_replicas(rs), wanted - total)
            self.scale_replica_set_and_record_event(rs, spec_replicas(rs) - count)
            total += count
        return total

    # --- recreate.go ------------------------------------------------------------------------------

    def rollout_recreate(self) -> Rollout:
        new_rs, old_rss = self.get_all_replica_sets_and_sync_revision(False)
        all_rss = [*old_rss, *([new_rs] if new_rs is not None else [])]
        scaled_down = False
        for rs in active(old_rss):
            scaled_down = self.scale_replica_set_and_record_event(rs, 0) or scaled_down
        if scaled_down or any(status_count(rs, "replicas") for rs in old_rss):
            # Old pods still run: the new ReplicaSet waits until they are gone.
            return self.sync_rollout_status(all_rss, new_rs)
        if new_rs is None:
            new_rs, old_rss = self.get_all_replica_sets_and_sync_revision(True)
            assert new_rs is not None
            all_rss = [*old_rss, new_rs]
        self.scale_replica_set_and_record_event(new_rs, spec_replicas(self.d))
        if deployment_complete(self.d, self.d.get("status") or {}):
            self.cleanup_deployment(old_rss)
        return self.sync_rollout_status(all_rss, new_rs)

    # --- progress.go ------------------------------------------------------------------------------

    def sync_rollout_status(self, all_rss: list[dict[str, Any]], new_rs: dict[str, Any] | None) -> Rollout:
        status = calculate_status(all_rss, new_rs, self.d, self.now)
        if not has_progress_deadline(self.d):
            remove_condition(status, PROGRESSING)
        current = get_condition(self.d.get("status") or {}, PROGRESSING)
        complete = int(status.get("replicas") or 0) == int(status.get("updatedReplicas") or 0) and \
            current is not None and current.get("reason") == NEW_RS_AVAILABLE
        name = new_rs["metadata"]["name"] if new_rs is not None else ""
        if has_progress_deadline(self.d) and not complete:
            if deployment_complete(self.d, status):
                message = f'ReplicaSet "{name}" has successfully progressed.' if new_rs is not None else \
                    f'Deployment "{self.name}" has successfully progressed.'
                set_condition(status, new_condition(PROGRESSING, "True", NEW_RS_AVAILABLE, message, self.now))
            elif deployment_progressing(self.d, status):
                message = f'ReplicaSet "{name}" is progressing.' if new_rs is not None else \
                    f'Deployment "{self.name}" is progressing.'
                condition = new_condition(PROGRESSING, "True", RS_UPDATED, message, self.now)
                existing = get_condition(status, PROGRESSING)
                if existing is not None:
                    if existing.get("status") == "True":
                        condition["lastTransitionTime"] = existing.get("lastTransitionTime", self.now)
                    remove_condition(status, PROGRESSING)
                status.setdefault("conditions", []).append(condition)
            elif deployment_timed_out(self.d, status, self.now):
                set_condition(status, new_condition(PROGRESSING, "False", TIMED_OUT,
                                                    f'ReplicaSet "{name}" has timed out progressing.', self.now))
        # A ReplicaSet that cannot make its pods (a missing service account...) says so on the Deployment: the new
        # one's ReplicaFailure first, else an old one's (progress.go, getReplicaFailures).
        failure = replica_failure(new_rs, all_rss)
        if failure is not None:
            set_condition(status, failure)
        else:
            remove_condition(status, REPLICA_FAILURE)
        self.d["status"] = status
        progressing = get_condition(status, PROGRESSING)
        if has_progress_deadline(self.d) and progressing is not None and \
                progressing.get("reason") not in (NEW_RS_AVAILABLE, TIMED_OUT) and progressing.get("status") == "True":
            deadline = int((self.d.get("spec") or {}).get("progressDeadlineSeconds") or 0)
            self.requeue_after = max(0.0, _seconds(progressing["lastUpdateTime"]) + deadline - _seconds(self.now)) + 1
        return self


def _set_min_ready(rs: dict[str, Any], seconds: int) -> None:
    if seconds:
        rs["spec"]["minReadySeconds"] = seconds
    else:
        rs["spec"].pop("minReadySeconds", None)


def sync(deployment: Mapping[str, Any], replica_sets: list[Mapping[str, Any]], now: str,
         taken: Callable[[str], bool] = lambda name: False) -> Rollout:
    """One sync of ``deployment`` owning ``replica_sets`` (``taken``: is this ReplicaSet name another's in
    its namespace); the inputs are not changed."""
    return Rollout(_writable(deployment), [_writable(rs) for rs in replica_sets], now, taken).sync_deployment()


def _writable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of what the planner changes (metadata and its annotations, the spec's top level, the
    status); the rest (the pod template above all) stays the caller's objects, which nothing here
    changes: the versions the store keeps then share them."""
    meta = dict(obj.get("metadata") or {})
    if "annotations" in meta:
        meta["annotations"] = dict(meta["annotations"])
    out = {**obj, "metadata": meta, "spec": dict(obj.get("spec") or {})}
    if "status" in obj:
        out["status"] = json_copy(obj["status"])
    return out
