"""Services live on a dual-stack, three-zone cluster config: ServiceCIDR and IPAddress objects, the
ServiceCIDR's deletion protection, families allocated per request, EndpointSlices per address type with
topology hints, and the controller's events — through the HTTP API, in process."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from knetsim.apiserver.server import ApiServer
from knetsim.cluster.config import config_from_dict
from knetsim.daemon.daemon import bring_up

CONFIG = config_from_dict({"ipFamily": "dual", "nodes": [
    {"name": "control-plane", "ip": "172.18.0.2,fc00:f853:ccd:e793::2", "controlPlane": True, "zone": "zone-a"},
    {"name": "worker", "ip": "172.18.0.3,fc00:f853:ccd:e793::3", "zone": "zone-a"},
    {"name": "worker2", "ip": "172.18.0.4,fc00:f853:ccd:e793::4", "zone": "zone-b"},
]})
NET = "/apis/networking.k8s.io/v1"


def service(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80}], **spec}}


async def scenario(client: TestClient, server: ApiServer) -> None:
    async def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        resp = await client.request(method, path, data=json.dumps(body) if body is not None else None,
                                    headers={"Content-Type": "application/json"})
        return resp.status, await resp.json()

    async def names(plural: str) -> dict[str, dict[str, Any]]:
        await server.settle()
        _, listed = await call("GET", f"{NET}/{plural}")
        return {i["metadata"]["name"]: i for i in listed["items"]}

    cidrs = await names("servicecidrs")
    assert cidrs["kubernetes"]["spec"]["cidrs"] == ["10.96.0.0/16", "fd00:10:96::/112"]
    assert cidrs["kubernetes"]["metadata"]["finalizers"] == ["networking.k8s.io/service-cidr-finalizer"]
    assert cidrs["kubernetes"]["status"]["conditions"][0]["status"] == "True"

    # A dual-stack Service gets one address per family, and an IPAddress for each.
    code, web = await call("POST", "/api/v1/namespaces/default/services",
                           service("web", ipFamilyPolicy="PreferDualStack", trafficDistribution="PreferSameZone"))
    assert code == 201, web
    v4, v6 = web["spec"]["clusterIPs"]
    assert web["spec"]["ipFamilies"] == ["IPv4", "IPv6"] and ":" in v6
    addresses = await names("ipaddresses")
    for ip, family in ((v4, "IPv4"), (v6, "IPv6")):
        assert addresses[ip]["spec"]["parentRef"] == {"resource": "services", "namespace": "default", "name": "web"}
        assert addresses[ip]["metadata"]["labels"]["ipaddress.kubernetes.io/ip-family"] == family

    # A refused request in the API server's words.
    code, status = await call("POST", "/api/v1/namespaces/default/services",
                              service("bad", clusterIP="10.96.0.0", clusterIPs=["10.96.0.0"]))
    assert code == 422 and status["message"].endswith(
        "failed to allocate IP 10.96.0.0: the provided network does not match the current range")

    # Pods in two zones: the slices of both address types carry zone hints.
    for node in ("worker", "worker2"):
        code, _ = await call("POST", "/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"web-{node}", "labels": {"app": "web"}},
            "spec": {"nodeName": node, "containers": [{"name": "web", "image": "nginx:1.27"}]}})
        assert code == 201
    for _ in range(100):
        await server.settle()
        _, slices = await call("GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
                                      "?labelSelector=kubernetes.io/service-name%3Dweb")
        endpoints = [(s["addressType"], e) for s in slices["items"] for e in s.get("endpoints") or []]
        if len(endpoints) == 4 and all(e.get("hints") for _, e in endpoints):
            break
        await asyncio.sleep(0.05)
    assert sorted(t for t, _ in endpoints) == ["IPv4", "IPv4", "IPv6", "IPv6"]
    assert all(e["hints"] == {"forZones": [{"name": e["zone"]}]} for _, e in endpoints)
    # The v1 Endpoints of a dual-stack Service hold its primary family only.
    _, ep = await call("GET", "/api/v1/namespaces/default/endpoints/web")
    assert sorted(a["ip"] for a in ep["subsets"][0]["addresses"]) == sorted(
        e["addresses"][0] for t, e in endpoints if t == "IPv4")

    # topology-mode Auto with too few endpoints for the zones: no hints, and the controller's event says why.
    auto = service("auto")
    auto["metadata"]["annotations"] = {"service.kubernetes.io/topology-mode": "Auto"}
    assert (await call("POST", "/api/v1/namespaces/default/services", auto))[0] == 201
    await server.settle()
    _, events = await call("GET", "/api/v1/namespaces/default/events")
    reasons = [(e["reason"], e["message"]) for e in events["items"] if e["involvedObject"]["name"] == "auto"]
    assert ("TopologyAwareHintsDisabled", "Insufficient number of endpoints (0 endpoints, 2 zones), addressType: "
            "IPv4") in reasons

    # A ServiceCIDR grows the range; deleting it waits while an address depends on it alone.
    extra = {"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR", "metadata": {"name": "extra"},
             "spec": {"cidrs": ["10.200.0.0/24"]}}
    assert (await call("POST", f"{NET}/servicecidrs", extra))[0] == 201
    cidrs = await names("servicecidrs")
    assert cidrs["extra"]["metadata"]["finalizers"] == ["networking.k8s.io/service-cidr-finalizer"]
    code, fixed = await call("POST", "/api/v1/namespaces/default/services", service("fixed", clusterIP="10.200.0.7"))
    assert code == 201, fixed
    code, deleting = await call("DELETE", f"{NET}/servicecidrs/extra")
    assert code == 200 and deleting["metadata"]["deletionTimestamp"]
    cidrs = await names("servicecidrs")
    assert cidrs["extra"]["status"]["conditions"][-1]["reason"] == "Terminating"
    code, refused = await call("POST", "/api/v1/namespaces/default/services", service("late", clusterIP="10.200.0.8"))
    assert code == 422, refused  # a ServiceCIDR being deleted allocates nothing
    assert (await call("DELETE", "/api/v1/namespaces/default/services/fixed"))[0] == 200
    assert "extra" not in await names("servicecidrs")
    assert "10.200.0.7" not in await names("ipaddresses")

    # kubectl's columns, from the server's Table.
    resp = await client.get(f"{NET}/servicecidrs", headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    table = await resp.json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "CIDRs", "Age"]
    assert table["rows"][0]["cells"][:2] == ["kubernetes", "10.96.0.0/16,fd00:10:96::/112"]


def test_services_live(tmp_path: Path) -> None:
    async def main() -> None:
        server = ApiServer(tmp_path, CONFIG)
        manager = bring_up(server)
        client = TestClient(TestServer(server.app()))
        await client.start_server()
        try:
            await server.settle()
            await scenario(client, server)
        finally:
            await client.close()
            await manager.close()
            await server.close()
    asyncio.run(main())
