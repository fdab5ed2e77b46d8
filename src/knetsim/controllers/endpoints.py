"""The (deprecated, still running) endpoints controller: v1 Endpoints mirrored from the slices.

One Endpoints per Service with a selector, plus ``default/kubernetes``: addresses grouped into
subsets by port set, ready ones in ``addresses``, the others in ``notReadyAddresses``; a Service
without endpoints gets no ``subsets``. An Endpoints whose Service is gone (or lost its selector)
is deleted, unless a client wrote it (a selector-less Service's hand-made Endpoints).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..apiserver.store import Change, Key
from ..model.objects import EndpointSlice, Service, stable_uid
from .base import Controller
from .endpointslice import service_of_slice, slices_of
from .informer import key_of

HEADLESS_LABEL = "service.kubernetes.io/headless"


def endpoints_for(svc: Service, slices: list[EndpointSlice]) -> dict[str, Any] | None:
    """The Endpoints object mirroring ``slices`` for ``svc``; None when the Service gets none."""
    spec = svc.raw.get("spec") or {}
    if spec.get("type") == "ExternalName" or (not spec.get("selector") and svc.key != "default/kubernetes"):
        return None
    # A dual-stack Service's Endpoints hold its primary family only (podToEndpointAddressForService
    # takes ipFamilies[0]); the other family exists in EndpointSlices alone.
    families = spec.get("ipFamilies") or (["IPv6"] if ":" in str(spec.get("clusterIP") or "") else ["IPv4"])
    groups: dict[tuple[tuple[str, int, str], ...], dict[str, list[dict[str, Any]]]] = {}
    for es in slices:
        raw = es.raw
        if raw.get("addressType", "IPv4") != families[0]:
            continue
        ports = tuple(sorted((str(p.get("name") or ""), int(p.get("port") or 0), str(p.get("protocol") or "TCP"))
                             for p in raw.get("ports") or [] if p.get("port")))
        group = groups.setdefault(ports, {"addresses": [], "notReadyAddresses": []})
        for ep in raw.get("endpoints") or []:
            ready = (ep.get("conditions") or {}).get("ready", True) is not False
            for ip in ep.get("addresses") or []:
                addr: dict[str, Any] = {"ip": ip}
                for source, target in (("hostname", "hostname"), ("nodeName", "nodeName")):
                    if ep.get(source):
                        addr[target] = ep[source]
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
            subset["ports"] = [{**({"name": n} if n else {}), "port": p, "protocol": proto} for n, p, proto in ports]
        subsets.append(subset)
    labels = dict(svc.meta.labels or {})
    if spec.get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    meta: dict[str, Any] = {"name": svc.name, "namespace": svc.namespace}
    if labels:
        meta["labels"] = labels
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Endpoints", "metadata": meta}
    if subsets:
        body["subsets"] = subsets
    return body


class EndpointsController(Controller):
    name = "endpoints-controller"

    def handle(self, change: Change) -> Iterable[Key]:
        if change.kind in ("Service", "Endpoints"):
            return [("Service", *key_of(change.kind, change.obj)[1:])]
        if change.kind == "EndpointSlice":
            return service_of_slice(change.obj)
        return []

    def resync(self) -> Iterable[Key]:
        return sorted({("Service", ns, name) for _k, ns, name in [*self.informer.keys("Service"),
                                                                   *self.informer.keys("Endpoints")]})

    def sync(self, key: Key) -> None:
        _kind, namespace, name = key
        ep_key: Key = ("Endpoints", namespace, name)
        stored = self.store.objects.get(ep_key)
        service = self.informer.typed(key)
        want = endpoints_for(service, slices_of(self.informer, namespace, name)) if isinstance(service, Service) \
            else None
        batch = self.batch()
        if want is None:
            if stored is None or stored.managed == "user":
                return
            batch.delete(ep_key)
        else:
            old = stored.body if stored is not None else None
            if old is not None and {k: v for k, v in old.items() if k != "metadata"} == \
                    {k: v for k, v in want.items() if k != "metadata"} and \
                    (old.get("metadata") or {}).get("labels") == want["metadata"].get("labels"):
                return
            old_meta = (old or {}).get("metadata") or {}
            want["metadata"]["uid"] = old_meta.get("uid") or stable_uid("Endpoints", namespace, name)
            want["metadata"]["creationTimestamp"] = old_meta.get("creationTimestamp") or batch.now
            batch.put(ep_key, want)
        batch.commit()
