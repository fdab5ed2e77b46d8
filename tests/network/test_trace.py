"""Every trace outcome, each from a realistic cluster (examples/ and inline manifests).

Address plan: tests/conftest.py. The shop example: web (nginx, 2 pods), api (3 pods, named
ports http/metrics), db (StatefulSet + headless), default-deny with DNS and app allowances.
"""

from __future__ import annotations

import json

import pytest
from tests.conftest import EXAMPLES, cluster_from

from knetsim import Cluster
from knetsim.network.trace import LAYERS, TraceInputError

BROKEN = EXAMPLES / "broken"


def broken(name: str) -> Cluster:
    return Cluster.from_paths([str(BROKEN / name)])


def layers(trace) -> list[str]:
    return [h.layer for h in trace.hops]


@pytest.fixture(autouse=True)
def _every_trace_serialises(monkeypatch):
    """Whatever a test traces must print as JSON (what -o json and the API return)."""
    original = Cluster.trace

    def checked(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        json.dumps(result.to_dict())
        return result

    monkeypatch.setattr(Cluster, "trace", checked)


def test_connected_through_dns_service_dataplane_policy_listener_app(shop: Cluster) -> None:
    t = shop.trace("shop/deploy/web", "http://api:8080/orders")
    assert t.outcome == "connected"
    assert layers(t) == list(LAYERS)
    assert all(h.verdict == "ok" for h in t.hops)
    assert t.backend is not None and t.backend.pod.startswith("shop/api-") and t.backend.port == 8080
    assert t.reply is not None and t.reply.status == 200 and t.backend.pod in t.reply.body
    data = t.to_dict()
    assert set(data) >= {"from", "target", "outcome", "backend", "hops", "findings"}
    assert data["backend"] == {"pod": t.backend.pod, "ip": t.backend.ip, "port": 8080}


def test_policy_drop_is_a_timeout_naming_the_policies(shop: Cluster) -> None:
    t = shop.trace("shop/deploy/web", "db-0.db:5432")
    assert t.outcome == "timeout"
    failing = t.failing_hop
    assert failing is not None and failing.layer == "policy"
    assert "egress of shop/web-" in failing.detail and "shop/default-deny" in failing.detail
    assert [f.code for f in t.findings] == ["PolicyDrop"]


def test_no_endpoints_is_refused_and_names_the_typo() -> None:
    t = broken("selector-typo").trace("default/client", "http://web/")
    assert t.outcome == "refused"
    assert t.failing_hop is not None and t.failing_hop.layer == "endpoints"
    (finding,) = [f for f in t.findings if f.code == "NoEndpoints"]
    assert '"app":"web"' in finding.fix


def test_not_listening_is_refused_at_the_listener() -> None:
    t = broken("wrong-targetport").trace("default/client", "web:80")
    assert t.outcome == "refused"
    assert t.failing_hop is not None and t.failing_hop.layer == "listener"
    assert "listens on 80/TCP" in t.failing_hop.detail


def test_dns_blocked_by_policy_is_dns_timeout_not_nxdomain() -> None:
    t = broken("dns-egress-blocked").trace("default/client", "http://web/")
    assert t.outcome == "dns-timeout"
    assert t.failing_hop is not None and t.failing_hop.layer == "dns"
    assert [f.code for f in t.findings] == ["DNSEgressBlocked"]
    # By address the same connection works: only DNS is blocked.
    web_ip = t.to_dict()["hops"][0]["queries"][0]["nameserver"]
    assert web_ip == "10.96.0.10"
    cluster = broken("dns-egress-blocked")
    svc_ip = cluster.state.services["default/web"].cluster_ip
    assert cluster.trace("default/client", f"{svc_ip}:80").outcome == "connected"


def test_short_name_from_another_namespace_is_nxdomain_with_the_fix() -> None:
    cluster = broken("wrong-namespace")
    t = cluster.trace("frontend/deploy/web", "http://api:8080/")
    assert t.outcome == "nxdomain"
    (finding,) = t.findings
    assert finding.code == "ShortNameOtherNamespace" and "api.backend" in finding.fix
    assert cluster.trace("frontend/deploy/web", "http://api.backend:8080/").outcome == "connected"
    assert cluster.trace("frontend/deploy/web", "http://api.backend.svc.cluster.local:8080/").outcome == "connected"


def test_external_name_and_cluster_ip_from_outside_are_no_route(shop: Cluster) -> None:
    assert shop.trace("shop/deploy/api", "payments:443").outcome == "no-route"
    api_ip = shop.state.services["shop/api"].cluster_ip
    t = shop.trace("external", f"{api_ip}:8080")
    assert t.outcome == "no-route" and "exist only inside the cluster" in t.failing_hop.detail


def test_port_the_service_does_not_expose(shop: Cluster) -> None:
    t = shop.trace("shop/deploy/web", "api:9999")
    assert t.outcome in ("timeout", "refused")
    assert [f.code for f in t.findings] == ["PortNotExposed"]


def test_ingress_path_from_outside(shop: Cluster) -> None:
    t = shop.trace("external", "http://shop.example.com/api/orders")
    assert t.outcome == "connected"
    assert t.backend is not None and t.backend.pod.startswith("shop/api-")
    policy = next(h for h in t.hops if h.layer == "policy")
    assert "ingress-nginx/ingress-nginx-controller" in policy.data["policy"]["from"]
    front = shop.trace("external", "http://shop.example.com/")
    assert front.backend is not None and front.backend.pod.startswith("shop/web-")
    missing = shop.trace("external", "http://shop.example.com.evil/")
    assert missing.reply is not None and missing.reply.status == 404


def test_ingress_blocked_by_policy_is_a_gateway_timeout() -> None:
    manifests = (EXAMPLES / "shop").glob("*.yaml")
    text = "\n---\n".join(p.read_text() for p in sorted(manifests))
    text = text.replace("name: allow-from-ingress", "name: allow-from-ingress-disabled\n  labels: {off: 'yes'}")
    text = text.replace("kubernetes.io/metadata.name: ingress-nginx", "kubernetes.io/metadata.name: nobody")
    cluster = Cluster.from_yaml(text)
    t = cluster.trace("external", "http://shop.example.com/")
    assert t.outcome == "timeout"
    assert t.reply is not None and t.reply.status == 504


def test_node_port_and_load_balancer_from_outside(shop: Cluster) -> None:
    for node_ip in ("172.18.0.3", "172.18.0.4"):
        t = shop.trace("external", f"{node_ip}:30080")
        assert t.outcome == "connected", t.to_dict()
        assert t.backend is not None and t.backend.pod.startswith("shop/web-")
    lb = shop.trace("external", "http://172.18.255.200/")
    assert lb.outcome == "connected"


def test_headless_returns_pod_ips_and_goes_pod_to_pod(shop: Cluster) -> None:
    t = shop.trace("shop/deploy/api", "db:5432")
    assert t.outcome == "connected"
    assert [h.verdict for h in t.hops if h.layer in ("service", "dataplane")] == ["skip", "skip"]


def test_not_ready_pods_get_no_traffic() -> None:
    cluster = cluster_from("""
        apiVersion: v1
        kind: Pod
        metadata: {name: web, labels: {app: web}, annotations: {knetsim.io/ready: "false"}}
        spec: {containers: [{name: nginx, image: nginx}]}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: web}
        spec: {selector: {app: web}, ports: [{port: 80}]}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: client}
        spec: {containers: [{name: c, image: busybox:1.36}]}
    """)
    t = cluster.trace("default/client", "web:80")
    assert t.outcome == "refused"
    assert "none is ready" in t.failing_hop.detail


def test_bad_source_and_target_are_input_errors(shop: Cluster) -> None:
    with pytest.raises(TraceInputError):
        shop.trace("shop/nope", "web:80")
    with pytest.raises(TraceInputError):
        shop.trace("shop/deploy/web", "web:99999")
    with pytest.raises(TraceInputError):
        shop.trace("shop/deploy/web", "ftp://web/")


@pytest.mark.parametrize("plane", ["iptables", "nftables", "ebpf"])
def test_every_data_plane_gives_the_same_outcomes(shop: Cluster, plane: str) -> None:
    cases = [("shop/deploy/web", "http://api:8080/", "connected"),
             ("shop/deploy/web", "db-0.db:5432", "timeout"),
             ("external", "172.18.0.3:30080", "connected")]
    for source, target, outcome in cases:
        assert shop.trace(source, target, dataplane=plane).outcome == outcome, (plane, source, target)


def test_node_port_with_default_deny_works_only_via_the_backends_own_node() -> None:
    """Masqueraded NodePort traffic comes from the node IP; policy always admits the pod's own node."""
    text = "\n---\n".join(p.read_text() for p in sorted((EXAMPLES / "shop").glob("*.yaml")))
    text = text.replace("name: web-from-outside", "name: web-from-outside\n  labels: {disabled: 'true'}")
    text = text.replace("cidr: 0.0.0.0/0", "cidr: 192.0.2.0/24").replace("- 10.244.0.0/16", "- 192.0.2.0/25")
    cluster = Cluster.from_yaml(text)
    outcomes = {ip: cluster.trace("external", f"{ip}:30080") for ip in ("172.18.0.3", "172.18.0.4")}
    kinds = {t.outcome for t in outcomes.values()}
    assert kinds == {"connected", "timeout"} or any(
        f.code == "Intermittent" for t in outcomes.values() for f in t.findings)
    assert any(f.code == "Intermittent" for t in outcomes.values() for f in t.findings)


ONE_BACKEND = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: nginx:1.27, ports: [{containerPort: 80}]}]}
---
"""


def lb(name: str, extra: str = "") -> str:
    return f"""
apiVersion: v1
kind: Service
metadata: {{name: {name}}}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector: {{app: web}}
  ports: [{{port: 80}}]
  {extra}
---"""


def test_local_load_balancers_are_announced_by_a_node_with_an_endpoint() -> None:
    """MetalLB/cloud-provider-kind announce a Local LB only from nodes with a ready endpoint."""
    cluster = cluster_from(ONE_BACKEND + "".join(lb(f"lb{i}") for i in range(1, 7)))
    for i in range(1, 7):
        ip = cluster.state.services[f"default/lb{i}"].load_balancer_ips[0]
        assert cluster.trace("external", f"http://{ip}/").outcome == "connected", i


def test_internal_traffic_policy_local_without_a_local_endpoint_drops_with_a_finding() -> None:
    text = ONE_BACKEND + """
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, internalTrafficPolicy: Local, ports: [{port: 80}]}
---
apiVersion: v1
kind: Pod
metadata: {name: far}
spec: {nodeName: control-plane, tolerations: [{operator: Exists}], containers: [{name: c, image: busybox:1.36}]}
"""
    cluster = cluster_from(text)
    t = cluster.trace("default/far", "web:80")
    assert t.outcome == "timeout"
    assert t.failing_hop is not None and t.failing_hop.layer == "dataplane" and "DROP" in t.failing_hop.detail
    assert [f.code for f in t.findings] == ["NoLocalEndpoints"]


def test_masquerading_does_not_hide_the_senders_egress_policy() -> None:
    text = ONE_BACKEND + """
apiVersion: v1
kind: Service
metadata: {name: web-np}
spec: {type: NodePort, selector: {app: web}, ports: [{port: 80, nodePort: 30080}]}
---
apiVersion: v1
kind: Pod
metadata: {name: client, labels: {role: client}}
spec: {containers: [{name: c, image: busybox:1.36}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client-dns-only}
spec:
  podSelector: {matchLabels: {role: client}}
  policyTypes: [Egress]
  egress: [{ports: [{protocol: UDP, port: 53}]}]
"""
    cluster = cluster_from(text)
    client = cluster.state.pods["default/client"]
    other = next(n for n in cluster.state.nodes.values() if n.name not in (client.node_name, "control-plane"))
    t = cluster.trace("default/client", f"{other.internal_ip}:30080")
    assert t.outcome == "timeout"
    assert t.failing_hop is not None and t.failing_hop.detail.startswith("egress of default/client")


def test_selectorless_service_to_an_outside_endpoint_leaves_the_cluster() -> None:
    cluster = cluster_from("""
        apiVersion: v1
        kind: Service
        metadata: {name: legacy-db}
        spec: {ports: [{port: 5432}]}
        ---
        apiVersion: discovery.k8s.io/v1
        kind: EndpointSlice
        metadata: {name: legacy-db-1, labels: {kubernetes.io/service-name: legacy-db}}
        addressType: IPv4
        ports: [{port: 5432}]
        endpoints: [{addresses: [192.168.50.7]}]
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: app}
        spec: {containers: [{name: c, image: busybox:1.36}]}
    """)
    t = cluster.trace("default/app", "legacy-db:5432")
    assert t.outcome == "no-route"
    by_layer = {h.layer: h.verdict for h in t.hops}
    assert by_layer["endpoints"] == "ok" and by_layer["dataplane"] == "ok"
    assert "192.168.50.7:5432" in t.failing_hop.detail


def test_localhost_is_the_pod_itself_over_loopback(shop: Cluster) -> None:
    """Containers of a pod share its network namespace: localhost reaches the pod's own listeners, from
    /etc/hosts (no DNS query), with no Service, kube-proxy or NetworkPolicy on the way (shop is default-deny)."""
    t = shop.trace("shop/deploy/web", "http://localhost/")
    assert t.outcome == "connected" and t.reply is not None and t.reply.status == 200
    assert layers(t) == ["dns", "service", "dataplane", "policy", "listener", "app"]
    assert t.hops[0].detail.startswith("localhost → 127.0.0.1 from the pod's /etc/hosts")
    refused = shop.trace("shop/deploy/web", "127.0.0.1:9999")
    assert refused.outcome == "refused" and refused.hops[-1].layer == "listener"
    own_name = shop.state.pods[t.source].name
    by_name = shop.trace("shop/deploy/web", f"http://{own_name}/")
    assert by_name.hops[0].detail.startswith(f"{own_name} → {shop.state.pods[t.source].pod_ip} from the pod's "
                                             "/etc/hosts")
