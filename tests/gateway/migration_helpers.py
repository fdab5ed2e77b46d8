"""Builders for the migration tests: an Ingress example plus its backends, converted, in one cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from knetsim import Cluster
from knetsim.migration import convert

from . import certgen

DOCS = Path(__file__).parent / "data" / "k8s-docs-ingress"


def backends(ingress_docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Service (targetPort = port) with one Ready nginx-unprivileged pod per Service the Ingresses name."""
    wanted: dict[tuple[str, str], set[int]] = {}

    def visit(ns: str, backend: dict[str, Any] | None) -> None:
        svc = (backend or {}).get("service")
        if svc:
            wanted.setdefault((ns, svc["name"]), set()).add(int(svc["port"]["number"]))

    for doc in ingress_docs:
        if doc.get("kind") != "Ingress":
            continue
        ns = doc["metadata"].get("namespace", "default")
        spec = doc.get("spec") or {}
        visit(ns, spec.get("defaultBackend"))
        for rule in spec.get("rules") or []:
            for p in (rule.get("http") or {}).get("paths") or []:
                visit(ns, p.get("backend"))
    out: list[dict[str, Any]] = []
    for (ns, name), ports in sorted(wanted.items()):
        out.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
                    "spec": {"selector": {"app": name}, "ports": [{"name": f"p{p}", "port": p, "targetPort": p}
                                                                  for p in sorted(ports)]}})
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-0", "namespace": ns,
                                                                    "labels": {"app": name}},
                    "spec": {"containers": [{"name": "app", "image": "nginx",
                                             "ports": [{"containerPort": p} for p in sorted(ports)]}]}})
    return out


def secrets(ingress_docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A TLS Secret per secretName, whose certificate covers the hosts its Ingress TLS entries list (the
    Gateway's controller reads and checks it)."""
    hosts: dict[tuple[str, str], list[str]] = {}
    for d in ingress_docs:
        if d.get("kind") != "Ingress":
            continue
        for t in (d.get("spec") or {}).get("tls") or []:
            if t.get("secretName"):
                names = hosts.setdefault((d["metadata"].get("namespace", "default"), t["secretName"]), [])
                names.extend(h for h in t.get("hosts") or [] if h not in names)
    return [certgen.tls_secret(ns, n, certgen.leaf(n, names or ["localhost"]))
            for (ns, n), names in sorted(hosts.items())]


def old_and_new(ingress_docs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Cluster]:
    """The old side (Ingresses and what they need), and the cluster of old + converted new side."""
    old = [*ingress_docs, *backends(ingress_docs), *secrets(ingress_docs)]
    conversion = convert(Cluster.from_yaml(yaml.safe_dump_all(old)).state)
    both = Cluster.from_yaml(yaml.safe_dump_all([*old, *conversion.objects]))
    return conversion.objects, both


def docs_example(name: str) -> list[dict[str, Any]]:
    return [*yaml.safe_load_all((DOCS / "ingressclass.yaml").read_text()),
            *yaml.safe_load_all((DOCS / name).read_text())]
