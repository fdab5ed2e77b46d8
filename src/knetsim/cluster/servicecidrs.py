"""ServiceCIDR and IPAddress (networking.k8s.io/v1): the Service IP ranges as objects, and one object per
allocated ClusterIP.

* The API server creates the ``kubernetes`` ServiceCIDR from ``--service-cluster-ip-range`` (the
  cluster config's serviceCIDR, one CIDR per family) and sets it Ready
  (pkg/controlplane/controller/defaultservicecidr).
* A ServiceCIDR a user adds grows the ranges: ClusterIPs come from any ready one of the Service's
  family (``cluster.services``). kube-controller-manager's servicecidrs controller puts the
  ``networking.k8s.io/service-cidr-finalizer`` on each and sets it Ready; a ServiceCIDR being deleted
  keeps its finalizer, Ready False with reason Terminating, while an IPAddress still depends on it
  alone (no other ServiceCIDR contains that address), and goes once none does
  (pkg/controller/servicecidrs).
* Every ClusterIP has an IPAddress named by the address, labelled with its family and
  ``ipaddress.kubernetes.io/managed-by: ipallocator.k8s.io``, its ``parentRef`` the Service
  (pkg/registry/core/service/ipallocator). An IPAddress a user writes holds its address as well.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .config import ClusterConfig, family_of
from .services import DEFAULT_SERVICE_CIDR, ServiceCIDRRange

FINALIZER = "networking.k8s.io/service-cidr-finalizer"
LABEL_FAMILY = "ipaddress.kubernetes.io/ip-family"
LABEL_MANAGED_BY = "ipaddress.kubernetes.io/managed-by"
IPALLOCATOR = "ipallocator.k8s.io"
READY_MESSAGE = "Kubernetes Service CIDR is ready"
TERMINATING = "Terminating"
TERMINATING_MESSAGE = ("There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new "
                       "ServiceCIDR")


def default_service_cidr(config: ClusterConfig) -> dict[str, Any]:
    """The ``kubernetes`` ServiceCIDR as a fresh cluster has it."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "ServiceCIDR",
        "metadata": {"name": DEFAULT_SERVICE_CIDR, "finalizers": [FINALIZER]},
        "spec": {"cidrs": list(config.service_cidrs)},
        "status": {"conditions": [ready_condition()]},
    }


def ready_condition(now: str | None = None) -> dict[str, Any]:
    condition: dict[str, Any] = {"type": "Ready", "status": "True", "reason": "", "message": READY_MESSAGE}
    if now:
        condition["lastTransitionTime"] = now
    return condition


def _cidrs(body: Mapping[str, Any]) -> list[str]:
    spec = body.get("spec") or {}
    cidrs = spec.get("cidrs") if isinstance(spec, Mapping) else None
    if not isinstance(cidrs, list):  # a stored object of the wrong shape (before its recheck) holds no range
        return []
    out = []
    for c in cidrs:
        try:
            out.append(str(ipaddress.ip_network(str(c), strict=False)))
        except ValueError:
            continue
    return out


def _deleting(body: Mapping[str, Any]) -> bool:
    return bool((body.get("metadata") or {}).get("deletionTimestamp"))


def _ready(body: Mapping[str, Any]) -> bool:
    """``isReady``: no Ready condition counts as ready (a cluster without the controller-manager still works)."""
    status = body.get("status") or {}
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return True


def ranges(service_cidrs: Iterable[Mapping[str, Any]]) -> list[ServiceCIDRRange]:
    """What the ClusterIP allocators draw from: every CIDR of every ServiceCIDR, ready unless being deleted or
    marked not ready."""
    out = []
    for body in service_cidrs:
        name = str((body.get("metadata") or {}).get("name") or "")
        usable = _ready(body) and not _deleting(body)
        out += [ServiceCIDRRange(name, cidr, usable) for cidr in _cidrs(body)]
    return out


def _contains(cidr: str, ip: str) -> bool:
    """``PrefixContainsIP``: inside, not the network address, and for IPv4 not the broadcast address."""
    net = ipaddress.ip_network(cidr)
    addr = ipaddress.ip_address(ip)
    if addr.version != net.version or addr not in net or addr == net.network_address:
        return False
    return not (net.version == 4 and addr == net.broadcast_address)


def ip_address(ip: str, namespace: str, name: str) -> dict[str, Any]:
    """The IPAddress the allocator writes for a Service's ClusterIP."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IPAddress",
        "metadata": {"name": str(ipaddress.ip_address(ip)),
                     "labels": {LABEL_FAMILY: family_of(ip), LABEL_MANAGED_BY: IPALLOCATOR}},
        # ParentReference's group is "" for core Services and left out (omitempty).
        "spec": {"parentRef": {"resource": "services", "namespace": namespace, "name": name}},
    }


def service_ip_addresses(services: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One IPAddress per ClusterIP of every Service, sorted by address."""
    out: dict[str, dict[str, Any]] = {}
    for body in services:
        spec = body.get("spec") or {}
        if spec.get("type") == "ExternalName":
            continue
        meta = body.get("metadata") or {}
        for ip in spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else []):
            try:
                canonical = str(ipaddress.ip_address(str(ip)))
            except ValueError:
                continue  # "None" (headless)
            out.setdefault(canonical, ip_address(canonical, str(meta.get("namespace") or ""), str(meta.get("name"))))
    return [out[k] for k in sorted(out, key=lambda ip: (":" in ip, ipaddress.ip_address(ip)))]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The servicecidrs controller's decision for one ServiceCIDR."""

    finalizers: tuple[str, ...]
    condition: dict[str, Any]
    blocking: tuple[str, ...] = ()  # the IPAddresses that keep a deleted ServiceCIDR from going


def reconcile(body: Mapping[str, Any], service_cidrs: Sequence[Mapping[str, Any]],
              addresses: Iterable[Mapping[str, Any]], now: str | None = None) -> Verdict:
    """What the controller writes: the finalizer and Ready True, or for a ServiceCIDR being deleted, Ready False
    while an allocator-managed IPAddress has no other ServiceCIDR containing it (no finalizer once none)."""
    name = str((body.get("metadata") or {}).get("name") or "")
    finalizers = tuple((body.get("metadata") or {}).get("finalizers") or ())
    if not _deleting(body):
        if FINALIZER not in finalizers:
            finalizers = (*finalizers, FINALIZER)
        return Verdict(finalizers, ready_condition(now))
    blocking = tuple(orphans(body, service_cidrs, addresses))
    if blocking:
        condition = {"type": "Ready", "status": "False", "reason": TERMINATING, "message": TERMINATING_MESSAGE}
        if now:
            condition["lastTransitionTime"] = now
        return Verdict(finalizers, condition, blocking)
    return Verdict(tuple(f for f in finalizers if f != FINALIZER),
                   {"type": "Ready", "status": "False", "reason": TERMINATING, "message": f"{name} is being deleted"})


def orphans(body: Mapping[str, Any], service_cidrs: Sequence[Mapping[str, Any]],
            addresses: Iterable[Mapping[str, Any]]) -> list[str]:
    """``canDeleteCIDR``: the managed IPAddresses only this ServiceCIDR contains (none when another ServiceCIDR
    contains each of its CIDRs)."""
    name = str((body.get("metadata") or {}).get("name") or "")
    others = [o for o in service_cidrs if str((o.get("metadata") or {}).get("name") or "") != name]
    mine = _cidrs(body)
    if all(any(_covers(c, mine_cidr) for o in others for c in _cidrs(o)) for mine_cidr in mine):
        return []
    out = []
    for address in addresses:
        meta = address.get("metadata") or {}
        if (meta.get("labels") or {}).get(LABEL_MANAGED_BY) != IPALLOCATOR:
            continue
        ip = str(meta.get("name") or "")
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            continue
        if any(_contains(c, ip) for c in mine) and not any(_contains(c, ip) for o in others for c in _cidrs(o)):
            out.append(ip)
    return sorted(out)


def _covers(outer: str, inner: str) -> bool:
    a, b = ipaddress.ip_network(outer), ipaddress.ip_network(inner)
    return a.version == b.version and b.subnet_of(a)  # type: ignore[arg-type]
