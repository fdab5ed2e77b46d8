"""The StatefulSet controller, as far as networking needs it: pods ``<name>-<ordinal>`` with their
hostname and subdomain (the headless Service's DNS names), created together as the offline core
creates them (not one by one as OrderedReady would), scaled down from the highest ordinal. Template
changes are not rolled out (the pods keep the template they were made from). Each pod's claims of the set's
volumeClaimTemplates (``<template>-<pod>``) are created before it, if they do not exist, and stay when the set
scales down or goes (the default retention policy, Retain).

A sync creates or deletes at most ``BURST`` pods, as the ReplicaSet controller does: upstream creates
a StatefulSet's pods one at a time (OrderedReady) or in slow-start batches (Parallel), so a replica
count typed with three zeros too many never lands as one write of 100,000 pods there either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..apiserver.errors import ApiError
from ..apiserver.registry import Target, WriteOptions
from ..apiserver.resources import BY_KIND
from ..apiserver.store import Key
from ..cluster.storage import statefulset_claims
from ..cluster.workloadstatus import is_active, stateful_set_status
from .base import Batch
from .podowner import PodOwner

CLAIM = "PersistentVolumeClaim"
AS_CONTROLLER = WriteOptions(managed="controller", field_manager="kube-controller-manager")


class StatefulSetController(PodOwner):
    name = "statefulset-controller"
    kind = "StatefulSet"

    def manage(self, key: Key, sts: dict[str, Any], pods: list[dict[str, Any]], batch: Batch) -> None:
        active = [p for p in pods if is_active(p)]
        want = int((sts.get("spec") or {}).get("replicas", 1))
        step = self.burst(key, want - len(active))
        gone: set[str] = set()
        if step:
            # This burst's ordinals: the lowest missing ones up, or the highest surplus ones down.
            this_burst = {**sts, "spec": {**(sts.get("spec") or {}), "replicas": len(active) + step}}
            plan = self.expand(this_burst, active)
            for pod, _source in plan.pods:
                self.create_claims(sts, pod, batch)
                self.create_pod(sts, pod, batch)
            gone = set(plan.surplus)
            for victim in plan.surplus:
                namespace, _, name = victim.partition("/")
                self.delete_pod(sts, namespace, name, batch)
        kept = [p for p in active if f"{p['metadata'].get('namespace', '')}/{p['metadata']['name']}" not in gone]
        status = stateful_set_status(sts, kept)
        self.write_status(key, sts, status, batch)

    def create_claims(self, sts: Mapping[str, Any], pod: Mapping[str, Any], batch: Batch) -> None:
        """The pod's claims of the set's volumeClaimTemplates that do not exist yet, created through the API (the
        DefaultStorageClass and StorageObjectInUseProtection admission plugins run on them), before the pod."""
        registry = self.ctx.registry
        if registry is None:
            return
        name = str(pod["metadata"]["name"])
        for claim in statefulset_claims(sts, name):
            meta = claim["metadata"]
            if self.informer.get((CLAIM, meta["namespace"], meta["name"])) is not None:
                continue
            verb = "create"
            try:
                registry.create(Target(BY_KIND[CLAIM], meta["namespace"], "", ""), claim, AS_CONTROLLER)
            except ApiError as exc:
                if exc.reason == "AlreadyExists":
                    continue
                # recordClaimEvent's words for a failure.
                batch.event(sts, "FailedCreate", f"{verb} Claim {meta['name']} for Pod {name} in StatefulSet "
                            f"{sts['metadata']['name']} failed error: {exc.message}", self.name, type_="Warning")
                continue
            batch.event(sts, "SuccessfulCreate", f"{verb} Claim {meta['name']} Pod {name} in StatefulSet "
                        f"{sts['metadata']['name']} success", self.name)

    def created_message(self, owner: Mapping[str, Any], pod: str) -> str:
        return f"create Pod {pod} in StatefulSet {owner['metadata']['name']} successful"

    def failed_message(self, owner: Mapping[str, Any], pod: str, why: str) -> str:
        # stateful_pod_control.go recordPodEvent: the operation, then the API error.
        return f'create Pod {pod} in StatefulSet {owner["metadata"]["name"]} failed error: pods "{pod}" {why}'

    def deleted_message(self, owner: Mapping[str, Any], pod: str) -> str:
        return f"delete Pod {pod} in StatefulSet {owner['metadata']['name']} successful"
