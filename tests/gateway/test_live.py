"""The Gateway controller in the live cluster: status written by the controllers' plan, the real kubectl
and curl against ``knetsim up``.

Given Envoy Gateway's quickstart (examples/gateway/quickstart), then the plan writes the Gateway API
statuses and the proxy's Deployment/Service/Pods once (a fixed point), kubectl prints the CRDs'
printer columns, and curl with ``Host: www.example.com`` reaches the backend through the Gateway
on the shared front door.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from tests.apiserver import conftest as apiserver_conftest
from tests.apiserver.conftest import Live, wait_for

from knetsim.apiserver import controllers
from knetsim.apiserver.store import Stored
from knetsim.cluster.config import ClusterConfig
from knetsim.model.loader import load_paths

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "gateway" / "quickstart"


def _objects() -> dict:
    objects: dict = {}
    for doc in load_paths([str(QUICKSTART)]).documents:
        body = doc.body
        meta = body["metadata"]
        ns = meta.setdefault("namespace", "default") if body["kind"] != "GatewayClass" else ""
        meta["creationTimestamp"] = "2026-01-01T00:00:00Z"
        objects[(body["kind"], ns, meta["name"])] = Stored(body, 1, "user")
    objects[("Namespace", "", "default")] = Stored({"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": "default"}}, 1, "user")
    return objects


def _apply(objects: dict, plan: controllers.Plan) -> None:
    for w in plan.writes:
        if w.body is None:
            objects.pop(w.key, None)
        else:
            objects[w.key] = Stored(w.body, 2, w.managed)


def test_plan_writes_gateway_status_and_proxy_once() -> None:
    """Given the quickstart stored, then one plan writes the statuses and the proxy; the next writes nothing."""
    objects = _objects()
    first = controllers.plan(objects, ClusterConfig(), "2026-01-01T00:00:05Z", {})
    _apply(objects, first)
    gateway = objects[("Gateway", "default", "eg")].body["status"]
    assert gateway["addresses"] == [{"type": "IPAddress", "value": "172.18.255.200"}]
    assert {c["type"]: c["status"] for c in gateway["conditions"]} == {"Accepted": "True", "Programmed": "True"}
    assert gateway["listeners"][0]["attachedRoutes"] == 1
    route = objects[("HTTPRoute", "default", "backend")].body["status"]["parents"][0]
    assert route["controllerName"] == "gateway.envoyproxy.io/gatewayclass-controller"
    assert all(c["lastTransitionTime"] == "2026-01-01T00:00:05Z" for c in route["conditions"])
    assert objects[("GatewayClass", "", "eg")].body["status"]["conditions"][0]["reason"] == "Accepted"
    proxy = "envoy-default-eg-e41e7b31"
    assert objects[("Service", "envoy-gateway-system", proxy)].managed == "controller"
    assert any(k[0] == "Pod" and k[2].startswith(proxy) for k in objects)
    again = controllers.plan(objects, ClusterConfig(), "2026-01-01T00:00:09Z", first.meta)
    assert not again.writes, [w.key for w in again.writes]


# The API server's live-cluster fixture (a `knetsim.apiserver` in a temp state dir), shared, not copied.
live = apiserver_conftest.live


def test_kubectl_and_curl_through_the_gateway(live: Live) -> None:
    """Given the quickstart applied with kubectl, then get prints the printer columns and curl reaches the backend."""
    live.kubectl("apply", "-f", str(QUICKSTART))
    def programmed() -> str | None:
        out = live.kubectl("get", "gateway", "eg").stdout
        return out if "True" in out else None

    out = wait_for(programmed)
    assert out is not None
    header, row = out.splitlines()
    assert header.split() == ["NAME", "CLASS", "ADDRESS", "PROGRAMMED", "AGE"]
    assert row.split()[:4] == ["eg", "eg", "172.18.255.200", "True"]
    routes = live.kubectl("get", "httproute").stdout.splitlines()
    assert routes[0].split() == ["NAME", "HOSTNAMES", "AGE"]
    assert routes[1].split()[:2] == ["backend", '["www.example.com"]']
    assert live.info["gateway_port"] == live.info["ingress_port"]
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    base = f"http://127.0.0.1:{live.info['gateway_port']}"
    ok = subprocess.run(["curl", "-s", "-i", "-H", "Host: www.example.com", f"{base}/get"], capture_output=True,
                        text=True, timeout=30).stdout
    assert ok.startswith("HTTP/1.1 200 OK"), ok
    assert "X-Knetsim-Backend: default/backend-" in ok
    missing = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H",
                              "Host: 172.18.255.200", f"{base}/get"], capture_output=True, text=True,
                             timeout=30).stdout
    assert missing == "404"  # the Gateway's own address: the route names www.example.com only
