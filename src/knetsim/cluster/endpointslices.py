"""The EndpointSlice controller, as a planner.

``reconcile(service, pods, existing, nodes)`` is a pure function returning a ``Plan``; the
caller applies it. It follows ``k8s.io/endpointslice`` (reconciler.go, utils.go):

* a pod is an endpoint when it has an IP and is not Succeeded/Failed; terminating pods stay,
  marked ``terminating`` (ready=false, serving=podReady);
* ``ready = publishNotReadyAddresses or (podReady and not terminating)``;
* targetPort is resolved per pod (``FindPort``): a named port that a pod does not declare,
  with the Service port's protocol, leaves that port out for that pod; pods that resolve
  to different port lists land in different slices;
* at most 100 endpoints per slice; slices are labelled ``kubernetes.io/service-name`` and
  ``endpointslice.kubernetes.io/managed-by``, plus the Service's own labels;
* a Service with a selector and no endpoints keeps one empty placeholder slice (what
  ``kubectl get endpointslices`` shows as ``<unset>`` for a selector typo);
* a Service without a selector, or of type ExternalName, gets no managed slices.

Existing managed slices (from a snapshot or a live cluster) are matched to the desired
endpoints by content, as the upstream reconciler does: a slice keeps the endpoints still
desired, leftovers fill slices being updated and then the unchanged slice they fit best, and
only then are slices created; a slice about to be deleted is reused for one about to be
created. However a real controller spread the endpoints over its slices, slices that are right
stay unchanged, so a snapshot shows no drift that is not there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.objects import (
    ENDPOINTSLICE_CONTROLLER,
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
    EndpointSlice,
    Node,
    Pod,
    Service,
    ServicePort,
)
from .naming import random_suffix
from .topology import Event, SliceSet, apply_hints

MAX_ENDPOINTS_PER_SLICE = 100
HEADLESS_LABEL = "service.kubernetes.io/headless"


@dataclass(frozen=True, slots=True)
class Plan:
    create: tuple[dict[str, Any], ...] = ()
    update: tuple[dict[str, Any], ...] = ()
    delete: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    # Pods left out of some port because a named targetPort did not resolve on them.
    unresolved: tuple[tuple[str, str], ...] = field(default=())

    unchanged_bodies: tuple[dict[str, Any], ...] = ()
    # What the controller records on the Service about topology hints (TopologyAwareHintsDisabled, ...).
    events: tuple[Event, ...] = ()

    @property
    def desired(self) -> tuple[dict[str, Any], ...]:
        """Every slice the Service should have after the plan: created, updated and kept."""
        return self.create + self.update + self.unchanged_bodies


def find_port(pod: Pod, port: ServicePort) -> int | None:
    """``podutil.FindPort``: a number is used as is; a name is looked up with the same protocol."""
    target = port.target_port
    if isinstance(target, int):
        return target
    return pod.named_port(str(target), port.protocol)


def endpoint_ports(service: Service, pod: Pod) -> tuple[list[dict[str, Any]], list[str]]:
    ports, missing = [], []
    for sp in service.ports:
        number = find_port(pod, sp)
        if number is None:
            missing.append(sp.name or str(sp.port))
            continue
        entry: dict[str, Any] = {"name": sp.name, "port": number, "protocol": sp.protocol}
        if sp.app_protocol:
            entry["appProtocol"] = sp.app_protocol
        ports.append(entry)
    return ports, missing


def should_be_endpoint(pod: Pod) -> bool:
    """``ShouldPodBeInEndpoints`` with includeTerminating=true (EndpointSlices keep terminating pods)."""
    return bool(pod.pod_ip) and pod.phase not in ("Succeeded", "Failed")


def pod_to_endpoint(service: Service, pod: Pod, node: Node | None, address_type: str = "IPv4") -> dict[str, Any]:
    pod_ready = pod.ready
    terminating = pod.terminating
    ready = service.publish_not_ready_addresses or (pod_ready and not terminating)
    want_v6 = address_type == "IPv6"
    endpoint: dict[str, Any] = {
        # getEndpointAddresses: the pod's addresses of the slice's family.
        "addresses": [ip for ip in pod.pod_ips or (pod.pod_ip,) if (":" in ip) == want_v6],
        "conditions": {"ready": ready, "serving": pod_ready, "terminating": terminating},
        "nodeName": pod.node_name,
        "targetRef": {"kind": "Pod", "namespace": pod.namespace, "name": pod.name, "uid": pod.meta.uid},
    }
    if node is not None and node.zone:
        endpoint["zone"] = node.zone
    if pod.hostname and pod.subdomain == service.name:
        endpoint["hostname"] = pod.hostname
    return endpoint


def slice_labels(service: Service) -> dict[str, str]:
    reserved = (SERVICE_NAME_LABEL, MANAGED_BY_LABEL, HEADLESS_LABEL)
    labels = {k: v for k, v in service.labels.items() if k not in reserved}
    labels[SERVICE_NAME_LABEL] = service.name
    labels[MANAGED_BY_LABEL] = ENDPOINTSLICE_CONTROLLER
    if service.headless:
        labels[HEADLESS_LABEL] = ""
    return dict(sorted(labels.items()))


def _slice(service: Service, name: str, endpoints: list[dict[str, Any]] | None,
           ports: list[dict[str, Any]] | None, address_type: str = "IPv4") -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "generateName": f"{service.name}-",
            "namespace": service.namespace,
            "labels": slice_labels(service),
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": service.name, "uid": service.meta.uid,
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "addressType": address_type,
        "endpoints": endpoints,
        "ports": ports,
    }


PortKey = tuple[tuple[Any, ...], ...]
EndpointKey = tuple[Any, ...]


def _port_key(ports: list[dict[str, Any]] | None) -> PortKey:
    """``NewPortMapKey``: slices are grouped by their whole port list, appProtocol included."""
    return tuple(sorted((p.get("name") or "", p.get("port"), p.get("protocol") or "TCP", p.get("appProtocol") or "")
                        for p in ports or []))


def _endpoint_key(endpoint: Mapping[str, Any]) -> EndpointKey:
    """``hashEndpoint``: the same endpoint is the same addresses, hostname and target pod."""
    ref = endpoint.get("targetRef") or {}
    return (tuple(sorted(endpoint.get("addresses") or ())), endpoint.get("hostname") or "",
            ref.get("namespace") or "", ref.get("name") or "")


def _same_endpoint(desired: Mapping[str, Any], existing: Mapping[str, Any]) -> bool:
    """``EndpointsEqualBeyondHash``: conditions, node and zone. A zone knetsim cannot know (a snapshot
    without Node objects) is no difference, and neither is a missing uid on either side."""
    def conditions(e: Mapping[str, Any]) -> tuple[bool, bool, bool]:
        cond = e.get("conditions") or {}
        ready = cond.get("ready", True) is not False  # nil ready means unknown, read as ready
        return ready, cond.get("serving", ready) is not False, bool(cond.get("terminating", False))

    if conditions(desired) != conditions(existing) or desired.get("nodeName") != existing.get("nodeName"):
        return False
    if desired.get("zone") and desired.get("zone") != existing.get("zone"):
        return False
    uids = ((desired.get("targetRef") or {}).get("uid"), (existing.get("targetRef") or {}).get("uid"))
    return not all(uids) or uids[0] == uids[1]


@dataclass(slots=True)
class _Group:
    """One port mapping's share of the plan (``reconcileByPortMapping``)."""

    create: list[list[dict[str, Any]]] = field(default_factory=list)  # endpoint lists of new slices
    update: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # slice name -> its endpoints
    delete: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def _fill(endpoints: list[dict[str, Any]], desired: dict[EndpointKey, dict[str, Any]]) -> None:
    """Move desired endpoints into a slice until it is full; upstream pops "any", knetsim the first."""
    while desired and len(endpoints) < MAX_ENDPOINTS_PER_SLICE:
        key = next(iter(desired))
        endpoints.append(desired.pop(key))


def _by_port_mapping(existing: list[EndpointSlice], desired: dict[EndpointKey, dict[str, Any]]) -> _Group:
    """Existing slices keep the endpoints still desired (updated where they changed); leftovers fill the
    slices being updated, fullest first, then the one unchanged slice they fit best, then new slices."""
    out = _Group()
    for es in existing:
        kept, changed = [], False
        for endpoint in es.raw.get("endpoints") or []:
            want = desired.pop(_endpoint_key(endpoint), None)
            if want is not None:
                kept.append(want)
                changed = changed or not _same_endpoint(want, endpoint)
        if changed or len(kept) != len(es.raw.get("endpoints") or []):
            if kept:
                out.update[es.name] = kept
            else:
                out.delete.append(es.name)
        else:
            out.unchanged.append(es.name)
    if desired and out.update:
        for name in sorted(out.update, key=lambda n: (-len(out.update[n]), n)):
            _fill(out.update[name], desired)
    sizes = {es.name: len(es.raw.get("endpoints") or []) for es in existing}
    while desired:
        target: str | None = None
        if len(desired) < MAX_ENDPOINTS_PER_SLICE and out.unchanged:
            # getSliceToFill: the unchanged slice closest to full once the rest is added.
            fits = [(MAX_ENDPOINTS_PER_SLICE - len(desired) - sizes[n], n) for n in out.unchanged]
            target = min((f for f in fits if f[0] >= 0), default=(0, None))[1]
        if target is None:
            endpoints: list[dict[str, Any]] = []
            _fill(endpoints, desired)
            out.create.append(endpoints)
            continue
        slice_ = next(es for es in existing if es.name == target)
        endpoints = [*(slice_.raw.get("endpoints") or [])]
        _fill(endpoints, desired)
        out.unchanged.remove(target)
        out.update[target] = endpoints
    return out


def address_types(service: Service) -> tuple[str, ...]:
    """``getAddressTypesForService``: the Service's families; an object from a cluster older than
    dual-stack goes by its ClusterIP, and a headless one without families gets both."""
    spec = service.raw.get("spec") or {}
    families = [f for f in spec.get("ipFamilies") or () if f in ("IPv4", "IPv6")]
    if families:
        return tuple(sorted(set(families)))
    if service.cluster_ip and service.cluster_ip != "None":
        return ("IPv6",) if ":" in service.cluster_ip else ("IPv4",)
    return ("IPv4", "IPv6")


def reconcile(service: Service, pods: list[Pod], existing: list[EndpointSlice],
              nodes: Mapping[str, Node]) -> Plan:
    """What the controller would create, update and delete for ``service``. Pure.

    ``k8s.io/endpointslice`` reconciler.go: slices are matched to the desired endpoints by content,
    not by name or position, so the slices a real controller made (however it spread the endpoints
    over them) are kept as they are while they hold the right endpoints, and a plan names only real
    changes. Each of the Service's address types (IPv4, IPv6: its ipFamilies) is reconciled on its
    own, from the pods' addresses of that family; managed slices of another type are deleted.
    """
    managed = sorted((s for s in existing if s.managed_by == ENDPOINTSLICE_CONTROLLER), key=lambda s: s.name)
    if service.selector is None or service.type == "ExternalName":
        return Plan(delete=tuple(s.name for s in managed))
    supported = address_types(service)
    creates: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]] | None]] = []
    updates: dict[str, tuple[str, list[dict[str, Any]] | None, list[dict[str, Any]] | None]] = {}
    deletes: list[tuple[str, str]] = [(s.address_type, s.name) for s in managed if s.address_type not in supported]
    unchanged: list[str] = []
    unresolved: list[tuple[str, str]] = []
    eligible = [pod for pod in sorted(pods, key=lambda p: p.name) if should_be_endpoint(pod)]
    for pod in eligible:
        unresolved.extend((pod.name, m) for m in endpoint_ports(service, pod)[1])
    by_name = {s.name: s for s in managed}
    events: list[Event] = []
    for address_type in supported:
        slices = [s for s in managed if s.address_type == address_type]
        got = _by_address_type(service, eligible, slices, nodes, address_type)
        # Hints are reconciled per address type, over every slice of it (topologycache, trafficdist).
        hinted = SliceSet([endpoints for endpoints, _ in got.create],
                          {name: endpoints for name, (endpoints, _) in got.update.items()},
                          {name: [dict(e) for e in by_name[name].raw.get("endpoints") or []] for name in got.unchanged})
        events += apply_hints(service, address_type, hinted, [nodes[n] for n in sorted(nodes)])
        for name, endpoints in hinted.update.items():
            ports = got.update[name][1] if name in got.update else by_name[name].raw.get("ports")
            got.update[name] = (endpoints, ports)
        got.unchanged = [n for n in got.unchanged if n in hinted.unchanged]
        creates += [(address_type, endpoints, ports) for endpoints, ports in got.create]
        updates.update((name, (address_type, endpoints, ports)) for name, (endpoints, ports) in got.update.items())
        deletes += [(address_type, name) for name in got.delete]
        unchanged += got.unchanged
    # finalize(): a slice about to be deleted is updated into one about to be created of its address type.
    deletes.sort(key=lambda d: d[1])
    for address_type, name in list(deletes):
        match = next((i for i in range(len(creates) - 1, -1, -1) if creates[i][0] == address_type), None)
        if match is None:
            continue
        deletes.remove((address_type, name))
        updates[name] = creates.pop(match)
    taken = {s.name for s in existing}
    create_bodies, index = [], 0
    for address_type, endpoints, ports in creates:
        while True:
            name = f"{service.name}-{random_suffix(service.namespace, service.name, 'slice', str(index))}"
            index += 1
            if name not in taken:
                break
        taken.add(name)
        create_bodies.append(_slice(service, name, endpoints or None, ports, address_type))
    return Plan(
        create=tuple(create_bodies),
        update=tuple(_slice(service, name, endpoints or None, ports, address_type)
                     for name, (address_type, endpoints, ports) in sorted(updates.items())),
        delete=tuple(sorted(name for _, name in deletes)),
        unchanged=tuple(sorted(unchanged)),
        unresolved=tuple(unresolved),
        # Reused as the cluster has them: the controller leaves a slice alone while it is right.
        unchanged_bodies=tuple(by_name[n].raw for n in sorted(unchanged)),
        events=tuple(events),
    )


@dataclass(slots=True)
class _TypePlan:
    create: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = field(default_factory=list)
    update: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = field(default_factory=dict)
    delete: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def _by_address_type(service: Service, pods: list[Pod], managed: list[EndpointSlice], nodes: Mapping[str, Node],
                     address_type: str) -> _TypePlan:
    """``reconcileByAddressType``: the slices of one address type, grouped by port list."""
    groups: dict[PortKey, tuple[list[dict[str, Any]], dict[EndpointKey, dict[str, Any]]]] = {}
    for pod in pods:
        endpoint = pod_to_endpoint(service, pod, nodes.get(pod.node_name), address_type)
        if not endpoint["addresses"]:
            continue  # the pod has no address of this family
        ports, _missing = endpoint_ports(service, pod)
        groups.setdefault(_port_key(ports), (ports, {}))[1][_endpoint_key(endpoint)] = endpoint
    existing_by_ports: dict[PortKey, list[EndpointSlice]] = {}
    for es in managed:
        existing_by_ports.setdefault(_port_key(es.raw.get("ports")), []).append(es)
    out = _TypePlan()
    for key in sorted(groups):
        ports, desired = groups[key]
        got = _by_port_mapping(existing_by_ports.get(key, []), desired)
        out.create += [(endpoints, ports or None) for endpoints in got.create]
        out.update.update((name, (endpoints, ports or None)) for name, endpoints in got.update.items())
        out.delete += got.delete
        out.unchanged += got.unchanged
    for key in sorted(set(existing_by_ports) - set(groups)):
        out.delete += [es.name for es in existing_by_ports[key]]
    if len(out.delete) == len(managed) and not out.create:
        # A selector with no endpoints keeps one placeholder slice (no endpoints, no ports) per address type.
        by_name = {s.name: s for s in managed}
        if len(out.delete) == 1 and not by_name[out.delete[0]].raw.get("endpoints") and not by_name[
                out.delete[0]].raw.get("ports"):
            out.unchanged, out.delete = out.delete, []
        else:
            out.create.append(([], None))
    return out


def describe_drift(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """A one-line account of how a snapshot's slice differs from what the controller computes."""
    def addresses(body: Mapping[str, Any]) -> dict[str, bool]:
        return {a: (e.get("conditions") or {}).get("ready", True) is not False
                for e in body.get("endpoints") or [] for a in e.get("addresses") or []}

    before, after = addresses(old), addresses(new)
    parts = []
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    flipped = sorted(a for a in set(before) & set(after) if before[a] != after[a])
    if added:
        parts.append("missing " + ", ".join(added))
    if removed:
        parts.append("stale " + ", ".join(removed))
    if flipped:
        parts.append("readiness differs for " + ", ".join(flipped))
    if not parts:
        # Same addresses, same readiness: a serving/terminating condition, the node or the pod behind it changed.
        def details(body: Mapping[str, Any]) -> dict[str, tuple[Any, ...]]:
            return {a: (e.get("nodeName"), (e.get("conditions") or {}).get("serving", True) is not False,
                        bool((e.get("conditions") or {}).get("terminating", False)),
                        (e.get("targetRef") or {}).get("name"), (e.get("targetRef") or {}).get("uid"))
                    for e in body.get("endpoints") or [] for a in e.get("addresses") or []}

        was, now = details(old), details(new)
        changed = sorted(a for a in set(was) & set(now) if was[a] != now[a])
        if changed:
            parts.append("serving, terminating, node or target pod differs for " + ", ".join(changed))
    old_ports = sorted((p.get("name") or "", p.get("port")) for p in old.get("ports") or [])
    new_ports = sorted((p.get("name") or "", p.get("port")) for p in new.get("ports") or [])
    if old_ports != new_ports:
        parts.append(f"ports {old_ports} vs computed {new_ports}")
    return "; ".join(parts) or "differs"
