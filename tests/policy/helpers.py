"""Builders for policy tests.

Address plan (DESIGN.md defaults): nodes control-plane 172.18.0.2, worker 172.18.0.3,
worker2 172.18.0.4; pods 10.244.<node>.x; external addresses from 192.0.2.0/24 and
198.51.100.0/24 (documentation ranges).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig
from knetsim.cluster.state import ClusterState


def ns(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def pod(ref: str, labels: dict[str, str] | None = None, *, ports: dict[str, int] | None = None,
        udp: dict[str, int] | None = None, node: str = "worker", host_network: bool = False,
        tweak: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    namespace, _, name = ref.partition("/")
    container_ports = [{"containerPort": n, "name": k} for k, n in (ports or {}).items()]
    container_ports += [{"containerPort": n, "name": k, "protocol": "UDP"} for k, n in (udp or {}).items()]
    body: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox", "ports": container_ports}]},
    }
    if host_network:
        body["spec"]["hostNetwork"] = True
    if tweak:
        tweak(body)
    return body


def deployment(ref: str, labels: dict[str, str], replicas: int = 2, *, ports: dict[str, int] | None = None,
               host_network: bool = False) -> dict[str, Any]:
    namespace, _, name = ref.partition("/")
    labels = {**labels, "app": name}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox", "ports": [
        {"containerPort": n, "name": k} for k, n in (ports or {"http": 80}).items()]}]}
    if host_network:
        spec["hostNetwork"] = True
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def netpol(ref: str, spec: dict[str, Any]) -> dict[str, Any]:
    namespace, _, name = ref.partition("/")
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def cnp(ref: str, spec: dict[str, Any]) -> dict[str, Any]:
    namespace, _, name = ref.partition("/")
    return {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def clusterpolicy(name: str, tier: str, priority: int, subject: dict[str, Any], *,
                  ingress: list[dict[str, Any]] | None = None, egress: list[dict[str, Any]] | None = None
                  ) -> dict[str, Any]:
    """A policy.networking.k8s.io/v1alpha2 ClusterNetworkPolicy."""
    spec: dict[str, Any] = {"tier": tier, "priority": priority, "subject": subject}
    if ingress is not None:
        spec["ingress"] = ingress
    if egress is not None:
        spec["egress"] = egress
    return {"apiVersion": "policy.networking.k8s.io/v1alpha2", "kind": "ClusterNetworkPolicy",
            "metadata": {"name": name}, "spec": spec}


def adminpolicy(name: str, priority: int | None, subject: dict[str, Any], *,
                ingress: list[dict[str, Any]] | None = None, egress: list[dict[str, Any]] | None = None
                ) -> dict[str, Any]:
    """A v1alpha1 AdminNetworkPolicy (``priority`` None: the BaselineAdminNetworkPolicy, named default)."""
    spec: dict[str, Any] = {"subject": subject}
    if priority is not None:
        spec["priority"] = priority
    if ingress is not None:
        spec["ingress"] = ingress
    if egress is not None:
        spec["egress"] = egress
    kind = "AdminNetworkPolicy" if priority is not None else "BaselineAdminNetworkPolicy"
    return {"apiVersion": "policy.networking.k8s.io/v1alpha1", "kind": kind,
            "metadata": {"name": name if priority is not None else "default"}, "spec": spec}


def namespace_is(name: str) -> dict[str, Any]:
    """A label selector for one namespace, by its immutable name label."""
    return {"matchLabels": {"kubernetes.io/metadata.name": name}}


def service(ref: str, selector: dict[str, str], port: int, target: int | str) -> dict[str, Any]:
    namespace, _, name = ref.partition("/")
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": selector, "ports": [{"port": port, "targetPort": target}]}}


def experimental_crds() -> list[dict[str, Any]]:
    """network-policy-api's experimental-channel CRDs (knetsim's own definitions of them), as a cluster that runs
    that channel (OVN-Kubernetes) has installed: with them, ``nodes`` and ``domainNames`` peers are admitted."""
    from knetsim.model.crd import builtin_crd

    kinds = ("AdminNetworkPolicy", "BaselineAdminNetworkPolicy", "ClusterNetworkPolicy")
    return [c for k in kinds if (c := builtin_crd("policy.networking.k8s.io", k, "experimental")) is not None]


def cluster(*objects: dict[str, Any], dataplane: str = "iptables", experimental: bool = False) -> Cluster:
    docs = [*experimental_crds(), *objects] if experimental else list(objects)
    return Cluster.from_yaml(yaml.safe_dump_all(docs, sort_keys=False), config=ClusterConfig(dataplane=dataplane))


def state(*objects: dict[str, Any], dataplane: str = "iptables", experimental: bool = False) -> ClusterState:
    return cluster(*objects, dataplane=dataplane, experimental=experimental).state


DEFAULT_DENY_INGRESS = {"podSelector": {}, "policyTypes": ["Ingress"]}
DEFAULT_DENY_ALL = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
ALLOW_DNS = {
    "podSelector": {}, "policyTypes": ["Egress"],
    "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}],
                "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}],
}


def vectorised_and_pairwise(state: ClusterState, monkeypatch: Any, **kwargs: Any) -> tuple[dict[str, Any],
                                                                                        dict[str, Any]]:
    """The matrix of a Calico or Cilium cluster as ``matrix`` gives it (vectorised over classes), and the same
    matrix walked pair by pair through the engine: the reference the vectorised answer must equal."""
    import functools

    from knetsim.policy import matrix as matrix_module

    vectorised = matrix_module.matrix(state, **kwargs).to_dict()
    with monkeypatch.context() as patch:
        patch.setattr(matrix_module, "_calico_matrix",
                      functools.partial(matrix_module._calico_matrix, pairwise=True))
        pairwise = matrix_module.matrix(state, **kwargs).to_dict()
    return vectorised, pairwise


def matrix_cells(doc: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """A ``matrix -o json`` document's connections by (from, to)."""
    return {(c["from"], c["to"]): (c["allowed"], c.get("partly")) for c in doc["connections"]}


def assert_same_cells(vectorised: dict[str, Any], pairwise: dict[str, Any], label: str) -> dict[tuple[str, str], Any]:
    """Every cell of the vectorised matrix is the pair-by-pair walk's (the first difference named with ``label``,
    the seed and options); the vectorised cells."""
    got, want = matrix_cells(vectorised), matrix_cells(pairwise)
    differ = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
    assert not differ, f"{label}: {len(differ)} cells differ, first {differ[0]}: " \
                       f"vectorised {got.get(differ[0])}, pair by pair {want.get(differ[0])}"
    return got

