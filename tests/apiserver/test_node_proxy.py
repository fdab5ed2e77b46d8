"""kube-apiserver's node proxy, as `kubectl get --raw /api/v1/nodes/NAME/proxy/...` reaches it.

Kubernetes' e2e framework reads the kubelet through it (`/pods`, `/healthz`, `/configz`: test/e2e/framework/kubelet,
test/e2e/network/kube_proxy.go) and kube-proxy's health check through `nodes/NAME:10256/proxy/healthz`. The
formats are the kubelet's and kube-proxy's own (src/knetsim/daemon/nodeproxy.py cites each source).
"""

from __future__ import annotations

import json
import re

import pytest

from .conftest import Live

# Go's time.Time.String() of time.Now(): wall clock, zone, monotonic reading.
GO_TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,9})? \+0000 UTC m=\+\d+\.\d{9}$")


@pytest.fixture(scope="module")
def nodes(live: Live) -> list[str]:
    return live.kubectl("get", "nodes", "-o", "jsonpath={.items[*].metadata.name}").stdout.split()


def raw(live: Live, path: str) -> str:
    return live.kubectl("get", "--raw", path).stdout


def test_the_kubelets_healthz_says_ok(live: Live, nodes: list[str]) -> None:
    for node in nodes:
        assert raw(live, f"/api/v1/nodes/{node}/proxy/healthz") == "ok"
    # The kubelet's port named explicitly reaches the same server.
    assert raw(live, f"/api/v1/nodes/{nodes[-1]}:10250/proxy/healthz") == "ok"


def test_the_kubelets_pods_are_the_pods_bound_to_its_node(live: Live, nodes: list[str]) -> None:
    worker = nodes[-1]
    live.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pinned", "namespace": "default"},
        "spec": {"nodeName": worker, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}))
    try:
        listed = json.loads(raw(live, f"/api/v1/nodes/{worker}/proxy/pods"))
        assert (listed["kind"], listed["apiVersion"]) == ("PodList", "v1")
        names = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in listed["items"]}
        assert ("default", "pinned") in names
        assert {p["spec"]["nodeName"] for p in listed["items"]} == {worker}
        elsewhere = json.loads(raw(live, f"/api/v1/nodes/{nodes[0]}/proxy/pods"))
        assert ("default", "pinned") not in {(p["metadata"]["namespace"], p["metadata"]["name"])
                                             for p in elsewhere["items"]}
    finally:
        live.kubectl("delete", "pod", "pinned", "--wait=false")


def test_the_kubelets_configz(live: Live, nodes: list[str]) -> None:
    config = json.loads(raw(live, f"/api/v1/nodes/{nodes[0]}/proxy/configz"))["kubeletconfig"]
    assert config["clusterDomain"] == "cluster.local"
    assert config["clusterDNS"] == ["10.96.0.10"]
    assert config["maxPods"] == 110
    assert config["staticPodPath"] == "/etc/kubernetes/manifests"


def test_the_kubelets_metrics_are_not_simulated_and_say_so(live: Live, nodes: list[str]) -> None:
    proc = live.kubectl("get", "--raw", f"/api/v1/nodes/{nodes[0]}/proxy/metrics", check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("Error from server (ServiceUnavailable): knetsim does not simulate the kubelet's "
                                   "/metrics endpoint")
    status, body = live.request("GET", f"/api/v1/nodes/{nodes[0]}/proxy/no-such-endpoint")
    assert (status, body) == (404, "404 page not found")


def test_the_kubelets_logs_are_the_nodes_pod_log_files(live: Live, nodes: list[str]) -> None:
    """"Proxy version v1 should proxy logs on node using proxy subresource" (test/e2e/network/proxy.go) reads
    `nodes/NAME/proxy/logs/`: the node's /var/log as Go's file server lists it, down to a container's CRI log."""
    worker = nodes[-1]
    live.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "talker", "namespace": "default"},
        "spec": {"nodeName": worker, "containers": [{"name": "say", "image": "busybox:1.36",
                                                     "command": ["sh", "-c", "echo hello from talker; sleep 3600"]}]}}))
    try:
        live.kubectl("wait", "--for=condition=Ready", "pod/talker", "--timeout=30s")
        uid = live.kubectl("get", "pod", "talker", "-o", "jsonpath={.metadata.uid}").stdout
        top = raw(live, f"/api/v1/nodes/{worker}/proxy/logs/")
        assert top == ('<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n'
                       '<a href="containers/">containers/</a>\n<a href="pods/">pods/</a>\n</pre>\n')
        pod_dir = f"default_talker_{uid}"
        assert f'<a href="{pod_dir}/">{pod_dir}/</a>' in raw(live, f"/api/v1/nodes/{worker}/proxy/logs/pods/")
        assert pod_dir not in raw(live, f"/api/v1/nodes/{nodes[0]}/proxy/logs/pods/")
        log = raw(live, f"/api/v1/nodes/{worker}/proxy/logs/pods/{pod_dir}/say/0.log")
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z stdout F hello from talker\n", log), log
        links = re.findall(r'href="(talker_default_say-[0-9a-f]{64}\.log)"',
                           raw(live, f"/api/v1/nodes/{worker}/proxy/logs/containers/"))
        assert len(links) == 1
        assert raw(live, f"/api/v1/nodes/{worker}/proxy/logs/containers/{links[0]}") == log
        status, body = live.request("GET", f"/api/v1/nodes/{worker}/proxy/logs/pods/{pod_dir}/say/7.log")
        assert (status, body) == (404, "404 page not found")
    finally:
        live.kubectl("delete", "pod", "talker", "--wait=false")


def test_kube_proxys_healthz(live: Live, nodes: list[str]) -> None:
    for node in nodes:
        health = json.loads(raw(live, f"/api/v1/nodes/{node}:10256/proxy/healthz"))
        assert list(health) == ["lastUpdated", "currentTime", "nodeEligible"]
        assert health["nodeEligible"] is True
        assert GO_TIME.match(health["currentTime"]), health
        # Healthy: lastUpdated is "now", as kube-proxy reports it.
        assert health["lastUpdated"] == health["currentTime"]
    livez = json.loads(raw(live, f"/api/v1/nodes/{nodes[0]}:10256/proxy/livez"))
    assert list(livez) == ["lastUpdated", "currentTime"]


def test_kube_proxys_healthz_fails_on_a_node_about_to_be_removed(live: Live, nodes: list[str]) -> None:
    worker = nodes[-1]
    live.kubectl("taint", "node", worker, "ToBeDeletedByClusterAutoscaler=1:NoSchedule")
    try:
        status, body = live.request("GET", f"/api/v1/nodes/{worker}:10256/proxy/healthz")
        assert status == 503 and body["nodeEligible"] is False
    finally:
        live.kubectl("taint", "node", worker, "ToBeDeletedByClusterAutoscaler-")
    assert json.loads(raw(live, f"/api/v1/nodes/{worker}:10256/proxy/healthz"))["nodeEligible"] is True


def test_an_unknown_node_is_not_found(live: Live) -> None:
    proc = live.kubectl("get", "--raw", "/api/v1/nodes/nope/proxy/healthz", check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip() == 'Error from server (NotFound): nodes "nope" not found'


def test_another_port_of_a_node_is_dialled(live: Live, nodes: list[str]) -> None:
    proc = live.kubectl("get", "--raw", f"/api/v1/nodes/{nodes[0]}:9999/proxy/", check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error from server (ServiceUnavailable): error trying to reach service: dial tcp ")
