"""The StatefulSet controller, as far as networking needs it: pods ``<name>-<ordinal>`` with their
hostname and subdomain (the headless Service's DNS names), created together as the offline core
creates them (not one by one as OrderedReady would), scaled down from the highest ordinal. Template
changes are not rolled out (the pods keep the template they were made from).

A sync creates or deletes at most ``BURST`` pods, as the ReplicaSet controller does: upstream creates
a StatefulSet's pods one at a time (OrderedReady) or in slow-start batches (Parallel), so a replica
count typed with three zeros too many never lands as one write of 100,000 pods there either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..apiserver.store import Key
from ..cluster.workloadstatus import is_active, stateful_set_status
from .base import Batch
from .podowner import PodOwner


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
                self.create_pod(sts, pod, batch)
            gone = set(plan.surplus)
            for victim in plan.surplus:
                namespace, _, name = victim.partition("/")
                self.delete_pod(sts, namespace, name, batch)
        kept = [p for p in active if f"{p['metadata'].get('namespace', '')}/{p['metadata']['name']}" not in gone]
        status = stateful_set_status(sts, kept)
        self.write_status(key, sts, status, batch)

    def created_message(self, owner: Mapping[str, Any], pod: str) -> str:
        return f"create Pod {pod} in StatefulSet {owner['metadata']['name']} successful"

    def deleted_message(self, owner: Mapping[str, Any], pod: str) -> str:
        return f"delete Pod {pod} in StatefulSet {owner['metadata']['name']} successful"
