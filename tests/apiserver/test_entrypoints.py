"""The live cluster's DNS and Ingress/NodePort entry: the real dig and curl against `knetsim up`.

Given the shop example applied through the API server, then dig asks the DNS port and curl
the entry port, exactly as the lab text types them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import Live

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
