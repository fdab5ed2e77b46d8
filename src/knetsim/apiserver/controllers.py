"""The control loop: stored user objects → the core's ``build_cluster`` → a plan of store writes.

``plan(objects, config, now, seq)`` is a pure function (style: "controllers are planners"):
it reads a snapshot of the store and returns the writes that bring controller-owned objects
and fields (ReplicaSets, workload Pods, EndpointSlices, Service allocations, pod and workload
status) in line with what the core computes. The server commits the plan as one transaction.

Stability across rebuilds: the core is deterministic, but a live cluster must also keep what
it already handed out when the input changes. So existing Pods are fed back to the core with
their node and IP (the core honours ``status.podIP`` of pods that carry a status), Services
with their ``clusterIP``/``nodePort``s (the core honours requested values), and the
ReplicaSet/Job replica bookkeeping is done here:

* the core counts owned pods but never scales down and names new pods ``<rs>-<suffix(i)>``
  for ``i`` from 0, which would collide with surviving pods, so desired pods are computed
  once without pods (``expand_workloads``), surplus pods are deleted oldest-last, and
  replacements get the next name of a per-owner sequence persisted in the store;
* a pod whose labels stop matching its owner's selector is released (ownerReference
  removed), as the ReplicaSet controller does, and a replacement is created;
* owner gone → owned objects are deleted (garbage collection, background propagation).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..cluster import workloads as core_workloads
from ..cluster.build import WORKLOAD_KINDS, build_cluster
from ..cluster.config import ClusterConfig
from ..cluster.naming import random_suffix
from ..cluster.state import ClusterState
from ..gateway import status_of
from ..model.defaults import apply_defaults
from ..model.kinds import BY_KIND as CORE_KINDS
from ..model.labels import Selector
from ..model.loader import BUILTIN, Document, Source
from ..model.objects import Node, stable_uid
from .events import EventNames, make_event
from .events import involved as _involved
from .store import Key, Stored, Write

API_SOURCE = Source("<api>", 1)
# Kinds the write order follows, so that a watcher sees owners before what they own.
KIND_ORDER = ["Namespace", "Node", "IngressClass", "Service", "Deployment", "StatefulSet", "DaemonSet", "Job",
              "ReplicaSet", "Pod", "EndpointSlice", "Endpoints", "Ingress", "NetworkPolicy", "GatewayClass", "Gateway",
              "HTTPRoute", "ReferenceGrant"]
# Kinds whose spec the controllers complete (scheduling, allocation, class defaulting).
SPEC_WRITERS = {"Service", "Pod", "Ingress"}
NAME_ORDINAL_KINDS = {"StatefulSet", "DaemonSet"}


@dataclass
class Plan:
    writes: list[Write] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    state: ClusterState | None = None


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _controller_ref(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in (body.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def _pod_status(body: dict[str, Any]) -> dict[str, Any] | None:
    """The status to feed back: keep the IP, recompute readiness; None lets the core start over."""
    status = body.get("status") or {}
    phase = status.get("phase")
    if phase in ("Succeeded", "Failed"):
        return status  # type: ignore[no-any-return]
    if phase in ("Running", "Pending") and status.get("podIP") and (body.get("spec") or {}).get("nodeName"):
        # Readiness depends on annotations and probes a client may have changed since.
        fresh = core_workloads.pod_status(body, status["podIP"], status.get("hostIP") or "")
        if status.get("startTime"):
            fresh["startTime"] = status["startTime"]
        _keep_kubelet_state(fresh, status, body.get("spec") or {})
        return fresh
    return None


def _keep_kubelet_state(fresh: dict[str, Any], old: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
    """What the simulated kubelet reported (a container that exited, restarted or waits in
    CrashLoopBackOff) survives the rebuild; such a container is not ready."""
    from .kubelet import apply_phase

    before = {cs.get("name"): cs for cs in old.get("containerStatuses") or []}
    touched = False
    for cs in fresh.get("containerStatuses") or []:
        prev = before.get(cs.get("name"))
        if not prev:
            continue
        for f in ("state", "lastState", "restartCount", "containerID"):
            if f in prev:
                cs[f] = _copy(prev[f])
        if "running" not in (cs.get("state") or {}):
            cs["ready"] = cs["started"] = False
            touched = True
        elif prev.get("restartCount") or prev.get("lastState"):
            touched = True
    if touched:
        apply_phase(fresh, spec)


def _selector_of(owner: Mapping[str, Any]) -> Selector:
    return Selector.from_label_selector((owner.get("spec") or {}).get("selector") or {})


def plan(objects: Mapping[Key, Stored], config: ClusterConfig, now: str, seq: Mapping[str, str],
         nodes: list[Node] | None = None) -> Plan:
    out = Plan()
    user_docs: list[Document] = []
    workload_inputs: list[core_workloads.WorkloadInput] = []
    for (kind, _ns, _name), stored in sorted(objects.items()):
        if stored.managed != "user" or kind not in CORE_KINDS or kind == "Pod":
            continue
        # Shallow: the core's defaulting deep-copies every document before touching it.
        body = {k: v for k, v in stored.body.items() if k != "status" or kind == "Service"}
        user_docs.append(Document(API_SOURCE, body))
        if kind in WORKLOAD_KINDS:
            workload_inputs.append(core_workloads.WorkloadInput(apply_defaults(body), API_SOURCE))

    if nodes is None:
        nodes = list(build_cluster([], config).state.nodes.values())
    # What each owner wants, computed without any pods: names, count and pod bodies.
    expanded = core_workloads.expand_workloads(workload_inputs, [], nodes)
    owners: dict[tuple[str, str, str], dict[str, Any]] = {}
    for body, _src in expanded.workloads:
        owners[("ReplicaSet", body["metadata"]["namespace"], body["metadata"]["name"])] = body
    for w in workload_inputs:
        if w.kind != "Deployment":
            owners[(w.kind, w.namespace, w.name)] = w.body
    wanted: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for body, _src in expanded.pods:
        ref = _controller_ref(body)
        if ref:
            wanted.setdefault((str(ref["kind"]), body["metadata"]["namespace"], str(ref["name"])), []).append(body)

    fed: list[Document] = []
    fed_keys: set[Key] = set()
    candidates: dict[tuple[str, str, str], list[Stored]] = {}
    existing_names: set[tuple[str, str]] = set()
    released_bodies: dict[Key, dict[str, Any]] = {}
    for (kind, ns, name), stored in sorted(objects.items()):
        if kind != "Pod" or stored.managed == "system":
            continue
        existing_names.add((ns, name))
        body = stored.body
        ref = _controller_ref(body)
        if ref is not None:
            owner_key = (str(ref.get("kind")), ns, str(ref.get("name")))
            owner = owners.get(owner_key)
            if owner is None:
                continue  # garbage: deleted below because it is not fed
            if not _selector_of(owner).matches((body.get("metadata") or {}).get("labels") or {}):
                released = _copy(body)
                released["metadata"]["ownerReferences"] = [
                    r for r in released["metadata"]["ownerReferences"] if not r.get("controller")]
                if not released["metadata"]["ownerReferences"]:
                    del released["metadata"]["ownerReferences"]
                released_bodies[(kind, ns, name)] = released
                _feed(fed, fed_keys, released)
                continue
            candidates.setdefault(owner_key, []).append(stored)
            continue
        _feed(fed, fed_keys, body)

    for owner_key in sorted(set(wanted) | set(candidates)):
        kind, ns, owner_name = owner_key
        desired = wanted.get(owner_key, [])
        have = sorted(candidates.get(owner_key, []), key=lambda s: (s.body["metadata"].get("creationTimestamp", ""),
                                                                    s.rv))
        if kind in NAME_ORDINAL_KINDS:
            names = {b["metadata"]["name"] for b in desired}
            for s in have:
                if s.body["metadata"]["name"] in names:
                    _feed(fed, fed_keys, s.body)
            continue  # the core creates the missing ordinals / per-node pods itself
        if kind == "Job":
            # Finished pods stay (their logs and exit codes are the point of a Job); new pods are
            # made for what is left to complete, until the backoff limit is exceeded.
            finished = [s for s in have if (s.body.get("status") or {}).get("phase") in ("Succeeded", "Failed")]
            for s in finished:
                _feed(fed, fed_keys, s.body)
            have = [s for s in have if s not in finished]
            job = owners.get(owner_key) or {}
            desired = desired[:job_active_wanted(job.get("spec") or {}, [s.body for s in finished])]
        keep = have[: len(desired)]
        for s in keep:
            _feed(fed, fed_keys, s.body)
        missing = desired[len(keep):]
        if not missing:
            continue
        seq_key = f"podseq/{ns}/{kind}/{owner_name}"
        counter = seq.get(seq_key)
        for template in missing:
            body = _copy(template)
            if counter is not None:
                # A replacement: never reuse a name the owner handed out before.
                i = int(counter)
                while True:
                    name = f"{owner_name}-{random_suffix(ns, owner_name, str(i))}"
                    i += 1
                    if (ns, name) not in existing_names:
                        break
                counter = str(i)
                body["metadata"]["name"] = name
            existing_names.add((ns, body["metadata"]["name"]))
            _feed(fed, fed_keys, body)
        out.meta[seq_key] = counter if counter is not None else str(len(desired))

    result = build_cluster(user_docs + fed, config)
    state = result.state
    out.state = state

    desired_out: dict[Key, tuple[dict[str, Any], Source]] = {}
    for ns_obj in state.namespaces.values():
        desired_out[("Namespace", "", ns_obj.name)] = (ns_obj.raw, ns_obj.source)
    for node in state.nodes.values():
        desired_out[("Node", "", node.name)] = (node.raw, node.source)
    for ic in state.ingress_classes.values():
        desired_out[("IngressClass", "", ic.name)] = (ic.raw, ic.source)
    for coll in (state.pods, state.services, state.endpoint_slices, state.ingresses, state.network_policies):
        for obj in coll.values():
            desired_out[(obj.kind, obj.namespace, obj.name)] = (obj.raw, obj.source)
    for (kind, _k), obj in state.workloads.items():
        desired_out[(kind, obj.namespace, obj.name)] = (obj.raw, obj.source)
    for key, (raw, source) in endpoints_objects(state).items():
        desired_out.setdefault(key, (raw, source))
    # Gateway API objects with the built-in Gateway controller's status (knetsim.gateway), transition
    # times kept from the stored status so an unchanged condition is not rewritten on every rebuild.
    for coll in (state.gateway_classes, state.gateways, state.http_routes, state.reference_grants):
        for gobj in coll.values():
            gkey = (gobj.kind, gobj.namespace, gobj.name)
            stored_g = objects.get(gkey)
            gstatus = status_of(state, gobj, now, previous=(stored_g.body.get("status") or {}) if stored_g else None)
            desired_out[gkey] = ({**gobj.raw, "status": gstatus} if gstatus is not None else gobj.raw, gobj.source)

    job_pods: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for pod in state.pods.values():
        ref = _controller_ref(pod.raw)
        if ref is not None and ref.get("kind") == "Job":
            job_pods.setdefault((pod.namespace, str(ref.get("name"))), []).append(pod.raw)

    order = {k: i for i, k in enumerate(KIND_ORDER)}
    names = EventNames(now, seq)
    # Owners as they stand after this plan (a new ReplicaSet gets events for the pods it creates).
    owner_bodies: dict[Key, Mapping[str, Any]] = {k: s.body for k, s in objects.items() if k[0] in OWNER_COMPONENT}
    for key in sorted(desired_out, key=lambda k: (order.get(k[0], 99), k)):
        raw, source = desired_out[key]
        stored = objects.get(key)
        if stored is not None and (stored.managed == "user" or key in fed_keys):
            body = dict(released_bodies.get(key, stored.body))
            if key[0] in SPEC_WRITERS and "spec" in raw:
                body["spec"] = raw["spec"]
            if raw.get("status") is not None:
                status = dict(raw["status"])
                if "observedGeneration" in status:
                    status["observedGeneration"] = body["metadata"].get("generation", 1)
                _conditions(key[0], body, status, now, stored.body.get("status") or {})
                if key[0] == "Job":
                    status = job_status(body, job_pods.get((key[1], key[2]), []), now,
                                        stored.body.get("status") or {})
                    out.writes.extend(job_events(names, stored.body, status, now))
                if key[0] == "Pod" and status.get("phase") == "Running":
                    status.setdefault("startTime", (stored.body.get("status") or {}).get("startTime")
                                      or body["metadata"].get("creationTimestamp", now))
                body["status"] = status
            managed = "user" if key in released_bodies else stored.managed
            if key[0] == "Pod":
                _complete_pod_status(body)
                out.writes.extend(pod_events(names, stored.body, body, now))
            if body != stored.body or managed != stored.managed:
                out.writes.append(Write(key, _copy(body), managed))
            continue
        # Shallow until we know it changed: comparing is cheap, deep copies of every object are not.
        body = dict(raw)
        meta = body["metadata"] = dict(body.get("metadata") or {})
        managed = "system" if source is BUILTIN else "controller"
        if stored is not None:
            for f in ("uid", "creationTimestamp", "resourceVersion", "generation"):
                if f in stored.body["metadata"]:
                    meta[f] = stored.body["metadata"][f]
            if key[0] == "Pod":
                # Labels and annotations of pods are the client's to change (kubectl label pod).
                for f in ("labels", "annotations"):
                    if f in stored.body["metadata"]:
                        meta[f] = stored.body["metadata"][f]
                    else:
                        meta.pop(f, None)
        else:
            meta.setdefault("uid", stable_uid(key[0], key[1], key[2]) if source is BUILTIN or
                            key[0] in ("ReplicaSet", "Pod", "EndpointSlice") else str(uuid.uuid4()))
            meta["creationTimestamp"] = now
            if key[0] in ("ReplicaSet", "Deployment", "StatefulSet", "DaemonSet"):
                meta.setdefault("generation", 1)
        if isinstance(body.get("status"), dict):
            body["status"] = dict(body["status"])
        if key[0] == "Pod" and isinstance(body.get("status"), dict) and body["status"].get("phase") == "Running":
            body["status"].setdefault("startTime", meta.get("creationTimestamp", now))
        if body.get("status") and "observedGeneration" in body["status"]:
            body["status"]["observedGeneration"] = meta.get("generation", 1)
        if key[0] in ("Deployment",) and body.get("status"):
            _conditions(key[0], body, body["status"], now, (stored.body.get("status") or {}) if stored else {})
        if key[0] == "Pod":
            _complete_pod_status(body)
            if source is not BUILTIN:
                out.writes.extend(pod_events(names, stored.body if stored else None, body, now))
                if stored is None:
                    out.writes.extend(owner_events(names, owner_bodies, body, "create", now))
        elif key[0] == "ReplicaSet" and source is not BUILTIN:
            out.writes.extend(scaling_events(names, objects, stored.body if stored else None, body, now))
        if key[0] in OWNER_COMPONENT:
            owner_bodies[key] = body
        if stored is None or body != stored.body or stored.managed != managed:
            out.writes.append(Write(key, _copy(body), managed))

    for key, stored in sorted(objects.items()):
        # User objects the core left out (it reports why) stay as written; owned pods whose
        # owner is gone are garbage whoever wrote them last.
        if key in desired_out or key[0] not in CORE_KINDS:
            continue
        if stored.managed == "user" and not (key[0] == "Pod" and _controller_ref(stored.body)):
            continue
        if key[0] == "Pod":
            out.writes.extend(owner_events(names, owner_bodies, stored.body, "delete", now))
        out.writes.append(Write(key, None))
    if names.count != int(seq.get("eventseq", "0")):
        out.meta["eventseq"] = str(names.count)
    return out


# --- events --------------------------------------------------------------------------------
# What `kubectl describe` shows under Events:, as the scheduler, the kubelet and the workload
# controllers record them (core/v1 Event objects; describe finds them with an involvedObject
# field selector). Messages are the upstream format strings of v1.35.

OWNER_COMPONENT = {"ReplicaSet": "replicaset-controller", "StatefulSet": "statefulset-controller",
                   "DaemonSet": "daemonset-controller", "Job": "job-controller"}


def pod_events(names: EventNames, old: Mapping[str, Any] | None, new: Mapping[str, Any], now: str) -> list[Write]:
    """Scheduled, then Pulled/Created/Started per container, when a pod starts running."""
    was = ((old or {}).get("status") or {}).get("phase")
    status = new.get("status") or {}
    node = (new.get("spec") or {}).get("nodeName")
    placed = bool(((old or {}).get("status") or {}).get("podIP"))
    if was in ("Running", "Succeeded", "Failed") or placed or status.get("phase") not in ("Running", "Pending") \
            or not status.get("podIP") or not node:
        return []
    # A container whose image cannot be pulled waits; the kubelet records its Pulling/Failed/BackOff.
    waiting = {cs.get("name") for cs in status.get("containerStatuses") or [] if "waiting" in (cs.get("state") or {})}
    meta = new["metadata"]
    cp = "control-plane"
    out = [make_event(names, _involved(new), "Scheduled",
                      f"Successfully assigned {meta.get('namespace')}/{meta['name']} to {node}", "default-scheduler",
                      now, host=cp, action="Binding")]
    spec = new.get("spec") or {}
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if c.get("name") in waiting:
            continue
        inv = _involved(new, f"spec.containers{{{c.get('name')}}}")
        if c in (spec.get("initContainers") or []):
            inv["fieldPath"] = f"spec.initContainers{{{c.get('name')}}}"
        out.append(make_event(names, inv, "Pulled", f'Container image "{c.get("image")}" already present on machine',
                              "kubelet", now, host=node))
        out.append(make_event(names, inv, "Created", f"Created container: {c.get('name')}", "kubelet", now, host=node))
        out.append(make_event(names, inv, "Started", f"Started container {c.get('name')}", "kubelet", now, host=node))
    return out


def owner_events(names: EventNames, owners: Mapping[Key, Mapping[str, Any]], pod: Mapping[str, Any], verb: str,
                 now: str) -> list[Write]:
    """SuccessfulCreate / SuccessfulDelete on the pod's owner, when the owner still exists."""
    ref = _controller_ref(pod)
    if ref is None or ref.get("kind") not in OWNER_COMPONENT:
        return []
    meta = pod.get("metadata") or {}
    owner = owners.get((str(ref["kind"]), meta.get("namespace", ""), str(ref["name"])))
    if owner is None:
        return []
    name = meta.get("name", "")
    if ref["kind"] == "StatefulSet":
        message = f"{verb} Pod {name} in StatefulSet {ref['name']} successful"
    else:
        message = f"{'Created' if verb == 'create' else 'Deleted'} pod: {name}"
    return [make_event(names, _involved(owner), "SuccessfulCreate" if verb == "create" else "SuccessfulDelete",
                       message, OWNER_COMPONENT[str(ref["kind"])], now)]


def job_events(names: EventNames, job: Mapping[str, Any], status: Mapping[str, Any], now: str) -> list[Write]:
    """The job-controller's Completed / BackoffLimitExceeded when the Job reaches its end."""
    def ended(st: Mapping[str, Any]) -> str:
        types = {c.get("type") for c in st.get("conditions") or [] if c.get("status") == "True"}
        return "Complete" if "Complete" in types else "Failed" if "Failed" in types else ""
    now_end, before = ended(status), ended(job.get("status") or {})
    if not now_end or before:
        return []
    if now_end == "Complete":
        return [make_event(names, _involved(job), "Completed", "Job completed", "job-controller", now)]
    return [make_event(names, _involved(job), "BackoffLimitExceeded", "Job has reached the specified backoff limit",
                       "job-controller", now, type_="Warning")]


def scaling_events(names: EventNames, objects: Mapping[Key, Stored], old: Mapping[str, Any] | None,
                   new: Mapping[str, Any], now: str) -> list[Write]:
    """The Deployment's ScalingReplicaSet when its ReplicaSet's replicas change."""
    before = int(((old or {}).get("spec") or {}).get("replicas", 0) or 0) if old is not None else 0
    after = int((new.get("spec") or {}).get("replicas", 0) or 0)
    ref = _controller_ref(new)
    if before == after or ref is None or ref.get("kind") != "Deployment":
        return []
    deploy = objects.get(("Deployment", new["metadata"].get("namespace", ""), str(ref["name"])))
    if deploy is None:
        return []
    direction = "up" if after > before else "down"
    return [make_event(names, _involved(deploy.body), "ScalingReplicaSet",
                       f"Scaled {direction} replica set {new['metadata']['name']} from {before} to {after}",
                       "deployment-controller", now)]


def _complete_pod_status(body: dict[str, Any]) -> None:
    """What the kubelet reports and the core leaves out: start times, container and image IDs."""
    status = body.get("status")
    if not isinstance(status, dict) or not status.get("containerStatuses"):
        return
    started = status.get("startTime")
    uid = body["metadata"].get("uid", "")
    statuses = []
    for cs in status["containerStatuses"]:
        cs = dict(cs)
        if "waiting" in (cs.get("state") or {}) and not cs.get("lastState"):
            statuses.append(cs)  # never ran (its image cannot be pulled): no container, no image yet
            continue
        image = str(cs.get("image") or "")
        if not cs.get("containerID"):
            cs["containerID"] = "containerd://" + hashlib.sha256(f"{uid}/{cs.get('name')}".encode()).hexdigest()
        if image:
            repo = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
            if "/" not in repo:
                repo = f"docker.io/library/{repo}"
            elif "." not in repo.split("/", 1)[0]:
                repo = f"docker.io/{repo}"
            if not cs.get("imageID"):
                cs["imageID"] = f"{repo}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"
        state = cs.get("state")
        if isinstance(state, dict) and isinstance(state.get("running"), dict) and started:
            cs["state"] = dict(state, running=dict(state["running"]))
            cs["state"]["running"].setdefault("startedAt", started)
        statuses.append(cs)
    body["status"] = dict(status, containerStatuses=statuses)


def endpoints_objects(state: ClusterState) -> dict[Key, tuple[dict[str, Any], Source]]:
    """v1 Endpoints mirrored from the EndpointSlices, as the (deprecated, still running) endpoints
    controller keeps them: one per Service with a selector, plus ``default/kubernetes``.

    Addresses are grouped into subsets by port set, ready ones in ``addresses`` and the others in
    ``notReadyAddresses``; a Service without ready or unready endpoints gets no ``subsets``.
    """
    out: dict[Key, tuple[dict[str, Any], Source]] = {}
    for svc in state.services.values():
        spec = svc.raw.get("spec") or {}
        if spec.get("type") == "ExternalName":
            continue
        if not spec.get("selector") and svc.key != "default/kubernetes":
            continue
        groups: dict[tuple[tuple[str, int, str], ...], dict[str, list[dict[str, Any]]]] = {}
        for es in state.slices_for(svc):
            raw = es.raw
            ports = tuple(sorted((str(p.get("name") or ""), int(p.get("port") or 0), str(p.get("protocol") or "TCP"))
                                 for p in raw.get("ports") or [] if p.get("port")))
            group = groups.setdefault(ports, {"addresses": [], "notReadyAddresses": []})
            for ep in raw.get("endpoints") or []:
                ready = (ep.get("conditions") or {}).get("ready", True) is not False
                for ip in ep.get("addresses") or []:
                    addr: dict[str, Any] = {"ip": ip}
                    if ep.get("hostname"):
                        addr["hostname"] = ep["hostname"]
                    if ep.get("nodeName"):
                        addr["nodeName"] = ep["nodeName"]
                    if ep.get("targetRef"):
                        addr["targetRef"] = dict(ep["targetRef"])
                    group["addresses" if ready else "notReadyAddresses"].append(addr)
        subsets = []
        for ports, group in sorted(groups.items()):
            if not (group["addresses"] or group["notReadyAddresses"]):
                continue
            subset: dict[str, Any] = {}
            for field_name in ("addresses", "notReadyAddresses"):
                if group[field_name]:
                    subset[field_name] = sorted(group[field_name], key=lambda a: a["ip"])
            if ports:
                subset["ports"] = [{**({"name": n} if n else {}), "port": p, "protocol": proto}
                                   for n, p, proto in ports]
            subsets.append(subset)
        labels = dict(svc.meta.labels or {})
        if spec.get("clusterIP") == "None":
            labels["service.kubernetes.io/headless"] = ""
        meta: dict[str, Any] = {"name": svc.name, "namespace": svc.namespace}
        if labels:
            meta["labels"] = labels
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "Endpoints", "metadata": meta}
        if subsets:
            body["subsets"] = subsets
        out[("Endpoints", svc.namespace, svc.name)] = (body, svc.source)
    return out


def _feed(fed: list[Document], keys: set[Key], body: dict[str, Any]) -> None:
    body = dict(body)
    status = _pod_status(body)
    if status is None:
        body.pop("status", None)
    else:
        body["status"] = status
    fed.append(Document(API_SOURCE, body))
    keys.add(("Pod", body["metadata"].get("namespace", "default"), body["metadata"]["name"]))


def job_active_wanted(spec: Mapping[str, Any], finished: list[Mapping[str, Any]]) -> int:
    """How many pods the Job controller keeps active, given its finished pods."""
    phases = [(p.get("status") or {}).get("phase") for p in finished]
    succeeded, failed = phases.count("Succeeded"), phases.count("Failed")
    parallelism = int(spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1)
    if failed > int(spec.get("backoffLimit", 6) if spec.get("backoffLimit") is not None else 6):
        return 0
    completions = spec.get("completions")
    remaining = (0 if succeeded else parallelism) if completions is None else int(completions) - succeeded
    return max(0, min(parallelism, remaining))


def job_status(job: Mapping[str, Any], pods: list[Mapping[str, Any]], now: str,
               old: Mapping[str, Any]) -> dict[str, Any]:
    """batch/v1 JobStatus from the Job's pods: active/ready/succeeded/failed, and the terminal
    conditions (SuccessCriteriaMet + Complete, or FailureTarget + Failed) with completionTime."""
    spec = job.get("spec") or {}
    phases = [(p.get("status") or {}).get("phase") for p in pods]
    succeeded, failed = phases.count("Succeeded"), phases.count("Failed")
    active = [p for p, ph in zip(pods, phases, strict=True) if ph not in ("Succeeded", "Failed")]
    ready = sum(1 for p in active if any(c.get("type") == "Ready" and c.get("status") == "True"
                                         for c in (p.get("status") or {}).get("conditions") or []))
    status: dict[str, Any] = {"startTime": old.get("startTime") or now}
    terminal = [c for c in old.get("conditions") or [] if c.get("type") in ("Complete", "Failed")]
    completions = spec.get("completions")
    backoff = int(spec.get("backoffLimit", 6) if spec.get("backoffLimit") is not None else 6)
    conditions = list(old.get("conditions") or [])
    if not terminal:
        done = succeeded >= int(completions) if completions is not None else succeeded > 0 and not active
        if done:
            message = "Reached expected number of succeeded pods"
            conditions = [_job_condition("SuccessCriteriaMet", "CompletionsReached", message, now),
                          _job_condition("Complete", "CompletionsReached", message, now)]
            status["completionTime"] = now
        elif failed > backoff:
            message = "Job has reached the specified backoff limit"
            conditions = [_job_condition("FailureTarget", "BackoffLimitExceeded", message, now),
                          _job_condition("Failed", "BackoffLimitExceeded", message, now)]
    elif old.get("completionTime"):
        status["completionTime"] = old["completionTime"]
    if active:
        status["active"] = len(active)
    if succeeded:
        status["succeeded"] = succeeded
    if failed:
        status["failed"] = failed
    status["ready"] = ready
    status["terminating"] = 0
    status["uncountedTerminatedPods"] = {}
    if conditions:
        status["conditions"] = conditions
    return status


def _job_condition(type_: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {"type": type_, "status": "True", "reason": reason, "message": message, "lastProbeTime": now,
            "lastTransitionTime": now}


def _conditions(kind: str, body: dict[str, Any], status: dict[str, Any], now: str, old: Mapping[str, Any]) -> None:
    """Deployment conditions that ``kubectl rollout status`` and ``wait --for=condition=Available`` read."""
    if kind != "Deployment":
        return
    replicas = (body.get("spec") or {}).get("replicas", 1)
    available = status.get("availableReplicas", 0) >= replicas
    previous = {c.get("type"): c for c in old.get("conditions") or []}

    def cond(type_: str, flag: bool, reason: str, message: str) -> dict[str, Any]:
        value = "True" if flag else "False"
        before = previous.get(type_) or {}
        since = before.get("lastTransitionTime") if before.get("status") == value else now
        return {"type": type_, "status": value, "reason": reason, "message": message,
                "lastUpdateTime": before.get("lastUpdateTime", now) if before.get("status") == value else now,
                "lastTransitionTime": since or now}

    name = body["metadata"]["name"]
    status["conditions"] = [
        cond("Available", available, "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
             "Deployment has minimum availability." if available else "Deployment does not have minimum availability."),
        cond("Progressing", True, "NewReplicaSetAvailable", f'ReplicaSet "{name}" has successfully progressed.'),
    ]
