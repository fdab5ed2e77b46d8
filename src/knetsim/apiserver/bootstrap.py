"""The objects a fresh cluster has before anyone applies anything, written at start through the registry.

What a kind cluster's installers declare (``cluster.system.system_manifests``: namespaces, nodes,
``default/kubernetes`` and its EndpointSlice, kube-dns, the CoreDNS Deployment, the kindnet and
kube-proxy DaemonSets, the control plane's static pods, ingress-nginx and its IngressClass) is
created through the same write path as a client's objects (decode, strategy, defaults, validation,
allocation of the fixed ClusterIPs), as a system writer; the controllers then make the rest — the
ReplicaSets, the pods, their addresses, the EndpointSlices — as they would for anyone's Deployment.
The offline core builds the same declarations into the same objects, so the live cluster starts as
``knetsim get`` shows one offline.

What the store already has is left alone (its controllers keep it), except that a system workload
nobody has edited gets this version's pod template (kind's ingress-nginx flags, say); its controller
then rolls it out as it would any template change.
"""

from __future__ import annotations

from typing import Any

from ..cluster.system import install_phase, system_manifests
from ..model.admission import FieldValidation
from ..model.jsonvalue import json_copy
from ..model.strategy import apply_defaults
from .customresources import builtin_writes
from .registry import Registry, Target, WriteOptions, commit_batch, storage_version
from .resources import BY_KIND
from .store import Stored, Write

# Namespaces and nodes before what lives in and on them; Services before what they select.
ORDER = ("Namespace", "Node", "IngressClass", "Service", "EndpointSlice", "Deployment", "StatefulSet", "DaemonSet",
         "Job", "Pod")
SYSTEM = WriteOptions(FieldValidation.STRICT, managed="system")
WORKLOADS = ("Deployment", "DaemonSet", "StatefulSet")


PHASES = (0, 1, 2)  # cluster.system.install_phase: control plane, workers join, ingress-nginx applied


def bootstrap(registry: Registry, phase: int) -> None:
    """Create the declared system objects of one install phase the store does not have, in one
    transaction on disk. The daemon runs the controllers between phases, as time passes between them
    on kind (the add-ons that tolerate the control plane land there; addresses follow in that order)."""
    store, config = registry.store, registry.config
    rank = {kind: i for i, kind in enumerate(ORDER)}
    manifests = sorted((body for body in system_manifests(config) if install_phase(body) == phase),
                       key=lambda body: (rank.get(body["kind"], len(ORDER)), body["metadata"].get("namespace", ""),
                                         body["metadata"]["name"]))
    writes: list[Write] = []
    for body in manifests:
        r = BY_KIND[body["kind"]]
        namespace = body["metadata"].get("namespace", "") if r.namespaced else ""
        key = (r.kind, namespace, body["metadata"]["name"])
        stored = store.get(key)
        if stored is not None:
            renewed = _renewed_template(stored, body)
            if renewed is not None:
                writes.append(Write(key, renewed, "system"))
            continue
        # Each in turn, so a later one sees the earlier (a namespace exists, a ClusterIP is held); one
        # transaction on disk for all of them (the controllers' batching).
        prepared = registry.prepare_create(Target(r, namespace, "", ""), json_copy(body), SYSTEM)
        commit_batch(store, [prepared.write], by="bootstrap")
        prepared.finish(committed=True)
    if phase == PHASES[0]:  # the control plane serves the custom kinds' CRDs from the start
        writes.extend(builtin_writes(store, registry.clock()))
    if writes:
        commit_batch(store, writes, by="bootstrap")
    store.flush()


def _renewed_template(stored: Stored, current: dict[str, Any]) -> dict[str, Any] | None:
    """The stored system workload with the current pod template, when it is still the system's own
    (no client wrote it) and its template differs; None otherwise."""
    if stored.managed != "system" or current.get("kind") not in WORKLOADS:
        return None
    template = (apply_defaults(current).get("spec") or {}).get("template")
    old_spec = stored.body.get("spec") or {}
    if template is None or old_spec.get("template") == template:
        return None
    meta = dict(stored.body["metadata"])
    meta["generation"] = int(meta.get("generation") or 1) + 1
    return {**stored.body, "apiVersion": storage_version(BY_KIND[current["kind"]]), "metadata": meta,
            "spec": {**old_spec, "template": template}}
