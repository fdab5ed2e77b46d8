"""ingress_findings: each problem on a broken manifest, and its fix applied makes it go away.

The fix of most findings is a `kubectl patch --type json`; the tests apply that very patch
to the manifest, rebuild the cluster and require no finding and a routed request.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from tests.ingress.builders import backend, cluster, controller, ingress, ingress_class, path, rule, service

from knetsim.cluster.config import ClusterConfig
from knetsim.ingress import ingress_findings, route

HOST = "h.example"


def _apply_patch(doc: dict[str, Any], fix: str) -> dict[str, Any]:
    ops = json.loads(re.search(r"-p '(.*)'$", fix).group(1))
    out = copy.deepcopy(doc)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = out
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last = parts[-1]
        if op["op"] == "remove":
            del parent[last]
        else:
            parent[int(last) if isinstance(parent, list) else last] = op["value"]
    return out


def _codes(c) -> list[str]:
    return [f.code for f in ingress_findings(c.state)]


BROKEN: dict[str, tuple[list, dict[str, Any], str, str]] = {
    # code: (other docs, the broken Ingress, field, message fragment)
    "IngressNoClass": (  # with ingress-nginx's default flags: kind's own controller watches classless Ingresses
        [service("web"), controller("c1", "k8s.io/ingress-nginx", "nginx"),
         ingress_class("nginx", "k8s.io/ingress-nginx")],
        ingress("i", rule(HOST, path("/", "Prefix", "web")), cls=None),
        "spec.ingressClassName", "this Ingress has no effect: no controller claims it"),
    "IngressClassNotFound": (
        [service("web")], ingress("i", rule(HOST, path("/", "Prefix", "web")), cls="ngnix"),
        "spec.ingressClassName", "IngressClass 'ngnix' does not exist"),
    "IngressAnnotationNoController": (
        [service("web")], ingress("i", rule(HOST, path("/", "Prefix", "web")), cls=None, annotation="traefik"),
        "metadata.annotations[kubernetes.io/ingress.class]", "matches no running controller's --ingress-class"),
    "IngressBackendServiceMissing": (
        [service("web")], ingress("i", rule(HOST, path("/", "Prefix", "wbe"))),
        "spec.rules[0].http.paths[0].backend.service.name", "Service default/wbe not found; did you mean 'web'?"),
    "IngressBackendPortMissing": (
        [service("web", ("http", 80))], ingress("i", rule(HOST, path("/", "Prefix", "web", 8080))),
        "spec.rules[0].http.paths[0].backend.service.port", "Service default/web has no port 8080"),
}

CONFIG = {"IngressNoClass": ClusterConfig(ingress_controller=False)}


@pytest.mark.parametrize("code", sorted(BROKEN))
def test_finding_and_its_fix(code: str) -> None:
    docs, broken, field, fragment = BROKEN[code]
    config = CONFIG.get(code)
    c = cluster(*docs, broken, config=config)
    [finding] = ingress_findings(c.state)
    assert (finding.code, finding.severity, finding.subject, finding.field) == (code, "error", "Ingress default/i",
                                                                              field)
    assert fragment in finding.message
    assert finding.to_dict()["layer"] == "ingress"
    assert not route(c.state, HOST, "/").routed
    fixed = cluster(*docs, _apply_patch(broken, finding.fix), config=config)
    assert ingress_findings(fixed.state) == []
    assert route(fixed.state, HOST, "/").routed


def test_named_port_typo_fix_uses_the_close_name() -> None:
    c = cluster(service("web", ("http", 80), ("metrics", 9090)),
                ingress("i", rule(HOST, path("/", "Prefix", "web", "htpt"))))
    [finding] = ingress_findings(c.state)
    assert finding.code == "IngressBackendPortMissing" and '"value":{"name":"http"}' in finding.fix


def test_class_without_running_controller() -> None:
    c = cluster(ingress_class("gce", "k8s.io/ingress-gce"), service("web"),
                ingress("i", rule(HOST, path("/", "Prefix", "web")), cls="gce"))
    [finding] = ingress_findings(c.state)
    assert finding.code == "IngressClassNoController"
    assert "k8s.io/ingress-gce" in finding.message and "ingressClassName" in finding.fix


def test_default_backend_problems_are_found_too() -> None:
    c = cluster(ingress("i", default=backend("gone")))
    [finding] = ingress_findings(c.state)
    assert (finding.code, finding.field) == ("IngressBackendServiceMissing", "spec.defaultBackend.service.name")


def test_resource_backend_is_info() -> None:
    res = {"resource": {"apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "b"}}
    c = cluster(ingress("i", default=res))
    [finding] = ingress_findings(c.state)
    assert (finding.code, finding.severity) == ("IngressResourceBackend", "info")


def test_shadowed_duplicate_path_is_a_warning() -> None:
    c = cluster(service("a"), service("b"),
                ingress("old", rule(HOST, path("/x", "Prefix", "a")), created="2024-01-01T00:00:00Z"),
                ingress("new", rule(HOST, path("/x", "Prefix", "b")), created="2025-01-01T00:00:00Z"))
    [finding] = ingress_findings(c.state)
    assert (finding.code, finding.severity, finding.subject) == ("IngressPathShadowed", "warning",
                                                                 "Ingress default/new")


def test_shop_is_clean_and_namespace_filter(shop) -> None:
    assert ingress_findings(shop.state) == []
    c = cluster(service("web"), ingress("i", rule(HOST, path("/", "Prefix", "web")), cls=None))
    assert _codes(c) == []  # kind's controller serves Ingresses without class
    c = cluster(*BROKEN["IngressNoClass"][0], ingress("i", rule(HOST, path("/", "Prefix", "web")), cls=None),
                config=CONFIG["IngressNoClass"])
    assert _codes(c) == ["IngressNoClass"]
    assert ingress_findings(c.state, namespace="other") == []


def test_controller_without_ready_pod() -> None:
    # Given the class's only controller pod is not Ready, then the Ingress is claimed but not served.
    docs = controller("c1", "example.com/x", "x")
    docs[1]["spec"]["nodeName"] = "worker"
    docs[1]["status"] = {"phase": "Running", "podIP": "10.244.1.50",
                         "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}]}
    c = cluster(docs, ingress_class("x", "example.com/x"), service("a"),
                ingress("i", rule(HOST, path("/", "Prefix", "a")), cls="x"))
    [finding] = ingress_findings(c.state)
    assert (finding.code, finding.severity) == ("IngressControllerNotReady", "warning")
    assert "other-ingress/c1: ContainersNotReady" in finding.message
    assert finding.fix.endswith("kubectl -n other-ingress describe pod c1")
    result = route(c.state, HOST, "/", class_name="x")
    assert result.outcome == "no-controller" and "has no ready pod" in result.summary


def test_annotation_findings_name_the_annotation_and_its_effect() -> None:
    c = cluster(service("web"),
                ingress("bad-range", rule("a.example", path("/", "Prefix", "web")),
                        annotations={"whitelist-source-range": "10.0.0.0/8,nope", "rewrite-targets": "/x"}),
                ingress("snip", rule("b.example", path("/", "Prefix", "web")),
                        annotations={"configuration-snippet": "return 418;"}),
                ingress("lost-canary", rule("c.example", path("/", "Prefix", "web")),
                        annotations={"canary": "true", "canary-weight": "10"}))
    found = {(f.subject, f.code): f for f in ingress_findings(c.state)}
    denied = found[("Ingress default/bad-range", "IngressAnnotationDenied")]
    assert denied.field == "metadata.annotations[nginx.ingress.kubernetes.io/whitelist-source-range]"
    assert "503" in denied.message
    unknown = found[("Ingress default/bad-range", "IngressAnnotationUnknown")]
    assert "did you mean nginx.ingress.kubernetes.io/rewrite-target?" in unknown.message
    refused = found[("Ingress default/snip", "IngressSnippetRefused")]
    assert "Snippet directives are disabled by the Ingress administrator" in refused.message
    assert "allow-snippet-annotations" in refused.fix
    assert ("Ingress default/lost-canary", "IngressCanaryUnmatched") in found


def test_a_canary_is_no_shadowed_path_but_reaches_every_path_of_its_upstream() -> None:
    # Given a canary for shop.example / and another host whose path proxies to the same Service port.
    c = cluster(service("web"), service("web-v2"), service("admin"),
                ingress("shop", rule("shop.example", path("/", "Prefix", "web"))),
                ingress("shop-canary", rule("shop.example", path("/", "Prefix", "web-v2")),
                        annotations={"canary": "true", "canary-by-header": "X-Canary"}),
                ingress("admin", rule("admin.example", path("/", "Prefix", "web"))),
                ingress("reports", rule("admin.example", path("/reports", "Prefix", "admin"))))
    found = {(f.subject, f.code): f for f in ingress_findings(c.state)}
    # Then the canary repeating the path is not reported as a shadowed duplicate...
    assert not any(code == "IngressPathShadowed" for _, code in found)
    # ...but the other host's path on the same upstream is named, as ingress-nginx's balancer serves it the canary.
    shared = found[("Ingress default/shop-canary", "IngressCanaryShared")]
    assert "upstream default-web-80" in shared.message
    assert "admin.example/ (Ingress default/admin)" in shared.message and "reports" not in shared.message
    answer = route(c.state, "admin.example", "/", headers=(("X-Canary", "always"),))
    assert answer.upstream_request is not None and answer.upstream_request.service == "default/web-v2"
