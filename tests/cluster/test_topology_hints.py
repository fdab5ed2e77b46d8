"""Topology hints as the EndpointSlice controller writes them (k8s.io/endpointslice topologycache/ and
trafficdist/), the cases restated from upstream's TestAddHints, TestSetNodes and TestReconcileHints, then
through a whole three-zone cluster."""

from __future__ import annotations

import pytest
from tests.conftest import cluster_from

from knetsim.cluster.config import config_from_dict
from knetsim.cluster.topology import (
    INSUFFICIENT_NODE_INFO,
    SliceSet,
    cpu_ratios_by_zone,
    topology_cache_hints,
)
from knetsim.model.objects import Node


def ep(ip: str, zone: str | None, ready: bool | None = True, node: str | None = None, hints=None) -> dict:
    out: dict = {"addresses": [ip]}
    if ready is not None:
        out["conditions"] = {"ready": ready}
    if zone:
        out["zone"] = zone
    if node:
        out["nodeName"] = node
    if hints:
        out["hints"] = hints
    return out


def zones_of(endpoints: list[dict]) -> list[str | None]:
    return [None if "hints" not in e else ",".join(z["name"] for z in e["hints"]["forZones"]) for e in endpoints]


# --- TestAddHints -------------------------------------------------------------------------------


def test_no_zone_ratios_means_no_hints_and_a_warning():
    slices = SliceSet(create=[[ep("10.1.2.3", "zone-a")]])
    events = topology_cache_hints(slices, None, "IPv4")
    assert zones_of(slices.create[0]) == [None]
    assert [(e.type, e.reason, e.message) for e in events] == [
        ("Warning", "TopologyAwareHintsDisabled", f"{INSUFFICIENT_NODE_INFO}, addressType: IPv4")]


def test_fewer_endpoints_than_zones():
    slices = SliceSet(create=[[ep("10.1.2.3", "zone-a"), ep("10.1.2.4", "zone-b")]])
    events = topology_cache_hints(slices, {"zone-a": 0.3, "zone-b": 0.4, "zone-c": 0.3}, "IPv4")
    assert zones_of(slices.create[0]) == [None, None]
    assert events[0].message == "Insufficient number of endpoints (2 endpoints, 3 zones), addressType: IPv4"


def test_two_endpoints_two_zones_each_serves_its_own():
    slices = SliceSet(create=[[ep("10.1.2.3", "zone-a"), ep("10.1.2.4", "zone-b")]])
    events = topology_cache_hints(slices, {"zone-a": 0.45, "zone-b": 0.55}, "IPv4")
    assert zones_of(slices.create[0]) == ["zone-a", "zone-b"]
    assert [(e.type, e.reason) for e in events] == [("Normal", "TopologyAwareHintsEnabled")]


def test_unready_and_unknown_endpoints_get_no_hint():
    slices = SliceSet(create=[[ep("10.1.2.3", "zone-a"), ep("10.1.2.4", "zone-b"), ep("10.1.2.5", "zone-b", False),
                               ep("10.1.2.6", "zone-b", None)]])
    topology_cache_hints(slices, {"zone-a": 0.45, "zone-b": 0.55}, "IPv4")
    assert zones_of(slices.create[0]) == ["zone-a", "zone-b", None, None]


def test_a_zone_over_its_share_gives_an_endpoint_away():
    # "slices to create and update within 3 zone threshold": zone-a has 5 of 10 endpoints for 35% of the CPU,
    # so its first endpoint serves zone-b instead.
    slices = SliceSet(
        create=[[ep("10.1.2.3", "zone-a"), ep("10.1.2.4", "zone-b")],
                [ep("10.1.3.3", "zone-c"), ep("10.1.3.4", "zone-c"), ep("10.1.3.5", "zone-a")]],
        update={"s1": [ep("10.2.2.3", "zone-a"), ep("10.2.2.4", "zone-a")],
                "s2": [ep("10.2.3.3", "zone-b"), ep("10.2.3.4", "zone-c"), ep("10.2.3.5", "zone-a")]})
    topology_cache_hints(slices, {"zone-a": 0.35, "zone-b": 0.35, "zone-c": 0.30}, "IPv4")
    assert [zones_of(s) for s in slices.create] == [["zone-b", "zone-b"], ["zone-c", "zone-c", "zone-a"]]
    assert [zones_of(s) for s in slices.update.values()] == [["zone-a", "zone-a"], ["zone-b", "zone-c", "zone-a"]]


def test_an_endpoint_without_zone_removes_every_hint_also_from_unchanged_slices():
    slices = SliceSet(create=[[ep("10.1.2.3", "zone-a"), ep("10.1.2.5", "zone-b"), ep("10.1.2.4", None)]],
                      unchanged={"old": [ep("10.1.9.9", "zone-b", hints={"forZones": [{"name": "zone-b"}]})]})
    events = topology_cache_hints(slices, {"zone-a": 0.5, "zone-b": 0.5}, "IPv6")
    assert zones_of(slices.create[0]) == [None, None, None]
    assert "old" in slices.update and zones_of(slices.update["old"]) == [None] and not slices.unchanged
    assert events[0].message == "One or more endpoints do not have a zone specified, addressType: IPv6"


def test_an_unchanged_slice_with_valid_hints_stays_unchanged():
    slices = SliceSet(create=[[ep("10.1.2.3", "zone-a")]],
                      unchanged={"kept": [ep("10.1.9.9", "zone-b", hints={"forZones": [{"name": "zone-b"}]})]})
    topology_cache_hints(slices, {"zone-a": 0.5, "zone-b": 0.5}, "IPv4")
    assert list(slices.unchanged) == ["kept"] and not slices.update


def test_minimum_shares_that_would_overload_an_endpoint_give_up():
    # 3 endpoints, 3 zones of very different weight: a minimum of ceil(0.8*3/1.2)=2 plus two of 1 exceeds 3.
    slices = SliceSet(create=[[ep("10.1.2.3", "zone-a"), ep("10.1.2.4", "zone-b"), ep("10.1.2.5", "zone-c")]])
    events = topology_cache_hints(slices, {"zone-a": 0.8, "zone-b": 0.1, "zone-c": 0.1}, "IPv4")
    assert zones_of(slices.create[0]) == [None, None, None]
    assert events[0].message.startswith("Unable to allocate minimum required endpoints to each zone without "
                                        "exceeding overload threshold (3 endpoints, 3 zones)")


# --- TestSetNodes ---------------------------------------------------------------------------------


def node(name: str, zone: str | None, cpu: str | None, ready: bool = True, control_plane: bool = False) -> Node:
    labels = {"topology.kubernetes.io/zone": zone} if zone else {}
    if control_plane:
        labels["node-role.kubernetes.io/control-plane"] = ""
    status = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if cpu:
        status["allocatable"] = {"cpu": cpu}
    return Node.parse({"metadata": {"name": name, "labels": labels}, "status": status})


@pytest.mark.parametrize(("nodes", "ratios"), [
    ([], None),
    ([node("a", "zone-a", "1000m")], None),  # single node
    ([node("a", "zone-a", "1000m"), node("b", "zone-a", "1000m")], None),  # single zone
    ([node("a", "zone-a", "1000m"), node("b", "zone-b", "1000m")], {"zone-a": 0.5, "zone-b": 0.5}),
    ([node("a", "zone-a", "1000m"), node("b", "zone-b", "2000m"), node("c", "zone-b", "3000m"),
      node("d", "zone-c", "2000m")], {"zone-a": 0.125, "zone-b": 0.625, "zone-c": 0.25}),
    # a node without CPU or zone: not enough to go on
    ([node("a", "zone-a", "1000m"), node("b", "zone-b", None)], None),
    ([node("a", "zone-a", "1000m"), node("b", None, "1000m")], None),
    # not-ready and control-plane nodes do not count
    ([node("a", "zone-a", "1000m"), node("b", "zone-b", "1000m"), node("c", "zone-c", "1000m", ready=False)],
     {"zone-a": 0.5, "zone-b": 0.5}),
    ([node("cp", "zone-c", "1000m", control_plane=True), node("a", "zone-a", "1"), node("b", "zone-b", "3")],
     {"zone-a": 0.25, "zone-b": 0.75}),
])
def test_zone_ratios_from_nodes(nodes, ratios):
    assert cpu_ratios_by_zone(nodes) == ratios


# --- the whole controller on a three-zone cluster ------------------------------------------------------

THREE_ZONES = {"nodes": [
    {"name": "control-plane", "ip": "172.18.0.2", "controlPlane": True, "zone": "zone-a"},
    {"name": "worker", "ip": "172.18.0.3", "zone": "zone-a"},
    {"name": "worker2", "ip": "172.18.0.4", "zone": "zone-b"},
    {"name": "worker3", "ip": "172.18.0.5", "zone": "zone-c"},
]}


def app(annotations: str = "", spec: str = "", replicas: int = 3) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      topologySpreadConstraints: [{{maxSkew: 1, topologyKey: topology.kubernetes.io/zone,
        whenUnsatisfiable: ScheduleAnyway, labelSelector: {{matchLabels: {{app: web}}}}}}]
      containers: [{{name: web, image: nginx:1.27}}]
---
apiVersion: v1
kind: Service
metadata:
  name: web
  annotations: {{{annotations}}}
spec:
  selector: {{app: web}}
  ports: [{{port: 80}}]
  {spec}
"""


def hints(cluster) -> dict[str, dict]:
    out = {}
    for es in cluster.state.endpoint_slices.values():
        if es.service_name == "web":
            for e in es.raw.get("endpoints") or []:
                out[e["nodeName"]] = (e.get("zone"), e.get("hints"))
    return dict(sorted(out.items()))


def test_nodes_carry_their_zone_and_kind_defaults_stay_single_zone():
    cluster = cluster_from(app(), config=config_from_dict(THREE_ZONES))
    assert {n.name: n.zone for n in cluster.state.nodes.values()} == {
        "control-plane": "zone-a", "worker": "zone-a", "worker2": "zone-b", "worker3": "zone-c"}
    assert all(n.zone is None for n in cluster_from(app()).state.nodes.values())


def test_prefer_same_zone_hints_each_endpoint_for_its_zone():
    cluster = cluster_from(app(spec="trafficDistribution: PreferSameZone"), config=config_from_dict(THREE_ZONES))
    got = hints(cluster)
    assert got == {n: (z, {"forZones": [{"name": z}]}) for n, (z, _) in got.items()}
    assert sorted(z for z, _ in got.values()) == ["zone-a", "zone-b", "zone-c"]


def test_prefer_same_node_adds_node_hints_and_prefer_close_is_the_zone_alias():
    node_hints = hints(cluster_from(app(spec="trafficDistribution: PreferSameNode"),
                                    config=config_from_dict(THREE_ZONES)))
    assert all(h == {"forZones": [{"name": z}], "forNodes": [{"name": n}]} for n, (z, h) in node_hints.items())
    close = hints(cluster_from(app(spec="trafficDistribution: PreferClose"), config=config_from_dict(THREE_ZONES)))
    same_zone = hints(cluster_from(app(spec="trafficDistribution: PreferSameZone"),
                                   config=config_from_dict(THREE_ZONES)))
    assert close == same_zone


def test_without_zones_prefer_same_zone_writes_no_hint():
    got = hints(cluster_from(app(spec="trafficDistribution: PreferSameZone")))
    assert got and all(h is None for _, h in got.values())


def test_topology_mode_auto_on_three_equal_zones():
    cluster = cluster_from(app(annotations="service.kubernetes.io/topology-mode: Auto"),
                           config=config_from_dict(THREE_ZONES))
    got = hints(cluster)
    assert all(h == {"forZones": [{"name": z}]} for z, h in got.values())
    assert not [n for n in cluster.state.notices if n.code == "TopologyAwareHintsDisabled"]


def test_topology_mode_auto_on_a_single_zone_cluster_gives_up_and_says_why():
    cluster = cluster_from(app(annotations="service.kubernetes.io/topology-mode: Auto"))
    assert all(h is None for _, h in hints(cluster).values())
    notices = [str(n) for n in cluster.state.notices if n.code == "TopologyAwareHintsDisabled"]
    assert notices == [f"<string>, document 2: Service default/web: {INSUFFICIENT_NODE_INFO}, addressType: IPv4"]


def test_the_deprecated_annotation_wins_over_topology_mode():
    cluster = cluster_from(app(annotations="service.kubernetes.io/topology-mode: Auto, "
                                           "service.kubernetes.io/topology-aware-hints: Disabled",
                               spec="trafficDistribution: PreferSameZone"), config=config_from_dict(THREE_ZONES))
    # Hints are not on through the annotation, so trafficDistribution decides.
    assert all(h == {"forZones": [{"name": z}]} for z, h in hints(cluster).values())


def test_a_dual_stack_service_gets_hints_in_both_address_types():
    config = config_from_dict({**THREE_ZONES, "ipFamily": "dual", "nodes": [
        {**n, "ip": f"{n['ip']},fc00:f853:ccd:e793::{n['ip'].rsplit('.', 1)[1]}"} for n in THREE_ZONES["nodes"]]})
    cluster = cluster_from(app(spec="trafficDistribution: PreferSameZone\n  ipFamilyPolicy: PreferDualStack"),
                           config=config)
    types = sorted(es.address_type for es in cluster.state.endpoint_slices.values() if es.service_name == "web")
    assert types == ["IPv4", "IPv6"]
    for es in cluster.state.endpoint_slices.values():
        if es.service_name == "web":
            assert all(e.for_zones == (e.zone,) for e in es.endpoints)
