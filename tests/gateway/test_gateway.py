"""knetsim's own Gateway tests beyond the conformance scenarios: traffic from outside, NetworkPolicy on the
proxy, input errors, odd manifests, determinism, ReferenceGrant as a pure predicate.

Address plan: DESIGN defaults (nodes 172.18.0.2-4, pods 10.244.0.0/16, services 10.96.0.0/12, the
LoadBalancer pool from 172.18.255.200). Examples: examples/gateway/{quickstart,store}.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from knetsim import Cluster
from knetsim.cli.main import cli
from knetsim.gateway import ReferenceFrom, ReferenceTo, reference_permitted, route, status_of
from knetsim.model.gatewayapi import GrantFrom, GrantTo, ReferenceGrant
from knetsim.model.http import HTTPRequest
from knetsim.model.loader import BUILTIN, load_paths
from knetsim.model.objects import Meta

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "gateway" / "quickstart"
STORE = ROOT / "examples" / "gateway" / "store"


def _docs(path: Path) -> list[dict]:
    return [d.body for d in load_paths([str(path)]).documents]


def _cluster(docs: list[dict]) -> Cluster:
    return Cluster.from_yaml(yaml.safe_dump_all(docs))


def test_trace_from_outside_crosses_the_proxy_pod_and_applies_filters() -> None:
    """Given the store example, then a request from outside reaches the api through the Envoy pod, rewritten,
    and the reply carries the ResponseHeaderModifier's header; a redirect is answered by the proxy."""
    c = Cluster.from_paths([str(STORE)])
    t = c.trace("external", "http://www.store.example/api/orders")
    assert t.outcome == "connected" and t.reply.status == 200
    assert t.backend.pod.startswith("store/api-")
    assert [h.layer for h in t.hops][:2] == ["dns", "gateway"]
    policy = next(h for h in t.hops if h.layer == "policy")
    assert "envoy-gateway-system/envoy-store-store-" in policy.detail  # the proxy pod is the source
    assert t.reply.headers["cache-control"] == "no-store"
    moved = c.trace("external", "http://www.store.example/catalog/shoes")
    assert (moved.reply.status, moved.reply.headers["location"]) == (301, "http://www.store.example/shop/shoes")
    assert moved.backend is None


def test_network_policy_on_the_proxy_namespace_blocks_the_gateway() -> None:
    """Given a default-deny ingress policy in envoy-gateway-system, then the client's connection to the
    Gateway is dropped (a timeout, as for any isolated pod); allowing 0.0.0.0/0 on the listener port restores it."""
    deny = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "deny", "namespace": "envoy-gateway-system"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}
    blocked = _cluster([*_docs(QUICKSTART), deny]).trace("external", "http://www.example.com/")
    assert blocked.outcome == "timeout"
    assert any(f.code == "PolicyDrop" and "envoy-gateway-system" in f.message for f in blocked.findings)
    allow = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
             "metadata": {"name": "allow-http", "namespace": "envoy-gateway-system"},
             "spec": {"podSelector": {"matchLabels": {"app.kubernetes.io/component": "proxy"}},
                      "ingress": [{"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 10080}]}]}}
    assert _cluster([*_docs(QUICKSTART), deny, allow]).trace("external", "http://www.example.com/").connected


def test_route_cli_bad_input_exits_2() -> None:
    base = ["route", "-f", str(QUICKSTART), "--host", "www.example.com"]
    assert CliRunner().invoke(cli, [*base, "--gateway", "default/nope"]).exit_code == 2
    assert CliRunner().invoke(cli, [*base, "--gateway", "default/eg", "--header", "no-colon"]).exit_code == 2
    assert CliRunner().invoke(cli, [*base, "--gateway", "default/eg", "--path", "relative"]).exit_code == 2
    assert CliRunner().invoke(cli, [*base, "--port", "8080"]).exit_code == 2  # --port is for --gateway
    assert CliRunner().invoke(cli, [*base, "--gateway", "default/eg", "--port", "8080"]).exit_code == 1


def test_no_listener_on_the_port_and_https_to_an_http_listener() -> None:
    c = Cluster.from_paths([str(QUICKSTART)])
    r = route(c.state, "default/eg", HTTPRequest("www.example.com", port=8080))
    assert (r.outcome, r.http_status) == ("no-listener", None)
    assert "no listener on port 8080 (listeners: 80/HTTP)" in r.summary
    r = route(c.state, "default/eg", HTTPRequest("www.example.com", scheme="https", port=80))
    assert r.outcome == "no-listener" and "is a HTTP listener, not HTTPS" in r.summary


def test_backend_without_ready_endpoints_answers_503() -> None:
    docs = _docs(QUICKSTART)
    for d in docs:
        if d["kind"] == "Deployment":
            d["spec"]["template"]["metadata"]["annotations"] = {"knetsim.io/ready": "false"}
    r = route(_cluster(docs).state, "default/eg", HTTPRequest("www.example.com"))
    assert (r.outcome, r.http_status) == ("no-endpoints", 503)
    assert r.backend.service == "default/backend"


@pytest.mark.parametrize("mangle", [
    lambda d: d["spec"].update(rules="not-a-list"),
    lambda d: d["spec"].update(parentRefs=[{"name": 7}, "x", None]),
    lambda d: d["spec"]["rules"][0].update(matches=[{"path": {"type": "PathPrefix", "value": 5}}, None]),
    lambda d: d["spec"]["rules"][0].update(backendRefs=[{"name": "backend", "port": "http", "weight": -3}]),
    lambda d: d["spec"].update(hostnames=[None, 3, "www.example.com"]),
])
def test_odd_routes_are_refused_and_never_crash_the_controller(mangle) -> None:  # type: ignore[no-untyped-def]
    """Given an HTTPRoute of a shape the CRD refuses, then admission refuses it with the field named; and when such
    a body reaches the controller all the same (a store written before routes were typed), it still answers
    (reports, skips)."""
    from knetsim.model.gatewayapi import PARSERS

    docs = _docs(QUICKSTART)
    odd = next(d for d in docs if d["kind"] == "HTTPRoute")
    mangle(odd)
    refused = Cluster.from_yaml(yaml.safe_dump_all(docs), strict=False)
    assert any(str(e).startswith("<string>, document 6: HTTPRoute default/backend: spec.") for e in refused.errors)
    assert "default/backend" not in refused.state.http_routes
    c = _cluster([d for d in docs if d is not odd])
    c.state.http_routes["default/backend"] = PARSERS["HTTPRoute"](odd, BUILTIN)
    r = route(c.state, "default/eg", HTTPRequest("www.example.com"))
    assert r.outcome in ("proxied", "not-found", "invalid-backend")
    assert c.state.http_routes["default/backend"].problems  # the wrong shape is reported, with its field
    json.dumps(status_of(c.state, c.state.http_routes["default/backend"]))


def test_shuffled_input_gives_byte_identical_answers_and_status() -> None:
    docs = _docs(STORE)
    outputs = set()
    for seed in range(3):
        shuffled = list(docs)
        random.Random(seed).shuffle(shuffled)
        c = _cluster(shuffled)
        r = route(c.state, "store/store", HTTPRequest("www.store.example", "/cart"))
        status = status_of(c.state, c.state.gateways["store/store"])
        outputs.add(json.dumps([r.to_dict(), status], sort_keys=True))
    assert len(outputs) == 1


@pytest.mark.parametrize(("grant_ns", "froms", "tos", "allowed"), [
    ("backends", [("gateway.networking.k8s.io", "HTTPRoute", "apps")], [("", "Service", None)], True),
    ("backends", [("gateway.networking.k8s.io", "HTTPRoute", "apps")], [("", "Service", "web")], True),
    ("backends", [("gateway.networking.k8s.io", "HTTPRoute", "apps")], [("", "Service", "db")], False),
    ("apps", [("gateway.networking.k8s.io", "HTTPRoute", "apps")], [("", "Service", None)], False),  # wrong side
    ("backends", [("gateway.networking.k8s.io", "Gateway", "apps")], [("", "Service", None)], False),
    ("backends", [("gateway.networking.k8s.io", "HTTPRoute", "other")], [("", "Service", None)], False),
    ("backends", [("gateway.networking.k8s.io", "HTTPRoute", "apps")], [("", "Secret", None)], False),
])
def test_reference_permitted(grant_ns: str, froms: list, tos: list, allowed: bool) -> None:
    grant = ReferenceGrant("ReferenceGrant", Meta("g", grant_ns), {}, BUILTIN,
                           from_=tuple(GrantFrom(*f) for f in froms), to=tuple(GrantTo(*t) for t in tos))
    route_in_apps = ReferenceFrom("gateway.networking.k8s.io", "HTTPRoute", "apps")
    assert reference_permitted(route_in_apps, ReferenceTo("", "Service", "backends", "web"), [grant]) is allowed
    assert reference_permitted(route_in_apps, ReferenceTo("", "Service", "apps", "web"), [])
