"""A snapshot from a real cluster (`kubectl get ... -A -o yaml`) loads as it is."""

from __future__ import annotations

from tests.conftest import ROOT, cluster_from

from knetsim import Cluster

SNAPSHOT = str(ROOT / "tests" / "data" / "snapshot-list.yaml")


def test_snapshot_keeps_the_clusters_own_ips_nodes_and_slice_names() -> None:
    cluster = Cluster.from_paths([SNAPSHOT])
    state = cluster.state
    pods = {p.name: p for p in state.pods_in("default")}
    assert {n: (p.pod_ip, p.node_name) for n, p in pods.items()} == {
        "web-5d8b6f4c7-x2x9p": ("10.244.1.7", "kind-worker"),
        "web-5d8b6f4c7-q7k2m": ("10.244.2.9", "kind-worker2"),
    }
    # No Node objects: the nodes come from the pods' nodeName and hostIP.
    assert {n.name: n.internal_ip for n in state.nodes.values()} == {
        "kind-control-plane": "172.19.0.2", "kind-worker": "172.19.0.3", "kind-worker2": "172.19.0.4"}
    # kube-system came with the snapshot: no phantom CoreDNS pods are added.
    assert [p.name for p in state.pods_in("kube-system")] == ["coredns-668d6bf9bc-abcde"]
    web = state.services["default/web"]
    assert web.cluster_ip == "10.96.211.7"
    (es,) = state.slices_for(web)
    assert es.name == "web-abcde"  # the controller updates the existing slice in place
    assert sorted(a for e in es.endpoints for a in e.addresses) == ["10.244.1.7", "10.244.2.9"]


def test_snapshot_drift_is_reported() -> None:
    cluster = Cluster.from_paths([SNAPSHOT])
    drift = [str(n) for n in cluster.notices if n.code == "EndpointSliceDrift"]
    assert drift == [f"{SNAPSHOT}, document 1, items[5]: EndpointSlice default/web-abcde: differs from what the "
                     "EndpointSlice controller computes: missing 10.244.2.9"]


def test_a_namespace_missing_from_a_snapshot_exists_there_only_its_labels_are_unknown() -> None:
    """`kubectl get all -n team -o yaml` holds no Namespace: the cluster has it (no 'kubectl apply would
    fail'), but a namespaceSelector cannot see its labels, and the warning says that instead."""
    snapshot = """
        apiVersion: v1
        kind: Pod
        metadata: {name: p, namespace: team, uid: 1f0c, resourceVersion: "7", creationTimestamp: "2026-11-30T10:00:00Z"}
        spec: {containers: [{name: c, image: "nginx:1.27"}], nodeName: worker}
        status: {phase: Running, podIP: 10.244.1.9, hostIP: 172.18.0.3}
    """
    (notice,) = [str(n) for n in cluster_from(snapshot, filename="snap.yaml").notices if n.code == "NamespaceCreated"]
    assert notice == ("snap.yaml, document 1: Pod team/p: namespace 'team' is not in the snapshot; assumed to have "
                      "only the label kubernetes.io/metadata.name (namespaceSelector verdicts need the namespaces in "
                      "the snapshot)")
    handwritten = cluster_from(snapshot.replace('uid: 1f0c, resourceVersion: "7", creationTimestamp: '
                                                '"2026-11-30T10:00:00Z"', ""), filename="app.yaml")
    (notice,) = [str(n) for n in handwritten.notices if n.code == "NamespaceCreated"]
    assert notice.endswith("is not in the input; assumed to exist (kubectl apply would fail with: namespaces "
                           '"team" not found)')
