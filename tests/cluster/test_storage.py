"""Storage offline, as a kind cluster has it (cluster/storage.py, model/storage.py): the default StorageClass,
a claim bound to a volume made on its first consumer's node, the scheduler's words for a pod whose claim is
missing or unbound, a volume's node affinity pinning its pods, and the API server's validation through
`knetsim validate` (exit 2, naming the file, the object and the field)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from tests.cluster.storage_manifests import CLAIM, POD, SHARED_CLAIM_DEPLOYMENT, STATEFULSET

from knetsim import Cluster
from knetsim.cli.main import cli


def _others(cluster: Cluster, kind: str) -> dict[str, dict]:
    return {o.key: o.raw for (k, _), o in cluster.state.others.items() if k == kind}


def _scheduler_says(cluster: Cluster, pod: str) -> str:
    conditions = cluster.state.pods[f"default/{pod}"].raw["status"]["conditions"]
    return next(c["message"] for c in conditions if c["type"] == "PodScheduled")


def test_the_cluster_has_kinds_default_storage_class() -> None:
    classes = _others(Cluster.from_yaml(""), "StorageClass")
    standard = classes["standard"]
    assert standard["provisioner"] == "rancher.io/local-path"
    assert standard["reclaimPolicy"] == "Delete"
    assert standard["volumeBindingMode"] == "WaitForFirstConsumer"
    assert standard["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}


def test_a_claim_alone_waits_for_its_first_consumer() -> None:
    cluster = Cluster.from_yaml(CLAIM.format(name="data", cls=""))
    claim = _others(cluster, "PersistentVolumeClaim")["default/data"]
    assert claim["spec"]["storageClassName"] == "standard"  # DefaultStorageClass
    assert claim["status"]["phase"] == "Pending"
    assert "volumeName" not in claim["spec"]
    assert not _others(cluster, "PersistentVolume")


def test_a_pod_mounting_a_claim_gets_a_volume_on_its_node_and_the_claim_is_bound() -> None:
    cluster = Cluster.from_yaml(CLAIM.format(name="data", cls="") + "---\n" + POD.format(name="db", claim="data",
                                                                                        extra=""))
    pod = cluster.state.pods["default/db"]
    assert pod.node_name and pod.phase == "Running"
    claim = _others(cluster, "PersistentVolumeClaim")["default/data"]
    assert claim["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}
    volume = _others(cluster, "PersistentVolume")[claim["spec"]["volumeName"]]
    uid = cluster.state.others[("PersistentVolumeClaim", "default/data")].meta.uid
    assert volume["metadata"]["name"] == f"pvc-{uid}"
    assert volume["spec"]["claimRef"]["name"] == "data"
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    assert volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [pod.node_name]}]}]


def test_the_replicas_sharing_a_claim_follow_its_volume_to_one_node() -> None:
    cluster = Cluster.from_yaml(CLAIM.format(name="data", cls="") + "---\n" + SHARED_CLAIM_DEPLOYMENT)
    nodes = {p.node_name for p in cluster.state.pods.values() if p.namespace == "default"}
    claim = _others(cluster, "PersistentVolumeClaim")["default/data"]
    assert len(nodes) == 1 and claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] in nodes
    volume = _others(cluster, "PersistentVolume")[claim["spec"]["volumeName"]]
    assert volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == \
        sorted(nodes)




def test_a_statefulset_gets_a_claim_per_pod_from_its_templates() -> None:
    cluster = Cluster.from_yaml(STATEFULSET)
    claims = _others(cluster, "PersistentVolumeClaim")
    assert sorted(claims) == ["default/www-web-0", "default/www-web-1"]
    for ordinal in (0, 1):
        claim = claims[f"default/www-web-{ordinal}"]
        assert claim["metadata"]["labels"] == {"tier": "storage", "app": "web"}
        assert claim["spec"]["storageClassName"] == "standard"
        assert claim["status"]["phase"] == "Bound"
        pod = cluster.state.pods[f"default/web-{ordinal}"]
        assert pod.raw["spec"]["volumes"] == [{"name": "www", "persistentVolumeClaim": {"claimName":
                                                                                         f"www-web-{ordinal}"}}]
        volume = _others(cluster, "PersistentVolume")[claim["spec"]["volumeName"]]
        assert volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0][
            "values"] == [pod.node_name]
    # A claim given beside the set is its own: the controller makes only the missing ones.
    given = CLAIM.format(name="www-web-0", cls="").replace("1Gi", "5Gi")
    claims = _others(Cluster.from_yaml(STATEFULSET + "---\n" + given), "PersistentVolumeClaim")
    assert claims["default/www-web-0"]["spec"]["resources"]["requests"]["storage"] == "5Gi"


def test_a_pod_whose_claim_does_not_exist_stays_pending_with_the_schedulers_words() -> None:
    cluster = Cluster.from_yaml(POD.format(name="db", claim="db-data", extra=""))
    pod = cluster.state.pods["default/db"]
    assert not pod.node_name and pod.phase == "Pending"
    assert _scheduler_says(cluster, "db") == (
        '0/3 nodes are available: persistentvolumeclaim "db-data" not found. preemption: 0/3 nodes are available: '
        "3 Preemption is not helpful for scheduling.")


def test_a_claim_of_a_missing_class_leaves_its_pod_pending_and_is_named_by_the_doctor() -> None:
    cluster = Cluster.from_yaml(CLAIM.format(name="data", cls="storageClassName: fast\n  ") + "---\n" +
                                POD.format(name="db", claim="data", extra=""))
    assert "pod has unbound immediate PersistentVolumeClaims" in _scheduler_says(cluster, "db")
    assert any(n.code == "ProvisioningFailed" and 'storageclass.storage.k8s.io "fast" not found' in n.message
               for n in cluster.notices)
    finding = next(f for f in cluster.doctor().findings if f.code == "StorageClassNotFound")
    assert (finding.layer, finding.subject, finding.severity) == ("storage", "PersistentVolumeClaim default/data",
                                                                  "error")
    assert "spec.storageClassName: standard" in finding.fix


def test_a_volume_pinned_to_a_node_pins_the_pods_of_its_claim() -> None:
    volume = """apiVersion: v1
kind: PersistentVolume
metadata: {name: local-data}
spec:
  capacity: {storage: 5Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  hostPath: {path: /data}
  nodeAffinity:
    required:
      nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [NODE]}]}]
"""
    claim = CLAIM.format(name="data", cls='storageClassName: ""\n  ')
    pod = POD.format(name="db", claim="data", extra="")
    cluster = Cluster.from_yaml(volume.replace("NODE", "worker2") + "---\n" + claim + "---\n" + pod)
    assert cluster.state.pods["default/db"].node_name == "worker2"
    assert _others(cluster, "PersistentVolumeClaim")["default/data"]["spec"]["volumeName"] == "local-data"
    assert _others(cluster, "PersistentVolume")["local-data"]["status"]["phase"] == "Bound"
    # Pinned to the control plane, whose taint the pod does not tolerate: the scheduler says both.
    cluster = Cluster.from_yaml(volume.replace("NODE", "control-plane") + "---\n" + claim + "---\n" + pod)
    says = _scheduler_says(cluster, "db")
    assert "2 node(s) had volume node affinity conflict" in says
    assert "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }" in says


def test_validation_names_the_file_the_object_and_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "storage.yaml"
    bad.write_text("""apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteSometimes]
  resources: {requests: {storage: "0"}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: nomodes}
spec: {}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: gigabytes}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1GB}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/fast
volumeBindingMode: Later
""")
    out = CliRunner().invoke(cli, ["validate", "-f", str(bad)])
    assert out.exit_code == 2, out.output
    text = out.output
    assert ('PersistentVolumeClaim default/data: spec.accessModes: Unsupported value: "ReadWriteSometimes": '
            'supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"') in text
    assert 'PersistentVolumeClaim default/data: spec.resources[storage]: Invalid value: "0": must be greater than ' \
           "zero" in text
    assert "PersistentVolumeClaim default/nomodes: spec.accessModes: Required value: at least 1 access mode is " \
           "required" in text
    assert "PersistentVolumeClaim default/nomodes: spec.resources[storage]: Required value" in text
    assert 'StorageClass fast: volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", ' \
           '"WaitForFirstConsumer"' in text
    # Not a quantity: refused as the API server decodes it (1G or 1Gi is).
    assert "PersistentVolumeClaim default/gigabytes: PersistentVolumeClaim in version \"v1\" cannot be handled as a " \
           "PersistentVolumeClaim: quantities must match the regular expression" in text
    assert "storage.yaml, document 1" in text
    assert "Traceback" not in text
