"""The EndpointSliceMirroring controller's planner: a selector-less Service's own Endpoints, as EndpointSlices.

A Service without a selector gets no slices from the EndpointSlice controller; whoever manages its backends
writes a v1 Endpoints of the same name, and kube-controller-manager's endpointslicemirroring controller
(pkg/controller/endpointslicemirroring: endpointslicemirroring_controller.go, reconciler.go, utils.go) copies it
into EndpointSlices, so that every consumer (kube-proxy, CoreDNS, Cilium) reads slices only. Its rules, restated:

* only when the Service exists, has no selector, and the Endpoints is not labelled
  ``endpointslice.kubernetes.io/skip-mirror: "true"`` (the API server's own ``default/kubernetes`` is);
* one slice per subset and address family: each address is one endpoint (``addresses`` ready, ``notReadyAddresses``
  not), with its hostname, nodeName and targetRef; the subset's ports become the slice's ports; an address that is
  not an IP is skipped; at most 1000 endpoints of a subset are mirrored;
* the slices carry the Endpoints' labels and annotations (less kubectl's last-applied configuration and the
  last-change trigger time), ``kubernetes.io/service-name`` and
  ``managed-by: endpointslicemirroring-controller.k8s.io``, and are owned by the Endpoints (a controller reference),
  so they go when it goes.

Like ``cluster.endpointslices.reconcile``, the plan matches the existing mirrored slices by what they hold (address
type and ports) and names only real changes; names are derived from content instead of upstream's random suffix.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model.objects import MANAGED_BY_LABEL, SERVICE_NAME_LABEL, EndpointSlice, Service
from .endpoints import SKIP_MIRROR_LABEL
from .naming import random_suffix

MIRRORING_CONTROLLER = "endpointslicemirroring-controller.k8s.io"
MAX_ENDPOINTS_PER_SUBSET = 1000  # the controller's --mirroring-max-endpoints-per-subset default
_NOT_COPIED = ("kubectl.kubernetes.io/last-applied-configuration", "endpoints.kubernetes.io/last-change-trigger-time")


@dataclass(frozen=True, slots=True)
class MirrorPlan:
    create: tuple[dict[str, Any], ...] = ()
    update: tuple[dict[str, Any], ...] = ()
    delete: tuple[str, ...] = ()


def should_mirror(service: Service | None, endpoints: Mapping[str, Any] | None) -> bool:
    if service is None or endpoints is None or service.selector is not None or service.type == "ExternalName":
        return False
    labels = (endpoints.get("metadata") or {}).get("labels") or {}
    return str(labels.get(SKIP_MIRROR_LABEL, "")).lower() != "true"


def _address_type(ip: str) -> str | None:
    try:
        return "IPv6" if ipaddress.ip_address(ip).version == 6 else "IPv4"
    except ValueError:
        return None


def _endpoint(address: Mapping[str, Any], ready: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"addresses": [address["ip"]], "conditions": {"ready": ready}}
    if address.get("hostname"):
        out["hostname"] = address["hostname"]
    if address.get("nodeName"):
        out["nodeName"] = address["nodeName"]
    if address.get("targetRef"):
        out["targetRef"] = dict(address["targetRef"])
    return out


def _ports(subset: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in subset.get("ports") or ():
        port: dict[str, Any] = {"name": p.get("name") or "", "port": p.get("port"),
                                "protocol": p.get("protocol") or "TCP"}
        if p.get("appProtocol"):
            port["appProtocol"] = p["appProtocol"]
        out.append(port)
    return out


def desired(endpoints: Mapping[str, Any]) -> list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]]:
    """(address type, ports, endpoints) of each slice the Endpoints mirrors into, in subset order."""
    out = []
    for subset in endpoints.get("subsets") or ():
        by_type: dict[str, list[dict[str, Any]]] = {}
        count = 0
        for field, ready in (("addresses", True), ("notReadyAddresses", False)):
            for address in subset.get(field) or ():
                kind = _address_type(str(address.get("ip") or ""))
                if kind is None or count >= MAX_ENDPOINTS_PER_SUBSET:
                    continue
                count += 1
                by_type.setdefault(kind, []).append(_endpoint(address, ready))
        ports = _ports(subset)
        out += [(kind, ports, by_type[kind]) for kind in sorted(by_type)]
    return out


def _body(endpoints: Mapping[str, Any], name: str, address_type: str, ports: list[dict[str, Any]],
          items: list[dict[str, Any]]) -> dict[str, Any]:
    meta = endpoints.get("metadata") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in _NOT_COPIED}
    labels[SERVICE_NAME_LABEL] = meta.get("name")
    labels[MANAGED_BY_LABEL] = MIRRORING_CONTROLLER
    slice_meta: dict[str, Any] = {
        "name": name, "generateName": f"{meta.get('name')}-", "namespace": meta.get("namespace"),
        "labels": dict(sorted(labels.items())),
        "ownerReferences": [{"apiVersion": "v1", "kind": "Endpoints", "name": meta.get("name"),
                             "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}],
    }
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in _NOT_COPIED}
    if annotations:
        slice_meta["annotations"] = annotations
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": slice_meta,
            "addressType": address_type, "endpoints": items, "ports": ports}


def _content(body: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = body.get("metadata") or {}
    return (body.get("addressType"), body.get("ports"), body.get("endpoints"), meta.get("labels"),
            meta.get("annotations") or {})


def mirror(service: Service | None, endpoints: Mapping[str, Any] | None,
           existing: Sequence[EndpointSlice]) -> MirrorPlan:
    """What the mirroring controller would create, update and delete. Pure. ``existing``: the slices labelled
    with the Service's name; only the mirroring controller's own are touched."""
    mine = sorted((s for s in existing if s.managed_by == MIRRORING_CONTROLLER), key=lambda s: s.name)
    if endpoints is None or not should_mirror(service, endpoints):
        return MirrorPlan(delete=tuple(s.name for s in mine))
    meta = endpoints.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    free = list(mine)
    taken = {s.name for s in existing}
    create, update = [], []
    for index, (address_type, ports, items) in enumerate(desired(endpoints)):
        # Reuse a slice of the same address type and ports (the reconciler's match by port mapping).
        match = next((s for s in free if s.address_type == address_type and s.raw.get("ports") == ports), None)
        match = match or next((s for s in free if s.address_type == address_type), None)
        if match is not None:
            free.remove(match)
            body = _body(endpoints, match.name, address_type, ports, items)
            if _content(body) != _content(match.raw):
                update.append(body)
            continue
        attempt = 0
        while True:
            slice_name = f"{name}-{random_suffix(namespace, name, 'mirror', str(index), str(attempt))}"
            attempt += 1
            if slice_name not in taken:
                break
        taken.add(slice_name)
        create.append(_body(endpoints, slice_name, address_type, ports, items))
    return MirrorPlan(tuple(create), tuple(update), tuple(s.name for s in free))
