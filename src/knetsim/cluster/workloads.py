"""Workload controllers, scheduler and pod IPAM: from Deployments & co. to running Pods.

What a person sees in ``kubectl get pods -o wide`` on a kind cluster, reproduced:

* Deployment → ReplicaSet ``<name>-<pod-template-hash>`` → Pods ``<rs>-<5 chars>``;
  StatefulSet → ``<name>-<ordinal>`` with hostname and subdomain; DaemonSet → one Pod per
  node whose taints it tolerates; Job → ``parallelism`` Pods.
* The scheduler honours ``nodeName``, ``nodeSelector``, required node affinity and taints
  (kind's control-plane is tainted, so user Pods land on the workers) and spreads by
  picking the least-loaded feasible node, ties broken by node order.
* Pod IPs come from the node's pod CIDR starting at ``.2`` (``.1`` is the bridge), in
  (namespace, name) order; ``hostNetwork`` Pods take the node IP.

Everything is processed in sorted order, so the result does not depend on input order.
"""

from __future__ import annotations

import heapq
import ipaddress
import json
import socket
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.defaults import admit_service_account
from ..model.labels import Selector
from ..model.listeners import pod_listens
from ..model.loader import BUILTIN, CONTROLLER, Source
from ..model.objects import Node, Pod, content_key, stable_uid
from ..model.programs import waited_names
from . import rollout
from .config import ClusterConfig, cpu_millis
from .containerruns import (
    config_error,
    init_crash,
    init_deadlock,
    init_failed_status,
    init_failure,
    probe_failure,
    restarts,
)
from .hostports import NODE_PORTS_REASON, HostPort
from .hostports import conflicts as host_port_conflict
from .hostports import wanted as wanted_host_ports
from .images import PullError, pull_error
from .naming import pod_template_hash, random_suffix
from .state import Notice
from .storage import (
    Volumes,
    claim_names,
    claims_to_select,
    mount_statefulset_claims,
    node_reason,
    prefilter,
    statefulset_claims,
    unschedulable_message,
    with_selected_node,
)
from .workloadstatus import ConfigMaps, coredns_closed_port, coredns_startup_error, crash_loop_status, is_coredns

READY_ANNOTATION = "knetsim.io/ready"
_WORKLOAD_ORDER = {"Deployment": 0, "ReplicaSet": 1, "ReplicationController": 1, "StatefulSet": 2, "DaemonSet": 3,
                   "Job": 4}
# The kinds whose controllers make pods themselves.
_POD_OWNERS = frozenset({"ReplicaSet", "ReplicationController", "StatefulSet", "DaemonSet", "Job"})
# The API version a workload's pods name their owner by (its ownerReferences).
_OWNER_API = {"Job": "batch/v1", "ReplicationController": "v1"}


@dataclass(slots=True)
class WorkloadInput:
    body: dict[str, Any]
    source: Source
    # Read once: expand_workloads asks each workload's kind, name and namespace ~13 times (sorting, grouping,
    # naming its pods), 240,000 property calls for 18,000 workloads; a workload's identity never changes.
    kind: str = field(init=False)
    name: str = field(init=False)
    namespace: str = field(init=False)

    def __post_init__(self) -> None:
        meta = self.body["metadata"]
        self.kind = str(self.body["kind"])
        self.name = str(meta["name"])
        self.namespace = str(meta.get("namespace") or "default")


@dataclass(slots=True)
class WorkloadResult:
    pods: list[tuple[dict[str, Any], Source]] = field(default_factory=list)
    workloads: list[tuple[dict[str, Any], Source]] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    # "ns/name" of existing pods a controller would delete (more pods than replicas).
    surplus: list[str] = field(default_factory=list)
    # The claims of the new StatefulSet pods (their volumeClaimTemplates), made if they do not exist.
    claims: list[dict[str, Any]] = field(default_factory=list)
    # (ReplicaSet, its Deployment) of each ReplicaSet made, whose replica annotations were left to the caller
    # (expand_workloads with annotate=False).
    unannotated: list[tuple[dict[str, Any], Mapping[str, Any]]] = field(default_factory=list)


def annotate_replica_set(rs: dict[str, Any], deployment: Mapping[str, Any]) -> None:
    """As the Deployment controller annotates its ReplicaSets: desired replicas, and what a surge may reach."""
    desired = rollout.spec_replicas(deployment)
    rollout.set_replicas_annotations(rs, desired, desired + rollout.max_surge(deployment))


def _fresh_names(w: WorkloadInput, count: int, taken: set[str]) -> list[str]:
    """``count`` new ``<owner>-<5 chars>`` names, skipping those already in use (scale-up next to survivors)."""
    names: list[str] = []
    chosen: set[str] = set()  # a list's `in` made 100,000 replicas quadratic
    i = 0
    while len(names) < count:
        name = f"{w.name}-{random_suffix(w.namespace, w.name, str(i))}"
        if name not in taken and name not in chosen:
            names.append(name)
            chosen.add(name)
        i += 1
    return names


def _surplus(existing: list[dict[str, Any]], replicas: int) -> list[str]:
    """Which pods a ReplicaSet deletes on scale-down: not-ready ones first, then the youngest."""
    extra = len(existing) - replicas
    if extra <= 0:
        return []

    def ready(body: dict[str, Any]) -> bool:
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in (body.get("status") or {}).get("conditions") or [])

    def age_key(body: dict[str, Any]) -> tuple[str, str]:
        return (body["metadata"].get("creationTimestamp") or "", body["metadata"]["name"])

    not_ready = sorted((b for b in existing if not ready(b)), key=age_key)
    youngest_first = sorted((b for b in existing if ready(b)), key=age_key, reverse=True)
    victims = (not_ready + youngest_first)[:extra]
    return sorted(f"{b['metadata'].get('namespace', '')}/{b['metadata']['name']}" for b in victims)


def _ordinal(pod_name: str, owner: str) -> int:
    suffix = pod_name[len(owner) + 1:]
    return int(suffix) if suffix.isdigit() else -1


def _owner(kind: str, api_version: str, body: Mapping[str, Any]) -> dict[str, Any]:
    meta = body["metadata"]
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta["name"],
        "uid": meta.get("uid") or stable_uid(kind, meta.get("namespace", ""), meta["name"]),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _owned_by(body: Mapping[str, Any], kind: str, name: str) -> bool:
    for ref in (body.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("kind") == kind and ref.get("name") == name and ref.get("controller", True):
            return True
    return False


def _pod_from_template(template: Mapping[str, Any], name: str, namespace: str, owner: dict[str, Any],
                       extra_labels: Mapping[str, str]) -> dict[str, Any]:
    meta = template.get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    labels.update(extra_labels)
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels, "ownerReferences": [owner]}
    if meta.get("annotations"):
        metadata["annotations"] = dict(meta["annotations"])
    if name != owner["name"]:
        metadata["generateName"] = name[: name.rfind("-") + 1]
    # The spec is the pod's own dict (the scheduler writes nodeName into it); what it holds (containers,
    # volumes) is shared by the pods of one template, which nothing below the controllers changes. A deep
    # copy per pod was the largest single cost of loading 10,000 pods.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": dict(template.get("spec") or {})}
    admit_service_account(pod)  # a controller's pod passes the API server's admission too
    return pod


def _with_label(obj: Mapping[str, Any], outer: str, inner: str | None, hash_: str) -> dict[str, Any]:
    """``obj`` with ``pod-template-hash: hash_`` in its ``outer[.inner]`` map (made when missing), copying only the
    maps on the way to it."""
    holder = dict(obj.get(outer) or {})
    if inner is None:
        holder["pod-template-hash"] = hash_
    else:
        holder[inner] = {**(holder.get(inner) or {}), "pod-template-hash": hash_}
    return {**obj, outer: holder}


def expand_workloads(inputs: Iterable[WorkloadInput], pods: list[tuple[dict[str, Any], Source]],
                     nodes: list[Node], *, annotate: bool = True) -> WorkloadResult:
    """Create the ReplicaSets and Pods the controllers would; existing owned Pods count toward replicas.
    ``annotate=False`` leaves the replica annotations of the ReplicaSets made to the caller (``result.unannotated``,
    ``annotate_replica_set``): the offline build writes them when the workloads are first read."""
    result = WorkloadResult()
    ordered = sorted(inputs, key=lambda w: (w.namespace, _WORKLOAD_ORDER.get(w.kind, 9), w.name))
    existing_rs = {(w.namespace, w.name) for w in ordered if w.kind == "ReplicaSet"}
    deployments_with_rs = {
        (w.namespace, ref.get("name"))
        for w in ordered if w.kind == "ReplicaSet"
        for ref in w.body["metadata"].get("ownerReferences") or []
        if ref.get("kind") == "Deployment" and ref.get("controller", True)
    }
    replica_sets: list[WorkloadInput] = []
    # Deployments of equal templates (bench/calico.py: 9,000 templates of 9 contents) give their ReplicaSets and pods
    # the first one's pod spec, equal to their own to the byte (content_key: marshal's exact types and key order).
    # The pods' containers are then shared dicts whose views (objects.parse_container) are found by identity, not by
    # content once a pod. A share, not a copy, as the pods of one template already share theirs: nothing edits a
    # stored template's spec in place (_pod_from_template gives each pod its own spec dict for what it writes).
    by_content: dict[bytes, tuple[str, Any]] = {}
    for w in ordered:
        if w.kind != "Deployment":
            continue
        spec = w.body["spec"]
        if (w.namespace, w.name) in deployments_with_rs:
            continue  # a snapshot: the Deployment's ReplicaSet is in the input already
        content = content_key(spec["template"])
        known = by_content.get(content) if isinstance(content, bytes) else None
        if known is None:
            known = (pod_template_hash(spec["template"]), spec["template"].get("spec"))
            if isinstance(content, bytes):
                by_content[content] = known
        hash_, pod_spec = known
        rs_name = f"{w.name}-{hash_}"
        if (w.namespace, rs_name) in existing_rs:
            continue
        # The ReplicaSet's template is the Deployment's with the hash label: new dicts on the way to the label,
        # the rest (the pod spec) shared, as the pods share it after (stored objects are never edited in place).
        template = _with_label(spec["template"], "metadata", "labels", hash_)
        if "spec" in template:
            template["spec"] = pod_spec
        selector = _with_label(spec["selector"], "matchLabels", None, hash_)
        labels = dict(template["metadata"]["labels"])
        rs_body = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": rs_name,
                "namespace": w.namespace,
                "labels": labels,
                "annotations": {rollout.REVISION: "1"},
                "ownerReferences": [_owner("Deployment", "apps/v1", w.body)],
            },
            "spec": {"replicas": spec.get("replicas", 1), "selector": selector, "template": template},
        }
        if annotate:
            annotate_replica_set(rs_body, w.body)
        else:
            result.unannotated.append((rs_body, w.body))
        replica_sets.append(WorkloadInput(rs_body, w.source if w.source is BUILTIN else CONTROLLER))

    all_workloads = [w for w in ordered if w.kind != "ReplicaSet"] + sorted(
        [w for w in ordered if w.kind == "ReplicaSet"] + replica_sets, key=lambda w: (w.namespace, w.name)
    )
    owned_pods: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for body, _src in pods:
        meta = body["metadata"]
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller", True):
                owned_pods.setdefault((meta.get("namespace", ""), ref.get("kind"), ref.get("name")), []).append(body)

    for w in all_workloads:
        source = w.source if w.source is BUILTIN else CONTROLLER
        spec = w.body["spec"]
        template = spec["template"]
        existing = owned_pods.get((w.namespace, w.kind, w.name), [])
        if w.kind not in _POD_OWNERS:
            continue  # a Deployment makes ReplicaSets (above), not pods
        existing_names = {b["metadata"]["name"] for b in existing}
        owner = _owner(w.kind, _OWNER_API.get(w.kind, "apps/v1"), w.body)
        if w.kind in ("ReplicaSet", "ReplicationController"):
            for name in _fresh_names(w, int(spec.get("replicas", 1)) - len(existing), existing_names):
                result.pods.append((_pod_from_template(template, name, w.namespace, owner, {}), source))
            result.surplus.extend(_surplus(existing, int(spec.get("replicas", 1))))
        elif w.kind == "StatefulSet":
            service_name = spec.get("serviceName") or ""
            replicas = int(spec.get("replicas", 1))
            # Scale-down removes the highest ordinals first.
            result.surplus.extend(sorted(
                (f"{w.namespace}/{b['metadata']['name']}" for b in existing
                 if _ordinal(b["metadata"]["name"], w.name) >= replicas), reverse=True))
            for i in range(replicas):
                name = f"{w.name}-{i}"
                if name in existing_names:
                    continue
                body = _pod_from_template(template, name, w.namespace, owner, {
                    "apps.kubernetes.io/pod-index": str(i),
                    "controller-revision-hash": f"{w.name}-{pod_template_hash(template)}",
                    "statefulset.kubernetes.io/pod-name": name,
                })
                body["spec"]["hostname"] = name
                if service_name:
                    body["spec"]["subdomain"] = service_name
                mount_statefulset_claims(body, w.body)
                result.claims.extend(statefulset_claims(w.body, name))
                result.pods.append((body, source))
        elif w.kind == "DaemonSet":
            taken = {b.get("spec", {}).get("nodeName") for b in existing}
            for node in nodes:
                if node.name in taken or not feasible(template.get("spec") or {}, node):
                    continue
                name = f"{w.name}-{random_suffix(w.namespace, w.name, node.name)}"
                body = _pod_from_template(template, name, w.namespace, owner, {
                    "controller-revision-hash": pod_template_hash(template)[:10],
                    "pod-template-generation": "1",
                })
                # The DaemonSet controller pins each pod with node affinity; nodeName is the result.
                body["spec"]["nodeName"] = node.name
                result.pods.append((body, source))
        elif w.kind == "Job":
            uid = owner["uid"]
            count = min(int(spec.get("parallelism", 1)), int(spec.get("completions", 1)))
            for name in _fresh_names(w, count - len(existing), existing_names):
                result.pods.append((_pod_from_template(template, name, w.namespace, owner, {
                    "batch.kubernetes.io/controller-uid": uid,
                    "batch.kubernetes.io/job-name": w.name,
                    "controller-uid": uid,
                    "job-name": w.name,
                }), source))
    for rs in replica_sets:
        result.workloads.append((rs.body, rs.source))
    return result


# --- scheduling -----------------------------------------------------------------------


def _tolerates(tolerations: list[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol.get("effect") != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists":
            if not tol.get("key") or tol.get("key") == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def feasible(spec: Mapping[str, Any], node: Node, effects: tuple[str, ...] = ("NoSchedule", "NoExecute")) -> bool:
    """May a pod with this spec run on ``node``: taints of ``effects`` tolerated, nodeSelector and required node
    affinity met. A pod already running there stays unless a NoExecute taint evicts it (``effects=("NoExecute",)``:
    upstream's podsShouldBeOnNode keeps a daemon pod on a node a NoSchedule taint only closes to new ones)."""
    tolerations = spec.get("tolerations") or []
    for taint in node.taints:
        if taint.get("effect") in effects and not _tolerates(tolerations, taint):
            return False
    for key, value in (spec.get("nodeSelector") or {}).items():
        if node.labels.get(key) != str(value):
            return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if terms:
        def term_ok(term: Mapping[str, Any]) -> bool:
            exprs = term.get("matchExpressions") or []
            sel = Selector.from_label_selector({"matchExpressions": [e for e in exprs if e.get("operator") in
                                                                     ("In", "NotIn", "Exists", "DoesNotExist")]})
            return sel.matches(node.labels)
        if not any(term_ok(t) for t in terms):
            return False
    return True


# The scheduler's Filter plugins' reasons, as FailedScheduling events print them (kubernetes
# pkg/scheduler/framework/plugins: tainttoleration, nodeaffinity, noderesources/fit.go), in the order the default
# profile runs them: a node reports the first filter it fails.
_TAINT_REASON = "node(s) had untolerated taint {{{key}: {value}}}"
_AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS = "Too many pods"
INSUFFICIENT_CPU = "Insufficient cpu"


def _millis(quantity: Any) -> int:
    try:
        return cpu_millis(str(quantity))
    except ValueError:
        return 0


def _container_cpu(c: Any) -> int:
    resources = c.get("resources") if isinstance(c, Mapping) else None
    if not resources or not isinstance(resources, Mapping):  # most pods ask nothing: {} needs no ABC check
        return 0
    value = (resources.get("requests") or {}).get("cpu") or (resources.get("limits") or {}).get("cpu")
    return _millis(value) if value is not None else 0


def requested_cpu(spec: Mapping[str, Any]) -> int:
    """The pod's CPU request in millicores: its containers' requests (a limit alone is the request, as the API
    server defaults it); init containers run one at a time, so the largest of them counts if it is larger."""
    apps = sum(_container_cpu(c) for c in spec.get("containers") or [])
    inits = spec.get("initContainers")
    return max([apps, *(_container_cpu(c) for c in inits)]) if inits else apps
# Pods left Pending for one reason are noticed one by one up to this many, then counted (100,000 replicas on full
# nodes are one line more, not 99,784 warnings).
NOTICES_PER_SHAPE = 5
# VolumeBinding's verdict on one node (cluster.storage.node_reason): None when the pod's volumes allow it.
VolumeFilter = Callable[[Node], str | None]


def max_pods(node: Node) -> int:
    """The node's pod capacity (status.allocatable.pods, from the kubelet's maxPods; 110 when not given)."""
    raw = ((node.raw.get("status") or {}).get("allocatable") or {}).get("pods")
    try:
        return int(raw) if raw is not None else 110
    except (TypeError, ValueError):
        return 110


def unfit_reason(spec: Mapping[str, Any], node: Node, pods_on_node: int,
                 host_ports: Collection[HostPort] = (), volume_filter: VolumeFilter | None = None) -> str | None:
    """Why the scheduler's filters reject ``node`` for a pod with this spec (None: it fits), in the order of the
    default profile's filters. ``host_ports``: those the node's pods already hold (cluster.hostports);
    ``volume_filter``: VolumeBinding's verdict on the node (cluster.storage.node_reason), run last."""
    tolerations = spec.get("tolerations") or []
    for taint in node.taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(tolerations, taint):
            return _TAINT_REASON.format(key=taint.get("key", ""), value=taint.get("value", ""))
    if not feasible(spec, node):
        return _AFFINITY_REASON
    if host_port_conflict(spec, host_ports):
        return NODE_PORTS_REASON
    wanted = requested_cpu(spec)
    if wanted and node.allocatable_cpu and wanted > _millis(node.allocatable_cpu):
        # NodeResourcesFit, for a pod larger than the node (the requests of the pods already there are not summed).
        return INSUFFICIENT_CPU
    if pods_on_node >= max_pods(node):
        return TOO_MANY_PODS
    return volume_filter(node) if volume_filter is not None else None


def fit_error(spec: Mapping[str, Any], nodes: list[Node], load: Mapping[str, int],
              host_ports: Mapping[str, Collection[HostPort]] | None = None,
              volume_filter: VolumeFilter | None = None) -> str:
    """The FailedScheduling message of a pod no node takes: each reason with its node count, sorted as the
    scheduler's FitError sorts them, then what preemption found (pods of equal priority are never victims, and
    a node that fails on anything but room is not helped by preemption)."""
    reasons: dict[str, int] = {}
    preemption: dict[str, int] = {}
    for node in nodes:
        reason = unfit_reason(spec, node, load.get(node.name, 0), (host_ports or {}).get(node.name, ()),
                              volume_filter) or TOO_MANY_PODS
        reasons[reason] = reasons.get(reason, 0) + 1
        # Taken ports are freed by evicting their holder, so preemption looks for victims (and finds none of the
        # pod's own priority).
        after = ("No preemption victims found for incoming pod"
                 if reason in (TOO_MANY_PODS, INSUFFICIENT_CPU, NODE_PORTS_REASON)
                 else "Preemption is not helpful for scheduling")
        preemption[after] = preemption.get(after, 0) + 1

    def histogram(counts: Mapping[str, int]) -> str:
        return ", ".join(sorted(f"{count} {reason}" for reason, count in counts.items()))

    return (f"0/{len(nodes)} nodes are available: {histogram(reasons)}. preemption: 0/{len(nodes)} nodes are "
            f"available: {histogram(preemption)}.")


def _pending(body: dict[str, Any], message: str) -> None:
    """A pod no node takes stays Pending with PodScheduled=False, as the scheduler writes it."""
    body["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]}


def volume_verdict(volumes: Volumes | None, body: Mapping[str, Any],
                   nodes: list[Node]) -> tuple[str | None, VolumeFilter | None]:
    """What the pod's claims say before any node is tried: the FailedScheduling message when no node can help
    (a claim missing, being deleted, or unbound for an Immediate class), else the per-node filter (None: the pod
    mounts no claim)."""
    spec = body.get("spec") or {}
    if volumes is None or not claim_names(spec):
        return None, None
    namespace = str((body.get("metadata") or {}).get("namespace") or "default")
    blocked = prefilter(volumes, namespace, spec)
    if blocked is not None:
        return unschedulable_message(blocked, len(nodes)), None
    return None, lambda node: node_reason(volumes, namespace, spec, node)


def select_claims_node(volumes: Volumes, body: Mapping[str, Any], node: str) -> list[dict[str, Any]]:
    """The scheduler's PreBind for a pod bound to ``node``: its WaitForFirstConsumer claims without a node get it
    (in ``volumes``, so the claim's next pod is held to it). Returns the claims so annotated."""
    namespace = str((body.get("metadata") or {}).get("namespace") or "default")
    out = []
    for key in claims_to_select(volumes, namespace, body.get("spec") or {}):
        volumes.claims[key] = with_selected_node(volumes.claims[key], node)
        out.append(volumes.claims[key])
    return out


def schedule(pods: list[tuple[dict[str, Any], Source]], nodes: list[Node],
             volumes: Volumes | None = None) -> list[Notice]:
    """Fill ``spec.nodeName`` for unscheduled pods (in place). Returns notices for unschedulable pods.
    ``volumes``: the cluster's claims, volumes and classes, which a pod mounting a claim waits for."""
    notices = []
    load = {n.name: 0 for n in nodes}
    control_plane = next((n for n in nodes if "node-role.kubernetes.io/control-plane" in n.labels), None)
    pending = []
    # (namespace, labels, node) of every placed pod: what topologySpreadConstraints count.
    placed: list[tuple[str, Mapping[str, str], str]] = []
    ports: dict[str, set[HostPort]] = {n.name: set() for n in nodes}  # the host ports each node's pods hold
    for body, source in pods:
        node_name = body.get("spec", {}).get("nodeName")
        if node_name:
            placed.append((str(body["metadata"].get("namespace", "")), body["metadata"].get("labels") or {},
                           str(node_name)))
            if node_name in load:
                load[node_name] += 1
                ports[node_name].update(wanted_host_ports(body.get("spec") or {}))
            else:
                notices.append(Notice("NodeNotFound", f"spec.nodeName {node_name!r} is not a node of this cluster; "
                                      "the pod stays Pending", _subject(body), source))
        else:
            pending.append((body, source))
    # Built-in add-ons were scheduled at bootstrap, when the control-plane was the only node.
    pending.sort(key=lambda p: (p[1] is not BUILTIN, p[0]["metadata"].get("namespace", ""), p[0]["metadata"]["name"]))
    order = {n.name: i for i, n in enumerate(nodes)}
    capacity = {n.name: max_pods(n) for n in nodes}
    # Pods of one template share their constraints, so the feasible nodes are computed once per
    # shape and kept in a heap of (load, node order); loads only grow, so a stale top is re-pushed
    # and a full node (the kubelet's maxPods) leaves the heap for good.
    heaps: dict[str, list[tuple[int, int, str]]] = {}
    # A pod spec's host ports and CPU request read its containers alone when it has no init containers: asked once
    # per containers list, which the pods of equal templates share (10,000 pods of bench/calico.py: nine lists).
    host_ports_of: dict[int, tuple[list[Any], Any]] = {}
    cpu_of: dict[int, tuple[list[Any], Any]] = {}
    unfit: dict[str, str] = {}  # a shape's FailedScheduling message, until a pod is placed again
    told: dict[tuple[str, str], int] = {}  # Unschedulable notices per (shape, message): a few, then a count
    for body, source in pending:
        spec = body.setdefault("spec", {})
        refused, volume_filter = volume_verdict(volumes, body, nodes)
        if refused is not None:
            notices.append(Notice("Unschedulable", refused, _subject(body), source))
            _pending(body, refused)
            continue
        if spec.get("topologySpreadConstraints"):
            name = _spread(body, [n for n in nodes if feasible(spec, n) and load[n.name] < capacity[n.name]],
                           placed, load, order)
            if name is None:
                full = [n for n in nodes if feasible(spec, n) and load[n.name] >= capacity[n.name]]
                message = (fit_error(spec, nodes, load) if full else
                           f"0/{len(nodes)} nodes are available: no node satisfies the pod's "
                           "topologySpreadConstraints (and nodeSelector, affinity, tolerations)")
                notices.append(Notice("Unschedulable", message, _subject(body), source))
                _pending(body, message)
                continue
            spec["nodeName"] = name
            load[name] += 1
            ports[name].update(wanted_host_ports(spec))  # the spread decides; the ports it takes are held after
            unfit.clear()
            placed.append((str(body["metadata"].get("namespace", "")), body["metadata"].get("labels") or {}, name))
            continue
        wanted = _per_containers(spec, host_ports_of, wanted_host_ports) if source is not BUILTIN else []
        if wanted or volume_filter is not None:
            # Host ports make each placement change where the next pod fits, and a claim's volume may pin the pod
            # to a node: no shared heap, every node asked.
            fits = [n for n in nodes if unfit_reason(spec, n, load[n.name], ports[n.name], volume_filter) is None]
            if not fits:
                message = fit_error(spec, nodes, load, ports, volume_filter)
                notices.append(Notice("Unschedulable", message, _subject(body), source))
                _pending(body, message)
                continue
            name = min(fits, key=lambda n: (load[n.name], order[n.name])).name
            spec["nodeName"] = name
            if volume_filter is not None and volumes is not None:
                select_claims_node(volumes, body, name)
            load[name] += 1
            ports[name].update(wanted)
            unfit.clear()
            placed.append((str(body["metadata"].get("namespace", "")), body["metadata"].get("labels") or {}, name))
            continue
        if source is BUILTIN and control_plane is not None and feasible(spec, control_plane):
            shape = "\x00bootstrap"
            if shape not in heaps:
                heaps[shape] = [(load[control_plane.name], order[control_plane.name], control_plane.name)]
        else:
            cpu = _per_containers(spec, cpu_of, requested_cpu)
            constraints = [spec.get("tolerations"), spec.get("nodeSelector"), spec.get("affinity")]
            # Most pods constrain nothing: their shape is json.dumps' own text for it, without the ~5 us call.
            shape = (f"[null, null, null, {cpu}]" if constraints == [None, None, None]
                     else json.dumps([*constraints, cpu], sort_keys=True))
            if shape not in heaps:
                heaps[shape] = [(load[n.name], order[n.name], n.name) for n in nodes if feasible(spec, n)
                                and not (cpu and n.allocatable_cpu and cpu > _millis(n.allocatable_cpu))]
                heapq.heapify(heaps[shape])
        heap = heaps[shape]
        while heap and (heap[0][0] != load[heap[0][2]] or load[heap[0][2]] >= capacity[heap[0][2]]):
            _, rank, name = heapq.heappop(heap)
            if load[name] < capacity[name]:
                heapq.heappush(heap, (load[name], rank, name))
        if not heap:
            # Nothing is placed while every node stays full, so one message serves the shape's other pods.
            if shape not in unfit:
                unfit[shape] = fit_error(spec, nodes, load)
            message = unfit[shape]
            told[(shape, message)] = told.get((shape, message), 0) + 1
            if told[(shape, message)] <= NOTICES_PER_SHAPE:
                notices.append(Notice("Unschedulable", message, _subject(body), source))
            _pending(body, message)
            continue
        _, rank, name = heapq.heappop(heap)
        unfit.clear()
        spec["nodeName"] = name
        load[name] += 1
        placed.append((str(body["metadata"].get("namespace", "")), body["metadata"].get("labels") or {}, name))
        heapq.heappush(heap, (load[name], rank, name))
    for (_, message), count in sorted(told.items()):
        if count > NOTICES_PER_SHAPE:
            notices.append(Notice("Unschedulable", f"{count - NOTICES_PER_SHAPE} more pod(s) of the same shape stay "
                                  f"Pending: {message}"))
    return notices


def _per_containers(spec: Mapping[str, Any], memo: dict[int, tuple[list[Any], Any]],
                    judge: Callable[[Mapping[str, Any]], Any]) -> Any:
    """``judge(spec)`` for a judgment that reads only the spec's containers and init containers, remembered in
    ``memo`` by the containers list of a spec without init containers (the list kept, so its id is not reused)."""
    containers = spec.get("containers")
    if type(containers) is not list or spec.get("initContainers"):
        return judge(spec)
    hit = memo.get(id(containers))
    if hit is None or hit[0] is not containers:
        hit = memo[id(containers)] = (containers, judge(spec))
    return hit[1]


def _spread(body: Mapping[str, Any], candidates: list[Node], placed: list[tuple[str, Mapping[str, str], str]],
            load: Mapping[str, int], order: Mapping[str, int]) -> str | None:
    """PodTopologySpread: hard constraints (DoNotSchedule) keep a node only if placing the pod there leaves every
    domain within maxSkew of the least-loaded eligible domain; soft ones (ScheduleAnyway) prefer the domain with
    the fewest matching pods. Ties: fewest pods on the node, then node order."""
    namespace = str(body["metadata"].get("namespace", ""))
    node_labels = {n.name: n.labels for n in candidates}
    scores = {n.name: 0 for n in candidates}
    for constraint in body["spec"].get("topologySpreadConstraints") or []:
        if not isinstance(constraint, Mapping):
            continue
        key = str(constraint.get("topologyKey") or "")
        selector = Selector.from_label_selector(constraint.get("labelSelector"))
        skew = int(constraint.get("maxSkew") or 1)
        hard = constraint.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
        domains = {n.labels[key] for n in candidates if key in n.labels}
        counts = dict.fromkeys(domains, 0)
        by_node_domain = {name: labels.get(key) for name, labels in node_labels.items()}
        for ns, labels, node in placed:
            domain = by_node_domain.get(node)
            if ns == namespace and domain in counts and selector.matches(labels):
                counts[domain] += 1
        floor = min(counts.values(), default=0)
        for name in list(scores):
            domain = by_node_domain[name]
            if domain is None:
                if hard:
                    del scores[name]  # a node without the topology key cannot satisfy a hard constraint
                continue
            if hard and counts[domain] + 1 - floor > skew:
                del scores[name]
                continue
            scores[name] += counts[domain]
    if not scores:
        return None
    return min(scores, key=lambda n: (scores[n], load[n], order[n]))


def _subject(body: Mapping[str, Any]) -> str:
    meta = body.get("metadata") or {}
    return f"Pod {meta.get('namespace', '')}/{meta.get('name', '')}"


# --- IPAM and status ------------------------------------------------------------------


class _PodRange:
    """A node's pod CIDR as host-local IPAM walks it: its size and the text of its n-th address. An IPv4 address is
    written from the integer by inet_ntoa (~0.3 us) rather than as an ipaddress object made and printed (~2 us), for
    each of 10,000 pods; IPv6 keeps ipaddress, whose compressed form is the one Kubernetes prints."""

    __slots__ = ("_base", "network", "size")

    def __init__(self, network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> None:
        self.network = network
        self.size = network.num_addresses
        self._base = int(network.network_address) if network.version == 4 else None

    def address(self, index: int) -> str:
        if self._base is not None:
            return socket.inet_ntoa((self._base + index).to_bytes(4, "big"))
        return str(self.network[index])


def assign_ips_and_status(pods: list[tuple[dict[str, Any], Source]], nodes: list[Node],
                          config: ClusterConfig, services: frozenset[tuple[str, str]] | None = None,
                          configmaps: ConfigMaps | None = None, secrets: ConfigMaps | None = None) -> list[Notice]:
    """Give every scheduled pod without ``status`` an IP and a status; honour snapshot IPs. ``services``:
    the (namespace, name) of every Service, for init containers that wait for one; ``configmaps``: their
    data, for a CoreDNS whose Corefile keeps it from starting; ``secrets``: the keys of the Secrets read, for env
    references to a key a Secret lacks."""
    notices: list[Notice] = []
    node_by_name = {n.name: n for n in nodes}
    used: set[str] = set()
    for body, _ in pods:
        ip = (body.get("status") or {}).get("podIP")
        if ip:
            used.add(ip)
    cursors: dict[str, Any] = {}
    # What each containers list's pods share (pod_status): the pods of equal templates share one list, and nothing
    # edits one while this build runs (a memo of this call only: the live kubelet's pods are not held to that).
    containers_seen: dict[int, _ContainersSeen] = {}
    networks: dict[str, _PodRange] = {}  # parsed once per node: ipaddress is slow, and this runs per pod
    # Bootstrap order for built-in pods (kube-system first: CoreDNS gets .2 and .3 as on kind).
    ordered = sorted(pods, key=lambda p: (p[1] is not BUILTIN, p[0]["metadata"].get("namespace") != "kube-system",
                                          p[0]["metadata"].get("namespace", ""), p[0]["metadata"]["name"]))
    for body, source in ordered:
        if body.get("status"):
            continue  # from a snapshot: the cluster's own word
        spec = body.get("spec") or {}
        node = node_by_name.get(spec.get("nodeName") or "")
        if node is None:
            body["status"] = {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
            continue
        extra: tuple[str, ...] = ()
        if spec.get("hostNetwork"):
            ip = node.internal_ip
            extra = node.internal_ips[1:]
        else:
            range_ = networks.get(node.name)
            if range_ is None:
                range_ = networks[node.name] = _PodRange(ipaddress.ip_network(node.pod_cidr))
            cursor = cursors.get(node.name, 2)
            ip = ""
            offset = 0  # the host number taken: its index in the node's range
            while cursor < range_.size - 1:
                candidate = range_.address(cursor)
                cursor += 1
                if candidate not in used:
                    ip, offset = candidate, cursor - 1
                    break
            cursors[node.name] = cursor
            if not ip:
                notices.append(Notice("IPExhausted", f"no free address left in {node.pod_cidr} on {node.name}",
                                      _subject(body), source))
                body["status"] = {"phase": "Pending"}
                continue
            used.add(ip)
            # A dual-stack pod gets the same host number in the node's other pod CIDR (host-local IPAM
            # walks both ranges in step), so 10.244.1.3 pairs with fd00:10:244:1::3.
            extra = tuple(str(ipaddress.ip_network(c)[offset]) for c in node.pod_cidrs[1:])
            used.update(extra)
        body["status"] = pod_status(body, ip, node.internal_ip, config, (ip, *extra),
                                    node.internal_ips or (node.internal_ip,), services, configmaps, secrets,
                                    containers_seen=containers_seen)
    return notices


def _readiness(body: Mapping[str, Any], judge_exec: bool = False) -> tuple[bool, str, str]:
    """(ready, reason, message) for a simulated pod, following knetsim's readiness rules. ``judge_exec``: the
    offline build judges exec probes (live, the kubelet's prober runs them and its results decide)."""
    meta = body.get("metadata") or {}
    if (meta.get("annotations") or {}).get(READY_ANNOTATION) == "false":
        return False, "ContainersNotReady", f"annotation {READY_ANNOTATION}=\"false\""
    containers = (body.get("spec") or {}).get("containers") or []
    if not any(isinstance(c, Mapping) and c.get("readinessProbe") for c in containers):
        return True, "", ""
    listening = set(pod_listens(Pod.parse(dict(body, status={}))))
    for raw_container in containers:
        if not isinstance(raw_container, Mapping):
            continue
        failure = probe_failure(body, raw_container, "readinessProbe", listening, judge_exec)
        if failure is not None:
            return False, "ContainersNotReady", failure.message
    return True, "", ""


def _init_blocked(body: Mapping[str, Any], services: frozenset[tuple[str, str]], domain: str) -> int | None:
    """The index of the first init container that loops forever waiting for a Service name that does not
    exist (``until nslookup mydb; do sleep 2; done``), or None. Init containers run one after another
    (restartPolicy Always ones are sidecars and do not block), so the ones after it never start."""
    meta = body.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    zone = domain.rstrip(".")
    inits = [c for c in (body.get("spec") or {}).get("initContainers") or []
             if isinstance(c, Mapping) and c.get("restartPolicy") != "Always"]
    for index, container in enumerate(inits):
        command = [*(container.get("command") or []), *(container.get("args") or [])]
        for _tool, name, _words in waited_names(command, namespace):
            labels = name.lower().removesuffix("." + zone).split(".")
            if labels[-1:] == ["svc"]:
                labels = labels[:-1]
            if len(labels) > 2 or name.lower().endswith(".pod." + zone):
                continue  # not a Service name this model can judge (a pod name, an outside name)
            wanted = (labels[1] if len(labels) == 2 else namespace, labels[0])
            if wanted not in services:
                return index
    return None


def _blocked_status(body: Mapping[str, Any], blocked: int) -> dict[str, Any]:
    """What the kubelet reports while init container ``blocked`` runs (and never ends): Init:N/M."""
    spec = body.get("spec") or {}
    inits = [c for c in spec.get("initContainers") or [] if isinstance(c, Mapping) and c.get("restartPolicy") !=
             "Always"]
    apps = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    waiting_on = " ".join(str(c.get("name")) for c in inits[blocked:])
    unready = " ".join(str(c.get("name")) for c in apps)

    def init_status(i: int, c: Mapping[str, Any]) -> dict[str, Any]:
        state: dict[str, Any] = ({"terminated": {"exitCode": 0, "reason": "Completed"}} if i < blocked else
                                 {"running": {}} if i == blocked else {"waiting": {"reason": "PodInitializing"}})
        return {"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": i < blocked,
                "started": i == blocked, "restartCount": 0, "state": state}
    return {
        "phase": "Pending",
        "conditions": [
            {"type": "PodReadyToStartContainers", "status": "True"},
            {"type": "Initialized", "status": "False", "reason": "ContainersNotInitialized",
             "message": f"containers with incomplete status: [{waiting_on}]"},
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
             "message": f"containers with unready status: [{unready}]"},
            {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady",
             "message": f"containers with unready status: [{unready}]"},
            {"type": "PodScheduled", "status": "True"},
        ],
        "initContainerStatuses": [init_status(i, c) for i, c in enumerate(inits)],
        "containerStatuses": [{"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": False,
                               "started": False, "restartCount": 0,
                               "state": {"waiting": {"reason": "PodInitializing"}}} for c in apps],
    }


# The container fields whose absence from every container of a pod makes its config errors, restarts and CoreDNS
# checks below find nothing: no environment (containerruns.config_error reads only env and envFrom), no command of
# its own (exit_of judges only those), no probe (probe_failure, coredns_refused_probe), and no CoreDNS image.
_JUDGED_FIELDS = ("env", "envFrom", "command", "args", "startupProbe", "livenessProbe", "readinessProbe")


@dataclass(slots=True)
class _ContainersSeen:
    """What ``pod_status`` reads of a containers list alone, once per list: every pod of one template (and of equal
    templates, expand_workloads) holds the same list. ``containers`` holds the list alive, so its id is not reused."""

    containers: list[Any]
    config: ClusterConfig | None
    pulls: dict[Any, PullError | None]  # read only: a pod that may write into it copies it
    plain: bool  # no container has a _JUDGED_FIELDS field or runs CoreDNS: nothing more to judge
    # A plain list's pods that run and are ready all have these conditions and container statuses: one pair of
    # lists for them all, made by the first (bench/calico.py: 10,000 pods, 9 pairs; ~20 MB less). Shared, as their
    # containers are: nothing edits a stored pod's status in place (the live kubelet writes its own pods' statuses,
    # made without this memo, kubelet/podstatus.py).
    ready: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None


def _pulls(containers: list[Any], config: ClusterConfig | None) -> dict[Any, PullError | None]:
    return {c.get("name"): pull_error(str(c.get("image") or ""), config, str(c.get("imagePullPolicy") or
                                                                          "IfNotPresent"))
            for c in containers if config is not None and isinstance(c, Mapping)}


def _seen(containers: list[Any], config: ClusterConfig | None,
          memo: dict[int, _ContainersSeen]) -> _ContainersSeen:
    known = memo.get(id(containers))
    if known is not None and known.containers is containers and known.config is config:
        return known
    plain = all(isinstance(c, Mapping) and not any(c.get(f) for f in _JUDGED_FIELDS) and not is_coredns(c)
                for c in containers)
    known = memo[id(containers)] = _ContainersSeen(containers, config, _pulls(containers, config), plain)
    return known


def pod_status(body: Mapping[str, Any], ip: str, host_ip: str, config: ClusterConfig | None = None,
               ips: tuple[str, ...] = (), host_ips: tuple[str, ...] = (),
               services: frozenset[tuple[str, str]] | None = None, configmaps: ConfigMaps | None = None,
               secrets: ConfigMaps | None = None, *,
               containers_seen: dict[int, _ContainersSeen] | None = None) -> dict[str, Any]:
    """The status of a pod at ``ip`` on ``host_ip``: phase, IPs, readiness conditions, containers.

    With ``config``, each container's image is checked against the registry model
    (``cluster.images``): a container whose image cannot be pulled waits (ErrImagePull,
    InvalidImageName...) and the pod stays Pending, not ready, as the kubelet reports it after
    its first pull attempt. ``configmaps`` (the offline build's ConfigMaps, even none) marks the offline build: a
    CoreDNS whose Corefile keeps it from starting crash-loops and exec probes are judged here; live, the
    kubelet runs both. ``containers_seen``: a memo of what the containers lists of one build's pods hold
    (``_ContainersSeen``; 10,000 pods of bench/calico.py hold 9 lists, ~7 us a pod saved)."""
    # The four judgments of init containers below walk spec.initContainers: a pod without any (all 10,000 of
    # bench/calico.py's) skips them (~4 us a pod).
    inits = bool((body.get("spec") or {}).get("initContainers"))
    blocked = _init_blocked(body, services, config.cluster_domain if config else "cluster.local") \
        if services is not None and inits else None
    # Offline (live, the kubelet runs it): an init container that fails at once is run again for ever, unless one
    # before it already waits for ever.
    # Offline: an init container waiting for a file only a later container writes never ends.
    deadlock = init_deadlock(body) if configmaps is not None and inits else None
    if deadlock is not None and (blocked is None or deadlock.index < blocked):
        blocked = deadlock.index
    crashing_init = init_crash(body) if configmaps is not None and inits else None
    if crashing_init is not None and (blocked is None or crashing_init[0] < blocked):
        blocked = crashing_init[0]
    else:
        crashing_init = None
    # restartPolicy Never: the failing init container is not run again, the pod fails (Init:Error).
    failed_init = init_failure(body) if configmaps is not None and inits else None
    if failed_init is not None and (blocked is None or failed_init[0] < blocked):
        blocked = failed_init[0]
    else:
        failed_init = None
    if blocked is not None:
        status = _blocked_status(body, blocked)
        if failed_init is not None:
            init_failed_status(status, *failed_init)
        if crashing_init is not None:
            meta = body.get("metadata") or {}
            failing = status["initContainerStatuses"][blocked]
            failing.update(ready=False, started=False, restartCount=1, state={"waiting": {
                "reason": "CrashLoopBackOff", "message": f"back-off 10s restarting failed container={failing['name']} "
                f"pod={meta.get('name')}_{meta.get('namespace') or 'default'}"}},
                lastState={"terminated": {"exitCode": crashing_init[1].exit_code, "reason": "Error"}})
        status.update(hostIP=host_ip, hostIPs=[{"ip": h} for h in host_ips or (host_ip,)], podIP=ip,
                      podIPs=[{"ip": i} for i in ips or (ip,)], qosClass="BestEffort")
        return status
    containers = (body.get("spec") or {}).get("containers") or []
    plain = False  # nothing below but the pulls to judge: no environment, command, probe or CoreDNS
    seen: _ContainersSeen | None = None
    if containers_seen is not None and type(containers) is list:
        seen = _seen(containers, config, containers_seen)
        pulls, plain = seen.pulls, seen.plain
        if not plain:
            pulls = dict(pulls)  # this pod's own: a config error may be written into it
    else:
        pulls = _pulls(containers, config)
    if configmaps is not None and not plain:
        # Offline (live, the kubelet resolves it): a container whose environment names a ConfigMap key that is
        # not there is never created; it waits as one whose image cannot be pulled does, the pod Pending.
        for c in containers:
            if isinstance(c, Mapping) and pulls.get(c.get("name")) is None:
                missing = config_error(body, c, configmaps, secrets)
                if missing is not None:
                    pulls[c.get("name")] = PullError("CreateContainerConfigError", missing, missing)
    failed = sorted(str(name) for name, err in pulls.items() if err is not None)
    ready, reason, message = _readiness(body, judge_exec=configmaps is not None)
    if failed:
        ready, reason, message = False, "ContainersNotReady", f"containers with unready status: [{' '.join(failed)}]"
    flag = "True" if ready else "False"
    ready_condition: dict[str, Any] = {"type": "Ready", "status": flag}
    containers_ready: dict[str, Any] = {"type": "ContainersReady", "status": flag}
    if not ready:
        ready_condition.update(reason=reason, message=message)
        containers_ready.update(reason=reason, message=message)

    def container_status(c: Mapping[str, Any]) -> dict[str, Any]:
        err = pulls.get(c.get("name"))
        state: dict[str, Any] = {"running": {}} if err is None else {
            "waiting": {"reason": err.reason, "message": err.message}}
        return {"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": ready and err is None,
                "started": err is None, "restartCount": 0, "state": state}
    crash = coredns_startup_error(body, configmaps, frozenset({config.dns_service_ip}), config.upstream_nameservers
                                  ) if configmaps and config is not None and not failed and not plain else None

    def made() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        conditions = [{"type": "PodReadyToStartContainers", "status": "True"},
                      {"type": "Initialized", "status": "True"}, ready_condition, containers_ready,
                      {"type": "PodScheduled", "status": "True"}]
        return conditions, [container_status(c) for c in containers]
    if seen is not None and plain and ready and not failed:
        if seen.ready is None:
            seen.ready = made()
        conditions, statuses = seen.ready
    else:
        conditions, statuses = made()
    status = {
        "phase": "Pending" if failed else "Running",
        "hostIP": host_ip,
        "hostIPs": [{"ip": h} for h in host_ips or (host_ip,)],
        "podIP": ip,
        "podIPs": [{"ip": i} for i in ips or (ip,)],
        "qosClass": "BestEffort",
        "conditions": conditions,
        "containerStatuses": statuses,
    }
    meta = body.get("metadata") or {}
    name, namespace = str(meta.get("name")), str(meta.get("namespace") or "default")
    if plain:
        pass  # no CoreDNS, no probe, no command of its own: nothing crash-loops, nothing is refused
    elif crash is not None:
        crash_loop_status(status, crash[0], name, namespace)
    elif (refused := coredns_refused_probe(body, configmaps)) is not None:
        _not_ready(status, refused)
    elif configmaps is not None and not failed:
        # Offline only: live, the kubelet runs the commands and the probes and writes what follows.
        # Where the pod listens matters to its probes only (and costs a parse: 100,000 replicas come this way).
        probed = any(isinstance(c, Mapping) and (c.get("livenessProbe") or c.get("startupProbe")) for c in containers)
        listening = set(pod_listens(Pod.parse(dict(body, status={})))) if probed else set()
        for restart in restarts(body, listening):
            crash_loop_status(status, restart.container, name, namespace, restart.exit_code)
    return status


def coredns_refused_probe(body: Mapping[str, Any], configmaps: ConfigMaps | None) -> str | None:
    """The CoreDNS container whose readiness probe asks a port its Corefile does not open (kubeadm's probe asks
    the ready plugin on 8181): refused, so the pod stays 0/1, offline as the live prober finds it
    (kubelet/prober.py asks coredns_closed_port too)."""
    if not configmaps:
        return None
    for container in (body.get("spec") or {}).get("containers") or []:
        probe = container.get("readinessProbe") if isinstance(container, Mapping) else None
        if not probe:
            continue  # the common container: no probe, and no ABC checks of nothing (10,000 pods ask)
        handler = probe.get("httpGet") if isinstance(probe, Mapping) else None
        port = handler.get("port") if isinstance(handler, Mapping) else None
        if isinstance(port, int) and coredns_closed_port(body, container, port, configmaps):
            return str(container.get("name"))
    return None


def _not_ready(status: dict[str, Any], container: str) -> None:
    """``status`` with ``container`` running but not Ready (its readiness probe fails), as the kubelet writes it."""
    for entry in status.get("containerStatuses") or []:
        if entry.get("name") == container:
            entry["ready"] = False
    unready = [str(e.get("name")) for e in status.get("containerStatuses") or [] if not e.get("ready")]
    for condition in status.get("conditions") or []:
        if condition.get("type") in ("Ready", "ContainersReady"):
            condition.update(status="False", reason="ContainersNotReady",
                             message=f"containers with unready status: [{' '.join(unready)}]")

