"""The Gateway API conformance suite's TLS, gRPC, TCP/UDP, ListenerSet and BackendTLSPolicy scenarios, run
through knetsim's Gateway controller (data and format: tests/gateway/conformance.py).

Given the conformance base plus one scenario's objects, then every request row gets the backend,
status, certificate or refusal the suite expects, and every status row holds on the routes'
parents, the Gateways' and ListenerSets' listeners and the policies' ancestors — with
``observedGeneration`` equal to the object's generation, as the suite's helpers compare.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from . import conformance

PROFILES = ("tls", "grpc", "l4", "listenerset", "backendtls")
REQUEST_ROWS = [(f, s["name"], i, row) for f in PROFILES for s in conformance.scenarios(f)
                for i, row in enumerate(s.get("requests") or [])]
STATUS_ROWS = [(f, s["name"], i, row) for f in PROFILES for s in conformance.scenarios(f)
               for i, row in enumerate(s.get("status") or [])]


@pytest.mark.parametrize(("profile", "scenario", "index", "row"), REQUEST_ROWS,
                         ids=[f"{f}-{n}-{i}" for f, n, i, _ in REQUEST_ROWS])
def test_request(profile: str, scenario: str, index: int, row: dict[str, Any]) -> None:
    spec = next(s for s in conformance.scenarios(profile) if s["name"] == scenario)
    c = conformance.cluster(profile, scenario)
    conformance.check_request(c, conformance.key(row.get("gateway", spec["gateway"])), row)


@pytest.mark.parametrize(("profile", "scenario", "index", "row"), STATUS_ROWS,
                         ids=[f"{f}-{n}-{i}" for f, n, i, _ in STATUS_ROWS])
def test_status(profile: str, scenario: str, index: int, row: dict[str, Any]) -> None:
    conformance.check_status(conformance.cluster(profile, scenario), row)


def test_every_profile_has_scenarios() -> None:
    assert all(conformance.scenarios(f) for f in PROFILES)


def test_grpc_weighted_backends_share_calls_by_weight() -> None:
    """Given weights 70/30/0 (grpcroute-weight), then 2000 distinct calls split close to 70 % / 30 % and none
    reach weight 0."""
    spec = next(s for s in conformance.scenarios("grpc") if s["name"] == "GRPCRouteWeight")
    c = conformance.cluster("grpc", "GRPCRouteWeight")
    counts: Counter[str] = Counter()
    for i in range(2000):
        row = {"protocol": "grpc", "grpc": "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/Echo",
               "headers": {"x-entropy": str(i)}}
        result = conformance.ask(c, conformance.key(spec["gateway"]), row)
        assert result.outcome == "proxied", result.summary
        counts[result.backend.service.split("/")[1]] += 1
    for backend, share in spec["weights"].items():
        assert abs(counts[backend] / 2000 - share) < 0.05, counts


L4_WEIGHTED = [s for s in conformance.scenarios("l4") if "weights" in s]


@pytest.mark.parametrize("spec", L4_WEIGHTED, ids=[s["name"] for s in L4_WEIGHTED])
def test_l4_weighted_backends_share_connections_by_weight(spec: dict[str, Any]) -> None:
    """Given weights 70/30/0 on a TCPRoute or UDPRoute (tcproute-/udproute-weighted-routing), then 2000
    connections from distinct clients split close to 70 % / 30 % and none reaches weight 0."""
    c = conformance.cluster("l4", spec["name"])
    counts: Counter[str] = Counter()
    for i in range(2000):
        row = {**spec["weighted"], "client": f"198.51.100.{i % 250}:{40000 + i}"}
        result = conformance.ask(c, conformance.key(spec["gateway"]), row)
        assert result.outcome == "proxied", result.summary
        counts[result.backend.service.split("/")[1]] += 1
    for backend, share in spec["weights"].items():
        assert abs(counts[backend] / 2000 - share) < 0.05, counts


def test_the_doctor_names_a_backend_that_refuses_the_gateways_client_certificate() -> None:
    """Given the GatewayTLSBackendClientCertificate backend behind three Gateways, then the doctor finds the one
    presenting no client certificate and the one presenting another CA's, with a fix, and not the suite's own."""
    from knetsim.gateway.findings import gateway_findings

    c = conformance.cluster("backendtls", "GatewayTLSBackendClientCertificate")
    refused = [f for f in gateway_findings(c.state) if f.code == "GatewayBackendClientCertificateRefused"]
    by_gateway = {f.message.split("requests through Gateway ")[1].split(" ")[0]: f for f in refused}
    assert sorted(by_gateway) == [conformance.key("gateway-with-foreign-backend-client-certificate"),
                                  conformance.key("gateway-without-backend-client-certificate")]
    none = by_gateway[conformance.key("gateway-without-backend-client-certificate")]
    assert "certificate required" in none.message and '"path":"/spec/tls"' in none.fix
    foreign = by_gateway[conformance.key("gateway-with-foreign-backend-client-certificate")]
    assert "unknown ca" in foreign.message and "CN=validity-client" in foreign.message
    assert none.field == "spec.rules[0].backendRefs[0]"
