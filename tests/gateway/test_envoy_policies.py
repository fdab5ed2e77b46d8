"""Envoy Gateway's policies on `knetsim route --gateway` (gateway/envoypolicies.py).

Given examples/gateway/policies — a portal whose routes a SecurityPolicy (CORS; basic auth with source
ranges; external authorization by httpbin), a BackendTrafficPolicy (a local rate limit per client, a
body limit) and a ClientTrafficPolicy (the client address from X-Forwarded-For) guard — then each
request gets what Envoy Gateway's filters give it, in their order, with Envoy's own status, headers
and words; a policy of the wrong shape is ignored where Envoy Gateway would refuse it, never a crash.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from knetsim import Cluster
from knetsim.cli.main import cli
from knetsim.gateway import envoypolicies
from knetsim.gateway import route as gateway_route
from knetsim.model.http import HTTPRequest

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "examples" / "gateway" / "policies"
ALICE = "Basic " + base64.b64encode(b"alice:wonderland").decode()


def _route(host: str, *extra: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["route", "-f", str(POLICIES), "--gateway", "portal/portal", "--host", host,
                                      *extra, "-o", "json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)


def test_cors_preflight_is_answered_by_envoy_and_an_allowed_origin_gets_its_headers() -> None:
    code, out = _route("api.portal.example", "--method", "OPTIONS", "--header", "Origin: https://app.portal.example",
                       "--header", "Access-Control-Request-Method: POST")
    assert (code, out["outcome"], out["http_status"]) == (1, "preflight", 200)
    assert out["response_headers"] == {"access-control-allow-origin": "https://app.portal.example",
                                       "access-control-allow-methods": "GET,POST",
                                       "access-control-allow-headers": "Content-Type",
                                       "access-control-max-age": "600"}
    code, out = _route("api.portal.example", "--header", "Origin: https://app.portal.example")
    assert (code, out["outcome"]) == (0, "proxied")
    assert out["response_headers"] == {"access-control-allow-origin": "https://app.portal.example"}
    code, out = _route("api.portal.example", "--header", "Origin: https://evil.example")
    assert (code, out["outcome"], out["response_headers"]) == (0, "proxied", {})


def test_basic_auth_and_source_ranges_in_envoys_order() -> None:
    # No credentials: basic_auth answers 401 before RBAC looks at the address.
    code, out = _route("admin.portal.example")
    assert (out["outcome"], out["http_status"]) == ("unauthorized", 401)
    assert out["response_headers"] == {"www-authenticate": 'Basic realm="http://admin.portal.example/"'}
    # alice from the office network (X-Forwarded-For, one trusted hop) is let through.
    code, out = _route("admin.portal.example", "--header", f"Authorization: {ALICE}",
                       "--header", "X-Forwarded-For: 10.1.2.3")
    assert (code, out["outcome"], out["policies"]["client"]) == (0, "proxied", "10.1.2.3")
    # ... but not from the guest range inside it (the Deny rule comes first), nor from outside.
    for address, rule in (("10.66.0.9", "rule guests: Deny"), ("198.51.100.7", "defaultAction Deny")):
        code, out = _route("admin.portal.example", "--header", f"Authorization: {ALICE}",
                           "--header", f"X-Forwarded-For: {address}")
        assert (code, out["outcome"], out["http_status"]) == (1, "denied", 403)
        assert rule in out["summary"]
    # Wrong password: 401, whatever the address.
    wrong = "Basic " + base64.b64encode(b"alice:queen").decode()
    code, out = _route("admin.portal.example", "--header", f"Authorization: {wrong}",
                       "--header", "X-Forwarded-For: 10.1.2.3")
    assert out["outcome"] == "unauthorized"
    assert out["policies"]["steps"] == ["ClientTrafficPolicy portal/portal-client-ip clientIPDetection: the client is "
                                        "10.1.2.3", "SecurityPolicy portal/admin-access basicAuth: wrong credentials "
                                        "for 'alice' (Envoy reads only {SHA} hashes)"]


def test_external_authorization_asks_the_auth_service_and_passes_its_denial_on() -> None:
    code, out = _route("reports.portal.example")
    assert (code, out["outcome"], out["http_status"]) == (1, "unauthorized", 401)
    assert out["response_headers"] == {"www-authenticate": 'Basic realm="Fake Realm"'}  # httpbin's own
    code, out = _route("reports.portal.example", "--header", f"Authorization: {ALICE}")
    assert (code, out["outcome"]) == (0, "proxied")


def test_the_local_rate_limit_lets_a_burst_through_up_to_the_bucket() -> None:
    code, out = _route("api.portal.example", "--burst", "10")
    assert (code, out["outcome"]) == (0, "proxied")
    assert out["policies"]["burst"] == {"requests": 10, "through": 3, "others_get": 429}
    assert out["policies"]["rate_limits"] == [{"rule": "BackendTrafficPolicy portal/api-limits rule 0",
                                               "requests": 3, "per_seconds": 60,
                                               "bucket": "portal/api-limits#0:client=203.0.113.10"}]
    text = CliRunner().invoke(cli, ["route", "-f", str(POLICIES), "--gateway", "portal/portal", "--host",
                                    "api.portal.example", "--burst", "10"]).output
    assert "Burst:       10 requests at once: 3 through, 7 get 429 (local_rate_limited)" in text


def test_the_request_buffer_limit_refuses_a_larger_body() -> None:
    code, out = _route("api.portal.example", "--method", "POST", "--body-size", "1025")
    assert (code, out["outcome"], out["http_status"]) == (1, "payload-too-large", 413)
    code, out = _route("api.portal.example", "--method", "POST", "--body-size", "1024")
    assert out["outcome"] == "proxied"


def test_without_a_client_traffic_policy_x_forwarded_for_is_not_the_client() -> None:
    docs = [d for f in sorted(POLICIES.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
    docs = [d for d in docs if d["kind"] != "ClientTrafficPolicy"]
    state = Cluster.from_yaml(yaml.safe_dump_all(docs)).state
    request = HTTPRequest("admin.portal.example", headers=(("Authorization", ALICE), ("X-Forwarded-For", "10.1.2.3")))
    result = gateway_route(state, "portal/portal", request)
    assert (result.outcome, result.policy.client if result.policy else None) == ("denied", "203.0.113.10")
    # --client-ip is the peer's address itself.
    inside = HTTPRequest("admin.portal.example", headers=(("Authorization", ALICE),), client_ip="10.9.9.9")
    assert gateway_route(state, "portal/portal", inside).outcome == "proxied"


def _policy(kind: str, name: str, spec: dict[str, Any], created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": kind,
            "metadata": {"name": name, "namespace": "portal", "creationTimestamp": created}, "spec": spec}


def _with(*extra: dict[str, Any]) -> Any:
    docs = [d for f in sorted(POLICIES.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
    return Cluster.from_yaml(yaml.safe_dump_all([*docs, *extra])).state


def test_a_route_policy_takes_precedence_over_the_gateways_and_the_older_of_two_wins() -> None:
    gateway_wide = _policy("SecurityPolicy", "everyone-denied", {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "portal"}],
        "authorization": {"defaultAction": "Deny"}})
    state = _with(gateway_wide)
    # A route with a SecurityPolicy of its own ignores the Gateway's; the others get the Gateway's.
    api = gateway_route(state, "portal/portal", HTTPRequest("api.portal.example"))
    assert api.outcome == "proxied" and api.policy is not None
    assert api.policy.policies[0] == "SecurityPolicy portal/api-cors"
    none = envoypolicies.attached(state, "portal/portal", "http", "HTTPRoute", "portal/unrouted")
    assert none.security is not None and none.security.key == "portal/everyone-denied"
    # Of two for the same route, the older applies (an object read offline without creationTimestamp is new).
    older = _policy("SecurityPolicy", "zz-older", {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "api"}],
        "authorization": {"defaultAction": "Deny"}}, created="2020-06-01T00:00:00Z")
    api = gateway_route(_with(gateway_wide, older), "portal/portal", HTTPRequest("api.portal.example"))
    assert api.outcome == "denied" and api.policy is not None
    assert api.policy.policies[0] == "SecurityPolicy portal/zz-older"
    # A sectionName on a route names a rule, on a Gateway a listener.
    on_listener = _policy("SecurityPolicy", "on-listener", {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "portal",
                        "sectionName": "http"}], "authorization": {"defaultAction": "Allow"}})
    attached = envoypolicies.attached(_with(gateway_wide, on_listener), "portal/portal", "http", "HTTPRoute",
                                      "portal/unrouted")
    assert attached.security is not None and attached.security.key == "portal/on-listener"


def test_a_basic_auth_secret_that_is_missing_makes_envoy_gateway_answer_500() -> None:
    broken = _policy("SecurityPolicy", "admin-access", {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "admin"}],
        "basicAuth": {"users": {"name": "nobody"}}})
    state = _with(broken)
    result = gateway_route(state, "portal/portal", HTTPRequest("admin.portal.example"))
    assert (result.outcome, result.http_status) == ("invalid-policy", 500)
    assert "Secret portal/nobody (key .htpasswd) is missing" in result.summary


@pytest.mark.parametrize("spec", [
    {"targetRefs": "HTTPRoute/api", "cors": []},
    {"targetRefs": [{"kind": "HTTPRoute", "name": "api"}], "cors": "everyone", "basicAuth": [1],
     "authorization": {"rules": "all", "defaultAction": 7}, "extAuth": {"http": {"backendRefs": [None]}}},
    {"targetRef": {"kind": "HTTPRoute", "name": "api"}, "rateLimit": {"local": {"rules": [{"limit": {
        "requests": "many", "unit": "Fortnight"}, "clientSelectors": [{"sourceCIDR": {"value": "not-a-cidr"},
                                                                       "headers": "x"}]}]}},
     "requestBuffer": {"limit": {"bytes": 1}}, "clientIPDetection": {"xForwardedFor": {"numTrustedHops": "two"}}},
])
def test_a_policy_of_the_wrong_shape_is_never_a_crash(spec: dict[str, Any]) -> None:
    for kind in envoypolicies.POLICY_KINDS:
        state = _with(_policy(kind, "odd", spec, created="2025-01-01T00:00:00Z"))
        for method, headers in (("GET", ()), ("OPTIONS", (("Origin", "https://x"),
                                                          ("Access-Control-Request-Method", "GET")))):
            request = HTTPRequest("api.portal.example", "/", method, headers=(*headers, ("X-Forwarded-For", "1.2.3.4")),
                                  body_size=10)
            result = gateway_route(state, "portal/portal", request, burst=5)
            assert result.outcome in ("proxied", "preflight", "denied", "unauthorized", "invalid-policy",
                                      "payload-too-large")


def test_token_buckets_refill_each_interval() -> None:
    now = [1000.0]
    buckets = envoypolicies.TokenBuckets(lambda: now[0])
    bucket = envoypolicies.Bucket("p#0:client=1.2.3.4", 2, 60, "BackendTrafficPolicy p rule 0")
    assert buckets.take([bucket]) is None and buckets.take([bucket]) is None
    assert buckets.take([bucket]) == (bucket, 60)
    now[0] += 59.5
    assert buckets.take([bucket]) == (bucket, 1)
    now[0] += 0.5
    assert buckets.take([bucket]) is None


def test_a_security_policy_on_a_grpcroute_answers_in_grpc_terms() -> None:
    tls = ROOT / "examples" / "gateway" / "tls"
    docs = [d for f in sorted(tls.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
    only_office = {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "SecurityPolicy",
                   "metadata": {"name": "echo-office", "namespace": "edge"},
                   "spec": {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "GRPCRoute", "name": "echo"}],
                            "authorization": {"defaultAction": "Deny", "rules": [
                                {"action": "Allow", "principal": {"clientCIDRs": ["10.0.0.0/8"]}}]}}}
    files = ["-f", "-"]
    method = "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/Echo"
    result = CliRunner().invoke(cli, ["route", *files, "--gateway", "edge/edge", "--protocol", "grpc", "--scheme",
                                      "https", "--host", "grpc.shop.example", "--grpc-method", method, "-o", "json"],
                                input=yaml.safe_dump_all([*docs, only_office]))
    out = json.loads(result.stdout)
    assert (result.exit_code, out["outcome"], out["grpc_status"], out["grpc_status_name"]) == \
        (1, "denied", 7, "PERMISSION_DENIED")
    assert out["policies"]["policies"] == ["SecurityPolicy edge/echo-office"]
    text = CliRunner().invoke(cli, ["route", *files, "--gateway", "edge/edge", "--protocol", "grpc", "--scheme",
                                    "https", "--host", "grpc.shop.example", "--grpc-method", method],
                              input=yaml.safe_dump_all([*docs, only_office])).output
    assert "Filter:      SecurityPolicy edge/echo-office authorization: no rule holds client 203.0.113.10: " \
           "defaultAction Deny" in text
