"""Canary Ingresses, as ingress-nginx documents them ("Canary" in its annotations guide) and its balancer runs them.

Given a primary Ingress to ``svc-web`` and a canary Ingress to ``svc-v2`` on the same host, path and
pathType, then the documented precedence holds — canary-by-header, then -cookie, then -weight — and the
canary's reach is its merge rule's: the primary *backend*, wherever it serves.
"""

from __future__ import annotations

import pytest
from tests.ingress.builders import cluster, ingress, path, rule, service

from knetsim.ingress import route


def _state(canary: dict[str, str], *, v2_ready: bool = True, extra=()):  # type: ignore[no-untyped-def]
    return cluster(service("web"), service("v2", pod=v2_ready), *extra,
                   ingress("main", rule("c.example", path("/", "Prefix", "web"))),
                   ingress("canary", rule("c.example", path("/", "Prefix", "v2")),
                           annotations={"canary": "true", **canary})).state


def _backend(state, *headers: str, path: str = "/") -> str:  # type: ignore[no-untyped-def]
    pairs = tuple(tuple(h.split(": ", 1)) for h in headers)
    result = route(state, "c.example", path, headers=pairs)  # type: ignore[arg-type]
    assert result.routed, result.summary
    return result.backend.service


@pytest.mark.parametrize(("canary", "headers", "expected"), [
    ({"canary-by-header": "X-Canary"}, ("X-Canary: always",), "default/v2"),
    ({"canary-by-header": "X-Canary"}, ("x-canary: always",), "default/v2"),  # header names are case-insensitive
    ({"canary-by-header": "X-Canary"}, ("X-Canary: never",), "default/web"),
    ({"canary-by-header": "X-Canary"}, ("X-Canary: yes",), "default/web"),  # any other value falls through
    ({"canary-by-header": "X-Canary"}, (), "default/web"),
    ({"canary-by-header": "X-Canary", "canary-by-header-value": "v2"}, ("X-Canary: v2",), "default/v2"),
    ({"canary-by-header": "X-Canary", "canary-by-header-value": "v2"}, ("X-Canary: always",), "default/web"),
    ({"canary-by-header": "X-Canary", "canary-by-header-pattern": "^beta-.*"}, ("X-Canary: beta-7",), "default/v2"),
    ({"canary-by-header": "X-Canary", "canary-by-header-pattern": "^beta-.*"}, ("X-Canary: ga",), "default/web"),
    # "when canary-by-header-value is set this annotation [pattern] will be ignored"
    ({"canary-by-header": "X-Canary", "canary-by-header-value": "v2", "canary-by-header-pattern": ".*"},
     ("X-Canary: other",), "default/web"),
    ({"canary-by-cookie": "canary"}, ("Cookie: a=1; canary=always",), "default/v2"),
    ({"canary-by-cookie": "canary"}, ("Cookie: canary=never",), "default/web"),
    ({"canary-weight": "100"}, (), "default/v2"),
    ({"canary-weight": "0"}, (), "default/web"),
    # precedence: header, then cookie, then weight
    ({"canary-by-header": "X-Canary", "canary-by-cookie": "canary"}, ("X-Canary: never", "Cookie: canary=always"),
     "default/web"),
    ({"canary-by-header": "X-Canary", "canary-by-cookie": "canary"}, ("X-Canary: maybe", "Cookie: canary=always"),
     "default/v2"),
    ({"canary-by-cookie": "canary", "canary-weight": "100"}, ("Cookie: canary=never",), "default/web"),
    ({"canary-by-header": "X-Canary", "canary-weight": "100"}, ("X-Canary: never",), "default/web"),
    ({"canary-by-header": "X-Canary", "canary-weight": "0"}, ("X-Canary: always",), "default/v2"),
])
def test_canary_precedence(canary: dict[str, str], headers: tuple[str, ...], expected: str) -> None:
    assert _backend(_state(canary), *headers) == expected


def test_canary_weight_is_a_share_and_the_draw_is_repeatable() -> None:
    state = _state({"canary-weight": "20"})
    results = [route(state, "c.example", f"/item/{i}") for i in range(400)]
    canaries = sum(r.backend.service == "default/v2" for r in results)
    assert 50 <= canaries <= 110  # 20% of 400, drawn from a hash of each request
    assert results[0].shares == (("default/web:80", 0.8), ("default/v2:80", 0.2))
    again = route(state, "c.example", "/item/0")
    assert again.backend.service == results[0].backend.service


def test_canary_weight_total() -> None:
    state = _state({"canary-weight": "500", "canary-weight-total": "1000"})
    assert route(state, "c.example", "/").shares == (("default/web:80", 0.5), ("default/v2:80", 0.5))


def test_canary_annotations_without_canary_true_make_an_ordinary_ingress() -> None:
    # canary.go: "configured but not enabled": the canary settings are ignored; the Ingress is a normal one, and
    # its path duplicates the primary's (the older keeps it).
    state = cluster(service("web"), service("v2"),
                    ingress("main", rule("c.example", path("/", "Prefix", "web")), created="2026-01-01T00:00:00Z"),
                    ingress("canary", rule("c.example", path("/", "Prefix", "v2")),
                            annotations={"canary-by-header": "X-Canary"}, created="2026-01-02T00:00:00Z")).state
    result = route(state, "c.example", "/", headers=(("X-Canary", "always"),))
    assert result.backend.service == "default/web"
    [cand] = [c for c in result.candidates if c.ingress == "default/canary"]
    assert cand.verdict == "duplicate"


def test_a_canary_without_ready_endpoints_leaves_traffic_on_the_primary() -> None:
    state = _state({"canary-by-header": "X-Canary"}, v2_ready=False)
    assert _backend(state, "X-Canary: always") == "default/web"


def test_the_canary_follows_the_primary_backend_to_every_host_that_uses_it() -> None:
    # mergeAlternativeBackends attaches the canary to the backend (namespace-service-port), not to the host:
    # another host proxying to the same Service gets the canary too.
    other = ingress("other", rule("other.example", path("/shop", "Prefix", "web")))
    state = _state({"canary-by-header": "X-Canary"}, extra=(other,))
    result = route(state, "other.example", "/shop", headers=(("X-Canary", "always"),))
    assert result.backend.service == "default/v2"


def test_a_canary_whose_path_matches_no_location_is_dropped() -> None:
    state = cluster(service("web"), service("v2"),
                    ingress("main", rule("c.example", path("/", "Prefix", "web"))),
                    ingress("canary", rule("c.example", path("/beta", "Prefix", "v2")),
                            annotations={"canary": "true", "canary-weight": "100"})).state
    result = route(state, "c.example", "/beta")
    assert result.backend.service == "default/web"
    [cand] = [c for c in result.candidates if c.ingress == "default/canary"]
    assert cand.verdict == "canary" and "dropped" in cand.reason


def test_affinity_keeps_a_pinned_client_on_the_primary() -> None:
    state = cluster(service("web"), service("v2"),
                    ingress("main", rule("c.example", path("/", "Prefix", "web")), annotations={"affinity": "cookie"}),
                    ingress("canary", rule("c.example", path("/", "Prefix", "v2")),
                            annotations={"canary": "true", "canary-weight": "100"})).state
    first = route(state, "c.example", "/")
    assert first.backend.service == "default/v2"  # weight 100, no cookie yet
    cookie = first.response_headers["Set-Cookie"].split(";", 1)[0]
    pinned_to_canary = route(state, "c.example", "/", headers=(("Cookie", cookie),))
    assert pinned_to_canary.backend.service == "default/v2"
    assert pinned_to_canary.canary.by == "affinity"
