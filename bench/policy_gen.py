"""Synthetic policy workloads for bench/matrix.py, as manifests.

Each of N namespaces (labels ``tier`` cycling web/api/data, ``team`` = one per TEAM_SIZE
namespaces) gets a default-deny policy (Ingress+Egress) and D Deployments ``app-j`` (labels
``app``, ``role`` frontend/backend, one named port ``p-j`` = 8000+j), each with one policy:

* ingress from ``app-(j-1)`` of the namespace OR from (namespaces ``tier=api`` of its team AND
  pods ``role=frontend``), on the named port;
* egress to every pod of the namespace and of the team's ``tier=api`` namespaces, plus
  ``ipBlock 192.168.0.0/16 except 192.168.<n mod 8>.0/24`` on TCP 443.

``cluster_policies(N, count)`` adds ClusterNetworkPolicies (issue 12's 1,000): policy k selects
the Deployment ``app-(k // N mod 9)`` of namespace ``ns-(k mod N)``, in the Admin tier (four
in five) or the Baseline tier, priority 10 + k mod 200 (equal priorities included), with
ordered rules of all three actions: ingress Accept from the team's frontends on TCP 9100,
Deny from the ``tier=data`` namespaces on TCP 8000-8100, Pass from the team; egress Deny to
the metadata address, Pass to the pod network. The accepts stay inside a team, so the
answer stays linear in the cluster's size as the NetworkPolicies' does.

It is the shape of the NCA comparison in shared/reference/network-config-analyzer.md, with
the ipBlock kept off the pod network (NCA does not know pod IPs, so it never matches them).
Two choices keep the *answer* linear in the cluster's size, as a real cluster's is (a
workload talks to a bounded set of others): cross-namespace peers stay inside a team of
TEAM_SIZE namespaces, and the ipBlock exceptions cycle over 8 subnets. Without them every
api namespace would reach every other one, and the answer alone (not the work to find it)
would grow with the square of the namespace count. Up to TEAM_SIZE namespaces (the NCA sizes
but the largest) the shape is exactly the reference one, but for the except subnets.
"""

from __future__ import annotations

from typing import Any

TIERS = ("web", "api", "data")
TEAM_SIZE = 10
EXCEPT_SUBNETS = 8


def manifest_dumper() -> type:
    """PyYAML's dumper writing every shared dict in full, without ``&id001``/``*id001``: the generators share
    dicts between manifests, and real manifests (helm template, kustomize build, kubectl get -o yaml) carry
    no anchors, so the benches read what users feed."""
    import yaml

    base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class NoAnchorDumper(base):  # type: ignore[misc, valid-type]
        def ignore_aliases(self, data: Any) -> bool:
            return True

    return NoAnchorDumper


def namespace_name(n: int) -> str:
    return f"ns-{n}"


def namespace_manifest(n: int) -> dict[str, Any]:
    name = namespace_name(n)
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"tier": TIERS[n % 3], "team": team(n),
                                                  "kubernetes.io/metadata.name": name}}}


def team(n: int) -> str:
    return f"team-{n // TEAM_SIZE}"


def app_labels(j: int) -> dict[str, str]:
    return {"app": f"app-{j}", "role": "frontend" if j % 2 == 0 else "backend"}


def deployment_manifest(n: int, j: int, replicas: int) -> dict[str, Any]:
    labels = app_labels(j)
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": f"app-{j}", "namespace": namespace_name(n)},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": labels["app"]}},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "app", "image": "nginx",
                                                       "ports": [{"containerPort": 8000 + j, "name": f"p-{j}"}]}]}}},
    }


def default_deny(n: int) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "default-deny", "namespace": namespace_name(n)},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}}


def app_policy(n: int, j: int) -> dict[str, Any]:
    previous = {"podSelector": {"matchLabels": {"app": f"app-{j - 1}"}}} if j > 0 else None
    api = {"matchLabels": {"tier": "api", "team": team(n)}}
    peers = [p for p in (previous, {"namespaceSelector": api,
                                    "podSelector": {"matchLabels": {"role": "frontend"}}}) if p]
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": f"app-{j}", "namespace": namespace_name(n)},
        "spec": {
            "podSelector": {"matchLabels": {"app": f"app-{j}"}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": peers, "ports": [{"port": f"p-{j}"}]}],
            "egress": [{"to": [{"podSelector": {}}]},
                       {"to": [{"namespaceSelector": api}]},
                       {"to": [{"ipBlock": {"cidr": "192.168.0.0/16",
                                            "except": [f"192.168.{n % EXCEPT_SUBNETS}.0/24"]}}],
                        "ports": [{"protocol": "TCP", "port": 443}]}],
        },
    }


def service_manifest(n: int, j: int) -> dict[str, Any]:
    """A ClusterIP Service for ``app-j``: port 80 to the pods' named port ``p-j``."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": f"app-{j}", "namespace": namespace_name(n)},
            "spec": {"selector": {"app": f"app-{j}"},
                     "ports": [{"name": "http", "port": 80, "targetPort": f"p-{j}"}]}}


def services(namespaces: int, apps: int) -> list[dict[str, Any]]:
    """One Service per Deployment of ``manifests(namespaces, apps)`` (for bench/diff.py: endpoints and DNS)."""
    return [service_manifest(n, j) for n in range(namespaces) for j in range(apps)]


def cluster_policy(k: int, namespaces: int, apps: int = 9) -> dict[str, Any]:
    n, j = k % namespaces, (k // namespaces) % apps
    by_name = {"matchLabels": {"kubernetes.io/metadata.name": namespace_name(n)}}
    tcp = {"tcp": {"destinationPort": {"number": 9100}}}
    app_range = {"tcp": {"destinationPort": {"range": {"start": 8000, "end": 8100}}}}
    return {
        "apiVersion": "policy.networking.k8s.io/v1alpha2", "kind": "ClusterNetworkPolicy",
        "metadata": {"name": f"cnp-{k}"},
        "spec": {
            "tier": "Baseline" if k % 5 == 4 else "Admin",
            "priority": 10 + k % 200,
            "subject": {"pods": {"namespaceSelector": by_name, "podSelector": {"matchLabels": {"app": f"app-{j}"}}}},
            "ingress": [
                {"name": "team-monitoring", "action": "Accept", "protocols": [tcp],
                 "from": [{"pods": {"namespaceSelector": {"matchLabels": {"team": team(n)}},
                                    "podSelector": {"matchLabels": {"role": "frontend"}}}}]},
                {"name": "no-data-tier", "action": "Deny", "protocols": [app_range],
                 "from": [{"namespaces": {"matchLabels": {"tier": "data"}}}]},
                {"name": "team-decides", "action": "Pass",
                 "from": [{"namespaces": {"matchLabels": {"team": team(n)}}}]},
            ],
            "egress": [
                {"name": "no-metadata", "action": "Deny", "to": [{"networks": ["169.254.169.254/32"]}]},
                {"name": "pod-network", "action": "Pass", "to": [{"networks": ["10.0.0.0/8"]}]},
            ],
        },
    }


def cluster_policies(namespaces: int, count: int = 1000) -> list[dict[str, Any]]:
    return [cluster_policy(k, namespaces) for k in range(count)]


def replicas_of(j: int, apps: int, pods_per_namespace: int) -> int:
    """The namespace's pods spread over its apps as evenly as possible."""
    return pods_per_namespace // apps + (1 if j < pods_per_namespace % apps else 0)


def manifests(namespaces: int, apps: int, pods_per_namespace: int | None = None) -> list[dict[str, Any]]:
    """``pods_per_namespace`` None: one replica per Deployment."""
    pods = apps if pods_per_namespace is None else pods_per_namespace
    out: list[dict[str, Any]] = []
    for n in range(namespaces):
        out.append(namespace_manifest(n))
        out += [deployment_manifest(n, j, replicas_of(j, apps, pods)) for j in range(apps)]
        out.append(default_deny(n))
        out += [app_policy(n, j) for j in range(apps)]
    return out
