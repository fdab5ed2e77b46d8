"""`migrate check` for the TLS half: HTTPS hosts, ssl-passthrough, gRPC and HTTPS backends, end to end.

Given examples/ingress-nginx-tls (a bank served by ingress-nginx with --enable-ssl-passthrough: a website
with its certificate, a ledger that terminates TLS itself, a gRPC payments API, a statements service
the controller speaks HTTPS to) and examples/ingress-nginx-tls-gateway (what `migrate ingress` writes for
it, byte for byte), then the check sends TLS handshakes and gRPC calls beside the HTTP requests and finds
exactly one real departure — Envoy verifies the statements pods' certificate where ingress-nginx does
not — and none once the BackendTLSPolicy names the bank's CA (examples/ingress-nginx-tls-ca). When the
converted objects are changed so that they no longer do the same, each change is reported on the
handshake or call it affects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from knetsim import Cluster
from knetsim.cli.main import cli
from knetsim.gateway import route as gateway_route
from knetsim.ingress import route as ingress_route
from knetsim.migration import check
from knetsim.migration.tlsprobes import NO_HANDSHAKE
from knetsim.model.http import HTTPRequest

from . import bank_example

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "examples" / "ingress-nginx-tls"
NEW = ROOT / "examples" / "ingress-nginx-tls-gateway"
CA = ROOT / "examples" / "ingress-nginx-tls-ca"
LEDGER_CERT = "bank/ledger-cert (the backend pods' own)"


def _docs(*paths: Path) -> list[dict[str, Any]]:
    return [d for p in paths for f in sorted(p.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]


def _check(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> Any:
    return check(Cluster.from_yaml(yaml.safe_dump_all([*old, *new])).state)


def _differences(result: Any) -> dict[str, list[str]]:
    return {c.describe(): c.differences for c in result.differences}


def test_the_examples_certificates_are_generated_here() -> None:
    assert (OLD / "05-secrets.yaml").read_text() == bank_example.render(bank_example.documents())
    assert (CA / "00-bank-ca.yaml").read_text() == bank_example.render(bank_example.ca_documents(), " ca")


def test_the_gateway_example_is_what_migrate_ingress_writes() -> None:
    result = CliRunner().invoke(cli, ["migrate", "ingress", "-f", str(OLD)])
    assert result.exit_code == 0
    assert result.output == (NEW / "gateway.yaml").read_text()
    kinds = [d["kind"] for d in _docs(NEW)]
    assert kinds.count("TLSRoute") == 1 and kinds.count("GRPCRoute") == 1 and kinds.count("BackendTLSPolicy") == 1


def test_the_conversion_differs_only_where_envoy_verifies_the_https_backend() -> None:
    result = _check(_docs(OLD), _docs(NEW))
    probes = {c.describe(): c for c in result.comparisons if c.request.scheme in ("tls", "grpc")}
    assert sorted(probes) == [
        "TLS handshake with SNI grpc.bank.example", "TLS handshake with SNI ledger.bank.example",
        "TLS handshake with SNI www.bank.example",
        "gRPC bank.payments.Payments/Probe to grpc.bank.example:443 (TLS)",
        "gRPC knetsim.Unnamed/Probe to grpc.bank.example:443 (TLS)"]
    assert all(c.same for c in probes.values())
    ledger = probes["TLS handshake with SNI ledger.bank.example"]
    assert (ledger.ingress.backend, ledger.ingress.certificate) == ("bank/ledger:443", LEDGER_CERT)
    assert (ledger.gateway.backend, ledger.gateway.certificate) == ("bank/ledger:443", LEDGER_CERT)
    www = probes["TLS handshake with SNI www.bank.example"]
    assert www.ingress.certificate == www.gateway.certificate == "bank/www-cert"
    call = probes["gRPC bank.payments.Payments/Probe to grpc.bank.example:443 (TLS)"]
    assert call.ingress.backend == call.gateway.backend == "bank/payments:50051"
    unnamed = probes["gRPC knetsim.Unnamed/Probe to grpc.bank.example:443 (TLS)"]
    assert unnamed.ingress.status == unnamed.gateway.status == 404  # UNIMPLEMENTED to the client, both
    differences = _differences(result)
    assert differences and all(k.startswith(("GET https://www.bank.example/statements",
                                             "POST https://www.bank.example/statements")) for k in differences)
    assert set(map(tuple, differences.values())) == {("status", "backend")}
    first = next(c for c in result.differences)
    assert (first.ingress.backend, first.gateway.status) == ("bank/statements:8443", 503)
    assert "BackendTLSPolicy bank/statements-tls (SNI statements.bank.svc) does not verify" in first.gateway.explanation
    # The redirect of http to https is the same on every host: the website, the ledger and the gRPC host.
    for host in ("www", "ledger", "grpc"):
        http = next(c for c in result.comparisons if c.describe() == f"GET http://{host}.bank.example/")
        assert http.same and http.ingress.status == 308


def test_with_the_banks_ca_in_the_backend_tls_policy_nothing_differs() -> None:
    result = _check(_docs(OLD), _docs(NEW, CA))
    assert result.differences == []
    assert any(c.subject == "TLS" and "an SNI no host names" in c.message for c in result.caveats)


def _replace(docs: list[dict[str, Any]], kind: str, name: str, change: Any) -> list[dict[str, Any]]:
    out = []
    for d in docs:
        if d["kind"] == kind and d["metadata"]["name"] == name:
            d = change(d)
        if d is not None:
            out.append(d)
    return out


def test_a_lost_tlsroute_is_a_failed_handshake() -> None:
    new = _replace(_docs(NEW, CA), "TLSRoute", "ledger", lambda d: None)
    differences = _differences(_check(_docs(OLD), new))
    assert differences == {"TLS handshake with SNI ledger.bank.example": ["backend", "certificate"]}
    ledger = next(c for c in _check(_docs(OLD), new).differences)
    assert ledger.gateway.certificate == NO_HANDSHAKE


def test_terminating_the_ledgers_tls_at_the_gateway_serves_another_certificate() -> None:
    def terminate(gateway: dict[str, Any]) -> dict[str, Any]:
        for listener in gateway["spec"]["listeners"]:
            if listener["name"] == "tls-ledger-bank-example":
                listener["tls"] = {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": "ledger-cert"}]}
        return gateway

    new = _replace(_docs(NEW, CA), "Gateway", "eg-gateway", terminate)
    [ledger] = _check(_docs(OLD), new).differences
    assert ledger.describe() == "TLS handshake with SNI ledger.bank.example"
    # The same certificate bytes, but the proxy holds the key now and the ledger pods see plain bytes.
    assert (ledger.ingress.certificate, ledger.gateway.certificate) == (LEDGER_CERT, "bank/ledger-cert")


def test_a_grpc_method_match_of_another_service_loses_the_call() -> None:
    def other(route: dict[str, Any]) -> dict[str, Any]:
        route["spec"]["rules"][0]["matches"] = [{"method": {"service": "bank.payments.Refunds"}}]
        return route

    new = _replace(_docs(NEW, CA), "GRPCRoute", "payments", other)
    differences = _differences(_check(_docs(OLD), new))
    # The call ingress-nginx routes is UNIMPLEMENTED now, and the new service's call reaches a backend nginx never did.
    assert {k: v for k, v in differences.items() if k.startswith("gRPC")} == {
        "gRPC bank.payments.Payments/Probe to grpc.bank.example:443 (TLS)": ["status", "backend"],
        "gRPC bank.payments.Refunds/Probe to grpc.bank.example:443 (TLS)": ["status", "backend"]}
    # So do the service's paths asked over plain https.
    assert differences["GET https://grpc.bank.example/bank.payments.Payments/x"] == ["status", "backend"]
    assert all(k.startswith(("gRPC", "GET https://grpc.bank.example/bank.payments.Payments",
                             "POST https://grpc.bank.example/bank.payments.Payments")) for k in differences)


def test_an_http_path_beside_the_grpc_service_on_its_host_is_checked_too() -> None:
    # The payments host also serves a health page over plain HTTP/1.1 (its own Ingress, no backend-protocol).
    status = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
              "metadata": {"name": "status", "namespace": "bank"},
              "spec": {"ingressClassName": "nginx",
                       "tls": [{"hosts": ["grpc.bank.example"], "secretName": "grpc-cert"}],
                       "rules": [{"host": "grpc.bank.example", "http": {"paths": [
                           {"path": "/healthz", "pathType": "Exact",
                            "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}
    old = [*_docs(OLD), status]
    conversion = CliRunner().invoke(cli, ["migrate", "ingress", "-f", "-"], input=yaml.safe_dump_all(old))
    new = [d for d in yaml.safe_load_all(conversion.output) if d]
    assert _differences(_check(old, [*new, *_docs(CA)])) == {}
    lost = _replace(new, "HTTPRoute", "status", lambda d: None)
    differences = _differences(_check(old, [*lost, *_docs(CA)]))
    assert differences["GET https://grpc.bank.example/healthz"] == ["status", "backend"]
    assert all(k.startswith(("GET https://grpc.bank.example/healthz", "POST https://grpc.bank.example/healthz"))
               for k in differences)


def test_a_grpc_host_without_a_certificate_is_reached_by_tls_on_ingress_nginx_only() -> None:
    # Without spec.tls, ingress-nginx still serves the gRPC host on 443 (its fake certificate); the conversion
    # puts the GRPCRoute on the http listener (h2c), so the TLS calls clients make fail on the Gateway.
    old = _replace(_docs(OLD), "Ingress", "payments", lambda d: {**d, "spec": {
        k: v for k, v in d["spec"].items() if k != "tls"}})
    conversion = CliRunner().invoke(cli, ["migrate", "ingress", "-f", "-"], input=yaml.safe_dump_all(old))
    new = [d for d in yaml.safe_load_all(conversion.output) if d]
    assert "gRPC without TLS needs h2c from the clients" in conversion.output
    result = _check(old, [*new, *_docs(CA)])
    assert _differences(result) == {
        "gRPC bank.payments.Payments/Probe to grpc.bank.example:443 (TLS)": ["backend", "certificate"],
        "gRPC knetsim.Unnamed/Probe to grpc.bank.example:443 (TLS)": ["status", "certificate"]}
    # Plain http to the host is alike: Envoy Gateway keeps GRPCRoute rules in the HTTP route table, matched by
    # path (the service match a path-separated prefix), as nginx's location for the service's path is.
    answers = {c.describe(): (c.ingress.backend, c.gateway.backend) for c in result.comparisons}
    assert answers["GET http://grpc.bank.example/bank.payments.Payments/x"] == ("bank/payments:50051",) * 2
    assert answers["GET http://grpc.bank.example/bank.payments.Paymentsx"] == (None, None)


def test_ingress_nginx_passes_the_ledgers_tls_through_without_reading_it() -> None:
    state = Cluster.from_paths([str(OLD)]).state
    result = ingress_route(state, "ledger.bank.example", "/anything", scheme="https")
    assert (result.outcome, result.backend.describe() if result.backend else None) == \
        ("passed-through", "bank/ledger:443 (https)")
    assert not result.tls.terminated
    # Plain http is still nginx's: force-ssl-redirect.
    assert ingress_route(state, "ledger.bank.example", "/anything").http_status == 308
    # Without --enable-ssl-passthrough the annotation does nothing: nginx terminates with its fake certificate.
    docs = [d for d in _docs(OLD) if not (d["kind"] == "Deployment" and d["metadata"]["name"] ==
                                          "ingress-nginx-controller")]
    plain = Cluster.from_yaml(yaml.safe_dump_all(docs)).state
    terminated = ingress_route(plain, "ledger.bank.example", "/anything", scheme="https")
    assert (terminated.outcome, terminated.tls.certificate) == ("routed", "fake")


def test_route_and_trace_follow_a_passed_through_connection_to_the_ledger_pods() -> None:
    runner = CliRunner()
    routed = runner.invoke(cli, ["route", "-f", str(OLD), "--host", "ledger.bank.example", "--path", "/x",
                                 "--scheme", "https"])
    assert routed.exit_code == 0, routed.output  # the Service gets the connection: not the controller's own answer
    assert "Outcome:     passed-through" in routed.output
    traced = runner.invoke(cli, ["trace", "-f", str(OLD), "--from", "external", "https://ledger.bank.example/x"])
    assert traced.exit_code == 0, traced.output
    assert "the controller's TCP proxy dials its ClusterIP (ssl-passthrough)" in traced.output
    assert "Outcome: connected (HTTP 200)" in traced.output


def test_the_table_shows_the_certificate_where_it_differs() -> None:
    new = _replace(_docs(NEW, CA), "TLSRoute", "ledger", lambda d: None)
    out = CliRunner().invoke(cli, ["migrate", "check", "-f", "-"], input=yaml.safe_dump_all([*_docs(OLD), *new]))
    assert out.exit_code == 1
    [row] = [line for line in out.output.splitlines() if line.startswith("TLS handshake with SNI ledger")]
    assert row.split("   ")[-2:] == [f"→ bank/ledger:443, certificate {LEDGER_CERT}",
                                     f"no handshake, certificate {NO_HANDSHAKE}"]
    json_out = CliRunner().invoke(cli, ["migrate", "check", "-f", "-", "-o", "json"],
                                  input=yaml.safe_dump_all([*_docs(OLD), *new]))
    [difference] = yaml.safe_load(json_out.stdout)["differences"]
    assert (difference["ingress"]["certificate"], difference["gateway"]["certificate"]) == (LEDGER_CERT, NO_HANDSHAKE)


@pytest.mark.parametrize(("method", "taken", "passed_by"), [
    ({"service": "bank.payments.Payments", "method": "Pay"}, "/bank.payments.Payments/Pay",
     ["/bank.payments.Payments/Refund", "/bank.payments.Payments"]),
    ({"service": "bank.payments.Payments"}, "/bank.payments.Payments/Refund", ["/bank.payments.PaymentsV2/Pay"]),
    ({"method": "Pay"}, "/any.Service/Pay", ["/any.Service/Payout"]),
    ({"type": "RegularExpression", "service": r"bank\.[a-z]+\.Payments"}, "/bank.payments.Payments/Pay",
     ["/bank.payments.Payments/Pay/more", "/other.payments.Payments/Pay"]),
])
def test_an_http_request_takes_a_grpcroute_rule_by_its_path(method: dict[str, str], taken: str,
                                                             passed_by: list[str]) -> None:
    # Envoy Gateway writes GRPCRoute rules into the listener's HTTP route table as path matches.
    def with_method(route: dict[str, Any]) -> dict[str, Any]:
        route["spec"]["rules"][0]["matches"] = [{"method": method}]
        return route

    state = Cluster.from_yaml(yaml.safe_dump_all([*_docs(OLD), *_replace(_docs(NEW, CA), "GRPCRoute", "payments",
                                                                          with_method)])).state
    answer = gateway_route(state, "bank/eg-gateway", HTTPRequest("grpc.bank.example", taken, "POST", "https"))
    assert (answer.outcome, f"{answer.backend.service}:{answer.backend.port}" if answer.backend else None) == \
        ("proxied", "bank/payments:50051")
    for path in passed_by:
        assert gateway_route(state, "bank/eg-gateway", HTTPRequest("grpc.bank.example", path, "POST", "https")) \
            .http_status == 404, path
