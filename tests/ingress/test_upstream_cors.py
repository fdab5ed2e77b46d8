"""ingress-nginx's own CORS end-to-end cases, restated: kubernetes/ingress-nginx ``test/e2e/annotations/cors.go``
(``Describe("[Annotations] cors")``), one test per ``ginkgo.It`` named after it.

Given one Ingress for ``cors.foo.com`` with the case's annotations, when a request carries the case's ``Origin``,
then ``Access-Control-Allow-Origin`` is present with the value the upstream case expects, or absent. The cases that
upstream checks in the generated ``nginx.conf`` (``more_set_headers '...'``) are checked here on the preflight
answer the controller gives, where those headers are sent.
"""

from __future__ import annotations

import pytest
from tests.ingress.builders import cluster, ingress, path, rule, service

from knetsim.ingress import route

HOST = "cors.foo.com"  # corsHost in cors.go
ORIGIN_HOST = "http://origin.com:8080"  # originHost in cors.go


def _state(annotations: dict[str, str]):  # type: ignore[no-untyped-def]
    full = {"enable-cors": "true", **annotations}
    return cluster(service("echo"), ingress("cors", rule(HOST, path("/", "Prefix", "echo")),
                                            annotations=full)).state


def _allow_origin(annotations: dict[str, str], origin: str | None) -> str | None:
    headers = (("Origin", origin),) if origin is not None else ()
    result = route(_state(annotations), HOST, "/", headers=headers)
    assert result.routed, result.summary  # upstream: Status(http.StatusOK) from the echo backend
    return result.response_headers.get("Access-Control-Allow-Origin")


def _preflight(annotations: dict[str, str]) -> dict[str, str]:
    result = route(_state(annotations), HOST, "/", method="OPTIONS",
                   headers=(("Origin", "https://any.example"), ("Access-Control-Request-Method", "GET")))
    assert result.http_status == 204, result.summary
    return dict(result.response.headers)


def test_should_enable_cors() -> None:
    headers = _preflight({})
    assert headers["Access-Control-Allow-Methods"] == "GET, PUT, POST, DELETE, PATCH, OPTIONS"
    assert headers["Access-Control-Allow-Origin"] == "*"
    assert headers["Access-Control-Allow-Headers"] == ("DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,"
                                                      "Cache-Control,Content-Type,Range,Authorization")
    assert headers["Access-Control-Max-Age"] == "1728000"
    assert headers["Access-Control-Allow-Credentials"] == "true"


def test_should_set_cors_methods_to_only_allow_post_get() -> None:
    assert _preflight({"cors-allow-methods": "POST, GET"})["Access-Control-Allow-Methods"] == "POST, GET"


def test_should_set_cors_max_age() -> None:
    assert _preflight({"cors-max-age": "200"})["Access-Control-Max-Age"] == "200"


def test_should_disable_cors_allow_credentials() -> None:
    assert "Access-Control-Allow-Credentials" not in _preflight({"cors-allow-credentials": "false"})


def test_should_allow_headers_for_cors() -> None:
    assert _preflight({"cors-allow-headers": "DNT, User-Agent"})["Access-Control-Allow-Headers"] == "DNT, User-Agent"


def test_should_expose_headers_for_cors() -> None:
    headers = _preflight({"cors-expose-headers": "X-CustomResponseHeader, X-CustomSecondHeader"})
    assert headers["Access-Control-Expose-Headers"] == "X-CustomResponseHeader, X-CustomSecondHeader"
    actual = route(_state({"cors-expose-headers": "X-CustomResponseHeader, X-CustomSecondHeader"}), HOST, "/",
                   headers=(("Origin", "https://any.example"),))
    assert actual.response_headers["Access-Control-Expose-Headers"] == "X-CustomResponseHeader, X-CustomSecondHeader"


# (ginkgo.It, cors-allow-origin, [(Origin sent, Access-Control-Allow-Origin expected or None for absent)])
ORIGIN_CASES = [
    ("should allow origin for cors", "https://origin.cors.com:8080",
     [("https://origin.cors.com:8080", "https://origin.cors.com:8080")]),
    ("should allow - single origin for multiple cors values", "https://origin.cors.com:8080, https://origin2.cors.com",
     [("https://origin.cors.com:8080", "https://origin.cors.com:8080")]),
    ("should not allow - single origin for multiple cors values", "http://origin2.cors.com, https://origin.com",
     [("http://no.origin.com", None)]),
    ("should allow correct origins - single origin for multiple cors values",
     "origin.cors.com:8080, https://origin2.cors.com, https://origin.com",
     [("origin.cors.com:8080", None), ("https://origin2.cors.com", "https://origin2.cors.com"),
      ("https://origin.com", "https://origin.com")]),
    ("should not break functionality", "*", [(None, "*")]),
    ("should not break functionality - without `*`", None, [(None, "*")]),
    ("should not break functionality with extra domain", "*, foo.bar.com", [(None, "*")]),
    ("should not match", "https://foo.bar.com", [("https://fooxbar.com", None)]),
    ("should allow - single origin with required port", "http://origin.cors.com:8080, http://origin.com:8080",
     [(ORIGIN_HOST, ORIGIN_HOST)]),
    ("should not allow - single origin with port and origin without port", "https://origin2.cors.com, http://origin.com",
     [(ORIGIN_HOST, None)]),
    ("should not allow - single origin without port and origin with required port",
     "http://origin.cors.com:8080, http://origin.com:8080", [("http://origin.com", None)]),
    ("should allow - matching origin with wildcard origin (2 subdomains)",
     "http://*.origin.cors.com, http://*.origin.com:8080",
     [("http://foo.origin.cors.com", "http://foo.origin.cors.com"),
      ("http://bar-foo.origin.cors.com", "http://bar-foo.origin.cors.com")]),
    ("should not allow - unmatching origin with wildcard origin (2 subdomains)",
     "http://*.origin.cors.com, http://*.origin.com:8080", [("http://bar.foo.origin.cors.com", None)]),
    ("should allow - matching origin+port with wildcard origin", "http://origin.cors.com:8080, http://*.origin.com:8080",
     [("http://abc.origin.com:8080", "http://abc.origin.com:8080")]),
    ("should not allow - portless origin with wildcard origin", "http://origin.cors.com:8080, http://*.origin.com:8080",
     [("http://abc.origin.com", None)]),
    ("should allow correct origins - missing subdomain + origin with wildcard origin and correct origin",
     "http://origin.cors.com:8080, http://*.origin.com:8080",
     [(ORIGIN_HOST, None), ("http://bar.origin.com:8080", "http://bar.origin.com:8080")]),
    ("should allow - missing origins (should allow all origins)", "      ",
     [("http://origin.com", "*"), ("http://book.origin.com", "*"), ("test.origin.com", "*")]),
    ("should allow correct origin but not others - cors allow origin annotations contain trailing comma",
     "https://origin-123.cors.com:8080,   ,https://origin-321.cors.com:8080,",
     [("https://origin-123.cors.com:8080", "https://origin-123.cors.com:8080"),
      ("https://origin-321.cors.com:8080", "https://origin-321.cors.com:8080"),
      ("https://unknown.cors.com:8080", None)]),
    ("should allow - origins with non-http[s] protocols", "test://localhost, tauri://localhost:3000",
     [("test://localhost", "test://localhost"), ("tauri://localhost:3000", "tauri://localhost:3000")]),
]


@pytest.mark.parametrize(("case", "allow_origin", "requests"), ORIGIN_CASES, ids=[c[0] for c in ORIGIN_CASES])
def test_cors_allow_origin(case: str, allow_origin: str | None, requests: list[tuple[str | None, str | None]]) -> None:
    annotations = {"cors-allow-origin": allow_origin} if allow_origin is not None else {}
    for origin, expected in requests:
        assert _allow_origin(annotations, origin) == expected, (case, origin)
