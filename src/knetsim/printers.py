"""Table columns as the API server prints them (``pkg/printers/internalversion``).

One definition serves ``knetsim get`` and the live API server's ``Table`` responses, so the
two never disagree. ``columns(kind)`` gives (name, priority) pairs — priority 1 shows only
with ``-o wide`` — and ``row(obj, now)`` the cells, computed from the manifest dict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from .model.labels import Selector

Column = tuple[str, int]


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``: 59s, 2m5s, 12m, 3h4m, 2d3h, 14d, 3y45d."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"  # a clock a second behind the server's
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rem = s % 60
        return f"{minutes}m{rem}s" if rem else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rem = minutes % 60
        return f"{hours}h{rem}m" if rem else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rem = hours % 24
        return f"{hours // 24}d{rem}h" if rem else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24 % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def age(body: Mapping[str, Any], now: datetime | None) -> str:
    stamp = (body.get("metadata") or {}).get("creationTimestamp")
    if not stamp or now is None:
        return "<unknown>"
    try:
        created = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    return human_duration((now - created).total_seconds())


def _list(items: list[str], limit: int = 3, empty: str = "<none>") -> str:
    if not items:
        return empty
    text = ",".join(items[:limit])
    if len(items) > limit:
        text += f" + {len(items) - limit} more..."
    return text


def _pod(body: Mapping[str, Any]) -> list[str]:
    spec, status = body.get("spec") or {}, body.get("status") or {}
    containers = spec.get("containers") or []
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    if not statuses and any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in status.get("conditions") or []):
        ready = len(containers)  # a trimmed snapshot: the Ready condition is the only evidence
    phase = status.get("phase") or "Pending"
    reason = phase
    for c in statuses:
        state = c.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated", {}).get("reason"):
            reason = state["terminated"]["reason"]
    if (body.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    gates = spec.get("readinessGates") or []
    return [f"{ready}/{len(containers)}", reason, str(restarts), "", status.get("podIP") or "<none>",
            spec.get("nodeName") or "<none>", "<none>", f"0/{len(gates)}" if gates else "<none>"]


def _ports(spec: Mapping[str, Any]) -> str:
    out = []
    for p in spec.get("ports") or []:
        if p.get("nodePort"):
            out.append(f"{p.get('port')}:{p['nodePort']}/{p.get('protocol', 'TCP')}")
        else:
            out.append(f"{p.get('port')}/{p.get('protocol', 'TCP')}")
    return ",".join(out) or "<none>"


def _service(body: Mapping[str, Any]) -> list[str]:
    spec, status = body.get("spec") or {}, body.get("status") or {}
    svc_type = spec.get("type", "ClusterIP")
    cluster_ip = (spec.get("clusterIPs") or [spec.get("clusterIP") or "<none>"])[0]
    external = list(spec.get("externalIPs") or [])
    if svc_type == "ExternalName":
        external_ip = spec.get("externalName") or "<none>"
        cluster_ip = "<none>"
    elif svc_type == "LoadBalancer":
        lb = [i.get("ip") or i.get("hostname") for i in (status.get("loadBalancer") or {}).get("ingress") or []]
        external_ip = ",".join(lb + external) if lb or external else "<pending>"
    else:
        external_ip = ",".join(external) or "<none>"
    selector = spec.get("selector")
    return [svc_type, cluster_ip, external_ip, _ports(spec), "",
            Selector.from_map(selector).formatted() if selector else "<none>"]


def _endpoint_slice(body: Mapping[str, Any]) -> list[str]:
    ports = []
    for p in body.get("ports") or []:
        ports.append(str(p["port"]) if p.get("port") is not None else (p.get("name") or "*"))
    addresses = [a for e in body.get("endpoints") or [] for a in e.get("addresses") or []]
    return [body.get("addressType", ""), _list(ports, empty="<unset>"), _list(addresses, empty="<unset>")]


def _endpoints(body: Mapping[str, Any]) -> list[str]:
    pairs = []
    for subset in body.get("subsets") or []:
        for address in subset.get("addresses") or []:
            for port in subset.get("ports") or [{}]:
                pairs.append(f"{address.get('ip')}:{port.get('port')}" if port else address.get("ip"))
    return [_list(pairs)]


def _ingress(body: Mapping[str, Any]) -> list[str]:
    spec, status = body.get("spec") or {}, body.get("status") or {}
    hosts = [r.get("host") for r in spec.get("rules") or [] if r.get("host")]
    address = [i.get("ip") or i.get("hostname") for i in (status.get("loadBalancer") or {}).get("ingress") or []]
    return [spec.get("ingressClassName") or "<none>", _list(hosts, 4, "*") if hosts else "*",
            ",".join(address), "80, 443" if spec.get("tls") else "80"]


def _ingress_class(body: Mapping[str, Any]) -> list[str]:
    spec = body.get("spec") or {}
    params = spec.get("parameters")
    text = "<none>"
    if params:
        group = params.get("apiGroup")
        kind = f"{params.get('kind')}.{group}" if group else str(params.get("kind"))
        text = f"{kind}/{params.get('name')}"
    return [spec.get("controller", ""), text]


def _network_policy(body: Mapping[str, Any]) -> list[str]:
    selector = (body.get("spec") or {}).get("podSelector") or {}
    return [Selector.from_label_selector(selector).formatted()]


def _containers(spec: Mapping[str, Any]) -> tuple[str, str]:
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return ",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)


def _deployment(body: Mapping[str, Any]) -> list[str]:
    spec, status = body.get("spec") or {}, body.get("status") or {}
    names, images = _containers(spec)
    return [f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}", str(status.get("updatedReplicas", 0)),
            str(status.get("availableReplicas", 0)), "", names, images,
            Selector.from_label_selector(spec.get("selector")).formatted()]


def _replicaset(body: Mapping[str, Any]) -> list[str]:
    spec, status = body.get("spec") or {}, body.get("status") or {}
    names, images = _containers(spec)
    return [str(spec.get("replicas", 1)), str(status.get("replicas", 0)), str(status.get("readyReplicas", 0)), "",
            names, images, Selector.from_label_selector(spec.get("selector")).formatted()]


def _statefulset(body: Mapping[str, Any]) -> list[str]:
    spec, status = body.get("spec") or {}, body.get("status") or {}
    names, images = _containers(spec)
    return [f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}", "", names, images]


def _daemonset(body: Mapping[str, Any]) -> list[str]:
    spec, status = body.get("spec") or {}, body.get("status") or {}
    names, images = _containers(spec)
    node_selector = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
    return [str(status.get("desiredNumberScheduled", 0)), str(status.get("currentNumberScheduled", 0)),
            str(status.get("numberReady", 0)), str(status.get("updatedNumberScheduled", 0)),
            str(status.get("numberAvailable", 0)), Selector.from_map(node_selector).formatted(), "", names, images,
            Selector.from_label_selector(spec.get("selector")).formatted()]


def _job(body: Mapping[str, Any]) -> list[str]:
    spec, status = body.get("spec") or {}, body.get("status") or {}
    state = "Complete" if status.get("succeeded", 0) >= spec.get("completions", 1) else "Running"
    return [state, f"{status.get('succeeded', 0)}/{spec.get('completions', 1)}", "", ""]


def _namespace(body: Mapping[str, Any]) -> list[str]:
    return [(body.get("status") or {}).get("phase", "Active")]


def _node(body: Mapping[str, Any]) -> list[str]:
    status = body.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    labels = (body.get("metadata") or {}).get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
    ip = next((a.get("address") for a in status.get("addresses") or [] if a.get("type") == "InternalIP"), "<none>")
    info = status.get("nodeInfo") or {}
    return ["Ready" if conditions.get("Ready", "True") == "True" else "NotReady", ",".join(roles) or "<none>", "",
            info.get("kubeletVersion", ""), ip, "<none>", info.get("osImage", "<unknown>"), "<unknown>",
            info.get("containerRuntimeVersion", "<unknown>")]


# (columns, cells-before-AGE count, row function). AGE is inserted by the caller at the "" cell.
_TABLES: dict[str, tuple[list[Column], Callable[[Mapping[str, Any]], list[str]]]] = {
    "Pod": ([("NAME", 0), ("READY", 0), ("STATUS", 0), ("RESTARTS", 0), ("AGE", 0), ("IP", 1), ("NODE", 1),
             ("NOMINATED NODE", 1), ("READINESS GATES", 1)], _pod),
    "Service": ([("NAME", 0), ("TYPE", 0), ("CLUSTER-IP", 0), ("EXTERNAL-IP", 0), ("PORT(S)", 0), ("AGE", 0),
                 ("SELECTOR", 1)], _service),
    "EndpointSlice": ([("NAME", 0), ("ADDRESSTYPE", 0), ("PORTS", 0), ("ENDPOINTS", 0), ("AGE", 0)],
                      lambda b: [*_endpoint_slice(b), ""]),
    "Endpoints": ([("NAME", 0), ("ENDPOINTS", 0), ("AGE", 0)], lambda b: [*_endpoints(b), ""]),
    "Ingress": ([("NAME", 0), ("CLASS", 0), ("HOSTS", 0), ("ADDRESS", 0), ("PORTS", 0), ("AGE", 0)],
                lambda b: [*_ingress(b), ""]),
    "IngressClass": ([("NAME", 0), ("CONTROLLER", 0), ("PARAMETERS", 0), ("AGE", 0)],
                     lambda b: [*_ingress_class(b), ""]),
    "NetworkPolicy": ([("NAME", 0), ("POD-SELECTOR", 0), ("AGE", 0)], lambda b: [*_network_policy(b), ""]),
    "Deployment": ([("NAME", 0), ("READY", 0), ("UP-TO-DATE", 0), ("AVAILABLE", 0), ("AGE", 0), ("CONTAINERS", 1),
                    ("IMAGES", 1), ("SELECTOR", 1)], _deployment),
    "ReplicaSet": ([("NAME", 0), ("DESIRED", 0), ("CURRENT", 0), ("READY", 0), ("AGE", 0), ("CONTAINERS", 1),
                    ("IMAGES", 1), ("SELECTOR", 1)], _replicaset),
    "StatefulSet": ([("NAME", 0), ("READY", 0), ("AGE", 0), ("CONTAINERS", 1), ("IMAGES", 1)], _statefulset),
    "DaemonSet": ([("NAME", 0), ("DESIRED", 0), ("CURRENT", 0), ("READY", 0), ("UP-TO-DATE", 0), ("AVAILABLE", 0),
                   ("NODE SELECTOR", 0), ("AGE", 0), ("CONTAINERS", 1), ("IMAGES", 1), ("SELECTOR", 1)], _daemonset),
    "Job": ([("NAME", 0), ("STATUS", 0), ("COMPLETIONS", 0), ("DURATION", 0), ("AGE", 0)], _job),
    "Namespace": ([("NAME", 0), ("STATUS", 0), ("AGE", 0)], lambda b: [*_namespace(b), ""]),
    "Node": ([("NAME", 0), ("STATUS", 0), ("ROLES", 0), ("AGE", 0), ("VERSION", 0), ("INTERNAL-IP", 1),
              ("EXTERNAL-IP", 1), ("OS-IMAGE", 1), ("KERNEL-VERSION", 1), ("CONTAINER-RUNTIME", 1)], _node),
}

_DEFAULT: tuple[list[Column], Callable[[Mapping[str, Any]], list[str]]] = ([("NAME", 0), ("AGE", 0)], lambda b: [""])


def columns(kind: str) -> list[Column]:
    return _TABLES.get(kind, _DEFAULT)[0]


def row(kind: str, body: Mapping[str, Any], now: datetime | None = None) -> list[str]:
    """All cells of the row, NAME first; AGE filled in from ``creationTimestamp`` relative to ``now``."""
    cols, fn = _TABLES.get(kind, _DEFAULT)
    cells = fn(body)
    name = str((body.get("metadata") or {}).get("name", ""))
    out = [name]
    for (column, _), cell in zip(cols[1:], cells, strict=False):
        if column == "AGE" and cell == "":
            cell = age(body, now)
        if column == "DURATION" and cell == "":
            cell = "<unknown>"
        out.append(cell)
    return out


def utc_now() -> datetime:
    return datetime.now(UTC)
