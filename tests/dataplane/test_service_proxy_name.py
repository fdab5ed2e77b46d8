"""A Service labelled service.kubernetes.io/service-proxy-name is another proxy's: no data plane programs it.

Restated from Kubernetes' e2e test "should implement service.kubernetes.io/service-proxy-name"
(test/e2e/network/service.go): of two Services over the same pods, the labelled one does not answer, the other
does; once the label is removed the first answers too. kube-proxy's Service informer selects
`!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless`; Cilium's replacement does the same
while its own service-proxy-name is unset.
"""

from __future__ import annotations

import pytest
import yaml

from knetsim import Cluster

APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27, ports: [{containerPort: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: service-proxy-toggled, namespace: default, labels: {%s}}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata:
  name: service-proxy-disabled
  namespace: default
  labels: {service.kubernetes.io/service-proxy-name: foo-bar}
spec:
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
@pytest.mark.parametrize("toggled_label", ["service.kubernetes.io/service-proxy-name: foo-bar", ""])
def test_only_the_unlabelled_service_is_proxied(dataplane: str, toggled_label: str) -> None:
    cluster = Cluster.from_yaml(APP % toggled_label)
    disabled = cluster.trace("default/client", "http://service-proxy-disabled/", dataplane=dataplane)
    assert disabled.outcome == "timeout"
    hop = next(h for h in disabled.hops if h.layer == "dataplane")
    assert "service.kubernetes.io/service-proxy-name='foo-bar'" in hop.detail
    toggled = cluster.trace("default/client", "http://service-proxy-toggled/", dataplane=dataplane)
    assert toggled.outcome == ("timeout" if toggled_label else "connected")
    # Nothing of the labelled Service's in what the node's proxy would program.
    rendered = yaml.safe_dump(cluster.render(dataplane).to_dict())
    assert "service-proxy-disabled" not in rendered
    assert ("service-proxy-toggled" in rendered) is not bool(toggled_label)


def test_dns_still_answers_for_a_service_no_proxy_programs() -> None:
    # CoreDNS does not look at the label: the name resolves to the ClusterIP, which then leads nowhere.
    cluster = Cluster.from_yaml(APP % "")
    trace = cluster.trace("default/client", "http://service-proxy-disabled/")
    assert next(h for h in trace.hops if h.layer == "dns").verdict == "ok"
