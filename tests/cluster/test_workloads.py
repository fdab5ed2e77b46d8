"""Workloads become pods the way their controllers name and place them (kind cluster defaults)."""

from __future__ import annotations

import re

from tests.conftest import cluster_from

DEPLOY = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx:1.27, ports: [{containerPort: 80}]}]
"""


def test_deployment_pods_are_named_rs_hash_and_suffix_and_land_on_workers() -> None:
    cluster = cluster_from(DEPLOY)
    pods = cluster.state.pods_in("default")
    assert len(pods) == 3
    hashes = {p.labels["pod-template-hash"] for p in pods}
    assert len(hashes) == 1
    (h,) = hashes
    for pod in pods:
        assert re.fullmatch(rf"web-{h}-[bcdfghjklmnpqrstvwxz2456789]{{5}}", pod.name)
        assert pod.meta.owner is not None and pod.meta.owner.name == f"web-{h}"
    # The control-plane is tainted: user pods spread over the two workers.
    assert sorted(p.node_name for p in pods) == ["worker", "worker", "worker2"]
    for pod in pods:
        subnet = {"worker": "10.244.1.", "worker2": "10.244.2."}[pod.node_name]
        assert pod.pod_ip.startswith(subnet)
    rs = cluster.state.objects_of("ReplicaSet")
    assert [o.name for o in rs if o.namespace == "default"] == [f"web-{h}"]


def test_statefulset_pods_have_ordinals_hostname_and_subdomain() -> None:
    cluster = cluster_from("""
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: db}
        spec:
          serviceName: db
          replicas: 2
          selector: {matchLabels: {app: db}}
          template:
            metadata: {labels: {app: db}}
            spec: {containers: [{name: pg, image: postgres:17}]}
    """)
    pods = {p.name: p for p in cluster.state.pods_in("default")}
    assert sorted(pods) == ["db-0", "db-1"]
    assert pods["db-1"].hostname == "db-1" and pods["db-1"].subdomain == "db"
    assert pods["db-0"].labels["statefulset.kubernetes.io/pod-name"] == "db-0"


def test_daemonset_runs_only_where_it_tolerates_taints() -> None:
    cluster = cluster_from("""
        apiVersion: apps/v1
        kind: DaemonSet
        metadata: {name: agent}
        spec:
          selector: {matchLabels: {app: agent}}
          template:
            metadata: {labels: {app: agent}}
            spec: {containers: [{name: a, image: busybox:1.36}]}
        ---
        apiVersion: apps/v1
        kind: DaemonSet
        metadata: {name: everywhere}
        spec:
          selector: {matchLabels: {app: everywhere}}
          template:
            metadata: {labels: {app: everywhere}}
            spec:
              tolerations: [{operator: Exists}]
              containers: [{name: a, image: busybox:1.36}]
    """)
    by_app: dict[str, list[str]] = {}
    for pod in cluster.state.pods_in("default"):
        by_app.setdefault(pod.labels["app"], []).append(pod.node_name)
    assert sorted(by_app["agent"]) == ["worker", "worker2"]
    assert sorted(by_app["everywhere"]) == ["control-plane", "worker", "worker2"]


def test_readiness_rules() -> None:
    cluster = cluster_from("""
        apiVersion: v1
        kind: Pod
        metadata: {name: ok, labels: {app: x}}
        spec: {containers: [{name: c, image: nginx, readinessProbe: {httpGet: {port: 80}}}]}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: probe-misses, labels: {app: x}}
        spec: {containers: [{name: c, image: nginx, readinessProbe: {tcpSocket: {port: 8080}}}]}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: annotated, labels: {app: x}, annotations: {knetsim.io/ready: "false"}}
        spec: {containers: [{name: c, image: nginx}]}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: from-snapshot, labels: {app: x}}
        spec: {nodeName: worker, containers: [{name: c, image: nginx}]}
        status:
          phase: Running
          podIP: 10.244.1.77
          conditions:
          - {type: Ready, status: "False", reason: ContainersNotReady, message: "containers with unready status: [c]"}
    """)
    pods = {p.name: p for p in cluster.state.pods_in("default")}
    assert pods["ok"].ready
    assert not pods["probe-misses"].ready
    assert "targets port 8080, where nothing listens" in pods["probe-misses"].not_ready_reason
    assert not pods["annotated"].ready
    assert not pods["from-snapshot"].ready
    assert pods["from-snapshot"].pod_ip == "10.244.1.77"
    # The snapshot's IP is reserved: no simulated pod gets it.
    assert [p.name for p in pods.values() if p.pod_ip == "10.244.1.77"] == ["from-snapshot"]


def test_system_objects_of_a_fresh_cluster() -> None:
    cluster = cluster_from("")
    state = cluster.state
    assert sorted(state.namespaces) == ["default", "ingress-nginx", "kube-node-lease", "kube-public", "kube-system"]
    assert state.namespaces["kube-system"].labels["kubernetes.io/metadata.name"] == "kube-system"
    dns = state.services["kube-system/kube-dns"]
    assert dns.cluster_ip == "10.96.0.10"
    assert [(p.name, p.port, p.protocol) for p in dns.ports] == [
        ("dns", 53, "UDP"), ("dns-tcp", 53, "TCP"), ("metrics", 9153, "TCP")]
    coredns = [p for p in state.pods_in("kube-system") if p.labels.get("k8s-app") == "kube-dns"]
    assert [(p.pod_ip, p.ready) for p in coredns] == [("10.244.0.2", True), ("10.244.0.3", True)]
    (es,) = state.slices_for(dns)
    assert sorted(a for e in es.endpoints for a in e.addresses) == ["10.244.0.2", "10.244.0.3"]
    api = state.services["default/kubernetes"]
    assert api.cluster_ip == "10.96.0.1"
    assert [e.addresses for s in state.slices_for(api) for e in s.endpoints] == [("172.18.0.2",)]


def _snapshot_pod(name: str, ready: str, stamp: str) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: web}}
  creationTimestamp: "{stamp}"
  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: web-rs, uid: u1, controller: true}}]
spec: {{nodeName: worker, containers: [{{name: nginx, image: nginx}}]}}
status:
  phase: Running
  podIP: 10.244.1.{name[-1]}0
  conditions: [{{type: Ready, status: "{ready}"}}]
---"""


RS = """
apiVersion: apps/v1
kind: ReplicaSet
metadata: {{name: web-rs}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: nginx, image: nginx}}]}}
"""


def test_replicaset_scale_down_removes_not_ready_then_youngest_pods() -> None:
    pods = (_snapshot_pod("web-rs-a1", "True", "2026-01-01T00:00:01Z")
            + _snapshot_pod("web-rs-b2", "False", "2026-01-01T00:00:02Z")
            + _snapshot_pod("web-rs-c3", "True", "2026-01-01T00:00:03Z"))
    cluster = cluster_from(pods + RS.format(replicas=1))
    assert [p.name for p in cluster.state.pods_in("default")] == ["web-rs-a1"]


def test_replicaset_scale_up_next_to_survivors_never_reuses_a_name() -> None:
    first = cluster_from(RS.format(replicas=1))
    (survivor,) = first.state.pods_in("default")
    body = dict(survivor.raw)
    body["metadata"] = dict(body["metadata"], creationTimestamp="2026-01-01T00:00:00Z")
    import yaml

    cluster = cluster_from(yaml.safe_dump(body) + "---" + RS.format(replicas=3))
    names = [p.name for p in cluster.state.pods_in("default")]
    assert len(names) == 3 and survivor.name in names


def test_topology_spread_constraints_spread_replicas_over_zones():
    from knetsim.cluster.config import config_from_dict

    config = config_from_dict({"nodes": [
        {"name": "control-plane", "ip": "172.18.0.2", "zone": "zone-a"},
        {"name": "worker", "ip": "172.18.0.3", "zone": "zone-a"},
        {"name": "worker2", "ip": "172.18.0.4", "zone": "zone-a"},
        {"name": "worker3", "ip": "172.18.0.5", "zone": "zone-b"}]})
    text = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone,
        whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}]
      containers: [{name: web, image: nginx:1.27}]
"""
    cluster = cluster_from(text, config=config)
    zones = sorted(cluster.state.nodes[p.node_name].zone for p in cluster.state.pods.values() if p.labels.get("app")
                   == "web")
    # Least-loaded alone would put three of four on zone-a's two workers; the constraint keeps the skew at 1.
    assert zones == ["zone-a", "zone-a", "zone-b", "zone-b"]
    unzoned = cluster_from(text)
    assert [n.code for n in unzoned.state.notices if n.code == "Unschedulable"] == ["Unschedulable"] * 4
