"""``knetsim verify nginx``: knetsim's Ingress side against a real nginx running ingress-nginx's configuration.

Given the shop, the Kubernetes docs' Ingress examples, the blog's five behaviours, the annotated store
(examples/) and one input per annotation family (tests/nginxproof/data), when the generated request
set goes to Debian's nginx and to ``knetsim route``, then no compared request disagrees — and what
ingress-nginx decides in Lua is listed, not compared. A configuration made to differ is caught.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from tests.gateway.migration_helpers import backends, docs_example, secrets

from knetsim import Cluster
from knetsim.cli.main import cli
from knetsim.nginxproof import format_report, missing_requirements, verify

MISSING = missing_requirements()
pytestmark = pytest.mark.skipif(bool(MISSING), reason="verify nginx cannot run here: " + "; ".join(MISSING))

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
BACKENDS = DATA / "backends.yaml"


def _family(name: str) -> Cluster:
    return Cluster.from_paths([str(BACKENDS), str(DATA / f"{name}.yaml")])


@pytest.mark.parametrize(("family", "lua"), [
    ("redirects", {"the from-to-www redirect server's Location (ngx_srv_redirect.lua)",
                   "the redirect to https (lua_ingress.lua)"}),
    ("rewrites", set()),
    ("access", set()),
    ("cors", set()),
    ("limits", set()),
    ("backend", {"the canary decision (balancer.lua)", "affinity (the Lua balancer)",
                 "upstream-hash-by (the Lua balancer)",
                 "a backend speaking TLS or gRPC (the harness's backends speak plain HTTP/1.1)"}),
])
def test_each_annotation_family_agrees_with_nginx(family: str, lua: set[str]) -> None:
    report = verify(_family(family).state)
    assert report.disagree == [], format_report(report)
    assert report.agree >= 20
    assert {c.why for c in report.not_proven} == lua


def test_the_shop_the_blog_and_the_migration_examples_agree() -> None:
    for example in ("shop", "ingress-blog", "gateway/migration/old"):
        report = verify(Cluster.from_paths([str(ROOT / "examples" / example)]).state)
        assert report.disagree == [] and report.agree == len(report.checks), format_report(report)


def test_the_annotated_store_agrees_except_what_lua_decides() -> None:
    report = verify(Cluster.from_paths([str(ROOT / "examples" / "ingress-nginx")]).state)
    assert report.disagree == [] and report.agree >= 25, format_report(report)
    assert {c.why for c in report.not_proven} == {
        "the canary decision (balancer.lua)", "the from-to-www redirect server's Location (ngx_srv_redirect.lua)",
        "auth-signin's redirect (set_escape_uri, a module a stock nginx lacks)"}


@pytest.mark.parametrize("example", ["minimal-ingress.yaml", "simple-fanout-example.yaml",
                                     "name-virtual-host-ingress.yaml", "tls-example-ingress.yaml",
                                     "ingress-wildcard-host.yaml", "ingress-resource-backend.yaml"])
def test_the_kubernetes_docs_examples_agree(example: str) -> None:
    docs = docs_example(example)
    cluster = Cluster.from_yaml(yaml.safe_dump_all([*docs, *backends(docs), *secrets(docs)]))
    report = verify(cluster.state)
    assert report.disagree == [], format_report(report)


def test_a_configuration_that_differs_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    verify_module = importlib.import_module("knetsim.nginxproof.verify")  # the module, not the function
    real = verify_module.render

    def wrong(model, plan):  # type: ignore[no-untyped-def]
        return real(model, plan).replace("return 308 https://new.example.com/landing", "return 302 https://x.example/")

    monkeypatch.setattr(verify_module, "render", wrong)
    report = verify(_family("redirects").state)
    changed = {c.request.host for c in report.disagree}
    assert changed == {"old.example.com"}
    assert all({"status", "location"} <= set(c.differences) for c in report.disagree)


def test_cli_report_json_and_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["verify", "nginx", "-f", str(ROOT / "examples" / "shop")])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1] == "18 requests: 18 agree, 0 disagree, 0 decided in Lua by ingress-nginx " \
                                            "(not compared)"
    data = json.loads(runner.invoke(cli, ["verify", "nginx", "-f", str(BACKENDS), "-f", str(DATA / "backend.yaml"),
                                          "-o", "json"]).output)
    assert data["disagree"] == [] and data["agree"] > 0
    assert {c["why"] for c in data["not_proven"]} >= {"the canary decision (balancer.lua)"}
    conf = runner.invoke(cli, ["verify", "nginx", "-f", str(ROOT / "examples" / "shop"), "-o", "conf"])
    assert conf.exit_code == 0 and 'server_name "shop.example.com";' in conf.output
    assert conf.output == runner.invoke(cli, ["verify", "nginx", "-f", str(ROOT / "examples" / "shop"),
                                              "-o", "conf"]).output
    kept = runner.invoke(cli, ["verify", "nginx", "-f", str(ROOT / "examples" / "shop"), "--keep", str(tmp_path)])
    assert kept.exit_code == 0 and (tmp_path / "nginx.conf").exists()
