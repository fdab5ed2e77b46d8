"""A three-zone, dual-stack cluster from `knetsim up --cluster-config`, driven by the real kubectl.

Given the cluster config below (a control plane and a worker in zone-a, one worker each in zone-b and
zone-c, kind's dual-stack CIDRs) and examples/zones/app applied with kubectl, then: the nodes carry
their zone label; the EndpointSlice controller writes the hints each Service asks for (PreferSameZone
zone hints, PreferSameNode node hints too, topology-mode Auto's allocation with its event); requests
from a client in zone-b reach only zone-b's web pod (its nginx log counts them); a PreferDualStack
Service shows both families to kubectl, to busybox nslookup and in the pod's /etc/hosts, while its v1
Endpoints keep the primary family only; the default ServiceCIDR lists both ranges.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Cluster, running, wait_for

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live

CONFIG = """\
name: zones
ipFamily: dual
nodes:
  - {name: control-plane, ip: "172.18.0.2,fc00:f853:ccd:e793::2", controlPlane: true, zone: zone-a}
  - {name: worker, ip: "172.18.0.3,fc00:f853:ccd:e793::3", zone: zone-a, cpu: "8"}
  - {name: worker2, ip: "172.18.0.4,fc00:f853:ccd:e793::4", zone: zone-b, cpu: "8"}
  - {name: worker3, ip: "172.18.0.5,fc00:f853:ccd:e793::5", zone: zone-c, cpu: "8"}
"""
APP = Path(__file__).resolve().parents[2] / "examples" / "zones" / "app"
DUAL = """
apiVersion: v1
kind: Service
metadata: {name: both, namespace: zones}
spec:
  ipFamilyPolicy: PreferDualStack
  selector: {app: web}
  ports: [{port: 80}]
"""


@pytest.fixture(scope="module")
def zones(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if not APP.is_dir():
        pytest.skip("examples/zones is not in this checkout")
    with running(tmp_path_factory.mktemp("zones"), CONFIG) as c:
        c.kubectl("apply", "-f", str(APP))
        c.kubectl("apply", "-f", "-", input=DUAL)
        # Every pod of the example running.
        assert wait_for(lambda: c.kubectl("get", "pods", "-n", "zones", "--field-selector=status.phase!=Running",
                                          "-o", "name").stdout == "", timeout=30)
        yield c


def slices(c: Cluster, service: str) -> list[dict]:
    return c.get_json("endpointslices", "-n", "zones", "-l", f"kubernetes.io/service-name={service}")["items"]


def test_nodes_carry_their_zone(zones: Cluster) -> None:
    rows = [line.split() for line in zones.kubectl("get", "nodes", "-L", "topology.kubernetes.io/zone").stdout
            .splitlines()]
    assert rows[0][-1] == "ZONE"
    assert {r[0]: r[-1] for r in rows[1:]} == {"control-plane": "zone-a", "worker": "zone-a", "worker2": "zone-b",
                                               "worker3": "zone-c"}


def test_the_endpointslice_controller_writes_the_hints_each_service_asks_for(zones: Cluster) -> None:
    def hinted(service: str, count: int) -> list[dict]:
        def found() -> list[dict]:
            eps = [e for s in slices(zones, service) if s["addressType"] == "IPv4"
                   for e in s.get("endpoints") or [] if e.get("hints")]
            return eps if len(eps) == count else []
        return wait_for(found)

    web = hinted("web", 3)
    assert sorted(e["zone"] for e in web) == ["zone-a", "zone-b", "zone-c"]
    assert all(e["hints"] == {"forZones": [{"name": e["zone"]}]} for e in web)
    cache = hinted("cache", 3)
    assert all(e["hints"] == {"forNodes": [{"name": e["nodeName"]}], "forZones": [{"name": e["zone"]}]}
               for e in cache)
    # report: every endpoint in zone-a; the hints say so, and clients elsewhere fall back to all of them.
    assert {e["hints"]["forZones"][0]["name"] for e in hinted("report", 2)} == {"zone-a"}
    # topology-mode Auto: 6 endpoints over three zones of equal CPU (the control plane does not count).
    api = hinted("api", 6)
    assert sorted(e["hints"]["forZones"][0]["name"] for e in api) == ["zone-a"] * 2 + ["zone-b"] * 2 + ["zone-c"] * 2
    events = zones.kubectl("get", "events", "-n", "zones", "--field-selector", "involvedObject.name=api").stdout
    assert "TopologyAwareHintsEnabled" in events


def test_a_client_in_zone_b_is_served_in_zone_b(zones: Cluster) -> None:
    client = zones.kubectl("get", "pods", "-n", "zones", "-l", "app=client", "--field-selector",
                           "spec.nodeName=worker2", "-o", "jsonpath={.items[0].metadata.name}").stdout
    for _ in range(4):
        zones.kubectl("exec", "-n", "zones", client, "--", "wget", "-qO-", "http://web.zones")
    pods = zones.get_json("pods", "-n", "zones", "-l", "app=web")["items"]
    served = {p["spec"]["nodeName"]: zones.kubectl("logs", "-n", "zones", p["metadata"]["name"]).stdout.count("GET /")
              for p in pods}
    assert served == {"worker": 0, "worker2": 4, "worker3": 0}


def test_a_dual_stack_service_shows_both_families(zones: Cluster) -> None:
    ips = json.loads(zones.kubectl("get", "svc", "-n", "zones", "both", "-o", "jsonpath={.spec.clusterIPs}").stdout)
    assert [ipaddress.ip_address(ip).version for ip in ips] == [4, 6]
    wide = zones.kubectl("get", "endpointslices", "-n", "zones", "-l", "kubernetes.io/service-name=both",
                         "-o", "wide").stdout.splitlines()
    assert wide[0].split()[:2] == ["NAME", "ADDRESSTYPE"]
    assert sorted(line.split()[1] for line in wide[1:]) == ["IPv4", "IPv6"]
    cidrs = zones.kubectl("get", "servicecidrs").stdout.splitlines()[1].split()
    assert cidrs[:2] == ["kubernetes", "10.96.0.0/16,fd00:10:96::/112"]
    assert zones.kubectl("get", "ipaddress", ips[1], "-o", "jsonpath={.spec.parentRef.name}").stdout == "both"
    # The v1 Endpoints keep the primary family.
    endpoints = zones.kubectl("get", "endpoints", "-n", "zones", "both", "-o",
                              "jsonpath={.subsets[*].addresses[*].ip}").stdout.split()
    assert len(endpoints) == 3 and all(ipaddress.ip_address(ip).version == 4 for ip in endpoints)

    client = zones.kubectl("get", "pods", "-n", "zones", "-l", "app=client", "-o",
                           "jsonpath={.items[0].metadata.name}").stdout
    looked_up = zones.kubectl("exec", "-n", "zones", client, "--", "nslookup", "both.zones.svc.cluster.local").stdout
    assert [line.split()[-1] for line in looked_up.splitlines() if line.startswith("Address: ")] == ips
    pod_ips = json.loads(zones.kubectl("get", "pod", "-n", "zones", client, "-o",
                                       "jsonpath={.status.podIPs}").stdout)
    hosts = zones.kubectl("exec", "-n", "zones", client, "--", "cat", "/etc/hosts").stdout.splitlines()
    assert hosts[-2:] == [f"{p['ip']}\t{client}" for p in pod_ips]
    # Over IPv6, nginx logs the client's IPv6 address.
    zones.kubectl("exec", "-n", "zones", client, "--", "wget", "-qO-", f"http://[{ips[1]}]/")
    logs = "".join(zones.kubectl("logs", "-n", "zones", p["metadata"]["name"]).stdout
                   for p in zones.get_json("pods", "-n", "zones", "-l", "app=web")["items"])
    assert f"{pod_ips[1]['ip']} - - [" in logs
