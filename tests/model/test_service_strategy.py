"""The Service strategy's type-dependent fields around externalTrafficPolicy, as upstream's svcStrategy
(pkg/registry/core/service/strategy.go dropTypeDependentFields) and validation (validateServiceExternalTrafficPolicy)
treat them: a Service is "externally accessible" with node ports, a load balancer, or as a ClusterIP with external
IPs (pkg/api/v1/service.ExternallyAccessible); only then does it have a traffic policy for outside clients."""

from __future__ import annotations

from typing import Any

import pytest

from knetsim.model.strategy import drop_type_dependent_fields
from knetsim.model.validation import validate_service


def svc(type_: str, **spec: Any) -> dict[str, Any]:
    ports = [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    return {"kind": "Service", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"type": type_, "sessionAffinity": "None", "selector": {"app": "web"}, "ports": ports, **spec}}


@pytest.mark.parametrize(("old", "new", "kept"), [
    # Still reachable from outside through its external IPs: the policy the user chose stays.
    (svc("LoadBalancer", externalTrafficPolicy="Local"),
     svc("ClusterIP", externalTrafficPolicy="Local", externalIPs=["192.0.2.10"]), "Local"),
    (svc("NodePort", externalTrafficPolicy="Local"), svc("ClusterIP", externalTrafficPolicy="Local"), None),
    (svc("ClusterIP", externalTrafficPolicy="Cluster", externalIPs=["192.0.2.10"]),
     svc("ClusterIP", externalTrafficPolicy="Cluster"), None),
    # Changed by the client in the same update: left for validation to judge.
    (svc("NodePort", externalTrafficPolicy="Cluster"), svc("ClusterIP", externalTrafficPolicy="Local"), "Local"),
], ids=["lb-to-external-ips", "node-port-to-cluster-ip", "external-ips-removed", "changed-too"])
def test_external_traffic_policy_goes_when_the_service_stops_being_externally_accessible(
        old: dict[str, Any], new: dict[str, Any], kept: str | None) -> None:
    drop_type_dependent_fields(new, old)
    assert new["spec"].get("externalTrafficPolicy") == kept


def test_a_cluster_ip_with_external_ips_needs_a_traffic_policy() -> None:
    errors = [str(e) for e in validate_service(svc("ClusterIP", externalIPs=["192.0.2.10"]))]
    assert "spec.externalTrafficPolicy: Required value" in errors
    assert validate_service(svc("ClusterIP", externalIPs=["192.0.2.10"], externalTrafficPolicy="Local")) == []
    errors = [str(e) for e in validate_service(svc("ClusterIP", externalTrafficPolicy="Local"))]
    assert errors == ['spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible '
                      "services"]
