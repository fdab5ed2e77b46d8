"""ingress-nginx's regex locations and rewrite-target, as its template writes them.

The anchor is kind's Ingress guide: `/foo(/|$)(.*)` with `rewrite-target: /$2` in front of agnhost
netexec, where `curl localhost/foo/hostname` answers `foo-app` because nginx sends `/hostname`.
"""

from __future__ import annotations

from tests.ingress.builders import cluster, ingress, path, rule, service

from knetsim import Cluster
from knetsim.ingress import route

AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.39"
KIND_GUIDE = f"""
kind: Pod
apiVersion: v1
metadata: {{name: foo-app, labels: {{app: foo}}}}
spec:
  containers: [{{name: foo-app, image: "{AGNHOST}", command: [/agnhost, netexec, --http-port, "8080"]}}]
---
kind: Service
apiVersion: v1
metadata: {{name: foo-service}}
spec: {{selector: {{app: foo}}, ports: [{{port: 8080}}]}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: example-ingress
  annotations: {{nginx.ingress.kubernetes.io/rewrite-target: /$2}}
spec:
  rules:
  - http:
      paths:
      - {{pathType: ImplementationSpecific, path: /foo(/|$)(.*),
         backend: {{service: {{name: foo-service, port: {{number: 8080}}}}}}}}
"""


def test_kinds_guide_rewrites_to_the_captured_rest_and_agnhost_answers_its_name() -> None:
    c = Cluster.from_yaml(KIND_GUIDE)
    result = route(c.state, "localhost", "/foo/hostname")
    assert result.routed and result.backend is not None and result.backend.service == "default/foo-service"
    assert result.upstream == "/hostname"
    assert route(c.state, "localhost", "/FOO").upstream == "/"
    assert route(c.state, "localhost", "/foo/echo?msg=hi").upstream == "/echo?msg=hi"
    assert not route(c.state, "localhost", "/foobar").routed  # (/|$) needs a slash or the end

    t = c.trace("external", "http://localhost/foo/hostname")
    assert t.outcome == "connected" and t.reply is not None and t.reply.body == "foo-app"


def regex_host(annotations: dict[str, str] | None) -> Cluster:
    regex = ingress("regex", rule("h.example", path("/v[0-9]+/items", "ImplementationSpecific", "items")))
    if annotations is not None:
        regex["metadata"]["annotations"] = annotations
    plain = ingress("plain", rule("h.example", path("/api", "Prefix", "api"), path("/exact", "Exact", "api")))
    return cluster(service("items"), service("api"), regex, plain)


def test_one_ingress_with_use_regex_turns_every_path_of_its_host_into_a_regex_prefix() -> None:
    without = regex_host(None)
    assert not route(without.state, "h.example", "/apix").routed
    assert not route(without.state, "h.example", "/API").routed
    assert not route(without.state, "h.example", "/exact/more").routed

    with_regex = regex_host({"nginx.ingress.kubernetes.io/use-regex": "true"})
    for p in ("/apix", "/API", "/exact/more"):  # ~* "^/api", ~* "^/exact": case-insensitive prefixes
        result = route(with_regex.state, "h.example", p)
        assert result.routed and result.backend.service == "default/api", p
    result = route(with_regex.state, "h.example", "/V2/items/7")
    assert result.routed and result.backend.service == "default/items"
    assert any("Ingress default/regex sets use-regex" in n for n in result.notes)
    assert result.upstream == "/V2/items/7"  # no rewrite-target: passed on as sent


def test_regex_locations_are_tried_longest_first() -> None:
    long = path("/shop/.*/checkout", "ImplementationSpecific", "checkout")
    short = path("/shop", "ImplementationSpecific", "shop")
    ing = ingress("i", rule("h.example", short, long))
    ing["metadata"]["annotations"] = {"nginx.ingress.kubernetes.io/use-regex": "true"}
    c = cluster(service("shop"), service("checkout"), ing)
    result = route(c.state, "h.example", "/shop/cart/checkout")
    assert result.backend.service == "default/checkout"
    shorter = next(x for x in result.candidates if x.path == "/shop")
    assert shorter.verdict == "shorter"
    assert route(c.state, "h.example", "/shop/cart").backend.service == "default/shop"


def test_a_rewrite_target_without_captures_replaces_the_whole_path_and_keeps_the_query() -> None:
    ing = ingress("i", rule("h.example", path("/testpath", "Prefix", "test")))
    ing["metadata"]["annotations"] = {"nginx.ingress.kubernetes.io/rewrite-target": "/"}
    c = cluster(service("test"), ing)
    assert route(c.state, "h.example", "/testpath/a/b?x=1").upstream == "/?x=1"
    assert route(c.state, "h.example", "/TestPathX").upstream == "/"


def test_a_path_that_is_no_regex_never_matches_and_is_named() -> None:
    ing = ingress("i", rule("h.example", path("/broken(", "ImplementationSpecific", "a"), path("/", "Prefix", "b")))
    ing["metadata"]["annotations"] = {"nginx.ingress.kubernetes.io/use-regex": "true"}
    c = cluster(service("a"), service("b"), ing)
    result = route(c.state, "h.example", "/broken(")
    assert result.backend.service == "default/b"
    assert any("'/broken(' is not a valid regular expression" in n for n in result.notes)


def test_regex_characters_in_a_prefix_path_are_refused_by_the_controllers_webhook() -> None:
    from knetsim.ingress import ingress_findings

    c = Cluster.from_yaml(KIND_GUIDE.replace("ImplementationSpecific", "Prefix"))
    [finding] = [f for f in ingress_findings(c.state) if f.code == "IngressPathRejected"]
    assert finding.field == "spec.rules[0].http.paths[0].pathType"
    assert finding.message.startswith('admission webhook "validate.nginx.ingress.kubernetes.io" denied the request: '
                                      "ingress contains invalid paths: path /foo(/|$)(.*) cannot be used with "
                                      "pathType Prefix: registry.k8s.io/ingress-nginx/controller:v1.13.0 refuses")
    result = route(c.state, "localhost", "/foo/hostname")
    assert not result.routed and [x.verdict for x in result.candidates] == ["rejected"]


def test_controllers_before_v1_12_accept_regex_characters_in_prefix_paths() -> None:
    from knetsim.ingress import ingress_findings
    from knetsim.ingress.controllers import IngressController
    from knetsim.ingress.webhook import strict_path_validation

    def controller(image: str) -> IngressController:
        return IngressController("k8s.io/ingress-nginx", "nginx", True, (), image)

    assert not strict_path_validation(controller("registry.k8s.io/ingress-nginx/controller:v1.11.3"))
    assert strict_path_validation(controller("registry.k8s.io/ingress-nginx/controller:v1.12.0@sha256:ab"))
    assert not strict_path_validation(controller("traefik:v3.1"))
    clean = Cluster.from_yaml(KIND_GUIDE)
    assert [f.code for f in ingress_findings(clean.state) if f.code == "IngressPathRejected"] == []


def test_a_runaway_regex_is_given_up_on_not_waited_for() -> None:
    """`(a|aa)+$` against a long run of a's backtracks exponentially: the match is bounded, counted as no
    match and named, and the request is answered by the next location."""
    import time

    ing = ingress("i", rule("h.example", path("/(a|aa)+$", "ImplementationSpecific", "a"), path("/", "Prefix", "b")))
    ing["metadata"]["annotations"] = {"nginx.ingress.kubernetes.io/use-regex": "true"}
    c = cluster(service("a"), service("b"), ing)
    started = time.monotonic()
    result = route(c.state, "h.example", "/" + "a" * 60 + "!")
    assert time.monotonic() - started < 5
    assert result.backend.service == "default/b"
    assert any("ran past 50 ms" in n for n in result.notes)
    assert route(c.state, "h.example", "/aaaa").backend.service == "default/a"
