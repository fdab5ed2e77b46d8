"""An HTTPRoute rule's ``retry`` (GEP-1731, experimental channel of Gateway API v1.6.1), read per implementation.

Given the experimental HTTPRoute CRD in the input (it takes over the kind; knetsim's own CRDs are the standard
channel's, which refuse the field), then a route with ``retry`` is admitted and read: on an implementation whose
report claims HTTPRouteRetry the answer names the retry in force (Envoy Gateway's translator:
internal/gatewayapi/route.go processRouteRetry; attempts unset → its default 2); on one that does not, the route is
still accepted (the API does not tell it to refuse), the answer says the retry is ignored and the doctor warns,
naming the implementations that support it. The channel in force also picks Cilium's report: its GatewayClass
claims HTTPRouteRetry only with the experimental CRDs, as its two published reports say.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from tests import upstream

from knetsim import Cluster
from knetsim.cluster.gatewayimplementations import BY_KEY
from knetsim.gateway import route, status_of
from knetsim.gateway.findings import gateway_findings
from knetsim.model.apis import catalog
from knetsim.model.apis.generate import custom_resource_definition
from knetsim.model.http import HTTPRequest
from knetsim.model.loader import load_paths

ROOT = Path(__file__).resolve().parents[2]
BASE = [d.body for d in load_paths([str(ROOT / "examples" / "gateway" / "quickstart")]).documents]
CRD = "httproutes.gateway.networking.k8s.io"


def _experimental_crd() -> dict[str, Any]:
    return copy.deepcopy(upstream.upstream_crds("gateway-api-v1.6.1/experimental")[CRD])


def _docs(key: str, retry: dict[str, Any] | None, crd: bool = True) -> list[dict[str, Any]]:
    docs = copy.deepcopy(BASE)
    for d in docs:
        if d["kind"] == "GatewayClass":
            d["spec"]["controllerName"] = BY_KEY[key].controller_names[0]
        if d["kind"] == "HTTPRoute" and retry is not None:
            d["spec"]["rules"][0]["retry"] = retry
    return [_experimental_crd(), *docs] if crd else docs


def _cluster(docs: list[dict[str, Any]]) -> Cluster:
    return Cluster.from_yaml(yaml.safe_dump_all(docs), filename="retry.yaml")


def _without_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_without_descriptions(v) for v in node]
    return node


def _rule_schema(crd: dict[str, Any]) -> dict[str, Any]:
    v1 = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    return v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["rules"]["items"]["properties"]


def test_knetsims_experimental_retry_field_is_upstreams_and_the_standard_crd_has_none() -> None:
    ours = custom_resource_definition(catalog.BY_KIND[(catalog.GATEWAY_GROUP, "HTTPRoute")], "experimental")
    assert _without_descriptions(_rule_schema(ours)["retry"]) == \
        _without_descriptions(_rule_schema(_experimental_crd())["retry"])
    standard = custom_resource_definition(catalog.BY_KIND[(catalog.GATEWAY_GROUP, "HTTPRoute")])
    assert "retry" not in _rule_schema(standard)


def test_envoy_gateway_runs_the_rules_retry() -> None:
    state = _cluster(_docs("envoy-gateway", {"codes": [503]})).state
    result = route(state, "default/eg", HTTPRequest("www.example.com", "/"))
    assert result.outcome == "proxied"
    assert ("HTTPRoute default/backend rule 0 retry: up to 2 retries on connection failures and status 503 "
            "(knetsim's endpoints connect and answer at once and alike: no retry changes this answer)") in result.notes
    assert not [f for f in gateway_findings(state) if f.code == "HTTPRouteFeatureIgnored"]


def test_an_implementation_without_http_route_retry_serves_the_route_without_it() -> None:
    state = _cluster(_docs("nginx-gateway-fabric", {"codes": [503], "attempts": 3})).state
    parents = status_of(state, state.http_routes["default/backend"])["parents"]
    assert {c["type"]: c["status"] for c in parents[0]["conditions"]}["Accepted"] == "True"
    result = route(state, "default/eg", HTTPRequest("www.example.com", "/"))
    assert result.outcome == "proxied"
    assert "the rule's retry is ignored: NGINX Gateway Fabric does not claim HTTPRouteRetry" in result.notes
    (finding,) = [f for f in gateway_findings(state) if f.code == "HTTPRouteFeatureIgnored"]
    assert finding.field == "spec.rules[0].retry"
    # With the experimental CRDs in force, Cilium's experimental report (which claims retries) is its own.
    assert ("does not claim HTTPRouteRetry: the route is served without it (supported by Envoy Gateway, Cilium, "
            "Istio, kgateway, agentgateway)") in finding.message


def test_the_channel_in_force_picks_ciliums_report() -> None:
    def features(docs: list[dict[str, Any]]) -> set[str]:
        state = _cluster(docs).state
        return {f["name"] for f in status_of(state, state.gateway_classes["eg"])["supportedFeatures"]}

    assert "HTTPRouteRetry" not in features(_docs("cilium", None, crd=False))
    assert "HTTPRouteRetry" in features(_docs("cilium", None))
    state = _cluster(_docs("cilium", {"attempts": 1})).state
    result = route(state, "default/eg", HTTPRequest("www.example.com", "/"))
    assert any(n.startswith("HTTPRoute default/backend rule 0 retry: up to 1 retries on connection failures")
               for n in result.notes)


def test_the_rules_timeouts_are_named_as_the_implementation_runs_them() -> None:
    """Given a rule with timeouts.request 10s, then on Envoy Gateway (HTTPRouteRequestTimeout claimed) the answer
    names it in force; on NGINX Gateway Fabric (not claimed) it names it ignored."""
    def notes(key: str) -> tuple[str, ...]:
        docs = _docs(key, None, crd=False)
        for d in docs:
            if d["kind"] == "HTTPRoute":
                d["spec"]["rules"][0]["timeouts"] = {"request": "10s"}
        return route(_cluster(docs).state, "default/eg", HTTPRequest("www.example.com", "/")).notes

    assert "timeouts.request 10s: in force, not reached (knetsim's endpoints connect and answer at once)" in \
        notes("envoy-gateway")
    ngf = notes("nginx-gateway-fabric")
    assert "the rule's timeouts.request is ignored: NGINX Gateway Fabric does not claim HTTPRouteRequestTimeout" in ngf
    assert not any(n.startswith("timeouts.request") for n in ngf)
