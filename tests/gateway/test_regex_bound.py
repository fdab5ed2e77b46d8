"""HTTPRoute RegularExpression matches run against any path a client sends: they are time-bounded.

Envoy's RE2 matches in linear time; a backtracking engine would stall on `(a|aa)+` against a long run
of a's. Given such a route, the request is answered (by the next rule) within the bound.
"""

from __future__ import annotations

import time

from knetsim.gateway.matching import path_matches


def test_a_runaway_regular_expression_is_no_match_within_the_bound() -> None:
    started = time.monotonic()
    assert path_matches("RegularExpression", "/(a|aa)+", "/" + "a" * 60 + "!") is False
    assert time.monotonic() - started < 5
    assert path_matches("RegularExpression", "/(a|aa)+", "/aaaa") is True
    assert path_matches("RegularExpression", "/(unclosed", "/(unclosed") is False


def test_a_runaway_cilium_http_path_is_no_match_within_the_bound() -> None:
    from knetsim.policy.cilium import http_rule_matches
    from knetsim.policy.rules import HTTPRule

    started = time.monotonic()
    assert not http_rule_matches(HTTPRule("GET", "/(a|aa)+", ""), "GET", "/" + "a" * 60 + "!", {})
    assert time.monotonic() - started < 5
    assert http_rule_matches(HTTPRule("GET", "/(a|aa)+", ""), "GET", "/aaaa", {})
