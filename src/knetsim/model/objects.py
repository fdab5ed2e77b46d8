"""Typed, read-only views of the objects the simulation reasons about.

Each view is parsed once from a defaulted, validated manifest and keeps that manifest in
``raw`` (for ``get -o yaml`` and the API server). Layers above ``model`` work on these
views, never on dicts, so field access is checked and cheap.
"""

from __future__ import annotations

import hashlib
import marshal
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .labels import Selector
from .loader import BUILTIN, Source

_UID_NAMESPACE = uuid.UUID("6f1d1c7e-9a43-4d7e-9d55-6b6e6e657473")
_UID_NAMESPACE_BYTES = _UID_NAMESPACE.bytes


# The RFC 4122 variant (10xx) written over the digest's ninth byte's high nibble: its low two bits kept.
_VARIANT_NIBBLE = {digit: "89ab"[int(digit, 16) & 0x3] for digit in "0123456789abcdef"}


def stable_uid(kind: str, namespace: str, name: str) -> str:
    """A uid derived from identity, so the same manifests give the same uids on every run.

    uuid5(namespace, "kind/ns/name"), written out by hand: uuid.uuid5 builds two UUID objects per call, a
    measurable share of loading 10,000 pods. The version (5) and variant nibbles are written into the SHA-1's hex
    text rather than into its bytes before hexing (1.0 against 1.6 us; 18,000 owners of a 10,000-pod build)."""
    h = hashlib.sha1(_UID_NAMESPACE_BYTES + f"{kind}/{namespace}/{name}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT_NIBBLE[h[16]]}{h[17:20]}-{h[20:32]}"


@dataclass(frozen=True, slots=True)
class OwnerRef:
    kind: str
    name: str
    uid: str
    controller: bool = True


@dataclass(frozen=True, slots=True)
class Meta:
    name: str
    namespace: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    written_uid: str = ""  # metadata.uid as the manifest has it ("" when it has none)
    creation_timestamp: str | None = None
    owner: OwnerRef | None = None
    deletion_timestamp: str | None = None
    # The kind of an object parsed from a manifest (``parse``): its uid, when not written, derives from its identity.
    kind: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def uid(self) -> str:
        """metadata.uid, or for an object parsed without one its ``stable_uid``. Derived when read, not when parsed:
        building 10,000 pods parsed 40,000 objects' metadata (pods, policies, workloads) and hashed each identity
        (~2 us, 0.08 s), while only the pods an EndpointSlice targets and the Services owning one are ever read."""
        if self.written_uid or not self.kind:
            return self.written_uid
        return stable_uid(self.kind, self.namespace, self.name)

    @classmethod
    def parse(cls, kind: str, meta: Mapping[str, Any]) -> Meta:
        namespace = str(meta.get("namespace") or "")
        name = str(meta.get("name") or "")
        owner = None
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller"):
                owner = OwnerRef(str(ref.get("kind")), str(ref.get("name")), str(ref.get("uid", "")))
                break
        # Positional, in the fields' order: 40,000 objects of a 10,000-pod build come this way, and keywords cost
        # a quarter of the constructor.
        return cls(name, namespace, _strings(meta.get("labels")), _strings(meta.get("annotations")),
                   str(meta.get("uid") or ""), meta.get("creationTimestamp"), owner, meta.get("deletionTimestamp"),
                   kind)


@dataclass(frozen=True, slots=True)
class Object:
    kind: str
    meta: Meta
    raw: dict[str, Any]
    source: Source

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def key(self) -> str:
        return self.meta.key

    @property
    def labels(self) -> Mapping[str, str]:
        return self.meta.labels


_EMPTY: Mapping[str, str] = MappingProxyType({})


def _strings(values: Any) -> Mapping[str, str]:
    """A string map as admission leaves it, taken as it is (no copy: views are read-only)."""
    if not values:
        return _EMPTY
    if type(values) is dict:
        return values  # decoded by admission (or made by a controller): already strings
    return {str(k): str(v) for k, v in values.items()}


def _meta(kind: str, raw: Mapping[str, Any]) -> Meta:
    return Meta.parse(kind, raw.get("metadata") or {})


# --- Namespaces and nodes ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Namespace(Object):
    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> Namespace:
        return cls("Namespace", _meta("Namespace", raw), raw, source)


@dataclass(frozen=True, slots=True)
class Node(Object):
    internal_ip: str = ""
    pod_cidr: str = ""
    ready: bool = True
    taints: tuple[Mapping[str, Any], ...] = ()
    # Every InternalIP (a dual-stack node has one per family) and every pod CIDR, primary first.
    internal_ips: tuple[str, ...] = ()
    pod_cidrs: tuple[str, ...] = ()
    allocatable_cpu: str = ""

    @property
    def zone(self) -> str | None:
        return self.labels.get("topology.kubernetes.io/zone")

    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> Node:
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        ips = tuple(str(a.get("address", "")) for a in status.get("addresses") or []
                    if isinstance(a, Mapping) and a.get("type") == "InternalIP" and a.get("address"))
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        pod_cidr = str(spec.get("podCIDR") or "")
        return cls(
            "Node",
            _meta("Node", raw),
            raw,
            source,
            internal_ip=ips[0] if ips else "",
            pod_cidr=pod_cidr,
            ready=conditions.get("Ready", "True") == "True",
            taints=tuple(spec.get("taints") or ()),
            internal_ips=ips,
            pod_cidrs=tuple(str(c) for c in spec.get("podCIDRs") or ()) or ((pod_cidr,) if pod_cidr else ()),
            allocatable_cpu=str(((status.get("allocatable") or {}).get("cpu")) or ""),
        )


# --- Pods -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContainerPort:
    container_port: int
    protocol: str = "TCP"
    name: str = ""
    host_port: int | None = None
    host_ip: str = ""  # the node address the hostPort is published on; "" (and 0.0.0.0) is every one


@dataclass(frozen=True, slots=True)
class Probe:
    action: str  # httpGet | tcpSocket | grpc | exec
    port: int | str | None = None


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    image: str
    ports: tuple[ContainerPort, ...] = ()
    readiness_probe: Probe | None = None
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    mount_paths: tuple[str, ...] = ()  # volumeMounts' mountPath: a mounted config replaces the image's own


def _probe(spec: Any) -> Probe | None:
    if not isinstance(spec, Mapping):
        return None
    for action in ("httpGet", "tcpSocket", "grpc"):
        if isinstance(spec.get(action), Mapping):
            return Probe(action, spec[action].get("port"))
    if "exec" in spec:
        return Probe("exec")
    return None


_CONTAINERS: dict[int, tuple[Mapping[str, Any], Container]] = {}
# The same container is also written in many templates (bench/calico.py: 9,000 Deployments, 9 distinct containers,
# 9,009 container dicts): a view per distinct content (``content_key``, ~2 us against ~7 us to parse one), bounded.
_CONTAINERS_BY_CONTENT: dict[bytes, Container] = {}
_CONTAINERS_BY_CONTENT_MAX = 4096


def parse_container(raw: Mapping[str, Any]) -> Container:
    """The typed view of a container; the replicas of one template share their container dicts, so the
    view is built once per dict (keyed by identity, the dict kept alive beside its view), and equal containers of
    other templates share it too (a view reads nothing but the dict's content)."""
    hit = _CONTAINERS.get(id(raw))
    if hit is not None and hit[0] is raw:
        return hit[1]
    if len(_CONTAINERS) > 65536:
        _CONTAINERS.clear()
    content = content_key(raw)
    container = _CONTAINERS_BY_CONTENT.get(content) if isinstance(content, bytes) else None
    if container is None:
        container = _parse_container(raw)
        if isinstance(content, bytes) and len(_CONTAINERS_BY_CONTENT) < _CONTAINERS_BY_CONTENT_MAX:
            _CONTAINERS_BY_CONTENT[content] = container
    _CONTAINERS[id(raw)] = (raw, container)
    return container


def _parse_container(raw: Mapping[str, Any]) -> Container:
    ports = tuple(
        ContainerPort(
            int(p.get("containerPort", 0)),
            str(p.get("protocol") or "TCP"),
            str(p.get("name") or ""),
            p.get("hostPort"),
            str(p.get("hostIP") or ""),
        )
        for p in raw.get("ports") or []
        if int(p.get("containerPort") or 0) > 0  # one without a number (kept as written, --validate=ignore) names none
    )
    env = {str(e.get("name")): str(e.get("value", "")) for e in raw.get("env") or [] if isinstance(e, Mapping)}
    return Container(
        name=str(raw.get("name") or ""),
        image=str(raw.get("image") or ""),
        ports=ports,
        readiness_probe=_probe(raw.get("readinessProbe")),
        command=tuple(str(c) for c in raw.get("command") or ()),
        args=tuple(str(a) for a in raw.get("args") or ()),
        env=env,
        mount_paths=tuple(str(m.get("mountPath") or "") for m in raw.get("volumeMounts") or ()
                          if isinstance(m, Mapping) and m.get("mountPath")),
    )


@dataclass(frozen=True, slots=True)
class Pod(Object):
    node_name: str = ""
    pod_ip: str = ""
    host_ip: str = ""
    # status.podIPs: one per family on a dual-stack cluster, the primary (pod_ip) first.
    pod_ips: tuple[str, ...] = ()
    phase: str = "Running"
    ready: bool = True
    not_ready_reason: str = ""
    host_network: bool = False
    hostname: str = ""
    subdomain: str = ""
    containers: tuple[Container, ...] = ()
    dns_policy: str = "ClusterFirst"
    dns_config: Mapping[str, Any] | None = None
    restart_policy: str = "Always"

    @property
    def terminating(self) -> bool:
        return self.meta.deletion_timestamp is not None

    def waiting_reasons(self) -> dict[str, str]:
        """Each container status's waiting reason by container name ("" for a container that is not waiting)."""
        return {str(cs.get("name")): str(((cs.get("state") or {}).get("waiting") or {}).get("reason") or "")
                for cs in (self.raw.get("status") or {}).get("containerStatuses") or () if isinstance(cs, Mapping)}

    def unschedulable(self) -> str | None:
        """The scheduler's words on why the pod has no node (its PodScheduled=False condition's message, else its
        reason, possibly empty); None when no such condition says so."""
        for condition in (self.raw.get("status") or {}).get("conditions") or ():
            if isinstance(condition, Mapping) and condition.get("type") == "PodScheduled" \
                    and condition.get("status") == "False":
                return str(condition.get("message") or condition.get("reason") or "")
        return None

    def named_port(self, name: str, protocol: str) -> int | None:
        """``podutil.FindPort`` for a named port: the first container port with that name and protocol."""
        for container in self.containers:
            for port in container.ports:
                if port.name == name and port.protocol == protocol:
                    return port.container_port
        return None

    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> Pod:
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        ready, reason = _pod_readiness(status)
        pod_ip = status.get("podIP")
        pod_ips = _pod_ips(status.get("podIPs")) or ((str(pod_ip),) if pod_ip else ())
        # Sidecars (init containers with restartPolicy Always) run beside the app: FindPort searches their named
        # ports too, and they may be what listens.
        containers = spec.get("containers") or []
        if spec.get("initContainers"):
            containers = [*containers, *_sidecars(spec)]
            views = tuple(parse_container(c) for c in containers)
        else:
            views = _container_views(containers)
        # Positional, in the fields' order (Object's, then Pod's): each of a 10,000-pod build's pods comes this way,
        # and eighteen keywords cost a quarter of the constructor.
        return cls(
            "Pod", _meta("Pod", raw), raw, source,
            str(spec.get("nodeName") or ""),  # node_name
            str(pod_ip or ""),  # pod_ip
            str(status.get("hostIP") or ""),  # host_ip
            pod_ips,
            str(status.get("phase") or "Pending"),  # phase
            ready,
            reason,  # not_ready_reason
            bool(spec.get("hostNetwork")),  # host_network
            str(spec.get("hostname") or ""),  # hostname
            str(spec.get("subdomain") or ""),  # subdomain
            views,  # containers
            str(spec.get("dnsPolicy") or "ClusterFirst"),  # dns_policy
            spec.get("dnsConfig"),  # dns_config
            str(spec.get("restartPolicy") or "Always"),  # restart_policy
        )


def _pod_ips(entries: Any) -> tuple[str, ...]:
    """status.podIPs' addresses; the common entry, a dict of one ip, read without the Mapping ABC's check."""
    if not entries:
        return ()
    return tuple(str(p["ip"]) for p in entries
                 if (type(p) is dict or isinstance(p, Mapping)) and p.get("ip"))


# The views of a pod's containers, by the list's identity: the pods of one template (and of equal ones, as the
# build makes them: cluster.workloads.expand_workloads) share their containers list, 10,000 pods of bench/calico.py
# nine lists. Kept with the list (alive, so its id is not reused) and a copy of it, which must still equal it (an
# item replaced, added or dropped is a different list; an item's own dict is held to parse_container's terms).
# Bounded as _CONTAINERS is.
_CONTAINER_LISTS: dict[int, tuple[list[Any], list[Any], tuple[Container, ...]]] = {}


def _container_views(containers: Any) -> tuple[Container, ...]:
    if type(containers) is not list:
        return tuple(parse_container(c) for c in containers)
    hit = _CONTAINER_LISTS.get(id(containers))
    if hit is not None and hit[0] is containers and hit[1] == containers:
        return hit[2]
    if len(_CONTAINER_LISTS) > 65536:
        _CONTAINER_LISTS.clear()
    views = tuple(parse_container(c) for c in containers)
    _CONTAINER_LISTS[id(containers)] = (containers, list(containers), views)
    return views


def _sidecars(spec: Mapping[str, Any]) -> list[Any]:
    """The init containers with restartPolicy Always, which run beside the app containers."""
    inits = spec.get("initContainers")
    if not inits:
        return []
    return [c for c in inits if isinstance(c, Mapping) and c.get("restartPolicy") == "Always"]


def _pod_readiness(status: Mapping[str, Any]) -> tuple[bool, str]:
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready":
            if condition.get("status") == "True":
                return True, ""
            reason = condition.get("reason") or "ReadinessNotTrue"
            message = condition.get("message")
            return False, f"{reason}: {message}" if message else str(reason)
    return False, "no Ready condition"


# --- Services -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServicePort:
    name: str
    protocol: str
    port: int
    target_port: int | str
    node_port: int | None = None
    app_protocol: str | None = None


@dataclass(frozen=True, slots=True)
class Service(Object):
    type: str = "ClusterIP"
    selector: Mapping[str, str] | None = None
    cluster_ip: str = ""  # "" = not allocated (ExternalName); "None" = headless
    cluster_ips: tuple[str, ...] = ()
    ports: tuple[ServicePort, ...] = ()
    external_name: str = ""
    external_ips: tuple[str, ...] = ()
    load_balancer_ips: tuple[str, ...] = ()
    external_traffic_policy: str = "Cluster"
    internal_traffic_policy: str = "Cluster"
    session_affinity: str = "None"
    session_affinity_timeout: int = 10800
    publish_not_ready_addresses: bool = False
    health_check_node_port: int | None = None
    load_balancer_source_ranges: tuple[str, ...] = ()
    allocate_load_balancer_node_ports: bool = True
    traffic_distribution: str | None = None

    @property
    def headless(self) -> bool:
        return self.cluster_ip == "None"

    @property
    def selector_view(self) -> Selector:
        return Selector.from_map(self.selector)

    def port_named(self, name: str) -> ServicePort | None:
        return next((p for p in self.ports if p.name == name), None)

    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> Service:
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        ports = tuple(
            ServicePort(
                name=str(p.get("name") or ""),
                protocol=str(p.get("protocol") or "TCP"),
                port=int(p.get("port", 0)),
                target_port=p.get("targetPort", p.get("port", 0)),
                node_port=p.get("nodePort") or None,
                app_protocol=p.get("appProtocol"),
            )
            for p in spec.get("ports") or []
        )
        lb = tuple(
            str(i.get("ip") or i.get("hostname"))
            for i in (status.get("loadBalancer") or {}).get("ingress") or []
            if i.get("ip") or i.get("hostname")
        )
        selector = spec.get("selector")
        timeout = ((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}).get("timeoutSeconds", 10800)
        return cls(
            "Service",
            _meta("Service", raw),
            raw,
            source,
            type=str(spec.get("type") or "ClusterIP"),
            # `selector: {}` is dropped on storage (omitempty), so the controllers see no selector at all.
            selector={str(k): str(v) for k, v in selector.items()} if isinstance(selector, Mapping) and selector
            else None,
            cluster_ip=str(spec.get("clusterIP") or ""),
            cluster_ips=tuple(str(i) for i in spec.get("clusterIPs") or ()),
            ports=ports,
            external_name=str(spec.get("externalName") or ""),
            external_ips=tuple(str(i) for i in spec.get("externalIPs") or ()),
            load_balancer_ips=lb,
            external_traffic_policy=str(spec.get("externalTrafficPolicy") or "Cluster"),
            internal_traffic_policy=str(spec.get("internalTrafficPolicy") or "Cluster"),
            session_affinity=str(spec.get("sessionAffinity") or "None"),
            session_affinity_timeout=int(timeout),
            publish_not_ready_addresses=bool(spec.get("publishNotReadyAddresses")),
            health_check_node_port=spec.get("healthCheckNodePort"),
            load_balancer_source_ranges=tuple(str(r).strip() for r in spec.get("loadBalancerSourceRanges") or ()),
            allocate_load_balancer_node_ports=spec.get("allocateLoadBalancerNodePorts", True) is not False,
            traffic_distribution=spec.get("trafficDistribution"),
        )


# --- EndpointSlices -------------------------------------------------------------------

ENDPOINTSLICE_CONTROLLER = "endpointslice-controller.k8s.io"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"


@dataclass(frozen=True, slots=True)
class Endpoint:
    addresses: tuple[str, ...]
    ready: bool | None = True
    serving: bool | None = True
    terminating: bool | None = False
    node_name: str | None = None
    zone: str | None = None
    hostname: str | None = None
    target_ref: tuple[str, str, str] | None = None  # (kind, namespace, name)
    # hints.forZones / hints.forNodes names (topology-aware routing; empty: no hint).
    for_zones: tuple[str, ...] = ()
    for_nodes: tuple[str, ...] = ()


def _hint_names(hints: Any, key: str) -> tuple[str, ...]:
    if not isinstance(hints, Mapping):
        return ()
    return tuple(str(h["name"]) for h in hints.get(key) or () if isinstance(h, Mapping) and h.get("name"))


@dataclass(frozen=True, slots=True)
class EndpointPort:
    name: str
    port: int | None
    protocol: str = "TCP"
    app_protocol: str | None = None


@dataclass(frozen=True, slots=True)
class EndpointSlice(Object):
    address_type: str = "IPv4"
    endpoints: tuple[Endpoint, ...] = ()
    ports: tuple[EndpointPort, ...] = ()

    @property
    def service_name(self) -> str:
        return self.labels.get(SERVICE_NAME_LABEL, "")

    @property
    def managed_by(self) -> str:
        return self.labels.get(MANAGED_BY_LABEL, "")

    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> EndpointSlice:
        endpoints = []
        for e in raw.get("endpoints") or []:
            cond = e.get("conditions") or {}
            ref = e.get("targetRef")
            endpoints.append(
                Endpoint(
                    addresses=tuple(str(a) for a in e.get("addresses") or ()),
                    # EndpointConditions: a nil `ready` means unknown and is read as ready.
                    ready=cond.get("ready", True) is not False,
                    serving=cond.get("serving", cond.get("ready", True)) is not False,
                    terminating=bool(cond.get("terminating", False)),
                    node_name=e.get("nodeName"),
                    zone=e.get("zone"),
                    hostname=e.get("hostname"),
                    for_zones=_hint_names(e.get("hints"), "forZones"),
                    for_nodes=_hint_names(e.get("hints"), "forNodes"),
                    target_ref=(str(ref.get("kind")), str(ref.get("namespace", "")), str(ref.get("name")))
                    if isinstance(ref, Mapping)
                    else None,
                )
            )
        ports = tuple(
            EndpointPort(str(p.get("name") or ""), p.get("port"), str(p.get("protocol") or "TCP"), p.get("appProtocol"))
            for p in raw.get("ports") or []
        )
        return cls(
            "EndpointSlice",
            _meta("EndpointSlice", raw),
            raw,
            source,
            address_type=str(raw.get("addressType") or "IPv4"),
            endpoints=tuple(endpoints),
            ports=ports,
        )


# --- Ingress --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IngressBackend:
    service_name: str = ""
    port_number: int | None = None
    port_name: str = ""
    resource: Mapping[str, Any] | None = None

    def describe(self) -> str:
        if self.resource is not None:
            return f"{self.resource.get('kind')}/{self.resource.get('name')}"
        return f"{self.service_name}:{self.port_number if self.port_number is not None else self.port_name}"


def _backend(raw: Any) -> IngressBackend | None:
    if not isinstance(raw, Mapping):
        return None
    if raw.get("resource"):
        return IngressBackend(resource=raw["resource"])
    service = raw.get("service") or {}
    port = service.get("port") or {}
    return IngressBackend(str(service.get("name") or ""), port.get("number"), str(port.get("name") or ""))


@dataclass(frozen=True, slots=True)
class IngressPath:
    path: str
    path_type: str
    backend: IngressBackend


@dataclass(frozen=True, slots=True)
class IngressRule:
    host: str
    paths: tuple[IngressPath, ...]


@dataclass(frozen=True, slots=True)
class IngressTLS:
    hosts: tuple[str, ...]
    secret_name: str


@dataclass(frozen=True, slots=True)
class Ingress(Object):
    class_name: str | None = None
    class_annotation: str | None = None
    default_backend: IngressBackend | None = None
    rules: tuple[IngressRule, ...] = ()
    tls: tuple[IngressTLS, ...] = ()

    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> Ingress:
        spec = raw.get("spec") or {}
        rules = []
        for rule in spec.get("rules") or []:
            http = rule.get("http") or {}
            paths = tuple(
                IngressPath(str(p.get("path") or ""), str(p.get("pathType") or ""),
                            _backend(p.get("backend")) or IngressBackend())
                for p in http.get("paths") or []
            )
            rules.append(IngressRule(str(rule.get("host") or ""), paths))
        tls = tuple(
            IngressTLS(tuple(str(h) for h in t.get("hosts") or ()), str(t.get("secretName") or ""))
            for t in spec.get("tls") or []
        )
        annotations = (raw.get("metadata") or {}).get("annotations") or {}
        return cls(
            "Ingress",
            _meta("Ingress", raw),
            raw,
            source,
            class_name=spec.get("ingressClassName"),
            class_annotation=annotations.get(INGRESS_CLASS_ANNOTATION),
            default_backend=_backend(spec.get("defaultBackend")),
            rules=tuple(rules),
            tls=tls,
        )


DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
# Deprecated since v1.18 for spec.ingressClassName; ingress controllers and DefaultIngressClass still read it.
INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"


@dataclass(frozen=True, slots=True)
class IngressClass(Object):
    controller: str = ""
    parameters: Mapping[str, Any] | None = None

    @property
    def is_default(self) -> bool:
        return self.meta.annotations.get(DEFAULT_CLASS_ANNOTATION) == "true"

    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> IngressClass:
        spec = raw.get("spec") or {}
        return cls(
            "IngressClass",
            _meta("IngressClass", raw),
            raw,
            source,
            controller=str(spec.get("controller") or ""),
            parameters=spec.get("parameters"),
        )


# --- NetworkPolicy --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IPBlock:
    cidr: str
    except_: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PolicyPeer:
    """One item of ``from``/``to``. Both selectors set means AND; a missing one is None."""

    pod_selector: Selector | None = None
    namespace_selector: Selector | None = None
    ip_block: IPBlock | None = None


@dataclass(frozen=True, slots=True)
class PolicyPort:
    protocol: str = "TCP"
    port: int | str | None = None  # None: every port
    end_port: int | None = None


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """``peers is None``: the field was missing or empty — every peer. ``ports`` likewise."""

    peers: tuple[PolicyPeer, ...] | None
    ports: tuple[PolicyPort, ...] | None


@dataclass(frozen=True, slots=True)
class NetworkPolicy(Object):
    pod_selector: Selector = field(default_factory=Selector.everything)
    policy_types: tuple[str, ...] = ("Ingress",)
    ingress: tuple[PolicyRule, ...] = ()
    egress: tuple[PolicyRule, ...] = ()

    @classmethod
    def parse(cls, raw: dict[str, Any], source: Source = BUILTIN) -> NetworkPolicy:
        spec = raw.get("spec") or {}
        return cls(
            "NetworkPolicy",
            _meta("NetworkPolicy", raw),
            raw,
            source,
            pod_selector=_policy_selector(spec.get("podSelector") or {}),
            policy_types=tuple(spec.get("policyTypes") or ("Ingress",)),
            ingress=_rules(spec.get("ingress"), "from"),
            egress=_rules(spec.get("egress"), "to"),
        )


# Policies repeat a few selectors (a namespace's team, an app's label) thousands of times; a Selector is frozen,
# so the policies that write the same labels share one. Bounded: distinct selectors beyond it are made anew.
_SHARED_SELECTORS: dict[tuple[tuple[str, str], ...], Selector] = {}
_SHARED_SELECTORS_MAX = 4096


def _policy_selector(raw: Mapping[str, Any]) -> Selector:
    """``Selector.from_label_selector`` of a policy's selector, shared when it is labels only (strings, as admitted)."""
    if type(raw) is not dict or (raw and (len(raw) != 1 or type(raw.get("matchLabels")) is not dict)):
        return Selector.from_label_selector(raw)
    labels = raw.get("matchLabels") or {}
    if not all(type(k) is str and type(v) is str for k, v in labels.items()):
        return Selector.from_label_selector(raw)
    key = tuple(labels.items())
    known = _SHARED_SELECTORS.get(key)
    if known is None:
        known = Selector.from_label_selector(raw)
        if len(_SHARED_SELECTORS) < _SHARED_SELECTORS_MAX:
            _SHARED_SELECTORS[key] = known
    return known


# Policies repeat their rules too (10,000 policies of bench/calico.py hold 1,200 distinct ones): a PolicyRule is
# frozen, so the policies that write equal rules share one, made once. Keyed by the rule's content (``content_key``);
# bounded as the selectors are.
_SHARED_RULES: dict[tuple[str, bytes | str], PolicyRule] = {}


def content_key(raw: Any) -> bytes | str:
    """A key equal for equal JSON-like values (dicts in the same key order, exact types: True is not 1): marshal's
    bytes, 2 us for a policy rule where ``repr`` took 4.5 (36,000 rules of bench/calico.py: 0.09 s saved). Version 2
    writes no back-references or interning marks, so the bytes depend on content alone. A value marshal refuses
    (a type it does not write, a subclass such as the JSON reader's GoNumber) is pickled, which names its class (its
    bytes start with pickle's protocol mark, which no marshal version 2 output does); what pickle refuses too is
    keyed by its ``repr``, a str, which never equals bytes."""
    try:
        return marshal.dumps(raw, 2)
    except ValueError:
        import pickle  # seldom needed: not paid for at every command's start

        try:
            return pickle.dumps(raw, pickle.HIGHEST_PROTOCOL)
        except Exception:  # whatever a value holds that pickle refuses, its repr still tells it
            return repr(raw)


# And whole lists of rules: one key for a policy's ingress (or egress) rather than one per rule (10,000 policies:
# 20,000 lists of 36,000 rules, ~1.7 us a list against ~2 us a rule).
_SHARED_RULE_LISTS: dict[tuple[str, bytes], tuple[PolicyRule, ...]] = {}


def _rules(raw: Any, peers_key: str) -> tuple[PolicyRule, ...]:
    if not raw:
        return ()
    key = content_key(raw)
    if isinstance(key, bytes):
        known = _SHARED_RULE_LISTS.get((peers_key, key))
        if known is not None:
            return known
    rules = tuple(_rule(r, peers_key) for r in raw)
    if isinstance(key, bytes) and len(_SHARED_RULE_LISTS) < _SHARED_SELECTORS_MAX:
        _SHARED_RULE_LISTS[(peers_key, key)] = rules
    return rules


def _rule(raw: Mapping[str, Any], peers_key: str) -> PolicyRule:
    key = (peers_key, content_key(raw))
    known = _SHARED_RULES.get(key)
    if known is None:
        known = _new_rule(raw, peers_key)
        if len(_SHARED_RULES) < _SHARED_SELECTORS_MAX:
            _SHARED_RULES[key] = known
    return known


def _new_rule(raw: Mapping[str, Any], peers_key: str) -> PolicyRule:
    raw = raw or {}
    peers_raw = raw.get(peers_key)
    ports_raw = raw.get("ports")
    peers = None
    if peers_raw:
        peers = tuple(
            PolicyPeer(
                pod_selector=_policy_selector(p["podSelector"])
                if p.get("podSelector") is not None
                else None,
                namespace_selector=_policy_selector(p["namespaceSelector"])
                if p.get("namespaceSelector") is not None
                else None,
                ip_block=IPBlock(str(p["ipBlock"]["cidr"]), tuple(str(e) for e in p["ipBlock"].get("except") or ()))
                if p.get("ipBlock") is not None
                else None,
            )
            for p in peers_raw
        )
    ports = None
    if ports_raw:
        ports = tuple(
            PolicyPort(str(p.get("protocol") or "TCP"), p.get("port"), p.get("endPort")) for p in ports_raw
        )
    return PolicyRule(peers, ports)

