"""kube-apiserver's proxy subresources, as `kubectl get --raw` and `kubectl proxy` reach them.

Kubernetes' network e2e tests read agnhost's answers through
`/api/v1/namespaces/NS/services/NAME:PORT/proxy/PATH` (test/e2e/network/service.go, proxy.go); the docs' "Access
services running on clusters" page does the same through `kubectl proxy`. The API server picks a ready endpoint of
the Service port and dials it itself; errors are its Status words.
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request

import pytest

from .conftest import KUBECTL, Live, wait_for

APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: netexec, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: netexec}}
  template:
    metadata: {labels: {app: netexec}}
    spec:
      containers:
      - name: agnhost
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: [netexec, --http-port=8080]
        ports: [{containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: netexec, namespace: default}
spec:
  selector: {app: netexec}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: empty, namespace: default}
spec:
  selector: {app: nothing}
  ports: [{port: 80}]
"""


@pytest.fixture(scope="module")
def app(live: Live) -> Live:
    live.kubectl("apply", "-f", "-", input=APP)
    live.kubectl("rollout", "status", "deployment/netexec", "--timeout=60s")
    return live


def _pods(live: Live) -> list[str]:
    out = live.kubectl("get", "pods", "-l", "app=netexec", "-o", "jsonpath={.items[*].metadata.name}").stdout
    return out.split()


@pytest.mark.parametrize("spec", ["netexec:80", "netexec:http", "http:netexec:80"])
def test_a_service_proxy_reaches_one_of_its_pods(app: Live, spec: str) -> None:
    out = app.kubectl("get", "--raw", f"/api/v1/namespaces/default/services/{spec}/proxy/hostname").stdout
    assert out in _pods(app)


def test_the_path_and_query_pass_through(app: Live) -> None:
    out = app.kubectl("get", "--raw", "/api/v1/namespaces/default/services/netexec:80/proxy/echo?msg=hello").stdout
    assert out == "hello"


def test_a_pod_proxy_reaches_that_pod(app: Live) -> None:
    pod = _pods(app)[0]
    assert app.kubectl("get", "--raw", f"/api/v1/namespaces/default/pods/{pod}:8080/proxy/hostname").stdout == pod
    # Without a port: the first container's first declared port.
    assert app.kubectl("get", "--raw", f"/api/v1/namespaces/default/pods/{pod}/proxy/hostname").stdout == pod


@pytest.mark.parametrize(("path", "error"), [
    ("services/netexec:81/proxy/", 'Error from server (ServiceUnavailable): no service port 81 found for service '
                                   '"netexec"'),
    ("services/empty:80/proxy/", 'Error from server (ServiceUnavailable): no endpoints available for service '
                                 '"empty:80"'),
    ("services/nope/proxy/", 'Error from server (NotFound): services "nope" not found'),
    # No port given means the port named "": netexec's only port is named http.
    ("services/netexec/proxy/", 'Error from server (ServiceUnavailable): no endpoints available for service '
                                '"netexec"'),
    ("services/a:b:c:d/proxy/", 'Error from server (BadRequest): invalid service request "a:b:c:d"'),
])
def test_errors_in_the_api_servers_words(app: Live, path: str, error: str) -> None:
    proc = app.kubectl("get", "--raw", f"/api/v1/namespaces/default/{path}", check=False)
    assert proc.returncode == 1 and proc.stderr.strip() == error


def test_a_port_nothing_listens_on_is_a_dial_error(app: Live) -> None:
    pod = _pods(app)[0]
    proc = app.kubectl("get", "--raw", f"/api/v1/namespaces/default/pods/{pod}:9999/proxy/", check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error from server (ServiceUnavailable): error trying to reach service: dial tcp ")
    assert proc.stderr.strip().endswith(":9999: connect: connection refused")


def test_kubectl_proxy_serves_the_same(app: Live) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    proc = subprocess.Popen([KUBECTL, "proxy", f"--port={port}"], env=app.env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/api/v1/namespaces/default/services/netexec:http/proxy/hostname"

        def fetch() -> str:
            try:
                with urllib.request.urlopen(url, timeout=10) as resp:
                    return resp.read().decode()
            except OSError:
                time.sleep(0.2)
                return ""
        assert wait_for(fetch, timeout=20) in _pods(app)
    finally:
        proc.terminate()
        proc.wait(10)
