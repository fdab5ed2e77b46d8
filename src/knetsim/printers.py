"""Table columns and cells as the API server prints them (``pkg/printers/internalversion``).

The single definition behind ``knetsim get`` and the live API server's ``Table`` responses
(``knetsim.apiserver.tables`` only wraps these in Table JSON), so the two never disagree.

* ``column_defs(kind)`` — the columns as the API names them (``Cluster-IP``, ``Port(s)``), with
  their type and priority (1 = ``-o wide`` only); ``Name`` first except for Events.
* ``cells(kind, obj, now)`` — the row's cells, typed as the API sends them (integers stay ints).
* ``columns(kind)`` / ``row(kind, obj, now)`` — the same as kubectl prints them: upper-case
  headers and text cells, NAME first (what ``knetsim get`` tabulates).

The server prints with ``Wide: true`` (``pkg/printers/storage``), so nothing is shortened for
narrow output. Times are relative to ``now``; without one (a snapshot without timestamps) an age
is ``<unknown>``.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .model.labels import Selector
from .model.storage import access_modes_text
from .model.timestamps import parse_rfc3339

log = logging.getLogger("knetsim.printers")

Obj = Mapping[str, Any]
Column = tuple[str, int]  # (HEADER, priority), as `knetsim get` prints it


@dataclass(frozen=True, slots=True)
class ColumnDef:
    name: str
    type: str = "string"
    priority: int = 0


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


def parse_time(text: Any) -> datetime | None:
    if not text:
        return None
    try:
        return parse_rfc3339(str(text))
    except ValueError:
        return None


def since(stamp: Any, now: datetime | None) -> str:
    """``translateTimestampSince``: how long ago, ``<unknown>`` without a time."""
    when = parse_time(stamp)
    if when is None or now is None:
        return "<unknown>"
    return human_duration((now - when).total_seconds())


def age(body: Obj, now: datetime | None) -> str:
    return since((body.get("metadata") or {}).get("creationTimestamp"), now)


def utc_now() -> datetime:
    return datetime.now(UTC)


# --- helpers ------------------------------------------------------------------------------


def _none(text: Any) -> str:
    return str(text) if text else "<none>"


def _first_three(items: list[str], empty: str = "<none>", total: int | None = None) -> str:
    if not items:
        return empty
    count = len(items) if total is None else total
    text = ",".join(items[:3])
    return f"{text} + {count - 3} more..." if count > 3 else text


def _label_set(m: Mapping[str, Any] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((m or {}).items())) or "<none>"


def _label_selector(sel: Mapping[str, Any] | None) -> str:
    """``metav1.FormatLabelSelector``: ``<none>`` for no selector and for an empty one."""
    if sel is None:
        return "<none>"
    try:
        return Selector.from_label_selector(sel).formatted() or "<none>"
    except Exception:
        return "<error>"


def _containers(pod_spec: Obj) -> tuple[str, str]:
    cs = pod_spec.get("containers") or []
    return ",".join(str(c.get("name", "")) for c in cs), ",".join(str(c.get("image", "")) for c in cs)


def _template_containers(body: Obj) -> tuple[str, str]:
    return _containers(((body.get("spec") or {}).get("template") or {}).get("spec") or {})


def _condition(body: Obj, type_: str) -> str:
    for c in (body.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return str(c.get("status") or "")
    return ""


def _lb_addresses(status: Obj | None) -> list[str]:
    ingress = ((status or {}).get("loadBalancer") or {}).get("ingress") or []
    return [str(i.get("ip") or i.get("hostname")) for i in ingress if i.get("ip") or i.get("hostname")]


# --- per-kind cells (NAME first, except Event) -----------------------------------------------


def _pod(o: Obj, now: datetime | None) -> list[Any]:
    """printPod: STATUS is the reason of the first container waiting or terminated (init
    containers first), RESTARTS carries when the last one ended."""
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Pending"
    for c in status.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    inits = spec.get("initContainers") or []
    sidecars = {c.get("name") for c in inits if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or []) + len(sidecars)
    restarts = sidecar_restarts = ready = 0
    last: datetime | None = None
    last_sidecar: datetime | None = None

    def latest(cs: Obj, current: datetime | None) -> datetime | None:
        when = parse_time(((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt"))
        return when if when is not None and (current is None or when > current) else current

    initializing = False
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        restarts += int(cs.get("restartCount") or 0)
        last = latest(cs, last)
        if cs.get("name") in sidecars:
            sidecar_restarts += int(cs.get("restartCount") or 0)
            last_sidecar = latest(cs, last_sidecar)
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if term is not None and int(term.get("exitCode") or 0) == 0:
            continue
        if cs.get("name") in sidecars and cs.get("started"):
            ready += 1 if cs.get("ready") else 0
            continue
        if term is not None:
            reason = f"Init:{term['reason']}" if term.get("reason") else (
                f"Init:Signal:{term['signal']}" if term.get("signal") else f"Init:ExitCode:{term.get('exitCode', 0)}")
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{len(inits)}"
        initializing = True
        break
    statuses = status.get("containerStatuses") or []
    if not initializing or _condition(o, "Initialized") == "True":
        restarts, last = sidecar_restarts, last_sidecar
        running = False
        for cs in reversed(statuses):
            restarts += int(cs.get("restartCount") or 0)
            last = latest(cs, last)
            state = cs.get("state") or {}
            term, waiting = state.get("terminated"), state.get("waiting")
            if waiting and waiting.get("reason"):
                reason = waiting["reason"]
            elif term is not None and term.get("reason"):
                reason = term["reason"]
            elif term is not None:
                reason = f"Signal:{term['signal']}" if term.get("signal") else f"ExitCode:{term.get('exitCode', 0)}"
            elif cs.get("ready") and "running" in state:
                running = True
                ready += 1
        if reason == "Completed" and running:
            reason = "Running" if _condition(o, "Ready") == "True" else "NotReady"
    if not statuses and _condition(o, "Ready") == "True":
        ready = total  # a trimmed snapshot: the Ready condition is the only evidence
    if meta.get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif status.get("phase") not in ("Succeeded", "Failed"):
            reason = "Terminating"
    restart_cell = str(restarts)
    if restarts and last is not None:
        restart_cell = f"{restarts} ({since(last.isoformat(), now)} ago)"
    ips = status.get("podIPs") or []
    ip = (ips[0] or {}).get("ip") if ips else status.get("podIP")
    gates = spec.get("readinessGates") or []
    gate_cell = f"{sum(1 for g in gates if _condition(o, g.get('conditionType', '')) == 'True')}/{len(gates)}" \
        if gates else "<none>"
    return [meta.get("name", ""), f"{ready}/{total}", reason, restart_cell, age(o, now), _none(ip),
            _none(spec.get("nodeName")), _none(status.get("nominatedNodeName")), gate_cell]


def _service(o: Obj, now: datetime | None) -> list[Any]:
    spec = o.get("spec") or {}
    svc_type = spec.get("type") or "ClusterIP"
    cluster_ip = (spec.get("clusterIPs") or [spec.get("clusterIP") or "<none>"])[0]
    external = [str(x) for x in spec.get("externalIPs") or []]
    if svc_type == "ExternalName":
        cluster_ip = "<none>" if not spec.get("clusterIPs") else cluster_ip
        ext = spec.get("externalName") or "<none>"
    elif svc_type == "LoadBalancer":
        ext = ",".join(_lb_addresses(o.get("status")) + external) or "<pending>"
    else:
        ext = ",".join(external) or "<none>"
    ports = []
    for p in spec.get("ports") or []:
        proto = p.get("protocol") or "TCP"
        ports.append(f"{p.get('port')}:{p['nodePort']}/{proto}" if p.get("nodePort") else f"{p.get('port')}/{proto}")
    return [(o.get("metadata") or {}).get("name", ""), svc_type, cluster_ip, ext, ",".join(ports) or "<none>",
            age(o, now), _label_set(spec.get("selector"))]


def _endpoint_slice(o: Obj, now: datetime | None) -> list[Any]:
    ports = [str(p["port"]) if p.get("port") is not None else (p.get("name") or "*") for p in o.get("ports") or []]
    addresses = [str(a) for e in o.get("endpoints") or [] for a in e.get("addresses") or []]
    return [(o.get("metadata") or {}).get("name", ""), o.get("addressType", ""), _first_three(ports, "<unset>"),
            _first_three(addresses, "<unset>"), age(o, now)]


def _host_port(ip: str, port: Any) -> str:
    try:
        v6 = ipaddress.ip_address(ip).version == 6
    except ValueError:
        v6 = ":" in ip
    return f"[{ip}]:{port}" if v6 else f"{ip}:{port}"


def _endpoints(o: Obj, now: datetime | None) -> list[Any]:
    """formatEndpoints: each port, then each address on it; a portless subset lists bare IPs."""
    items: list[str] = []
    for subset in o.get("subsets") or []:
        addresses = [str(a.get("ip")) for a in subset.get("addresses") or []]
        if not subset.get("ports"):
            items.extend(addresses)
            continue
        for p in subset["ports"]:
            items.extend(_host_port(ip, p.get("port")) for ip in addresses)
    return [(o.get("metadata") or {}).get("name", ""), _first_three(items), age(o, now)]


def _ingress_hosts(rules: list[Obj]) -> str:
    """formatHosts: three hosts, then how many rules (hostless ones too) there are beyond three."""
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
        if not more and rule.get("host"):
            hosts.append(str(rule["host"]))
    if not hosts:
        return "*"
    return f"{','.join(hosts)} + {len(rules) - 3} more..." if more else ",".join(hosts)


def _ingress(o: Obj, now: datetime | None) -> list[Any]:
    spec = o.get("spec") or {}
    address = sorted(set(_lb_addresses(o.get("status"))))
    return [(o.get("metadata") or {}).get("name", ""), spec.get("ingressClassName") or "<none>",
            _ingress_hosts(spec.get("rules") or []), ",".join(address), "80, 443" if spec.get("tls") else "80",
            age(o, now)]


def _ingress_class(o: Obj, now: datetime | None) -> list[Any]:
    spec = o.get("spec") or {}
    params = spec.get("parameters")
    text = "<none>"
    if params:
        kind = f"{params.get('kind')}.{params['apiGroup']}" if params.get("apiGroup") else str(params.get("kind"))
        text = f"{kind}/{params.get('name')}"
    return [(o.get("metadata") or {}).get("name", ""), spec.get("controller", ""), text, age(o, now)]


def _network_policy(o: Obj, now: datetime | None) -> list[Any]:
    return [(o.get("metadata") or {}).get("name", ""),
            _label_selector((o.get("spec") or {}).get("podSelector") or {}), age(o, now)]


def _deployment(o: Obj, now: datetime | None) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    names, images = _template_containers(o)
    return [(o.get("metadata") or {}).get("name", ""), f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            int(status.get("updatedReplicas", 0)), int(status.get("availableReplicas", 0)), age(o, now), names,
            images, _label_selector(spec.get("selector"))]


def _replicaset(o: Obj, now: datetime | None) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    names, images = _template_containers(o)
    return [(o.get("metadata") or {}).get("name", ""), int(spec.get("replicas", 1)), int(status.get("replicas", 0)),
            int(status.get("readyReplicas", 0)), age(o, now), names, images, _label_selector(spec.get("selector"))]


def _replicationcontroller(o: Obj, now: datetime | None) -> list[Any]:
    # kubectl's replicationControllerColumnDefinitions: a ReplicaSet's columns, the selector a plain label map.
    row = _replicaset({**o, "spec": {**(o.get("spec") or {}), "selector": None}}, now)
    selector = (o.get("spec") or {}).get("selector")
    row[-1] = Selector.from_map(selector).formatted() if selector else "<none>"
    return row


def _statefulset(o: Obj, now: datetime | None) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    names, images = _template_containers(o)
    return [(o.get("metadata") or {}).get("name", ""), f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            age(o, now), names, images]


def _daemonset(o: Obj, now: datetime | None) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    names, images = _template_containers(o)
    node_selector = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector")
    return [(o.get("metadata") or {}).get("name", ""), int(status.get("desiredNumberScheduled", 0)),
            int(status.get("currentNumberScheduled", 0)), int(status.get("numberReady", 0)),
            int(status.get("updatedNumberScheduled", 0)), int(status.get("numberAvailable", 0)),
            _label_set(node_selector), age(o, now), names, images, _label_selector(spec.get("selector"))]


def _job(o: Obj, now: datetime | None) -> list[Any]:
    """printJob: the terminal condition, succeeded/completions, how long it took or has taken."""
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    if _condition(o, "Complete") == "True":
        state = "Complete"
    elif _condition(o, "Failed") == "True":
        state = "Failed"
    elif meta.get("deletionTimestamp"):
        state = "Terminating"
    else:
        state = next((t for t in ("Suspended", "FailureTarget", "SuccessCriteriaMet") if _condition(o, t) == "True"),
                     "Running")
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        done = f"{succeeded}/{spec['completions']}"
    elif int(spec.get("parallelism") or 0) > 1:
        done = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        done = f"{succeeded}/1"  # neither set: the API server defaults both to 1
    start, end = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    took = ""
    if start is not None and end is not None:
        took = human_duration((end - start).total_seconds())
    elif start is not None:
        took = since(status.get("startTime"), now)
    names, images = _template_containers(o)
    return [meta.get("name", ""), state, done, took, age(o, now), names, images, _label_selector(spec.get("selector"))]


def _cronjob(o: Obj, now: datetime | None) -> list[Any]:
    """printCronJob: the schedule, its zone, printBoolPtr(suspend), how many Jobs run, the last run."""
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    suspend = spec.get("suspend")
    last = since(status["lastScheduleTime"], now) if status.get("lastScheduleTime") else "<none>"
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    names, images = _template_containers({"spec": job_spec})
    return [meta.get("name", ""), spec.get("schedule", ""),
            spec["timeZone"] if spec.get("timeZone") is not None else "<none>",
            "<unset>" if suspend is None else ("True" if suspend else "False"), len(status.get("active") or []),
            last, age(o, now), names, images, _label_selector(job_spec.get("selector"))]


def _namespace(o: Obj, now: datetime | None) -> list[Any]:
    return [(o.get("metadata") or {}).get("name", ""), (o.get("status") or {}).get("phase") or "Active", age(o, now)]


def _node(o: Obj, now: datetime | None) -> list[Any]:
    meta, status = o.get("metadata") or {}, o.get("status") or {}
    ready = _condition(o, "Ready")
    states = ["Ready" if ready == "True" else "NotReady" if ready in ("False", "Unknown") else "Unknown"]
    if (o.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for k, v in (meta.get("labels") or {}).items():
        if k.startswith("node-role.kubernetes.io/") and k.split("/", 1)[1]:
            roles.add(k.split("/", 1)[1])
        elif k == "kubernetes.io/role" and v:
            roles.add(str(v))
    addrs = {a.get("type"): a.get("address") for a in reversed(status.get("addresses") or [])}
    info = status.get("nodeInfo") or {}
    return [meta.get("name", ""), ",".join(states), ",".join(sorted(roles)) or "<none>", age(o, now),
            info.get("kubeletVersion", ""), addrs.get("InternalIP") or "<none>", addrs.get("ExternalIP") or "<none>",
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


def _configmap(o: Obj, now: datetime | None) -> list[Any]:
    return [(o.get("metadata") or {}).get("name", ""), len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            age(o, now)]


def _secret(o: Obj, now: datetime | None) -> list[Any]:
    return [(o.get("metadata") or {}).get("name", ""), o.get("type") or "Opaque", len(o.get("data") or {}),
            age(o, now)]


def _serviceaccount(o: Obj, now: datetime | None) -> list[Any]:
    return [(o.get("metadata") or {}).get("name", ""), len(o.get("secrets") or []), age(o, now)]


def _event(o: Obj, now: datetime | None) -> list[Any]:
    """printEvent (core/v1): events.k8s.io recorders leave source and the timestamps empty and fill
    eventTime and reporting*; a series carries its own count and last time."""
    meta, inv, source = o.get("metadata") or {}, o.get("involvedObject") or {}, o.get("source") or {}
    first = since(o.get("firstTimestamp") or o.get("eventTime"), now)
    last = since(o["lastTimestamp"], now) if o.get("lastTimestamp") else first
    count = int(o.get("count") or 0)
    if o.get("series"):
        last, count = since(o["series"].get("lastObservedTime"), now), int(o["series"].get("count") or 0)
    elif count == 0:
        count = 1
    obj = str(inv.get("kind", "")).lower() + (f"/{inv['name']}" if inv.get("name") else "")
    src = source.get("component") or o.get("reportingComponent") or ""
    host = source.get("host") or o.get("reportingInstance") or ""
    if host:
        src += f", {host}"
    return [last, o.get("type", ""), o.get("reason", ""), obj, inv.get("fieldPath", ""), src,
            str(o.get("message", "")).strip(), first, count, meta.get("name", "")]


def _service_cidr(o: Obj, now: datetime | None) -> list[Any]:
    cidrs = (o.get("spec") or {}).get("cidrs") or []
    return [(o.get("metadata") or {}).get("name", ""), ",".join(str(c) for c in cidrs), age(o, now)]


def _ip_address(o: Obj, now: datetime | None) -> list[Any]:
    """printIPAddress: ``group-resource[/namespace]/name`` of the parent, the group-resource lowercased."""
    ref = (o.get("spec") or {}).get("parentRef") or {}
    parent = ""
    if ref:
        group = ref.get("group") or ""
        parent = (f"{ref.get('resource', '')}.{group}" if group else str(ref.get("resource", ""))).lower()
        if ref.get("namespace"):
            parent += f"/{ref['namespace']}"
        parent += f"/{ref.get('name', '')}"
    return [(o.get("metadata") or {}).get("name", ""), parent]


def _claim(o: Obj, now: datetime | None) -> list[Any]:
    """printPersistentVolumeClaim: the size and modes are the bound volume's, empty until then."""
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    phase = "Terminating" if meta.get("deletionTimestamp") else status.get("phase", "")
    capacity = modes = ""
    if spec.get("volumeName"):
        capacity = str((status.get("capacity") or {}).get("storage") or "")
        modes = access_modes_text(status.get("accessModes"))
    return [meta.get("name", ""), phase, spec.get("volumeName") or "", capacity, modes,
            spec.get("storageClassName") or "", spec.get("volumeAttributesClassName") or "<unset>", age(o, now),
            spec.get("volumeMode") or "<unset>"]


def _volume(o: Obj, now: datetime | None) -> list[Any]:
    """printPersistentVolume."""
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    ref = spec.get("claimRef") or {}
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else ""
    phase = "Terminating" if meta.get("deletionTimestamp") else status.get("phase", "")
    return [meta.get("name", ""), str((spec.get("capacity") or {}).get("storage") or ""),
            access_modes_text(spec.get("accessModes")), spec.get("persistentVolumeReclaimPolicy") or "", phase, claim,
            spec.get("storageClassName") or "", spec.get("volumeAttributesClassName") or "<unset>",
            status.get("reason") or "", age(o, now), spec.get("volumeMode") or "<unset>"]


def _storage_class(o: Obj, now: datetime | None) -> list[Any]:
    """printStorageClass: the default class is named with " (default)"."""
    meta = o.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    default = "true" in (annotations.get("storageclass.kubernetes.io/is-default-class"),
                         annotations.get("storageclass.beta.kubernetes.io/is-default-class"))
    return [str(meta.get("name", "")) + (" (default)" if default else ""), o.get("provisioner", ""),
            o.get("reclaimPolicy") or "Delete", o.get("volumeBindingMode") or "Immediate",
            bool(o.get("allowVolumeExpansion")), age(o, now)]


def _default(o: Obj, now: datetime | None) -> list[Any]:
    return [(o.get("metadata") or {}).get("name", ""), age(o, now)]


def _defs(*spec: str) -> list[ColumnDef]:
    """``"Name"`` is a column; ``"*Name"`` is wide only; ``"Name#"`` holds integers."""
    out = []
    for s in spec:
        name = s.lstrip("*").rstrip("#")
        out.append(ColumnDef(name, "integer" if s.endswith("#") else "string", 1 if s.startswith("*") else 0))
    return out


_NAME = ColumnDef("Name")
PRINTERS: dict[str, tuple[list[ColumnDef], Callable[[Obj, datetime | None], list[Any]]]] = {
    "Pod": (_defs("Ready", "Status", "Restarts", "Age", "*IP", "*Node", "*Nominated Node", "*Readiness Gates"), _pod),
    "Service": (_defs("Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "*Selector"), _service),
    "EndpointSlice": (_defs("AddressType", "Ports", "Endpoints", "Age"), _endpoint_slice),
    "Endpoints": (_defs("Endpoints", "Age"), _endpoints),
    "Ingress": (_defs("Class", "Hosts", "Address", "Ports", "Age"), _ingress),
    "IngressClass": (_defs("Controller", "Parameters", "Age"), _ingress_class),
    "NetworkPolicy": (_defs("Pod-Selector", "Age"), _network_policy),
    "Deployment": (_defs("Ready", "Up-to-date#", "Available#", "Age", "*Containers", "*Images", "*Selector"),
                   _deployment),
    "ReplicaSet": (_defs("Desired#", "Current#", "Ready#", "Age", "*Containers", "*Images", "*Selector"), _replicaset),
    "ReplicationController": (_defs("Desired#", "Current#", "Ready#", "Age", "*Containers", "*Images", "*Selector"),
                              _replicationcontroller),
    "StatefulSet": (_defs("Ready", "Age", "*Containers", "*Images"), _statefulset),
    "DaemonSet": (_defs("Desired#", "Current#", "Ready#", "Up-to-date#", "Available#", "Node Selector", "Age",
                        "*Containers", "*Images", "*Selector"), _daemonset),
    "Job": (_defs("Status", "Completions", "Duration", "Age", "*Containers", "*Images", "*Selector"), _job),
    "CronJob": ([ColumnDef("Schedule"), ColumnDef("Timezone"), ColumnDef("Suspend", "boolean"),
                 *_defs("Active#", "Last Schedule", "Age", "*Containers", "*Images", "*Selector")], _cronjob),
    "Namespace": (_defs("Status", "Age"), _namespace),
    "Node": (_defs("Status", "Roles", "Age", "Version", "*Internal-IP", "*External-IP", "*OS-Image",
                   "*Kernel-Version", "*Container-Runtime"), _node),
    "ConfigMap": (_defs("Data#", "Age"), _configmap),
    "Secret": (_defs("Type", "Data#", "Age"), _secret),
    "ServiceAccount": (_defs("Secrets#", "Age"), _serviceaccount),
    "ServiceCIDR": (_defs("CIDRs", "Age"), _service_cidr),
    "IPAddress": (_defs("ParentRef"), _ip_address),
    "PersistentVolumeClaim": (_defs("Status", "Volume", "Capacity", "Access Modes", "StorageClass",
                                    "VolumeAttributesClass", "Age", "*VolumeMode"), _claim),
    "PersistentVolume": (_defs("Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim", "StorageClass",
                               "VolumeAttributesClass", "Reason", "Age", "*VolumeMode"), _volume),
    # AllowVolumeExpansion is declared a string column and filled with a bool (pkg/printers/internalversion).
    "StorageClass": (_defs("Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"),
                     _storage_class),
    # The default table convertor kube-apiserver gives CRDs: the name and the creation time, not an age.
    # Without a creation time, Go's zero time in RFC 3339.
    "CustomResourceDefinition": ([ColumnDef("Created At", "date")], lambda o, now: [
        (o.get("metadata") or {}).get("name", ""),
        str((o.get("metadata") or {}).get("creationTimestamp") or "0001-01-01T00:00:00Z")]),
}
# An Event's row has no leading name: its Name is the last, wide-only column.
EVENT_COLUMNS = _defs("Last Seen", "Type", "Reason", "Object", "*Subobject", "*Source", "Message", "*First Seen",
                      "*Count#", "*Name")


# --- custom kinds: their CRD's additionalPrinterColumns -----------------------------------
# The kinds knetsim defines (Gateway API, network-policy-api) are printed from the columns their catalog row
# declares (model/apis/catalog.py), as the API server's CRD table convertor prints them: the first value the
# JSONPath selects (a list as JSON), a missing value empty.

_JSONPATH_TOKEN = re.compile(r"\.([A-Za-z0-9_-]+)|\[(\*|\d+)\]"
                             r"|\[\?\(@\.([A-Za-z0-9_.-]+)\s*==\s*[\"']([^\"']*)[\"']\)\]")


def jsonpath(body: Any, path: str) -> list[Any]:
    """The values a CRD printer column's JSONPath selects (the subset CRDs use: fields, ``[n]``, ``[*]``,
    ``[?(@.type=="Ready")]``)."""
    values = [body]
    pos = 0
    while pos < len(path):
        m = _JSONPATH_TOKEN.match(path, pos)
        if m is None:
            return []
        pos = m.end()
        field, index, filter_path, filter_value = m.groups()
        out: list[Any] = []
        for v in values:
            if field is not None and isinstance(v, Mapping) and field in v:
                out.append(v[field])
            elif index == "*" and isinstance(v, list):
                out.extend(v)
            elif index is not None and index != "*" and isinstance(v, list) and int(index) < len(v):
                out.append(v[int(index)])
            elif filter_path is not None and isinstance(v, list):
                for item in v:
                    probe: Any = item
                    for part in filter_path.split("."):
                        probe = probe.get(part) if isinstance(probe, Mapping) else None
                    if probe is not None and str(probe) == filter_value:
                        out.append(item)
        values = out
    return values


def _crd_columns(kind: str) -> list[dict[str, Any]] | None:
    """The additionalPrinterColumns of a custom kind knetsim defines, at its storage version."""
    from .model.apis.catalog import DEFINITIONS

    for d in DEFINITIONS:
        if d.kind == kind:
            age_only = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
            return [c.to_dict() for c in d.storage.columns or ()] or age_only
    return None


def _crd_cell(column: Mapping[str, Any], body: Obj, now: datetime | None) -> Any:
    """As the CRD TableConvertor prints a cell: a date as an age, several values joined by commas."""
    values = jsonpath(body, str(column.get("jsonPath", "")))
    if not values or values == [None]:
        if column.get("type") == "date" and column.get("jsonPath") == ".metadata.creationTimestamp":
            # Every stored object has a creation time; one read from a file has none, and its age is then
            # "<unknown>", as translateTimestampSince prints it for the built-in kinds.
            return since(None, now)
        return "" if column.get("type") in ("string", "date") else None
    # Only the first value, as the convertor takes results[0][0] (a Gateway's second address is not printed):
    # apiextensions-apiserver, pkg/registry/customresource/tableconvertor/tableconvertor.go.
    value = values[0]
    if column.get("type") == "date":
        return since(value, now)
    if column.get("type") in ("integer", "number", "boolean"):
        return value
    return json.dumps(value, separators=(",", ":")) if isinstance(value, list | dict) else str(value)


def column_defs(kind: str) -> list[ColumnDef]:
    if kind == "Event":
        return list(EVENT_COLUMNS)
    if kind not in PRINTERS:
        custom = _crd_columns(kind)
        if custom is not None:
            return [_NAME, *(ColumnDef(str(c["name"]), "string" if c.get("type") == "date" else str(c.get("type")),
                                       int(c.get("priority", 0) or 0)) for c in custom)]
    return [_NAME, *PRINTERS.get(kind, (_defs("Age"), _default))[0]]


def cells(kind: str, body: Obj, now: datetime | None) -> list[Any]:
    """The row's cells in ``column_defs(kind)`` order, typed as the API sends them. An object of the wrong
    shape (a ``spec`` that is a string) still gets its row: its name, and no value (``<none>``) in the
    columns it cannot fill, as the CRD TableConvertor leaves a column whose path it cannot read."""
    try:
        return _cells(kind, body, now)
    except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
        meta = body.get("metadata") if isinstance(body, Mapping) else None
        name = str(meta.get("name", "")) if isinstance(meta, Mapping) else ""
        _log_unreadable(kind, meta if isinstance(meta, Mapping) else {}, exc)
        defs = column_defs(kind)
        row: list[Any] = [None] * len(defs)
        row[-1 if kind == "Event" else 0] = name
        for i, c in enumerate(defs):
            if c.name == "Age" and isinstance(meta, Mapping):
                row[i] = since(meta.get("creationTimestamp"), now)
        return row


def _log_unreadable(kind: str, meta: Mapping[str, Any], exc: BaseException) -> None:
    """One log line per version of an object no printer can read (a list of it is printed often)."""
    key = (kind, str(meta.get("namespace", "")), str(meta.get("name", "")), str(meta.get("resourceVersion", "")))
    if key not in _LOGGED:
        if len(_LOGGED) > 10_000:
            _LOGGED.clear()
        _LOGGED.add(key)
        log.warning("%s %s/%s: its columns cannot be printed (%s: %s)", kind, key[1], key[2], type(exc).__name__, exc)


_LOGGED: set[tuple[str, str, str, str]] = set()


def _cells(kind: str, body: Obj, now: datetime | None) -> list[Any]:
    if kind == "Event":
        return _event(body, now)
    if kind not in PRINTERS:
        custom = _crd_columns(kind)
        if custom is not None:
            return [(body.get("metadata") or {}).get("name", ""), *(_crd_cell(c, body, now) for c in custom)]
    return PRINTERS.get(kind, ([], _default))[1](body, now)


def columns(kind: str) -> list[Column]:
    """The headers as kubectl prints them (it upper-cases the API's names), with their priority."""
    return [(c.name.upper(), c.priority) for c in column_defs(kind)]


def row(kind: str, body: Obj, now: datetime | None = None) -> list[str]:
    """All cells of the row as text, in ``columns(kind)`` order (NAME first, but for Events); a bool as Go's %v
    prints it (kubectl: ``false``)."""
    return [("true" if c else "false") if isinstance(c, bool) else str(c) for c in cells(kind, body, now)]
