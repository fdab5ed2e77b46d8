"""`kubectl delete --cascade=foreground|orphan` ends as kube-controller-manager's garbage collector ends it.

Issue 34, point 0: `kubectl delete svc web --cascade=foreground` left the Service with its
`foregroundDeletion` finalizer forever while the EndpointSlice controller recreated the slice the garbage
collector deleted (millions of revisions, the cluster at 80 % CPU). kubectl waits for the deletion by
default, so the command returning at all is the first half of the proof; the objects kubectl lists
afterwards are the second. The conftest's guard fails any test whose controllers wrote in a loop.
"""

from __future__ import annotations

import json

from .conftest import Cluster, wait_for


def names(k: Cluster, kinds: str) -> list[str]:
    out = k.kubectl("get", kinds, "-o", "name")
    return sorted(line for line in out.stdout.split() if line != "service/kubernetes"
                  and not line.endswith("/kubernetes"))


def test_a_foreground_service_deletion_finishes_and_takes_its_endpoint_slices(k: Cluster) -> None:
    k.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    k.kubectl("expose", "deployment", "web", "--port=80")
    assert wait_for(lambda: names(k, "endpointslices") and names(k, "endpoints"))
    k.kubectl("delete", "svc", "web", "--cascade=foreground", timeout=30)
    assert names(k, "services") == []
    assert wait_for(lambda: names(k, "endpointslices,endpoints") == []), names(k, "endpointslices,endpoints")
    # The Deployment and its pods were never the Service's dependents.
    assert len([n for n in names(k, "pods") if n.startswith("pod/web-")]) == 2


def test_a_foreground_deployment_deletion_takes_replicasets_and_pods_before_the_deployment(k: Cluster) -> None:
    k.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    assert wait_for(lambda: len(names(k, "pods")) == 2)
    k.kubectl("delete", "deployment", "web", "--cascade=foreground", timeout=30)
    assert wait_for(lambda: names(k, "deployments,replicasets,pods") == []), names(k, "deployments,replicasets,pods")


def test_an_orphan_deployment_deletion_leaves_its_replicaset_ownerless_and_its_pods_running(k: Cluster) -> None:
    k.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    assert wait_for(lambda: len(names(k, "pods")) == 2)
    k.kubectl("delete", "deployment", "web", "--cascade=orphan", timeout=30)
    assert names(k, "deployments") == []
    [rs] = k.get_json("replicasets")["items"]
    assert "ownerReferences" not in rs["metadata"]
    assert "deletionTimestamp" not in rs["metadata"]
    pods = k.get_json("pods")["items"]
    assert len(pods) == 2
    assert all(p["metadata"]["ownerReferences"][0]["name"] == rs["metadata"]["name"] for p in pods)
    assert all(p["status"]["phase"] == "Running" for p in pods)


def test_a_foreground_deletion_waits_only_for_dependents_that_block_it(k: Cluster) -> None:
    """A dependent with blockOwnerDeletion false is deleted but not waited for: one held by a finalizer of its
    own does not hold the owner (upstream's processDeletingDependentsItem waits for blockingDependents)."""
    owner = json.loads(k.kubectl("create", "configmap", "owner", "-o", "json").stdout)
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    for name, blocking in (("held", False), ("blocking", True)):
        k.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "finalizers": ["example.com/hold"],
                         "ownerReferences": [{**ref, "blockOwnerDeletion": blocking}]}}))
    k.kubectl("delete", "configmap", "owner", "--cascade=foreground", "--wait=false")
    # Both dependents are being deleted; the owner waits for the blocking one only.
    assert wait_for(lambda: all(k.get_json("configmap", n)["metadata"].get("deletionTimestamp")
                                for n in ("held", "blocking")))
    assert "owner" in " ".join(names(k, "configmaps"))
    k.kubectl("patch", "configmap", "blocking", "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    assert wait_for(lambda: "configmap/owner" not in names(k, "configmaps")), names(k, "configmaps")
    assert "configmap/held" in names(k, "configmaps")
    k.kubectl("patch", "configmap", "held", "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')


def test_an_orphaned_endpoint_slice_stays_until_a_new_service_of_its_name_replaces_it(k: Cluster) -> None:
    k.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    k.kubectl("expose", "deployment", "web", "--port=80")
    assert wait_for(lambda: names(k, "endpointslices"))
    [orphan] = names(k, "endpointslices")
    orphan_uid = k.get_json(orphan)["metadata"]["uid"]
    k.kubectl("delete", "svc", "web", "--cascade=orphan", timeout=30)
    [kept] = k.get_json("endpointslices")["items"][:1] or [{}]
    assert "ownerReferences" not in kept.get("metadata", {}), kept
    assert names(k, "endpointslices") == [orphan]
    k.kubectl("expose", "deployment", "web", "--port=80")
    uid = k.get_json("service", "web")["metadata"]["uid"]

    def owned_by_the_new_service() -> bool:
        slices = [s for s in k.get_json("endpointslices")["items"] if s["metadata"]["name"] != "kubernetes"]
        return len(slices) == 1 and [r["uid"] for r in slices[0]["metadata"].get("ownerReferences", [])] == [uid] \
            and len(slices[0]["endpoints"]) == 2
    assert wait_for(owned_by_the_new_service), k.get_json("endpointslices")
    assert [s["metadata"]["uid"] for s in k.get_json("endpointslices")["items"]
            if s["metadata"]["name"] != "kubernetes"] != [orphan_uid]


def test_deleting_what_a_controller_makes_again_returns_and_the_replacement_is_a_new_object(k: Cluster) -> None:
    """kubectl delete waits until the uid it deleted is gone: a StatefulSet's pod, a Deployment's ReplicaSet and a
    Service's EndpointSlice come back under the same name at once, and came back with the same uid, so kubectl
    waited forever."""
    k.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=1")
    k.kubectl("expose", "deployment", "web", "--port=80")
    k.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}},
                              "spec": {"containers": [{"name": "c", "image": "postgres:16"}]}}}}))
    assert wait_for(lambda: len(names(k, "pods")) == 2 and names(k, "endpointslices"))
    [rs] = names(k, "replicasets")
    [eps] = names(k, "endpointslices")
    for what, cascade in (("pod/db-0", "background"), (rs, "foreground"), (eps, "background")):
        uid = k.get_json(what)["metadata"]["uid"]
        k.kubectl("delete", what, f"--cascade={cascade}", timeout=20)
        assert wait_for(lambda what=what: what in names(k, "pods,replicasets,endpointslices")), what
        assert k.get_json(what)["metadata"]["uid"] != uid, what


def test_a_dependent_with_another_owner_survives_a_foreground_deletion_without_the_reference(k: Cluster) -> None:
    refs = []
    for owner in ("first", "second"):
        body = json.loads(k.kubectl("create", "configmap", owner, "-o", "json").stdout)
        refs.append({"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": body["metadata"]["uid"],
                     "blockOwnerDeletion": True})
    k.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                                    "metadata": {"name": "shared", "ownerReferences": refs}}))
    k.kubectl("delete", "configmap", "first", "--cascade=foreground", timeout=20)
    shared = k.get_json("configmap", "shared")
    assert "deletionTimestamp" not in shared["metadata"]
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["second"]
