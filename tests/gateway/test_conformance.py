"""The Gateway API conformance suite's HTTPRoute scenarios, run through knetsim's Gateway controller.

Given the conformance base (data/conformance-base.yaml) plus one scenario's objects
(data/conformance-httproute.yaml, transcribed from kubernetes-sigs/gateway-api v1.6.1
conformance/tests, source named per scenario), then every request row gets the backend,
status code, redirect, upstream request and response headers the suite expects, and the
status rows hold on the routes' parents and the Gateways' listeners.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from knetsim import Cluster
from knetsim.gateway import route, status_of, translate
from knetsim.model.http import HTTPRequest

DATA = Path(__file__).parent / "data"
INFRA = "gateway-conformance-infra"


@cache
def scenarios() -> list[dict[str, Any]]:
    return yaml.safe_load((DATA / "conformance-httproute.yaml").read_text(encoding="utf-8"))


@cache
def cluster(name: str) -> Cluster:
    scenario = next(s for s in scenarios() if s["name"] == name)
    text = (DATA / "conformance-base.yaml").read_text(encoding="utf-8") + "\n---\n" + scenario["manifests"]
    return Cluster.from_yaml(text, namespace=INFRA, filename=f"{name}.yaml")


def _key(name: str) -> str:
    return name if "/" in name else f"{INFRA}/{name}"


def _request(row: dict[str, Any]) -> HTTPRequest:
    headers = tuple((str(k), str(v)) for k, v in (row.get("headers") or {}).items())
    return HTTPRequest(str(row.get("host", "gw.example")), row.get("path", "/"), row.get("method", "GET"),
                       row.get("scheme", "http"), row.get("port"), headers)


REQUEST_ROWS = [(s["name"], i, row) for s in scenarios() for i, row in enumerate(s.get("requests") or [])]
STATUS_ROWS = [(s["name"], i, row) for s in scenarios() for i, row in enumerate(s.get("status") or [])]


@pytest.mark.parametrize(("scenario", "index", "row"), REQUEST_ROWS,
                         ids=[f"{n}-{i}" for n, i, _ in REQUEST_ROWS])
def test_request(scenario: str, index: int, row: dict[str, Any]) -> None:
    spec = next(s for s in scenarios() if s["name"] == scenario)
    c = cluster(scenario)
    result = route(c.state, _key(row.get("gateway", spec["gateway"])), _request(row))
    why = result.summary
    if "backend" in row:
        assert result.outcome == "proxied", why
        assert result.http_status is None
        assert result.backend is not None and result.backend.service == _key(row["backend"]), why
    if "status" in row:
        assert result.http_status == row["status"], why
    if "location" in row:
        assert result.redirect is not None and result.redirect.location == row["location"], why
        assert result.redirect.status == row["status"]
    upstream = row.get("upstream") or {}
    if upstream:
        assert result.upstream_request is not None, why
    if "path" in upstream:
        assert result.upstream_request.path == upstream["path"], why
    if "host" in upstream:
        assert result.upstream_request.host == upstream["host"], why
    for name, value in (upstream.get("headers") or {}).items():
        assert result.upstream_request.headers.get(name) == value, (name, result.upstream_request.headers)
    for name in upstream.get("absent") or []:
        assert name not in result.upstream_request.headers
    for name, value in (row.get("response_headers") or {}).items():
        assert result.response_headers.get(name) == value, result.response_headers
    for name in row.get("response_absent") or []:
        assert name in result.response_headers_removed and name not in result.response_headers


def _conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or []}


def _check_conditions(found: dict[str, dict[str, Any]], row: dict[str, Any]) -> None:
    for ctype in ("Accepted", "ResolvedRefs", "Programmed", "PartiallyInvalid"):
        if ctype not in row:
            continue
        want = row[ctype]
        assert ctype in found, (ctype, found)
        assert found[ctype]["status"] == str(want[0]), (ctype, found[ctype])
        if len(want) > 1:
            assert found[ctype]["reason"] == want[1], (ctype, found[ctype])


@pytest.mark.parametrize(("scenario", "index", "row"), STATUS_ROWS, ids=[f"{n}-{i}" for n, i, _ in STATUS_ROWS])
def test_status(scenario: str, index: int, row: dict[str, Any]) -> None:
    c = cluster(scenario)
    gateway_key = _key(row["gateway"])
    if "route" in row:
        obj = c.state.http_routes[_key(row["route"])]
        status = status_of(c.state, obj)
        assert status is not None
        gateway_name = gateway_key.split("/")[1]
        parents = [p for p in status["parents"] if p["parentRef"]["name"] == gateway_name]
        assert parents, status
        assert all(p["controllerName"] == "gateway.envoyproxy.io/gatewayclass-controller" for p in parents)
        _check_conditions(_conditions(parents[0]), row)
        return
    status = status_of(c.state, c.state.gateways[gateway_key])
    assert status is not None
    if "listener" not in row:
        _check_conditions(_conditions(status), row)
        return
    listener = next(li for li in status["listeners"] if li["name"] == row["listener"])
    if "attachedRoutes" in row:
        assert listener["attachedRoutes"] == row["attachedRoutes"], listener
    if "supportedKinds" in row:
        assert [k["kind"] for k in listener["supportedKinds"]] == row["supportedKinds"]
    _check_conditions(_conditions(listener), row)


def test_weighted_backends_share_traffic_by_weight() -> None:
    """Given weights 70/30/0, then 2000 distinct requests split close to 70 % / 30 % and none reach weight 0."""
    c = cluster("HTTPRouteWeight")
    spec = next(s for s in scenarios() if s["name"] == "HTTPRouteWeight")
    counts: Counter[str] = Counter()
    for i in range(2000):
        result = route(c.state, _key(spec["gateway"]), HTTPRequest("gw.example", f"/?entropy={i}"))
        assert result.outcome == "proxied"
        counts[result.backend.service.split("/")[1]] += 1
    for backend, share in spec["weights"].items():
        assert abs(counts[backend] / 2000 - share) < 0.05, counts
    assert counts["infra-backend-v3"] == 0


def test_every_scenario_is_attached_where_the_suite_expects() -> None:
    """Given each scenario, then every route the suite calls accepted has at least one accepted parent."""
    for s in scenarios():
        t = translate(cluster(s["name"]).state)
        for row in s.get("requests") or []:
            if "backend" not in row:
                continue
            gateway_key = _key(row.get("gateway", s["gateway"]))
            assert any(ps.listeners for rc, ps in t.parent_statuses(gateway_key)), s["name"]


def test_v1beta1_objects_are_read_as_v1() -> None:
    """Given the ReferenceGrant scenario written in v1beta1 (still served by the v1.6.1 CRDs), then it routes."""
    scenario = next(s for s in scenarios() if s["name"] == "HTTPRouteReferenceGrant")
    text = (DATA / "conformance-base.yaml").read_text(encoding="utf-8") + "\n---\n" + scenario["manifests"].replace(
        "gateway.networking.k8s.io/v1\n", "gateway.networking.k8s.io/v1beta1\n")
    c = Cluster.from_yaml(text, namespace=INFRA)
    assert c.state.reference_grants and c.state.http_routes
    result = route(c.state, _key("same-namespace"), HTTPRequest("gw.example"))
    assert result.backend.service == "gateway-conformance-web-backend/web-backend"
