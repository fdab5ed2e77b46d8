"""The live cluster's DNS and Ingress/NodePort entry: the real dig and curl against `knetsim up`.

Given the shop example applied through the API server, then dig asks the DNS port and curl
the entry port, exactly as the lab text types them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from tests.live import Live

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shop(live: Live) -> Live:
    live.kubectl("apply", "-f", str(ROOT / "examples" / "shop"))
    return live


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=30)


@pytest.mark.skipif(shutil.which("dig") is None, reason="dig is not installed")
def test_dig_answers_cluster_records(shop: Live) -> None:
    port = str(shop.info["dns_port"])
    svc_ip = shop.kubectl("get", "svc", "web", "-n", "shop", "-o", "jsonpath={.spec.clusterIP}").stdout
    assert run("dig", "+short", "@127.0.0.1", "-p", port, "web.shop.svc.cluster.local").stdout.split() == [svc_ip]
    db_ips = sorted(shop.kubectl("get", "pods", "-n", "shop", "-l", "app=db",
                                 "-o", "jsonpath={.items[*].status.podIP}").stdout.split())
    assert sorted(run("dig", "+short", "@127.0.0.1", "-p", port, "db.shop.svc.cluster.local").stdout.split()) == \
        db_ips
    srv = run("dig", "+short", "@127.0.0.1", "-p", port, "_http._tcp.web.shop.svc.cluster.local", "SRV").stdout
    assert srv.split()[2:] == ["80", "web.shop.svc.cluster.local."]


def test_dns_follows_api_writes(shop: Live) -> None:
    if shutil.which("dig") is None:
        pytest.skip("dig is not installed")
    shop.kubectl("create", "service", "clusterip", "later", "--tcp=80:80")
    ip = shop.kubectl("get", "svc", "later", "-o", "jsonpath={.spec.clusterIP}").stdout
    out = run("dig", "+short", "@127.0.0.1", "-p", str(shop.info["dns_port"]), "later.default.svc.cluster.local")
    assert out.stdout.split() == [ip]


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_through_the_ingress_and_a_node_port(shop: Live) -> None:
    base = f"http://127.0.0.1:{shop.info['ingress_port']}"
    out = run("curl", "-s", "-i", "-H", "Host: shop.example.com", f"{base}/api")
    assert out.stdout.startswith("HTTP/1.1 200 OK")
    assert "X-Knetsim-Backend: shop/api-" in out.stdout
    out = run("curl", "-s", "-H", "Host: 172.18.0.3:30080", f"{base}/")
    assert "Welcome to nginx!" in out.stdout


def test_a_simulation_crash_at_the_entry_is_a_500_that_says_so() -> None:
    """The front door answers a tracer failure as knetsim's error (500 with the exception), not a 400."""
    import asyncio
    import urllib.error
    import urllib.request

    from knetsim.daemon import entry

    class Broken:
        state = None  # the trace cannot run over this

        async def settle(self) -> None:
            return None

    async def go() -> tuple[int, str]:
        runner = await entry.start(Broken(), "127.0.0.1", 0)
        assert runner is not None
        port = runner.addresses[0][1]
        try:
            def fetch() -> tuple[int, str]:
                req = urllib.request.Request(f"http://127.0.0.1:{port}/x", headers={"Host": "shop.example.com"})
                try:
                    with urllib.request.urlopen(req, timeout=10) as resp:
                        return resp.status, resp.read().decode()
                except urllib.error.HTTPError as exc:
                    return exc.code, exc.read().decode()
            return await asyncio.to_thread(fetch)
        finally:
            await runner.cleanup()
    code, body = asyncio.run(go())
    assert code == 500
    assert body.startswith("knetsim: the simulation failed on http://shop.example.com/x: AttributeError")
