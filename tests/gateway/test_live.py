"""The Gateway controller in the live cluster: status written by the controllers, the real kubectl
and curl against ``knetsim up``.

Given Envoy Gateway's quickstart (examples/gateway/quickstart), then the controllers write the Gateway API
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
from tests.apiserver.inprocess import Cluster, run

from knetsim.apiserver.store import Write
from knetsim.model.loader import load_paths

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "gateway" / "quickstart"


def test_the_controllers_write_gateway_status_and_proxy_once(tmp_path: Path) -> None:
    """Given the quickstart written through the API, then the controllers write the statuses and the proxy; queuing
    everything again afterwards writes nothing (a fixed point)."""
    async def scenario(c: Cluster) -> None:
        for doc in load_paths([str(QUICKSTART)]).documents:
            c.create(doc.body)
        await c.server.settle()
        store = c.server.store.objects
        gateway = store[("Gateway", "default", "eg")].body["status"]
        assert gateway["addresses"] == [{"type": "IPAddress", "value": "172.18.255.200"}]
        assert {c["type"]: c["status"] for c in gateway["conditions"]} == {"Accepted": "True", "Programmed": "True"}
        assert gateway["listeners"][0]["attachedRoutes"] == 1
        route = store[("HTTPRoute", "default", "backend")].body["status"]["parents"][0]
        assert route["controllerName"] == "gateway.envoyproxy.io/gatewayclass-controller"
        assert store[("GatewayClass", "", "eg")].body["status"]["conditions"][0]["reason"] == "Accepted"
        proxy = "envoy-default-eg-e41e7b31"
        assert store[("Service", "envoy-gateway-system", proxy)].managed == "controller"
        assert any(k[0] == "Pod" and k[2].startswith(proxy) for k in store)
        before = c.server.store.rv
        c.manager.start()
        await c.server.settle()
        assert c.server.store.rv == before
        c.server.store.commit([Write(("Gateway", "default", "eg"), None)])
        await c.server.settle()
        assert not [k for k in store if k[1] == "envoy-gateway-system" and k[2].startswith(proxy) and k[0] != "Event"]
    run(tmp_path, scenario)


# The API server's live-cluster fixture (a `knetsim.daemon` in a temp state dir), shared, not copied.
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
