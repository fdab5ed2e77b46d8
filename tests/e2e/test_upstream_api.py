"""Kubernetes' own network API conformance tests, restated for the real kubectl against `knetsim up`.

Each test is one [Conformance] test of kubernetes/kubernetes ``test/e2e/network/`` (endpointslice.go, ingress.go,
ingressclass.go; named in its docstring): the same objects and the same API operations, through kubectl's verbs
where upstream calls the typed client (create, get, list, patch, replace, the status subresource, delete and
deletecollection). docs/e2e.md lists them.
"""

from __future__ import annotations

import json

from .conftest import Cluster, wait_for


def _apply(k: Cluster, *objects: dict) -> None:
    k.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))


def test_endpointslice_should_have_endpoints_and_endpointslices_pointing_to_api_server(k: Cluster) -> None:
    """EndpointSlice should have Endpoints and EndpointSlices pointing to API Server [Conformance]: the kubernetes
    Service's Endpoints and its EndpointSlice (named kubernetes too) hold the API server's address and port."""
    endpoints = k.get_json("endpoints", "kubernetes")
    subset = endpoints["subsets"][0]
    addresses = [a["ip"] for a in subset["addresses"]]
    port = subset["ports"][0]["port"]
    slice_ = k.get_json("endpointslice", "kubernetes")
    assert slice_["addressType"] == "IPv4"
    assert [a for e in slice_["endpoints"] for a in e["addresses"]] == addresses
    assert [p["port"] for p in slice_["ports"]] == [port]
    # The address is the control-plane node's (the API server runs in its host network).
    node_ips = [a["address"] for n in k.get_json("nodes")["items"] if "node-role.kubernetes.io/control-plane"
                in n["metadata"].get("labels", {}) for a in n["status"]["addresses"] if a["type"] == "InternalIP"]
    assert addresses == node_ips[:1]


def test_endpointslice_should_create_and_delete_endpoints_and_endpointslices_for_a_service_with_a_selector(
        k: Cluster) -> None:
    """EndpointSlice should create and delete Endpoints and EndpointSlices for a Service with a selector specified
    [Conformance]: a Service with a selector gets an Endpoints object and a labelled EndpointSlice, and both go
    when the Service does."""
    _apply(k, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "example-empty-selector"},
               "spec": {"selector": {"does-not-match-anything": "endpoints-and-endpoint-slices"},
                        "ports": [{"name": "example", "port": 80, "protocol": "TCP"}]}})
    selector = "kubernetes.io/service-name=example-empty-selector"
    assert wait_for(lambda: len(k.get_json("endpointslices", "-l", selector)["items"]) == 1, 10)
    assert wait_for(lambda: k.kubectl("get", "endpoints", "example-empty-selector", check=False).returncode == 0, 10)
    k.kubectl("delete", "service", "example-empty-selector")
    assert wait_for(lambda: not k.get_json("endpointslices", "-l", selector)["items"], 10)
    assert wait_for(lambda: k.kubectl("get", "endpoints", "example-empty-selector", check=False).returncode == 1, 10)


def _ingress(name: str) -> dict:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "labels": {"special-label": "e2e-ingress-api"}},
            "spec": {"defaultBackend": {"service": {"name": "default-backend", "port": {"number": 8080}}},
                     "rules": [{"host": "foo.bar.com", "http": {"paths": [
                         {"path": "/", "pathType": "Prefix",
                          "backend": {"service": {"name": "test-backend", "port": {"number": 8080}}}}]}}]}}


def test_ingress_api_should_support_creating_ingress_api_operations(k: Cluster) -> None:
    """Ingress API should support creating Ingress API operations [Conformance]: create three, get, list by label
    in the namespace and in all, patch, replace, patch and replace the status, delete one, delete the collection."""
    for name in ("ingress1", "ingress2", "ingress3"):
        k.kubectl("create", "-f", "-", input=json.dumps(_ingress(name)))
    label = "special-label=e2e-ingress-api"
    assert k.get_json("ingress", "ingress1")["spec"]["rules"][0]["host"] == "foo.bar.com"
    assert len(k.get_json("ingresses", "-l", label)["items"]) == 3
    assert len(k.get_json("ingresses", "-A", "-l", label)["items"]) == 3
    k.kubectl("patch", "ingress", "ingress1", "--type=merge", "-p",
              '{"metadata": {"annotations": {"patched": "true"}}}')
    assert k.get_json("ingress", "ingress1")["metadata"]["annotations"]["patched"] == "true"
    body = k.get_json("ingress", "ingress1")
    body["metadata"]["annotations"]["updated"] = "true"
    k.kubectl("replace", "-f", "-", input=json.dumps(body))
    assert k.get_json("ingress", "ingress1")["metadata"]["annotations"]["updated"] == "true"
    status = {"status": {"loadBalancer": {"ingress": [{"ip": "169.1.1.1"}]}}}
    k.kubectl("patch", "ingress", "ingress1", "--subresource=status", "--type=merge", "-p", json.dumps(status))
    assert k.get_json("ingress", "ingress1")["status"]["loadBalancer"]["ingress"] == [{"ip": "169.1.1.1"}]
    k.kubectl("delete", "ingress", "ingress1")
    assert k.kubectl("get", "ingress", "ingress1", check=False).returncode == 1
    assert len(k.get_json("ingresses", "-l", label)["items"]) == 2
    k.kubectl("delete", "ingresses", "-l", label)
    assert k.get_json("ingresses", "-l", label)["items"] == []


def test_ingressclass_api_should_support_creating_ingressclass_api_operations(k: Cluster) -> None:
    """IngressClass API should support creating IngressClass API operations [Conformance]: create three
    (cluster-scoped), get, list by label, patch, replace, delete one, delete the collection."""
    label = "special-label=e2e-ingressclass-api"
    for name in ("e2e-ingressclass-1", "e2e-ingressclass-2", "e2e-ingressclass-3"):
        k.kubectl("create", "-f", "-", input=json.dumps({
            "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
            "metadata": {"name": name, "labels": {"special-label": "e2e-ingressclass-api"}},
            "spec": {"controller": "example.com/e2e-ingress-controller"}}))
    try:
        assert k.get_json("ingressclass", "e2e-ingressclass-1")["spec"]["controller"] == \
            "example.com/e2e-ingress-controller"
        assert len(k.get_json("ingressclasses", "-l", label)["items"]) == 3
        k.kubectl("patch", "ingressclass", "e2e-ingressclass-1", "--type=merge", "-p",
                  '{"metadata": {"annotations": {"patched": "true"}}}')
        body = k.get_json("ingressclass", "e2e-ingressclass-1")
        assert body["metadata"]["annotations"]["patched"] == "true"
        body["metadata"]["annotations"]["updated"] = "true"
        k.kubectl("replace", "-f", "-", input=json.dumps(body))
        assert k.get_json("ingressclass", "e2e-ingressclass-1")["metadata"]["annotations"]["updated"] == "true"
        # The controller is immutable once set, as upstream's validation says.
        body = k.get_json("ingressclass", "e2e-ingressclass-1")
        body["spec"]["controller"] = "example.com/another"
        refused = k.kubectl("replace", "-f", "-", input=json.dumps(body), check=False)
        assert refused.returncode == 1 and "spec.controller: Invalid value" in refused.stderr, refused.stderr
        k.kubectl("delete", "ingressclass", "e2e-ingressclass-1")
        assert len(k.get_json("ingressclasses", "-l", label)["items"]) == 2
    finally:
        k.kubectl("delete", "ingressclasses", "-l", label, check=False)
    assert k.get_json("ingressclasses", "-l", label)["items"] == []


def test_services_should_provide_secure_master_service(k: Cluster) -> None:
    """Services should provide secure master service [Conformance]: the default namespace has the kubernetes
    Service, port 443 named https."""
    service = k.get_json("service", "kubernetes")
    assert [(p["name"], p["port"], p["protocol"]) for p in service["spec"]["ports"]] == [("https", 443, "TCP")]


def test_services_should_delete_a_collection_of_services(k: Cluster) -> None:
    """Services should delete a collection of services [Conformance]: three labelled Services, one deletecollection
    by the label, none left."""
    for n in (1, 2, 3):
        k.kubectl("create", "service", "clusterip", f"e2e-svc-{n}", "--tcp=8080:8080")
        k.kubectl("label", "service", f"e2e-svc-{n}", "e2e-test-service=delete")
    assert len(k.get_json("services", "-l", "e2e-test-service=delete")["items"]) == 3
    k.kubectl("delete", "services", "-l", "e2e-test-service=delete")
    assert k.get_json("services", "-l", "e2e-test-service=delete")["items"] == []


def test_services_should_test_the_lifecycle_of_an_endpoint(k: Cluster) -> None:
    """Services should test the lifecycle of an Endpoint [Conformance]: an Endpoints object made by hand is created,
    listed by label in all namespaces, updated, patched, and deleted by a deletecollection."""
    label = "test-endpoint-static=true"
    k.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "testservice", "labels": {"test-endpoint-static": "true"}},
        "subsets": [{"addresses": [{"ip": "10.0.0.24"}], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}]}))
    assert [e["metadata"]["name"] for e in k.get_json("endpoints", "-A", "-l", label)["items"]] == ["testservice"]
    body = k.get_json("endpoints", "testservice")
    body["metadata"]["labels"]["test-service"] = "updated"
    k.kubectl("replace", "-f", "-", input=json.dumps(body))
    k.kubectl("patch", "endpoints", "testservice", "--type=merge", "-p", json.dumps(
        {"subsets": [{"addresses": [{"ip": "10.0.0.25"}], "ports": [{"name": "http-test", "port": 8080}]}]}))
    patched = k.get_json("endpoints", "testservice")
    assert patched["metadata"]["labels"]["test-service"] == "updated"
    assert patched["subsets"][0]["addresses"] == [{"ip": "10.0.0.25"}]
    assert patched["subsets"][0]["ports"] == [{"name": "http-test", "port": 8080, "protocol": "TCP"}]
    k.kubectl("delete", "endpoints", "-l", label)
    assert k.get_json("endpoints", "-A", "-l", label)["items"] == []


def test_endpointslice_should_support_creating_endpointslice_api_operations(k: Cluster) -> None:
    """EndpointSlice should support creating EndpointSlice API operations [Conformance]: three hand-made slices
    (managed by no controller) are created, got, listed by label here and in all namespaces, patched, replaced,
    deleted one by one and by a deletecollection."""
    label = "special-label=e2e-endpointslice-api"
    for n in (1, 2, 3):
        k.kubectl("create", "-f", "-", input=json.dumps({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": f"e2e-example-ing-{n}", "labels": {"special-label": "e2e-endpointslice-api"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["1.2.3.4", "5.6.7.8"]}],
            "ports": [{"name": "example", "port": 9090, "protocol": "TCP"}]}))
    assert k.get_json("endpointslice", "e2e-example-ing-1")["endpoints"][0]["addresses"] == ["1.2.3.4", "5.6.7.8"]
    assert len(k.get_json("endpointslices", "-l", label)["items"]) == 3
    assert len(k.get_json("endpointslices", "-A", "-l", label)["items"]) == 3
    k.kubectl("patch", "endpointslice", "e2e-example-ing-1", "--type=merge", "-p",
              '{"metadata": {"annotations": {"patched": "true"}}}')
    body = k.get_json("endpointslice", "e2e-example-ing-1")
    assert body["metadata"]["annotations"]["patched"] == "true"
    body["metadata"]["annotations"]["updated"] = "true"
    k.kubectl("replace", "-f", "-", input=json.dumps(body))
    assert k.get_json("endpointslice", "e2e-example-ing-1")["metadata"]["annotations"]["updated"] == "true"
    # No controller owns them: nothing rewrites or removes them behind the test's back.
    assert k.get_json("endpointslice", "e2e-example-ing-2")["endpoints"][0]["addresses"] == ["1.2.3.4", "5.6.7.8"]
    k.kubectl("delete", "endpointslice", "e2e-example-ing-1")
    assert len(k.get_json("endpointslices", "-l", label)["items"]) == 2
    k.kubectl("delete", "endpointslices", "-l", label)
    assert k.get_json("endpointslices", "-l", label)["items"] == []
