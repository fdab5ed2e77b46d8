"""ClusterState: what the controllers produced, indexed for the layers above.

It is built once by ``cluster.build`` and then only read, but for one step: the first read of ``workloads`` writes
the workloads' status, first generation and a made ReplicaSet's replica annotations, which the build defers (values
each of those objects holds alone, never one shared with another). Every collection is ordered by (namespace, name)
so that iteration — and therefore every output — is deterministic.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from threading import RLock
from typing import TYPE_CHECKING

from ..model.kinds import BY_KIND, KINDS, OTHERS, WORKLOADS
from ..model.kinds import stored_kind as stored_kind  # re-exported: where the build and the informer key others
from ..model.labels import Selector
from ..model.loader import CONTROLLER, Source
from ..model.objects import (
    EndpointSlice,
    Ingress,
    IngressClass,
    Meta,
    Namespace,
    NetworkPolicy,
    Node,
    Object,
    Pod,
    Service,
    stable_uid,
)
from .config import ClusterConfig
from .endpoints import endpoints_for

if TYPE_CHECKING:
    # Annotations only: the Gateway API model is imported by whoever parses Gateway objects, so a
    # cluster without them (the live cluster's start, a core-only -f) never pays for its 33 dataclasses.
    from ..model.gatewayapi import (
        BackendTLSPolicy,
        Gateway,
        GatewayClass,
        GRPCRoute,
        HTTPRoute,
        ListenerSet,
        ReferenceGrant,
        StreamRoute,
    )


@dataclass(frozen=True, slots=True)
class Notice:
    """A warning about the input that does not stop the simulation (kubectl prints these as ``Warning:``)."""

    code: str
    message: str
    subject: str = ""
    source: Source | None = None

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source and self.source.document else ""
        subject = f"{self.subject}: " if self.subject else ""
        return f"{where}{subject}{self.message}"


# Where each kind lives in a ClusterState, derived from its declaration (model.kinds: KindInfo.collection):
# cluster-scoped kinds keyed by name, namespaced ones by "namespace/name"; workloads (kept for `get`) and every
# other kind keyed by (kind, "namespace/name").
KEYED_BY_NAME = {k.kind: k.collection for k in KINDS if k.keyed_collection and not k.namespaced}
KEYED_BY_REF = {k.kind: k.collection for k in KINDS if k.keyed_collection and k.namespaced}
# The kinds whose controllers make pods (their pods are the simulation's; they are kept for `get`).
WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "ReplicationController", "StatefulSet", "DaemonSet", "Job")
KEPT_AS_WORKLOADS = tuple(k.kind for k in KINDS if k.collection == WORKLOADS)
# Every collection of a ClusterState, by attribute name.
COLLECTIONS = (*KEYED_BY_NAME.values(), *KEYED_BY_REF.values(), WORKLOADS, OTHERS)


# Held while a state's workloads are finished (ClusterState._get_workloads): one lock for all states, as finishing
# happens once per state.
_FINISHING = RLock()


def collection_of(kind: str) -> str:
    """The ClusterState attribute that holds objects of ``kind``."""
    info = BY_KIND.get(kind)
    return info.collection if info is not None and info.collection else OTHERS


# eq=False: a state is an identity (hashable, cacheable by layers above), never compared by value.
# A kind with a collection of its own (KindInfo.collection) has its field here, typed by its view.
@dataclass(eq=False)
class ClusterState:
    config: ClusterConfig
    namespaces: dict[str, Namespace] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    pods: dict[str, Pod] = field(default_factory=dict)
    services: dict[str, Service] = field(default_factory=dict)
    endpoint_slices: dict[str, EndpointSlice] = field(default_factory=dict)
    ingresses: dict[str, Ingress] = field(default_factory=dict)
    ingress_classes: dict[str, IngressClass] = field(default_factory=dict)
    network_policies: dict[str, NetworkPolicy] = field(default_factory=dict)
    # Gateway API (gateway.networking.k8s.io): routing and status are computed by knetsim.gateway.
    gateway_classes: dict[str, GatewayClass] = field(default_factory=dict)
    gateways: dict[str, Gateway] = field(default_factory=dict)
    http_routes: dict[str, HTTPRoute] = field(default_factory=dict)
    reference_grants: dict[str, ReferenceGrant] = field(default_factory=dict)
    grpc_routes: dict[str, GRPCRoute] = field(default_factory=dict)
    tls_routes: dict[str, StreamRoute] = field(default_factory=dict)
    tcp_routes: dict[str, StreamRoute] = field(default_factory=dict)
    udp_routes: dict[str, StreamRoute] = field(default_factory=dict)
    listener_sets: dict[str, ListenerSet] = field(default_factory=dict)
    backend_tls_policies: dict[str, BackendTLSPolicy] = field(default_factory=dict)
    # Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, Endpoints: kept for `get`.
    workloads: dict[tuple[str, str], Object] = field(default_factory=dict)
    # Kinds knetsim reads but does not simulate (ConfigMap, Secret, CRDs...), and CiliumNetworkPolicies.
    others: dict[tuple[str, str], Object] = field(default_factory=dict)
    notices: list[Notice] = field(default_factory=list)

    # What writes the workloads' status (their controllers' counts of the pods), first generation and a made
    # ReplicaSet's replica annotations, run the first time anything reads ``workloads`` (the property below): set by
    # the offline build, whose `matrix` never reads a workload's status (9,000 Deployments and their ReplicaSets:
    # ~0.15 s at 10,000 pods). Not a field: no caller passes it, and a state made from copies (the live server's) has
    # nothing to finish. Unannotated on purpose: an annotation would make it a dataclass field; its type is
    # Callable[[ClusterState], None] | None. ``_finishing``: another thread's reader waits for the statuses whole.
    _finish_workloads = None
    _finishing = False

    @property
    def workloads_without_status(self) -> dict[tuple[str, str], Object]:
        """The workloads, for what reads only their identity, labels, owner and source (the matrix's workload
        names, the CNI an agent DaemonSet shows): their ``raw`` may still lack the status, the generation and (a
        ReplicaSet the build made) the replica annotations the build writes, which reading ``workloads`` completes.
        Never for a workload's manifest, annotations or status."""
        return self._workloads

    def _get_workloads(self) -> dict[tuple[str, str], Object]:
        if self._finish_workloads is not None or self._finishing:
            with _FINISHING:
                finish: Callable[[ClusterState], None] | None = self._finish_workloads
                if finish is not None:
                    # Marked finishing before the hook is cleared, so a reader elsewhere never sees neither; cleared
                    # before the call, so what it runs may read the state too.
                    self._finishing = True
                    self._finish_workloads = None
                    try:
                        finish(self)
                    finally:
                        self._finishing = False
        return self._workloads

    def _set_workloads(self, value: dict[tuple[str, str], Object]) -> None:
        self._workloads = value

    # --- lookups ------------------------------------------------------------------

    def pods_in(self, namespace: str) -> list[Pod]:
        return self._pods_by_namespace.get(namespace, [])

    def select_pods(self, namespace: str, selector: Selector) -> list[Pod]:
        """Pods of ``namespace`` matching ``selector``, sorted by name; indexed for equality selectors."""
        if selector.nothing:
            return []
        equality = selector.equality_map()
        if equality:
            index = self._label_index(namespace)
            candidates: set[str] | None = None
            for pair in equality.items():
                names = index.get(pair)
                if not names:
                    return []
                candidates = set(names) if candidates is None else candidates & names
                if not candidates:
                    return []
            return [self.pods[f"{namespace}/{n}"] for n in sorted(candidates or ())]
        return [p for p in self.pods_in(namespace) if selector.matches(p.labels)]

    def slices_for(self, service: Service) -> list[EndpointSlice]:
        return self._slices_by_service.get(service.key, [])

    def service_by_ip(self, ip: str) -> Service | None:
        return self._service_by_ip.get(ip)

    def pod_by_ip(self, ip: str) -> Pod | None:
        return self._pod_by_ip.get(ip)

    def node_by_ip(self, ip: str) -> Node | None:
        return next((n for n in self.nodes.values() if n.internal_ip == ip or ip in n.internal_ips), None)

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        ns = self.namespaces.get(namespace)
        return ns.labels if ns else {"kubernetes.io/metadata.name": namespace}

    def objects_of(self, kind: str) -> list[Object]:
        if kind == "Endpoints":
            return self._endpoints
        collection: Iterable[Object]
        if kind in KEYED_BY_NAME or kind in KEYED_BY_REF:
            collection = getattr(self, collection_of(kind)).values()
        else:
            collection = [o for (k, _), o in getattr(self, collection_of(kind)).items() if k == kind]
        return sorted(collection, key=lambda o: (o.namespace, o.name))

    def warn(self, code: str, message: str, subject: str = "", source: Source | None = None) -> None:
        self.notices.append(Notice(code, message, subject, source))

    # --- indexes (computed lazily after the build; the state is read-only by then) --

    @cached_property
    def _endpoints(self) -> list[Object]:
        """The input's own Endpoints, with the endpoints controller's mirrors over them: made when read, as
        nothing the simulation answers reads v1 Endpoints (mirroring 10,000 pods costs a fifth of a second)."""
        out = {key: o for (kind, key), o in self.workloads.items() if kind == "Endpoints"}
        for key in sorted(self.services):
            svc = self.services[key]
            body = endpoints_for(svc, self.slices_for(svc))
            if body is not None:
                body["metadata"]["uid"] = stable_uid("Endpoints", svc.namespace, svc.name)
                out[key] = Object("Endpoints", Meta.parse("Endpoints", body["metadata"]), body, CONTROLLER)
        return [out[key] for key in sorted(out, key=lambda k: (out[k].namespace, out[k].name))]

    @cached_property
    def _pods_by_namespace(self) -> dict[str, list[Pod]]:
        out: dict[str, list[Pod]] = defaultdict(list)
        for key in sorted(self.pods):
            pod = self.pods[key]
            out[pod.namespace].append(pod)
        return dict(out)

    def _label_index(self, namespace: str) -> dict[tuple[str, str], set[str]]:
        """The names of ``namespace``'s pods by each label they carry, made when that namespace is first asked: the
        build asks for its Services' few namespaces (bench/calico.py: 10,000 pods in 1,000 namespaces, two asked)."""
        index = self._label_indexes.get(namespace)
        if index is None:
            # Filled before it is stored: a reader on another thread sees the whole index or none.
            index = defaultdict(set)
            for pod in self.pods_in(namespace):
                for pair in pod.labels.items():
                    index[pair].add(pod.name)
            self._label_indexes[namespace] = index
        return index

    @cached_property
    def _label_indexes(self) -> dict[str, dict[tuple[str, str], set[str]]]:
        return {}

    @cached_property
    def _slices_by_service(self) -> dict[str, list[EndpointSlice]]:
        out: dict[str, list[EndpointSlice]] = defaultdict(list)
        for key in sorted(self.endpoint_slices):
            es = self.endpoint_slices[key]
            if es.service_name:
                out[f"{es.namespace}/{es.service_name}"].append(es)
        return dict(out)

    @cached_property
    def _service_by_ip(self) -> dict[str, Service]:
        out = {}
        for svc in self.services.values():
            for ip in (*svc.cluster_ips, svc.cluster_ip, *svc.load_balancer_ips, *svc.external_ips):
                if ip and ip != "None":
                    out.setdefault(ip, svc)
        return out

    @cached_property
    def _pod_by_ip(self) -> dict[str, Pod]:
        out = {}
        for key in sorted(self.pods):
            pod = self.pods[key]
            if not pod.host_network:
                for ip in pod.pod_ips or ((pod.pod_ip,) if pod.pod_ip else ()):
                    out.setdefault(ip, pod)
        return out


# ``workloads`` is a dataclass field (a ClusterState is made with workloads=... by the live server's view) read
# through a property, so that its first reader finishes what the build deferred (ClusterState._finish_workloads):
# every reader of a workload's manifest (kubectl get, doctor, snapshots, diff) sees the status it always saw.
ClusterState.workloads = property(  # type: ignore[assignment, method-assign]
    ClusterState._get_workloads, ClusterState._set_workloads,
    doc="Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, Endpoints (kept for `get`), their status written.")
