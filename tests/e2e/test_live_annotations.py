"""ingress-nginx's annotations on the live cluster, with the real kubectl and curl through the entry.

Given `knetsim up`, when Ingresses with annotations are applied with kubectl, then the admission
webhook refuses what ingress-nginx refuses (snippets, invalid values), and curl through the entry
gets what the controller answers: 403 outside a source range (X-Forwarded-For counts only once the
controller's ConfigMap says use-forwarded-headers), 401 with the realm, a CORS preflight's 204, a
canary chosen by header, 413 over proxy-body-size, a permanent redirect.
"""

from __future__ import annotations

import pytest

from .conftest import CURL, KUBECTL, Cluster, wait_for

pytestmark = pytest.mark.skipif(KUBECTL is None or CURL is None, reason="kubectl and curl are needed")

APPS = """
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec: {containers: [{name: web, image: nginx, ports: [{containerPort: 80}]}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-v2, labels: {app: web-v2}}
spec: {containers: [{name: web, image: nginx, ports: [{containerPort: 80}]}]}
---
apiVersion: v1
kind: Service
metadata: {name: web-v2}
spec: {selector: {app: web-v2}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Secret
metadata: {name: basic-auth}
stringData: {auth: "alice:{PLAIN}wonderland"}
"""


def ingress(name: str, host: str, annotations: dict[str, str], service: str = "web") -> str:
    lines = "".join(f"\n    nginx.ingress.kubernetes.io/{k}: {v!r}" for k, v in annotations.items())
    return f"""
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {name}
  annotations:{lines or ' {}'}
spec:
  ingressClassName: nginx
  rules:
  - host: {host}
    http:
      paths:
      - {{path: /, pathType: Prefix, backend: {{service: {{name: {service}, port: {{number: 80}}}}}}}}
"""


def curl(k: Cluster, host: str, *args: str) -> str:
    """Status, then the headers curl prints (-i), as one text."""
    return k.sh(f"curl -s -i -H 'Host: {host}' {' '.join(args)} {k.ingress}/").stdout


def test_the_webhook_refuses_snippets_and_invalid_values(k: Cluster) -> None:
    out = k.kubectl("apply", "-f", "-", input=ingress("snippet", "s.example", {
        "configuration-snippet": 'more_set_headers "X-A: b";'}), check=False)
    assert out.returncode == 1
    assert ('admission webhook "validate.nginx.ingress.kubernetes.io" denied the request: '
            "nginx.ingress.kubernetes.io/configuration-snippet annotation cannot be used. Snippet directives are "
            "disabled by the Ingress administrator") in out.stderr
    bad = k.kubectl("apply", "-f", "-", input=ingress("bad", "b.example", {
        "permanent-redirect": "https://x.example/a%20b"}), check=False)
    assert bad.returncode == 1
    assert "annotation nginx.ingress.kubernetes.io/permanent-redirect contains invalid value" in bad.stderr


def test_annotations_answer_through_the_entry(k: Cluster) -> None:
    k.kubectl("apply", "-f", "-", input=APPS + "---" + ingress("internal", "internal.example", {
        "whitelist-source-range": "10.0.0.0/8"}) + "---" + ingress("staff", "staff.example", {
            "auth-type": "basic", "auth-secret": "basic-auth", "auth-realm": "Staff only"}) + "---" + ingress(
        "api", "api.example", {"enable-cors": "true", "proxy-body-size": "1k"}) + "---" + ingress(
        "old", "old.example", {"permanent-redirect": "https://new.example/"}) + "---" + ingress(
        "shop", "shop.example", {}) + "---" + ingress("shop-canary", "shop.example", {
            "canary": "true", "canary-by-header": "X-Canary"}, service="web-v2"))
    k.kubectl("wait", "--for=condition=Ready", "pod/web", "pod/web-v2", "--timeout=30s")
    wait_for(lambda: "200 OK" in curl(k, "shop.example"))
    assert "403 Forbidden" in curl(k, "internal.example")
    assert "403 Forbidden" in curl(k, "internal.example", "-H 'X-Forwarded-For: 10.1.2.3'")
    k.kubectl("create", "configmap", "ingress-nginx-controller", "-n", "ingress-nginx",
              "--from-literal=use-forwarded-headers=true")
    wait_for(lambda: "200 OK" in curl(k, "internal.example", "-H 'X-Forwarded-For: 10.1.2.3'"))
    denied = curl(k, "staff.example")
    assert "401 Unauthorized" in denied and 'WWW-Authenticate: Basic realm="Staff only"' in denied
    assert "200 OK" in curl(k, "staff.example", "-u alice:wonderland")
    preflight = curl(k, "api.example", "-X OPTIONS", "-H 'Origin: https://app.example'")
    assert "204 No Content" in preflight and "Access-Control-Allow-Origin: *" in preflight
    assert "413 Request Entity Too Large" in curl(k, "api.example", "--data-binary @/etc/services")
    redirect = curl(k, "old.example")
    assert "301 Moved Permanently" in redirect and "Location: https://new.example/" in redirect
    assert "X-Knetsim-Backend: default/web-v2" in curl(k, "shop.example", "-H 'X-Canary: always'")
    assert "X-Knetsim-Backend: default/web " in curl(k, "shop.example", "-H 'X-Canary: never'")
