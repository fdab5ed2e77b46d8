"""The objects a fresh cluster has before anyone applies anything, put in the store at start.

The core builds them (``cluster.build.build_cluster`` of no documents: namespaces, nodes,
``default/kubernetes``, kube-dns and its CoreDNS pods, kindnet, kube-proxy, the control-plane's
static pods, ingress-nginx and its IngressClass), so the live cluster starts as ``knetsim get``
shows one offline. What the store already has is left alone: its controllers keep it.
"""

from __future__ import annotations

import json
from typing import Any

from ..cluster.build import build_cluster
from ..cluster.config import ClusterConfig
from ..model.objects import stable_uid
from .customresources import builtin_objects
from .store import Key, Store, Write

# Owners before what they own, so that a watcher never sees a pod before its ReplicaSet.
ORDER = ("Namespace", "Node", "IngressClass", "Service", "Deployment", "StatefulSet", "DaemonSet", "Job",
         "ReplicaSet", "Pod", "EndpointSlice")


def system_objects(config: ClusterConfig, now: str) -> dict[Key, dict[str, Any]]:
    state = build_cluster([], config).state
    objects = [*state.namespaces.values(), *state.nodes.values(), *state.ingress_classes.values(),
               *state.services.values(), *state.pods.values(), *state.endpoint_slices.values(),
               *state.workloads.values(), *state.others.values()]
    out = {}
    for obj in objects:
        key = (obj.kind, obj.namespace, obj.name)
        body = json.loads(json.dumps(obj.raw))
        meta = body.setdefault("metadata", {})
        meta.setdefault("uid", stable_uid(*key))
        meta.setdefault("creationTimestamp", now)
        out[key] = body
    # The CRDs of the custom kinds knetsim defines, as a cluster with them installed lists them.
    out.update(builtin_objects(now))
    return out


def bootstrap(store: Store, config: ClusterConfig, now: str) -> None:
    """Write the system objects the store does not have (all of them into an empty store). An object whose
    owner the store already has is the owner's controller's to make: a state directory written by an older
    knetsim keeps its Deployments, and their controllers decide their ReplicaSets and pods (no second set).
    A system workload nobody has edited gets this version's pod template (kind's ingress-nginx flags, say);
    its controller then rolls it out as it would any template change."""
    rank = {kind: i for i, kind in enumerate(ORDER)}
    missing: dict[Key, dict[str, Any]] = {}
    left_to_owner: set[tuple[str, str, str]] = set()
    for key, body in sorted(system_objects(config, now).items(), key=lambda kv: (rank.get(kv[0][0], 99), kv[0])):
        if key in store.objects:
            left_to_owner.add(key)
            renewed = _renewed_template(store.objects[key], body) or _renewed_definition(store.objects[key], body)
            if renewed is not None:
                missing[key] = renewed
            continue
        owners = {(str(ref.get("kind")), key[1], str(ref.get("name")))
                  for ref in body["metadata"].get("ownerReferences") or []}
        if owners & left_to_owner:
            left_to_owner.add(key)
            continue
        missing[key] = body
    if missing:
        store.commit([Write(k, v, "system") for k, v in missing.items()])


WORKLOADS = ("Deployment", "DaemonSet", "StatefulSet")


def _renewed_template(stored: Any, current: dict[str, Any]) -> dict[str, Any] | None:
    """The stored system workload with the current pod template, when it is still the system's own
    (no client wrote it) and its template differs; None otherwise."""
    if stored.managed != "system" or current.get("kind") not in WORKLOADS:
        return None
    template = (current.get("spec") or {}).get("template")
    old_spec = stored.body.get("spec") or {}
    if template is None or old_spec.get("template") == template:
        return None
    meta = dict(stored.body["metadata"])
    meta["generation"] = int(meta.get("generation") or 1) + 1
    return {**stored.body, "metadata": meta, "spec": {**old_spec, "template": template}}


def _renewed_definition(stored: Any, current: dict[str, Any]) -> dict[str, Any] | None:
    """The built-in CRD of this version when the stored one is an older version's built-in CRD; a client's CRD
    (it took over its kind) is left alone."""
    if stored.managed != "system" or current.get("kind") != "CustomResourceDefinition":
        return None
    if _without_metadata(stored.body) == _without_metadata(current):
        return None
    meta = {**stored.body["metadata"], **{k: v for k, v in current["metadata"].items() if k in ("annotations",
                                                                                                  "labels")}}
    meta["generation"] = int(meta.get("generation") or 1) + 1
    return {**current, "metadata": meta}


def _without_metadata(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "metadata"}
