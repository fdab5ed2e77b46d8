"""The Deployment controller's plumbing: what wakes a Deployment, and committing its rollout.

The decisions are ``rollout.sync`` (a planner over copies); this claims the ReplicaSets (orphans
matching the selector adopted, as after ``kubectl delete deploy --cascade=orphan`` and a new
apply), writes what the plan changed as one batch (a ReplicaSet whose replicas change gets a new
generation, as the API server gives it) with the ScalingReplicaSet events, and comes back at the
progress deadline of a rollout that stopped moving.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..apiserver.store import Change, Key
from ..cluster import rollout
from .base import Controller, being_deleted, status_only
from .claim import claim
from .informer import controller_ref, key_of


class DeploymentController(Controller):
    name = "deployment-controller"

    def handle(self, change: Change) -> Iterable[Key]:
        if change.kind == "Deployment":
            # Its own status and revision writes ask nothing new of it.
            return [] if status_only(change, (rollout.REVISION,)) else [key_of(change.kind, change.obj)]
        if change.kind != "ReplicaSet":
            return []
        keys: list[Key] = []
        new = change.new if change.type != "DELETED" else None
        for body in (change.old, new):
            if body is None:
                continue
            ref = controller_ref(body)
            if ref is not None:
                if ref.get("kind") == "Deployment" and (key := self.informer.by_uid(str(ref.get("uid")))):
                    keys.append(key)
            elif body is new:
                meta = body.get("metadata") or {}
                namespace = str(meta.get("namespace") or "")
                keys += [("Deployment", namespace, name) for name in
                         self.informer.selecting("Deployment", namespace, meta.get("labels") or {})]
        return keys

    def resync(self) -> Iterable[Key]:
        return self.informer.keys("Deployment")

    def sync(self, key: Key) -> None:
        deployment = self.informer.get(key)
        selector = self.informer.selector(key)
        if deployment is None or selector is None or selector.empty or being_deleted(deployment):
            # Gone or going (the garbage collector takes its ReplicaSets), or selecting everything: refused upstream.
            return
        batch = self.batch()
        owned, claims = claim(self.informer, deployment, "apps/v1", "ReplicaSet", selector)
        for k, body in claims:
            batch.put(k, body)
        mine = {rs["metadata"]["name"] for rs in owned}

        def taken(name: str) -> bool:
            return name not in mine and ("ReplicaSet", key[1], name) in self.store.objects
        plan = rollout.sync(deployment, owned, batch.now, taken)
        by_name = {rs["metadata"]["name"]: rs for rs in plan.rss}
        namespace = key[1]
        for name in plan.created:
            rs = by_name[name]
            rs["metadata"].update(uid=batch.new_uid("ReplicaSet", namespace, name), creationTimestamp=batch.now,
                                  generation=1)
            batch.put(("ReplicaSet", namespace, name), rs)
        for name in plan.updated:
            rs = by_name[name]
            before = self.informer.get(("ReplicaSet", namespace, name)) or {}
            if rs.get("spec") != before.get("spec"):
                rs["metadata"]["generation"] = int(rs["metadata"].get("generation") or 1) + 1
            batch.put(("ReplicaSet", namespace, name), rs)
        for name in plan.deleted:
            batch.delete(("ReplicaSet", namespace, name))
        if plan.d != deployment:
            # The revision annotation rides with the status: upstream writes both with UpdateStatus
            # (pkg/controller/deployment/sync.go, getNewReplicaSet and syncDeploymentStatus), and the Deployment's
            # status strategy takes the annotations (not the labels) from it.
            batch.put_status(key, plan.d)
        for type_, reason, message in plan.events:
            batch.event(plan.d, reason, message, self.name, type_=type_)
        batch.commit()
        if plan.requeue_after is not None:
            self.ctx.enqueue_after(self, key, plan.requeue_after)
