"""publishNotReadyAddresses: a Service's unready and terminating pods are its endpoints, and every data plane
routes to them.

The EndpointSlice controller writes ``ready: true`` for every pod of such a Service, terminating or not
(pkg/controller/endpointslice: ready = publishNotReadyAddresses || podReady; serving = podReady; terminating =
deletionTimestamp set); kube-proxy and Cilium route to ready endpoints. A StatefulSet's headless "peer" Services
rely on it (the pods find each other before they are ready). The same Service without the field sends nowhere.
Restated from test/e2e/network/service.go "should create endpoints for unready pods" (its data plane half).
"""

from __future__ import annotations

import pytest

from knetsim import Cluster

APP = """
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default, labels: {app: web}, deletionTimestamp: "2026-12-06T10:00:00Z"}
spec:
  containers: [{name: c, image: nginx:1.27}]
status:
  phase: Running
  podIP: 10.244.1.9
  conditions: [{type: Ready, status: "False"}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  publishNotReadyAddresses: %s
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: default}
spec:
  containers: [{name: c, image: busybox:1.36, command: [sleep, "3600"]}]
"""


@pytest.mark.parametrize("dataplane", ["iptables", "nftables", "ebpf"])
def test_a_terminating_unready_pod_is_routed_when_the_service_publishes_it(dataplane: str) -> None:
    cluster = Cluster.from_yaml(APP % "true")
    slice_ = next(s for s in cluster.state.endpoint_slices.values()
                  if s.meta.labels.get("kubernetes.io/service-name") == "web")
    (endpoint,) = slice_.endpoints
    assert (endpoint.ready, endpoint.serving, endpoint.terminating) == (True, False, True)
    trace = cluster.trace("default/client", "http://web/", dataplane=dataplane)
    assert trace.outcome == "connected" and trace.backend is not None and trace.backend.pod == "default/web"


@pytest.mark.parametrize("dataplane", ["iptables", "nftables", "ebpf"])
def test_without_the_field_the_same_pod_is_not_routed(dataplane: str) -> None:
    cluster = Cluster.from_yaml(APP % "false")
    trace = cluster.trace("default/client", "http://web/", dataplane=dataplane)
    assert trace.outcome != "connected"
