"""The redirect family, as ingress-nginx documents it (docs/user-guide/nginx-configuration/annotations.md).

Address plan: the client is 203.0.113.10 (the simulation's external client); every backend is a
Service ``svc-X`` with one Ready pod. Given an Ingress with one redirect annotation, then the
request gets the documented status and Location — or the controller refuses the Ingress.
"""

from __future__ import annotations

import pytest
from tests.ingress.builders import cluster, controller_configmap, ingress, path, rule, secret, service

from knetsim.ingress import route


def _one(annotations: dict[str, str], *extra, host: str = "r.example", tls: bool = False):  # type: ignore[no-untyped-def]
    tls_spec = [{"hosts": [host], "secretName": "tls"}] if tls else None
    return cluster(service("a"), secret("tls"), *extra,
                   ingress("i", rule(host, path("/", "Prefix", "a"), path("/docs", "Prefix", "a")),
                           annotations=annotations, tls=tls_spec)).state


@pytest.mark.parametrize(("annotations", "status", "location"), [
    ({"permanent-redirect": "https://new.example/landing"}, 301, "https://new.example/landing"),
    ({"permanent-redirect": "https://new.example/", "permanent-redirect-code": "308"}, 308, "https://new.example/"),
    # "outside 300–308 falls back to 301" (redirect.go: prc < 300 || prc > 308)
    ({"permanent-redirect": "https://new.example/", "permanent-redirect-code": "200"}, 301, "https://new.example/"),
    ({"temporal-redirect": "https://tmp.example/"}, 302, "https://tmp.example/"),
    ({"temporal-redirect": "https://tmp.example/", "temporal-redirect-code": "307"}, 307, "https://tmp.example/"),
    ({"temporal-redirect": "https://tmp.example/", "temporal-redirect-code": "308"}, 302, "https://tmp.example/"),
    # temporal wins over permanent when both are set (the parser returns the temporal one first)
    ({"temporal-redirect": "https://tmp.example/", "permanent-redirect": "https://p.example/"}, 302,
     "https://tmp.example/"),
])
def test_permanent_and_temporal_redirects(annotations: dict[str, str], status: int, location: str) -> None:
    result = route(_one(annotations), "r.example", "/docs/a?b=1")
    assert (result.outcome, result.http_status, result.redirect) == ("redirect", status, location)
    assert result.response is not None and result.response.header("Location") == location
    assert f"<center><h1>{status} " in result.response.body and "<center>nginx</center>" in result.response.body


def test_a_relative_permanent_redirect_is_made_absolute_unless_relative_redirects() -> None:
    assert route(_one({"permanent-redirect": "/moved"}), "r.example:8080", "/").redirect == "http://r.example/moved"
    relative = route(_one({"permanent-redirect": "/moved", "relative-redirects": "true"}), "r.example", "/")
    assert relative.redirect == "/moved"


def test_a_redirect_url_with_characters_the_validator_refuses_refuses_the_ingress() -> None:
    # URLIsValidRegex has no '%', '#', '$' or '+': a validation error, so Extract fails and the Ingress is skipped.
    state = _one({"permanent-redirect": "https://new.example/a%20b"})
    result = route(state, "r.example", "/")
    assert result.outcome == "not-found"
    [cand] = [c for c in result.candidates if c.path == "/"]
    assert cand.verdict == "rejected" and "permanent-redirect contains invalid value" in cand.reason


def test_app_root_redirects_only_the_root_of_the_host() -> None:
    state = _one({"app-root": "/app"})
    root = route(state, "r.example", "/")
    assert (root.http_status, root.redirect) == (302, "http://r.example/app")
    assert route(state, "r.example", "/docs/x").routed
    assert route(_one({"app-root": "https://elsewhere/"}), "r.example", "/").routed  # only paths are allowed


def test_ssl_redirect_sends_plain_http_to_https_for_a_tls_host() -> None:
    state = _one({}, tls=True)
    result = route(state, "r.example", "/docs/?x=1")
    assert (result.http_status, result.redirect) == (308, "https://r.example/docs/?x=1")
    assert route(state, "r.example", "/docs/").redirect == "https://r.example/docs"  # trailing slash dropped
    assert route(state, "r.example", "/docs/", scheme="https").routed


def test_ssl_redirect_false_and_preserve_trailing_slash() -> None:
    assert route(_one({"ssl-redirect": "false"}, tls=True), "r.example", "/docs/").routed
    kept = route(_one({"preserve-trailing-slash": "true"}, tls=True), "r.example", "/docs/")
    assert kept.redirect == "https://r.example/docs/"


def test_force_ssl_redirect_needs_no_certificate() -> None:
    state = _one({"force-ssl-redirect": "true"})
    result = route(state, "r.example", "/docs")
    assert (result.http_status, result.redirect) == (308, "https://r.example/docs")


def test_http_redirect_code_of_the_configmap() -> None:
    state = _one({}, controller_configmap(http_redirect_code="301"), tls=True)
    assert route(state, "r.example", "/").http_status == 301


def test_the_configmap_can_turn_ssl_redirect_off_globally() -> None:
    assert route(_one({}, controller_configmap(ssl_redirect="false"), tls=True), "r.example", "/").routed


def test_from_to_www_redirect_adds_a_redirect_server_for_the_other_name() -> None:
    state = _one({"from-to-www-redirect": "true"}, host="www.r.example")
    result = route(state, "r.example", "/docs/")
    # ngx_srv_redirect.lua: "%s://%s:%s%s" with the server port, trailing slash dropped; http-redirect-code.
    assert (result.outcome, result.http_status, result.redirect) == ("redirect", 308, "http://www.r.example:80/docs")
    assert route(state, "www.r.example", "/docs/").routed


def test_from_to_www_redirect_is_omitted_when_the_other_name_has_a_server() -> None:
    state = cluster(service("a"), service("b"),
                    ingress("i", rule("www.r.example", path("/", "Prefix", "a")),
                            annotations={"from-to-www-redirect": "true"}),
                    ingress("j", rule("r.example", path("/", "Prefix", "b")))).state
    result = route(state, "r.example", "/")
    assert result.routed and result.backend.service == "default/b"


def test_a_redirect_annotation_applies_to_the_hosts_default_location_too() -> None:
    # The server's root location (for paths no rule names) carries the annotations of the Ingress that created it.
    state = cluster(service("a"), ingress("i", rule("r.example", path("/api", "Prefix", "a")),
                                          annotations={"permanent-redirect": "https://new.example/"})).state
    assert route(state, "r.example", "/elsewhere").redirect == "https://new.example/"


def test_server_aliases_are_chosen_as_nginx_chooses_server_names() -> None:
    # Given a wildcard Ingress host (ingress-nginx writes it as a one-label regex) and another host whose aliases
    # are an exact name, a leading wildcard (any depth), a .name and a trailing wildcard.
    c = cluster(service("web"), service("web-v2"), service("other"),
                ingress("wild", rule("*.example.org", path("/", "Prefix", "web"))),
                ingress("aliased", rule("shop.example.com", path("/", "Prefix", "web-v2")),
                        annotations={"server-alias": "shop.example.net, *.deep.example.org, .example.biz, "
                                                     "www.example.*, *.example.org"}),
                ingress("other", rule("other.example.com", path("/", "Prefix", "other"))))

    def served(host: str) -> str | None:
        result = route(c.state, host, "/")
        return result.backend.service if result.backend is not None else None

    assert served("shop.example.net") == "default/web-v2"
    assert served("a.b.deep.example.org") == "default/web-v2"  # *.name covers any depth, before the host regex
    assert served("x.example.org") == "default/web"  # the alias *.example.org is the wildcard host's name: dropped
    assert served("example.biz") == served("x.y.example.biz") == "default/web-v2"
    assert served("www.example.co.uk") == "default/web-v2"
    assert served("a.b.example.org") is None  # the Ingress wildcard covers one label
