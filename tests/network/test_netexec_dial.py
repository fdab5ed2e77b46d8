"""agnhost netexec's /dial and UDP server: how Kubernetes' network e2e tests check reachability.

Restated from test/e2e/common/network/networking.go ("Granular Checks: Pods should function for intra-pod
communication: http / udp") and test/e2e/network/networking.go ("should function for pod-Service: http / udp"):
a test-container pod's netexec is asked `/dial?request=hostname&protocol=P&host=H&port=N&tries=T` and answers
which pods it reached. Each try is a traced connection from the test container's pod, so policy, Services and the
data plane decide it as they decide any other.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from tests.helpers import exec_in_pod

from knetsim import Cluster

APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: netserver, namespace: nettest}
spec:
  replicas: 2
  selector: {matchLabels: {selector: netserver}}
  template:
    metadata: {labels: {selector: netserver}}
    spec:
      containers:
      - name: webserver
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: [netexec, --http-port=8083, --udp-port=8081]
        ports: [{name: http, containerPort: 8083}, {name: udp, containerPort: 8081, protocol: UDP}]
---
apiVersion: v1
kind: Service
metadata: {name: node-port-service, namespace: nettest}
spec:
  selector: {selector: netserver}
  ports:
  - {name: http, port: 80, targetPort: 8083}
  - {name: udp, port: 90, targetPort: 8081, protocol: UDP}
---
apiVersion: v1
kind: Pod
metadata: {name: test-container-pod, namespace: nettest}
spec:
  containers:
  - name: webserver
    image: registry.k8s.io/e2e-test-images/agnhost:2.53
    args: [netexec, --http-port=8083, --udp-port=8081]
"""
DENY_UDP = """
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: http-only, namespace: nettest}
spec:
  podSelector: {matchLabels: {selector: netserver}}
  ingress: [{ports: [{port: 8083}]}]
"""


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster.from_yaml(APP)


def _dial(cluster: Cluster, query: str) -> tuple[int, dict | str]:
    tester = cluster.state.pods["nettest/test-container-pod"].pod_ip
    t = cluster.trace("nettest/test-container-pod", f"http://{tester}:8083/dial?{query}")
    assert t.outcome == "connected" and t.reply is not None
    try:
        return t.reply.status, json.loads(t.reply.body)
    except ValueError:
        return t.reply.status, t.reply.body


def _netservers(cluster: Cluster) -> set[str]:
    return {p.name for p in cluster.state.pods.values() if p.name.startswith("netserver-")}


@pytest.mark.parametrize(("protocol", "port"), [("http", 8083), ("udp", 8081)])
def test_intra_pod_communication(cluster: Cluster, protocol: str, port: int) -> None:
    for pod in sorted((p for p in cluster.state.pods.values() if p.name.startswith("netserver-")),
                      key=lambda p: p.name):
        status, body = _dial(cluster, f"request=hostname&protocol={protocol}&host={pod.pod_ip}&port={port}&tries=1")
        assert (status, body) == (200, {"responses": [pod.name]})


@pytest.mark.parametrize(("protocol", "port"), [("http", 80), ("udp", 90)])
def test_pod_to_service(cluster: Cluster, protocol: str, port: int) -> None:
    ip = cluster.state.services["nettest/node-port-service"].cluster_ip
    status, body = _dial(cluster, f"request=hostname&protocol={protocol}&host={ip}&port={port}&tries=3")
    assert status == 200 and isinstance(body, dict)
    assert len(body["responses"]) == 3 and set(body["responses"]) <= _netservers(cluster)


def test_udp_echo_and_clientip(cluster: Cluster) -> None:
    ip = cluster.state.services["nettest/node-port-service"].cluster_ip
    assert _dial(cluster, f"request={quote('echo hello')}&protocol=udp&host={ip}&port=90") == \
        (200, {"responses": ["hello"]})
    tester = cluster.state.pods["nettest/test-container-pod"].pod_ip
    _, body = _dial(cluster, f"request=clientip&protocol=udp&host={ip}&port=90")
    assert isinstance(body, dict) and body["responses"][0].startswith(f"{tester}:")


def test_a_policy_that_drops_udp_shows_in_the_errors() -> None:
    cluster = Cluster.from_yaml(APP + DENY_UDP)
    ip = cluster.state.services["nettest/node-port-service"].cluster_ip
    assert _dial(cluster, f"request=hostname&protocol=http&host={ip}&port=80")[1]["responses"]
    status, body = _dial(cluster, f"request=hostname&protocol=udp&host={ip}&port=90&tries=2")
    assert status == 200 and body == {"errors": [f"reading from udp connection failed. err:'read udp {ip}:90: "
                                                 "i/o timeout'"] * 2}


@pytest.mark.parametrize(("query", "status", "text"), [
    ("protocol=http&host=10.0.0.1&port=80", 400, "request parameter not specified. <nil>\n"),
    ("request=hostname&protocol=sctpx&host=10.0.0.1&port=80", 400, "unsupported protocol. sctpx\n"),
    ("request=hostname&host=10.0.0.1&port=80&tries=x", 400,
     'tries parameter is invalid. strconv.Atoi: parsing "x": invalid syntax\n'),
])
def test_bad_parameters_are_400s_in_netexecs_words(cluster: Cluster, query: str, status: int, text: str) -> None:
    assert _dial(cluster, query) == (status, text)


def test_a_refused_port_is_an_error(cluster: Cluster) -> None:
    pod = next(p for p in cluster.state.pods.values() if p.name.startswith("netserver-"))
    _, body = _dial(cluster, f"request=hostname&protocol=http&host={pod.pod_ip}&port=9999")
    assert body == {"errors": [f'Get "http://{pod.pod_ip}:9999/hostname": dial tcp {pod.pod_ip}:9999: connect: '
                               "connection refused"]}


def test_nc_prints_what_the_udp_server_answers(cluster: Cluster) -> None:
    # The e2e jig's `echo hostName | nc -w 1 -u HOST PORT` reads the answering pod's name.
    code, out = run_in(cluster, "nettest/test-container-pod", "echo hostName | nc -w 1 -u node-port-service 90")
    assert code == 0
    assert out in _netservers(cluster)


def run_in(cluster: Cluster, pod_key: str, script: str) -> tuple[int, str]:
    """(exit code, stdout and stderr together) of ``sh -c SCRIPT`` in the pod's first container, as an exec runs it."""
    from knetsim.container.podfs import PodFS
    from knetsim.kubelet.podconfig import pod_env, pod_files

    state, pod = cluster.state, cluster.state.pods[pod_key]
    code, out, err = exec_in_pod(state, pod, ["sh", "-c", script], env=pod_env(state, pod, pod.containers[0].name),
                                 fs=PodFS(lambda: pod_files(state, pod)))
    return code, out + err


# --- SCTP: netexec's --sctp-port, /dial?protocol=sctp and /agnhost connect --protocol=sctp ---------------------
# [Feature:SCTPConnectivity] (test/e2e/network/networking.go "should function for pod-Service: sctp",
# test/e2e/network/netpol's SCTP cases): netexec serves the UDP commands on an SCTP association too.
SCTP_APP = """
apiVersion: v1
kind: Pod
metadata: {name: sctp-server, namespace: nettest, labels: {app: sctp}}
spec:
  containers:
  - name: c
    image: registry.k8s.io/e2e-test-images/agnhost:2.53
    args: [netexec, --http-port=8080, --sctp-port=9090]
    ports: [{containerPort: 9090, protocol: SCTP}]
---
apiVersion: v1
kind: Service
metadata: {name: sctp, namespace: nettest}
spec:
  selector: {app: sctp}
  ports: [{port: 5060, targetPort: 9090, protocol: SCTP}]
---
apiVersion: v1
kind: Pod
metadata: {name: test-container-pod, namespace: nettest}
spec:
  containers:
  - name: c
    image: registry.k8s.io/e2e-test-images/agnhost:2.53
    args: [netexec, --http-port=8083]
"""
SCTP_DENY = """
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: tcp-only, namespace: nettest}
spec:
  podSelector: {matchLabels: {app: sctp}}
  ingress: [{ports: [{port: 8080}]}]
"""


def _agnhost(cluster: Cluster, script: str) -> tuple[int, str]:
    return run_in(cluster, "nettest/test-container-pod", script)


def test_sctp_dial_reaches_the_pod_and_the_service() -> None:
    cluster = Cluster.from_yaml(SCTP_APP)
    server = cluster.state.pods["nettest/sctp-server"].pod_ip
    service = cluster.state.services["nettest/sctp"].cluster_ip
    assert _dial(cluster, f"request=hostname&protocol=sctp&host={server}&port=9090") == \
        (200, {"responses": ["sctp-server"]})
    assert _dial(cluster, f"request={quote('echo Hello')}&protocol=sctp&host={service}&port=5060&tries=2") == \
        (200, {"responses": ["hello", "hello"]})
    # Nothing listens on 9091: the association is aborted at once.
    assert _dial(cluster, f"request=hostname&protocol=sctp&host={server}&port=9091") == \
        (200, {"errors": ["sctp dial failed. err:connection refused"]})


def test_sctp_dropped_by_policy_times_out_and_tcp_still_passes() -> None:
    cluster = Cluster.from_yaml(SCTP_APP + SCTP_DENY)
    service = cluster.state.services["nettest/sctp"].cluster_ip
    assert _dial(cluster, f"request=hostname&protocol=sctp&host={service}&port=5060") == \
        (200, {"errors": ["sctp dial failed. err:connection timed out"]})
    server = cluster.state.pods["nettest/sctp-server"].pod_ip
    assert _dial(cluster, f"request=hostname&protocol=http&host={server}&port=8080")[1] == \
        {"responses": ["sctp-server"]}


def test_agnhost_connect_over_sctp() -> None:
    cluster = Cluster.from_yaml(SCTP_APP)
    assert _agnhost(cluster, "/agnhost connect sctp.nettest:5060 --protocol=sctp --timeout=2s") == (0, "")
    server = cluster.state.pods["nettest/sctp-server"].pod_ip
    assert _agnhost(cluster, f"/agnhost connect {server}:9091 --protocol=sctp --timeout=2s") == \
        (1, "OTHER: connection refused\n")
    # connect.go starts its timer before dialling: with no --timeout it has fired at once.
    assert _agnhost(cluster, "/agnhost connect sctp.nettest:5060 --protocol=sctp") == (1, "TIMEOUT\n")
    denied = Cluster.from_yaml(SCTP_APP + SCTP_DENY)
    assert _agnhost(denied, "/agnhost connect sctp.nettest:5060 --protocol=sctp --timeout=1s") == (1, "TIMEOUT\n")
