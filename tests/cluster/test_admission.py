"""Admission-time behaviour: IngressClass defaulting, warnings, kinds kept but not simulated."""

from __future__ import annotations

from tests.conftest import cluster_from

INGRESS = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop}
spec:
  rules:
  - http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]
---"""


def klass(name: str, default: bool, created: str | None = None) -> str:
    annotations = '{ingressclass.kubernetes.io/is-default-class: "true"}' if default else "{}"
    stamp = f", creationTimestamp: '{created}'" if created else ""
    return f"""
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {{name: {name}, annotations: {annotations}{stamp}}}
spec: {{controller: example.com/{name}}}
---"""


def test_default_class_fills_a_missing_ingress_class_name() -> None:
    cluster = cluster_from(INGRESS + klass("traefik", True))
    assert cluster.state.ingresses["default/shop"].class_name == "traefik"


def test_no_default_class_leaves_it_empty() -> None:
    cluster = cluster_from(INGRESS)
    assert cluster.state.ingresses["default/shop"].class_name is None


def test_two_defaults_pick_the_newest_as_a_v135_api_server_does() -> None:
    classes = klass("old", True, "2026-01-01T00:00:00Z") + klass("new", True, "2026-06-01T00:00:00Z")
    cluster = cluster_from(INGRESS + classes)
    assert cluster.state.ingresses["default/shop"].class_name == "new"
    (warning,) = [n for n in cluster.notices if n.code == "MultipleDefaultIngressClasses"]
    assert "picks the newest, 'new'" in warning.message


def test_deprecated_class_annotation_is_read_with_a_warning() -> None:
    text = INGRESS.replace("metadata: {name: shop}",
                           "metadata: {name: shop, annotations: {kubernetes.io/ingress.class: nginx}}")
    cluster = cluster_from(text + klass("traefik", True))
    ing = cluster.state.ingresses["default/shop"]
    assert ing.class_name is None and ing.class_annotation == "nginx"
    assert [n.code for n in cluster.notices] == ["IngressClassAnnotation"]


def test_endpoints_warn_deprecation_and_other_kinds_are_kept() -> None:
    cluster = cluster_from("""
        apiVersion: v1
        kind: Endpoints
        metadata: {name: legacy}
        subsets: [{addresses: [{ip: 10.0.0.1}], ports: [{port: 80}]}]
        ---
        apiVersion: v1
        kind: ServiceAccount
        metadata: {name: settings}
    """)
    messages = [str(n) for n in cluster.notices]
    assert any("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice" in m for m in messages)
    # A ServiceAccount is read (a pod runs as one; a pod whose account is missing is refused), so not "not simulated".
    assert not any("kind ServiceAccount kept but not simulated" in m for m in messages)
    accounts = {o.key for o in cluster.state.objects_of("ServiceAccount")}
    # Beside the input's, every namespace's `default`, as the service account controller makes it.
    assert {"default/settings", "default/default", "kube-system/default"} <= accounts


def test_missing_namespace_is_assumed_with_a_warning() -> None:
    cluster = cluster_from("""
        apiVersion: v1
        kind: Service
        metadata: {name: web, namespace: prod}
        spec: {ports: [{port: 80}]}
    """)
    assert "prod" in cluster.state.namespaces
    assert any('namespaces "prod" not found' in n.message for n in cluster.notices)


def test_ingress_nginx_publishes_localhost_for_what_it_serves() -> None:
    served = cluster_from(INGRESS.replace("spec:\n", "spec:\n  ingressClassName: nginx\n", 1))
    assert served.state.ingresses["default/shop"].raw["status"] == {
        "loadBalancer": {"ingress": [{"hostname": "localhost"}]}}
    # kind runs it with --watch-ingress-without-class=true: an Ingress of no class is its too (as live).
    classless = cluster_from(INGRESS)
    assert classless.state.ingresses["default/shop"].raw["status"] == served.state.ingresses["default/shop"].raw[
        "status"]
    unclaimed = cluster_from(INGRESS.replace("spec:\n", "spec:\n  ingressClassName: other\n", 1))
    assert "status" not in unclaimed.state.ingresses["default/shop"].raw
