"""Claims and volumes live: kube-controller-manager's PV controller with kind's local-path provisioner, and its
pvc-protection controller.

The decisions are the core's (``cluster.storage``: ``plan_claim`` binds a claim, makes its volume on its first
consumer's node, or says why it waits; ``plan_volume`` reclaims a volume whose claim is gone), as the offline
build makes them. A claim being deleted keeps its finalizer while a running pod mounts it (``kubectl get pvc``
shows it Terminating). A claim is looked at again when it changes, when a pod that mounts it is bound to a node
(its first consumer) or goes, when a StorageClass comes or goes, and when a volume it names does; a volume when
its claim goes. An event is recorded when what the claim waits for changes, not at every look.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..apiserver.store import Change, Key
from ..cluster.storage import Volumes, claim_in_use, claim_names, claimed, plan_claim, plan_volume
from ..cluster.workloadstatus import TERMINAL, phase
from ..model.objects import stable_uid
from ..model.storage import PVC_PROTECTION
from ..model.strategy import apply_defaults
from .base import Controller, being_deleted

CLAIM, VOLUME, CLASS = "PersistentVolumeClaim", "PersistentVolume", "StorageClass"


class PersistentVolumeController(Controller):
    name = "persistentvolume-controller"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The last event told of each claim (by uid): said again only when it changes.
        self._told: dict[str, tuple[str, str, str]] = {}

    def handle(self, change: Change) -> Iterable[Key]:
        meta = change.obj.get("metadata") or {}
        if change.kind == CLAIM:
            key: Key = (CLAIM, str(meta.get("namespace") or ""), str(meta["name"]))
            if change.type == "DELETED":
                self._told.pop(str(meta.get("uid") or ""), None)
                return [*self._volumes_of(key[1], key[2]), key]
            return [key]
        if change.kind == "Pod":
            namespace = str(meta.get("namespace") or "")
            claims = [(CLAIM, namespace, name) for name in claim_names(change.obj.get("spec") or {})]
            if change.type == "DELETED" or phase(change.obj) in TERMINAL:
                # A claim being deleted may have waited for this pod (pvc-protection).
                return [k for k in claims if being_deleted(self.informer.get(k))]
            new = change.new or {}
            if not (new.get("spec") or {}).get("nodeName") or ((change.old or {}).get("spec") or {}).get("nodeName"):
                return ()  # only a pod just bound to a node is a claim's first consumer
            return claims
        if change.kind == CLASS:
            return [k for k in self.informer.keys(CLAIM) if not ((self.informer.get(k) or {}).get("spec") or {})
                    .get("volumeName")]
        if change.kind == VOLUME:
            ref = ((change.obj.get("spec") or {}).get("claimRef")) or {}
            out: list[Key] = [] if change.type == "DELETED" else [(VOLUME, "", str(meta["name"]))]
            if ref.get("name"):
                out.append((CLAIM, str(ref.get("namespace") or ""), str(ref["name"])))
            return out
        return ()

    def resync(self) -> Iterable[Key]:
        return [*self.informer.keys(CLAIM), *self.informer.keys(VOLUME)]

    def _volumes_of(self, namespace: str, name: str) -> list[Key]:
        out = []
        for key in self.informer.keys(VOLUME):
            ref = ((self.informer.get(key) or {}).get("spec") or {}).get("claimRef") or {}
            if (ref.get("namespace"), ref.get("name")) == (namespace, name):
                out.append(key)
        return out

    def _view(self, namespace: str) -> Volumes:
        def bodies(kind: str, ns: str | None = None) -> list[Mapping[str, Any]]:
            return [b for k in self.informer.keys(kind) if (ns is None or k[1] == ns)
                    and (b := self.informer.get(k)) is not None]
        return Volumes.of(bodies(CLAIM, namespace), bodies(CLASS), bodies(VOLUME))

    def sync(self, key: Key) -> None:
        if key[0] == VOLUME:
            self._sync_volume(key)
            return
        claim = self.informer.get(key)
        if claim is None:
            return
        volumes = self._view(key[1])
        pods = [b for name in self.informer.names("Pod", key[1])
                if (b := self.informer.get(("Pod", key[1], name))) is not None]
        batch = self.batch()
        if being_deleted(claim):
            # The pvc-protection controller: the claim goes once no running pod mounts it.
            if PVC_PROTECTION in (claim["metadata"].get("finalizers") or []) and not claim_in_use(claim, pods):
                batch.finalizer_done(key, PVC_PROTECTION)
                batch.commit()
            return
        plan = plan_claim(claim, volumes, pods)
        if plan.volume is not None:
            body = apply_defaults(plan.volume)
            body["metadata"].update(uid=stable_uid(VOLUME, "", body["metadata"]["name"]),
                                    creationTimestamp=batch.now)
            batch.put((VOLUME, "", body["metadata"]["name"]), body)
        if plan.claim is not None:
            bound_to = str((plan.claim.get("spec") or {}).get("volumeName") or "")
            existing = volumes.volumes.get(bound_to)
            if plan.volume is None and existing is not None and not (existing.get("spec") or {}).get("claimRef"):
                # A volume that was there, now this claim's.
                batch.put((VOLUME, "", bound_to), claimed(existing, plan.claim))
            batch.put(key, {k: v for k, v in plan.claim.items() if k != "status"} | {"status": claim.get("status")})
            batch.put_status(key, plan.claim)
        uid = str((claim.get("metadata") or {}).get("uid") or "")
        if plan.event is not None and self._told.get(uid) != plan.event:
            self._told[uid] = plan.event
            kind, reason, message = plan.event
            batch.event(claim, reason, message, self.name, type_=kind)
        batch.commit()

    def _sync_volume(self, key: Key) -> None:
        volume = self.informer.get(key)
        if volume is None:
            return
        ref = ((volume.get("spec") or {}).get("claimRef")) or {}
        verdict = plan_volume(volume, self._view(str(ref.get("namespace") or "")))
        if verdict is None:
            return
        batch = self.batch()
        if verdict == "delete":
            batch.delete(key)
        else:
            batch.put_status(key, {**volume, "status": {**(volume.get("status") or {}), "phase": "Released"}})
        batch.commit()
