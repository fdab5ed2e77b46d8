"""Kubernetes' topology e2e tests, restated for the real kubectl against a three-zone `knetsim up`.

The upstream tests skip on a cluster with fewer than three zones of schedulable nodes; the default kind cluster
has two workers and no zones. The documented way to get three (docs/cluster-config.md) is a cluster config with
more nodes and zones: examples/zones/cluster.yaml, a control plane and a worker in zone-a and one worker each in
zone-b and zone-c. Each test restates one upstream test of kubernetes/kubernetes (file in its docstring), with its
objects (agnhost serve-hostname servers on port 9376 behind a Service on 80) and its client pods pinned to a node
of each zone; where upstream reads a client's `curl` loop from its log, the test runs the same
`curl -q -s --connect-timeout 2` through `kubectl exec` in that client. docs/e2e.md lists them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import KUBECTL, Cluster, start, stop, wait_for

pytestmark = pytest.mark.live

AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
CONFIG = Path(__file__).resolve().parents[2] / "examples" / "zones" / "cluster.yaml"
# The schedulable node of each zone in that config (the control plane is tainted, as kind's).
NODE_OF_ZONE = {"zone-a": "worker", "zone-b": "worker2", "zone-c": "worker3"}


@pytest.fixture(scope="module")
def zones(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed: the end-to-end suite drives the real kubectl")
    c = start(tmp_path_factory.mktemp("topology"), CONFIG.read_text())
    try:
        yield c
    finally:
        stop(c)


def pod(name: str, ns: str, node: str, args: list[str], labels: dict[str, str] | None = None) -> str:
    """e2epod.NewAgnhostPod with NodeSelection{Name: node}: pinned by nodeName, as the framework does."""
    return json.dumps({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
                       "spec": {"nodeName": node,
                                "containers": [{"name": "agnhost", "image": AGNHOST, "args": args,
                                                "ports": [{"containerPort": 9376}] if labels else []}]}})


def service(ns: str, selector: dict[str, str], **spec: object) -> str:
    annotations = spec.pop("annotations", {})
    return json.dumps({"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": "traffic-dist-test-service", "namespace": ns,
                                    "annotations": annotations},
                       "spec": {"selector": selector, "ports": [{"port": 80, "targetPort": 9376}], **spec}})


def wait_running(c: Cluster, ns: str) -> None:
    assert wait_for(lambda: c.kubectl("get", "pods", "-n", ns, "--field-selector=status.phase!=Running",
                                      "-o", "name").stdout == "" and
                    c.kubectl("get", "pods", "-n", ns, "-o", "name").stdout != "", timeout=30)


def hints(c: Cluster, ns: str) -> dict[str, tuple[str | None, list[str]]]:
    """pod name → (its zone, the zones its hint names), from the Service's EndpointSlices."""
    found: dict[str, tuple[str | None, list[str]]] = {}
    for s in c.get_json("endpointslices", "-n", ns, "-l",
                        "kubernetes.io/service-name=traffic-dist-test-service")["items"]:
        for e in s.get("endpoints") or []:
            zones = [z["name"] for z in (e.get("hints") or {}).get("forZones") or []]
            found[e["targetRef"]["name"]] = (e.get("zone"), zones)
    return found


def answers(c: Cluster, ns: str, client: str, tries: int = 6) -> set[str]:
    """The hostnames the Service answers a client with: the upstream client's curl, `tries` times."""
    command = (f"for i in $(seq 1 {tries}); do curl -q -s --connect-timeout 2 http://traffic-dist-test-service:80/; "
               "echo; done")
    out = c.kubectl("exec", "-n", ns, client, "--", "/bin/sh", "-c", command).stdout
    return {line.strip() for line in out.splitlines() if line.strip()}


def test_topology_hints_should_distribute_endpoints_evenly(zones: Cluster) -> None:
    """[sig-network] Feature:Topology Hints should distribute endpoints evenly
    (kubernetes/kubernetes test/e2e/network/topology_hints.go, v1.33.0).

    A DaemonSet of serve-hostname puts one server on each schedulable node; the Service asks for
    topology-aware routing (`service.kubernetes.io/topology-mode: Auto`); with equal CPU in every zone each
    endpoint's hint is its own zone, and a client on each node is answered only by its own zone's server."""
    ns = zones.namespace("topology-hints")
    labels = {"app": "topology-hints"}
    daemonset = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "topology-serve-hostname",
                                                                              "namespace": ns},
                 "spec": {"selector": {"matchLabels": labels},
                          "template": {"metadata": {"labels": labels},
                                       "spec": {"containers": [{"name": "agnhost", "image": AGNHOST,
                                                                "args": ["serve-hostname"],
                                                                "ports": [{"containerPort": 9376}]}]}}}}
    zones.kubectl("apply", "-f", "-", input=json.dumps(daemonset))
    zones.kubectl("apply", "-f", "-", input=service(ns, labels, annotations={
        "service.kubernetes.io/topology-mode": "Auto"}))
    wait_running(zones, ns)
    servers = json.loads(zones.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]
    # One server per schedulable node: the control plane's taint keeps the DaemonSet off it.
    assert sorted(p["spec"]["nodeName"] for p in servers) == ["worker", "worker2", "worker3"]
    zone_of_server = {p["metadata"]["name"]: z for p in servers
                      for z, n in NODE_OF_ZONE.items() if n == p["spec"]["nodeName"]}

    # Every endpoint hinted for its own zone, and only for it.
    assert wait_for(lambda: {name: (zone, hinted) for name, (zone, hinted) in hints(zones, ns).items()}
                    == {name: (zone, [zone]) for name, zone in zone_of_server.items()}, timeout=20), \
        hints(zones, ns)

    for zone, node in NODE_OF_ZONE.items():
        client = f"client-{node}"
        zones.kubectl("apply", "-f", "-", input=pod(client, ns, node, ["pause"]))
        zones.kubectl("wait", "-n", ns, "--for=condition=Ready", f"pod/{client}", "--timeout=30s")
        same_zone = {name for name, z in zone_of_server.items() if z == zone}
        assert answers(zones, ns, client) == same_zone, f"client in {zone}"


def _same_zone_when_asked(zones: Cluster, ns: str, distribution: str) -> None:
    """traffic_distribution.go's check: servers in two of the three zones; clients there stay in their zone,
    a client in the third zone (no server of its own) is answered cluster-wide."""
    labels = {"app": ns}
    served = ["zone-a", "zone-b"]
    for zone in served:
        zones.kubectl("apply", "-f", "-", input=pod(f"serving-pod-in-{zone}", ns, NODE_OF_ZONE[zone],
                                                     ["serve-hostname"], labels))
    zones.kubectl("apply", "-f", "-", input=service(ns, labels, trafficDistribution=distribution))
    for zone in NODE_OF_ZONE:
        zones.kubectl("apply", "-f", "-", input=pod(f"client-pod-in-{zone}", ns, NODE_OF_ZONE[zone], ["pause"]))
    wait_running(zones, ns)

    # "ensuring EndpointSlice for service have correct same-zone hints"
    assert wait_for(lambda: hints(zones, ns) == {f"serving-pod-in-{z}": (z, [z]) for z in served}, timeout=20), \
        hints(zones, ns)
    # "keeping traffic within the same zone as the client, when serving pods exist in the same zone"
    for zone in served:
        assert answers(zones, ns, f"client-pod-in-{zone}") == {f"serving-pod-in-{zone}"}
    # "routing traffic cluster-wide, when there are no serving pods in the same zone as the client"
    heard = answers(zones, ns, "client-pod-in-zone-c", tries=12)
    assert heard and heard <= {f"serving-pod-in-{z}" for z in served}


def test_traffic_distribution_should_route_traffic_to_an_endpoint_in_the_same_zone_when_using_preferclose(
        zones: Cluster) -> None:
    """[sig-network] Traffic Distribution when Service has trafficDistribution=PreferClose should route traffic
    to an endpoint in the same zone when using PreferClose
    (kubernetes/kubernetes test/e2e/network/traffic_distribution.go, v1.33.0)."""
    _same_zone_when_asked(zones, zones.namespace("preferclose"), "PreferClose")


def test_traffic_distribution_should_route_traffic_to_an_endpoint_in_the_same_zone_when_using_prefersamezone(
        zones: Cluster) -> None:
    """[sig-network] Traffic Distribution when Service has trafficDistribution=PreferSameZone should route
    traffic to an endpoint in the same zone (kubernetes/kubernetes test/e2e/network/traffic_distribution.go,
    v1.34.0, PreferSameZone beta there and on by default)."""
    _same_zone_when_asked(zones, zones.namespace("prefersamezone"), "PreferSameZone")
