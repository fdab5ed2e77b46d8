"""Storage on `knetsim up`, through the real kubectl, as on a kind cluster: the default StorageClass `standard`
(local-path, WaitForFirstConsumer), a claim Pending until its first consumer is scheduled, then a volume on that
pod's node and the claim Bound; a claim deleted while a pod mounts it waits for the pod (pvc-protection), then
its volume goes with it; a pod whose claim does not exist stays
Pending with the scheduler's words, and runs once the claim is created; a claim of a class that does not exist
says so in its events; a claim without access modes is refused with the API server's words."""

from __future__ import annotations

import json
import re

from tests.cluster.storage_manifests import CLAIM, POD, SHARED_CLAIM_DEPLOYMENT, STATEFULSET
from tests.live import Cluster, wait_for


def _apply(k: Cluster, ns: str, text: str) -> None:
    k.kubectl("apply", "-n", ns, "-f", "-", input=text)


def _events(k: Cluster, ns: str, kind: str, name: str) -> str:
    return k.kubectl("get", "events", "-n", ns, "--field-selector",
                     f"involvedObject.kind={kind},involvedObject.name={name}").stdout


def test_the_default_storage_class_is_kinds_standard(k: Cluster) -> None:
    out = k.kubectl("get", "storageclass").stdout.splitlines()
    assert out[0].split() == ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION",
                              "AGE"]
    assert out[1].split()[:6] == ["standard", "(default)", "rancher.io/local-path", "Delete", "WaitForFirstConsumer",
                                  "false"]


def test_a_claim_waits_for_its_first_consumer_then_binds_on_its_node(k: Cluster) -> None:
    ns = k.namespace("store")
    _apply(k, ns, CLAIM.format(name="data", cls=""))
    claim = k.get_json("pvc", "data", "-n", ns)
    assert claim["spec"]["storageClassName"] == "standard"  # the DefaultStorageClass admission plugin
    header, row = k.kubectl("get", "pvc", "-n", ns).stdout.splitlines()
    assert header.split() == ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS",
                              "VOLUMEATTRIBUTESCLASS", "AGE"]
    assert row.split()[:4] == ["data", "Pending", "standard", "<unset>"]
    assert wait_for(lambda: "waiting for first consumer to be created before binding" in
                    _events(k, ns, "PersistentVolumeClaim", "data"))
    assert "WaitForFirstConsumer" in _events(k, ns, "PersistentVolumeClaim", "data")

    _apply(k, ns, POD.format(name="db", claim="data", extra=""))
    assert wait_for(lambda: k.get_json("pod", "db", "-n", ns).get("status", {}).get("phase") == "Running", 20)
    assert wait_for(lambda: k.get_json("pvc", "data", "-n", ns)["status"].get("phase") == "Bound")
    claim = k.get_json("pvc", "data", "-n", ns)
    volume_name = claim["spec"]["volumeName"]
    assert volume_name == f"pvc-{claim['metadata']['uid']}"
    row = k.kubectl("get", "pvc", "data", "-n", ns, "--no-headers").stdout.split()
    assert row[:6] == ["data", "Bound", volume_name, "1Gi", "RWO", "standard"]
    pv_row = k.kubectl("get", "pv", volume_name, "--no-headers").stdout.split()
    assert pv_row[:7] == [volume_name, "1Gi", "RWO", "Delete", "Bound", f"{ns}/data", "standard"]
    described = k.kubectl("describe", "pvc", "data", "-n", ns).stdout
    fields = dict(re.findall(r"^(Status|Volume|Used By):\s+(\S+)$", described, re.M))
    assert fields == {"Status": "Bound", "Volume": volume_name, "Used By": "db"}
    assert f"Successfully provisioned volume {volume_name}" in described
    volume = k.get_json("pv", volume_name)
    node = k.get_json("pod", "db", "-n", ns)["spec"]["nodeName"]
    term = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term == {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}

    # kind's standard class does not allow expansion (PersistentVolumeClaimResize); a smaller request is refused
    # by validation.
    grow = json.dumps({"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
    out = k.kubectl("patch", "pvc", "data", "-n", ns, "--type=merge", "-p", grow, check=False)
    assert out.returncode != 0
    assert ('persistentvolumeclaims "data" is forbidden: only dynamically provisioned pvc can be resized and the '
            "storageclass that provisions the pvc must support resize") in out.stderr
    shrink = json.dumps({"spec": {"resources": {"requests": {"storage": "512Mi"}}}})
    out = k.kubectl("patch", "pvc", "data", "-n", ns, "--type=merge", "-p", shrink, check=False)
    assert "spec.resources.requests.storage: Forbidden: field can not be less than previous value" in out.stderr

    # pvc-protection: a claim a running pod mounts waits, Terminating, until the pod is gone.
    assert "kubernetes.io/pvc-protection" in claim["metadata"]["finalizers"]
    k.kubectl("delete", "pvc", "data", "-n", ns, "--wait=false")
    assert k.kubectl("get", "pvc", "data", "-n", ns, "--no-headers").stdout.split()[1] == "Terminating"
    assert volume_name in k.kubectl("get", "pv", "-o", "name").stdout
    k.kubectl("delete", "pod", "db", "-n", ns)
    assert wait_for(lambda: not k.kubectl("get", "pvc", "-n", ns, "-o", "name").stdout.strip())
    # Reclaim policy Delete: the claim's volume goes with it.
    assert wait_for(lambda: volume_name not in k.kubectl("get", "pv", "-o", "name").stdout)


def test_the_replicas_sharing_a_claim_follow_its_volume_to_one_node(k: Cluster) -> None:
    ns = k.namespace("shared")
    _apply(k, ns, CLAIM.format(name="data", cls="") + "---\n" + SHARED_CLAIM_DEPLOYMENT)

    def placed() -> set[str] | None:
        pods = k.get_json("pods", "-n", ns)["items"]
        if len(pods) != 3 or any(p.get("status", {}).get("phase") != "Running" for p in pods):
            return None
        return {p["spec"]["nodeName"] for p in pods}
    nodes = wait_for(placed, 30)
    assert nodes is not None and len(nodes) == 1
    claim = k.get_json("pvc", "data", "-n", ns)
    assert claim["status"]["phase"] == "Bound"
    assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] in nodes


def test_a_statefulset_gets_a_bound_claim_per_pod(k: Cluster) -> None:
    ns = k.namespace("sts")
    _apply(k, ns, STATEFULSET)
    assert wait_for(lambda: [r.split()[:2] for r in k.kubectl("get", "pvc", "-n", ns, "--no-headers").stdout
                             .splitlines()] == [["www-web-0", "Bound"], ["www-web-1", "Bound"]], 30)
    for ordinal in (0, 1):
        pod = k.get_json("pod", f"web-{ordinal}", "-n", ns)
        assert {"name": "www", "persistentVolumeClaim": {"claimName": f"www-web-{ordinal}"}} in pod["spec"]["volumes"]
    assert "create Claim www-web-0 Pod web-0 in StatefulSet web success" in \
        k.kubectl("get", "events", "-n", ns).stdout


def test_a_pod_whose_claim_does_not_exist_stays_pending_with_the_schedulers_words(k: Cluster) -> None:
    ns = k.namespace("missing")
    _apply(k, ns, POD.format(name="db", claim="db-data", extra=""))
    words = ('0/3 nodes are available: persistentvolumeclaim "db-data" not found. preemption: 0/3 nodes are '
             "available: 3 Preemption is not helpful for scheduling.")
    assert wait_for(lambda: words in " ".join(k.kubectl("describe", "pod", "db", "-n", ns).stdout.split()))
    described = k.kubectl("describe", "pod", "db", "-n", ns).stdout
    assert "FailedScheduling" in described
    assert k.get_json("pod", "db", "-n", ns)["status"]["phase"] == "Pending"
    # The claim appears: the scheduler tries the pod again, the provisioner makes its volume.
    _apply(k, ns, CLAIM.format(name="db-data", cls=""))
    assert wait_for(lambda: k.get_json("pod", "db", "-n", ns).get("spec", {}).get("nodeName"), 20)
    assert wait_for(lambda: k.get_json("pvc", "db-data", "-n", ns)["status"].get("phase") == "Bound")


def test_a_claim_of_a_class_that_does_not_exist_says_so(k: Cluster) -> None:
    ns = k.namespace("noclass")
    _apply(k, ns, CLAIM.format(name="data", cls="storageClassName: gp2\n  "))
    assert wait_for(lambda: 'storageclass.storage.k8s.io "gp2" not found' in
                    _events(k, ns, "PersistentVolumeClaim", "data"))
    assert "ProvisioningFailed" in _events(k, ns, "PersistentVolumeClaim", "data")
    _apply(k, ns, POD.format(name="db", claim="data", extra=""))
    assert wait_for(lambda: "pod has unbound immediate PersistentVolumeClaims" in
                    " ".join(k.kubectl("describe", "pod", "db", "-n", ns).stdout.split()))


def test_a_claim_without_access_modes_is_refused(k: Cluster) -> None:
    ns = k.namespace("invalid")
    text = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: bad}\nspec: {resources: {requests: " \
           "{storage: 1Gi}}}\n"
    out = k.kubectl("apply", "-n", ns, "-f", "-", input=text, check=False)
    assert out.returncode != 0
    assert "spec.accessModes: Required value: at least 1 access mode is required" in out.stderr
    # A claim's spec is fixed once it is created (only a bound claim's storage request may grow).
    _apply(k, ns, CLAIM.format(name="data", cls=""))
    patch = json.dumps({"spec": {"accessModes": ["ReadWriteMany"]}})
    out = k.kubectl("patch", "pvc", "data", "-n", ns, "--type=merge", "-p", patch, check=False)
    assert out.returncode != 0
    assert "spec is immutable after creation except resources.requests" in out.stderr
