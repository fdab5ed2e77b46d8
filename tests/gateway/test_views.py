"""The typed views of the six kinds added in Gateway API v1.6 (model/gatewayapi.py): defaults the CRDs
declare, odd shapes reported instead of crashing, and `knetsim get` with the CRDs' printer columns.

Given one manifest per kind, admitted as every object that reaches a view is, then the view holds what the
routing code needs with the API's defaults (applied once, by admission); given a shape the schema would refuse,
then the view reports the field and carries on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from knetsim.cli.main import cli
from knetsim.model import admission
from knetsim.model.gatewayapi import PARSERS, BackendTLSPolicy, Gateway, GRPCRoute, ListenerSet, StreamRoute

KINDS_YAML = """
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: echo, namespace: apps}
spec:
  parentRefs: [{name: gw}]
  hostnames: [grpc.example.com]
  rules:
  - matches: [{method: {service: echo.Echo, method: Say}, headers: [{name: x-env, value: canary}]}]
    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-from, value: gw}]}}]
    backendRefs: [{name: echo, port: 9000, weight: 3}]
  - backendRefs: [{name: echo-v1, port: 9000}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: db, namespace: apps}
spec:
  parentRefs: [{name: gw, sectionName: tls}]
  hostnames: [db.example.com]
  rules: [{backendRefs: [{name: db, port: 5432}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: UDPRoute
metadata: {name: dns, namespace: apps}
spec:
  parentRefs: [{name: gw, port: 53}]
  rules: [{backendRefs: [{name: coredns, port: 53}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: team-a, namespace: team-a}
spec:
  parentRef: {name: gw, namespace: apps}
  listeners:
  - {name: https, port: 443, protocol: HTTPS, hostname: a.example.com,
     tls: {certificateRefs: [{name: a-cert}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: echo-tls, namespace: apps}
spec:
  targetRefs: [{group: "", kind: Service, name: echo, sectionName: grpc}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: echo-ca}]
    hostname: echo.apps.svc
    subjectAltNames: [{type: Hostname, hostname: echo.example.com}, {type: URI, uri: "spiffe://cluster.local/echo"}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: apps}
spec:
  gatewayClassName: eg
  allowedListeners: {namespaces: {from: All}}
  tls:
    frontend:
      default: {validation: {caCertificateRefs: [{kind: ConfigMap, name: client-ca}]}}
      perPort: [{port: 8443, tls: {validation: {mode: AllowInsecureFallback,
                                                 caCertificateRefs: [{kind: ConfigMap, name: other-ca}]}}}]
  listeners: [{name: http, port: 80, protocol: HTTP}]
"""


def _docs() -> dict[str, dict]:
    """Each manifest as admission leaves it (the CRD's defaults applied)."""
    docs = yaml.safe_load_all(KINDS_YAML)
    return {d["kind"]: admission.admit(d, namespace="apps", keep_invalid=True)[0] for d in docs}


def test_grpcroute_defaults() -> None:
    route = GRPCRoute.parse(_docs()["GRPCRoute"])
    first, second = route.rules
    assert first.matches[0].method is not None and first.matches[0].method.type == "Exact"
    assert (first.matches[0].method.service, first.matches[0].method.method) == ("echo.Echo", "Say")
    assert first.matches[0].headers[0].type == "Exact"
    assert first.filters[0].request_header_modifier is not None
    assert first.backend_refs[0].weight == 3 and first.backend_refs[0].kind == "Service"
    # A rule without matches matches every method of every service.
    assert len(second.matches) == 1 and second.matches[0].method is None
    assert route.parent_refs[0].group == "gateway.networking.k8s.io" and route.parent_refs[0].kind == "Gateway"


def test_stream_routes() -> None:
    docs = _docs()
    tls = PARSERS["TLSRoute"](docs["TLSRoute"])
    udp = PARSERS["UDPRoute"](docs["UDPRoute"])
    assert isinstance(tls, StreamRoute) and tls.kind == "TLSRoute" and tls.hostnames == ("db.example.com",)
    assert tls.parent_refs[0].section_name == "tls"
    assert udp.kind == "UDPRoute" and udp.hostnames == () and udp.parent_refs[0].port == 53
    assert udp.rules[0].backend_refs[0].name == "coredns"


def test_listenerset_and_gateway_allowed_listeners() -> None:
    docs = _docs()
    ls = ListenerSet.parse(docs["ListenerSet"])
    assert ls.parent is not None and (ls.parent.group, ls.parent.kind, ls.parent.namespace, ls.parent.name) == (
        "gateway.networking.k8s.io", "Gateway", "apps", "gw")
    assert ls.listeners[0].tls_mode == "Terminate" and ls.listeners[0].certificate_refs[0].kind == "Secret"
    gw = Gateway.parse(docs["Gateway"])
    assert gw.allowed_listeners_from == "All"
    default = gw.frontend_validation_for(443)
    per_port = gw.frontend_validation_for(8443)
    assert default is not None and default.mode == "AllowValidOnly" and default.ca_refs[0].name == "client-ca"
    assert per_port is not None and per_port.mode == "AllowInsecureFallback"
    # The API's default: no ListenerSet may attach.
    assert Gateway.parse({"kind": "Gateway", "metadata": {"name": "x"}, "spec": {}}).allowed_listeners_from == "None"


def test_backendtlspolicy() -> None:
    policy = BackendTLSPolicy.parse(_docs()["BackendTLSPolicy"])
    assert policy.target_refs[0].section_name == "grpc" and policy.hostname == "echo.apps.svc"
    assert policy.ca_refs[0].kind == "ConfigMap" and policy.well_known_ca is None
    assert [(s.type, s.value) for s in policy.subject_alt_names] == [
        ("Hostname", "echo.example.com"), ("URI", "spiffe://cluster.local/echo")]


@pytest.mark.parametrize("kind", ["GRPCRoute", "TLSRoute", "UDPRoute", "ListenerSet", "BackendTLSPolicy", "Gateway"])
@pytest.mark.parametrize("spec", ["a string", ["a", "list"], {"rules": 3, "listeners": {"x": 1}, "parentRef": 7,
                                                             "targetRefs": [None, 5], "validation": [],
                                                             "parentRefs": [{"name": 9}], "tls": "x"}])
def test_odd_shapes_are_reported_not_raised(kind: str, spec: object) -> None:
    obj = PARSERS[kind]({"kind": kind, "metadata": {"name": "odd", "namespace": "apps"}, "spec": spec})
    assert obj.problems, obj


def test_get_prints_the_crd_columns(tmp_path: Path) -> None:
    (tmp_path / "all.yaml").write_text(KINDS_YAML)
    out = CliRunner().invoke(cli, ["get", "grpcroutes,listenersets,btlspolicy,tlsroutes", "-A", "-f",
                                   str(tmp_path)]).output
    headers = [line.split() for line in out.splitlines() if line.startswith("NAMESPACE")]
    assert headers == [["NAMESPACE", "NAME", "HOSTNAMES", "AGE"],
                       ["NAMESPACE", "NAME", "ACCEPTED", "PROGRAMMED", "AGE"],
                       ["NAMESPACE", "NAME", "AGE"], ["NAMESPACE", "NAME", "AGE"]]
    assert 'grpcroute.gateway.networking.k8s.io/echo   ["grpc.example.com"]' in out
