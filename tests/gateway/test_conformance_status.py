"""Gateway and route status the conformance suite checks, restated from kubernetes-sigs/gateway-api
``conformance/tests`` (each test names its source file and test): an invalid ``parametersRef``, the
infrastructure labels and annotations on what the implementation creates, a TLSRoute whose only backend does not
exist, and a rule's ``retry`` on knetsim's standard-channel CRDs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from knetsim import Cluster
from knetsim.api import InputError
from knetsim.cluster.gatewayimplementations import BY_KEY
from knetsim.gateway import status_of
from knetsim.gateway.streams import route_stream

DATA = Path(__file__).parent / "data"
INFRA = "gateway-conformance-infra"
EG = "gateway.envoyproxy.io/gatewayclass-controller"


def _cluster(extra: str, controller: str = EG) -> Cluster:
    base = (DATA / "conformance-base.yaml").read_text(encoding="utf-8").replace(EG, controller)
    return Cluster.from_yaml(base + "\n---\n" + extra, namespace=INFRA, filename="conformance.yaml")


def _conditions(status: dict) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions") or []}


# gateway-invalid-parameters-ref.yaml, re-typed.
INVALID_PARAMETERS = """
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gateway-invalid-parameters-ref, namespace: gateway-conformance-infra}
spec:
  gatewayClassName: gateway-conformance
  listeners: [{name: http, port: 80, protocol: HTTP}]
  infrastructure:
    parametersRef: {group: invalid.io, kind: InvalidParameters, name: invalid}
"""


@pytest.mark.parametrize("key", ["envoy-gateway", "nginx-gateway-fabric", "istio"])
def test_gateway_invalid_parameters_ref_is_not_accepted(key: str) -> None:
    """gateway-invalid-parameters-ref.go, GatewayInvalidParametersRef: Accepted False, reason InvalidParameters."""
    c = _cluster(INVALID_PARAMETERS, BY_KEY[key].controller_names[0])
    conds = _conditions(status_of(c.state, c.state.gateways[f"{INFRA}/gateway-invalid-parameters-ref"]))
    assert conds["Accepted"] == ("False", "InvalidParameters")
    assert conds["Programmed"][0] == "False"
    # The other Gateways of the base are untouched.
    assert _conditions(status_of(c.state, c.state.gateways[f"{INFRA}/same-namespace"]))["Accepted"][0] == "True"


def test_gateway_parameters_ref_to_an_existing_object_of_the_implementations_api_is_accepted() -> None:
    extra = INVALID_PARAMETERS.replace("{group: invalid.io, kind: InvalidParameters, name: invalid}",
                                       "{group: gateway.envoyproxy.io, kind: EnvoyProxy, name: custom}") + """
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyProxy
metadata: {name: custom, namespace: gateway-conformance-infra}
spec: {}
"""
    c = _cluster(extra)
    conds = _conditions(status_of(c.state, c.state.gateways[f"{INFRA}/gateway-invalid-parameters-ref"]))
    assert conds["Accepted"] == ("True", "Accepted")


def test_gatewayclass_with_a_parameters_ref_that_cannot_be_found_is_not_accepted() -> None:
    """gatewayclass_types.go (parametersRef): a referent that cannot be found SHOULD give Accepted False,
    InvalidParameters; the class's Gateways are then served by nobody."""
    docs = [d for d in yaml.safe_load_all((DATA / "conformance-base.yaml").read_text(encoding="utf-8")) if d]
    for d in docs:
        if d["kind"] == "GatewayClass":
            d["spec"]["parametersRef"] = {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": "absent",
                                          "namespace": INFRA}
    c = Cluster.from_yaml(yaml.safe_dump_all(docs), namespace=INFRA, filename="class.yaml")
    status = status_of(c.state, c.state.gateway_classes["gateway-conformance"])
    assert _conditions(status)["Accepted"] == ("False", "InvalidParameters")
    assert "absent" in next(x["message"] for x in status["conditions"] if x["type"] == "Accepted")
    assert "supportedFeatures" not in status
    assert status_of(c.state, c.state.gateways[f"{INFRA}/same-namespace"]) is None


# gateway-infrastructure.yaml, re-typed.
INFRASTRUCTURE = """
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gateway-with-infrastructure-metadata, namespace: gateway-conformance-infra}
spec:
  gatewayClassName: gateway-conformance
  infrastructure:
    annotations: {key1: value1}
    labels: {key2: value2}
  listeners: [{name: http, port: 8080, protocol: HTTP}]
"""


def _generated(c: Cluster, gateway: str) -> list:
    """The Services and Deployments labelled with the Gateway's name, as the suite lists them."""
    label = "gateway.networking.k8s.io/gateway-name"
    objs = [*c.state.services.values(), *(o for (k, _), o in c.state.others.items() if k == "Deployment")]
    return [o for o in objs if (o.raw.get("metadata") or {}).get("labels", {}).get(label) == gateway]


@pytest.mark.parametrize("key", ["nginx-gateway-fabric", "istio", "kgateway"])
def test_gateway_infrastructure_labels_and_annotations_reach_the_generated_objects(key: str) -> None:
    """gateway-infrastructure.go, GatewayInfrastructure: the Service (and Pod) labelled with the Gateway's name
    carry every spec.infrastructure label and annotation — on the implementations whose report claims
    GatewayInfrastructurePropagation."""
    assert BY_KEY[key].supports("GatewayInfrastructurePropagation")
    c = _cluster(INFRASTRUCTURE, BY_KEY[key].controller_names[0])
    found = _generated(c, "gateway-with-infrastructure-metadata")
    assert {o.kind for o in found} >= {"Service"}, found
    for obj in found:
        meta = obj.raw["metadata"]
        assert meta["labels"]["key2"] == "value2", (obj.kind, meta)
        assert meta["annotations"]["key1"] == "value1", (obj.kind, meta)
        if obj.kind == "Deployment":
            template = obj.raw["spec"]["template"]["metadata"]
            assert template["labels"]["key2"] == "value2" and template["annotations"]["key1"] == "value1"
            assert "key2" not in obj.raw["spec"]["selector"]["matchLabels"]  # the selector stays the proxy's own


def test_infrastructure_metadata_is_not_propagated_where_the_report_does_not_claim_it() -> None:
    """Envoy Gateway's v1.9.0 report lists GatewayInfrastructurePropagation as unsupported."""
    assert not BY_KEY["envoy-gateway"].supports("GatewayInfrastructurePropagation")
    c = _cluster(INFRASTRUCTURE)
    services = [s for s in c.state.services.values()
                if (s.raw.get("metadata") or {}).get("labels", {}).get("gateway.envoyproxy.io/owning-gateway-name")
                == "gateway-with-infrastructure-metadata"]
    assert services and all("key2" not in s.raw["metadata"]["labels"] for s in services)


# tlsroute-invalid-backendref-nonexistent.yaml, re-typed.
TLS_INVALID_BACKEND = """
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gateway-tlsroute-invalid-backend-ref-nonexistent, namespace: gateway-conformance-infra}
spec:
  gatewayClassName: gateway-conformance
  listeners:
  - {name: tls, protocol: TLS, port: 443, allowedRoutes: {namespaces: {from: Same}}, tls: {mode: Passthrough}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: invalid-backend-ref-nonexistent, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: gateway-tlsroute-invalid-backend-ref-nonexistent, namespace: gateway-conformance-infra}]
  hostnames: [example.com]
  rules: [{backendRefs: [{name: nonexistent, namespace: gateway-conformance-infra, port: 443}]}]
"""


def test_tlsroute_to_a_nonexistent_backend_is_rejected_and_names_no_backend() -> None:
    """tlsroute-invalid-backendref-nonexistent.go, TLSRouteInvalidBackendRefNonexistent: ResolvedRefs False
    (BackendNotFound), and the TLS connection is rejected: the answer reaches no backend, so it names none."""
    c = _cluster(TLS_INVALID_BACKEND)
    status = status_of(c.state, c.state.tls_routes[f"{INFRA}/invalid-backend-ref-nonexistent"])
    assert _conditions(status["parents"][0])["ResolvedRefs"] == ("False", "BackendNotFound")
    result = route_stream(c.state, f"{INFRA}/gateway-tlsroute-invalid-backend-ref-nonexistent", "tls", 443,
                          sni="example.com")
    assert result.outcome == "invalid-backend" and not result.proxied
    assert result.backend is None and result.endpoint is None
    assert result.to_dict()["backend"] is None
    assert [b.problem for b in result.backends] == [f"service {INFRA}/nonexistent not found"]


# httproute-retry.yaml's first rule, re-typed.
RETRY = """
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: retries, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: same-namespace}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /retry/code-500-attempts-3}}]
    retry: {codes: [500], attempts: 3}
    backendRefs: [{name: infra-backend-v3, port: 8080}]
"""


def test_retry_on_the_standard_channel_is_refused_by_the_api_server_naming_the_field() -> None:
    """httproute-retry.go (HTTPRouteRetry) needs the experimental channel: ``retry`` is ``<gateway:experimental>``
    in apis/v1/httproute_types.go (GEP-1731). On knetsim's standard-channel CRDs the route is refused as
    ``kubectl apply`` refuses it — never silently accepted with the retry dropped."""
    with pytest.raises(InputError) as raised:
        _cluster(RETRY)
    text = str(raised.value)
    assert "HTTPRoute gateway-conformance-infra/retries" in text and 'unknown field "spec.rules[0].retry"' in text



def _proxies(c: Cluster) -> list[str]:
    """The per-Gateway objects: labelled with their Gateway's name (Envoy Gateway's owning-gateway-name too)."""
    objs = [*c.state.services.values(), *(o for (k, _), o in c.state.others.items() if k == "Deployment")]
    return sorted(f"{o.kind} {o.key} {v}" for o in objs
                  for k, v in ((o.raw.get("metadata") or {}).get("labels") or {}).items() if k.endswith("gateway-name"))


@pytest.mark.parametrize("key", ["envoy-gateway", "nginx-gateway-fabric", "kgateway"])
def test_an_invalid_parameters_ref_provisions_no_proxy(key: str) -> None:
    """gatewayclass_types.go and gateway_types.go: a class (or a Gateway) whose parametersRef does not resolve is not
    accepted, so the implementation creates no proxy Deployment or Service for it; the valid class's other Gateways
    keep theirs."""
    docs = [d for d in yaml.safe_load_all((DATA / "conformance-base.yaml").read_text(encoding="utf-8")) if d]
    for d in docs:
        if d["kind"] == "GatewayClass":
            d["spec"]["controllerName"] = BY_KEY[key].controller_names[0]
    fine = Cluster.from_yaml(yaml.safe_dump_all(docs), namespace=INFRA, filename="class.yaml")
    assert _proxies(fine)
    one_invalid = _cluster(INVALID_PARAMETERS, BY_KEY[key].controller_names[0])
    assert not any(p.endswith(" gateway-invalid-parameters-ref") for p in _proxies(one_invalid))
    assert any(p.endswith(" same-namespace") for p in _proxies(one_invalid))
    for d in docs:
        if d["kind"] == "GatewayClass":
            d["spec"]["parametersRef"] = {"group": "", "kind": "ConfigMap", "name": "absent", "namespace": INFRA}
    invalid = Cluster.from_yaml(yaml.safe_dump_all(docs), namespace=INFRA, filename="class.yaml")
    assert _proxies(invalid) == []
