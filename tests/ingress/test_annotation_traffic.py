"""CORS, backend, affinity, limits, error pages and snippets, as ingress-nginx documents and templates them.

Given one annotated Ingress in front of ``svc-a`` (or httpbin, whose ``/status/CODE`` answers CODE),
then the request gets the answer the controller's location gives.
"""

from __future__ import annotations

import pytest
from tests.ingress.builders import cluster, controller_configmap, httpbin, ingress, path, rule, service

from knetsim.ingress import route
from knetsim.ingress.annotations.cors import DEFAULT_HEADERS, DEFAULT_METHODS


def _state(annotations: dict[str, str], *extra, backend: str = "a"):  # type: ignore[no-untyped-def]
    docs = [service("a"), *extra] if backend == "a" else list(extra)
    return cluster(*docs, ingress("i", rule("t.example", path("/", "Prefix", backend)),
                                  annotations=annotations)).state


# --- CORS ---------------------------------------------------------------------------------------------


def test_cors_defaults_allow_every_origin_on_every_response() -> None:
    result = route(_state({"enable-cors": "true"}), "t.example", "/")  # no Origin header: still CORS with '*'
    assert result.response_headers == {
        "Access-Control-Allow-Origin": "*", "Access-Control-Allow-Credentials": "true",
        "Access-Control-Allow-Methods": DEFAULT_METHODS, "Access-Control-Allow-Headers": DEFAULT_HEADERS,
        "Access-Control-Max-Age": "1728000"}


def test_cors_preflight_is_answered_204_by_the_controller() -> None:
    ann = {"enable-cors": "true", "cors-allow-origin": "https://app.example, https://*.corp.example",
           "cors-allow-methods": "GET, POST", "cors-allow-credentials": "false", "cors-max-age": "600",
           "cors-expose-headers": "X-Total"}
    state = _state(ann)
    pre = route(state, "t.example", "/items", method="OPTIONS", headers=(("Origin", "https://app.example"),))
    assert (pre.outcome, pre.http_status, pre.response.body) == ("preflight", 204, "")
    assert pre.response.headers == {
        "Access-Control-Allow-Origin": "https://app.example", "Access-Control-Allow-Methods": "GET, POST",
        "Access-Control-Allow-Headers": DEFAULT_HEADERS, "Access-Control-Expose-Headers": "X-Total",
        "Access-Control-Max-Age": "600", "Content-Type": "text/plain charset=UTF-8", "Content-Length": "0"}
    wildcard = route(state, "t.example", "/", headers=(("Origin", "https://eu.corp.example"),))
    assert wildcard.response_headers["Access-Control-Allow-Origin"] == "https://eu.corp.example"
    assert "Access-Control-Allow-Credentials" not in wildcard.response_headers
    two_labels = route(state, "t.example", "/", headers=(("Origin", "https://a.b.corp.example"),))
    assert two_labels.response_headers == {}  # '*' stands for one label
    other = route(state, "t.example", "/items", method="OPTIONS", headers=(("Origin", "https://evil.example"),))
    assert other.routed and other.response_headers == {}  # not a CORS request: the backend answers the OPTIONS


def test_cors_headers_are_on_the_controllers_own_errors_too() -> None:
    state = _state({"enable-cors": "true", "whitelist-source-range": "10.0.0.0/8"})
    result = route(state, "t.example", "/", headers=(("Origin", "https://x.example"),))
    assert result.http_status == 403 and result.response.header("Access-Control-Allow-Origin") == "*"


# --- backend ----------------------------------------------------------------------------------------


def _port_named(name: str, app_protocol: str | None = None) -> list[dict]:  # type: ignore[type-arg]
    docs = service("b", (name, 443))
    if app_protocol:
        docs[0]["spec"]["ports"][0]["appProtocol"] = app_protocol
    return docs


@pytest.mark.parametrize(("protocol", "port_name", "status"), [
    ("HTTPS", "https", None),
    ("HTTP", "https", 400),  # a plain request to a TLS port: the backend answers 400
    ("HTTPS", "http", 502),  # TLS to a plain port: the handshake fails
    ("GRPC", "grpc", None),
    ("GRPC", "http", 502),
    ("AUTO_HTTP", "https", None),
])
def test_backend_protocol_against_what_the_port_speaks(protocol: str, port_name: str, status: int | None) -> None:
    state = cluster(*_port_named(port_name), ingress("i", rule("t.example", path("/", "Prefix", "b", 443)),
                                                     annotations={"backend-protocol": protocol}))
    result = route(state.state, "t.example", "/")
    if status is None:
        assert result.routed and result.upstream_request.protocol == protocol
    elif status == 400:
        assert result.routed and result.upstream_request.status == 400
    else:
        assert result.http_status == status


def test_an_invalid_backend_protocol_keeps_http() -> None:
    result = route(_state({"backend-protocol": "SPDY"}), "t.example", "/")
    assert result.upstream_request.protocol == "HTTP"
    assert any("backend-protocol" in n for n in result.notes)


def _replicas(annotations: dict[str, str]):  # type: ignore[no-untyped-def]
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"a-{i}", "namespace": "default",
                                                             "labels": {"app": "a"}},
             "spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}]}}
            for i in range(4)]
    return cluster(service("a", pod=False), *pods, ingress("i", rule("t.example", path("/", "Prefix", "a")),
                                                           annotations=annotations)).state


def test_upstream_hash_by_sends_the_same_key_to_the_same_endpoint() -> None:
    state = _replicas({"upstream-hash-by": "$arg_user"})
    endpoints = {route(state, "t.example", f"/page/{i}?user=ann").upstream_request.endpoint for i in range(20)}
    assert len(endpoints) == 1
    spread = {route(state, "t.example", f"/?user=u{i}").upstream_request.endpoint for i in range(40)}
    assert len(spread) > 1


def test_affinity_cookie_is_set_then_pins_the_endpoint() -> None:
    state = _replicas({"affinity": "cookie", "session-cookie-name": "route", "session-cookie-max-age": "3600",
                       "session-cookie-samesite": "Lax"})
    first = route(state, "t.example", "/")
    cookie = first.response_headers["Set-Cookie"]
    name_value, *attributes = cookie.split("; ")
    assert name_value.startswith("route=") and "|" in name_value
    assert attributes == ["Max-Age=3600", "Path=/", "HttpOnly", "SameSite=Lax"]
    for i in range(10):
        again = route(state, "t.example", f"/x{i}", headers=(("Cookie", name_value),))
        assert again.upstream_request.endpoint == first.upstream_request.endpoint
        assert "Set-Cookie" not in again.response_headers
    secure = route(state, "t.example", "/", scheme="https").response_headers["Set-Cookie"]
    assert "; Secure; HttpOnly" in secure  # Secure on https unless session-cookie-secure says otherwise


def test_service_upstream_uses_the_cluster_ip_and_no_affinity() -> None:
    state = _replicas({"service-upstream": "true", "affinity": "cookie"})
    result = route(state, "t.example", "/")
    assert result.upstream_request.endpoint is None and "Set-Cookie" not in result.response_headers
    assert any(s.what == "service-upstream" for s in result.steps)


# --- limits ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("annotations", "size", "status"), [
    ({}, 1024 * 1024, None),  # the default limit is 1m, inclusive
    ({}, 1024 * 1024 + 1, 413),
    ({"proxy-body-size": "8m"}, 5_000_000, None),
    ({"proxy-body-size": "8m"}, 9_000_000, 413),
    ({"proxy-body-size": "0"}, 10**9, None),  # 0: no limit
    ({"proxy-body-size": "100k"}, 102_401, 413),
])
def test_proxy_body_size(annotations: dict[str, str], size: int, status: int | None) -> None:
    result = route(_state(annotations), "t.example", "/upload", method="POST", body_size=size)
    assert result.http_status == status
    if status:
        assert result.outcome == "payload-too-large" and "413 Request Entity Too Large" in result.response.body


def test_the_body_limit_is_checked_before_redirects() -> None:
    # client_max_body_size is checked when nginx picks the location, before the rewrite phase's return.
    state = _state({"permanent-redirect": "https://x.example/"})
    assert route(state, "t.example", "/", method="POST", body_size=2 * 1024 * 1024).http_status == 413


def test_the_configmap_body_size_is_the_default() -> None:
    state = _state({}, controller_configmap(proxy_body_size="2m"))
    assert route(state, "t.example", "/", method="POST", body_size=1_500_000).routed


@pytest.mark.parametrize(("annotations", "burst", "allowed"), [
    ({"limit-rps": "10"}, 100, 51),  # burst = 10 × 5, nodelay: 51 at once
    ({"limit-rps": "10", "limit-burst-multiplier": "1"}, 100, 11),
    ({"limit-rpm": "60"}, 500, 301),
    ({"limit-connections": "5"}, 20, 5),
    ({"limit-connections": "5", "limit-rps": "1"}, 20, 5),
    ({"limit-rps": "10", "limit-allowlist": "203.0.113.0/24"}, 100, 100),
    ({}, 100, 100),
])
def test_limits_as_what_a_burst_gets(annotations: dict[str, str], burst: int, allowed: int) -> None:
    result = route(_state(annotations), "t.example", "/", burst=burst)
    assert result.burst.allowed == allowed and result.burst.rejected == burst - allowed
    if allowed < burst:
        assert result.burst.status == 503  # limit-req-status-code / limit-conn-status-code


# --- error pages ------------------------------------------------------------------------------------------


def test_custom_http_errors_replace_the_backends_error_with_the_default_backend() -> None:
    state = cluster(*httpbin(), ingress("i", rule("t.example", path("/", "Prefix", "httpbin")),
                                        annotations={"custom-http-errors": "503,404"})).state
    assert route(state, "t.example", "/status/200").routed
    replaced = route(state, "t.example", "/status/503")
    assert (replaced.outcome, replaced.http_status) == ("not-found", 404)  # kind runs no default backend: 404
    kept = route(state, "t.example", "/status/500")
    assert kept.routed and kept.upstream_request.status == 500


def test_custom_http_errors_with_a_default_backend_service() -> None:
    state = cluster(*httpbin(), service("errors"),
                    ingress("i", rule("t.example", path("/", "Prefix", "httpbin")),
                            annotations={"custom-http-errors": "503", "default-backend": "errors"})).state
    result = route(state, "t.example", "/status/503")
    assert result.routed and result.backend.service == "default/errors"
    assert result.upstream_request.headers["x-code"] == "503" and result.upstream == "/"


def test_default_backend_serves_when_the_service_has_no_endpoint() -> None:
    state = cluster(service("a", pod=False), service("errors"),
                    ingress("i", rule("t.example", path("/", "Prefix", "a")),
                            annotations={"default-backend": "errors"})).state
    result = route(state, "t.example", "/x")
    assert result.routed and result.backend.service == "default/errors"


def test_custom_http_errors_replace_the_controllers_own_errors() -> None:
    state = _state({"custom-http-errors": "403", "whitelist-source-range": "10.0.0.0/8"})
    assert route(state, "t.example", "/").http_status == 404


# --- snippets ------------------------------------------------------------------------------------------------


SNIPPET = {"configuration-snippet": 'more_set_headers "X-Debug: 1";'}


def test_snippets_are_refused_by_default() -> None:
    result = route(_state(SNIPPET), "t.example", "/")
    assert result.outcome == "not-found"
    [cand] = [c for c in result.candidates if c.ingress == "default/i"]
    assert cand.verdict == "rejected"
    assert ("nginx.ingress.kubernetes.io/configuration-snippet annotation cannot be used. Snippet directives are "
            "disabled by the Ingress administrator") in cand.reason


def test_allowed_snippets_are_still_too_risky_at_the_default_risk_level() -> None:
    result = route(_state(SNIPPET, controller_configmap(allow_snippet_annotations="true")), "t.example", "/")
    [cand] = [c for c in result.candidates if c.ingress == "default/i"]
    assert "annotation group ConfigurationSnippet contains risky annotation" in cand.reason


def test_snippets_allowed_at_critical_are_reported_not_run() -> None:
    cm = controller_configmap(allow_snippet_annotations="true", annotations_risk_level="Critical")
    result = route(_state(SNIPPET, cm), "t.example", "/")
    assert result.routed
    assert any("configuration-snippet is arbitrary nginx configuration" in n for n in result.notes)


def test_unsimulated_and_unknown_annotations_are_named() -> None:
    result = route(_state({"proxy-read-timeout": "120", "rewrite-targets": "/x"}), "t.example", "/")
    assert any("proxy-read-timeout not simulated" in n for n in result.notes)
    assert any("rewrite-targets is not an annotation ingress-nginx reads" in n for n in result.notes)
