"""A Gateway of another implementation's class is not simulated: a note saying so, never a false error."""

from __future__ import annotations

from tests.doctor.scenarios import NGF, UNKNOWN

from knetsim import Cluster


def test_a_route_on_an_unknown_implementations_class_is_a_note_not_an_error() -> None:
    unknown = UNKNOWN
    report = Cluster.from_yaml(unknown).doctor()
    assert report.errors == 0
    found = {f.code: f for f in report.findings if f.layer == "gateway"}
    assert set(found) == {"GatewayClassOtherController", "HTTPRouteParentNotSimulated"}
    assert all(f.severity == "info" for f in found.values())
    assert "example.com/in-house-gateway-controller" in found["HTTPRouteParentNotSimulated"].message
    # A route whose Gateway does not exist at all is still an error.
    missing = Cluster.from_yaml(unknown.replace("parentRefs: [{name: gateway}]", "parentRefs: [{name: gatewy}]"))
    assert "HTTPRouteParentNotFound" in {f.code for f in missing.doctor().findings if f.severity == "error"}


def test_nginx_gateway_fabrics_class_is_simulated_as_its_implementation() -> None:
    # issue 29's bullet: NGINX Gateway Fabric's class is no false error; it is now simulated as NGF would run it.
    report = Cluster.from_yaml(NGF).doctor()
    assert report.errors == 0
    assert not {f.code for f in report.findings if f.layer == "gateway"} & {
        "GatewayClassOtherController", "HTTPRouteParentNotSimulated", "HTTPRouteParentNotFound"}
