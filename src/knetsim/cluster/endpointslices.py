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

Existing managed slices are reused by name in order, as the upstream reconciler updates
slices in place rather than replacing them.
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


def pod_to_endpoint(service: Service, pod: Pod, node: Node | None) -> dict[str, Any]:
    pod_ready = pod.ready
    terminating = pod.terminating
    ready = service.publish_not_ready_addresses or (pod_ready and not terminating)
    endpoint: dict[str, Any] = {
        "addresses": [pod.pod_ip],
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
           ports: list[dict[str, Any]] | None) -> dict[str, Any]:
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
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": ports,
    }


def _port_key(ports: list[dict[str, Any]]) -> tuple[tuple[Any, ...], ...]:
    return tuple(sorted((p["name"], p["port"], p["protocol"]) for p in ports))


def reconcile(service: Service, pods: list[Pod], existing: list[EndpointSlice],
              nodes: Mapping[str, Node]) -> Plan:
    """What the controller would create, update and delete for ``service``. Pure."""
    managed = sorted((s for s in existing if s.managed_by == ENDPOINTSLICE_CONTROLLER), key=lambda s: s.name)
    if service.selector is None or service.type == "ExternalName":
        return Plan(delete=tuple(s.name for s in managed))
    groups: dict[tuple[tuple[Any, ...], ...], tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    unresolved: list[tuple[str, str]] = []
    for pod in sorted(pods, key=lambda p: p.name):
        if not should_be_endpoint(pod):
            continue
        ports, missing = endpoint_ports(service, pod)
        unresolved.extend((pod.name, m) for m in missing)
        key = _port_key(ports)
        group = groups.setdefault(key, (ports, []))
        group[1].append(pod_to_endpoint(service, pod, nodes.get(pod.node_name)))

    desired: list[tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]] = []
    for key in sorted(groups):
        ports, endpoints = groups[key]
        for start in range(0, len(endpoints), MAX_ENDPOINTS_PER_SLICE):
            desired.append((endpoints[start:start + MAX_ENDPOINTS_PER_SLICE], ports or None))
    if not desired:
        desired.append((None, None))  # the placeholder slice

    names = [s.name for s in managed]
    create, update, unchanged, kept = [], [], [], []
    by_name = {s.name: s for s in managed}
    for i, (endpoints, ports) in enumerate(desired):
        if i < len(names):
            body = _slice(service, names[i], endpoints, ports)
            old = by_name[names[i]]
            if _same(old.raw, body):
                unchanged.append(names[i])
                kept.append(body)
            else:
                update.append(body)
        else:
            name = f"{service.name}-{random_suffix(service.namespace, service.name, 'slice', str(i))}"
            create.append(_slice(service, name, endpoints, ports))
    return Plan(
        create=tuple(create),
        update=tuple(update),
        delete=tuple(names[len(desired):]),
        unchanged=tuple(unchanged),
        unresolved=tuple(unresolved),
        unchanged_bodies=tuple(kept),
    )


def _same(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    def norm_endpoints(body: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        out = []
        for e in body.get("endpoints") or []:
            cond = e.get("conditions") or {}
            out.append((tuple(e.get("addresses") or ()), cond.get("ready", True) is not False,
                        cond.get("serving", True) is not False, bool(cond.get("terminating", False)),
                        e.get("nodeName"), e.get("hostname")))
        return sorted(out)

    def norm_ports(body: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        return sorted((p.get("name") or "", p.get("port"), p.get("protocol", "TCP")) for p in body.get("ports") or [])

    return norm_endpoints(old) == norm_endpoints(new) and norm_ports(old) == norm_ports(new)


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
    old_ports = sorted((p.get("name") or "", p.get("port")) for p in old.get("ports") or [])
    new_ports = sorted((p.get("name") or "", p.get("port")) for p in new.get("ports") or [])
    if old_ports != new_ports:
        parts.append(f"ports {old_ports} vs computed {new_ports}")
    return "; ".join(parts) or "differs"
