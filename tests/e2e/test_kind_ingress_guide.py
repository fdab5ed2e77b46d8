"""kind's Ingress guide, typed as the guide says, against `knetsim up` with the real kubectl and curl.

Given kind's usage.yaml (agnhost netexec behind two Services, one Ingress without class using
`/foo(/|$)(.*)` and `rewrite-target: /$2`): with `pathType: Prefix`, as the guide long had it,
ingress-nginx's admission webhook refuses the Ingress (strict-validate-path-type, v1.12+); with
`ImplementationSpecific` it is served without a class (kind's controller watches classless
Ingresses), shows ADDRESS localhost, and `curl localhost/foo/hostname` answers `foo-app`.
"""

from __future__ import annotations

import pytest

from .conftest import CURL, KUBECTL, Cluster, wait_for

pytestmark = pytest.mark.skipif(KUBECTL is None or CURL is None, reason="kubectl and curl are needed")

AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.39"


def usage(path_type: str) -> str:
    apps = "".join(f"""
kind: Pod
apiVersion: v1
metadata:
  name: {app}-app
  labels:
    app: {app}
spec:
  containers:
  - command: [/agnhost, netexec, --http-port, "8080"]
    image: {AGNHOST}
    name: {app}-app
---
kind: Service
apiVersion: v1
metadata:
  name: {app}-service
spec:
  selector:
    app: {app}
  ports:
  - port: 8080
---""" for app in ("foo", "bar"))
    paths = "".join(f"""
      - pathType: {path_type}
        path: /{app}(/|$)(.*)
        backend:
          service:
            name: {app}-service
            port:
              number: 8080""" for app in ("foo", "bar"))
    return apps + f"""
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: example-ingress
  annotations:
    nginx.ingress.kubernetes.io/rewrite-target: /$2
spec:
  rules:
  - http:
      paths:{paths}
"""


def test_the_guides_prefix_paths_are_refused_and_implementation_specific_ones_answer(k: Cluster) -> None:
    out = k.kubectl("apply", "-f", "-", input=usage("Prefix"), check=False)
    assert out.returncode == 1
    assert ('Error from server (BadRequest): error when creating "STDIN": admission webhook '
            '"validate.nginx.ingress.kubernetes.io" denied the request: ingress contains invalid paths: '
            "path /foo(/|$)(.*) cannot be used with pathType Prefix\n"
            "path /bar(/|$)(.*) cannot be used with pathType Prefix\n") in out.stderr
    assert k.kubectl("get", "ingress", "-o", "name").stdout == ""

    k.kubectl("apply", "-f", "-", input=usage("ImplementationSpecific"))
    k.kubectl("wait", "--for=condition=Ready", "pod/foo-app", "pod/bar-app", "--timeout=30s")
    address = wait_for(lambda: k.kubectl("get", "ingress", "example-ingress", "-o",
                                         "jsonpath={.status.loadBalancer.ingress[0].hostname}").stdout)
    assert address == "localhost"
    assert k.sh(f"curl -s {k.ingress}/foo/hostname").stdout == "foo-app"
    assert k.sh(f"curl -s {k.ingress}/bar/hostname").stdout == "bar-app"
    assert k.sh(f"curl -s '{k.ingress}/bar/echo?msg=hey'").stdout == "hey"
