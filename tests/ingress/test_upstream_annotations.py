"""ingress-nginx's own end-to-end cases for paths, rewrites, backend protocols, canary weights and affinity,
restated from kubernetes/ingress-nginx ``test/e2e`` (each test names its file and ``ginkgo.It``). The e2e
framework's ``NewSingleIngress`` writes ``pathType: Prefix`` (``test/e2e/framework/framework.go``), so do these;
the suite runs the current controller, so the rewrite cases run a v1.14 controller (``.`` allowed in Prefix paths,
kubernetes/ingress-nginx#13798), and the regex ones with ``strict-validate-path-type: "false"`` (a ``+`` in a
Prefix path is refused otherwise).
"""

from __future__ import annotations

import pytest
from tests.ingress.builders import cluster, controller_configmap, ingress, path, rule, service

from knetsim.ingress import route

HOST = "rewrite.bar.com"  # rewriteHost in rewrite.go


def _single(name: str, p: str, host: str, annotations: dict[str, str] | None = None,
            path_type: str = "Prefix") -> dict:
    return ingress(name, rule(host, path(p, path_type, "echo")), annotations=annotations or {})


# --- test/e2e/annotations/rewrite.go ------------------------------------------------------------------


def _controller(version: str) -> list[dict]:
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ingress-nginx"}},
            {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "ingress-nginx-controller", "namespace": "ingress-nginx",
                          "labels": {"app.kubernetes.io/name": "ingress-nginx"}},
             "spec": {"containers": [{"name": "controller",
                                      "image": f"registry.k8s.io/ingress-nginx/controller:{version}",
                                      "args": ["/nginx-ingress-controller", "--controller-class=k8s.io/ingress-nginx",
                                               "--ingress-class=nginx"],
                                      "ports": [{"containerPort": 80}]}]}}]


NOT_STRICT = controller_configmap(**{"strict-validate-path-type": "false"})


def _longest_match(version: str):  # type: ignore[no-untyped-def]
    return cluster(*_controller(version), service("echo"), _single("kube-lego", "/.well-known/acme/challenge", HOST),
                   _single("rewrite-index", "/", HOST, {"rewrite-target": "/new/backend"})).state


def test_rewrite_should_use_correct_longest_path_match() -> None:
    """A rewrite-target on "/" turns every location of the server into a regex (``~*``); the longer
    /.well-known/acme/challenge still wins for its own path, and is not rewritten."""
    result = route(_longest_match("v1.14.1"), HOST, "/.well-known/acme/challenge")
    assert result.routed and result.upstream == "/.well-known/acme/challenge", result.summary
    assert result.match is not None and result.match.ingress == "default/kube-lego"


def test_before_v1_14_a_dot_in_a_prefix_path_is_refused_and_the_rewrite_takes_the_request() -> None:
    """v1.12 and v1.13's webhook (knetsim's default controller is v1.13.0) refuse the "." of
    /.well-known/acme/challenge: that Ingress does not exist, so "/" (rewritten) serves the request."""
    result = route(_longest_match("v1.13.0"), HOST, "/.well-known/acme/challenge")
    assert result.upstream == "/new/backend", result.summary
    assert any(c.ingress == "default/kube-lego" and c.verdict == "rejected" for c in result.candidates)


def test_strict_validate_path_type_false_in_the_configmap_lets_the_path_in() -> None:
    state = cluster(NOT_STRICT, service("echo"), _single("kube-lego", "/.well-known/acme/challenge", HOST),
                    _single("rewrite-index", "/", HOST, {"rewrite-target": "/new/backend"})).state
    assert route(state, HOST, "/.well-known/acme/challenge").upstream == "/.well-known/acme/challenge"


def test_rewrite_should_use_regex_location_modifier_if_regex_annotation_is_present() -> None:
    state = cluster(NOT_STRICT, service("echo"), _single("foo", "/foo", HOST),
                    _single("regex", "/foo.+", HOST, {"use-regex": "true", "rewrite-target": "/new/backend"})).state
    assert route(state, HOST, "/foo").upstream == "/foo"
    assert route(state, HOST, "/foo/bar").upstream == "/new/backend"


def test_rewrite_should_fail_to_use_longest_match_for_documented_warning() -> None:
    """nginx takes the first regex location that matches, in the controller's order (longest path first):
    /foo/bar/[a-z]{3} is longer than /foo/bar/bar, so /foo/bar/bar is rewritten."""
    state = cluster(NOT_STRICT, service("echo"), _single("foo", "/foo/bar/bar", HOST),
                    _single("regex", "/foo/bar/[a-z]{3}", HOST, {"use-regex": "true",
                                                                 "rewrite-target": "/new/backend"})).state
    assert route(state, HOST, "/foo/bar/bar").upstream == "/new/backend"


# --- test/e2e/annotations/backendprotocol.go -------------------------------------------------------------


@pytest.mark.parametrize(("value", "protocol", "port_name"), [
    ("HTTPS", "HTTPS", "https"),  # should set backend protocol to https:// and use proxy_pass
    ("https", "HTTPS", "https"),  # ... with lowercase annotation
    ("AUTO_HTTP", "AUTO_HTTP", "http"),  # should set backend protocol to $scheme:// and use proxy_pass
    ("GRPC", "GRPC", "grpc"),  # should set backend protocol to grpc:// and use grpc_pass
    ("GRPCS", "GRPCS", "grpcs"),  # should set backend protocol to grpcs:// and use grpc_pass
    ("FCGI", "FCGI", "http"),  # should set backend protocol to '' and use fastcgi_pass
])
def test_backend_protocol(value: str, protocol: str, port_name: str) -> None:
    """A backend speaking what the annotation says is proxied with that protocol."""
    state = cluster(service("echo", (port_name, 80)),
                    _single("bp", "/", "proto.foo.com", {"backend-protocol": value})).state
    result = route(state, "proto.foo.com", "/")
    assert result.routed and result.http_status is None, result.summary
    assert result.upstream_request is not None and result.upstream_request.protocol == protocol


@pytest.mark.parametrize("value", ["HTTPS", "GRPC", "GRPCS"])
def test_backend_protocol_against_a_plain_http_backend_is_a_502_said_as_such(value: str) -> None:
    """The handshake (or grpc_pass) to a plain HTTP/1 port fails: 502, and the answer says why — not the
    "no ready endpoint, 503" of a Service without endpoints."""
    state = cluster(service("echo"), _single("bp", "/", "proto.foo.com", {"backend-protocol": value})).state
    result = route(state, "proto.foo.com", "/")
    assert result.http_status == 502, result.summary
    assert "503" not in result.summary and "no ready endpoint" not in result.summary
    assert not any("no ready endpoints" in n for n in result.notes)


# --- test/e2e/annotations/canary.go (canary-weight) --------------------------------------------------------

CANARY_HOST = "foo"


def _canary(weight: str, total: str | None = None):  # type: ignore[no-untyped-def]
    annotations = {"canary": "true", "canary-weight": weight}
    if total is not None:
        annotations["canary-weight-total"] = total
    return cluster(service("echo"), service("canary-echo"),
                   ingress("main", rule(CANARY_HOST, path("/", "Prefix", "echo"))),
                   ingress("canary", rule(CANARY_HOST, path("/", "Prefix", "canary-echo")),
                           annotations=annotations)).state


@pytest.mark.parametrize(("case", "weight", "total", "canary_share"), [
    ("should route requests only to mainline if canary weight is 0", "0", None, 0.0),
    ("should route requests only to canary if canary weight is 100", "100", None, 1.0),
    ("should route requests only to canary if canary weight is equal to canary weight total", "1000", "1000", 1.0),
    ("should route requests split between mainline and canary if canary weight is 50", "50", None, 0.5),
    ("should route requests split between mainline and canary if canary weight is 100 and weight total is 200",
     "100", "200", 0.5),
])
def test_canary_weight_split_is_in_the_answer(case: str, weight: str, total: str | None, canary_share: float) -> None:
    answer = route(_canary(weight, total), CANARY_HOST, "/").answer()
    shares = answer.shares or {answer.backend: 1.0}
    assert shares.get("default/canary-echo:80", 0.0) == pytest.approx(canary_share), (case, answer)
    assert shares.get("default/echo:80", 0.0) == pytest.approx(1 - canary_share), (case, answer)


# --- test/e2e/annotations/affinity.go ----------------------------------------------------------------------


def test_affinity_should_work_with_server_alias_annotation() -> None:
    """A request to the host or either alias gets the affinity cookie."""
    state = cluster(service("echo"), _single("affinity", "/bar", "foo.com", {
        "affinity": "cookie", "session-cookie-name": "SERVERID", "server-alias": "a1.foo.com,a2.foo.com"})).state
    for host in ("foo.com", "a1.foo.com", "a2.foo.com"):
        result = route(state, host, "/bar")
        assert result.routed, (host, result.summary)
        cookie = result.response_headers.get("Set-Cookie", "")
        assert cookie.startswith("SERVERID="), (host, result.response_headers)


# --- ImplementationSpecific paths (internal/k8s/main.go SetDefaultNGINXPathType) ------------------------------


def test_implementation_specific_is_stored_as_prefix() -> None:
    """ingress-nginx rewrites ImplementationSpecific to Prefix when it stores the Ingress: "/foo" takes /foo and
    /foo/bar, not /foobar (Prefix's whole path elements)."""
    state = cluster(service("echo"), _single("impl", "/foo", "impl.foo.com", path_type="ImplementationSpecific")).state
    for request, routed in (("/foo", True), ("/foo/bar", True), ("/foobar", False), ("/bar", False)):
        assert route(state, "impl.foo.com", request).routed is routed, request


def test_implementation_specific_beside_a_rewrite_is_a_case_insensitive_regex_prefix() -> None:
    """Once a location of the host needs a regex (rewrite-target), every location is ``~* "^<path>"`` and is left
    unsplit (location.go updateServerLocations): "/foo" then takes /foobar and /FOO too."""
    state = cluster(service("echo"), _single("impl", "/foo", "impl.foo.com", path_type="ImplementationSpecific"),
                    _single("rw", "/other", "impl.foo.com", {"rewrite-target": "/"})).state
    for request in ("/foo", "/foobar", "/FOO/x"):
        result = route(state, "impl.foo.com", request)
        assert result.routed and result.match is not None and result.match.ingress == "default/impl", request


def test_the_canary_weight_split_is_said_in_the_summary() -> None:
    """The text answer (``Why:``) names both sides of a split, not only the one this request drew."""
    result = route(_canary("30"), CANARY_HOST, "/")
    assert "(canary-weight split: default/echo:80 70%, default/canary-echo:80 30%)" in result.summary
    assert "split" not in route(_canary("100"), CANARY_HOST, "/").summary  # all of them: no split to tell
