"""Request mirrors, restated from kubernetes-sigs/gateway-api ``conformance/tests``: ``httproute-request-mirror.go``
(HTTPRouteRequestMirror), ``httproute-request-multiple-mirrors.go`` (HTTPRouteRequestMultipleMirrors) and
``httproute-request-percentage-mirror.go`` (HTTPRouteRequestPercentageMirror), with their YAML re-typed.

Given a rule with RequestMirror filters, when a request matches it, then the client's answer is the primary
backend's (infra-backend-v1) and a copy of the request — path and headers as the rule's filters made them — goes to
each mirror backend (the suite reads that backend's log); a percentage mirrors about that share of the requests.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from knetsim import Cluster
from knetsim.gateway import route
from knetsim.model.http import HTTPRequest

DATA = Path(__file__).parent / "data"
INFRA = "gateway-conformance-infra"

_MIRROR_V2 = "{type: RequestMirror, requestMirror: {backendRef: {name: infra-backend-v2, namespace: " \
             "gateway-conformance-infra, port: 8080}}}"
_MIRROR_V3 = _MIRROR_V2.replace("v2", "v3")
_MODIFY = ("{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-Header-Set, value: "
           "set-overwrites-values}], add: [{name: X-Header-Add, value: header-val-1}, {name: X-Header-Add-Append, "
           "value: header-val-2}], remove: [X-Header-Remove]}}")
_V1 = "[{name: infra-backend-v1, port: 8080, namespace: gateway-conformance-infra}]"


def _rule(path: str, *filters: str) -> str:
    return (f"  - matches: [{{path: {{type: PathPrefix, value: {path}}}}}]\n"
            f"    filters: [{', '.join(filters)}]\n    backendRefs: {_V1}\n")


ROUTES = ("""apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: request-mirror, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: same-namespace}]
  rules:
""" + _rule("/mirror", _MIRROR_V2) + _rule("/mirror-and-modify-headers", _MODIFY, _MIRROR_V2) + """---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: request-multiple-mirrors, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: same-namespace}]
  rules:
""" + _rule("/multi-mirror", _MIRROR_V2, _MIRROR_V3)
          + _rule("/multi-mirror-and-modify-request-headers", _MODIFY, _MIRROR_V2, _MIRROR_V3) + """---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: request-percentage-mirror, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: same-namespace}]
  rules:
""" + _rule("/percent-mirror", _MIRROR_V2.replace("port: 8080}", "port: 8080}, percent: 20"))
          + _rule("/percent-mirror-fraction",
                  _MIRROR_V2.replace("port: 8080}", "port: 8080}, fraction: {numerator: 25, denominator: 50}"))
          + _rule("/percent-mirror-and-modify-headers", _MODIFY,
                  _MIRROR_V2.replace("port: 8080}", "port: 8080}, percent: 35")))


@cache
def cluster() -> Cluster:
    base = (DATA / "conformance-base.yaml").read_text(encoding="utf-8")
    return Cluster.from_yaml(base + "\n---\n" + ROUTES, namespace=INFRA, filename="mirrors.yaml")


def _route(path: str, headers: tuple[tuple[str, str], ...] = ()):  # type: ignore[no-untyped-def]
    return route(cluster().state, f"{INFRA}/same-namespace", HTTPRequest("gw.example", path, "GET", "http", None,
                                                                         headers))


@pytest.mark.parametrize(("path", "mirrors"), [
    ("/mirror", [f"{INFRA}/infra-backend-v2:8080"]),
    ("/multi-mirror", [f"{INFRA}/infra-backend-v2:8080", f"{INFRA}/infra-backend-v3:8080"]),
])
def test_the_client_gets_the_primary_and_each_mirror_gets_a_copy(path: str, mirrors: list[str]) -> None:
    result = _route(path)
    assert result.proxied and result.backend is not None and result.backend.service == f"{INFRA}/infra-backend-v1"
    assert [m.backend for m in result.mirrors if m.sent] == mirrors, result.mirrors
    assert all(m.endpoint is not None and m.endpoint.pod.startswith(f"{INFRA}/infra-backend-v") for m in result.mirrors)
    assert "mirrored to" in result.summary
    assert result.to_dict()["mirrors"][0]["sent"] is True
    assert result.answer().backend == f"{INFRA}/infra-backend-v1:8080"  # the mirror's answer is ignored


@pytest.mark.parametrize("path", ["/mirror-and-modify-headers", "/multi-mirror-and-modify-request-headers"])
def test_the_copy_carries_the_headers_the_rules_filters_made(path: str) -> None:
    result = _route(path, (("X-Header-Remove", "remove-val"), ("X-Header-Add-Append", "append-val-1")))
    assert result.upstream_request is not None
    headers = result.upstream_request.headers
    assert headers["x-header-add"] == "header-val-1" and headers["x-header-set"] == "set-overwrites-values"
    assert headers["x-header-add-append"] == "append-val-1,header-val-2" and "x-header-remove" not in headers
    assert all(m.sent for m in result.mirrors) and result.mirrors


@pytest.mark.parametrize(("path", "percent"), [("/percent-mirror", 20), ("/percent-mirror-fraction", 50),
                                                ("/percent-mirror-and-modify-headers", 35)])
def test_a_percentage_mirrors_about_that_share(path: str, percent: int) -> None:
    """The suite sends many requests and accepts the share within a statistical bound; 1000 distinct requests here
    land within 4 points of it, and every one is answered by the primary."""
    sent = 0
    for i in range(1000):
        result = _route(f"{path}?n={i}")
        assert result.backend is not None and result.backend.service == f"{INFRA}/infra-backend-v1"
        [copy] = result.mirrors
        assert copy.percent == percent
        sent += copy.sent
    assert abs(sent / 10 - percent) < 4, sent


def test_a_mirror_to_a_missing_service_sends_no_copy_and_says_so() -> None:
    text = ROUTES.split("---")[0].replace("name: infra-backend-v2", "name: nowhere", 1)
    c = Cluster.from_yaml((DATA / "conformance-base.yaml").read_text(encoding="utf-8") + "\n---\n" + text,
                          namespace=INFRA, filename="mirrors.yaml")
    result = route(c.state, f"{INFRA}/same-namespace", HTTPRequest("gw.example", "/mirror"))
    assert result.proxied and result.backend is not None and result.backend.service == f"{INFRA}/infra-backend-v1"
    [copy] = result.mirrors
    assert not copy.sent and "not found" in copy.why


def test_the_live_listener_sends_the_copy_and_the_mirror_pods_access_log_shows_it() -> None:
    """The live Gateway listener (daemon/gatewaylisteners.py), driven in-process: the client gets infra-backend-v1's
    answer, and both v1's and v2's access logs (what ``kubectl logs`` shows) record the request — what the suite's
    ExpectMirroredRequest reads."""
    import asyncio

    from knetsim.daemon.gatewaylisteners import GatewayListeners

    class Server:
        state, state_listeners = cluster().state, []  # type: ignore[var-annotated]

        async def settle(self) -> None:
            return None

    served: list = []
    listeners = GatewayListeners(Server(), served=served.append)

    async def ask() -> object:
        try:
            return await listeners._answer_http(f"{INFRA}/same-namespace", 80, "http", "GET", "/mirror",
                                                [("host", "gw.example")], None, None, "HTTP/1.1")
        finally:
            await listeners.close()
    answer = asyncio.run(ask())
    assert answer is not None and answer.status == 200
    assert dict(answer.headers)["x-knetsim-backend"].startswith(f"{INFRA}/infra-backend-v1-")
    assert [(s.pod.rsplit("-", 2)[0], s.target, s.status) for s in served] == [
        (f"{INFRA}/infra-backend-v1", "/mirror", 200), (f"{INFRA}/infra-backend-v2", "/mirror", 200)]


def test_a_grpcroute_mirror_copies_the_call() -> None:
    """GRPCRoute allows RequestMirror too (Envoy Gateway: GRPC_FILTERS); knetsim's own case beside the suite's: the
    call is answered by grpc-infra-backend-v1 and copied to grpc-infra-backend-v2."""
    from knetsim.gateway.grpc import call_from, route_grpc

    base = "\n---\n".join((DATA / name).read_text(encoding="utf-8")
                          for name in ("conformance-base.yaml", "conformance-base-tls.yaml"))
    grpc_route = """
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: grpc-mirror, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: same-namespace}]
  rules:
  - filters: [{type: RequestMirror, requestMirror: {backendRef: {name: grpc-infra-backend-v2, port: 8080}}}]
    backendRefs: [{name: grpc-infra-backend-v1, port: 8080}]
"""
    c = Cluster.from_yaml(base + "\n---\n" + grpc_route, namespace=INFRA, filename="grpc-mirror.yaml")
    result = route_grpc(c.state, f"{INFRA}/same-namespace",
                        call_from("grpc.example", "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/Echo"))
    assert result.proxied and result.backend is not None, result.summary
    assert result.backend.service == f"{INFRA}/grpc-infra-backend-v1"
    assert [m.backend for m in result.mirrors if m.sent] == [f"{INFRA}/grpc-infra-backend-v2:8080"]
    assert result.to_dict()["mirrors"][0]["sent"] is True


def test_the_live_listener_copies_a_grpc_call_to_the_mirror() -> None:
    """The live listener's gRPC answer (in-process): both echo pods' access logs record the call."""
    import asyncio

    from knetsim.daemon.gatewaylisteners import GatewayListeners

    base = "\n---\n".join((DATA / name).read_text(encoding="utf-8")
                          for name in ("conformance-base.yaml", "conformance-base-tls.yaml"))
    grpc_route = """
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: grpc-mirror, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: same-namespace}]
  rules:
  - filters: [{type: RequestMirror, requestMirror: {backendRef: {name: grpc-infra-backend-v2, port: 8080}}}]
    backendRefs: [{name: grpc-infra-backend-v1, port: 8080}]
"""
    state = Cluster.from_yaml(base + "\n---\n" + grpc_route, namespace=INFRA, filename="grpc-mirror.yaml").state

    class Server:
        def __init__(self) -> None:
            self.state, self.state_listeners = state, []  # type: ignore[var-annotated]

        async def settle(self) -> None:
            return None

    served: list = []
    listeners = GatewayListeners(Server(), served=served.append)
    path = "/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/Echo"

    async def ask() -> object:
        try:
            return await listeners._answer_grpc(f"{INFRA}/same-namespace", 80, "http",
                                                {":path": path, ":authority": "grpc.example"}, [], None, None)
        finally:
            await listeners.close()
    headers, _body, trailers = asyncio.run(ask())  # type: ignore[misc]
    assert dict(headers)[":status"] == "200" and trailers == [("grpc-status", "0")]
    assert sorted(s.pod.rsplit("-", 2)[0] for s in served) == [f"{INFRA}/grpc-infra-backend-v1",
                                                              f"{INFRA}/grpc-infra-backend-v2"]
