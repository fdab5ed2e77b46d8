"""Migrating annotated Ingresses: `migrate ingress` writes each family's Gateway API equivalent, and `migrate
check` reports exactly the differences that remain — and catches a hand migration that drops one.

Given one input per annotation family (tests/nginxproof/data and examples/, the inputs `verify nginx` proves),
when converted and checked, then every remaining difference is one the conversion notes as a real
departure of Envoy Gateway from ingress-nginx; when the converted source range or canary is removed,
then the check reports it.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from knetsim import Cluster
from knetsim.migration import check, convert

from . import certgen

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "nginxproof" / "data"
EXAMPLES = {"blog": [ROOT / "examples" / "ingress-blog" / "ingress.yaml"]}


def _docs(family: str) -> list[dict[str, Any]]:
    files = EXAMPLES.get(family) or [DATA / "backends.yaml", DATA / f"{family}.yaml"]
    return [d for name in files for d in yaml.safe_load_all(name.read_text()) if d]


def _both(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> Cluster:
    return Cluster.from_yaml(yaml.safe_dump_all([*old, *new]))


def _converted(family: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    old = _docs(family)
    conversion = convert(Cluster.from_yaml(yaml.safe_dump_all(old)).state)
    return old, conversion.objects, [f"{n.severity}: {n.message}" for n in conversion.notes]


def _differences(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> dict[str, list[str]]:
    result = check(_both(old, new).state)
    return {c.describe(): c.differences for c in result.differences}


def test_canary_header_cookie_and_weight_convert_without_a_difference() -> None:
    old, new, notes = _converted("backend")
    route = next(o for o in new if o["kind"] == "HTTPRoute" and o["metadata"]["name"] == "shop")
    rules = route["spec"]["rules"]
    assert [r["matches"][0].get("headers", [{}])[0].get("value") for r in rules[:4]] == [
        "always", "never", "(?:^|.*;\\s*)canary=always(?:;.*)?", "(?:^|.*;\\s*)canary=never(?:;.*)?"]
    assert rules[-1]["backendRefs"] == [{"name": "web", "port": 80, "weight": 90},
                                        {"name": "web-v2", "port": 80, "weight": 10}]
    assert _differences(old, new) == {}
    assert any("canary Ingress default/shop-canary shadows web:80" in n for n in notes)


def test_a_lost_canary_is_a_reported_difference() -> None:
    old, new, _ = _converted("backend")
    route = next(o for o in new if o["kind"] == "HTTPRoute" and o["metadata"]["name"] == "shop")
    route["spec"]["rules"] = [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                               "backendRefs": [{"name": "web", "port": 80}]}]
    lost = _differences(old, new)
    assert lost["GET http://canary.example.com/ [X-Canary: always]"] == ["backend"]
    assert lost["GET http://canary.example.com/ [Cookie: canary=always]"] == ["backend"]
    assert lost["GET http://canary.example.com/"] == ["weights"]  # 90/10 on the Ingress side, all to web


def test_source_ranges_convert_and_a_dropped_range_is_reported() -> None:
    old, new, _ = _converted("access")
    policy = next(o for o in new if o["kind"] == "SecurityPolicy" and o["metadata"]["name"] == "internal-security")
    assert policy["spec"]["authorization"] == {"defaultAction": "Deny", "rules": [
        {"name": "denylist-source-range", "action": "Deny", "principal": {"clientCIDRs": ["10.66.0.0/16"]}},
        {"name": "whitelist-source-range", "action": "Allow",
         "principal": {"clientCIDRs": ["10.0.0.0/8", "192.168.1.7/32"]}}]}
    kept = {k: v for k, v in _differences(old, new).items() if "internal.example.com" in k}
    assert kept == {}
    dropped = [o for o in new if o is not policy]
    lost = {k: v for k, v in _differences(old, dropped).items() if "internal.example.com" in k}
    assert lost["GET http://internal.example.com/ [from 203.0.113.10]"] == ["status", "backend"]
    assert lost["GET http://internal.example.com/ [from 10.66.0.1]"] == ["status", "backend"]


def _sha(password: str) -> str:
    return "{SHA}" + base64.b64encode(hashlib.sha1(password.encode()).digest()).decode()


def test_basic_auth_needs_a_sha_htpasswd_secret_and_then_agrees_but_for_the_realm() -> None:
    old, new, notes = _converted("access")
    assert any("re-hash the users of default/basic-auth" in n for n in notes)
    without = _differences(old, new)
    assert without["GET http://staff.example.com/ [Authorization: Basic YWxpY2U6d29uZGVybGFuZA==]"] == \
        ["status", "backend"]  # Envoy: the SecurityPolicy's Secret is missing, 500
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "basic-auth-htpasswd", "namespace": "default"},
              "stringData": {".htpasswd": f"alice:{_sha('wonderland')}\n"}}
    staff = {k: v for k, v in _differences(old, [*new, secret]).items() if k.startswith("GET http://staff")}
    assert "GET http://staff.example.com/ [Authorization: Basic YWxpY2U6d29uZGVybGFuZA==]" not in staff
    # A refused request: 401 on both sides, with nginx's realm and Envoy's (the request URL).
    assert staff["GET http://staff.example.com/"] == ["header www-authenticate"]


@pytest.mark.parametrize(("family", "expected"), [
    # ingress-nginx drops the trailing slash on from-to-www redirects; a relative-redirects Location stays relative.
    ("redirects", {"location"}),
    # The /api(/|$)(.*) idiom becomes PathPrefix /api: case-sensitive, where nginx's regex is not.
    ("rewrites", {"status", "backend"}),
    # Envoy's CORS filter: no headers without Origin, the origin echoed for '*', preflights answered 200 (the
    # exposed headers agree: both send them on preflights too, as conformance httproute-cors.go expects).
    ("cors", {"status", "header access-control-allow-origin", "header access-control-allow-methods",
              "header access-control-allow-headers", "header access-control-allow-credentials",
              "header access-control-max-age"}),
    # custom-http-errors and default-backend have no Envoy equivalent; a burst meets Envoy's bucket (429).
    ("limits", {"status", "backend", "burst"}),
    # ingress-nginx checks the body size even where no path matches; Envoy answers 404 first.
    ("blog", {"status"}),
])
def test_what_remains_after_conversion_is_the_documented_departures(family: str, expected: set[str]) -> None:
    old, new, _ = _converted(family)
    found = set().union(*_differences(old, new).values()) if _differences(old, new) else set()
    assert found == expected


def test_the_burst_difference_names_both_limits() -> None:
    old, new, notes = _converted("limits")
    result = check(_both(old, new).state)
    [burst] = [c for c in result.differences if c.burst]
    assert burst.ingress.describe() == "10 of 100 at once, then 503"  # limit-connections 10 before limit-rps 5×5+1
    assert burst.gateway.describe() == "5 of 100 at once, then 429"
    assert any("limit-connections 10: Envoy limits connections per listener" in n for n in notes)


def test_ssl_passthrough_without_the_controller_flag_has_no_effect() -> None:
    _old, new, notes = _converted("backend")
    assert not [o for o in new if o["kind"] == "TLSRoute"]
    assert any("ssl-passthrough has no effect: the controller runs without --enable-ssl-passthrough" in n
               for n in notes)


# --- the TLS half: spec.tls, ssl-passthrough, gRPC --------------------------------------------------


def _one(annotations: dict[str, str], *, host: str = "g.example.com", path: str = "/", port: str = "grpc",
         tls: bool = False, path_type: str = "Prefix") -> list[dict[str, Any]]:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "greeter", "namespace": "default"},
           "spec": {"selector": {"app": "greeter"}, "ports": [{"name": port, "port": 50051}]}}
    ing: dict[str, Any] = {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "greeter", "namespace": "default",
                     "annotations": {f"nginx.ingress.kubernetes.io/{k}": v for k, v in annotations.items()}},
        "spec": {"ingressClassName": "nginx", "rules": [{"host": host, "http": {"paths": [
            {"path": path, "pathType": path_type, "backend": {"service": {"name": "greeter",
                                                                          "port": {"number": 50051}}}}]}}]}}
    if tls:
        ing["spec"]["tls"] = [{"hosts": [host], "secretName": "greeter-tls"}]
    return [svc, ing]


def test_backend_protocol_grpc_becomes_a_grpcroute_on_the_https_listener() -> None:
    result = convert(Cluster.from_yaml(yaml.safe_dump_all(_one({"backend-protocol": "GRPC"}, tls=True))).state)
    [route] = [o for o in result.objects if o["kind"] == "GRPCRoute"]
    assert route["spec"] == {"parentRefs": [{"name": "eg-gateway", "sectionName": "https-g-example-com"}],
                             "hostnames": ["g.example.com"],
                             "rules": [{"backendRefs": [{"name": "greeter", "port": 50051}]}]}
    gateway = next(o for o in result.objects if o["kind"] == "Gateway")
    https = gateway["spec"]["listeners"][1]
    assert https["tls"] == {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": "greeter-tls"}]}
    assert not [o for o in result.objects if o["kind"] == "HTTPRoute" and o["metadata"]["name"] == "greeter"]


def test_a_grpc_service_path_becomes_a_method_match_and_grpcs_a_backend_tls_policy() -> None:
    # (A dot is no Prefix path to the controller's admission webhook: gRPC paths are ImplementationSpecific.)
    docs = _one({"backend-protocol": "GRPCS"}, path="/helloworld.Greeter", path_type="ImplementationSpecific")
    result = convert(Cluster.from_yaml(yaml.safe_dump_all(docs)).state)
    [route] = [o for o in result.objects if o["kind"] == "GRPCRoute"]
    assert route["spec"]["rules"] == [{"backendRefs": [{"name": "greeter", "port": 50051}],
                                       "matches": [{"method": {"service": "helloworld.Greeter"}}]}]
    [policy] = [o for o in result.objects if o["kind"] == "BackendTLSPolicy"]
    target = {"group": "", "kind": "Service", "name": "greeter", "sectionName": "grpc"}
    assert policy["spec"] == {"targetRefs": [target], "validation": {"wellKnownCACertificates": "System",
                                                                     "hostname": "greeter.default.svc"}}


def test_backend_protocol_https_becomes_a_backend_tls_policy() -> None:
    result = convert(Cluster.from_yaml(yaml.safe_dump_all(_one({"backend-protocol": "HTTPS"}, port="https"))).state)
    assert [o["metadata"]["name"] for o in result.objects if o["kind"] == "BackendTLSPolicy"] == ["greeter-tls"]
    assert any(o["kind"] == "HTTPRoute" for o in result.objects)


def test_ssl_passthrough_with_the_controller_flag_becomes_a_tlsroute() -> None:
    from tests.ingress.builders import controller, flatten, ingress_class

    from knetsim.cluster.config import ClusterConfig

    docs = flatten(controller("ingress-nginx", "k8s.io/ingress-nginx", "nginx",
                              extra_args=("--enable-ssl-passthrough",)),
                   ingress_class("nginx", "k8s.io/ingress-nginx"), _one({"ssl-passthrough": "true"}, port="https"))
    state = Cluster.from_yaml(yaml.safe_dump_all(docs), config=ClusterConfig(ingress_controller=False)).state
    result = convert(state)
    [route] = [o for o in result.objects if o["kind"] == "TLSRoute"]
    assert route["spec"] == {"parentRefs": [{"name": "eg-gateway", "sectionName": "tls-g-example-com"}],
                             "hostnames": ["g.example.com"], "rules": [{"backendRefs": [{"name": "greeter",
                                                                                          "port": 50051}]}]}
    gateway = next(o for o in result.objects if o["kind"] == "Gateway")
    assert gateway["spec"]["listeners"][1] == {"name": "tls-g-example-com", "protocol": "TLS", "port": 443,
                                               "hostname": "g.example.com", "tls": {"mode": "Passthrough"}}


def _ingress(name: str, host: str, paths: list[tuple[str, str, str]], **annotations: str) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "default",
                         "annotations": {f"nginx.ingress.kubernetes.io/{k.replace('_', '-')}": v
                                         for k, v in annotations.items()}},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": host, "http": {"paths": [
                {"path": p, "pathType": t, "backend": {"service": {"name": svc, "port": {"number": 80}}}}
                for p, t, svc in paths]}}]}}


def _backends() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DATA / "backends.yaml").read_text()) if d]


def test_a_server_alias_is_a_hostname_of_the_hosts_routes() -> None:
    old = [*_backends(), _ingress("shop", "shop.example.com", [("/", "Prefix", "web")],
                                  server_alias="shop.example.net")]
    conversion = convert(Cluster.from_yaml(yaml.safe_dump_all(old)).state)
    route = next(o for o in conversion.objects if o["kind"] == "HTTPRoute")
    assert route["spec"]["hostnames"] == ["shop.example.com", "shop.example.net"]
    assert _differences(old, conversion.objects) == {}


def test_a_regex_host_keeps_its_root_a_prefix_and_names_what_envoy_gateway_ranks_differently() -> None:
    # Given a regex host (use-regex) with /, /app and the /app/admin(/|$)(.*) → /$2 idiom: Envoy Gateway ranks any
    # RegularExpression above any PathPrefix, where nginx tries the longest regex location first.
    old = [*_backends(),
           _ingress("site", "site.example.com", [("/", "Prefix", "web"), ("/app", "Prefix", "web"),
                                                 ("/app/admin(/|$)(.*)", "ImplementationSpecific", "web-v2")],
                    use_regex="true", rewrite_target="/$2")]
    conversion = convert(Cluster.from_yaml(yaml.safe_dump_all(old)).state)
    route = next(o for o in conversion.objects if o["kind"] == "HTTPRoute")
    paths = [m["path"] for r in route["spec"]["rules"] for m in r["matches"]]
    assert {"type": "PathPrefix", "value": "/"} in paths  # ~* "^/" takes every path, as PathPrefix / does
    assert {"type": "PathPrefix", "value": "/app/admin"} in paths  # the idiom, for ReplacePrefixMatch
    [ranked] = [n.message for n in conversion.notes if "Envoy Gateway ranks" in n.message]
    assert ranked.startswith("PathPrefix /app/admin on host site.example.com: Envoy Gateway ranks RegularExpression "
                             "(?i)/app.* (a shorter nginx path) above any PathPrefix")
    differences = _differences(old, conversion.objects)
    assert differences["GET http://site.example.com/app/admin/x"] == ["backend", "path"]


def test_the_annotated_store_example_is_its_conversion_plus_the_htpasswd_secret() -> None:
    state = Cluster.from_paths([str(ROOT / "examples" / "ingress-nginx")]).state
    generated = convert(state).objects
    written = [d for d in yaml.safe_load_all((ROOT / "examples" / "ingress-nginx-gateway" / "gateway.yaml").read_text())
               if d]
    assert written == generated
    result = check(Cluster.from_paths([str(ROOT / "examples" / "ingress-nginx"),
                                       str(ROOT / "examples" / "ingress-nginx-gateway")]).state)
    found = set().union(*(c.differences for c in result.differences))
    # Envoy authenticates before it authorizes and before the body limit, has no auth-signin, matches the rewrite
    # prefix case-sensitively, keeps the trailing slash of a from-to-www redirect, and answers CORS its own way.
    assert found == {"status", "header www-authenticate", "location", "weights", "path",
                     "upstream header x-forwarded-prefix", "header access-control-allow-headers",
                     "header access-control-allow-methods", "header access-control-max-age"}



def test_an_https_host_serves_the_same_certificate_and_redirects_http_alike() -> None:
    # Given a TLS host: ingress-nginx terminates with the Ingress's Secret and redirects http with 308. The
    # certificate is a real one: an Envoy Gateway listener whose Secret does not parse is not programmed.
    tls = certgen.tls_secret("default", "shop-tls", certgen.leaf("shop.example.com", ["shop.example.com"]))
    shop = _ingress("shop", "shop.example.com", [("/", "Prefix", "web")])
    shop["spec"]["tls"] = [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}]
    old = [*_backends(), tls, shop]
    conversion = convert(Cluster.from_yaml(yaml.safe_dump_all(old)).state)
    result = check(_both(old, conversion.objects).state)
    https = [c for c in result.comparisons if c.request.scheme == "https"]
    assert https and all(c.ingress.certificate == c.gateway.certificate == "default/shop-tls" for c in https)
    http = next(c for c in result.comparisons if c.request.url == "http://shop.example.com/")
    # lua_ingress.lua drops the trailing slash of the URI; a browser reads both Locations alike.
    assert (http.ingress.status, http.ingress.location) == (308, "https://shop.example.com") and http.same
    assert result.differences == []
    # When the converted listener names another certificate, every https request reports it.
    for obj in conversion.objects:
        if obj["kind"] == "Gateway":
            obj["spec"]["listeners"][1]["tls"]["certificateRefs"][0]["name"] = "other-tls"
    other = certgen.tls_secret("default", "other-tls", certgen.leaf("other", ["shop.example.com"]))
    moved = check(_both(old, [*conversion.objects, other]).state)
    # Every https request, and the TLS handshake with the host's name, report it.
    assert {c.request.scheme for c in moved.differences} == {"https", "tls"}
    assert all(c.differences == ["certificate"] for c in moved.differences)
    [handshake] = [c for c in moved.differences if c.request.scheme == "tls"]
    assert (handshake.ingress.certificate, handshake.gateway.certificate) == ("default/shop-tls", "default/other-tls")
