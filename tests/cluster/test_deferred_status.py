"""The offline build writes a workload's status and first generation when something first reads the workloads
(issue 30: `matrix` never reads them, and 9,000 Deployments with their ReplicaSets cost ~0.15 s). Deferred, they
must read exactly as they did when the build wrote them at once: same counts, same keys in the same order."""

from __future__ import annotations

import threading
import time

from tests.conftest import cluster_from

from knetsim.cluster.config import ClusterConfig
from knetsim.cluster.state import ClusterState

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
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"""


def _user_workloads(cluster) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    return {kind: obj.raw for (kind, key), obj in cluster.state.workloads.items() if key.startswith("default/")}


def test_a_deployment_and_its_replica_set_read_with_their_status_revision_and_generation() -> None:
    cluster = cluster_from(DEPLOY)
    raw = _user_workloads(cluster)
    deployment, replica_set = raw["Deployment"], raw["ReplicaSet"]
    assert deployment["status"] == {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
                                    "availableReplicas": 3}
    assert replica_set["status"] == {"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3,
                                     "availableReplicas": 3, "observedGeneration": 1}
    # The revision annotation is written before the generation, as when the build wrote both at once: the bytes
    # kubectl get -o json shows keep their order.
    assert list(deployment["metadata"]) == ["name", "namespace", "annotations", "generation"]
    assert deployment["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1"}
    assert list(deployment) == ["apiVersion", "kind", "metadata", "spec", "status"]
    assert replica_set["metadata"]["generation"] == 1
    # The ReplicaSet's replica annotations, written when the workloads are read, follow its revision.
    assert replica_set["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1",
                                                      "deployment.kubernetes.io/desired-replicas": "3",
                                                      "deployment.kubernetes.io/max-replicas": "4"}
    assert list(replica_set["metadata"]["annotations"]) == ["deployment.kubernetes.io/revision",
                                                            "deployment.kubernetes.io/desired-replicas",
                                                            "deployment.kubernetes.io/max-replicas"]


def test_the_matrix_leaves_the_statuses_unwritten_and_a_later_reader_sees_them_whole() -> None:
    cluster = cluster_from(DEPLOY)
    # The matrix names the pods by their Deployment, found through the ReplicaSet's owner.
    assert cluster.matrix().names == ["default/web[Deployment]"]
    # Nothing the matrix read wrote them (the workload's name came from the ReplicaSet's owner)...
    unfinished = {kind: obj.raw for (kind, key), obj in cluster.state.workloads_without_status.items()
                  if key.startswith("default/")}
    assert "status" not in unfinished["Deployment"] and "generation" not in unfinished["Deployment"]["metadata"]
    # ...and the first read of the workloads writes them, as a build that wrote them at once would have.
    assert _user_workloads(cluster) == _user_workloads(cluster_from(DEPLOY))
    assert unfinished["Deployment"]["status"]["availableReplicas"] == 3


def test_objects_of_and_the_endpoints_read_the_workloads_finished() -> None:
    cluster = cluster_from(DEPLOY)
    (deployment,) = [o for o in cluster.state.objects_of("Deployment") if o.namespace == "default"]
    assert deployment.raw["status"]["readyReplicas"] == 3
    cluster = cluster_from(DEPLOY)
    assert [e.name for e in cluster.state.objects_of("Endpoints") if e.namespace == "default"] == ["kubernetes", "web"]
    assert _user_workloads(cluster)["ReplicaSet"]["status"]["readyReplicas"] == 3


def test_a_reader_in_another_thread_waits_for_the_workloads_finished() -> None:
    state = ClusterState(config=ClusterConfig())
    started = threading.Event()

    def finish(finishing: ClusterState) -> None:
        started.set()
        time.sleep(0.2)  # long enough for the other thread to ask meanwhile
        finishing.workloads_without_status[("Deployment", "default/web")] = "finished"  # type: ignore[assignment]

    state._finish_workloads = finish
    seen: list[object] = []
    first = threading.Thread(target=lambda: state.workloads)
    first.start()
    started.wait()
    seen.append(dict(state.workloads))  # while the first thread finishes
    first.join()
    assert seen == [{("Deployment", "default/web"): "finished"}]
