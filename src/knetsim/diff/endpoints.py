"""Endpoints: per Service port, the endpoints gained and lost, counted per workload, and why.

The endpoints are the EndpointSlices the controller computed on each side, read as kube-proxy reads
them (``dataplane.model.endpoints_by_port``: ready, serving-terminating, not ready); the reason a
workload's pods are not endpoints on one side is the EndpointSlice controller's own test, the one
``knetsim endpoints`` explains: the selector, the pod's readiness, the targetPort resolved on it
(``cluster.endpointslices``).
"""

from __future__ import annotations

from collections import Counter

from ..cluster.endpointslices import find_port, should_be_endpoint
from ..cluster.state import ClusterState
from ..dataplane.model import endpoints_by_port
from ..model.objects import Service, ServicePort
from .model import CHANGED, GAINED, LOST, Item, Layer, Side
from .workloads import Workloads

TITLE = "endpoints (EndpointSlices per Service port, counted per workload)"
PortKey = tuple[str, str]  # (port name, protocol): how EndpointSlices name a Service port


# Labels a controller adds to every pod it makes: they tell nobody why a selector misses.
CONTROLLER_LABELS = frozenset({"pod-template-hash", "controller-revision-hash", "statefulset.kubernetes.io/pod-name",
                               "apps.kubernetes.io/pod-index", "batch.kubernetes.io/controller-uid",
                               "batch.kubernetes.io/job-name", "controller-uid", "job-name"})


def _port_label(sp: ServicePort) -> str:
    return f"{sp.name} ({sp.port}/{sp.protocol})" if sp.name else f"{sp.port}/{sp.protocol}"


def _endpoints(state: ClusterState, workloads: Workloads) -> dict[tuple[str, PortKey], Counter[tuple[str, int, str]]]:
    """(service, port) -> count of (workload, target port, condition)."""
    out: dict[tuple[str, PortKey], Counter[tuple[str, int, str]]] = {}
    for key in sorted(state.services):
        svc = state.services[key]
        if svc.type == "ExternalName":
            continue
        by_port = endpoints_by_port(state, svc)
        for sp in svc.ports:
            counts: Counter[tuple[str, int, str]] = Counter()
            for ep in by_port.get((sp.name, sp.protocol), ()):
                condition = "ready" if ep.ready else "terminating" if ep.serving and ep.terminating else "not ready"
                counts[(workloads.of_ip(ep.ip), ep.port, condition)] += 1
            out[(key, (sp.name, sp.protocol))] = counts
    return out


def why_not(state: ClusterState, workloads: Workloads, svc: Service | None, port: PortKey, workload: str) -> str:
    """Why the pods of ``workload`` are not ready endpoints of ``svc`` ``port`` in ``state``."""
    if svc is None:
        return "the Service does not exist"
    sp = next((p for p in svc.ports if (p.name, p.protocol) == port), None)
    if sp is None:
        return f"the Service has no port {port[0] or '(unnamed)'}/{port[1]}"
    pods = workloads.pods(workload)
    if not pods:
        return f"{workload} has no pods"
    if svc.selector is None:
        return "the Service has no selector (its EndpointSlices are written by hand)"
    selector = svc.selector_view
    matching = [p for p in pods if selector.matches(p.labels)]
    if not matching:
        labels = ",".join(f"{k}={v}" for k, v in sorted(pods[0].labels.items()) if k not in CONTROLLER_LABELS)
        labels = labels or "none"
        return f"the selector {selector} matches none of its pods (labels {labels})"
    live = [p for p in matching if should_be_endpoint(p)]
    if not live:
        return f"its pods have no IP or have ended (phase {matching[0].phase})"
    resolved = [p for p in live if find_port(p, sp) is not None]
    if not resolved:
        return f"targetPort {sp.target_port!r} names no {sp.protocol} port of its pods"
    ready = [p for p in resolved if p.ready and not p.terminating]
    if not ready:
        return f"its pods are not ready ({resolved[0].not_ready_reason or 'not Ready'})"
    return f"{len(ready)} of its pods are ready endpoints"


def _phrase(count: int, condition: str, workload: str, port: int) -> str:
    kind = "" if condition == "ready" else f"{condition} "
    return f"{count} {kind}endpoint{'s' if count != 1 else ''} of {workload} (port {port})"


def compare(before: Side, after: Side) -> Layer:
    wb, wa = Workloads(before.state), Workloads(after.state)
    old, new = _endpoints(before.state, wb), _endpoints(after.state, wa)
    items = []
    for key in sorted(set(old) | set(new)):
        service, port = key
        a, b = old.get(key, Counter()), new.get(key, Counter())
        if a == b:
            continue
        svc_b, svc_a = before.state.services.get(service), after.state.services.get(service)
        sp = next(p for s in (svc_a, svc_b) if s is not None for p in s.ports if (p.name, p.protocol) == port)
        where = f"Service {service} port {_port_label(sp)}"
        for entry in sorted(set(a) | set(b)):
            workload, target, condition = entry
            delta = b[entry] - a[entry]
            if delta == 0:
                continue
            ready = condition == "ready"  # only ready endpoints receive traffic: their count is what users feel
            if delta < 0:
                why = f"now {why_not(after.state, wa, svc_a, port, workload)}" if ready else ""
                items.append(Item(LOST if ready else CHANGED, where,
                                  f"lost {_phrase(-delta, condition, workload, target)}", a[entry], b[entry], why))
            else:
                why = f"before, {why_not(before.state, wb, svc_b, port, workload)}" if ready else ""
                items.append(Item(GAINED if ready else CHANGED, where,
                                  f"gained {_phrase(delta, condition, workload, target)}", a[entry], b[entry], why))
    return Layer("endpoints", TITLE, tuple(items))


__all__ = ["TITLE", "compare", "why_not"]
