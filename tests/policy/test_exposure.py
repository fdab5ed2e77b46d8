"""``knetsim matrix --exposure``: who may open a connection to a workload without being named, and which rule
lets them.

Given a workload and the policies of every tier around it, then it is exposed to any namespace exactly
when a pod of a new, unlabelled namespace gets in; to any external address when every address outside the
pod network does (a range only when an ipBlock names it); through an Ingress or a Gateway when a served
route's Service selects its pods — and the opening names the rule (NetworkPolicy, ClusterNetworkPolicy,
or no policy at all) and whether policy lets the proxy in.

Address plan as in helpers.py: namespaces shop and other, pods 10.244.<node>.x, external 192.0.2.0/24.
"""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner
from tests.conftest import EXAMPLES

from knetsim.cli.main import cli
from knetsim.network.exposure import exposure

from .helpers import DEFAULT_DENY_INGRESS, clusterpolicy, netpol, ns, pod, state

BASE = [ns("shop"), ns("other", team="x"), pod("shop/db", {"app": "db"}, ports={"pg": 5432}),
        pod("other/client", {"app": "client"})]


def openings(objects: list[dict[str, Any]], workload: str = "shop/db[Pod]") -> dict[str, Any]:
    found = {e.workload: e for e in exposure(state(*objects))}
    if workload not in found:
        return {}
    return {o.via if o.via != "external range" else o.peer: o for o in found[workload].openings}


def test_a_pod_no_policy_selects_is_open_to_every_namespace_and_address() -> None:
    got = openings(BASE)
    assert set(got) == {"any namespace", "any external address"}
    assert got["any namespace"].allowed.is_all
    assert "it is not isolated" in got["any namespace"].rule


def test_an_empty_namespace_selector_exposes_to_any_namespace_and_names_the_rule() -> None:
    allow = netpol("shop/db-from-all", {"podSelector": {"matchLabels": {"app": "db"}}, "ingress": [
        {"from": [{"namespaceSelector": {}}], "ports": [{"port": "pg"}]}]})
    got = openings([*BASE, netpol("shop/deny", DEFAULT_DENY_INGRESS), allow])
    assert set(got) == {"any namespace"}  # namespaceSelector {} matches pods only, never external addresses
    assert got["any namespace"].allowed.describe() == "TCP 5432"
    assert got["any namespace"].rule == (
        "ingress of shop/db: allowed by NetworkPolicy shop/db-from-all ingress[0].from[0].ports[0]")


def test_a_labelled_namespace_selector_is_no_exposure() -> None:
    allow = netpol("shop/db-from-team-x", {"podSelector": {}, "ingress": [
        {"from": [{"namespaceSelector": {"matchLabels": {"team": "x"}}}]}]})
    assert openings([*BASE, allow]) == {}


def test_an_ipblock_exposes_its_range_only() -> None:
    allow = netpol("shop/db-from-docs", {"podSelector": {}, "ingress": [
        {"from": [{"ipBlock": {"cidr": "192.0.2.0/24"}}], "ports": [{"port": 5432}]}]})
    got = openings([*BASE, allow])
    assert set(got) == {"192.0.2.0/24"}
    assert got["192.0.2.0/24"].allowed.describe() == "TCP 5432"
    assert got["192.0.2.0/24"].rule.endswith("allowed by NetworkPolicy shop/db-from-docs ingress[0].from[0].ports[0]")


def test_an_admin_accept_exposes_past_every_networkpolicy() -> None:
    accept = clusterpolicy("db-open", "Admin", 5, {"namespaces": {"matchLabels": {
        "kubernetes.io/metadata.name": "shop"}}}, ingress=[{"name": "everyone", "action": "Accept",
                                                            "from": [{"namespaces": {}}]}])
    got = openings([*BASE, netpol("shop/deny", DEFAULT_DENY_INGRESS), accept])
    assert set(got) == {"any namespace"}
    assert got["any namespace"].rule == ("ingress of shop/db: allowed by ClusterNetworkPolicy `db-open` rule "
                                         "`everyone` (Admin tier, priority 5)")


def test_routes_expose_the_workloads_their_services_select(tmp_path: Any) -> None:
    result = CliRunner().invoke(cli, ["matrix", "-f", str(EXAMPLES / "shop"), "--exposure", "-o", "json"])
    assert result.exit_code == 0, result.output
    found = {w["workload"]: w["openings"] for w in json.loads(result.stdout)["workloads"]}
    assert set(found) == {"shop/api[Deployment]", "shop/web[Deployment]"}  # the db is reached by the api only
    [api] = found["shop/api[Deployment]"]
    assert (api["via"], api["peer"], api["allowed"], api["admitted"]) == (
        "Ingress", "Ingress shop/shop: GET http://shop.example.com/api → Service shop/api:8080",
        [{"protocol": "TCP", "ports": [[8080, 8080]]}], True)
    assert "allowed by NetworkPolicy shop/allow-from-ingress ingress[0].from[0]" in api["rule"]
    gateway = CliRunner().invoke(cli, ["matrix", "-f", str(EXAMPLES / "gateway" / "store"), "--exposure", "-o",
                                       "json", "-n", "store"])
    routes = [o for w in json.loads(gateway.stdout)["workloads"] for o in w["openings"] if o["via"] == "Gateway"]
    assert {o["peer"] for o in routes} >= {
        "Gateway store/store: PathPrefix http://www.store.example/api (HTTPRoute store/store rule 0) → Service "
        "store/api:8080"}


def test_a_route_policy_closes_is_reported_as_not_admitted(tmp_path: Any) -> None:
    deny = tmp_path / "deny.yaml"
    deny.write_text("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: api-closed, "
                    "namespace: shop}\nspec: {podSelector: {matchLabels: {app: api}}, policyTypes: [Ingress]}\n")
    shop = [str(EXAMPLES / "shop" / f) for f in ("00-namespace.yaml", "10-web.yaml", "20-api.yaml", "30-db.yaml",
                                                  "40-ingress.yaml")]
    args = ["matrix", *(a for f in shop for a in ("-f", f)), "-f", str(deny), "--exposure"]
    result = CliRunner().invoke(cli, args)
    assert "  Ingress: TCP 8080 (policy does not let the proxy in)" in result.stdout
    assert ("ingress of shop/api-867b78f88-b5xt6: denied, isolated by NetworkPolicy shop/api-closed and no ingress "
            "rule allows it") in result.stdout
