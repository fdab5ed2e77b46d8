"""knetsim's own routing tests: ingress-nginx's merge, default backends, ports, classes and TLS.

Conventions: see builders.py (namespace default, one Ready pod per backend Service, the kind
cluster's ingress-nginx controller serving class nginx). Each test opens with Given … then ….
"""

from __future__ import annotations

import json
import random

import pytest
from tests.ingress.builders import (
    backend,
    cluster,
    controller,
    ingress,
    ingress_class,
    path,
    rule,
    secret,
    service,
)

from knetsim.cluster.config import ClusterConfig
from knetsim.ingress import RouteError, route

OLD, NEW = "2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z"


def verdicts(result) -> dict[tuple[str, str | None], str]:
    return {(c.ingress, c.path): c.verdict for c in result.candidates}


# --- the shop example -------------------------------------------------------------------


@pytest.mark.parametrize(("request_path", "service", "port", "port_name"), [
    ("/api/orders", "shop/api", 8080, "http"),
    ("/api", "shop/api", 8080, "http"),
    ("/", "shop/web", 80, "http"),
    ("/apiary", "shop/web", 80, "http"),  # /api is not a string prefix match
    ("/cart/checkout", "shop/web", 80, "http"),
])
def test_shop_example(shop, request_path: str, service: str, port: int, port_name: str) -> None:
    result = route(shop.state, "shop.example.com", request_path)
    assert result.routed, result.summary
    assert (result.backend.service, result.backend.port, result.backend.port_name) == (service, port, port_name)
    assert result.backend.ready_endpoints and result.backend.ready_endpoints > 0
    assert result.match.ingress == "shop/shop"
    assert result.controller.class_name == "nginx"
    assert result.controller.controller == "k8s.io/ingress-nginx"
    assert result.controller.pod.startswith("ingress-nginx/ingress-nginx-controller-")
    assert result.controller.pod_ip.startswith("10.244.")


def test_shop_other_host_is_404_and_says_why(shop) -> None:
    result = route(shop.state, "www.example.com", "/api/orders")
    assert (result.outcome, result.http_status, result.server) == ("not-found", 404, "_")
    assert {c.verdict for c in result.candidates} == {"host-mismatch"}


def test_host_header_port_and_case_are_ignored(shop) -> None:
    result = route(shop.state, "Shop.Example.COM:8443", "/api/x")
    assert result.routed and result.backend.service == "shop/api"


# --- precedence across Ingresses of one class ---------------------------------------------


def test_longest_path_wins_across_ingresses() -> None:
    # Given /api in one Ingress and /api/v2 in another for the same host, then /api/v2/x goes to the longer.
    c = cluster(service("a"), service("b"),
                ingress("one", rule("h.example", path("/api", "Prefix", "a"))),
                ingress("two", rule("h.example", path("/api/v2", "Prefix", "b"))))
    result = route(c.state, "h.example", "/api/v2/x")
    assert result.backend.service == "default/b"
    assert verdicts(result)[("default/one", "/api")] == "shorter"
    assert route(c.state, "h.example", "/api/v3").backend.service == "default/a"


def test_exact_over_prefix_at_equal_length_across_ingresses() -> None:
    c = cluster(service("a"), service("b"),
                ingress("prefix", rule("h.example", path("/foo", "Prefix", "a"))),
                ingress("exact", rule("h.example", path("/foo", "Exact", "b"))))
    assert route(c.state, "h.example", "/foo").backend.service == "default/b"
    assert route(c.state, "h.example", "/foo/bar").backend.service == "default/a"


def test_same_path_oldest_ingress_wins_and_the_other_is_a_duplicate() -> None:
    # Given two Ingresses with the same host/path/type, then ingress-nginx keeps the older one's location.
    c = cluster(service("a"), service("b"),
                ingress("zz-old", rule("h.example", path("/x", "Prefix", "a")), created=OLD),
                ingress("aa-new", rule("h.example", path("/x", "Prefix", "b")), created=NEW))
    result = route(c.state, "h.example", "/x")
    assert result.match.ingress == "default/zz-old"
    dup = next(c for c in result.candidates if c.ingress == "default/aa-new")
    assert dup.verdict == "duplicate" and "default/zz-old is older" in dup.reason


def test_same_age_ties_go_to_namespace_name_descending() -> None:
    # ingress-nginx sortIngressSlice: equal creationTimestamp → `in > jn`, so b/x is merged before a/x.
    c = cluster(service("s", ns="a"), service("s", ns="b"),
                ingress("x", rule("h.example", path("/", "Prefix", "s")), ns="a"),
                ingress("x", rule("h.example", path("/", "Prefix", "s")), ns="b"))
    result = route(c.state, "h.example", "/")
    assert result.match.ingress == "b/x"
    assert "namespace/name descending" in next(c for c in result.candidates if c.ingress == "a/x").reason


def test_missing_timestamp_counts_as_newest() -> None:
    c = cluster(service("a"), service("b"),
                ingress("a-now", rule("h.example", path("/", "Prefix", "a"))),
                ingress("b-stamped", rule("h.example", path("/", "Prefix", "b")), created=NEW))
    assert route(c.state, "h.example", "/").match.ingress == "default/b-stamped"


def test_host_rules_shadow_catch_all_rules() -> None:
    # Given a rule without host serving /special, and a host rule for h.example with only /,
    # then h.example/special goes to the host's /: the catch-all server is never consulted.
    c = cluster(service("catch"), service("host"),
                ingress("catch", rule(None, path("/special", "Prefix", "catch"))),
                ingress("host", rule("h.example", path("/", "Prefix", "host"))))
    result = route(c.state, "h.example", "/special")
    assert result.backend.service == "default/host"
    assert verdicts(result)[("default/catch", "/special")] == "host-shadowed"
    # Any other host reaches the catch-all rules.
    assert route(c.state, "other.example", "/special").backend.service == "default/catch"


def test_exact_host_beats_wildcard() -> None:
    c = cluster(service("w"), service("e"),
                ingress("w", rule("*.foo.com", path("/", "Prefix", "w"))),
                ingress("e", rule("bar.foo.com", path("/", "Prefix", "e"))))
    result = route(c.state, "bar.foo.com", "/")
    assert result.backend.service == "default/e"
    assert verdicts(result)[("default/w", "/")] == "host-shadowed"
    assert route(c.state, "baz.foo.com", "/").backend.service == "default/w"


# --- default backends -------------------------------------------------------------------------


def test_catch_all_default_backend_serves_unmatched_hosts_and_paths() -> None:
    # Given an Ingress with only spec.defaultBackend (docs: "single Service Ingress").
    c = cluster(service("dflt"), service("a"),
                ingress("catch", default=backend("dflt")),
                ingress("a", rule(None, path("/a", "Prefix", "a"))))
    result = route(c.state, "anything.example", "/zzz")
    assert (result.outcome, result.via) == ("routed", "ingress-default-backend")
    assert result.backend.service == "default/dflt" and result.match.rule is None
    assert route(c.state, "anything.example", "/a/b").backend.service == "default/a"


def test_default_backend_of_an_ingress_with_rules_serves_only_its_hosts() -> None:
    # ingress-nginx createServers: a defaultBackend becomes the root default of the servers that
    # Ingress creates; it is the catch-all only on an Ingress without rules.
    c = cluster(service("dflt"), service("a"),
                ingress("mixed", rule("h.example", path("/a", "Prefix", "a")), default=backend("dflt")))
    in_host = route(c.state, "h.example", "/other")
    assert in_host.backend.service == "default/dflt" and in_host.via == "ingress-default-backend"
    other = route(c.state, "other.example", "/other")
    assert (other.outcome, other.http_status) == ("not-found", 404)
    unused = next(c for c in other.candidates if c.rule is None)
    assert unused.verdict == "not-used" and "only to the hosts of its own rules" in unused.reason


def test_older_ingress_owns_the_host_default() -> None:
    c = cluster(service("dflt"), service("a"), service("b"),
                ingress("old", rule("h.example", path("/a", "Prefix", "a")), created=OLD),
                ingress("new", rule("h.example", path("/b", "Prefix", "b")), default=backend("dflt"), created=NEW))
    result = route(c.state, "h.example", "/zzz")
    assert result.outcome == "not-found"
    unused = next(c for c in result.candidates if c.ingress == "default/new" and c.rule is None)
    assert "created by Ingress default/old" in unused.reason


def test_no_match_no_default_is_controller_404() -> None:
    c = cluster(service("a"), ingress("a", rule("h.example", path("/aaa", "Prefix", "a"))))
    result = route(c.state, "h.example", "/ccc")
    assert (result.outcome, result.http_status, result.via) == ("not-found", 404, "controller-default-backend")
    assert result.backend is None and result.match is None


# --- backends: ports, missing objects, resources ----------------------------------------------


@pytest.mark.parametrize(("port", "want_port", "want_name"), [
    ("web", 8080, "web"),
    (8080, 8080, "web"),
    ("admin", 9000, "admin"),
])
def test_backend_port_by_name_or_number(port: int | str, want_port: int, want_name: str) -> None:
    c = cluster(service("app", ("web", 8080), ("admin", 9000)),
                ingress("i", rule("h.example", path("/", "Prefix", "app", port))))
    result = route(c.state, "h.example", "/")
    assert result.routed
    assert (result.backend.port, result.backend.port_name, result.backend.requested_port) == (
        want_port, want_name, str(port))


@pytest.mark.parametrize(("svc_name", "port", "problem"), [
    ("ap", 8080, "Service default/ap not found; did you mean 'app'?"),
    ("app", 8081, "Service default/app has no port 8081 (ports: web 8080/TCP, admin 9000/TCP)"),
    ("app", "wbe", "Service default/app has no port named 'wbe' (ports: web 8080/TCP, admin 9000/TCP); "
                   "did you mean 'web'?"),
])
def test_missing_service_or_port_is_reported_as_503(svc_name: str, port: int | str, problem: str) -> None:
    c = cluster(service("app", ("web", 8080), ("admin", 9000)),
                ingress("i", rule("h.example", path("/", "Prefix", svc_name, port))))
    result = route(c.state, "h.example", "/")
    assert (result.outcome, result.http_status) == ("backend-missing", 503)
    assert result.backend.problem == problem


def test_port_number_that_is_a_target_port_is_named_as_such() -> None:
    docs = service("app", ("http", 80))
    docs[0]["spec"]["ports"][0]["targetPort"] = 8080
    c = cluster(docs, ingress("i", rule("h.example", path("/", "Prefix", "app", 8080))))
    problem = route(c.state, "h.example", "/").backend.problem
    assert "8080 is the targetPort of Service port 80" in problem


def test_resource_backend_is_skipped_as_ingress_nginx_skips_it() -> None:
    # getBackendServers: "does not contain a service backend, using default backend": no location is written.
    res = {"resource": {"apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "icon-assets"}}
    c = cluster(ingress("i", rule(None, {"path": "/icons", "pathType": "ImplementationSpecific", "backend": res})))
    result = route(c.state, "h.example", "/icons/a.png")
    assert result.outcome == "not-found" and result.http_status == 404
    [cand] = [c for c in result.candidates if c.path == "/icons"]
    assert cand.verdict == "not-used" and "resource backend" in cand.reason


def test_service_without_ready_endpoints_routes_but_answers_503() -> None:
    c = cluster(service("a", pod=False), ingress("i", rule("h.example", path("/", "Prefix", "a"))))
    result = route(c.state, "h.example", "/")
    assert result.routed and result.http_status == 503 and result.backend.ready_endpoints == 0
    assert any("no ready endpoints" in n for n in result.notes)


def test_external_name_backend() -> None:
    ext = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext", "namespace": "default"},
           "spec": {"type": "ExternalName", "externalName": "api.example.net"}}
    c = cluster(ext, ingress("i", rule("h.example", path("/", "Prefix", "ext", 443))))
    result = route(c.state, "h.example", "/")
    assert result.routed and result.backend.external_name == "api.example.net" and result.backend.port == 443


def test_implementation_specific_is_prefix_as_ingress_nginx_stores_it() -> None:
    # ingress-nginx's store turns ImplementationSpecific into Prefix (SetDefaultNGINXPathType): /foo is written as
    # `location /foo/` and `location = /foo`, so /foobar is not under it.
    c = cluster(service("a"), service("b"), ingress("i", rule("h.example", path("/foo", "ImplementationSpecific", "a")),
                                           created="2020-01-01T00:00:00Z"),
                ingress("j", rule("h.example", path("/foo", "Prefix", "b")), created="2030-01-01T00:00:00Z"))
    hit = route(c.state, "h.example", "/foo/bar")
    assert hit.routed and hit.match.matched_as == "/foo/" and hit.backend.service == "default/a"
    assert any("stores such a path as Prefix" in n for n in hit.notes)
    assert route(c.state, "h.example", "/foo").match.matched_as == "= /foo"
    assert route(c.state, "h.example", "/foobar").outcome == "not-found"
    # The same path as Prefix in a later Ingress is the same location: ingress-nginx keeps the first.
    assert [c.verdict for c in hit.candidates if c.ingress == "default/j"] == ["duplicate"]


# --- which controller ---------------------------------------------------------------------------


def test_kinds_controller_serves_an_ingress_without_class() -> None:
    # kind's ingress-nginx runs with --watch-ingress-without-class=true (its provider manifest).
    c = cluster(service("a"), ingress("i", rule("h.example", path("/", "Prefix", "a")), cls=None))
    result = route(c.state, "h.example", "/")
    assert result.routed and result.backend is not None and result.backend.service == "default/a"
    assert result.controller.controller == "k8s.io/ingress-nginx"


NO_KIND_CONTROLLER = ClusterConfig(ingress_controller=False)


def test_ingress_without_class_has_no_effect() -> None:
    # A controller started without --watch-ingress-without-class (ingress-nginx's default) ignores it.
    c = cluster(controller("c1", "k8s.io/ingress-nginx", "nginx"), service("a"),
                ingress("i", rule("h.example", path("/", "Prefix", "a")), cls=None), config=NO_KIND_CONTROLLER)
    result = route(c.state, "h.example", "/")
    assert result.outcome == "not-found"
    [cand] = result.candidates
    assert cand.verdict == "no-controller"
    assert "this Ingress has no effect: no controller claims it" in cand.reason
    assert result.notes[0].startswith("Ingress default/i has a matching path /, but this Ingress has no effect")


def test_default_class_claims_ingress_without_class() -> None:
    c = cluster(ingress_class("main", "k8s.io/ingress-nginx", default=True), service("a"),
                ingress("i", rule("h.example", path("/", "Prefix", "a")), cls=None))
    result = route(c.state, "h.example", "/")
    assert result.routed
    assert result.controller.class_name == "main" and result.controller.selected_by == "default IngressClass main"


def test_deprecated_annotation_is_honoured() -> None:
    c = cluster(service("a"), ingress("i", rule("h.example", path("/", "Prefix", "a")), cls=None,
                                      annotation="nginx"))
    assert route(c.state, "h.example", "/").routed
    assert any(n.code == "IngressClassAnnotation" for n in c.notices)


def test_annotation_for_another_controller_is_not_claimed() -> None:
    c = cluster(service("a"), ingress("i", rule("h.example", path("/", "Prefix", "a")), cls=None,
                                      annotation="traefik"))
    [cand] = route(c.state, "h.example", "/").candidates
    assert cand.verdict == "no-controller" and "--ingress-class=nginx" in cand.reason


def test_class_whose_controller_does_not_run() -> None:
    c = cluster(ingress_class("gce", "k8s.io/ingress-gce"), service("a"),
                ingress("i", rule("h.example", path("/", "Prefix", "a")), cls="gce"))
    assert route(c.state, "h.example", "/").candidates[0].verdict == "no-controller"
    result = route(c.state, "h.example", "/", class_name="gce")
    assert result.outcome == "no-controller" and result.controller is None
    assert "no running controller implements" in result.summary


def test_unknown_class_request() -> None:
    c = cluster(service("a"), ingress("i", rule("h.example", path("/", "Prefix", "a"))))
    result = route(c.state, "h.example", "/", class_name="nope")
    assert result.outcome == "no-controller" and "IngressClass 'nope' not found" in result.summary


def test_class_filter_selects_the_controllers_view() -> None:
    # Given two controllers and one Ingress per class on the same host, then --class picks which one answers.
    c = cluster(controller("other-controller", "example.com/other", "other"),
                ingress_class("other", "example.com/other"),
                service("a"), service("b"),
                ingress("by-nginx", rule("h.example", path("/", "Prefix", "a"))),
                ingress("by-other", rule("h.example", path("/", "Prefix", "b")), cls="other"))
    via_nginx = route(c.state, "h.example", "/", class_name="nginx")
    assert via_nginx.backend.service == "default/a"
    assert verdicts(via_nginx)[("default/by-other", "/")] == "class-mismatch"
    via_other = route(c.state, "h.example", "/", class_name="other")
    assert via_other.backend.service == "default/b"
    assert via_other.controller.pod == "other-ingress/other-controller"
    unfiltered = route(c.state, "h.example", "/")
    assert any("pass --class" in n for n in unfiltered.notes)


def test_watch_without_class_claims_classless_ingresses() -> None:
    c = cluster(controller("loose", "example.com/loose", "loose", extra_args=("--watch-ingress-without-class",)),
                service("a"), ingress("i", rule("h.example", path("/", "Prefix", "a")), cls=None))
    result = route(c.state, "h.example", "/", class_name="loose")
    assert result.routed and result.controller.controller == "example.com/loose"


def test_no_controller_in_the_cluster() -> None:
    c = cluster(service("a"), ingress("i", rule("h.example", path("/", "Prefix", "a"))),
                config=ClusterConfig(ingress_controller=False))
    result = route(c.state, "h.example", "/")
    assert result.outcome == "no-controller"
    assert result.candidates[0].verdict == "no-controller"


# --- TLS ----------------------------------------------------------------------------------------------


def _tls_cluster(with_secret: bool = True):
    docs = [service("a"), ingress("i", rule("secure.example", path("/", "Prefix", "a")),
                                  rule("plain.example", path("/", "Prefix", "a")),
                                  tls=[{"hosts": ["secure.example"], "secretName": "secure-tls"}])]
    if with_secret:
        docs.append(secret("secure-tls"))
    return cluster(*docs)


def test_https_to_a_tls_host_terminates_at_the_ingress() -> None:
    result = route(_tls_cluster().state, "secure.example", "/", scheme="https")
    assert result.routed and result.request.port == 443
    assert (result.tls.terminated, result.tls.certificate, result.tls.secret) == (True, "secret",
                                                                                  "default/secure-tls")


def test_https_to_a_host_without_tls_gets_the_fake_certificate() -> None:
    result = route(_tls_cluster().state, "plain.example", "/", scheme="https")
    assert result.routed and result.tls.certificate == "fake"
    assert "Kubernetes Ingress Controller Fake Certificate" in result.tls.detail


def test_tls_secret_missing_from_input() -> None:
    result = route(_tls_cluster(with_secret=False).state, "secure.example", "/", scheme="https")
    assert result.tls.certificate == "secret-not-found"


def test_http_to_a_tls_host_is_redirected() -> None:
    result = route(_tls_cluster().state, "secure.example", "/a?b=1", scheme="http")
    assert result.outcome == "redirect" and result.http_status == 308
    assert result.redirect == "https://secure.example/a?b=1"
    assert result.response.header("Location") == result.redirect
    assert route(_tls_cluster().state, "plain.example", "/", scheme="http").redirect is None


def test_the_redirect_to_https_drops_the_trailing_slash() -> None:
    # lua_ingress.lua redirect_to_https: without preserve-trailing-slash the request URI loses its last "/".
    assert route(_tls_cluster().state, "secure.example", "/a/", scheme="http").redirect == "https://secure.example/a"
    assert route(_tls_cluster().state, "secure.example:8080", "/", scheme="http").redirect == \
        "https://secure.example"


# --- input and determinism ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["api", ""])
def test_relative_path_is_an_error(shop, bad: str) -> None:
    with pytest.raises(RouteError):
        route(shop.state, "shop.example.com", bad)


def test_path_is_normalized_like_nginx(shop) -> None:
    result = route(shop.state, "shop.example.com", "//api/./v1/../orders?x=1")
    assert result.request.normalized_path == "/api/orders"
    assert result.backend.service == "shop/api"


def test_same_input_in_any_order_gives_identical_json() -> None:
    docs = [service("a"), service("b"), service("c"),
            ingress("one", rule("h.example", path("/", "Prefix", "a"), path("/x", "Exact", "b"))),
            ingress("two", rule("h.example", path("/x", "Prefix", "c")), rule(None, path("/", "Prefix", "a"))),
            ingress("three", rule("*.example", path("/", "Prefix", "c")), default=backend("a"))]
    outputs = set()
    rng = random.Random(7)
    for _ in range(5):
        shuffled = docs[:]
        rng.shuffle(shuffled)
        c = cluster(*shuffled)
        outputs.add(json.dumps([route(c.state, h, p).to_dict() for h, p in
                                [("h.example", "/x"), ("z.example", "/q"), ("nohost", "/")]]))
    assert len(outputs) == 1
