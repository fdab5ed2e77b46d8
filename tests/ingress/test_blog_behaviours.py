"""The five behaviours of the Kubernetes blog "Before You Migrate: Five Surprising Ingress-NGINX Behaviors You
Need to Know" (2026-02-27), each Ingress of the post routed as the post shows ingress-nginx answering.

Every backend is httpbin behind a Service on port 8000 (the post's examples). The same inputs are
proven against a real nginx by tests/nginxproof (``verify nginx``).
"""

from __future__ import annotations

from typing import Any

from tests.ingress.builders import cluster, ingress, path, rule

from knetsim.ingress import route


def _httpbin() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "httpbin", "namespace": "default"},
         "spec": {"selector": {"app": "httpbin"}, "ports": [{"name": "http", "port": 8000, "targetPort": 80}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "httpbin-0", "namespace": "default",
                                                         "labels": {"app": "httpbin"}},
         "spec": {"containers": [{"name": "httpbin", "image": "kennethreitz/httpbin"}]}},
    ]


def _served_by_httpbin(state, host: str, request: str) -> bool:  # type: ignore[no-untyped-def]
    result = route(state, host, request)
    return result.routed and result.backend is not None and result.backend.service == "default/httpbin"


def test_1_regex_matches_are_prefix_based_and_case_insensitive() -> None:
    state = cluster(_httpbin(), ingress("regex-match-ingress", rule("regex-match.example.com",
                                                                      path("/[A-Z]{3}", "ImplementationSpecific",
                                                                           "httpbin", 8000)),
                                        annotations={"use-regex": "true"})).state
    assert _served_by_httpbin(state, "regex-match.example.com", "/uuid")
    assert _served_by_httpbin(state, "regex-match.example.com", "/uuid/some/other/path")
    assert not _served_by_httpbin(state, "regex-match.example.com", "/ab")


def test_2_use_regex_applies_to_all_paths_of_the_host_across_ingresses() -> None:
    state = cluster(_httpbin(),
                    ingress("regex-match-ingress", rule("regex-match.example.com",
                                                        path("/[a-z]+[0-9]", "ImplementationSpecific", "httpbin",
                                                             8000)),
                            annotations={"use-regex": "true"}),
                    ingress("regex-match-ingress-other", rule("regex-match.example.com",
                                                              path("/Header", "Exact", "httpbin", 8000)))).state
    result = route(state, "regex-match.example.com", "/headers")
    assert result.routed and result.match.ingress == "default/regex-match-ingress-other"
    assert result.match.matched_as == '~* "^/Header"'


def test_3_rewrite_target_implies_regex() -> None:
    state = cluster(_httpbin(),
                    ingress("rewrite-target-ingress", rule("rewrite-target.example.com",
                                                           path("/IP", "Exact", "httpbin", 8000)),
                            annotations={"rewrite-target": "/uuid"}),
                    ingress("rewrite-target-ingress-other", rule("rewrite-target.example.com",
                                                                 path("/Header", "Exact", "httpbin", 8000)))).state
    ip = route(state, "rewrite-target.example.com", "/ip")
    assert ip.routed and ip.upstream == "/uuid"
    headers = route(state, "rewrite-target.example.com", "/headers")
    assert headers.routed and headers.match.ingress == "default/rewrite-target-ingress-other"


def test_4_requests_missing_a_trailing_slash_are_redirected() -> None:
    for path_type in ("Exact", "Prefix"):
        state = cluster(_httpbin(), ingress("trailing-slash-ingress", rule("trailing-slash.example.com",
                                                                           path("/my-path/", path_type, "httpbin",
                                                                                8000)))).state
        result = route(state, "trailing-slash.example.com", "/my-path")
        assert (result.outcome, result.http_status) == ("redirect", 301), path_type
        assert result.redirect == "http://trailing-slash.example.com/my-path/"
    # "the redirect does not happen if the path is a regex pattern"
    regex = cluster(_httpbin(), ingress("trailing-slash-ingress", rule("trailing-slash.example.com",
                                                                       path("/my-path/", "Prefix", "httpbin", 8000)),
                                        annotations={"use-regex": "true"})).state
    assert route(regex, "trailing-slash.example.com", "/my-path").outcome == "not-found"


def test_5_urls_are_normalized_before_matching_and_sent_as_received() -> None:
    state = cluster(_httpbin(), ingress("path-normalization-ingress", rule("path-normalization.example.com",
                                                                          path("/uuid", "Exact", "httpbin",
                                                                               8000)))).state
    for request in ("/uuid", "/ip/abc/../../uuid", "////uuid"):
        result = route(state, "path-normalization.example.com", request)
        assert result.routed and result.match.path == "/uuid", request
        # proxy_pass without a URI passes the request URI as the client sent it (httpbin then redirects ////uuid).
        assert result.upstream == request
