"""The upstream tables (tests/ingress/upstream_cases.py), each row routed through a real cluster.

Given an Ingress holding the row's paths (each path to its own Service), the request must be
served by the row's expected path, or get the controller's 404 when the row says "No". A client
follows redirects, as the conformance suite's Go client does: where ingress-nginx answers a Prefix
``/foo/`` request for ``/foo`` with nginx's 301 to ``/foo/`` (or plain http to a TLS host with 308),
the row holds after that one hop, and the hop itself is asserted.
"""

from __future__ import annotations

import pytest
from tests.ingress.builders import cluster, ingress, path, rule, service
from tests.ingress.upstream_cases import (
    CONFORMANCE_HOSTS,
    CONFORMANCE_PATH_INGRESSES,
    CONFORMANCE_PATHS,
    HOST_EXAMPLES,
    PATH_EXAMPLES,
)

from knetsim.ingress import RouteResult, host_matches, normalize_host, path_matches, route


def follow(state, host: str, path: str, scheme: str = "http") -> tuple[RouteResult, list[int]]:  # type: ignore[no-untyped-def]
    """Route, following the controller's redirects on the same host as a client would."""
    hops: list[int] = []
    result = route(state, host, path, scheme=scheme)
    while result.outcome == "redirect" and result.redirect and len(hops) < 5:
        hops.append(result.http_status or 0)
        scheme, _, rest = result.redirect.partition("://")
        host, slash, rest_path = rest.partition("/")
        result = route(state, host.split(":", 1)[0], slash + rest_path or "/", scheme=scheme)
    return result, hops


def _svc_name(i: int) -> str:
    return f"svc-{i}"


def _row_id(row: tuple) -> str:
    kind, paths, requests, _ = row
    return f"{kind}:{','.join(p for p, _ in paths)}->{','.join(requests)}"


# Where ingress-nginx departs from the API's table: nginx's auto_redirect answers a path one "/" short of a
# location ending in "/" with 301 — Exact included (the blog's "five surprising behaviors", #4). (path, request)
# → the path that serves the request after the redirect.
NGINX_DEPARTURES = {("/foo/", "/foo"): "/foo/"}


@pytest.mark.parametrize("row", PATH_EXAMPLES, ids=[_row_id(r) for r in PATH_EXAMPLES])
def test_docs_path_examples(row: tuple) -> None:
    kind, paths, requests, expected = row
    if len(paths) == 1 and (paths[0][0], requests[0]) in NGINX_DEPARTURES:
        expected = NGINX_DEPARTURES[(paths[0][0], requests[0])]
    docs = [service(_svc_name(i)) for i in range(len(paths))]
    docs.append(ingress("ing", rule("example.com", *[path(p, t, _svc_name(i)) for i, (p, t) in enumerate(paths)])))
    c = cluster(*docs)
    for request in requests:
        result, hops = follow(c.state, "example.com", request)
        if expected is not None and expected.endswith("/") and request == expected.rstrip("/"):
            assert hops == [301], (request, "ingress-nginx answers /foo for Prefix /foo/ with nginx's 301")
        else:
            assert hops == [], (request, result.summary)
        if expected is None:
            assert result.outcome == "not-found", (request, result.summary)
            assert result.http_status == 404
        else:
            assert result.outcome == "routed", (request, result.summary)
            assert result.match is not None and result.match.path == expected, (request, result.summary)
            if kind == "Mixed":  # "Yes, prefers Exact"
                assert result.match.path_type == "Exact"
                loser = next(c for c in result.candidates if c.path_type == "Prefix")
                assert loser.verdict == "exact-preferred"


@pytest.mark.parametrize("row", [r for r in PATH_EXAMPLES if len(r[1]) == 1], ids=lambda r: _row_id(r))
def test_docs_path_examples_pure(row: tuple) -> None:
    _, [(rule_path, path_type)], requests, expected = row
    for request in requests:
        assert path_matches(path_type, rule_path, request) is (expected is not None), request


@pytest.mark.parametrize(("rule_host", "header", "matches"), HOST_EXAMPLES)
def test_docs_hostname_wildcards(rule_host: str, header: str, matches: bool) -> None:
    assert host_matches(rule_host, normalize_host(header)) is matches
    c = cluster(service("svc-w"), ingress("ing", rule(rule_host, path("/", "Prefix", "svc-w"))))
    result = route(c.state, header, "/")
    assert result.routed is matches, result.summary
    if not matches:
        [cand] = [x for x in result.candidates if x.path == "/"]
        assert cand.verdict == "host-mismatch"
        assert "label" in cand.reason


def _conformance_cluster():
    docs = []
    backends = sorted({b for paths in CONFORMANCE_PATH_INGRESSES.values() for _, _, b in paths})
    docs += [service(b) for b in backends]
    for host, paths in CONFORMANCE_PATH_INGRESSES.items():
        docs.append(ingress(host, rule(host, *[path(p, t, b) for p, t, b in paths])))
    return cluster(*docs)


def test_conformance_path_rules() -> None:
    c = _conformance_cluster()
    for host, request, backend in CONFORMANCE_PATHS:
        result, _hops = follow(c.state, host, request)
        if (host, request) == ("trailing-slash-path-rules", "/foo"):
            backend = "foo-slash-exact"  # Exact /foo/: ingress-nginx's 301 to /foo/ (NGINX_DEPARTURES)
        got = result.backend.service if result.routed and result.backend else None
        assert got == (f"default/{backend}" if backend else None), (host, request, result.summary)


def test_conformance_host_rules() -> None:
    c = cluster(
        service("wildcard-foo-com"), service("foo-bar-com"),
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "conformance-tls", "namespace": "default"},
         "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}},
        ingress("host-rules",
                rule("*.foo.com", path("/", "Prefix", "wildcard-foo-com")),
                rule("foo.bar.com", path("/", "Prefix", "foo-bar-com", "http")),
                tls=[{"hosts": ["foo.bar.com"], "secretName": "conformance-tls"}]),
    )
    for scheme, host, backend in CONFORMANCE_HOSTS:
        result, _hops = follow(c.state, host, "/", scheme=scheme)
        got = result.backend.service if result.routed and result.backend else None
        assert got == (f"default/{backend}" if backend else None), (scheme, host, result.summary)
