"""What a /status write stores besides the status, kind by kind, as kube-apiserver's status strategies do.

Restated from Kubernetes' e2e "Services should complete a service status lifecycle [Conformance]"
(test/e2e/network/service.go): a status PATCH that also sets an annotation stores both; the apps kinds keep their
labels through /status; a custom resource's /status takes the status alone.
"""

from __future__ import annotations

import json

from .conftest import Live

SERVICE = """
apiVersion: v1
kind: Service
metadata: {name: status-lifecycle, namespace: default, labels: {test-service-static: "true"}}
spec:
  type: LoadBalancer
  ports: [{port: 80, targetPort: 8080}]
"""


def _get(live: Live, *what: str) -> dict:
    return json.loads(live.kubectl("get", *what, "-o", "json").stdout)


def test_a_service_status_patch_keeps_its_annotation(live: Live) -> None:
    live.kubectl("apply", "-f", "-", input=SERVICE)
    patch = {"metadata": {"annotations": {"patchedstatus": "true"}},
             "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.1"}]}}}
    live.kubectl("patch", "service", "status-lifecycle", "--subresource=status", "--type=merge",
                 "-p", json.dumps(patch))
    svc = _get(live, "service", "status-lifecycle")
    assert svc["metadata"]["annotations"]["patchedstatus"] == "true"
    assert svc["status"]["loadBalancer"]["ingress"] == [{"ip": "203.0.113.1", "ipMode": "VIP"}]  # defaulted
    assert svc["spec"]["type"] == "LoadBalancer"  # the spec is the old one whatever the request says


def test_a_deployment_status_write_keeps_its_labels(live: Live) -> None:
    live.kubectl("create", "deployment", "labelled", "--image=nginx:1.27")
    patch = {"metadata": {"labels": {"app": "changed"}, "annotations": {"seen": "yes"}}}
    live.kubectl("patch", "deployment", "labelled", "--subresource=status", "--type=merge", "-p", json.dumps(patch))
    meta = _get(live, "deployment", "labelled")["metadata"]
    assert meta["labels"] == {"app": "labelled"}
    assert meta["annotations"]["seen"] == "yes"
