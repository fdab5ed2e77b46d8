"""``knetsim dns``: exit codes and the lines users read."""

from __future__ import annotations

import json

import pytest
from tests.conftest import EXAMPLES
from tests.helpers import knetsim as run

from knetsim import Cluster

SHOP = str(EXAMPLES / "shop")



@pytest.fixture(scope="module")
def web_pod(shop: Cluster) -> str:
    return next(p.key for p in shop.state.pods_in("shop") if p.name.startswith("web-"))


def test_resolves_a_service_name(shop: Cluster, web_pod: str) -> None:
    result = run("dns", "web", "-f", SHOP, "--from", web_pod)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    ip = shop.state.services["shop/web"].cluster_ip
    assert lines[0] == f";; resolv.conf of {web_pod} (dnsPolicy ClusterFirst):"
    assert ";;   search shop.svc.cluster.local svc.cluster.local cluster.local" in lines
    assert ";; query 1 of 1: web.shop.svc.cluster.local. A @10.96.0.10#53 (UDP)" in lines
    assert f"web.shop.svc.cluster.local.\t30\tIN\tA\t{ip}" in lines
    assert lines[-1] == f"web: web.shop.svc.cluster.local. A {ip} (query 1 of 1)"


def test_name_that_does_not_resolve_exits_1(web_pod: str) -> None:
    result = run("dns", "web.default", "-f", SHOP, "--from", web_pod)
    assert result.exit_code == 1, result.output
    assert ";; query 4 of 4: web.default. A @10.96.0.10#53 (UDP)" in result.output
    assert ";; knetsim: no Service 'web' in namespace 'default'" in result.output
    assert result.output.splitlines()[-1] == "web.default: NXDOMAIN after 4 queries (Name or service not known)"


def test_busybox_resolver_prints_what_nslookup_prints(web_pod: str) -> None:
    result = run("dns", "web.shop", "-f", SHOP, "--from", web_pod, "--resolver", "busybox-nslookup")
    assert result.exit_code == 1
    assert "   ** server can't find web.shop: NXDOMAIN" in result.output.splitlines()
    assert run("dns", "web.shop", "-f", SHOP, "--from", web_pod).exit_code == 0


def test_statefulset_name_and_srv_json(shop: Cluster) -> None:
    result = run("dns", "_postgres._tcp.db", "--type", "SRV", "-f", SHOP, "-n", "shop", "--from", "db-1", "-o", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["outcome"] == "resolved"
    assert data["values"] == ["0 50 5432 db-0.db.shop.svc.cluster.local.", "0 50 5432 db-1.db.shop.svc.cluster.local."]
    assert data["queries"][0]["nameserver"] == "10.96.0.10"


def test_ptr_is_the_default_for_an_address(shop: Cluster, web_pod: str) -> None:
    ip = shop.state.pods["shop/db-0"].pod_ip
    assert ip == "10.244.2.3"
    result = run("dns", ip, "-f", SHOP, "--from", web_pod)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == (
        f"{ip}: 3.2.244.10.in-addr.arpa. PTR db-0.db.shop.svc.cluster.local. (query 1 of 1)")


def test_resolv_conf() -> None:
    result = run("dns", "--resolv-conf", "shop/db-0", "-f", SHOP)
    assert result.exit_code == 0
    assert result.output == ("search shop.svc.cluster.local svc.cluster.local cluster.local\n"
                             "nameserver 10.96.0.10\n"
                             "options ndots:5\n")
    data = json.loads(run("dns", "--resolv-conf", "shop/db-0", "-f", SHOP, "-o", "json").output)
    assert data["ndots"] == 5 and data["effectivePolicy"] == "ClusterFirst"


def test_records_listing() -> None:
    result = run("dns", "--records", "-f", SHOP)
    assert result.exit_code == 0
    assert "payments.shop.svc.cluster.local.\t30\tIN\tCNAME\tapi.payments.example.com." in result.output.splitlines()


@pytest.mark.parametrize("args", [
    ("dns", "-f", SHOP),  # nothing asked
    ("dns", "web", "-f", SHOP),  # no --from
    ("dns", "web", "--records", "-f", SHOP),  # two questions at once
    ("dns", "web", "-f", SHOP, "--from", "shop/web"),  # no such pod
    ("dns", "web", "-f", SHOP, "--from", "shop/db-0", "--resolver", "bind"),
])
def test_bad_usage_exits_2(args: tuple[str, ...]) -> None:
    assert run(*args).exit_code == 2


def test_missing_pod_suggests_the_real_names() -> None:
    result = run("dns", "web", "-f", SHOP, "--from", "shop/web")
    assert 'error: pods "web" not found in namespace "shop"; pods named after it: web-' in result.output
