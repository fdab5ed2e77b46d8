"""Each Gateway implementation knetsim simulates, restated from its newest v1.6 conformance report and its docs.

For every profile of ``cluster/gatewayimplementations.py``: the quickstart's GatewayClass renamed to that
controller is Accepted with ``status.supportedFeatures`` exactly the report's list; its Gateway is programmed
with that implementation's infrastructure (names, namespace); a route miss gets that implementation's reply;
a route using an extended feature the report claims is routed, and one using a feature the report does not
claim is refused (``Accepted: False``, ``UnsupportedValue``) with a doctor finding naming the implementations
that do support it. The counts restate kubernetes-sigs/gateway-api ``conformance/reports/v1.6/`` (GATEWAY-HTTP
extended features: agentgateway 38, kgateway 37, Envoy Gateway 36, Cilium 32 / 29 on standard, NGINX Gateway
Fabric 30, GKE 12, Kong Operator 9).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from knetsim import Cluster
from knetsim.cluster.gatewayimplementations import BY_KEY, HTTP_FEATURES, IMPLEMENTATIONS, by_key
from knetsim.gateway import route, status_of
from knetsim.gateway.findings import gateway_findings
from knetsim.model.http import HTTPRequest
from knetsim.model.loader import load_paths

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "gateway" / "quickstart"
BASE = [d.body for d in load_paths([str(QUICKSTART)]).documents]

# implementation → (GATEWAY-HTTP extended features its report lists, the per-Gateway Service of Gateway
# default/eg of class "cls", the Service's namespace; None where nothing runs in the cluster)
EXPECTED = {
    "envoy-gateway": (36, "envoy-default-eg-e41e7b31", "envoy-gateway-system"),
    "nginx-gateway-fabric": (30, "eg-cls", "default"),
    "cilium": (29, "cilium-gateway-eg", "default"),  # its standard-channel report: knetsim serves standard CRDs
    "istio": (36, "eg-cls", "default"),
    "kgateway": (37, "eg", "default"),
    "agentgateway": (38, "eg", "default"),
    "traefik": (19, "traefik", "traefik"),
    "kong": (9, None, "default"),
    "gke": (12, None, None),
}
# A feature each implementation's report claims, and one it does not (None: it claims every HTTP feature).
SUPPORTED_AND_NOT = {
    "envoy-gateway": ("HTTPRouteCORS", None),
    "nginx-gateway-fabric": ("HTTPRouteCORS", "HTTPRouteBackendRequestHeaderModification"),
    "cilium": ("HTTPRouteRequestMirror", "HTTPRouteParentRefPort"),
    "istio": ("HTTPRouteRequestTimeout", None),
    "kgateway": ("HTTPRouteCORS", None),
    "agentgateway": ("HTTPRouteRequestTimeout", None),
    "traefik": ("HTTPRoute307RedirectStatusCode", "HTTPRouteCORS"),
    "kong": ("HTTPRouteQueryParamMatching", "HTTPRouteRequestMirror"),
    "gke": ("HTTPRouteRequestMirror", "HTTPRouteMethodMatching"),
}


def _rule_using(feature: str) -> tuple[dict, dict]:
    """An HTTPRoute rule (and a parentRef) that uses ``feature`` and nothing else extended."""
    backend = [{"name": "backend", "port": 3000}]
    ref: dict = {"name": "eg"}
    rule: dict = {"matches": [{"path": {"type": "PathPrefix", "value": "/feature"}}], "backendRefs": backend}
    if feature == "HTTPRouteCORS":
        rule["filters"] = [{"type": "CORS", "cors": {"allowOrigins": ["https://a.example"]}}]
    elif feature == "HTTPRouteRequestTimeout":
        rule["timeouts"] = {"request": "10s"}
    elif feature == "HTTPRouteBackendRequestHeaderModification":
        rule["backendRefs"] = [{"name": "backend", "port": 3000, "filters": [
            {"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x-a", "value": "1"}]}}]}]
    elif feature == "HTTPRouteRequestMirror":
        rule["filters"] = [{"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "backend",
                                                                                      "port": 3000}}}]
    elif feature == "HTTPRouteParentRefPort":
        ref["port"] = 80
    elif feature == "HTTPRoute307RedirectStatusCode":
        rule["filters"] = [{"type": "RequestRedirect", "requestRedirect": {"statusCode": 307}}]
        del rule["backendRefs"]
    elif feature == "HTTPRouteQueryParamMatching":
        rule["matches"][0]["queryParams"] = [{"name": "v", "value": "2"}]
    elif feature == "HTTPRouteMethodMatching":
        rule["matches"][0]["method"] = "GET"
    else:
        raise AssertionError(feature)
    return rule, ref


def _docs(key: str, feature_route: str | None = None) -> list[dict]:
    impl = BY_KEY[key]
    docs = copy.deepcopy(BASE)
    for d in docs:
        if d["kind"] == "GatewayClass":
            d["metadata"]["name"] = "cls"
            d["spec"]["controllerName"] = impl.controller_names[0]
        if d["kind"] == "Gateway":
            d["spec"]["gatewayClassName"] = "cls"
    if feature_route is not None:
        rule, ref = _rule_using(feature_route)
        docs.append({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                     "metadata": {"name": "feature", "namespace": "default"},
                     "spec": {"parentRefs": [ref], "hostnames": ["feature.example.com"], "rules": [rule]}})
    return docs


def _cluster(docs: list[dict]) -> Cluster:
    return Cluster.from_yaml(yaml.safe_dump_all(docs), filename="impl.yaml")


def test_every_profile_cites_its_report_and_has_a_distinct_controller() -> None:
    """Given the profiles, then each names a v1.6 report file and owns its controllerNames alone."""
    controllers = [c for i in IMPLEMENTATIONS for c in i.controller_names]
    assert len(controllers) == len(set(controllers))
    assert {i.key for i in IMPLEMENTATIONS} == set(EXPECTED)
    for impl in IMPLEMENTATIONS:
        assert impl.report.path.startswith("v1.6/") and impl.report.path.endswith(".yaml"), impl.key
        assert by_key(impl.controller_names[0]) is impl
    with pytest.raises(KeyError, match="unknown Gateway implementation 'nope'"):
        by_key("nope")


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_http_feature_count_restates_the_report(key: str) -> None:
    """Given the report's GATEWAY-HTTP profile, then the profile claims the same number of extended features."""
    impl = BY_KEY[key]
    assert len(impl.features & set(HTTP_FEATURES)) == EXPECTED[key][0]


def test_cilium_keeps_both_channels() -> None:
    """Cilium published a standard and an experimental report: retries only on the experimental channel. The one
    simulated is that of the channel in force: standard (knetsim's own CRDs) unless the experimental one is."""
    cilium = BY_KEY["cilium"]
    assert [r.channel for r in cilium.reports] == ["experimental", "standard"]
    assert cilium.report.channel == "standard"
    assert len(cilium.features & set(HTTP_FEATURES)) == 29 and "HTTPRouteRetry" not in cilium.features
    experimental = cilium.for_channel("experimental")
    assert len(experimental.features & set(HTTP_FEATURES)) == 32 and "HTTPRouteRetry" in experimental.features
    # An implementation with one report writes the same features on either channel.
    assert BY_KEY["envoy-gateway"].for_channel("experimental").features == BY_KEY["envoy-gateway"].features


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_class_is_accepted_with_the_reports_features_and_the_gateway_gets_its_infrastructure(key: str) -> None:
    impl = BY_KEY[key]
    c = _cluster(_docs(key))
    st = c.state
    status = status_of(st, st.gateway_classes["cls"])
    assert status is not None and status["conditions"][0]["status"] == "True"
    assert [f["name"] for f in status["supportedFeatures"]] == sorted(impl.features)
    gw = status_of(st, st.gateways["default/eg"])
    assert gw is not None
    conditions = {x["type"]: x for x in gw["conditions"]}
    assert conditions["Accepted"]["status"] == conditions["Programmed"]["status"] == "True"
    assert impl.title in conditions["Accepted"]["message"]
    _count, name, namespace = EXPECTED[key]
    if key == "kong":
        assert any(k.startswith("default/dataplane-ingress-eg-") for k in st.services)
        assert any(p.name.startswith("dataplane-eg-") for p in st.pods_in("default"))
    elif name is not None:
        assert f"{namespace}/{name}" in st.services, sorted(st.services)
    else:
        assert not any("eg" in k for k in st.services if not k.startswith("default/backend"))
    # No other implementation's infrastructure: the Envoy Gateway namespace only for Envoy Gateway.
    assert ("envoy-gateway-system" in st.namespaces) == (key == "envoy-gateway")


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_route_miss_and_hit_answer_as_the_implementation(key: str) -> None:
    impl = BY_KEY[key]
    st = _cluster(_docs(key)).state
    hit = route(st, "default/eg", HTTPRequest("www.example.com", "/"))
    assert hit.outcome == "proxied", hit.summary
    miss = route(st, "default/eg", HTTPRequest("www.other.example", "/"))
    assert miss.http_status == impl.route_miss.status
    assert f"{impl.proxy_word} answers {impl.route_miss.status}" in miss.summary


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_supported_feature_is_routed_and_unsupported_one_refused(key: str) -> None:
    impl = BY_KEY[key]
    supported, unsupported = SUPPORTED_AND_NOT[key]
    assert impl.supports(supported)
    st = _cluster(_docs(key, supported)).state
    parent = status_of(st, st.http_routes["default/feature"])["parents"][0]
    assert parent["controllerName"] == impl.controller_names[0]
    assert {x["type"]: x["status"] for x in parent["conditions"]}["Accepted"] == "True"
    r = route(st, "default/eg", HTTPRequest("feature.example.com", "/feature?v=2"))
    assert r.match is not None and r.match.route == "default/feature"
    if unsupported is None:  # its report claims every HTTPRoute feature
        assert all(impl.supports(f) for f in HTTP_FEATURES if f.startswith("HTTPRoute"))
        return
    assert not impl.supports(unsupported)
    st = _cluster(_docs(key, unsupported)).state
    parent = status_of(st, st.http_routes["default/feature"])["parents"][0]
    accepted = next(x for x in parent["conditions"] if x["type"] == "Accepted")
    assert (accepted["status"], accepted["reason"]) == ("False", "UnsupportedValue")
    assert unsupported in accepted["message"]
    r = route(st, "default/eg", HTTPRequest("feature.example.com", "/feature?v=2"))
    assert r.http_status == impl.route_miss.status  # the route is routed nowhere on this implementation
    finding = next(f for f in gateway_findings(st) if f.code == "HTTPRouteUnsupportedFeature")
    assert finding.subject == "HTTPRoute default/feature" and finding.severity == "error"
    assert unsupported in finding.message and impl.title in finding.message
    assert "Envoy Gateway" in finding.message  # Envoy Gateway's report claims every feature used here


def test_a_timeout_the_implementation_lacks_is_ignored_not_refused() -> None:
    """Given NGINX Gateway Fabric (no HTTPRouteRequestTimeout in its report) and a route with timeouts.request,
    then the route is accepted and routed (the API prescribes no refusal for timeouts) and the doctor warns that
    the timeout does not apply there."""
    st = _cluster(_docs("nginx-gateway-fabric", "HTTPRouteRequestTimeout")).state
    parent = status_of(st, st.http_routes["default/feature"])["parents"][0]
    assert {x["type"]: x["status"] for x in parent["conditions"]}["Accepted"] == "True"
    r = route(st, "default/eg", HTTPRequest("feature.example.com", "/feature"))
    assert r.match is not None and r.match.route == "default/feature"
    found = [f for f in gateway_findings(st) if f.code == "HTTPRouteFeatureIgnored"]
    assert [(f.severity, f.field) for f in found] == [("warning", "spec.rules[0].timeouts.request")]
    assert "Envoy Gateway" in found[0].message and "NGINX Gateway Fabric" in found[0].message


def test_unknown_controller_is_a_note_not_an_error() -> None:
    """Given a class of a controller no profile declares, then the doctor says it is not simulated, as info."""
    docs = copy.deepcopy(BASE)
    for d in docs:
        if d["kind"] == "GatewayClass":
            d["spec"]["controllerName"] = "example.com/own-gateway-controller"
    st = _cluster(docs).state
    found = [f for f in gateway_findings(st) if f.subject == "Gateway default/eg"]
    assert [(f.code, f.severity) for f in found] == [("GatewayClassOtherController", "info")]
    assert "does not simulate" in found[0].message
    assert not any(f.severity == "error" for f in gateway_findings(st))


CORS_AND_TIMEOUT = """
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: cors
spec:
  parentRefs:
    - name: eg
  hostnames: ["api.example.com"]
  rules:
    - timeouts:
        request: 10s
      filters:
        - type: CORS
          cors:
            allowOrigins: ["https://app.example.com"]
      backendRefs:
        - name: backend
          port: 3000
"""


def _check_dir(tmp_path: Path) -> Path:
    (tmp_path / "quickstart.yaml").write_text((QUICKSTART / "quickstart.yaml").read_text() + "---" + CORS_AND_TIMEOUT)
    return tmp_path


def test_gateway_check_for_one_implementation_lists_features_and_exits_1(tmp_path: Path) -> None:
    """Given a route with CORS and a request timeout, then on NGINX Gateway Fabric the timeout is the feature it
    lacks (its report lists HTTPRouteRequestTimeout as unsupported: served without it, as the API does not say
    to refuse it), CORS works, and the exit code is 1."""
    from click.testing import CliRunner

    from knetsim.cli.main import cli

    result = CliRunner().invoke(cli, ["gateway", "check", "-f", str(_check_dir(tmp_path)),
                                      "--implementation", "nginx-gateway-fabric"])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert "experimental-2.7.0-default-report.yaml" in lines[0]
    timeout = next(x for x in lines if "HTTPRouteRequestTimeout" in x)
    assert timeout.split()[:5] == ["HTTPRoute", "default/cors", "HTTPRouteRequestTimeout",
                                   "spec.rules[0].timeouts.request", "ignored"]
    assert "envoy-gateway" in timeout and "nginx-gateway-fabric" not in timeout.split("ignored", 1)[1]
    cors = next(x for x in lines if "HTTPRouteCORS" in x)
    assert cors.split()[4] == "yes"
    ok = CliRunner().invoke(cli, ["gateway", "check", "-f", str(_check_dir(tmp_path)), "--implementation",
                                  "envoy-gateway"])
    assert ok.exit_code == 0 and "every object works on Envoy Gateway" in ok.output


def test_gateway_check_table_over_every_implementation(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from knetsim.cli.main import cli

    result = CliRunner().invoke(cli, ["gateway", "check", "-f", str(_check_dir(tmp_path)), "-o", "json"])
    assert result.exit_code == 0, result.output
    import json

    data = json.loads(result.output)
    assert data["implementations"] == [i.key for i in IMPLEMENTATIONS]
    cors = next(o for o in data["objects"] if o["object"] == "HTTPRoute default/cors")
    assert sorted(cors["unsupported"]) == ["gke", "kong", "nginx-gateway-fabric", "traefik"]
    assert cors["unsupported"]["traefik"] == ["HTTPRouteCORS", "HTTPRouteRequestTimeout"]
    bad = CliRunner().invoke(cli, ["gateway", "check", "-f", str(tmp_path), "--implementation", "bogus"])
    assert bad.exit_code == 2 and "unknown implementation 'bogus'" in bad.output


def _between(text: str, name: str) -> str:
    begin, end = f"<!-- {name}:begin -->\n", f"\n<!-- {name}:end -->"
    return text[text.index(begin) + len(begin):text.index(end)]


def test_docs_tables_equal_the_profiles() -> None:
    """docs/gateway.md's implementation tables are the profiles' (regenerate them with
    features_table() and infrastructure_table() when a profile changes)."""
    from knetsim.cluster.gatewayimplementations import features_table, infrastructure_table

    doc = (ROOT / "docs" / "gateway.md").read_text(encoding="utf-8")
    assert _between(doc, "implementations-features") == features_table()
    assert _between(doc, "implementations-infrastructure") == infrastructure_table()
    assert "| **GATEWAY-HTTP extended features** | 36 | 30 | 29 | 36 | 37 | 38 | 19 | 9 | 12 |" in doc


@pytest.mark.parametrize("key", ["kong", "nginx-gateway-fabric", "traefik", "envoy-gateway"])
def test_trace_from_outside_gets_the_implementations_route_miss_body(key: str) -> None:
    """Given a request for a host no route serves, then the client gets that implementation's own 404 body
    (Kong's JSON, NGINX's page, Traefik's text, Envoy's empty one); a served host reaches the backend pod."""
    impl = BY_KEY[key]
    c = _cluster(_docs(key))
    miss = c.trace("external", "http://www.other.example/")
    assert (miss.reply.status, miss.reply.body) == (impl.route_miss.status, impl.route_miss.body)
    if impl.route_miss.content_type != "text/plain":  # NGINX's HTML page, Kong's JSON
        assert miss.reply.headers["content-type"] == impl.route_miss.content_type
    hit = c.trace("external", "http://www.example.com/")
    assert hit.reply.status == 200 and hit.backend.pod.startswith("default/backend-")


def test_a_listener_protocol_the_implementation_does_not_serve_is_refused() -> None:
    """Given a TCP listener on Traefik (its report has no TCPRoute) and on Envoy Gateway (TCPRoute passed its
    provisional tests), then Traefik refuses the listener (UnsupportedProtocol) and Envoy Gateway accepts it."""
    for key, accepted in (("traefik", "False"), ("envoy-gateway", "True")):
        docs = _docs(key)
        gw = next(d for d in docs if d["kind"] == "Gateway")
        gw["spec"]["listeners"].append({"name": "db", "protocol": "TCP", "port": 5432})
        st = _cluster(docs).state
        status = status_of(st, st.gateways["default/eg"])
        db = next(li for li in status["listeners"] if li["name"] == "db")
        cond = {x["type"]: x for x in db["conditions"]}["Accepted"]
        assert cond["status"] == accepted, (key, cond)
        if accepted == "False":
            assert cond["reason"] == "UnsupportedProtocol" and "Traefik" in cond["message"]


def test_migrate_ingress_for_nginx_gateway_fabric_and_migrate_check(tmp_path: Path) -> None:
    """Given the migration example, then `migrate ingress --implementation nginx-gateway-fabric` writes NGINX
    Gateway Fabric's controllerName, no Envoy Gateway policy (each listed as not converted), and `migrate check`
    on that result finds the requests those policies served differ (the body-size limit is gone: 413 vs proxied)
    where Envoy Gateway's result keeps them."""
    import json

    from click.testing import CliRunner

    from knetsim.cli.main import cli

    old = ROOT / "examples" / "gateway" / "migration" / "old"
    runner = CliRunner()
    counts = {}
    for key in ("envoy-gateway", "nginx-gateway-fabric"):
        made = runner.invoke(cli, ["migrate", "ingress", "-f", str(old), "--implementation", key, "-o", "json"])
        assert made.exit_code == 0, made.output
        data = json.loads(made.output)
        klass = next(o for o in data["objects"] if o["kind"] == "GatewayClass")
        assert klass["spec"]["controllerName"] == BY_KEY[key].controller_names[0]
        eg_objects = [o for o in data["objects"] if o["apiVersion"].startswith("gateway.envoyproxy.io/")]
        dropped = [n for n in data["notes"] if "written for Envoy Gateway as" in n["message"]]
        if key == "envoy-gateway":
            assert eg_objects and not dropped
        else:
            assert not eg_objects and dropped and all("NGINX Gateway Fabric" in n["message"] for n in dropped)
        out = tmp_path / key
        out.mkdir()
        (out / "gateway.yaml").write_text(yaml.safe_dump_all(data["objects"]))
        checked = runner.invoke(cli, ["migrate", "check", "-f", str(old), "-f", str(out)])
        counts[key] = int(checked.output.split(": ", 1)[1].split(" differ")[0])
    assert counts["nginx-gateway-fabric"] > counts["envoy-gateway"]


def test_network_policy_on_nginx_proxy_is_checked_on_the_listener_port() -> None:
    """Given NGINX Gateway Fabric's proxy (listening on the listener's own port 80, no +10000 shift as Envoy
    Gateway's) isolated by a policy allowing TCP 80 only, then the client's request still reaches it; allowing only
    10080 drops it."""
    for port, outcome in ((80, "connected"), (10080, "timeout")):
        docs = _docs("nginx-gateway-fabric")
        docs.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                     "metadata": {"name": "proxy", "namespace": "default"},
                     "spec": {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "eg-cls"}},
                              "policyTypes": ["Ingress"],
                              "ingress": [{"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}],
                                           "ports": [{"protocol": "TCP", "port": port}]}]}})
        t = _cluster(docs).trace("external", "http://www.example.com/")
        assert t.outcome == outcome, (port, t.outcome)


def test_get_svc_deploy_shows_nginx_gateway_fabrics_objects(tmp_path: Path) -> None:
    """Given the quickstart with NGINX Gateway Fabric's controllerName, then `knetsim get svc,deploy -A` lists what
    a cluster running it lists: the data plane eg-eg (LoadBalancer, the pool's first address) in the Gateway's
    namespace and the control plane in nginx-gateway, and nothing of Envoy Gateway."""
    from click.testing import CliRunner

    from knetsim.cli.main import cli

    text = (QUICKSTART / "quickstart.yaml").read_text().replace(
        "gateway.envoyproxy.io/gatewayclass-controller", BY_KEY["nginx-gateway-fabric"].controller_names[0])
    (tmp_path / "q.yaml").write_text(text)
    result = CliRunner().invoke(cli, ["get", "svc,deploy", "-A", "-f", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines()]
    assert next(r for r in rows if r[1:2] == ["service/eg-eg"])[:3] == ["default", "service/eg-eg", "LoadBalancer"]
    assert any(r[:2] == ["default", "deployment.apps/eg-eg"] for r in rows)
    assert any(r[:2] == ["nginx-gateway", "deployment.apps/ngf-nginx-gateway-fabric"] for r in rows)
    assert "envoy" not in result.output


def test_a_listener_set_on_an_implementation_without_listener_set_is_not_read(tmp_path: Path) -> None:
    """Given the TLS example's ListenerSet team-a under Kong Operator (its report claims no ListenerSet) and under
    Envoy Gateway, then Kong leaves it without status and the doctor says why, while Envoy Gateway accepts it."""
    from knetsim.gateway.findings import gateway_findings as findings

    tls = ROOT / "examples" / "gateway" / "tls"
    for key, attached in (("kong", False), ("envoy-gateway", True)):
        text = (tls / "edge.yaml").read_text().replace("gateway.envoyproxy.io/gatewayclass-controller",
                                                       BY_KEY[key].controller_names[0])
        out = tmp_path / key
        out.mkdir()
        (out / "edge.yaml").write_text(text)
        for name in ("secrets.yaml", "workloads.yaml", "partner-client.pem"):
            (out / name).write_bytes((tls / name).read_bytes())
        st = Cluster.from_paths([str(out / "edge.yaml"), str(out / "secrets.yaml"),
                                 str(out / "workloads.yaml")]).state
        status = status_of(st, st.listener_sets["team-a/team-a"])
        assert (status is not None) == attached, (key, status)
        if not attached:
            found = [f for f in findings(st) if "ListenerSet team-a/team-a" in f.message]
            assert found and "does not support ListenerSet" in found[0].message


def test_gateway_level_feature_the_implementation_lacks_is_a_warning() -> None:
    """Given spec.infrastructure labels on the Gateway, then under Envoy Gateway (whose report lists
    GatewayInfrastructurePropagation as unsupported) the doctor warns, naming the implementations that support
    it; under NGINX Gateway Fabric (which claims it) it does not."""
    for key, warned in (("envoy-gateway", True), ("nginx-gateway-fabric", False)):
        docs = _docs(key)
        gw = next(d for d in docs if d["kind"] == "Gateway")
        gw["spec"]["infrastructure"] = {"labels": {"team": "a"}}
        st = _cluster(docs).state
        found = [f for f in gateway_findings(st) if f.code == "GatewayFeatureUnsupported"]
        assert bool(found) == warned, key
        if warned:
            assert found[0].field == "spec.infrastructure" and "NGINX Gateway Fabric" in found[0].message


PLAIN_INGRESS = """apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: default}
spec:
  ingressClassName: nginx
  rules:
  - host: shop.example
    http:
      paths:
      - {path: /api, pathType: Prefix, backend: {service: {name: api, port: {number: 80}}}}
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
"""
BACKENDS = "".join(f"""---
apiVersion: v1
kind: Service
metadata: {{name: {name}, namespace: default}}
spec: {{selector: {{app: {name}}}, ports: [{{port: 80, targetPort: 8080}}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: default}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
      - {{name: app, image: registry.k8s.io/e2e-test-images/agnhost:2.53, args: [netexec, --http-port=8080]}}
""" for name in ("web", "api"))


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_a_plain_ingress_migrates_to_every_implementation_and_is_proved(key: str, tmp_path: Path) -> None:
    """Given an Ingress of hosts and prefix paths only, then `migrate ingress --implementation KEY` writes that
    implementation's class, and `migrate check` proves every request the same on it but one: a body over
    ingress-nginx's default limit (1m), which only Envoy Gateway's policy carries; elsewhere the migration said
    so (proxy-body-size not converted), and the check shows the request the user would see change."""
    import json

    from click.testing import CliRunner

    from knetsim.cli.main import cli

    old = tmp_path / "old"
    old.mkdir()
    (old / "app.yaml").write_text(PLAIN_INGRESS + BACKENDS)
    runner = CliRunner()
    made = runner.invoke(cli, ["migrate", "ingress", "-f", str(old), "--implementation", key, "-o", "json"])
    assert made.exit_code == 0, made.output
    data = json.loads(made.output)
    klass = next(o for o in data["objects"] if o["kind"] == "GatewayClass")
    assert klass["spec"]["controllerName"] == BY_KEY[key].controller_names[0]
    new = tmp_path / "new"
    new.mkdir()
    (new / "gateway.yaml").write_text(yaml.safe_dump_all(data["objects"]))
    checked = runner.invoke(cli, ["migrate", "check", "-f", str(old), "-f", str(new), "-o", "json"])
    report = json.loads(checked.stdout)
    differing = [d["request"] for d in report["differences"]]
    simulated = key == "envoy-gateway"  # its BackendTrafficPolicy carries the limit, and knetsim runs it
    assert differing == ([] if simulated else ["POST http://shop.example/api [body 1048577 B]"]), differing
    assert report["requests"] > 10 and len(report["same"]) == report["requests"] - len(differing)
    unconverted = [n for n in data["notes"] if "proxy-body-size" in n["message"] and "not converted" in n["message"]]
    if key == "kgateway":
        # Written as kgateway's own TrafficPolicy, which knetsim reads but does not run: the check says so.
        assert not unconverted and any("TrafficPolicy" in str(c) for c in report["caveats"]), report["caveats"]
    else:
        assert bool(unconverted) != simulated, data["notes"]
