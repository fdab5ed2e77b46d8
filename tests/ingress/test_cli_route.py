"""``knetsim route``: exit codes, the lines users read, and the JSON shape of docs/ingress.md."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from tests.conftest import EXAMPLES
from tests.helpers import knetsim
from tests.ingress.builders import controller, flatten, ingress, path, rule, service

SHOP = str(EXAMPLES / "shop")
DOCS = EXAMPLES.parent / "docs" / "ingress.md"


def run(*args: str, input: str | None = None):
    return knetsim("route", *args, input=input)


def test_routed_request_exits_0_and_names_ingress_rule_path_backend() -> None:
    result = run("-f", SHOP, "--host", "shop.example.com", "--path", "/api/orders")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "Request:     GET http://shop.example.com/api/orders  (port 80)"
    assert lines[1].startswith("Controller:  class nginx (k8s.io/ingress-nginx), pod ingress-nginx/ingress-nginx-")
    assert "Ingress:     shop/shop" in lines
    assert "Rule:        #0 host shop.example.com" in lines
    assert "Path:        #0 /api (Prefix)" in lines
    assert "Backend:     shop/api:8080 (http), targetPort http, 3 ready endpoint(s)" in lines
    assert "Outcome:     routed" in lines
    other = [line for line in lines if line.startswith("shop/shop")]
    assert other == ["shop/shop   0      shop.example.com   /      Prefix   web:80    "
                     "shorter: / also matches, but /api is longer"]


def test_web_root() -> None:
    result = run("-f", SHOP, "--host", "shop.example.com", "--path", "/", "-o", "json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert (data["backend"]["service"], data["backend"]["port"]) == ("shop/web", 80)


def test_unmatched_host_exits_1_with_404() -> None:
    result = run("-f", SHOP, "--host", "nope.example.com", "--path", "/")
    assert result.exit_code == 1
    assert "Outcome:     not-found (HTTP 404)" in result.output.splitlines()


def test_https_on_host_without_tls_names_fake_certificate() -> None:
    result = run("-f", SHOP, "--host", "shop.example.com", "--path", "/", "--scheme", "https")
    assert result.exit_code == 0
    assert "(port 443)" in result.output.splitlines()[0]
    assert "Kubernetes Ingress Controller Fake Certificate" in result.output


def test_json_shape() -> None:
    data = json.loads(run("-f", SHOP, "--host", "shop.example.com", "--path", "/api/orders", "-o", "json").output)
    assert list(data) == ["request", "outcome", "http_status", "via", "summary", "controller", "server", "match",
                          "backend", "tls", "redirect", "candidates", "notes", "upstream", "response",
                          "upstream_request", "response_headers", "steps", "canary", "burst", "shares"]
    assert data["match"] == {"ingress": "shop/shop", "rule": 0, "host": "shop.example.com", "path_index": 0,
                             "path": "/api", "path_type": "Prefix", "matched_as": "/api/"}
    assert [c["verdict"] for c in data["candidates"]] == ["chosen", "shorter"]


def test_yaml_output_is_loadable() -> None:
    result = run("-f", SHOP, "--host", "shop.example.com", "--path", "/api", "-o", "yaml")
    assert result.exit_code == 0
    assert yaml.safe_load(result.output)["backend"]["service"] == "shop/api"


def test_classless_ingress_from_stdin_exits_1(tmp_path: Path) -> None:
    # Without kind's controller (which watches classless Ingresses), ingress-nginx's default ignores it.
    text = yaml.safe_dump_all(flatten(controller("c1", "k8s.io/ingress-nginx", "nginx"), service("a"),
                                      ingress("i", rule("h.example", path("/", "Prefix", "a")), cls=None)))
    config = tmp_path / "cluster.yaml"
    config.write_text("ingressController: false\n")
    result = run("-f", "-", "--host", "h.example", "--cluster-config", str(config), input=text)
    assert result.exit_code == 1
    assert "this Ingress has no effect: no controller claims it" in result.output


def test_unknown_class_exits_1() -> None:
    result = run("-f", SHOP, "--host", "shop.example.com", "--class", "missing")
    assert result.exit_code == 1
    assert "IngressClass 'missing' not found" in result.output


def test_missing_backend_exits_1() -> None:
    text = yaml.safe_dump_all(flatten(ingress("i", rule("h.example", path("/", "Prefix", "gone")))))
    result = run("-f", "-", "--host", "h.example", input=text)
    assert result.exit_code == 1
    assert "Problem:     Service default/gone not found" in result.output
    assert "Outcome:     backend-missing (HTTP 503)" in result.output


def test_bad_path_and_bad_input_exit_2() -> None:
    assert run("-f", SHOP, "--host", "shop.example.com", "--path", "api").exit_code == 2
    assert run("-f", SHOP, "--path", "/").exit_code == 2  # --host is required
    assert run("-f", "/nonexistent/dir", "--host", "h").exit_code == 2


def test_docs_json_examples_are_current() -> None:
    # docs/ingress.md shows real output; it must not drift from what the command prints.
    blocks = DOCS.read_text().split("```json\n")
    route_doc = json.loads(blocks[1].split("```")[0])
    out = run("-f", SHOP, "--host", "shop.example.com", "--path", "/api/orders", "-o", "json").output
    assert json.loads(out) == route_doc
    findings_doc = json.loads(blocks[2].split("```")[0])
    assert [f["code"] for f in findings_doc] == ["IngressBackendServiceMissing"]
    assert set(findings_doc[0]) == {"code", "severity", "subject", "field", "message", "fix", "layer"}
