"""The migration check: Ingress → Gateway API conversion, and one request set through both sides.

Given the seeds' shop and the Kubernetes docs' Ingress examples, when converted with `migrate
ingress`, then `migrate check` finds no difference except where HTTPRoute cannot express what
ingress-nginx does (an Ingress wildcard covers one DNS label, resource backends) — and says so;
given the ingress-nginx behaviours HTTPRoute cannot express (regex paths, rewrite-target with
capture groups, ImplementationSpecific, rules without host beside named hosts), then the
conversion and the check list them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from tests.gateway.migration_helpers import backends, docs_example, old_and_new

from knetsim import Cluster
from knetsim.cli.main import cli
from knetsim.migration import check, convert, requests
from knetsim.model.loader import load_paths

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop"
NGINX_ONLY = Path(__file__).parent / "data" / "nginx-only" / "ingress.yaml"


def _differences(cluster: Cluster) -> set[str]:
    return {c.request.url for c in check(cluster.state).differences}


def test_shop_converts_and_routes_every_request_the_same(tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["migrate", "ingress", "-f", str(SHOP)])
    assert out.exit_code == 0, out.output
    (tmp_path / "gateway.yaml").write_text(out.stdout)
    kinds = [d["kind"] for d in yaml.safe_load_all(out.stdout) if d]
    # ingress-nginx's 1m body limit has no Envoy default: a BackendTrafficPolicy on the Gateway carries it.
    assert kinds == ["GatewayClass", "Gateway", "BackendTrafficPolicy", "HTTPRoute"]
    result = CliRunner().invoke(cli, ["migrate", "check", "-f", str(SHOP), "-f", str(tmp_path)])
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[0]
    assert first.startswith("Compared ") and first.endswith("requests through the Ingress side (ingress-nginx) and "
                                                            "the Gateway side: 0 differ.")


def test_request_set_covers_hosts_and_path_boundaries() -> None:
    shop = Cluster.from_paths([str(SHOP)])
    got = {(r.host, r.path) for r in requests(shop.state)}
    for path in ("/api", "/api/", "/api/x", "/apix", "/API", "/", "/zz-unmatched"):
        assert ("shop.example.com", path) in got
    assert ("unnamed.example.invalid", "/api") in got


@pytest.mark.parametrize(("example", "expected"), [
    # rewrite-target turns the location into a case-insensitive regex prefix (~* "^/testpath") in ingress-nginx;
    # the conversion writes it as RegularExpression (?i)/testpath.*, so /testpathx and /TESTPATH agree too.
    ("minimal-ingress.yaml", set()),
    ("simple-fanout-example.yaml", set()),
    ("name-virtual-host-ingress.yaml", set()),
    ("name-virtual-host-ingress-no-third-host.yaml", set()),
    ("tls-example-ingress.yaml", set()),
    ("test-ingress.yaml", set()),
    # An Ingress wildcard covers one DNS label; *.foo.com in an HTTPRoute covers x.y.foo.com too.
    ("ingress-wildcard-host.yaml", {"http://x.y.foo.com/foo", "http://x.y.foo.com/foo/", "http://x.y.foo.com/foo/x"}),
    # Resource backends: ingress-nginx writes no location for them (its default backend answers 404), and the
    # conversion has no backendRef for them either: both sides 404.
    ("ingress-resource-backend.yaml", set()),
])
def test_kubernetes_docs_examples(example: str, expected: set[str]) -> None:
    _objects, both = old_and_new(docs_example(example))
    assert _differences(both) == expected


def test_tls_host_gets_the_explicit_redirect_and_an_https_listener() -> None:
    objects, both = old_and_new(docs_example("tls-example-ingress.yaml"))
    gateway = next(o for o in objects if o["kind"] == "Gateway")
    assert [li["name"] for li in gateway["spec"]["listeners"]] == ["http", "https-https-example-foo-com"]
    redirect = next(o for o in objects if o["metadata"]["name"].endswith("-redirect"))
    assert redirect["spec"]["rules"][0]["filters"][0]["requestRedirect"] == {"scheme": "https", "statusCode": 308}
    answers = {c.request.url: c for c in check(both.state).comparisons
               if c.request.method == "GET" and not c.request.headers and c.burst is None}
    http = answers["http://https-example.foo.com/"]
    # lua_ingress.lua drops the trailing slash of the request URI; a browser reads both Locations alike.
    assert (http.ingress.status, http.ingress.location) == (308, "https://https-example.foo.com")
    assert http.same
    assert answers["https://https-example.foo.com/"].gateway.backend == "default/service1:80"


def test_behaviours_httproute_cannot_express_are_named() -> None:
    docs = list(yaml.safe_load_all(NGINX_ONLY.read_text()))
    _objects, both = old_and_new(docs)
    notes = convert(Cluster.from_yaml(NGINX_ONLY.read_text()).state).notes
    by = {(n.ingress, n.severity, n.message.split(":")[0].split(" ")[0]) for n in notes}
    # Written out: the regex host's paths, the /p(/|$)(.*) → /$2 idiom, ImplementationSpecific as Prefix.
    assert ("default/api-v-regex", "explicit", "/v1(/|$)(.*)") in by
    assert ("default/api-v-regex", "explicit", "rewrite-target") in by
    assert ("default/static", "explicit", "ImplementationSpecific") in by
    assert ("default/static", "inexpressible", "rules") in by
    result = check(both.state)
    # ingress-nginx serves rules without host only for hosts no rule names; the converted route without
    # hostnames also takes the unmatched paths of www.example.com.
    diff = {c.request.url: c for c in result.differences}
    assert diff["http://www.example.com/zz-unmatched"].ingress.status == 404
    assert diff["http://www.example.com/zz-unmatched"].gateway.backend == "default/fallback:80"
    # The idiom's PathPrefix is case-sensitive; nginx's regex is not.
    assert diff["http://api.example.com/V1"].differences == ["backend", "path"]
    subjects = [(c.subject, c.message.split(":")[0]) for c in result.caveats]
    assert ("Ingress default/api-v-regex", "regex paths /v1(/|$)(.*)") in subjects


def test_check_cli_lists_differences_with_both_explanations_and_exits_1(tmp_path: Path) -> None:
    docs = docs_example("ingress-wildcard-host.yaml")
    objects, _ = old_and_new(docs)

    (tmp_path / "old.yaml").write_text(yaml.safe_dump_all([*docs, *backends(docs)]))
    (tmp_path / "new.yaml").write_text(yaml.safe_dump_all(objects))
    result = CliRunner().invoke(cli, ["migrate", "check", "-f", str(tmp_path)])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].endswith("3 differ.")
    row = next(line for line in lines if line.startswith("GET http://x.y.foo.com/foo "))
    assert row.split()[2:] == ["status,", "backend", "404", "→", "default/service2:80", "/foo"]
    why = lines.index("  GET http://x.y.foo.com/foo")
    assert lines[why + 1].startswith("    Ingress: http://x.y.foo.com/foo: no rule path matched")
    assert lines[why + 2].startswith("    Gateway: GET http://x.y.foo.com/foo → HTTPRoute "
                                     "default/ingress-wildcard-host")
    data = json.loads(CliRunner().invoke(cli, ["migrate", "check", "-f", str(tmp_path), "-o", "json"]).stdout)
    assert len(data["differences"]) == 3 and data["requests"] == len(data["same"]) + 3


def test_migrate_ingress_json_and_skipped_ingresses() -> None:
    shop_docs = [d.body for d in load_paths([str(SHOP)]).documents]
    other = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
             "metadata": {"name": "other", "namespace": "shop"},
             "spec": {"ingressClassName": "traefik", "rules": [{"host": "t.example.com", "http": {"paths": [
                 {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}
             ]}}]}}
    c = Cluster.from_yaml(yaml.safe_dump_all([*shop_docs, other]))
    result = convert(c.state)
    skipped = [n for n in result.notes if n.severity == "skipped"]
    assert [n.ingress for n in skipped] == ["shop/other"]
    assert all(o["metadata"].get("annotations", {}).get("knetsim.io/converted-from") != "Ingress shop/other"
               for o in result.objects)
