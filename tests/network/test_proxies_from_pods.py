"""A request from a pod to the Ingress controller's Service, or to a Gateway's proxy Service: the proxy routes it as
it routes a client's from outside (by the Host header, to the backend's endpoints, as its own pod), where it used
to end at the proxy with a made-up 200. The live twin is tests/e2e/test_ingress.py."""

from __future__ import annotations

from tests.conftest import EXAMPLES

from knetsim import Cluster
from knetsim.network.tracer import trace

PROBE = """\
apiVersion: v1
kind: Pod
metadata: {name: probe, labels: {app: probe}}
spec: {containers: [{name: c, image: busybox:1.36, command: [sleep, "3600"]}]}
"""
CONTROLLER = "http://ingress-nginx-controller.ingress-nginx.svc.cluster.local/api"


def shop_with_probe(tmp_path) -> Cluster:  # type: ignore[no-untyped-def]
    (tmp_path / "probe.yaml").write_text(PROBE)
    return Cluster.from_paths([str(EXAMPLES / "shop"), str(tmp_path / "probe.yaml")])


def test_the_host_header_routes_to_the_backend_from_the_controllers_own_pod(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = trace(shop_with_probe(tmp_path).state, "default/probe", CONTROLLER, headers={"Host": "shop.example.com"})
    assert t.outcome == "connected" and t.reply.status == 200
    assert t.backend.pod.startswith("shop/api-")
    layers = [h.layer for h in t.hops]
    assert layers == ["dns", "service", "endpoints", "dataplane", "policy", "listener", "ingress", "service",
                      "endpoints", "dataplane", "policy", "listener", "app"]
    routed = next(h for h in t.hops if h.layer == "ingress")
    assert "Ingress shop/shop rule 0 (host shop.example.com) path /api (Prefix) → Service shop/api:8080" in \
        routed.detail
    # The backend's NetworkPolicy judges the controller pod, not the probe: shop admits the ingress-nginx namespace.
    backend_policy = [h for h in t.hops if h.layer == "policy"][1]
    assert "egress: no policy selects ingress-nginx/ingress-nginx-controller-" in backend_policy.detail
    assert "allowed by NetworkPolicy shop/allow-from-ingress" in backend_policy.detail


def test_a_host_no_rule_names_gets_the_default_backends_404(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = trace(shop_with_probe(tmp_path).state, "default/probe", CONTROLLER)
    assert t.reply.status == 404
    assert [f.code for f in t.findings] == ["IngressNoMatch"]


def test_a_gateways_proxy_routes_a_pods_request_by_its_httproute(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "probe.yaml").write_text(PROBE)
    state = Cluster.from_paths([str(EXAMPLES / "gateway" / "quickstart"), str(tmp_path / "probe.yaml")]).state
    proxy = next(s for s in state.services.values() if s.namespace == "envoy-gateway-system" and
                 s.name.startswith("envoy-default-eg-"))
    for target in (f"http://{proxy.name}.envoy-gateway-system/", f"http://{proxy.load_balancer_ips[0]}/"):
        t = trace(state, "default/probe", target, headers={"Host": "www.example.com"})
        assert t.outcome == "connected" and t.reply.status == 200, target
        assert t.backend.pod.startswith("default/backend-"), target
        routed = next(h for h in t.hops if h.layer == "gateway")
        assert "→ HTTPRoute default/backend rule 0 match 0 (PathPrefix /) → Service default/backend:3000" in \
            routed.detail
    missed = trace(state, "default/probe", f"http://{proxy.name}.envoy-gateway-system/",
                   headers={"Host": "nothing.example.com"})
    assert missed.reply.status == 404 and [f.code for f in missed.findings] == ["GatewayNoMatch"]


def test_the_scheme_must_match_the_controllers_port(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Plain HTTP to the controller's TLS port gets nginx's 400 page; TLS to its plain port fails the handshake."""
    state = shop_with_probe(tmp_path).state
    host = {"Host": "shop.example.com"}
    plain = trace(state, "default/probe", "http://ingress-nginx-controller.ingress-nginx:443/api", headers=host)
    assert plain.reply.status == 400 and "The plain HTTP request was sent to HTTPS port" in plain.reply.body
    tls = trace(state, "default/probe", "https://ingress-nginx-controller.ingress-nginx:80/api", headers=host)
    assert tls.outcome == "refused" and tls.reply is None
    assert "the TLS handshake fails" in tls.hops[-1].detail


def test_an_ingress_whose_backend_is_the_controller_loops_and_says_so(tmp_path) -> None:  # type: ignore[no-untyped-def]
    loop = """\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: loop, namespace: ingress-nginx}
spec:
  ingressClassName: nginx
  rules:
  - host: loop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: ingress-nginx-controller, port: {number: 80}}}}
"""
    (tmp_path / "loop.yaml").write_text(loop)
    state = Cluster.from_paths([str(EXAMPLES / "shop"), str(tmp_path / "loop.yaml")]).state
    t = trace(state, "external", "http://loop.example.com/")
    assert t.reply.status == 500
    assert [f.code for f in t.findings] == ["IngressBackendLoop"]
