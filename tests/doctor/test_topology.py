"""The doctor's topology findings: examples/zones has two classic surprises, each with its fix; and the hints
that nodes ignore."""

from __future__ import annotations

from tests.conftest import EXAMPLES

from knetsim import Cluster
from knetsim.cluster.config import config_from_dict, load_config
from knetsim.doctor import diagnose

ZONES = EXAMPLES / "zones"


def findings(cluster: Cluster) -> dict[tuple[str, str], str]:
    return {(f.subject, f.code): f.message for f in diagnose(cluster.state).findings if f.severity != "info"}


def zones_cluster(**replace: str) -> Cluster:
    text = "\n---\n".join(p.read_text() for p in sorted((ZONES / "app").glob("*.yaml")))
    for old, new in replace.items():
        text = text.replace(old, new)
    return Cluster.from_yaml(text, config=load_config(str(ZONES / "cluster.yaml")))


def test_the_zones_example_has_its_two_surprises_and_nothing_else():
    got = findings(zones_cluster())
    assert set(got) == {("Service zones/report", "TopologyAllEndpointsInOneZone"),
                        ("Service zones/logs", "PreferCloseIsZonal")}
    assert got[("Service zones/report", "TopologyAllEndpointsInOneZone")] == (
        "trafficDistribution: PreferSameZone, but all 2 ready endpoint(s) are in zone zone-a: clients in zone-b, "
        "zone-c cross zones anyway (their proxies find no endpoint hinted for their zone and use every endpoint)")


def test_the_fixes_the_example_names_clear_them():
    fixed = zones_cluster(**{"nodeSelector: {topology.kubernetes.io/zone: zone-a}": "nodeSelector: {}",
                             "replicas: 2": "replicas: 3",
                             "trafficDistribution: PreferClose": "trafficDistribution: PreferSameNode"})
    assert findings(fixed) == {}


UNZONED = config_from_dict({"nodes": [
    {"name": "control-plane", "ip": "172.18.0.2", "zone": "zone-a"},
    {"name": "worker", "ip": "172.18.0.3", "zone": "zone-a"},
    {"name": "worker2", "ip": "172.18.0.4", "zone": "zone-b"},
    {"name": "worker3", "ip": "172.18.0.5"}]})


def unzoned_web(replicas: int) -> Cluster:
    """web without its spread constraint, on a cluster whose worker3 has no zone label."""
    text = (ZONES / "app" / "10-web.yaml").read_text().replace("zones", "default").replace(
        "replicas: 3", f"replicas: {replicas}")
    text = text.replace("      topologySpreadConstraints:\n        - {maxSkew: 1, topologyKey: topology.kubernetes.io/"
                        "zone, whenUnsatisfiable: DoNotSchedule,\n           labelSelector: {matchLabels: {app: web}}}"
                        "\n", "")
    return Cluster.from_yaml(text, config=UNZONED)


def test_a_node_without_a_zone_ignores_the_hints():
    # Two replicas land on worker and worker2; worker3's proxy has no zone to prefer.
    assert findings(unzoned_web(2)) == {("Service default/web", "TopologyHintsIgnored"): (
        "trafficDistribution: PreferSameZone, but the proxies ignore the hints of default/web:http and use every ready "
        "endpoint on: worker3 (node worker3 has no topology.kubernetes.io/zone label)")}


def test_a_pod_on_a_node_without_a_zone_turns_the_hints_off_everywhere():
    # The third replica runs on worker3: its endpoint has no zone, so no zone hint, and every proxy ignores them all.
    message = findings(unzoned_web(3))[("Service default/web", "TopologyHintsIgnored")]
    assert message.endswith("every ready endpoint on: worker (one or more endpoints is missing a zone hint), worker2 "
                            "(one or more endpoints is missing a zone hint), worker3 (one or more endpoints is missing "
                            "a zone hint)")


def test_topology_mode_auto_giving_up_is_a_finding():
    text = (ZONES / "app" / "20-api.yaml").read_text().replace("replicas: 6", "replicas: 2")
    got = findings(Cluster.from_yaml(text, config=load_config(str(ZONES / "cluster.yaml"))))
    assert got == {("Service zones/api", "TopologyHintsDisabled"):
                   "service.kubernetes.io/topology-mode: Auto, but the EndpointSlice controller gave up: Insufficient "
                   "number of endpoints (2 endpoints, 3 zones), addressType: IPv4"}
