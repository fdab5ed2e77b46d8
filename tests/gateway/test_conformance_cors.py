"""HTTPRouteCORS, restated from kubernetes-sigs/gateway-api ``conformance/tests/httproute-cors.go`` (test
``HTTPRouteCORS``) and its ``httproute-cors.yaml``: the four routes as the suite writes them, every request the
suite sends, and what it accepts (it allows either spelling where implementations differ — ``*`` or the echoed
origin, ``200`` or ``204`` — so do these tests).

Given the conformance base and the four CORS routes, when a preflight (``OPTIONS`` with ``Origin`` and
``Access-Control-Request-Method``) or an actual request is routed, then the gateway answers the preflight itself
with the allow headers, and an actual request reaches the backend with ``Access-Control-Allow-Origin``,
``-Expose-Headers`` and ``-Allow-Credentials`` on the answer.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from knetsim import Cluster
from knetsim.gateway import route
from knetsim.model.http import HTTPRequest

DATA = Path(__file__).parent / "data"
INFRA = "gateway-conformance-infra"

# httproute-cors.yaml, re-typed: the routes' CORS filters are the suite's, byte for byte in meaning.
ROUTES = """
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: cors-multiple-origins-methods-headers, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: same-namespace}]
  rules:
  - filters:
    - type: CORS
      cors:
        allowOrigins: ["https://www.foo.com", "https://*.bar.com"]
        allowMethods: [GET, OPTIONS]
        allowHeaders: [x-header-1, x-header-2]
        exposeHeaders: [x-header-3, x-header-4]
        allowCredentials: true
        maxAge: 3600
    matches: [{path: {type: PathPrefix, value: /cors-1}}]
    backendRefs: [{name: infra-backend-v1, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: cors-wildcard-methods, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: same-namespace}]
  rules:
  - filters:
    - type: CORS
      cors: {allowOrigins: ["https://www.foo.com"], allowMethods: ["*"]}
    matches: [{path: {type: PathPrefix, value: /cors-2}}]
    backendRefs: [{name: infra-backend-v1, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: cors-wildcard-origin, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: same-namespace}]
  rules:
  - filters:
    - type: CORS
      cors: {allowOrigins: ["*"], allowMethods: [PUT], allowCredentials: false}
    matches: [{path: {type: PathPrefix, value: /cors-wildcard-origin}}]
    backendRefs: [{name: infra-backend-v1, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: cors-wildcard-methods-headers, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: same-namespace}]
  rules:
  - filters:
    - type: CORS
      cors: {allowOrigins: ["*"], allowMethods: ["*"], allowHeaders: ["*"], allowCredentials: true}
    matches: [{path: {type: PathPrefix, value: /cors-wildcard-methods-headers}}]
    backendRefs: [{name: infra-backend-v1, port: 8080}]
  - filters:
    - type: CORS
      cors: {allowOrigins: ["*"], allowMethods: ["*"], allowHeaders: ["*"], allowCredentials: false}
    matches: [{path: {type: PathPrefix, value: /cors-wildcard-methods-headers-unauth}}]
    backendRefs: [{name: infra-backend-v1, port: 8080}]
"""

PREFLIGHT_HEADERS = {"access-control-request-method": "GET", "access-control-request-headers": "x-header-1, x-header-2"}
CORS_1_PREFLIGHT = {
    "access-control-allow-methods": {"GET,OPTIONS", "OPTIONS,GET"},
    "access-control-allow-headers": {"x-header-1,x-header-2", "x-header-2,x-header-1"},
    "access-control-expose-headers": {"x-header-3,x-header-4", "x-header-4,x-header-3"},
    "access-control-max-age": {"3600"},
    "access-control-allow-credentials": {"true"},
}

# (suite test case name, path, method, request headers, statuses accepted, header -> accepted values
#  (whitespace ignored, as the suite's IgnoreWhitespace), headers that must be absent). A status of 200 on an
# actual request means the backend answered: the request was proxied.
CASES = [
    ("preflight from an exact matching origin", "/cors-1", "OPTIONS",
     {"Origin": "https://www.foo.com", **PREFLIGHT_HEADERS}, {200, 204},
     {"access-control-allow-origin": {"https://www.foo.com"}, **CORS_1_PREFLIGHT}, ()),
    ("preflight from a wildcard matching origin", "/cors-1", "OPTIONS",
     {"Origin": "https://www.bar.com", **PREFLIGHT_HEADERS}, {200, 204},
     {"access-control-allow-origin": {"https://www.bar.com"}, **CORS_1_PREFLIGHT}, ()),
    ("preflight from a wildcard matching any number of periods left to '*'", "/cors-1", "OPTIONS",
     {"Origin": "https://xpto.www.bar.com", **PREFLIGHT_HEADERS}, {200, 204},
     {"access-control-allow-origin": {"https://xpto.www.bar.com"}, **CORS_1_PREFLIGHT}, ()),
    ("preflight from a non-matching origin", "/cors-1", "OPTIONS",
     {"Origin": "https://foobar.com", "access-control-request-method": "GET"}, {200, 204, 403},
     {}, ("access-control-allow-origin",)),
    ("simple request from an exact matching origin", "/cors-1", "GET",
     {"Origin": "https://www.foo.com", **PREFLIGHT_HEADERS}, {200},
     {"access-control-allow-origin": {"https://www.foo.com"}}, ()),
    ("simple request from a wildcard matching origin", "/cors-1", "GET",
     {"Origin": "https://www.bar.com", **PREFLIGHT_HEADERS}, {200},
     {"access-control-allow-origin": {"https://www.bar.com"}}, ()),
    ("simple request from a non-matching origin", "/cors-1", "GET",
     {"Origin": "https://foobar.com", "access-control-request-method": "GET"}, {200},
     {}, ("access-control-allow-origin",)),
    ("preflight with POST allowed by allowMethods with wildcard", "/cors-2", "OPTIONS",
     {"Origin": "https://www.foo.com", "access-control-request-method": "POST"}, {200, 204},
     {"access-control-allow-methods": {"POST", "*"}, "access-control-allow-origin": {"https://www.foo.com"}},
     ("access-control-allow-credentials",)),
    ("preflight from a wildcard origin", "/cors-wildcard-origin", "OPTIONS",
     {"Origin": "https://foobar.com", "access-control-request-method": "PUT"}, {200, 204},
     {"access-control-allow-origin": {"https://foobar.com", "*"}, "access-control-allow-methods": {"PUT"}},
     ("access-control-allow-credentials",)),
    ("preflight from a wildcard origin containing a port", "/cors-wildcard-origin", "OPTIONS",
     {"Origin": "https://foobar.com:12345", "access-control-request-method": "PUT"}, {200, 204},
     {"access-control-allow-origin": {"https://foobar.com:12345", "*"}, "access-control-allow-methods": {"PUT"}},
     ("access-control-allow-credentials",)),
    ("request from a wildcard origin containing a port", "/cors-wildcard-origin", "PUT",
     {"Origin": "https://foobar.com:12345"}, {200},
     {"access-control-allow-origin": {"https://foobar.com:12345", "*"}}, ()),
    ("simple request from a wildcard origin", "/cors-wildcard-origin", "PUT",
     {"Origin": "https://foobar.com"}, {200},
     {"access-control-allow-origin": {"https://foobar.com", "*"}}, ("access-control-allow-credentials",)),
    ("preflight with wildcards and credentials echoes origin, method and headers",
     "/cors-wildcard-methods-headers", "OPTIONS",
     {"Origin": "https://other.foo.com", "access-control-request-method": "PUT",
      "access-control-request-headers": "x-header-1, x-header-2"}, {200, 204},
     {"access-control-allow-origin": {"https://other.foo.com"}, "access-control-allow-methods": {"PUT"},
      "access-control-allow-headers": {"x-header-1,x-header-2", "x-header-2,x-header-1"},
      "access-control-allow-credentials": {"true"}}, ()),
    ("preflight with wildcards and no credentials hides allow-credentials",
     "/cors-wildcard-methods-headers-unauth", "OPTIONS",
     {"Origin": "https://other.foo.com", "access-control-request-method": "PUT",
      "access-control-request-headers": "x-header-1, x-header-2"}, {200, 204},
     {"access-control-allow-origin": {"https://other.foo.com", "*"}, "access-control-allow-methods": {"PUT", "*"},
      "access-control-allow-headers": {"x-header-1,x-header-2", "x-header-2,x-header-1", "*"}},
     ("access-control-allow-credentials",)),
    ("request with allowCredentials true gets allow-credentials", "/cors-wildcard-methods-headers", "GET",
     {"Origin": "https://other.foo.com"}, {200},
     {"access-control-allow-origin": {"https://other.foo.com"}, "access-control-allow-credentials": {"true"}}, ()),
    ("request without allowCredentials gets no allow-credentials", "/cors-wildcard-methods-headers-unauth", "GET",
     {"Origin": "https://other.foo.com"}, {200},
     {"access-control-allow-origin": {"https://other.foo.com", "*"}}, ("access-control-allow-credentials",)),
]


@cache
def cluster(controller: str = "gateway.envoyproxy.io/gatewayclass-controller") -> Cluster:
    base = (DATA / "conformance-base.yaml").read_text(encoding="utf-8")
    base = base.replace("gateway.envoyproxy.io/gatewayclass-controller", controller)
    return Cluster.from_yaml(base + "\n---\n" + ROUTES, namespace=INFRA, filename="httproute-cors.yaml")


def _observed(path: str, method: str, headers: dict[str, str], controller: str | None = None
              ) -> tuple[int, dict[str, str], str]:
    c = cluster(controller) if controller else cluster()
    result = route(c.state, f"{INFRA}/same-namespace",
                   HTTPRequest("gw.example", path, method, "http", None, tuple(headers.items())))
    status = result.http_status if result.http_status is not None else (200 if result.proxied else 0)
    return status, {k.lower(): v for k, v in result.response_headers.items()}, result.summary


@pytest.mark.parametrize(("case", "path", "method", "headers", "statuses", "valid", "absent"), CASES,
                         ids=[c[0] for c in CASES])
def test_httproute_cors(case: str, path: str, method: str, headers: dict[str, str], statuses: set[int],
                        valid: dict[str, set[str]], absent: tuple[str, ...]) -> None:
    status, got, why = _observed(path, method, headers)
    assert status in statuses, (status, why)
    for name, accepted in valid.items():
        assert got.get(name, "").replace(" ", "") in accepted, (name, got, why)
    for name in absent:
        assert name not in got, (name, got)


def test_a_preflight_is_answered_by_the_gateway_not_the_backend() -> None:
    """The suite expects an empty body on a preflight: the echo backend never sees it."""
    c = cluster()
    result = route(c.state, f"{INFRA}/same-namespace", HTTPRequest(
        "gw.example", "/cors-1", "OPTIONS", "http", None,
        (("Origin", "https://www.foo.com"), ("Access-Control-Request-Method", "GET"))))
    assert not result.proxied and result.http_status in (200, 204), result.summary
