"""Topology hints: what the EndpointSlice controller writes in ``endpoints[].hints``, per address type.

Two sources, as in ``k8s.io/endpointslice`` (reconciler.go, reconcileByAddressType):

* ``service.kubernetes.io/topology-mode: Auto`` (or the deprecated ``topology-aware-hints``
  annotation, which wins when both are set): the topology cache (topologycache/) hands each zone
  a share of the ready endpoints in proportion to the allocatable CPU of its ready worker nodes,
  starting from "every endpoint serves its own zone" and moving endpoints from zones that have more
  than their share to zones that have fewer. It gives up, removing every hint, when the nodes do not
  say enough (a node without zone or CPU), when all nodes are in one zone, when there are fewer
  ready endpoints than zones, when the minimum share of some zone cannot be met without
  overloading an endpoint by more than 20%, or when an endpoint has no zone.
* ``spec.trafficDistribution`` (trafficdist/): PreferSameZone and its alias PreferClose give each
  ready endpoint a hint for its own zone; PreferSameNode adds one for its own node. No hint when the
  endpoint has no zone (or node).

Anything else removes hints. A slice the controller would otherwise leave alone is updated when its
hints are wrong. Upstream iterates Go maps where it picks zones; knetsim takes them in name order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.objects import Node, Service
from .config import cpu_millis

TOPOLOGY_MODE = "service.kubernetes.io/topology-mode"
TOPOLOGY_AWARE_HINTS = "service.kubernetes.io/topology-aware-hints"  # deprecated, wins when both are set
CLOSE_DISTRIBUTIONS = ("PreferClose", "PreferSameZone", "PreferSameNode")
OVERLOAD_THRESHOLD = 0.2

# topologycache/event.go
NO_ZONE_SPECIFIED = "One or more endpoints do not have a zone specified"
NO_ALLOCATED_HINTS = "No hints allocated for zones"
INSUFFICIENT_NODE_INFO = "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes"
ONE_ZONE_ONLY = "Nodes only ready in one zone"
TOO_FEW_ENDPOINTS = "Insufficient number of endpoints"
MIN_ALLOCATION_OVERLOAD = ("Unable to allocate minimum required endpoints to each zone without exceeding overload "
                           "threshold")
HINTS_ENABLED = "Topology Aware Hints has been enabled"

Endpoints = list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Event:
    """What the controller would record on the Service (``kubectl describe svc``'s Events)."""

    type: str  # Normal | Warning
    reason: str
    message: str


@dataclass(slots=True)
class SliceSet:
    """One address type's slices as the reconciler leaves them before hints: endpoint lists to create,
    endpoint lists of slices to update (by name), and the unchanged slices' endpoints (by name)."""

    create: list[Endpoints] = field(default_factory=list)
    update: dict[str, Endpoints] = field(default_factory=dict)
    unchanged: dict[str, Endpoints] = field(default_factory=dict)


def hints_enabled(annotations: Mapping[str, str]) -> bool:
    """``hintsEnabled``: the deprecated annotation, when present, decides; Auto or auto turns hints on."""
    value = annotations.get(TOPOLOGY_AWARE_HINTS)
    if value is None:
        value = annotations.get(TOPOLOGY_MODE)
    return value in ("Auto", "auto")


def heuristic(service: Service) -> str:
    """Which hints the Service asks for: ``auto`` (topology-mode), ``zone``, ``node`` or ``""`` (none)."""
    if hints_enabled(service.meta.annotations):
        return "auto"
    distribution = service.traffic_distribution
    if distribution == "PreferSameNode":
        return "node"
    if distribution in ("PreferClose", "PreferSameZone"):
        return "zone"
    return ""


def _ready(endpoint: Mapping[str, Any]) -> bool:
    return (endpoint.get("conditions") or {}).get("ready") is True


def apply_hints(service: Service, address_type: str, slices: SliceSet, nodes: Sequence[Node]) -> list[Event]:
    """Set or clear hints in place; unchanged slices whose hints must change move to ``update``."""
    mode = heuristic(service)
    if mode == "auto":
        return topology_cache_hints(slices, cpu_ratios_by_zone(nodes), address_type)
    if mode in ("zone", "node"):
        _traffic_distribution(slices, mode == "node")
        return []
    _remove_hints(slices)
    return []


# --- trafficDistribution --------------------------------------------------------------------


def _close_hints(endpoint: Mapping[str, Any], node_hints: bool) -> dict[str, Any] | None:
    hints: dict[str, Any] = {}
    if endpoint.get("zone"):
        hints["forZones"] = [{"name": endpoint["zone"]}]
    if node_hints and endpoint.get("nodeName"):
        hints["forNodes"] = [{"name": endpoint["nodeName"]}]
    return hints or None


def _traffic_distribution(slices: SliceSet, node_hints: bool) -> None:
    """``preferCloseHeuristic``: needsUpdate for unchanged slices, update for the rest (ready endpoints only)."""
    for name in sorted(slices.unchanged):
        endpoints = slices.unchanged[name]
        if any(_ready(e) and e.get("hints") != _close_hints(e, node_hints) for e in endpoints):
            slices.update[name] = [dict(e) for e in slices.unchanged.pop(name)]
    for endpoints in (*slices.create, *slices.update.values()):
        for e in endpoints:
            if not _ready(e):
                continue
            hints = _close_hints(e, node_hints)
            if hints:
                e["hints"] = hints
            else:
                e.pop("hints", None)


def _remove_hints(slices: SliceSet) -> None:
    """``RemoveHintsFromSlices`` / the default heuristic: no hints anywhere."""
    for endpoints in (*slices.create, *slices.update.values()):
        for e in endpoints:
            e.pop("hints", None)
    for name in sorted(slices.unchanged):
        if any("hints" in e for e in slices.unchanged[name]):
            slices.update[name] = [{k: v for k, v in e.items() if k != "hints"} for e in slices.unchanged.pop(name)]


# --- topology-mode: Auto (the topology cache) -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Allocation:
    minimum: int
    maximum: int
    desired: float


def cpu_ratios_by_zone(nodes: Sequence[Node]) -> dict[str, float] | None:
    """``SetNodes``: each zone's share of the ready worker nodes' allocatable CPU; None when any such node lacks
    a zone or CPU, or all of them are in one zone (not enough to go on)."""
    cpu: dict[str, int] = {}
    for node in nodes:
        labels = node.labels
        if "node-role.kubernetes.io/control-plane" in labels or "node-role.kubernetes.io/master" in labels:
            continue
        if not node.ready:
            continue
        zone = node.zone
        millis = cpu_millis(node.allocatable_cpu) if node.allocatable_cpu else 0
        if not zone or millis <= 0:
            return None
        cpu[zone] = cpu.get(zone, 0) + millis
    total = sum(cpu.values())
    if total == 0 or len(cpu) < 2:
        return None
    return {zone: value / total for zone, value in sorted(cpu.items())}


def allocations(ratios: Mapping[str, float] | None, endpoints: int) -> tuple[dict[str, Allocation] | None, str]:
    """``getAllocations``: each zone's minimum and maximum number of endpoints, or None and the reason."""
    if ratios is None:
        return None, INSUFFICIENT_NODE_INFO
    if len(ratios) < 2:
        return None, ONE_ZONE_ONLY
    if len(ratios) > endpoints:
        return None, f"{TOO_FEW_ENDPOINTS} ({endpoints} endpoints, {len(ratios)} zones)"
    remaining, total_minimum = endpoints, 0
    out: dict[str, Allocation] = {}
    for zone, ratio in ratios.items():
        desired = ratio * endpoints
        minimum = math.ceil(desired * (1 / (1 + OVERLOAD_THRESHOLD)))
        out[zone] = Allocation(minimum, 0, max(desired, float(minimum)))
        total_minimum += minimum
        remaining -= minimum
        if remaining < 0:
            return None, f"{MIN_ALLOCATION_OVERLOAD} ({endpoints} endpoints, {len(ratios)} zones)"
    return {z: Allocation(a.minimum, a.minimum + endpoints - total_minimum, a.desired) for z, a in out.items()}, ""


def _with_type(message: str, address_type: str) -> str:
    return f"{message}, addressType: {address_type}"


def topology_cache_hints(slices: SliceSet, ratios: Mapping[str, float] | None, address_type: str) -> list[Event]:
    """``TopologyCache.AddHints`` with the zones' CPU ratios (None: the nodes did not say enough)."""
    total = sum(1 for e in _all(slices) if _ready(e))
    allocation, reason = allocations(ratios, total)
    if allocation is None:
        _remove_hints(slices)
        return [Event("Warning", "TopologyAwareHintsDisabled", _with_type(reason, address_type))]
    allocated = _allocated_by_unchanged(slices, allocation)
    changing = [*slices.create, *slices.update.values()]
    # Step 1: every ready endpoint serves its own zone.
    for endpoints in changing:
        for e in endpoints:
            if not _ready(e):
                e.pop("hints", None)
                continue
            if not e.get("zone"):
                _remove_hints(slices)
                return [Event("Warning", "TopologyAwareHintsDisabled", _with_type(NO_ZONE_SPECIFIED, address_type))]
            allocated[e["zone"]] = allocated.get(e["zone"], 0) + 1
            e["hints"] = {"forZones": [{"name": e["zone"]}]}
    # Steps 2 and 3: zones over their share give endpoints to zones under it.
    giving, receiving = _giving_and_receiving(allocation, allocated)
    for zone, diff in _redistribute(changing, giving, receiving).items():
        allocated[zone] = allocated.get(zone, 0) + diff
    if not allocated:
        _remove_hints(slices)
        return [Event("Warning", "TopologyAwareHintsDisabled", _with_type(NO_ALLOCATED_HINTS, address_type))]
    return [Event("Normal", "TopologyAwareHintsEnabled", _with_type(HINTS_ENABLED, address_type))]


def _all(slices: SliceSet) -> list[dict[str, Any]]:
    return [e for endpoints in (*slices.create, *slices.update.values(), *slices.unchanged.values())
            for e in endpoints]


def _allocated_by_unchanged(slices: SliceSet, allocation: Mapping[str, Allocation]) -> dict[str, int]:
    """``getAllocatedHintsByZone``: an unchanged slice keeps its hints while they are still valid; otherwise it is
    updated (an endpoint without hints, a hint for a zone with no allocation, or more than a zone's maximum)."""
    allocated: dict[str, int] = {}
    for name in sorted(slices.unchanged):
        by_zone: dict[str, int] | None = {}
        for e in slices.unchanged[name]:
            if not _ready(e):
                continue
            zones = [z.get("name") for z in ((e.get("hints") or {}).get("forZones") or [])]
            if not zones or any(z not in allocation for z in zones):
                by_zone = None
                break
            for z in zones:
                by_zone[str(z)] = by_zone.get(str(z), 0) + 1
        if by_zone is not None and any(n + allocated.get(z, 0) > allocation[z].maximum for z, n in by_zone.items()):
            by_zone = None
        if by_zone is None:
            slices.update[name] = [dict(e) for e in slices.unchanged.pop(name)]
            continue
        for z, n in by_zone.items():
            allocated[z] = allocated.get(z, 0) + n
    return allocated


def _most(values: Mapping[str, float]) -> tuple[str, float]:
    zone, most = "", 0.0
    for z in sorted(values):
        if values[z] > most:
            zone, most = z, values[z]
    return zone, most


def _giving_and_receiving(allocation: Mapping[str, Allocation],
                          allocated: Mapping[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """``getGivingAndReceivingZones``: whole endpoints to move, from the precise surpluses and deficits."""
    give_wanted: dict[str, float] = {}
    receive_wanted: dict[str, float] = {}
    for zone, a in allocation.items():
        have = allocated.get(zone, 0)
        if have > a.desired:
            give_wanted[zone] = have - a.desired
        elif have < a.desired:
            receive_wanted[zone] = a.desired - have
    giving: dict[str, int] = {}
    receiving: dict[str, int] = {}
    while True:
        giver, to_give = _most(give_wanted)
        receiver, to_receive = _most(receive_wanted)
        if not giver or not receiver or (to_give < 1.0 and to_receive < 1.0) or to_give < 0.5 or to_receive < 0.5:
            break
        giving[giver] = giving.get(giver, 0) + 1
        give_wanted[giver] -= 1
        receiving[receiver] = receiving.get(receiver, 0) + 1
        receive_wanted[receiver] -= 1
    return giving, receiving


def _redistribute(slices: Sequence[Endpoints], giving: dict[str, int], receiving: dict[str, int]) -> dict[str, int]:
    """``redistributeHints``: hint endpoints of giving zones for receiving zones instead."""
    moved: dict[str, int] = {}
    for endpoints in slices:
        for e in endpoints:
            if not _ready(e):
                e.pop("hints", None)
                continue
            if not giving or not receiving:
                return moved
            zone = e.get("zone")
            if not zone or giving.get(zone, 0) <= 0:
                continue
            for receiver in sorted(receiving):
                if receiving[receiver] > 0:
                    e["hints"] = {"forZones": [{"name": receiver}]}
                    giving[zone] -= 1
                    if giving[zone] == 0:
                        del giving[zone]
                    receiving[receiver] -= 1
                    if receiving[receiver] == 0:
                        del receiving[receiver]
                    moved[receiver] = moved.get(receiver, 0) + 1
                    moved[zone] = moved.get(zone, 0) - 1
                    break
    return moved
