"""TLS at the Gateway, offline: the examples' certificates, the doctor's findings, and what a client is served.

Given examples/gateway/tls (a listener of every kind) then the doctor finds nothing at the gateway layer
and every protocol reaches its backend; given examples/gateway/tls-broken (one mistake per object) then
the doctor names each mistake with its fix. The examples' certificates are reproducible from
tests/gateway/tls_example.py.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from knetsim import Cluster
from knetsim.gateway import route
from knetsim.gateway.certs import load_pem_chain, verify
from knetsim.gateway.findings import gateway_findings
from knetsim.gateway.grpc import call_from, route_grpc
from knetsim.gateway.streams import route_stream
from knetsim.model.http import HTTPRequest

from . import tls_example

ROOT = Path(__file__).resolve().parents[2]
TLS = ROOT / "examples" / "gateway" / "tls"
BROKEN = ROOT / "examples" / "gateway" / "tls-broken"


def _cluster(path: Path) -> Cluster:
    return Cluster.from_paths([str(path)])


@pytest.fixture(scope="module")
def edge() -> Cluster:
    return _cluster(TLS)


def test_the_example_certificates_are_reproducible() -> None:
    assert (TLS / "secrets.yaml").read_text() == tls_example.render(tls_example.documents())
    assert (BROKEN / "secrets.yaml").read_text() == tls_example.render(tls_example.broken_documents(),
                                                                            " broken")
    client = tls_example.partner_client()
    assert (TLS / "partner-client.pem").read_text() == client.cert_pem + client.key_pem


def test_the_edge_example_has_no_gateway_finding(edge: Cluster) -> None:
    assert gateway_findings(edge.state) == []


def test_every_protocol_reaches_its_backend(edge: Cluster) -> None:
    state = edge.state
    https = route(state, "edge/edge", HTTPRequest("www.shop.example", "/", scheme="https"))
    assert https.proxied and https.backend.service == "edge/web", https.summary
    assert https.tls is not None and https.tls.certificate.subject == "CN=shop.example" and https.tls.covers_sni
    api = route(state, "edge/edge", HTTPRequest("www.shop.example", "/api/orders", scheme="https"))
    assert api.proxied and api.backend_tls is not None and api.backend_tls.verdict.ok, api.summary
    redirect = route(state, "edge/edge", HTTPRequest("www.shop.example", "/cart"))
    assert redirect.redirect is not None and redirect.redirect.location == "https://www.shop.example/cart"
    grpc = route_grpc(state, "edge/edge", call_from("grpc.shop.example",
                                                    "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/Echo",
                                                    tls=True))
    assert grpc.proxied and grpc.upstream_metadata == {"x-edge": "grpc"}, grpc.summary
    ledger = route_stream(state, "edge/edge", "tls", 9443, sni="ledger.shop.example")
    assert ledger.proxied and ledger.tls is not None and ledger.tls.mode == "passthrough"
    assert ledger.tls.certificate.subject == "CN=ledger.shop.example"  # the backend's own, not the proxy's
    assert route_stream(state, "edge/edge", "tcp", 5432).backend.service == "edge/postgres"
    assert route_stream(state, "edge/edge", "udp", 53).backend.service == "edge/dns"
    team = route(state, "edge/edge", HTTPRequest("a.team.example", "/", scheme="https"))
    assert team.proxied and team.backend.service == "team-a/app" and team.listener == "team-a/team-a/https"
    assert team.tls.certificate.subject == "CN=a.team.example"


def test_client_certificates_on_the_partner_port(edge: Cluster) -> None:
    """Given spec.tls.frontend.perPort 8443 with the partner CA, then the partner's certificate gets through, no
    certificate gets the alert "certificate required" and a certificate of another CA "unknown ca"."""
    state = edge.state
    request = HTTPRequest("partners.shop.example", "/", scheme="https", port=8443)
    chain = load_pem_chain((TLS / "partner-client.pem").read_bytes())
    assert route(state, "edge/edge", request, client_chain=chain).proxied
    missing = route(state, "edge/edge", request)
    assert missing.outcome == "tls-failed" and missing.tls.alert == "certificate required"
    other = load_pem_chain(tls_example.shop_ca().cert_pem.encode())
    stranger = route(state, "edge/edge", request, client_chain=other)
    assert stranger.outcome == "tls-failed" and stranger.tls.alert == "unknown ca"
    # Port 443 has no validation: a client certificate is not asked for there.
    assert route(state, "edge/edge", HTTPRequest("www.shop.example", "/", scheme="https")).proxied


def test_the_partner_client_certificate_is_issued_by_the_partner_ca() -> None:
    chain = load_pem_chain((TLS / "partner-client.pem").read_bytes())
    assert verify(chain, [tls_example.partner_ca().cert], datetime(2026, 6, 1, tzinfo=UTC)).ok


def test_the_doctor_names_each_tls_mistake() -> None:
    findings = {(f.code, f.subject, f.field): f for f in gateway_findings(_cluster(BROKEN).state)}
    assert set(findings) == {
        ("GatewayCertificateExpired", "Gateway edge/edge", "spec.listeners[0]"),
        ("GatewayCertificateHostnameMismatch", "Gateway edge/edge", "spec.listeners[1].tls"),
        ("ListenerSetNotAllowed", "ListenerSet team-b/team-b", "spec.parentRef"),
        ("BackendTLSPolicyVerifyFailed", "BackendTLSPolicy edge/api-tls", "spec.targetRefs[0]"),
    }
    expired = findings[("GatewayCertificateExpired", "Gateway edge/edge", "spec.listeners[0]")]
    assert "has expired since 2021-01-01 00:00:00 +0000 UTC" in expired.message
    verify_failed = findings[("BackendTLSPolicyVerifyFailed", "BackendTLSPolicy edge/api-tls", "spec.targetRefs[0]")]
    assert "Somebody Else CA" in verify_failed.message and "unable to get local issuer certificate" in \
        verify_failed.message
    not_allowed = findings[("ListenerSetNotAllowed", "ListenerSet team-b/team-b", "spec.parentRef")]
    assert '"path":"/spec/allowedListeners"' in not_allowed.fix


def test_applying_the_fixes_clears_the_findings() -> None:
    """Given the broken example with each fix applied (a valid certificate, the listener's name in it, the
    Gateway allowing the ListenerSet, the policy trusting the right CA), then no gateway finding is left."""
    text = "\n---\n".join(p.read_text() for p in sorted(BROKEN.glob("*.yaml")))
    fixed = (text.replace("certificateRefs: [{name: old-cert}]", "certificateRefs: [{name: shop-cert}]")
             .replace("hostname: old.shop.example", "hostname: old.shop.example")
             .replace("hostname: www.other.example", "hostname: www.shop.example")
             .replace("  gatewayClassName: eg\n  listeners:", "  gatewayClassName: eg\n  allowedListeners: "
                      "{namespaces: {from: All}}\n  listeners:")
             .replace("      - {name: tls, secret: {secretName: api-cert}}", "      - {name: tls, secret: "
                      "{secretName: shop-cert}}")
             .replace("hostname: api.edge.svc", "hostname: www.shop.example"))
    c = Cluster.from_yaml(fixed)
    assert [f.code for f in gateway_findings(c.state)] == []


def test_trace_from_outside_enters_every_listener_kind(edge: Cluster) -> None:
    """Given the edge example, then trace --from external reaches the TCP and UDP backends through their
    listeners (the address and port pick the listener), a TLS passthrough backend by the host as SNI, and the
    TLS-speaking api through the HTTPS listener; a handshake the partner port refuses (no client certificate)
    is refused."""
    tcp = edge.trace("external", "tcp://172.18.255.200:5432")
    assert tcp.connected and tcp.protocol == "TCP" and tcp.backend.pod.startswith("edge/postgres-")
    udp = edge.trace("external", "udp://172.18.255.200:53")
    assert udp.connected and udp.protocol == "UDP" and udp.backend.pod.startswith("edge/dns-")
    assert any(h.layer == "gateway" and "UDPRoute edge/dns" in h.detail for h in udp.hops)
    ledger = edge.trace("external", "tcp://ledger.shop.example:9443")
    assert ledger.connected and ledger.backend.pod.startswith("edge/ledger-")
    api = edge.trace("external", "https://www.shop.example/api/orders")
    assert api.reply.status == 200 and api.backend.pod.startswith("edge/api-")
    partners = edge.trace("external", "https://partners.shop.example:8443/")
    assert partners.outcome == "refused" and "client certificate" in partners.hops[-1].detail


def test_trace_from_outside_meets_envoys_503_when_backend_tls_fails() -> None:
    broken = _cluster(BROKEN).trace("external", "https://www.other.example/")
    assert broken.reply.status == 503 and broken.backend is None
    assert "CERTIFICATE_VERIFY_FAILED" in broken.reply.body or any("CERTIFICATE_VERIFY_FAILED" in h.detail
                                                                    for h in broken.hops)


def test_doctor_takes_a_listener_set_or_a_policy_as_its_subject() -> None:
    """Given tls-broken, then `knetsim doctor NAME -n NS` of a ListenerSet or a BackendTLSPolicy reports that
    object's finding alone."""
    from click.testing import CliRunner

    from knetsim.cli.main import cli

    team = CliRunner().invoke(cli, ["doctor", "team-b", "-n", "team-b", "-f", str(BROKEN)])
    assert team.exit_code == 1 and "ListenerSetNotAllowed" in team.output
    assert "1 error(s), 0 warning(s), 0 note(s)" in team.output
    policy = CliRunner().invoke(cli, ["doctor", "api-tls", "-n", "edge", "-f", str(BROKEN)])
    assert "BackendTLSPolicyVerifyFailed" in policy.output and "GatewayCertificateExpired" not in policy.output
