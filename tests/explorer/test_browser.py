"""The connectivity explorer in a real browser (Debian's chromium, headless, driven by Playwright).

What is asserted is what a person sees: the cells of the grid (their marks and labels), the
explanation text after a click, the filters' effect, the service map's red row. The page
under test is the file `knetsim matrix -o html` writes, and the same page served live by the
API server behind its token.

Address plan: DESIGN defaults (pods 10.244.0.0/16, Services 10.96.0.0/12).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
DOCS_IMAGES = ROOT / "docs" / "images"

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
playwright_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


def knetsim(*args: str, cwd: Path = ROOT) -> str:
    proc = subprocess.run([sys.executable, "-m", "knetsim.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def open_page(browser: Any, url: str, **context: Any) -> Any:
    page = browser.new_context(viewport={"width": 1400, "height": 820}, **context).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    page.errors = errors
    page.goto(url)
    page.wait_for_selector(".cell")
    return page


@pytest.fixture(scope="module")
def shop_page(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("explorer") / "shop.html"
    path.write_text(knetsim("matrix", "-f", "examples/shop", "-o", "html"))
    page = open_page(browser, path.as_uri())
    yield page
    assert page.errors == []


def cell(page: Any, text: str) -> Any:
    return page.get_by_role("gridcell", name=text, exact=True)


def test_the_grid_shows_workloads_and_verdicts_per_port(shop_page: Any) -> None:
    page = shop_page
    assert page.locator("#count").inner_text() == "5 of 5 rows"
    assert page.get_by_role("rowheader").all_inner_texts() == [
        "shop/api[Deployment]", "shop/db[StatefulSet]", "shop/web[Deployment]", "0.0.0.0-10.243.255.255",
        "10.245.0.0-255.255.255.255"]
    page.fill("#port", "")  # any port: partly = some connections, not all
    assert cell(page, "shop/web[Deployment] → shop/api[Deployment]: partly allowed: TCP 8080").inner_text() == "◐"
    page.fill("#port", "8080")
    assert cell(page, "shop/web[Deployment] → shop/api[Deployment]: allowed on TCP 8080").inner_text() == "✓"
    assert cell(page, "shop/api[Deployment] → shop/web[Deployment]: denied on TCP 8080").inner_text() == "✗"
    page.fill("#port", "5432")
    assert cell(page, "shop/api[Deployment] → shop/db[StatefulSet]: allowed on TCP 5432").is_visible()


def test_a_click_explains_which_rule_allowed_it(shop_page: Any) -> None:
    page = shop_page
    page.fill("#port", "8080")
    cell(page, "shop/web[Deployment] → shop/api[Deployment]: allowed on TCP 8080").click()
    text = page.locator("#explain").inner_text()
    assert text.startswith("shop/web[Deployment] → shop/api[Deployment]\nALLOWED: allowed on TCP 8080")
    assert "allowed by NetworkPolicy shop/web-to-api egress[0].to[0].ports[0]" in text
    assert "allowed by NetworkPolicy shop/api-ingress ingress[0].from[0].ports[0]" in text


def test_a_denial_names_the_rules_and_the_smallest_change(shop_page: Any) -> None:
    page = shop_page
    page.fill("#port", "5432")
    cell(page, "shop/web[Deployment] → shop/db[StatefulSet]: denied on TCP 5432").click()
    text = page.locator("#explain").inner_text()
    assert "DENIED: denied on TCP 5432" in text
    assert ("NetworkPolicy shop/web-to-api egress[0]: to: no peer matches shop/db[StatefulSet] "
            "(peers: pods with app=api in namespace shop)") in text
    assert "NetworkPolicy shop/db-allow-backend ingress[0]: from: no peer matches shop/web[Deployment]" in text
    # db-allow-backend already opens 5432: the smallest change is one more peer there, not a new rule.
    assert ("ingress: add to NetworkPolicy shop/db-allow-backend spec.ingress[0].from:\n"
            "    - podSelector: {matchLabels: {app: web}}") in text
    # No egress rule has the port or the peer: a new rule, in the policy written for web, not the namespace-wide one.
    assert ("egress: add a rule to NetworkPolicy shop/web-to-api spec.egress:\n    - to:\n"
            "        - podSelector: {matchLabels: {app: db}}\n      ports: [{protocol: TCP, port: 5432}]") in text


def test_the_explanation_agrees_with_the_policy_engine(shop_page: Any, shop: Any) -> None:
    from knetsim.policy import evaluate

    page = shop_page
    page.fill("#port", "8080")
    rows = page.evaluate("knetsimExplorer.data().rows.map(r => [r.name, r.pods[0], r.kind])")
    for i, (src, src_pod, src_kind) in enumerate(rows):
        for j, (dst, dst_pod, dst_kind) in enumerate(rows):
            if "external" in (src_kind, dst_kind) or i == j:
                continue
            cell(page, f"{src} → {dst}: " + page.evaluate(f"knetsimExplorer.state({i}, {j}).text")).click()
            entries = json.loads(page.locator("#explain").get_attribute("data-entries"))
            verdict = evaluate(shop.state, src_pod, dst_pod, 8080)
            for side, direction in (("egress", verdict.egress), ("ingress", verdict.ingress)):
                seen = {(e["policy"], e["rule"]) for e in entries if e["side"] == side and e["allowed"]}
                assert seen == {(m.policy, m.rule) for m in direction.allowed_by}, (src, dst, side)
            assert page.locator("#explain").inner_text().split("\n")[1].startswith(
                "ALLOWED" if verdict.allowed else "DENIED"), (src, dst)


# --- ClusterNetworkPolicy tiers (examples/cluster-policy, the worked example of docs/policy.md) ----------


@pytest.fixture(scope="module")
def tiers_page(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("explorer") / "tiers.html"
    path.write_text(knetsim("matrix", "-f", "examples/cluster-policy", "-o", "html"))
    page = open_page(browser, path.as_uri())
    yield page
    assert page.errors == []


def test_a_cell_names_the_tier_that_denied_it(tiers_page: Any) -> None:
    page = tiers_page
    page.fill("#port", "5432")
    cell(page, "tenant-a/app[StatefulSet] → shop/db[StatefulSet]: denied on TCP 5432 (Admin tier)").click()
    text = page.locator("#explain").inner_text()
    assert ("ingress of shop/db[StatefulSet]: denied by ClusterNetworkPolicy `block-db` rule `deny-from-tenants` "
            "(Admin tier, priority 10)") in text
    assert "only the cluster administrator can let it through" in text
    assert cell(page, "shop/api[StatefulSet] → shop/db[StatefulSet]: allowed on TCP 5432").is_visible()
    page.fill("#port", "80")
    cell(page, "tenant-a/app[StatefulSet] → tenant-b/app[StatefulSet]: denied on TCP 80 (Baseline tier)").click()
    assert ("denied by ClusterNetworkPolicy `tenant-b-isolation` rule `other-tenants` (Baseline tier, priority 10)"
            in page.locator("#explain").inner_text())
    page.fill("#port", "8080")
    cell(page, "tenant-a/app[StatefulSet] → shop/api[StatefulSet]: allowed on TCP 8080").click()
    assert ("passed by ClusterNetworkPolicy `shop-api-delegate` rule `tenants-to-api` (Admin tier, priority 20) "
            "to the NetworkPolicy tier") in page.locator("#explain").inner_text()
    assert cell(page, "tenant-b/app[StatefulSet] → shop/api[StatefulSet]: denied on TCP 8080 (NetworkPolicy tier)"
                ).is_visible()


def test_the_tier_explanation_agrees_with_the_policy_engine(tiers_page: Any) -> None:
    from knetsim import Cluster
    from knetsim.policy import evaluate

    state = Cluster.from_paths([str(ROOT / "examples" / "cluster-policy")]).state
    page = tiers_page
    rows = page.evaluate("knetsimExplorer.data().rows.map(r => [r.name, r.pods[0], r.kind])")
    for port in ("5432", "8080", "9090", "80"):
        page.fill("#port", port)
        for i, (src, src_pod, src_kind) in enumerate(rows):
            for j, (dst, dst_pod, dst_kind) in enumerate(rows):
                if "external" in (src_kind, dst_kind) or i == j:
                    continue
                cell(page, f"{src} → {dst}: " + page.evaluate(f"knetsimExplorer.state({i}, {j}).text")).click()
                sides = {s["side"]: s for s in json.loads(page.locator("#explain").get_attribute("data-tiers"))}
                verdict = evaluate(state, src_pod, dst_pod, int(port))
                for direction in (verdict.egress, verdict.ingress):
                    side = sides[direction.direction]
                    assert (side["tier"], side["allowed"]) == (direction.tier, direction.allowed), (src, dst, port)
                    by = direction.decided_by
                    assert side["decided"] == (by and {"policy": by.policy, "rule": by.rule, "action": by.action})


def test_filters_by_namespace_and_label(browser: Any, tmp_path: Path) -> None:
    path = tmp_path / "all.html"
    path.write_text(knetsim("matrix", "-f", "examples/shop", "--include-system", "-o", "html"))
    page = open_page(browser, path.as_uri())
    total = page.locator("#count").inner_text()
    page.select_option("#ns", "shop")
    assert page.get_by_role("rowheader").all_inner_texts()[:3] == [
        "shop/api[Deployment]", "shop/db[StatefulSet]", "shop/web[Deployment]"]
    page.select_option("#ns", "")
    page.fill("#label", "k8s-app=kube-dns")
    assert page.get_by_role("rowheader").all_inner_texts() == ["kube-system/coredns[Deployment]"]
    assert page.locator("#count").inner_text() == "1 of " + total.split(" of ")[1]
    assert page.errors == []


def test_the_service_map_shows_an_empty_service_in_red(browser: Any, tmp_path: Path) -> None:
    path = tmp_path / "typo.html"
    path.write_text(knetsim("matrix", "-f", "examples/broken/selector-typo", "-o", "html"))
    page = open_page(browser, path.as_uri())
    page.get_by_role("button", name="Service map").click()
    row = page.locator("tr[data-service='default/web']")
    assert row.inner_text().startswith("default/web\tClusterIP\t80/TCP")
    assert "no ready endpoints" in row.inner_text()
    assert row.locator("td").first.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(248, 208, 208)"
    ok = page.locator("tr[data-service='default/kubernetes']")
    assert "no ready endpoints" not in ok.inner_text()
    assert page.locator("#gridview").is_hidden()


def test_the_10k_pod_answer_stays_a_virtual_grid(browser: Any, tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import policy_gen

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "all.yaml").write_text(yaml.safe_dump_all(policy_gen.manifests(100, 9, 100), sort_keys=False))
    (tmp_path / "cluster.yaml").write_text("podCIDR: 10.0.0.0/8\nnodeCIDRMask: 12\nmaxPods: 10000\n")
    path = tmp_path / "big.html"
    path.write_text(knetsim("matrix", "-f", str(tmp_path / "in"), "--cluster-config", str(tmp_path / "cluster.yaml"),
                            "-o", "html", "--port", "8001"))
    page = open_page(browser, path.as_uri())
    assert page.locator("#count").inner_text() == "912 of 912 rows"  # 900 Deployments and 12 address ranges
    assert page.locator(".cell").count() < 3000  # only what is in view exists
    page.locator("#grid").evaluate("g => { g.scrollTop = g.scrollHeight; g.scrollLeft = g.scrollWidth; }")
    # A locator wait, not wait_for_function: the page's CSP forbids the eval that one needs.
    page.locator(".rowhead", has_text=re.compile(r"^ns-99/")).first.wait_for()
    page.fill("#label", "app=app-1")
    page.select_option("#ns", "ns-42")
    cell(page, "ns-42/app-1[Deployment] → ns-42/app-1[Deployment]: denied on TCP 8001").click()
    assert "smallest change" in page.locator("#explain").inner_text()
    assert page.errors == []


# --- live, behind the token ----------------------------------------------------------------


# The API server's own live fixture: a knetsim server in a subprocess, with its token.
from tests.apiserver.conftest import live  # noqa: E402, F401


def test_the_live_explorer_is_behind_the_token(live: Any, browser: Any) -> None:  # noqa: F811
    from tests.apiserver.conftest import wait_for

    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}}}}
    assert live.request("POST", "/apis/apps/v1/namespaces/default/deployments", body)[0] == 201
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "typo"},
           "spec": {"selector": {"app": "wbe"}, "ports": [{"port": 80}]}}
    assert live.request("POST", "/api/v1/namespaces/default/services", svc)[0] == 201
    # No token: the API server's 401, as for kubectl.
    assert live.request("GET", "/explorer/", token=None)[0] == 401
    assert live.request("GET", "/explorer/data.json", token="wrong")[0] == 401
    code, data = live.request("GET", "/explorer/data.json")
    assert code == 200 and data["level"] == "workload"
    wait_for(lambda: any(r["name"] == "default/web[Deployment]" for r in live.request(
        "GET", "/explorer/data.json")[1]["rows"]), timeout=20)

    page = open_page(browser, f"{live.url}/explorer/?token={live.token}", ignore_https_errors=True)
    assert page.url == f"{live.url}/explorer/"  # the token left the address bar
    assert "default/web[Deployment]" in page.get_by_role("rowheader").all_inner_texts()
    page.fill("#port", "80")
    cell(page, "default/web[Deployment] → default/web[Deployment]: allowed on TCP 80").click()
    assert "no policy selects it for ingress, so it is not isolated" in page.locator("#explain").inner_text()
    page.get_by_role("button", name="Service map").click()
    assert "no ready endpoints" in page.locator("tr[data-service='default/typo']").inner_text()
    # The cookie works for the explorer only: the API itself still wants the bearer token.
    status = page.evaluate("fetch('/api/v1/namespaces').then(r => r.status)")
    assert status == 401
    assert page.errors == []


# --- the screenshots in docs/ ----------------------------------------------------------------


def test_docs_screenshots_are_made_by_this_browser(shop_page: Any, browser: Any, tmp_path: Path) -> None:
    """Set KNETSIM_UPDATE_SCREENSHOTS=1 to write them into docs/images (they are made here either way)."""
    out = DOCS_IMAGES if os.environ.get("KNETSIM_UPDATE_SCREENSHOTS") else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    page = shop_page
    page.fill("#port", "5432")
    cell(page, "shop/web[Deployment] → shop/db[StatefulSet]: denied on TCP 5432").click()
    page.screenshot(path=str(out / "explorer-grid.png"))
    typo = tmp_path / "typo.html"
    typo.write_text(knetsim("matrix", "-f", "examples/shop", "-f", "examples/broken/selector-typo", "-o", "html"))
    other = open_page(browser, typo.as_uri())
    other.get_by_role("button", name="Service map").click()
    other.screenshot(path=str(out / "explorer-service-map.png"))
    for name in ("explorer-grid.png", "explorer-service-map.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (DOCS_IMAGES / name).exists(), f"docs/images/{name}: run with KNETSIM_UPDATE_SCREENSHOTS=1"
