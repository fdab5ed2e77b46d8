"""Server-side Table output (``meta.k8s.io/v1 Table``), as kube-apiserver's printers build it.

kubectl ≥ 1.x has no client-side printers for built-in kinds any more: without a Table it
prints only NAME and AGE. Columns and cell rules follow ``pkg/printers/internalversion``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from ..model.labels import Selector

Column = tuple[str, str, int]  # (name, type, priority); priority 1 = `-o wide` only
Obj = Mapping[str, Any]


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration`` (k8s.io/apimachinery/pkg/util/duration)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rem = s % 60
        return f"{minutes}m" if rem == 0 else f"{minutes}m{rem}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rem = minutes % 60
        return f"{hours}h" if rem == 0 else f"{hours}h{rem}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rem = hours % 24
        return f"{hours // 24}d" if rem == 0 else f"{hours // 24}d{rem}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rem = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if rem == 0 else f"{hours // 24 // 365}y{rem}d"
    return f"{hours // 24 // 365}y"


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def age(text: str | None, now: datetime | None = None) -> str:
    when = parse_time(text)
    if when is None:
        return "<unknown>"
    now = now or datetime.now(UTC)
    return human_duration((now - when).total_seconds())


def _labels(m: Mapping[str, str] | None) -> str:
    if not m:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(m.items()))


def _label_selector(sel: Mapping[str, Any] | None) -> str:
    """``metav1.FormatLabelSelector``."""
    if sel is None:
        return "<none>"
    try:
        text = Selector.from_label_selector(sel).formatted()
    except Exception:
        return "<error>"
    if not text:
        return "<none>"
    return text


def _more(items: list[str], limit: int = 3, empty: str = "<none>", sep: str = ",") -> str:
    if not items:
        return empty
    text = sep.join(items[:limit])
    if len(items) > limit:
        text += f" + {len(items) - limit} more..."
    return text


def _lb(status: Mapping[str, Any] | None, wide: bool) -> str:
    ingress = ((status or {}).get("loadBalancer") or {}).get("ingress") or []
    text = ",".join(i.get("ip") or i.get("hostname") or "" for i in ingress if i.get("ip") or i.get("hostname"))
    if not wide and len(text) > 16:
        text = text[:13] + "..."
    return text


def _containers(spec: Obj) -> tuple[str, str]:
    cs = spec.get("containers") or []
    return ",".join(str(c.get("name", "")) for c in cs), ",".join(str(c.get("image", "")) for c in cs)


# --- per-kind rows ------------------------------------------------------------------


def _pod(o: Obj) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    containers = spec.get("containers") or []
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    reason = status.get("reason") or status.get("phase") or "Pending"
    for c in reversed(statuses):
        state = c.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated"):
            term = state["terminated"]
            reason = term.get("reason") or (f"Signal:{term['signal']}" if term.get("signal")
                                            else f"ExitCode:{term.get('exitCode', 0)}")
    if o.get("metadata", {}).get("deletionTimestamp"):
        reason = "Terminating"
    return [f"{ready}/{len(containers)}", reason, restarts, age(o["metadata"].get("creationTimestamp")),
            status.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>", "<none>"]


def _service(o: Obj) -> list[Any]:
    spec = o.get("spec") or {}
    svc_type = spec.get("type") or "ClusterIP"
    cluster_ip = (spec.get("clusterIPs") or [spec.get("clusterIP")])[0] or "<none>"
    external = spec.get("externalIPs") or []
    if svc_type == "ExternalName":
        ext = spec.get("externalName") or "<none>"
    elif svc_type == "LoadBalancer":
        ips = [x for x in [_lb(o.get("status"), False)] if x] + list(external)
        ext = ",".join(ips) if ips else "<pending>"
    else:
        ext = ",".join(external) if external else "<none>"
    ports = []
    for p in spec.get("ports") or []:
        proto = p.get("protocol") or "TCP"
        ports.append(f"{p['port']}:{p['nodePort']}/{proto}" if p.get("nodePort") else f"{p.get('port')}/{proto}")
    return [svc_type, cluster_ip, ext, ",".join(ports) or "<none>", age(o["metadata"].get("creationTimestamp")),
            _labels(spec.get("selector"))]


def _endpointslice(o: Obj) -> list[Any]:
    ports = []
    for p in o.get("ports") or []:
        ports.append(str(p["port"]) if p.get("port") is not None else (p.get("name") or "*"))
    addrs = [a for e in o.get("endpoints") or [] for a in e.get("addresses") or []]
    return [o.get("addressType", ""), _more(ports, empty="<unset>"), _more(addrs, empty="<unset>"),
            age(o["metadata"].get("creationTimestamp"))]


def _endpoints(o: Obj) -> list[Any]:
    items = []
    for subset in o.get("subsets") or []:
        # formatEndpoints: each port, then each address on it; a portless subset lists bare IPs.
        for p in subset.get("ports") or [{}]:
            for a in subset.get("addresses") or []:
                items.append(f"{a.get('ip')}:{p.get('port')}" if p else a.get("ip"))
    return [_more(items), age(o["metadata"].get("creationTimestamp"))]


def _ingress(o: Obj) -> list[Any]:
    spec = o.get("spec") or {}
    hosts = [r["host"] for r in spec.get("rules") or [] if r.get("host")]
    return [spec.get("ingressClassName") or "<none>", _more(hosts, empty="*"), _lb(o.get("status"), False),
            "80, 443" if spec.get("tls") else "80", age(o["metadata"].get("creationTimestamp"))]


def _ingressclass(o: Obj) -> list[Any]:
    spec = o.get("spec") or {}
    params = spec.get("parameters")
    p = "<none>"
    if params:
        p = f"{params.get('kind')}.{params.get('apiGroup')}/{params.get('name')}" if params.get("apiGroup") \
            else f"{params.get('kind')}/{params.get('name')}"
    return [spec.get("controller", ""), p, age(o["metadata"].get("creationTimestamp"))]


def _netpol(o: Obj) -> list[Any]:
    return [_label_selector((o.get("spec") or {}).get("podSelector") or {}),
            age(o["metadata"].get("creationTimestamp"))]


def _deployment(o: Obj) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    names, images = _containers((spec.get("template") or {}).get("spec") or {})
    return [f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}", status.get("updatedReplicas", 0),
            status.get("availableReplicas", 0), age(o["metadata"].get("creationTimestamp")), names, images,
            _label_selector(spec.get("selector"))]


def _replicaset(o: Obj) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    names, images = _containers((spec.get("template") or {}).get("spec") or {})
    return [spec.get("replicas", 1), status.get("replicas", 0), status.get("readyReplicas", 0),
            age(o["metadata"].get("creationTimestamp")), names, images, _label_selector(spec.get("selector"))]


def _statefulset(o: Obj) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    names, images = _containers((spec.get("template") or {}).get("spec") or {})
    return [f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}", age(o["metadata"].get("creationTimestamp")),
            names, images]


def _daemonset(o: Obj) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    tspec = (spec.get("template") or {}).get("spec") or {}
    names, images = _containers(tspec)
    return [status.get("desiredNumberScheduled", 0), status.get("currentNumberScheduled", 0),
            status.get("numberReady", 0), status.get("updatedNumberScheduled", 0), status.get("numberAvailable", 0),
            _labels(tspec.get("nodeSelector")), age(o["metadata"].get("creationTimestamp")), names, images,
            _label_selector(spec.get("selector"))]


def _job(o: Obj) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    names, images = _containers((spec.get("template") or {}).get("spec") or {})
    state = "Complete" if status.get("succeeded", 0) >= spec.get("completions", 1) else "Running"
    return [state, f"{status.get('succeeded', 0)}/{spec.get('completions', 1)}", age(status.get("startTime")),
            age(o["metadata"].get("creationTimestamp")), names, images, _label_selector(spec.get("selector"))]


def _namespace(o: Obj) -> list[Any]:
    return [(o.get("status") or {}).get("phase") or "Active", age(o["metadata"].get("creationTimestamp"))]


def _node(o: Obj) -> list[Any]:
    status = o.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    state = "Ready" if ready and ready.get("status") == "True" else "NotReady"
    if (o.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    roles = sorted(k.split("/", 1)[1] for k in (o["metadata"].get("labels") or {})
                   if k.startswith("node-role.kubernetes.io/"))
    addrs = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    info = status.get("nodeInfo") or {}
    return [state, ",".join(roles) or "<none>", age(o["metadata"].get("creationTimestamp")),
            info.get("kubeletVersion", ""), addrs.get("InternalIP", "<none>"), addrs.get("ExternalIP", "<none>"),
            info.get("osImage", "<unknown>"), info.get("kernelVersion", "<unknown>"),
            info.get("containerRuntimeVersion", "<unknown>")]


def _configmap(o: Obj) -> list[Any]:
    return [len(o.get("data") or {}) + len(o.get("binaryData") or {}), age(o["metadata"].get("creationTimestamp"))]


def _secret(o: Obj) -> list[Any]:
    return [o.get("type") or "Opaque", len(o.get("data") or {}), age(o["metadata"].get("creationTimestamp"))]


def _serviceaccount(o: Obj) -> list[Any]:
    return [len(o.get("secrets") or []), age(o["metadata"].get("creationTimestamp"))]


def _event(o: Obj) -> list[Any]:
    inv = o.get("involvedObject") or {}
    last = o.get("lastTimestamp") or o.get("eventTime") or o["metadata"].get("creationTimestamp")
    first = o.get("firstTimestamp") or o.get("eventTime") or o["metadata"].get("creationTimestamp")
    source = o.get("source") or {}
    # formatEventSource: events.k8s.io recorders leave source empty and fill reporting*.
    src = source.get("component") or o.get("reportingComponent") or ""
    host = source.get("host") or o.get("reportingInstance") or ""
    if host:
        src += f", {host}"
    obj = f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}"
    return [age(last), o.get("type", ""), o.get("reason", ""), obj,
            inv.get("fieldPath", ""), src, o.get("message", ""), age(first), o.get("count", 1),
            o["metadata"].get("name", "")]


def _default(o: Obj) -> list[Any]:
    return [age(o["metadata"].get("creationTimestamp"))]


def _cols(*spec: str) -> list[Column]:
    out: list[Column] = []
    for s in spec:
        wide = s.startswith("*")
        name = s.lstrip("*")
        typ = "integer" if name in ("Restarts", "Up-to-date", "Available", "Desired", "Current", "Ready#",
                                    "Data", "Secrets", "Count") else "string"
        out.append((name.rstrip("#"), typ, 1 if wide else 0))
    return out


PRINTERS: dict[str, tuple[list[Column], Callable[[Obj], list[Any]]]] = {
    "Pod": (_cols("Ready", "Status", "Restarts", "Age", "*IP", "*Node", "*Nominated Node", "*Readiness Gates"), _pod),
    "Service": (_cols("Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "*Selector"), _service),
    "EndpointSlice": (_cols("AddressType", "Ports", "Endpoints", "Age"), _endpointslice),
    "Endpoints": (_cols("Endpoints", "Age"), _endpoints),
    "Ingress": (_cols("Class", "Hosts", "Address", "Ports", "Age"), _ingress),
    "IngressClass": (_cols("Controller", "Parameters", "Age"), _ingressclass),
    "NetworkPolicy": (_cols("Pod-Selector", "Age"), _netpol),
    "Deployment": (_cols("Ready", "Up-to-date", "Available", "Age", "*Containers", "*Images", "*Selector"),
                   _deployment),
    "ReplicaSet": (_cols("Desired", "Current", "Ready#", "Age", "*Containers", "*Images", "*Selector"), _replicaset),
    "StatefulSet": (_cols("Ready", "Age", "*Containers", "*Images"), _statefulset),
    "DaemonSet": (_cols("Desired", "Current", "Ready#", "Up-to-date", "Available", "Node Selector", "Age",
                        "*Containers", "*Images", "*Selector"), _daemonset),
    "Job": (_cols("Status", "Completions", "Duration", "Age", "*Containers", "*Images", "*Selector"), _job),
    "Namespace": (_cols("Status", "Age"), _namespace),
    "Node": (_cols("Status", "Roles", "Age", "Version", "*Internal-IP", "*External-IP", "*OS-Image",
                   "*Kernel-Version", "*Container-Runtime"), _node),
    "ConfigMap": (_cols("Data", "Age"), _configmap),
    "Secret": (_cols("Type", "Data", "Age"), _secret),
    "ServiceAccount": (_cols("Secrets", "Age"), _serviceaccount),
    "Event": (_cols("Last Seen", "Type", "Reason", "Object", "*Subobject", "*Source", "Message", "*First Seen",
                    "*Count", "*Name"), _event),
}


def column_definitions(kind: str) -> list[dict[str, Any]]:
    cols, _ = PRINTERS.get(kind, (_cols("Age"), _default))
    defs: list[dict[str, Any]] = []
    if kind != "Event":
        defs.append({"name": "Name", "type": "string", "format": "name", "priority": 0,
                     "description": "Name must be unique within a namespace."})
    for name, typ, prio in cols:
        defs.append({"name": name, "type": typ, "format": "", "priority": prio, "description": name})
    return defs


def partial_metadata(o: Obj) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": dict(o.get("metadata") or {})}


def row(kind: str, o: Obj, include: str = "Metadata") -> dict[str, Any]:
    _, fn = PRINTERS.get(kind, ([], _default))
    cells = fn(o)
    if kind != "Event":
        cells = [o["metadata"].get("name", ""), *cells]
    out: dict[str, Any] = {"cells": cells}
    if include == "Object":
        out["object"] = dict(o)
    elif include != "None":
        out["object"] = partial_metadata(o)
    phase = (o.get("status") or {}).get("phase") if kind == "Pod" else None
    if phase in ("Succeeded", "Failed"):
        out["conditions"] = [{"type": "Completed", "status": "True", "reason": phase,
                              "message": "The pod has completed"}]
    return out


def table(kind: str, objects: list[Obj], resource_version: str, include: str = "Metadata",
          headers: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
                           "metadata": {"resourceVersion": resource_version},
                           "columnDefinitions": column_definitions(kind) if headers else [],
                           "rows": [row(kind, o, include) for o in objects]}
    return out
