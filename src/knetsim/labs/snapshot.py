"""What a grader sees: the cluster's objects read through the API, and knetsim's simulation of them.

Spec criteria read the objects as the API server returned them. Traffic criteria (traces,
routes, DNS answers) run on a ``knetsim.Cluster`` built from the same objects, read as a live
snapshot: pods keep their IPs, nodes and readiness, Services their allocated IPs. Against
``knetsim up`` that is the very state the server's controllers computed; against kind or
minikube it is knetsim's simulation of that cluster's objects, and reports say so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..api import Cluster
from ..cluster.build import build_cluster
from ..model.jsonvalue import json_copy
from ..model.kinds import BY_KIND
from ..model.loader import Document, Source
from ..sources import KubeAPI
from ..sources.live import read_cluster

GATEWAY_KINDS = ("GatewayClass", "Gateway", "HTTPRoute", "ReferenceGrant")
CLUSTER_POLICY_KINDS = ("ClusterNetworkPolicy", "AdminNetworkPolicy", "BaselineAdminNetworkPolicy")

# Workloads are read for spec criteria but not simulated again: their pods are already in
# the snapshot, with the cluster's own names, IPs and readiness.
SIMULATED_KINDS = ("Namespace", "Node", "Pod", "Service", "EndpointSlice", "IngressClass", "Ingress", "NetworkPolicy",
                   *GATEWAY_KINDS, *CLUSTER_POLICY_KINDS)
READ_KINDS = (*SIMULATED_KINDS, "Deployment")


@dataclass
class Snapshot:
    server: str
    context: str
    knetsim: bool  # the API server is knetsim's own (`knetsim up`)
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def items(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return [o for o in self.objects.get(kind, [])
                if namespace is None or (o.get("metadata") or {}).get("namespace") == namespace]

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        for o in self.objects.get(kind, []):
            meta = o.get("metadata") or {}
            if meta.get("name") == name and (namespace is None or meta.get("namespace") == namespace):
                return o
        return None

    @property
    def where(self) -> str:
        """One line for reports: which cluster, and who decided the traffic criteria."""
        if self.knetsim:
            return f"{self.server} (knetsim up; traffic criteria use the server's own simulated state)"
        return (f"{self.server} (context {self.context}; traffic criteria run on knetsim's simulation of this "
                "cluster's objects, not on real packets)")

    @cached_property
    def _built(self) -> tuple[Cluster, list[str]]:
        docs = [Document(Source(f"<api {kind}>", i + 1), body)
                for kind in SIMULATED_KINDS for i, body in enumerate(self.objects.get(kind, []))]
        result = build_cluster(docs)
        # An object the simulation rejects is left out, not fatal: the API server accepted it,
        # and the other criteria can still be graded.
        return Cluster(result.state, docs), [str(e) for e in result.errors]

    @property
    def cluster(self) -> Cluster:
        return self._built[0]

    @property
    def simulation_errors(self) -> list[str]:
        return self._built[1]


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    meta.pop("managedFields", None)
    return obj


def fetch(api: KubeAPI, kinds: Iterable[str] = READ_KINDS) -> Snapshot:
    """Read every object of ``kinds`` in all namespaces (as the analysis commands read a cluster), sorted by
    (namespace, name)."""
    try:
        version = api.version()
    except Exception:  # a server without /version is still graded
        version = {}
    snap = Snapshot(api.server, api.context, version.get("gitCommit") == "knetsim")
    got = read_cluster(api, f"cluster {api.context}", kinds=[BY_KIND[k] for k in kinds])
    for kind in kinds:
        snap.objects[kind] = []
    for doc in got.loaded.documents:
        # setdefault: the read adds the cluster's CRDs of the custom kinds asked for, which admit them.
        snap.objects.setdefault(doc.kind, []).append(doc.body)
    return snap


def from_objects(objects: Iterable[dict[str, Any]], *, knetsim: bool = True, server: str = "<objects>") -> Snapshot:
    """A snapshot from objects already in hand (tests, or ``kubectl get -A -o json`` output)."""
    snap = Snapshot(server, "", knetsim)
    for o in objects:
        snap.objects.setdefault(str(o.get("kind")), []).append(_clean(json_copy(o)))
    for items in snap.objects.values():
        items.sort(key=lambda o: ((o["metadata"].get("namespace") or ""), o["metadata"].get("name") or ""))
    return snap
