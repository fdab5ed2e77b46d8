"""The explorer's data: the matrix answer, what explains each cell, and the service map, as one JSON value.

The page (``static/explorer.js``) draws the grid from ``rows`` and ``cells`` and explains a
clicked cell from ``classes`` and ``policies``: for each side (egress of the source, ingress
of the destination) it walks the tiers in order, and within a tier the policies that select
the subject, and reports which rule (and which peer and port of it) allowed the traffic, or
why none did, and the smallest edit that would allow it. The sets it tests are computed
here, by the same class vectors the matrix uses, so the page and ``knetsim matrix`` cannot
disagree. Each explanation entry is generic: side, tier, kind, policy, rule; the
ClusterNetworkPolicy tiers (Admin before the NetworkPolicies, Baseline after) bring their
actions, and a class lists, per side and tier, the cluster policies that select it, in order.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import numpy as np

from ..cluster.state import ClusterState
from ..policy.classes import EXTERNAL, NODE, Vectors, prepare
from ..policy.cluster import TIERS
from ..policy.engine import policy_index
from ..policy.matrix import Matrix
from ..policy.rules import NAMESPACE_NAME_LABEL, Peer, Port, namespaces_text

# Labels that name an application; one of them alone is the smallest selector for a workload.
APP_KEYS = ("app.kubernetes.io/name", "app", "k8s-app", "name", "component")


def _ranges(indices: np.ndarray) -> list[list[int]]:
    """Sorted class indices as [first, last] runs (classes of a namespace are contiguous)."""
    out: list[list[int]] = []
    for i in indices.tolist():
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def _port(port: Port) -> dict[str, Any]:
    out: dict[str, Any] = {"index": port.index, "protocols": list(port.protocols()), "text": port.describe()}
    if isinstance(port.port, str):
        out["name"] = port.port
    elif port.port is not None:
        out["from"], out["to"] = port.port, port.end_port if port.end_port is not None else port.port
    return out


def _peer_text(peers: tuple[Peer, ...], index: int) -> str:
    """One from/to item of a ClusterNetworkPolicy rule (a `networks` item is several CIDRs)."""
    group = [p for p in peers if p.index == index]
    if group[0].kind == "network":
        return "IP addresses in " + ", ".join(p.ip_range.describe() for p in group if p.ip_range is not None)
    peer = group[0]
    if peer.pod_selector is None and peer.namespace_selector is not None:
        return f"every pod in {namespaces_text(peer.namespace_selector)}"
    return peer.describe()


def _peer_vector(vectors: Vectors, peers: tuple[Peer, ...], index: int) -> np.ndarray:
    group = [vectors.peer(p) for p in peers if p.index == index]
    if len(group) == 1:
        return group[0]  # the cached vector itself: set ids are by identity
    out = group[0].copy()
    for v in group[1:]:
        out |= v
    return out


def _common_labels(members: list[Any]) -> dict[str, str]:
    pods = [ep.pod for ep in members if ep.pod is not None]
    if not pods:
        return {}
    common = dict(pods[0].labels)
    for pod in pods[1:]:
        common = {k: v for k, v in common.items() if pod.labels.get(k) == v}
    return dict(sorted(common.items()))


def _peer_for(m: Matrix, i: int, state: ClusterState) -> dict[str, Any]:
    """The NetworkPolicy peer that names row ``i`` (same namespace / other namespace forms)."""
    members = m.rows.members[i]
    ep = members[0]
    if ep.kind == "external":
        nets = [str(n) for n in ipaddress.summarize_address_range(*(
            ipaddress.IPv4Address(x) for x in (ep.ip.split("-") if "-" in ep.ip else
                                               (ipaddress.ip_network(ep.ip)[0], ipaddress.ip_network(ep.ip)[-1]))))]
        return {"ipBlock": {"cidr": nets[0]}}
    if ep.kind == "node":
        node = state.nodes.get(ep.node)
        return {"ipBlock": {"cidr": f"{node.internal_ip if node else ep.ip}/32"}}
    labels = _common_labels(members)
    key = next((k for k in APP_KEYS if k in labels), None)
    chosen = {key: labels[key]} if key else labels
    return {"podSelector": {"matchLabels": chosen},
            "namespace": m.rows.namespaces[i]}


def _services(state: ClusterState, pod_rows: dict[str, int], include: Any) -> dict[str, Any]:
    services = []
    for svc in sorted(state.services.values(), key=lambda s: s.key):
        if not include(svc.namespace):
            continue
        endpoints = []
        slices = [es.name for es in state.slices_for(svc)]
        for es in state.slices_for(svc):
            for ep in es.endpoints:
                pod = f"{ep.target_ref[1]}/{ep.target_ref[2]}" if ep.target_ref else ""
                endpoints.append({"slice": es.name, "addresses": list(ep.addresses), "pod": pod,
                                  "ready": ep.ready is not False, "row": pod_rows.get(pod, -1)})
        services.append({"name": svc.key, "type": svc.type, "clusterIP": svc.cluster_ip,
                         "ports": [f"{p.port}/{p.protocol}" + (f"->{p.target_port}" if p.target_port != p.port else "")
                                   for p in svc.ports],
                         "selector": dict(svc.selector) if svc.selector else None,
                         "slices": slices,
                         "endpoints": endpoints,
                         "empty": not any(e["ready"] for e in endpoints) and svc.type != "ExternalName"})
    entries = []
    for ing in sorted(state.ingresses.values(), key=lambda i: i.key):
        if not include(ing.namespace):
            continue
        routes = []
        for rule in ing.rules:
            for path in rule.paths:
                b = path.backend
                routes.append({"host": rule.host or "*", "path": path.path or "/",
                               "service": f"{ing.namespace}/{b.service_name}" if b.service_name else "",
                               "port": b.port_number or b.port_name})
        if ing.default_backend is not None and ing.default_backend.service_name:
            b = ing.default_backend
            routes.append({"host": "*", "path": "(default)", "service": f"{ing.namespace}/{b.service_name}",
                           "port": b.port_number or b.port_name})
        entries.append({"kind": "Ingress", "name": ing.key, "class": ing.class_name or "", "routes": routes})
    for (kind, key), obj in sorted(state.others.items()):
        if kind not in ("HTTPRoute", "GRPCRoute") or not include(obj.namespace):
            continue
        spec = obj.raw.get("spec") or {}
        parents = [f"Gateway {p.get('namespace', obj.namespace)}/{p.get('name')}" for p in spec.get("parentRefs") or []]
        routes = []
        for rule in spec.get("rules") or []:
            paths = [(m.get("path") or {}).get("value", "/") for m in rule.get("matches") or []] or ["/"]
            for ref in rule.get("backendRefs") or []:
                if (ref.get("kind") or "Service") != "Service":
                    continue
                for p in paths:
                    routes.append({"host": ",".join(spec.get("hostnames") or ["*"]), "path": p,
                                   "service": f"{ref.get('namespace', obj.namespace)}/{ref.get('name')}",
                                   "port": ref.get("port")})
        entries.append({"kind": kind, "name": key, "class": ", ".join(parents), "routes": routes})
    return {"services": services, "entries": entries}


def explorer_data(state: ClusterState, m: Matrix, protocol: str = "TCP", port: int = 80) -> dict[str, Any]:
    index = policy_index(state)
    classes = m.classes
    vectors = Vectors(state, classes, index)
    prepared = prepare(vectors)
    sets: dict[int, int] = {}
    set_list: list[list[list[int]]] = []
    kept: list[np.ndarray] = []  # an id is only unique while its object lives

    def set_id(vector: np.ndarray) -> int:
        key = id(vector)  # peer vectors are cached by Vectors: one object per distinct peer
        if key not in sets:
            sets[key] = len(set_list)
            set_list.append(_ranges(np.nonzero(vector)[0]))
            kept.append(vector)
        return sets[key]

    policies: list[dict[str, Any]] = []
    isolation: dict[str, list[list[int]]] = {d: [[] for _ in range(classes.count)] for d in ("egress", "ingress")}
    tiered: dict[str, dict[str, list[list[int]]]] = {
        tier: {d: [[] for _ in range(classes.count)] for d in ("egress", "ingress")} for tier in TIERS}
    for policy in index.cluster:  # in order: tier, then priority, then name
        subject = np.nonzero(vectors.subject(policy))[0]
        if not len(subject):
            continue
        pid = len(policies)
        entry = {"tier": policy.tier, "kind": policy.kind, "name": policy.name, "priority": policy.priority,
                 "selector": policy.subject_text()}
        for direction in ("egress", "ingress"):
            rules = policy.rules(direction)
            if rules:
                for c in subject.tolist():
                    tiered[policy.tier][direction][c].append(pid)
            entry[direction] = [
                {"index": rule.index, "name": rule.name, "action": rule.action,
                 "peers": [{"index": i, "text": _peer_text(rule.peers, i),
                            "set": set_id(_peer_vector(vectors, rule.peers, i))}
                           for i in sorted({p.index for p in rule.peers})],
                 "ports": None if rule.ports is None else [_port(x) for x in rule.ports]} for rule in rules]
        policies.append(entry)
    for p in prepared:
        policy = p.policy
        pid = len(policies)
        entry: dict[str, Any] = {"tier": "NetworkPolicy", "kind": policy.kind, "name": policy.key,
                                 "namespace": policy.namespace, "selector": policy.selector.formatted()}
        for direction in ("egress", "ingress"):
            rules = p.rules(direction)
            if rules is None:
                entry[direction] = None
                continue
            for c in p.selected.tolist():
                isolation[direction][c].append(pid)
            out = []
            for rule, _vector in rules:
                peers = None if rule.peers is None else [
                    {"index": peer.index, "text": peer.describe(), "set": set_id(vectors.peer(peer))}
                    for peer in rule.peers]
                out.append({"index": rule.index, "peers": peers,
                            "ports": None if rule.ports is None else [_port(x) for x in rule.ports]})
            entry[direction] = out
        policies.append(entry)
    class_data = []
    for c in range(classes.count):
        kind = int(classes.kind[c])
        named = {f"{name}/{proto}": int(v[c]) for (name, proto), v in classes.named.items() if v[c] > 0}
        ep = classes.members[c][0]
        item = {"kind": "external" if kind == EXTERNAL else "node" if kind == NODE else "pod",
                "ports": named, "node": ep.node, "egress": isolation["egress"][c], "ingress": isolation["ingress"][c]}
        if index.cluster:
            item["tiers"] = {d: {tier: tiered[tier][d][c] for tier in TIERS} for d in ("egress", "ingress")}
        class_data.append(item)
    pod_rows: dict[str, int] = {}
    rows = []
    for i, name in enumerate(m.names):
        members = m.rows.members[i]
        for ep in members:
            if ep.pod is not None:
                pod_rows[ep.pod.key] = i
        ports = sorted({(p.container_port, p.protocol, p.name) for ep in members if ep.pod is not None
                        for c in ep.pod.containers for p in c.ports})
        rows.append({"name": name, "namespace": m.rows.namespaces[i], "kind": m.rows.kinds[i],
                     "class": int(m.rows.class_of[i]), "labels": _common_labels(members),
                     "pods": [ep.name for ep in members][:50], "count": len(members),
                     "containerPorts": [{"port": n, "protocol": pr, "name": nm} for n, pr, nm in ports],
                     "peer": _peer_for(m, i, state)})
    cells = []
    partly = []
    for block in m.blocks():
        for j, p in zip(block.dst.tolist(), block.pattern.tolist(), strict=True):
            cells.append([block.src, j, p])
            if j in block.partly:
                partly.append([block.src, j, block.partly[j].to_dict()])
    shown = {ns for ns in m.rows.namespaces if ns}
    return {
        "version": 1,
        "level": m.level,
        "view": {"protocol": protocol, "port": port},
        "tiers": [t.name for t in m.tiers],
        "rows": rows,
        "cells": cells,
        "partly": partly,
        "patterns": [{"text": s.describe(), "all": s.is_all,
                      "ranges": {proto: [list(r) for r in rs] for proto, rs in s.ranges}, "other": s.other}
                     for s in m.patterns],
        "classes": class_data,
        "policies": policies,
        "sets": set_list,
        "notes": list(m.notes),
        "map": _services(state, pod_rows, lambda ns: ns in shown or not shown),
        "nsLabel": NAMESPACE_NAME_LABEL,
    }


__all__ = ["explorer_data"]
