"""CiliumNetworkPolicy: enforced with NetworkPolicy on ebpf, reported as not enforced elsewhere; HTTP rules.

The seeds' point: GET 200 and POST 403 on the same IP and port needs an L7 policy.
"""

from __future__ import annotations

import pytest

from knetsim.policy import evaluate
from knetsim.policy.l7 import http_allowed
from knetsim.policy.matrix import matrix

from .helpers import cnp, netpol, ns, pod, state

OBJECTS = [
    ns("prod"), pod("prod/api", {"app": "api"}, ports={"http": 8080}), pod("prod/web", {"app": "web"}),
    pod("prod/other", {"app": "other"}),
    cnp("prod/api-http", {
        "endpointSelector": {"matchLabels": {"app": "api"}},
        "ingress": [{"fromEndpoints": [{"matchLabels": {"k8s:app": "web"}}],
                     "toPorts": [{"ports": [{"port": "8080", "protocol": "TCP"}],
                                  "rules": {"http": [{"method": "GET", "path": "/public/.*"},
                                                     {"method": "POST", "path": "/login",
                                                      "headers": ["X-Token: s3cret"]}]}}]}],
    }),
]


def test_l3_l4_part_is_enforced_on_ebpf() -> None:
    s = state(*OBJECTS, dataplane="ebpf")
    assert evaluate(s, "prod/web", "prod/api", 8080).allowed
    denied = evaluate(s, "prod/other", "prod/api", 8080)
    assert not denied.allowed
    assert denied.ingress.policies == (("CiliumNetworkPolicy", "prod/api-http"),)
    assert not evaluate(s, "prod/web", "prod/api", 9090).allowed
    m = matrix(s, pods=True)
    assert m.allowed_between("prod/web", "prod/api").describe() == "TCP 8080"


def test_not_enforced_without_cilium() -> None:
    s = state(*OBJECTS, dataplane="iptables")
    v = evaluate(s, "prod/other", "prod/api", 8080)
    assert v.allowed
    assert any("CiliumNetworkPolicy prod/api-http is not enforced" in n and "iptables" in n for n in v.notes)
    ok, reason = http_allowed(s, "prod/web", "prod/api", 8080, "DELETE", "/admin")
    assert ok and "not enforced" in reason


@pytest.mark.parametrize(("src", "method", "path", "headers", "allowed", "reason"), [
    ("prod/web", "GET", "/public/index.html", {}, True, "passes every HTTP rule"),
    ("prod/web", "POST", "/public/index.html", {}, False, "403 Access denied"),
    ("prod/web", "GET", "/admin", {}, False, "403 Access denied"),
    ("prod/web", "POST", "/login", {"x-token": "s3cret"}, True, "passes"),
    ("prod/web", "POST", "/login", {"X-Token": "wrong"}, False, "403 Access denied"),
    ("prod/other", "GET", "/public/x", {}, False, "dropped at L3/L4"),
])
def test_http_rules_on_ebpf(src: str, method: str, path: str, headers: dict[str, str], allowed: bool,
                            reason: str) -> None:
    ok, why = http_allowed(state(*OBJECTS, dataplane="ebpf"), src, "prod/api", 8080, method, path, headers)
    assert ok is allowed
    assert reason in why


def test_an_l4_allow_without_http_rules_opens_every_request() -> None:
    extra = netpol("prod/np", {"podSelector": {"matchLabels": {"app": "api"}},
                               "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}]}]})
    ok, _ = http_allowed(state(*OBJECTS, extra, dataplane="ebpf"), "prod/web", "prod/api", 8080, "DELETE", "/x")
    assert ok


def test_empty_rule_is_cilium_default_deny_and_empty_selector_is_own_namespace() -> None:
    objects = [ns("prod"), ns("x"), pod("prod/api", {"app": "api"}), pod("prod/web"), pod("x/web"),
               cnp("prod/deny", {"endpointSelector": {"matchLabels": {"app": "api"}}, "ingress": [{}]})]
    s = state(*objects, dataplane="ebpf")
    assert not evaluate(s, "prod/web", "prod/api", 80).allowed
    objects[-1] = cnp("prod/same-ns", {"endpointSelector": {}, "ingress": [{"fromEndpoints": [{}]}]})
    s = state(*objects, dataplane="ebpf")
    assert evaluate(s, "prod/web", "prod/api", 80).allowed
    assert not evaluate(s, "x/web", "prod/api", 80).allowed


def test_ipblock_does_not_match_pods_on_cilium() -> None:
    objects = [ns("prod"), pod("prod/api", {"app": "api"}), pod("prod/web", {"app": "web"}),
               netpol("prod/out", {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Egress"],
                                   "egress": [{"to": [{"ipBlock": {"cidr": "10.244.0.0/16"}}]}]})]
    assert evaluate(state(*objects), "prod/web", "prod/api", 80).allowed
    assert not evaluate(state(*objects, dataplane="ebpf"), "prod/web", "prod/api", 80).allowed
