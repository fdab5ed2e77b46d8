"""Topology-aware routing's classic surprises: what a Service's trafficDistribution or topology-mode asks for,
against what the EndpointSlice controller wrote and what each node's proxy then does.

* every ready endpoint in one zone of a multi-zone cluster: the other zones' clients fall back to every
  endpoint (PreferSameZone), or are sent to the far zone by hints (topology-mode Auto) — cross-zone either way;
* hints the proxies ignore: a node without zone label, a zone no endpoint is hinted for, an endpoint without a
  hint, or topology-mode Auto giving up (its event) — the setting has no effect there;
* ``PreferClose`` on a Service whose pods run one per node (a DaemonSet): since v1.35 PreferClose is
  PreferSameZone, so a client may be sent to another node of its zone; node-local is PreferSameNode.
"""

from __future__ import annotations

from ..cluster.state import ClusterState
from ..cluster.topology import heuristic
from ..dataplane.model import (
    categorize,
    endpoints_by_port,
    hints_ignored_by,
    node_zone,
    primary_family,
    service_ports,
)
from ..model.objects import Service
from .checks import Finding

ZONE_LABEL = "topology.kubernetes.io/zone"


def _asked(svc: Service) -> str:
    if heuristic(svc) == "auto":
        return "service.kubernetes.io/topology-mode: Auto"
    return f"trafficDistribution: {svc.traffic_distribution}"


def topology_findings(state: ClusterState, svc: Service) -> list[Finding]:
    mode = heuristic(svc)
    if not mode or svc.type == "ExternalName" or svc.headless:
        return []
    subject = f"Service {svc.key}"
    asked = _asked(svc)
    out: list[Finding] = []
    out += [Finding("TopologyHintsDisabled", "warning", "endpoints", subject,
                    f"{asked}, but the EndpointSlice controller gave up: {n.message}",
                    "topology-mode Auto needs ready worker nodes in two or more zones, each with its zone label and "
                    "allocatable CPU, and enough ready endpoints to share out; trafficDistribution: PreferSameZone "
                    "asks for the same without the proportional allocation")
            for n in state.notices if n.code == "TopologyAwareHintsDisabled" and n.subject == subject]
    workers = [n for n in state.nodes.values() if "node-role.kubernetes.io/control-plane" not in n.labels]
    zones = sorted({node_zone(state, n.name) for n in workers} - {""})
    family = primary_family(svc)
    ports = service_ports(svc, family)
    endpoints = endpoints_by_port(state, svc, family)
    ready = [e for eps in endpoints.values() for e in eps if e.ready]
    if mode in ("zone", "auto") and len(zones) < 2 and not out:
        out.append(Finding("TopologyNoZones", "info", "endpoints", subject,
                           f"{asked} on a cluster whose nodes are not spread over zones (zones: "
                           f"{', '.join(zones) or f'none: no node has {ZONE_LABEL}'}): no zone preference is "
                           "possible, every endpoint is used",
                           f"label the nodes with {ZONE_LABEL} (the cluster config's nodes[].zone)"))
    by_zone = sorted({zone for e in ready for zone in [_endpoint_zone(state, e.node)] if zone})
    if len(zones) >= 2 and ready and len(by_zone) == 1:
        far = [z for z in zones if z not in by_zone]
        effect = ("their proxies find no endpoint hinted for their zone and use every endpoint"
                  if mode != "auto" else "the controller hints some of those endpoints for their zones")
        out.append(Finding(
            "TopologyAllEndpointsInOneZone", "warning", "endpoints", subject,
            f"{asked}, but all {len(ready)} ready endpoint(s) are in zone {by_zone[0]}: clients in "
            f"{', '.join(far)} cross zones anyway ({effect})",
            "spread the pods over the zones: topologySpreadConstraints: [{maxSkew: 1, topologyKey: "
            f"{ZONE_LABEL}, whenUnsatisfiable: ScheduleAnyway, labelSelector: {{matchLabels: ...}}}}]"))
    one_zone = any(f.code == "TopologyAllEndpointsInOneZone" for f in out)
    if ports and ready and not one_zone:
        info = ports[0]
        eps = endpoints.get((info.port_name, info.protocol), [])
        ignored = []
        off = hints_ignored_by(state.config.dataplane, state.config)
        if off:
            out.append(Finding("TopologyHintsIgnored", "warning", "dataplane", subject,
                               f"{asked}, but Cilium ignores every hint of {info.name_string} and uses every ready "
                               f"endpoint on every node: {off}",
                               "helm upgrade cilium cilium/cilium --reuse-values --set "
                               "loadBalancer.serviceTopology=true (and ciliumServiceTopology: true in the cluster "
                               "config)"))
        for node in sorted(n.name for n in workers) if not off else ():
            why = categorize(info, eps, node, node_zone(state, node)).why
            if why.startswith("hints ignored ("):
                ignored.append(f"{node} ({why[len('hints ignored ('):].split(')', 1)[0]})")
        if ignored:
            out.append(Finding("TopologyHintsIgnored", "warning", "dataplane", subject,
                               f"{asked}, but the proxies ignore the hints of {info.name_string} and use every ready "
                               f"endpoint on: {', '.join(ignored)}",
                               "every ready endpoint needs a hint and every node a zone label with an endpoint "
                               "hinted for it; otherwise kube-proxy (and Cilium) fall back to all endpoints"))
    if svc.traffic_distribution == "PreferClose" and mode != "auto" and _one_per_node(state, svc):
        out.append(Finding(
            "PreferCloseIsZonal", "warning", "endpoints", subject,
            "trafficDistribution: PreferClose on a Service whose pods run one per node (a DaemonSet): since v1.35 "
            "PreferClose means PreferSameZone, so a client may be sent to another node of its zone",
            "for node-local traffic use trafficDistribution: PreferSameNode (falls back to other nodes when the "
            "local pod is not ready), or internalTrafficPolicy: Local (drops instead)"))
    return out


def _endpoint_zone(state: ClusterState, node: str | None) -> str:
    return node_zone(state, node) if node else ""


def _one_per_node(state: ClusterState, svc: Service) -> bool:
    pods = state.select_pods(svc.namespace, svc.selector_view) if svc.selector else []
    return bool(pods) and all(p.meta.owner is not None and p.meta.owner.kind == "DaemonSet" for p in pods)
