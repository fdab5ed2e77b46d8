"""A selector-less Service's own Endpoints are mirrored into EndpointSlices, which every consumer reads.

Restated from Kubernetes' e2e test "EndpointSliceMirroring should mirror a custom Endpoints resource through
create update and delete [Conformance]" (test/e2e/network/endpointslicemirroring.go): a Service without a
selector and an Endpoints of its name (10.1.2.3:8000) get one slice managed by
endpointslicemirroring-controller.k8s.io with that address and port; updating the Endpoints (10.2.3.4) updates
the slice; deleting the Endpoints deletes it. Offline through the Python API, live through kubectl.
"""

from __future__ import annotations

import json

from tests.live import Live, wait_for

from knetsim import Cluster

SERVICE = """
apiVersion: v1
kind: Service
metadata: {name: example-custom-endpoints, namespace: default}
spec:
  ports: [{name: example, port: 80, targetPort: 8000}]
"""
ENDPOINTS = """
apiVersion: v1
kind: Endpoints
metadata: {name: example-custom-endpoints, namespace: default, labels: {team: edge}}
subsets:
- addresses: [{ip: %s}]
  ports: [{name: example, port: 8000}]
"""
MIRRORING = "endpointslicemirroring-controller.k8s.io"


def _mirrored(slices: list[dict]) -> list[dict]:
    return [s for s in slices if s["metadata"]["labels"].get("endpointslice.kubernetes.io/managed-by") == MIRRORING]


def test_offline_the_custom_endpoints_become_one_slice_the_data_plane_uses() -> None:
    cluster = Cluster.from_yaml(SERVICE + "---" + ENDPOINTS % "10.1.2.3")
    slices = [es.raw for es in cluster.state.endpoint_slices.values()
              if es.service_name == "example-custom-endpoints"]
    [mirrored] = _mirrored(slices)
    assert mirrored["addressType"] == "IPv4"
    assert mirrored["endpoints"] == [{"addresses": ["10.1.2.3"], "conditions": {"ready": True}}]
    assert mirrored["ports"] == [{"name": "example", "port": 8000, "protocol": "TCP"}]
    assert mirrored["metadata"]["labels"]["team"] == "edge"  # the Endpoints' labels are carried over
    assert mirrored["metadata"]["ownerReferences"][0]["kind"] == "Endpoints"
    rendered = json.dumps(cluster.render("iptables").to_dict())
    assert "10.1.2.3:8000" in rendered


def test_offline_skip_mirror_and_a_selector_stop_the_mirroring() -> None:
    skipped = ENDPOINTS.replace("{team: edge}", "{endpointslice.kubernetes.io/skip-mirror: 'true'}") % "10.1.2.3"
    selected = SERVICE.replace("spec:\n", "spec:\n  selector: {app: x}\n")
    for docs in (SERVICE + "---" + skipped, selected + "---" + ENDPOINTS % "10.1.2.3"):
        cluster = Cluster.from_yaml(docs)
        assert not _mirrored([es.raw for es in cluster.state.endpoint_slices.values()])


def _live_mirrored(live: Live) -> list[dict]:
    out = live.kubectl("get", "endpointslices", "-l", f"endpointslice.kubernetes.io/managed-by={MIRRORING}",
                       "-o", "json")
    return json.loads(out.stdout)["items"]


def test_live_create_update_delete(live: Live) -> None:
    live.kubectl("apply", "-f", "-", input=SERVICE + "---" + ENDPOINTS % "10.1.2.3")
    created = wait_for(lambda: _live_mirrored(live))
    assert [e["addresses"] for e in created[0]["endpoints"]] == [["10.1.2.3"]]
    assert created[0]["ports"][0]["port"] == 8000
    assert created[0]["metadata"]["labels"]["kubernetes.io/service-name"] == "example-custom-endpoints"
    live.kubectl("apply", "-f", "-", input=ENDPOINTS % "10.2.3.4")
    updated = wait_for(lambda: [s for s in _live_mirrored(live)
                                if s["endpoints"][0]["addresses"] == ["10.2.3.4"]])
    assert updated and updated[0]["metadata"]["name"] == created[0]["metadata"]["name"]
    live.kubectl("delete", "endpoints", "example-custom-endpoints")
    assert wait_for(lambda: not _live_mirrored(live))


def test_live_the_api_servers_own_endpoints_are_not_mirrored(live: Live) -> None:
    # kube-apiserver labels default/kubernetes skip-mirror and writes its slice itself: mirroring it as well
    # would feed the endpoints controller its own copy, round after round.
    labels = json.loads(live.kubectl("get", "endpoints", "kubernetes", "-o", "json").stdout)["metadata"]["labels"]
    assert labels["endpointslice.kubernetes.io/skip-mirror"] == "true"
    names = [s["metadata"]["name"] for s in json.loads(live.kubectl(
        "get", "endpointslices", "-l", "kubernetes.io/service-name=kubernetes", "-o", "json").stdout)["items"]]
    assert names == ["kubernetes"]
