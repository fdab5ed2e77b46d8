"""`migrate ingress --implementation NAME` writes that implementation's own extension objects, and `migrate check`
and `route` answer as that implementation: what knetsim does not simulate is named on the answers it could change.

Restated from kubernetes-sigs/ingress2gateway's emitters (pkg/i2gw/emitters: Envoy Gateway's SecurityPolicy and
BackendTrafficPolicy, kgateway's TrafficPolicy buffer, agentgateway's missing body limit, GKE's GCPBackendPolicy
session affinity) and Envoy Gateway's retry (internal/xds/translator/route.go: previous_hosts, the default
retry_on). The Envoy Gateway objects are validated against Envoy Gateway's own CRDs (test data, fetched by commit
and checked by sha256 through tests/upstream.py, never kept in the repository).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from tests.upstream import PinnedFile, pinned_text

from knetsim import Cluster
from knetsim.cli.main import cli
from knetsim.gateway import route
from knetsim.model.http import HTTPRequest

ROOT = Path(__file__).resolve().parents[2]
# envoyproxy/gateway's generated CRDs of the two policy kinds migrate writes (Apache-2.0), at a commit of 2026-08-21.
_EG_COMMIT = "d32f28294245e454d20f81d323d626a90e660c1e"
_EG_CRDS = "charts/gateway-helm/charts/crds/crds/generated/"
ENVOY_GATEWAY_CRDS = (
    PinnedFile("envoyproxy/gateway", _EG_COMMIT, _EG_CRDS + "gateway.envoyproxy.io_backendtrafficpolicies.yaml",
               "cd75a4c222df5487aa9ca8957b48bcc3255eb25de02ed9153faf620bc160f786"),
    PinnedFile("envoyproxy/gateway", _EG_COMMIT, _EG_CRDS + "gateway.envoyproxy.io_securitypolicies.yaml",
               "6412914ec5b7c48f58b85f60a80767ba15a50c8d374480cf5f2d872e4a764466"),
)
TLS_OLD = ROOT / "examples" / "ingress-nginx-tls"
TLS_CA = ROOT / "examples" / "ingress-nginx-tls-ca"
TLS_NEW = ROOT / "examples" / "ingress-nginx-tls-gateway"

WEB = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}},
       {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx",
                                                       "ports": [{"containerPort": 8080}]}]}}}}]


def ingress(annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "shop", "namespace": "default",
                         "annotations": {f"nginx.ingress.kubernetes.io/{k}": v for k, v in annotations.items()}},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": "shop.example", "http": {"paths": [
                {"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}


EVERYTHING = {"proxy-connect-timeout": "15", "proxy-next-upstream": "error timeout http_503",
              "proxy-next-upstream-tries": "2", "affinity": "cookie", "session-cookie-max-age": "3600",
              "proxy-body-size": "8m", "whitelist-source-range": "10.0.0.0/8", "enable-cors": "true",
              "limit-rps": "5"}


def migrate(tmp_path: Path, docs: list[dict[str, Any]], implementation: str) -> tuple[Path, Path, dict[str, Any]]:
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump_all(docs))
    made = CliRunner().invoke(cli, ["migrate", "ingress", "-f", str(old), "--implementation", implementation,
                                    "-o", "json"])
    assert made.exit_code == 0, made.output
    data = json.loads(made.output)
    new = tmp_path / f"new-{implementation}.yaml"
    new.write_text(yaml.safe_dump_all(data["objects"]))
    return old, new, data


def check(old: Path, new: Path) -> dict[str, Any]:
    out = CliRunner().invoke(cli, ["migrate", "check", "-f", str(old), "-f", str(new), "-o", "json"])
    return json.loads(out.stdout if hasattr(out, "stdout") else out.output)


def _of(data: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [o for o in data["objects"] if o["kind"] == kind]


def test_envoy_gateway_gets_timeout_and_retry_in_its_backend_traffic_policy(tmp_path: Path) -> None:
    """Given proxy-connect-timeout 15 and proxy-next-upstream "error timeout http_503" with 2 tries, then the route's
    BackendTrafficPolicy says timeout.tcp.connectTimeout 15s and one retry on connect failures, resets and 503."""
    _old, _new, data = migrate(tmp_path, [ingress(EVERYTHING), *WEB], "envoy-gateway")
    traffic = next(o for o in _of(data, "BackendTrafficPolicy") if o["metadata"]["name"] == "shop-traffic")["spec"]
    assert traffic["timeout"] == {"tcp": {"connectTimeout": "15s"}}
    assert traffic["retry"] == {"numRetries": 1, "retryOn": {
        "triggers": ["connect-failure", "reset", "retriable-status-codes"], "httpStatusCodes": [503]}}
    messages = [n["message"] for n in data["notes"]]
    assert any(m.startswith("proxy-next-upstream error timeout http_503 (tries 2): BackendTrafficPolicy retry "
                            "numRetries 1") for m in messages)
    assert not any("proxy-next-upstream" in m and "not converted" in m for m in messages)


def test_the_envoy_gateway_policies_written_are_valid_for_envoy_gateways_crds(tmp_path: Path) -> None:
    """Given every annotation the conversion writes a policy for, then `knetsim validate` with Envoy Gateway's
    SecurityPolicy and BackendTrafficPolicy CRDs in the input admits every object; a retry trigger the CRD does not
    enumerate is refused (the check can fail)."""
    docs = [ingress({**EVERYTHING, "auth-type": "basic", "auth-secret": "users"}), *WEB]
    _old, new, data = migrate(tmp_path, docs, "envoy-gateway")
    crds = tmp_path / "crds.yaml"
    crds.write_text("\n---\n".join(pinned_text(pin) for pin in ENVOY_GATEWAY_CRDS))
    kinds = {o["kind"] for o in data["objects"]}
    assert {"SecurityPolicy", "BackendTrafficPolicy"} <= kinds
    valid = CliRunner().invoke(cli, ["validate", "-f", str(crds), "-f", str(new)])
    assert valid.exit_code == 0, valid.output
    broken = new.read_text().replace("- connect-failure", "- connect-fail")
    (tmp_path / "broken.yaml").write_text(broken)
    refused = CliRunner().invoke(cli, ["validate", "-f", str(crds), "-f", str(tmp_path / "broken.yaml")])
    assert refused.exit_code == 2
    assert 'spec.retry.retryOn.triggers[0]: Unsupported value: "connect-fail"' in refused.output


def test_kgateway_gets_a_traffic_policy_buffer_and_check_names_it_on_the_answers(tmp_path: Path) -> None:
    """Given the same Ingress for kgateway, then the body limits become TrafficPolicy buffer.maxRequestSize (the
    route's 8Mi, the Gateway's 1Mi), no Envoy Gateway object is written, every other policy field is named with its
    annotation as not converted, and `migrate check` names each TrafficPolicy with the requests it could change."""
    old, new, data = migrate(tmp_path, [ingress(EVERYTHING), *WEB], "kgateway")
    assert not [o for o in data["objects"] if o["apiVersion"].startswith("gateway.envoyproxy.io/")]
    policies = {o["metadata"]["name"]: o for o in _of(data, "TrafficPolicy")}
    assert policies["shop-traffic"]["apiVersion"] == "gateway.kgateway.dev/v1alpha1"
    assert policies["shop-traffic"]["spec"] == {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "shop"}],
        "buffer": {"maxRequestSize": "8Mi"}}
    assert policies["eg-gateway-proxy-body-size"]["spec"]["buffer"] == {"maxRequestSize": "1Mi"}
    lost = " ".join(n["message"] for n in data["notes"] if "not converted" in n["message"])
    for field, annotation in (("authorization", "whitelist-source-range"), ("rateLimit", "limit-rps"),
                              ("loadBalancer", "affinity"), ("retry", "proxy-next-upstream"),
                              ("timeout", "proxy-connect-timeout")):
        assert field in lost and annotation in lost
    caveats = {c["subject"]: c["message"] for c in check(old, new)["caveats"]}
    assert "TrafficPolicy default/shop-traffic" in caveats
    assert "kgateway applies it to this request; knetsim reads it but does not simulate it" in \
        caveats["TrafficPolicy default/shop-traffic"]
    assert "GET http://shop.example/" in caveats["TrafficPolicy default/shop-traffic"]


def test_gke_gets_session_affinity_loses_cors_and_is_checked_on_its_load_balancer(tmp_path: Path) -> None:
    """Given the Ingress for GKE (no HTTPRouteCORS in its report), then the cookie affinity is a GCPBackendPolicy
    GENERATED_COOKIE with the cookie's max age on Service web, the CORS filter is removed (GKE would refuse the
    route) and named, and `migrate check` answers through GKE's Gateway (a load balancer outside the cluster):
    the source range and CORS that are lost show as differences, the GCPBackendPolicy as a caveat."""
    old, new, data = migrate(tmp_path, [ingress(EVERYTHING), *WEB], "gke")
    (policy,) = _of(data, "GCPBackendPolicy")
    assert policy["apiVersion"] == "networking.gke.io/v1"
    assert policy["spec"] == {"default": {"sessionAffinity": {"type": "GENERATED_COOKIE", "cookieTtlSec": 3600}},
                              "targetRef": {"group": "", "kind": "Service", "name": "web"}}
    (shop,) = [r for r in _of(data, "HTTPRoute") if r["metadata"]["name"] == "shop"]
    assert not any(f["type"] == "CORS" for rule in shop["spec"]["rules"] for f in rule.get("filters", []))
    assert any(n["field"].endswith("[nginx.ingress.kubernetes.io/enable-cors]") and "HTTPRouteCORS" in n["message"]
               for n in data["notes"])
    result = check(old, new)
    outside = next(d for d in result["differences"] if d["request"] == "GET http://shop.example/")
    assert outside["ingress"]["status"] == 403 and outside["gateway"]["backend"] == "default/web:80"
    assert any(c["subject"] == "GCPBackendPolicy default/web-affinity" for c in result["caveats"])


def test_agentgateway_names_the_body_limit_it_cannot_carry(tmp_path: Path) -> None:
    """Given the Ingress for agentgateway, then nothing but Gateway API objects is written and the body limit is
    named as not converted, with ingress2gateway's reason (no body limit for HTTPRoute targets)."""
    _old, _new, data = migrate(tmp_path, [ingress(EVERYTHING), *WEB], "agentgateway")
    assert {o["apiVersion"] for o in data["objects"]} == {"gateway.networking.k8s.io/v1"}
    assert any("requestBuffer (proxy-body-size)" in n["message"] and "no body size limit for HTTPRoute targets"
               in n["message"] for n in data["notes"])


def test_envoy_gateway_policies_do_not_apply_on_another_implementation() -> None:
    """Given the Envoy Gateway conversion with its GatewayClass moved to NGINX Gateway Fabric, then a client outside
    the source range is proxied (NGF does not read SecurityPolicy) and the answer names the policy it ignores; on
    Envoy Gateway the same request is denied."""
    docs = [ingress(EVERYTHING), *WEB]
    from knetsim.migration import convert

    objects = convert(Cluster.from_yaml(yaml.safe_dump_all(docs)).state).objects
    request = HTTPRequest("shop.example", "/", client_ip="203.0.113.10")
    eg = route(Cluster.from_yaml(yaml.safe_dump_all([*docs, *objects])).state, "default/eg-gateway", request)
    assert (eg.outcome, eg.http_status) == ("denied", 403)
    moved = copy.deepcopy(objects)
    for o in moved:
        if o["kind"] == "GatewayClass":
            o["spec"]["controllerName"] = "gateway.nginx.org/nginx-gateway-controller"
    ngf = route(Cluster.from_yaml(yaml.safe_dump_all([*docs, *moved])).state, "default/eg-gateway", request)
    assert ngf.outcome == "proxied"
    assert ("SecurityPolicy default/shop-security is Envoy Gateway's: NGINX Gateway Fabric does not read it, so it "
            "does not apply") in ngf.notes


def _tls_cluster(extra: list[dict[str, Any]]) -> Cluster:
    """The bank example (examples/ingress-nginx-tls, its conversion, the bank's CA for the BackendTLSPolicy) with a
    second statements Deployment whose pods mount no certificate: their own is not the bank CA's."""
    docs = [d for p in (TLS_OLD, TLS_NEW, TLS_CA) for f in sorted(p.glob("*.yaml"))
            for d in yaml.safe_load_all(f.read_text()) if d]
    base = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "statements")
    rogue = copy.deepcopy(base)
    rogue["metadata"]["name"] = "statements-canary"
    spec = rogue["spec"]["template"]["spec"]
    spec.pop("volumes", None)
    for c in spec["containers"]:
        c.pop("volumeMounts", None)
    return Cluster.from_yaml(yaml.safe_dump_all([*docs, rogue, *extra]))


def test_a_retry_on_connect_failure_sends_a_failed_backend_handshake_to_another_endpoint() -> None:
    """Given two statements pods of which one presents a certificate the BackendTLSPolicy refuses, then a request
    whose endpoint is that pod gets 503 without a retry; with a BackendTrafficPolicy retry on connect-failure it is
    proxied and the answer says it was retried on the other pod; a retry on status codes only does not help."""
    state = _tls_cluster([]).state
    gateway = next(k for k in state.gateways)
    failing = None
    for i in range(40):
        result = route(state, gateway, HTTPRequest("www.bank.example", f"/statements/r{i}", scheme="https"))
        if result.outcome == "backend-tls-failed":
            failing = f"/statements/r{i}"
            break
    assert failing is not None
    ns = gateway.split("/")[0]
    route_name = result.match.route.split("/")[1]

    def with_retry(retry: dict[str, Any]) -> Any:
        policy = {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "BackendTrafficPolicy",
                  "metadata": {"name": "retry", "namespace": ns},
                  "spec": {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute",
                                           "name": route_name}], "retry": retry}}
        return route(_tls_cluster([policy]).state, gateway,
                     HTTPRequest("www.bank.example", failing, scheme="https"))

    retried = with_retry({"numRetries": 2, "retryOn": {"triggers": ["connect-failure"]}})
    assert retried.outcome == "proxied", retried.summary
    assert any(n.startswith(f"BackendTrafficPolicy {ns}/retry retry: up to 2 retries on connection failures: the "
                            "TLS handshake with") and "which succeeded" in n for n in retried.notes)
    codes_only = with_retry({"numRetries": 2, "retryOn": {"triggers": ["retriable-status-codes"],
                                                          "httpStatusCodes": [503]}})
    assert codes_only.outcome == "backend-tls-failed"
    assert any("a failed TLS handshake is not retried" in n for n in codes_only.notes)


def test_a_grpc_call_names_the_extension_objects_its_implementation_would_apply() -> None:
    """Given the bank's GRPCRoute on kgateway (its class's controllerName changed) with a kgateway TrafficPolicy and
    an Envoy Gateway SecurityPolicy on the route, then the gRPC call's answer names both: the TrafficPolicy as read
    but not simulated, the SecurityPolicy as one kgateway does not read (it denies nothing)."""
    from knetsim.gateway.grpc import call_from, route_grpc

    target = [{"group": "gateway.networking.k8s.io", "kind": "GRPCRoute", "name": "payments"}]
    extra = [{"apiVersion": "gateway.kgateway.dev/v1alpha1", "kind": "TrafficPolicy",
              "metadata": {"name": "payments", "namespace": "bank"},
              "spec": {"targetRefs": target, "buffer": {"maxRequestSize": "1Mi"}}},
             {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "SecurityPolicy",
              "metadata": {"name": "payments", "namespace": "bank"},
              "spec": {"targetRefs": target, "authorization": {"defaultAction": "Deny"}}}]
    docs = [d for p in (TLS_OLD, TLS_NEW, TLS_CA) for f in sorted(p.glob("*.yaml"))
            for d in yaml.safe_load_all(f.read_text()) if d]
    for d in docs:
        if d["kind"] == "GatewayClass":
            d["spec"]["controllerName"] = "kgateway.dev/kgateway"
    state = Cluster.from_yaml(yaml.safe_dump_all([*docs, *extra])).state
    result = route_grpc(state, "bank/eg-gateway", call_from("grpc.bank.example",
                                                            "bank.payments.Payments/Pay", tls=True))
    assert result.outcome == "proxied", result.summary
    assert any(n.startswith("TrafficPolicy bank/payments (gateway.kgateway.dev) targets GRPCRoute bank/payments: "
                            "kgateway applies it") for n in result.notes)
    assert "SecurityPolicy bank/payments is Envoy Gateway's: kgateway does not read it, so it does not apply" \
        in result.notes


def test_envoy_gateway_policy_fields_knetsim_does_not_run_are_named_on_the_answer() -> None:
    """Given the converted route's BackendTrafficPolicy (affinity as loadBalancer) and a SecurityPolicy with a JWT
    provider, then the answer names loadBalancer and jwt as in force but not simulated; the fields it runs are
    not named."""
    docs = [ingress({"affinity": "cookie"}), *WEB]
    from knetsim.migration import convert

    objects = convert(Cluster.from_yaml(yaml.safe_dump_all(docs)).state).objects
    jwt = {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "SecurityPolicy",
           "metadata": {"name": "jwt", "namespace": "default"},
           "spec": {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "shop"}],
                    "jwt": {"providers": [{"name": "p", "remoteJWKS": {"uri": "https://idp.example/jwks"}}]}}}
    state = Cluster.from_yaml(yaml.safe_dump_all([*docs, *objects, jwt])).state
    result = route(state, "default/eg-gateway", HTTPRequest("shop.example", "/"))
    assert result.outcome == "proxied"
    named = [n for n in result.notes if "knetsim reads but does not simulate these fields" in n]
    assert [n.split(":")[0] for n in named] == ["SecurityPolicy default/jwt jwt",
                                                "BackendTrafficPolicy default/shop-traffic loadBalancer"]
