"""v1 Endpoints, the deprecated (still served, still maintained) view of a Service's EndpointSlices.

kube-controller-manager's endpoints controller mirrors the slices into one Endpoints per Service
with a selector, plus ``default/kubernetes``: addresses grouped into subsets by port set, ready
ones in ``addresses``, the others in ``notReadyAddresses``; a Service without endpoints gets no
``subsets``. The live controller and the offline build both write what ``endpoints_for`` says, so
``kubectl get endpoints`` and ``knetsim get endpoints -f`` print the same rows.
"""

from __future__ import annotations

from typing import Any

from ..model.objects import EndpointSlice, Service
from .endpointslices import HEADLESS_LABEL

SKIP_MIRROR_LABEL = "endpointslice.kubernetes.io/skip-mirror"


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
    if svc.key == "default/kubernetes":
        # The API server's endpoint reconciler writes this one and its slice itself, and labels the Endpoints so
        # that the mirroring controller leaves it alone (pkg/controlplane/reconcilers: skipMirrorLabel).
        labels[SKIP_MIRROR_LABEL] = "true"
    meta: dict[str, Any] = {"name": svc.name, "namespace": svc.namespace}
    if labels:
        meta["labels"] = labels
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Endpoints", "metadata": meta}
    if subsets:
        body["subsets"] = subsets
    return body


__all__ = ["endpoints_for"]
