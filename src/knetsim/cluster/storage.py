"""The cluster's storage as a kind cluster has it: claims, volumes, classes, and what decides between them.

One place decides for the offline build and the live controllers alike:

- **the scheduler's VolumeBinding plugin** (``prefilter``, ``node_reason``): a pod whose claim does not exist, is
  being deleted, or waits unbound for an Immediate class stays Pending with the scheduler's words; a claim bound
  to a volume pinned to a node (local-path's node affinity) pins the pod there;
- **the PV controller with kind's local-path provisioner** (``plan_claim``, ``plan_volume``): a claim of a
  WaitForFirstConsumer class waits for a scheduled pod, then gets a volume ``pvc-<uid>`` on that pod's node and is
  Bound; a claim of a class that does not exist stays Pending (ProvisioningFailed); a volume whose claim is gone
  is deleted (reclaim policy Delete) or Released (Retain).

Upstream facts: kubernetes/kubernetes pkg/scheduler/framework/plugins/volumebinding (volume_binding.go, binder.go:
the reasons), pkg/controller/volume/persistentvolume/pv_controller.go (events, phases, annotations),
rancher/local-path-provisioner provisioner.go (the volume it writes), kind's default StorageClass
(kubernetes-sigs/kind pkg/build/nodeimage/const_storage.go). Words and shapes only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.jsonvalue import json_copy
from ..model.labels import Selector
from ..model.loader import CONTROLLER, Document
from ..model.objects import Node, stable_uid
from ..model.quantity import quantity
from ..model.storage import DEFAULT_CLASS_ANNOTATION, admit_claim, requested_storage
from ..model.strategy import apply_defaults
from .state import ClusterState

LOCAL_PATH = "rancher.io/local-path"
STANDARD = "standard"

# The scheduler's words (volumebinding): PreFilter's, which no node can help, and Filter's, per node.
CLAIM_NOT_FOUND = 'persistentvolumeclaim "{name}" not found'
CLAIM_DELETING = 'persistentvolumeclaim "{name}" is being deleted'
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
NODE_CONFLICT = "node(s) had volume node affinity conflict"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
# The node the scheduler chose for an unbound WaitForFirstConsumer claim (its PreBind writes it on the claim): the
# provisioner makes the volume there, and the claim's other pods may go nowhere else.
SELECTED_NODE = "volume.kubernetes.io/selected-node"

# The PV controller's events on a claim.
WAIT_FOR_CONSUMER = "waiting for first consumer to be created before binding"
NO_CLASS_NO_VOLUME = "no persistent volumes available for this claim and no storage class is set"


def standard_storage_class() -> dict[str, Any]:
    """kind's default StorageClass: local-path volumes made on the node of the claim's first consumer."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": STANDARD, "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
            "provisioner": LOCAL_PATH, "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer"}


def claim_names(spec: Mapping[str, Any]) -> list[str]:
    """The claims a pod spec mounts, in the order of its volumes."""
    out = []
    for volume in spec.get("volumes") or []:
        name = ((volume or {}).get("persistentVolumeClaim") or {}).get("claimName")
        if name and name not in out:
            out.append(str(name))
    return out


@dataclass
class Volumes:
    """The storage objects the decisions read: claims by (namespace, name), classes and volumes by name."""

    claims: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    classes: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    volumes: dict[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, claims: Iterable[Mapping[str, Any]], classes: Iterable[Mapping[str, Any]],
           volumes: Iterable[Mapping[str, Any]]) -> Volumes:
        return cls({(str(c["metadata"].get("namespace") or ""), str(c["metadata"]["name"])): c for c in claims},
                   {str(c["metadata"]["name"]): c for c in classes},
                   {str(v["metadata"]["name"]): v for v in volumes})

    def delayed(self, claim: Mapping[str, Any]) -> bool:
        """IsDelayBindingMode: the claim's class exists and waits for the first consumer (a missing class is
        Immediate, as upstream reads it)."""
        name = (claim.get("spec") or {}).get("storageClassName") or ""
        found = self.classes.get(name) if name else None
        return bool(found) and found.get("volumeBindingMode") == "WaitForFirstConsumer"


def _deleting(body: Mapping[str, Any]) -> bool:
    return bool((body.get("metadata") or {}).get("deletionTimestamp"))


def prefilter(volumes: Volumes, namespace: str, spec: Mapping[str, Any]) -> str | None:
    """VolumeBinding's PreFilter: why no node can take the pod because of its claims (None: its claims allow it).
    A missing or deleting claim is named at once; unbound claims of an Immediate class are reported together."""
    unbound_immediate = False
    for name in claim_names(spec):
        claim = volumes.claims.get((namespace, name))
        if claim is None:
            return CLAIM_NOT_FOUND.format(name=name)
        if _deleting(claim):
            return CLAIM_DELETING.format(name=name)
        if not (claim.get("spec") or {}).get("volumeName") and not volumes.delayed(claim):
            unbound_immediate = True
    return UNBOUND_IMMEDIATE if unbound_immediate else None


def _affinity_allows(volume: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    terms = ((((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {})
             .get("nodeSelectorTerms")) or []
    if not terms:
        return True
    return any(Selector.from_label_selector({"matchExpressions": t.get("matchExpressions") or []}).matches(labels)
               for t in terms)


def _selected_node(claim: Mapping[str, Any]) -> str | None:
    return ((claim.get("metadata") or {}).get("annotations") or {}).get(SELECTED_NODE)


def node_reason(volumes: Volumes, namespace: str, spec: Mapping[str, Any], node: Node) -> str | None:
    """VolumeBinding's Filter on one node: a bound claim's volume must exist and its node affinity take the node;
    an unbound claim already given a node (another of its pods went there first) takes that node only."""
    for name in claim_names(spec):
        claim = volumes.claims.get((namespace, name)) or {}
        bound = (claim.get("spec") or {}).get("volumeName")
        if not bound:
            selected = _selected_node(claim)
            if selected and selected != node.name:
                return BIND_CONFLICT
            continue
        volume = volumes.volumes.get(str(bound))
        if volume is None:
            return PV_NOT_EXIST
        if not _affinity_allows(volume, node.labels):
            return NODE_CONFLICT
    return None


def claims_to_select(volumes: Volumes, namespace: str, spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The pod's unbound WaitForFirstConsumer claims no node was chosen for yet: the node the pod is bound to
    becomes theirs."""
    out = []
    for name in claim_names(spec):
        claim = volumes.claims.get((namespace, name))
        if claim is not None and not (claim.get("spec") or {}).get("volumeName") and volumes.delayed(claim) \
                and not _selected_node(claim):
            out.append((namespace, name))
    return out


def with_selected_node(claim: Mapping[str, Any], node: str) -> dict[str, Any]:
    meta = dict(claim.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), SELECTED_NODE: node}
    return {**claim, "metadata": meta}


def unschedulable_message(reason: str, nodes: int) -> str:
    """The FailedScheduling message of a pod PreFilter refused: its reason, then preemption's (no victim helps)."""
    return (f"0/{nodes} nodes are available: {reason}. preemption: 0/{nodes} nodes are available: {nodes} "
            "Preemption is not helpful for scheduling.")


# --- the PV controller and the local-path provisioner -------------------------------------------


@dataclass
class ClaimPlan:
    """What the PV controller writes for one claim: the claim's new spec/metadata and status (None: unchanged),
    a volume to create, and an event on the claim (type, reason, message)."""

    claim: dict[str, Any] | None = None
    volume: dict[str, Any] | None = None
    event: tuple[str, str, str] | None = None


def _uid(body: Mapping[str, Any], kind: str) -> str:
    meta = body.get("metadata") or {}
    return str(meta.get("uid") or stable_uid(kind, str(meta.get("namespace") or ""), str(meta["name"])))


def _bound(claim: Mapping[str, Any], volume: Mapping[str, Any], node: str | None = None,
           provisioner: str = "") -> dict[str, Any]:
    """The claim bound to ``volume``: its name in spec.volumeName, the bind annotations, status Bound with the
    volume's size and modes."""
    out = {**claim, "metadata": dict(claim.get("metadata") or {}), "spec": dict(claim.get("spec") or {})}
    annotations = dict(out["metadata"].get("annotations") or {})
    annotations.update({"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes"})
    if provisioner:
        annotations.update({"volume.beta.kubernetes.io/storage-provisioner": provisioner,
                            "volume.kubernetes.io/storage-provisioner": provisioner})
    if node:
        annotations[SELECTED_NODE] = node
    out["metadata"]["annotations"] = annotations
    out["spec"]["volumeName"] = volume["metadata"]["name"]
    vspec = volume.get("spec") or {}
    out["status"] = {"phase": "Bound", "accessModes": list(vspec.get("accessModes") or []),
                     "capacity": dict(vspec.get("capacity") or {})}
    return out


def _fits(claim: Mapping[str, Any], volume: Mapping[str, Any]) -> bool:
    """A volume a claim may bind to: free (or reserved for it), of its class and mode, large enough, and offering
    every access mode it asks for."""
    spec, vspec = claim.get("spec") or {}, volume.get("spec") or {}
    ref = vspec.get("claimRef")
    meta = claim.get("metadata") or {}
    if ref and ((ref.get("name"), ref.get("namespace") or "default") != (meta.get("name"),
                                                                          meta.get("namespace") or "default")
                or (ref.get("uid") and ref.get("uid") != _uid(claim, "PersistentVolumeClaim"))):
        return False  # another claim's, or a claim of this name that was deleted (a Released volume keeps it)
    if ((volume.get("status") or {}).get("phase") or "Available") not in ("Available", "Pending", "Bound"):
        return False
    if (vspec.get("storageClassName") or "") != (spec.get("storageClassName") or ""):
        return False
    if (vspec.get("volumeMode") or "Filesystem") != (spec.get("volumeMode") or "Filesystem"):
        return False
    want, have = quantity(requested_storage(claim) or 0), quantity(
        (vspec.get("capacity") or {}).get("storage") or 0)
    if want is None or have is None or have < want:
        return False
    return set(spec.get("accessModes") or []) <= set(vspec.get("accessModes") or [])


def _provisioned(claim: Mapping[str, Any], cls: Mapping[str, Any], node: str) -> dict[str, Any]:
    """The volume local-path-provisioner writes for a claim: a host directory on ``node``, pinned to it."""
    meta, spec = claim.get("metadata") or {}, claim.get("spec") or {}
    name = f"pvc-{_uid(claim, 'PersistentVolumeClaim')}"
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": LOCAL_PATH,
                                                   "local.path.provisioner/selected-node": node}},
        "spec": {"accessModes": list(spec.get("accessModes") or []),
                 "capacity": {"storage": requested_storage(claim)},
                 "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": meta["name"],
                              "namespace": meta.get("namespace") or "default",
                              "uid": _uid(claim, "PersistentVolumeClaim")},
                 "hostPath": {"path": f"/var/local-path-provisioner/{name}_{meta.get('namespace') or 'default'}_"
                                      f"{meta['name']}", "type": "DirectoryOrCreate"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}},
                 "persistentVolumeReclaimPolicy": cls.get("reclaimPolicy") or "Delete",
                 "storageClassName": (cls.get("metadata") or {}).get("name"),
                 "volumeMode": spec.get("volumeMode") or "Filesystem"},
        "status": {"phase": "Bound"},
    }


def claim_in_use(claim: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> bool:
    """Does a pod bound to a node and not finished mount the claim (the pvc-protection controller's podUsesPVC: the
    kubelet never starts a pod whose claim is being deleted, so an unscheduled pod does not hold it)?"""
    meta = claim.get("metadata") or {}
    return any((p.get("metadata") or {}).get("namespace", "default") == (meta.get("namespace") or "default")
               and (p.get("spec") or {}).get("nodeName")
               and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
               and meta.get("name") in claim_names(p.get("spec") or {}) for p in pods)


def first_consumer_node(claim: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> str | None:
    """The node of the first scheduled pod (by name) that mounts the claim: where a WaitForFirstConsumer volume
    is made."""
    meta = claim.get("metadata") or {}
    nodes = sorted((str(p["metadata"]["name"]), str(p["spec"]["nodeName"])) for p in pods
                   if (p.get("metadata") or {}).get("namespace", "default") == (meta.get("namespace") or "default")
                   and (p.get("spec") or {}).get("nodeName") and meta.get("name") in claim_names(p.get("spec") or {}))
    return nodes[0][1] if nodes else None


def plan_claim(claim: Mapping[str, Any], volumes: Volumes, pods: Iterable[Mapping[str, Any]]) -> ClaimPlan:
    """syncClaim with the provisioner: bind the claim to a volume that fits, or make one, or say why it waits."""
    if _deleting(claim):
        return ClaimPlan()
    spec, status = claim.get("spec") or {}, claim.get("status") or {}
    if spec.get("volumeName"):
        volume = volumes.volumes.get(str(spec["volumeName"]))
        if volume is None:
            if status.get("phase") == "Lost":
                return ClaimPlan()
            lost = {**claim, "status": {**status, "phase": "Lost"}}
            return ClaimPlan(lost, event=("Warning", "ClaimLost",
                                          "Bound claim has lost its PersistentVolume. Data on the volume is lost!"))
        if status.get("phase") == "Bound":
            return ClaimPlan()
        return ClaimPlan(_bound(claim, volume))
    class_name = spec.get("storageClassName") or ""
    delayed = volumes.delayed(claim)
    node = (_selected_node(claim) or first_consumer_node(claim, pods)) if delayed else None
    if not delayed or node is not None:
        match = [v for v in sorted(volumes.volumes.values(), key=lambda v: str(v["metadata"]["name"]))
                 if _fits(claim, v) and (node is None or _affinity_allows(v, {"kubernetes.io/hostname": node}))]
        if match:
            return ClaimPlan(_bound(claim, match[0]))
    if not class_name:
        return ClaimPlan(event=("Normal", "FailedBinding", NO_CLASS_NO_VOLUME))
    cls = volumes.classes.get(class_name)
    if cls is None:
        return ClaimPlan(event=("Warning", "ProvisioningFailed",
                                f'storageclass.storage.k8s.io "{class_name}" not found'))
    provisioner = str(cls.get("provisioner") or "")
    if delayed and node is None:
        return ClaimPlan(event=("Normal", "WaitForFirstConsumer", WAIT_FOR_CONSUMER))
    if provisioner != LOCAL_PATH:
        return ClaimPlan(event=("Normal", "ExternalProvisioning",
                                f"Waiting for a volume to be created either by the external provisioner "
                                f"'{provisioner}' or manually by the system administrator. If volume creation is "
                                "delayed, please verify that the provisioner is running and correctly registered."))
    if node is None:
        # local-path makes a directory on a node: a claim that names none (an Immediate class) cannot be served.
        return ClaimPlan(event=("Warning", "ProvisioningFailed",
                                f'failed to provision volume with StorageClass "{class_name}": configuration '
                                "error, no node was specified"))
    volume = _provisioned(claim, cls, node)
    return ClaimPlan(_bound(claim, volume, node, provisioner), volume,
                     ("Normal", "ProvisioningSucceeded",
                      f"Successfully provisioned volume {volume['metadata']['name']}"))


def plan_volume(volume: Mapping[str, Any], volumes: Volumes) -> str | None:
    """syncVolume once its claim is gone: "delete" (reclaim policy Delete), "release" (Retain: the volume stays,
    Released), or None (its claim is there, or it was never claimed)."""
    ref = (volume.get("spec") or {}).get("claimRef")
    if not ref:
        return None
    claim = volumes.claims.get((str(ref.get("namespace") or ""), str(ref.get("name") or "")))
    if claim is not None and (not ref.get("uid") or _uid(claim, "PersistentVolumeClaim") == ref.get("uid")):
        return None
    if (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete":
        return "delete"
    return None if (volume.get("status") or {}).get("phase") == "Released" else "release"


def claimed(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> dict[str, Any]:
    """A volume that already existed, bound to ``claim``: its claimRef and phase Bound."""
    meta = claim.get("metadata") or {}
    out = {**volume, "spec": dict(volume.get("spec") or {}), "status": {**(volume.get("status") or {}),
                                                                         "phase": "Bound"}}
    out["spec"]["claimRef"] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": meta["name"],
                               "namespace": meta.get("namespace") or "default",
                               "uid": _uid(claim, "PersistentVolumeClaim")}
    return out


# --- offline: the build runs the same decisions once, after the scheduler ------------------------


def _stored(body: Mapping[str, Any]) -> bool:
    """Read from a cluster (or its snapshot): its status is the cluster's own, taken as it is, as a pod the cluster
    holds without a node is taken as Pending there (a volume the reader may not list is no reason to call its
    claim Lost)."""
    return bool((body.get("metadata") or {}).get("resourceVersion"))


def offline_volumes(by_kind: Mapping[str, list[Document]]) -> Volumes:
    """The storage objects of an offline build, each new claim through the DefaultStorageClass plugin (in place,
    as the API server stores it)."""
    classes = [d.body for d in by_kind.get("StorageClass", [])]
    for doc in by_kind.get("PersistentVolumeClaim", []):
        if not _stored(doc.body):  # a cluster's claims were admitted there
            admit_claim(doc.body, classes)
    return Volumes.of((d.body for d in by_kind.get("PersistentVolumeClaim", [])), classes,
                      (d.body for d in by_kind.get("PersistentVolume", [])))


def provision_offline(state: ClusterState, by_kind: dict[str, list[Document]], volumes: Volumes,
                      pods: list[Mapping[str, Any]], *, before_scheduling: bool = False) -> None:
    """The PV controller and local-path provisioner over the built pods: claims bound (their documents replaced),
    volumes made or reclaimed; a claim left waiting for a reason of its own is a notice. ``before_scheduling``:
    the claims of Immediate classes only, which the PV controller binds before any pod needs them (so the
    scheduler finds them bound), without notices (the pass after scheduling gives them)."""
    claims = by_kind.get("PersistentVolumeClaim", [])
    pvs = {d.name: d for d in by_kind.get("PersistentVolume", [])}
    # The pods of each claim, found once: 100,000 replicas are not read again for every claim.
    users: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for pod in pods if claims else ():
        for name in claim_names(pod.get("spec") or {}):
            users.setdefault((str((pod.get("metadata") or {}).get("namespace") or "default"), name), []).append(pod)
    for i, doc in enumerate(claims):
        if (before_scheduling and volumes.delayed(doc.body)) or _stored(doc.body):
            continue
        # The scheduler may have chosen the claim's node (its selected-node annotation, kept in ``volumes``).
        body = dict(volumes.claims.get((doc.namespace, doc.name)) or doc.body)
        plan = plan_claim(body, volumes, users.get((doc.namespace or "default", doc.name), []))
        if plan.volume is not None:
            pvs[plan.volume["metadata"]["name"]] = Document(CONTROLLER, apply_defaults(plan.volume))
        if plan.claim is not None:
            claims[i] = Document(doc.source, plan.claim)
            volumes.claims[(doc.namespace, doc.name)] = plan.claim
            name = str(plan.claim["spec"].get("volumeName") or "")
            if plan.volume is None and name in pvs and plan.claim["status"].get("phase") == "Bound":
                pvs[name] = Document(pvs[name].source, claimed(pvs[name].body, plan.claim))
            if name in pvs:
                volumes.volumes[name] = pvs[name].body
        if plan.event is not None and plan.event[0] == "Warning" and not before_scheduling:
            state.warn(plan.event[1], plan.event[2], f"PersistentVolumeClaim {doc.namespace}/{doc.name}", doc.source)
    for name, doc in sorted(pvs.items()):
        if before_scheduling:
            break
        if _stored(doc.body):
            continue
        verdict = plan_volume(doc.body, volumes)
        if verdict == "delete":
            del pvs[name]
        elif verdict == "release":
            pvs[name] = Document(doc.source, {**doc.body, "status": {**(doc.body.get("status") or {}),
                                                                     "phase": "Released"}})
    if pvs:
        by_kind["PersistentVolume"] = [pvs[n] for n in sorted(pvs)]


# --- a StatefulSet's claims: one per volumeClaimTemplate and pod ------------------------------------


def statefulset_claims(sts: Mapping[str, Any], pod: str) -> list[dict[str, Any]]:
    """The claims the StatefulSet controller makes for its pod ``pod`` (getPersistentVolumeClaims): each
    volumeClaimTemplate as ``<template>-<pod>`` in the set's namespace, labelled with the template's labels and the
    set's selector."""
    spec, meta = sts.get("spec") or {}, sts.get("metadata") or {}
    match = (spec.get("selector") or {}).get("matchLabels") or {}
    out = []
    for template in spec.get("volumeClaimTemplates") or []:
        tmeta = template.get("metadata") or {}
        claim_meta: dict[str, Any] = {"name": f"{tmeta.get('name')}-{pod}",
                                      "namespace": meta.get("namespace") or "default",
                                      "labels": {**(tmeta.get("labels") or {}), **match}}
        if tmeta.get("annotations"):
            claim_meta["annotations"] = dict(tmeta["annotations"])
        out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": claim_meta,
                    "spec": json_copy(template.get("spec") or {})})
    return out


def mount_statefulset_claims(pod: dict[str, Any], sts: Mapping[str, Any]) -> None:
    """The StatefulSet controller's updateStorage: each volumeClaimTemplate is the pod's volume of its name, its
    own claim (a template volume of the same name is replaced)."""
    templates = (sts.get("spec") or {}).get("volumeClaimTemplates") or []
    if not templates:
        return
    spec = pod.setdefault("spec", {})
    volumes = [v for v in spec.get("volumes") or []
               if v.get("name") not in {(t.get("metadata") or {}).get("name") for t in templates}]
    for template in templates:
        name = (template.get("metadata") or {}).get("name")
        volumes.append({"name": name, "persistentVolumeClaim": {"claimName": f"{name}-{pod['metadata']['name']}"}})
    spec["volumes"] = volumes


def add_claims(by_kind: dict[str, list[Document]], claims: Iterable[dict[str, Any]]) -> None:
    """The claims controllers made (a StatefulSet's), beside those given: one already there is kept, as the
    controller only creates a claim that does not exist."""
    docs = by_kind.setdefault("PersistentVolumeClaim", [])
    have = {(d.namespace, d.name) for d in docs}
    for claim in claims:
        key = (str(claim["metadata"]["namespace"]), str(claim["metadata"]["name"]))
        if key not in have:
            have.add(key)
            docs.append(Document(CONTROLLER, apply_defaults(claim)))
    docs.sort(key=lambda d: (d.namespace, d.name))
    if not docs:
        del by_kind["PersistentVolumeClaim"]
