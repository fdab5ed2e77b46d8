"""Host ports, offline: the scheduler's NodePorts filter as the core places pods, and the CNI's portmap forwarding
a node address to the pod that publishes it (a trace through the Python API). The live cluster's side is
tests/e2e/test_upstream_network.py (HostPort and SchedulerPredicates, restated from Kubernetes' e2e tests)."""

from __future__ import annotations

from knetsim import Cluster
from knetsim.cluster.hostports import conflicts

WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: [netexec, --http-port=8080]
        ports: [{containerPort: 8080, hostPort: 54323}]
---
apiVersion: v1
kind: Pod
metadata: {name: node-shell}
spec:
  nodeName: worker
  hostNetwork: true
  containers: [{name: c, image: busybox:1.36, command: [sleep, infinity]}]
"""


def spec(*ports: dict[str, object]) -> dict[str, object]:
    return {"containers": [{"name": "c", "ports": list(ports)}]}


def test_an_unset_host_ip_takes_the_port_on_every_address_of_the_node() -> None:
    held = {("0.0.0.0", "TCP", 80)}
    assert conflicts(spec({"containerPort": 8080, "hostPort": 80, "hostIP": "172.18.0.3"}), held)
    assert not conflicts(spec({"containerPort": 8080, "hostPort": 80, "protocol": "UDP"}), held)
    assert not conflicts(spec({"containerPort": 8080, "hostPort": 81}), held)
    # Two specific addresses share a port; the same one does not.
    specific = {("127.0.0.1", "TCP", 80)}
    assert not conflicts(spec({"containerPort": 8080, "hostPort": 80, "hostIP": "172.18.0.3"}), specific)
    assert conflicts(spec({"containerPort": 8080, "hostPort": 80, "hostIP": "127.0.0.1"}), specific)
    assert conflicts(spec({"containerPort": 8080, "hostPort": 80}), specific)
    # A container port without a hostPort publishes nothing.
    assert not conflicts(spec({"containerPort": 80}), held)


def test_a_third_replica_wanting_the_same_host_port_stays_pending_on_two_workers() -> None:
    cluster = Cluster.from_yaml(WEB)
    pods = sorted((p for p in cluster.state.pods.values() if p.name.startswith("web-")),
                  key=lambda p: p.node_name or "~")
    assert [p.node_name for p in pods] == ["worker", "worker2", ""]
    assert pods[2].unschedulable() == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "2 node(s) didn't have free ports for the requested pod ports. preemption: 0/3 nodes are available: "
        "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.")


def test_a_node_address_reaches_the_pod_that_publishes_the_host_port() -> None:
    cluster = Cluster.from_yaml(WEB)
    pod = next(p for p in cluster.state.pods.values() if p.node_name == "worker" and p.name.startswith("web-"))
    for target in ("http://172.18.0.3:54323/hostname", "http://127.0.0.1:54323/hostname"):
        t = cluster.trace("default/node-shell", target)
        assert t.outcome == "connected", (target, t.hops)
        assert t.backend is not None and t.backend.pod == pod.key and t.backend.port == 8080
        assert t.reply is not None and t.reply.body == pod.name
        assert any(h.layer == "dataplane" and h.detail.startswith("portmap on worker: DNAT") for h in t.hops)
    # Another node's pod publishes the port there, not here; a port nobody publishes is refused.
    other = cluster.trace("default/node-shell", "http://172.18.0.4:54323/hostname")
    assert other.outcome == "connected" and other.backend is not None and other.backend.pod != pod.key
    assert cluster.trace("default/node-shell", "http://172.18.0.3:54324/").outcome == "refused"
