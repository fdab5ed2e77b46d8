"""The EndpointSlice controller, as k8s.io/endpointslice reconciles."""

from __future__ import annotations

from tests.conftest import cluster_from

from knetsim.cluster.endpointslices import reconcile


def pod(name: str, labels: str, ports: str = "[{containerPort: 80}]", extra: str = "", image: str = "nginx") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, labels: {labels}{extra}}}
spec: {{containers: [{{name: c, image: {image}, ports: {ports}}}]}}
---"""


SVC = """
apiVersion: v1
kind: Service
metadata: {name: web, labels: {team: shop}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
"""


def slices(cluster, name="web", ns="default"):
    return cluster.state.slices_for(cluster.state.services[f"{ns}/{name}"])


def test_named_target_port_resolving_differently_splits_slices() -> None:
    cluster = cluster_from(
        pod("a", "{app: web}", "[{name: http, containerPort: 80}]")
        + pod("b", "{app: web}", "[{name: http, containerPort: 8080}]")
        + pod("c", "{app: web}", "[{name: other, containerPort: 9000}]")
        + SVC)
    got = sorted((tuple((p.name, p.port) for p in s.ports), tuple(a for e in s.endpoints for a in e.addresses))
                 for s in slices(cluster))
    state = cluster.state
    ip = {n: state.pods[f"default/{n}"].pod_ip for n in "abc"}
    # Pod c lacks the named port: it is an endpoint with no ports, in its own slice.
    assert got == sorted([((("http", 80),), (ip["a"],)), ((("http", 8080),), (ip["b"],)), ((), (ip["c"],))])


def test_labels_and_owner() -> None:
    cluster = cluster_from(pod("a", "{app: web}", "[{name: http, containerPort: 80}]") + SVC)
    (es,) = slices(cluster)
    assert es.name.startswith("web-") and len(es.name) == len("web-") + 5
    assert dict(es.labels) == {"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                               "kubernetes.io/service-name": "web", "team": "shop"}
    assert es.raw["metadata"]["ownerReferences"][0]["kind"] == "Service"


def test_selector_typo_leaves_one_empty_placeholder_slice() -> None:
    cluster = cluster_from(pod("a", "{app: web}") + SVC.replace("app: web", "app: wbe"))
    (es,) = slices(cluster)
    assert es.endpoints == () and es.ports == ()
    assert es.raw["endpoints"] is None


def test_not_ready_and_publish_not_ready() -> None:
    not_ready = ', annotations: {knetsim.io/ready: "false"}'
    cluster = cluster_from(pod("a", "{app: web}", "[{name: http, containerPort: 80}]", not_ready) + SVC)
    (es,) = slices(cluster)
    (ep,) = es.endpoints
    assert (ep.ready, ep.serving, ep.terminating) == (False, False, False)
    published = cluster_from(pod("a", "{app: web}", "[{name: http, containerPort: 80}]", not_ready)
                             + SVC.replace("spec:\n", "spec:\n  publishNotReadyAddresses: true\n"))
    (es,) = slices(published)
    assert es.endpoints[0].ready is True


def test_terminating_pod_is_kept_not_ready_but_serving() -> None:
    cluster = cluster_from(pod("a", "{app: web}", "[{name: http, containerPort: 80}]",
                               ", deletionTimestamp: '2026-01-01T00:00:00Z'") + SVC)
    (es,) = slices(cluster)
    (ep,) = es.endpoints
    assert (ep.ready, ep.serving, ep.terminating) == (False, True, True)


def test_at_most_100_endpoints_per_slice() -> None:
    text = "".join(pod(f"p{i:03d}", "{app: web}", "[{name: http, containerPort: 80}]") for i in range(205)) + SVC
    cluster = cluster_from(text)
    sizes = sorted(len(s.endpoints) for s in slices(cluster))
    assert sizes == [5, 100, 100]


def test_no_selector_means_no_managed_slices_and_user_slices_are_used() -> None:
    cluster = cluster_from("""
        apiVersion: v1
        kind: Service
        metadata: {name: external-db}
        spec: {ports: [{port: 5432}]}
        ---
        apiVersion: discovery.k8s.io/v1
        kind: EndpointSlice
        metadata:
          name: external-db-1
          labels: {kubernetes.io/service-name: external-db}
        addressType: IPv4
        ports: [{port: 5432}]
        endpoints: [{addresses: [192.168.10.5]}]
    """)
    (es,) = slices(cluster, "external-db")
    assert es.name == "external-db-1"
    assert es.endpoints[0].addresses == ("192.168.10.5",)


def test_statefulset_hostname_goes_to_headless_slice() -> None:
    cluster = cluster_from("""
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: db}
        spec:
          serviceName: db
          replicas: 2
          selector: {matchLabels: {app: db}}
          template:
            metadata: {labels: {app: db}}
            spec: {containers: [{name: pg, image: postgres:17, ports: [{containerPort: 5432}]}]}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: db}
        spec: {clusterIP: None, selector: {app: db}, ports: [{port: 5432}]}
    """)
    (es,) = slices(cluster, "db")
    assert sorted(e.hostname for e in es.endpoints) == ["db-0", "db-1"]
    assert es.labels["service.kubernetes.io/headless"] == ""


def test_reconcile_is_pure_and_reuses_existing_slice_names() -> None:
    cluster = cluster_from(pod("a", "{app: web}", "[{name: http, containerPort: 80}]") + SVC)
    state = cluster.state
    svc = state.services["default/web"]
    existing = state.slices_for(svc)
    before = [s.raw for s in existing]
    plan = reconcile(svc, state.pods_in("default"), existing, state.nodes)
    assert [s.raw for s in existing] == before
    assert plan.create == () and plan.delete == ()
    assert plan.unchanged == (existing[0].name,)


def test_named_target_port_of_a_sidecar_resolves() -> None:
    """podutil.FindPort searches restartable init containers (sidecars) too."""
    cluster = cluster_from("""
        apiVersion: v1
        kind: Pod
        metadata: {name: a, labels: {app: web}}
        spec:
          initContainers:
          - name: proxy
            image: envoyproxy/envoy:v1.31
            restartPolicy: Always
            ports: [{name: http, containerPort: 15001}]
          containers: [{name: app, image: ghcr.io/example/app:1}]
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: web}
        spec: {selector: {app: web}, ports: [{name: http, port: 80, targetPort: http}]}
    """)
    (es,) = slices(cluster)
    assert [(p.name, p.port) for p in es.ports] == [("http", 15001)]
