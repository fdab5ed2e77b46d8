"""The ReplicationController manager (pkg/controller/replication): the ReplicaSet controller, for core/v1's RC.

Upstream runs the ReplicaSet controller through a conversion adapter; here the ReplicaSet controller's own steps
run on the RC directly, since the core's expansion and status read both kinds alike (``cluster.workloads``,
``cluster.workloadstatus``) and the informer reads the RC's selector map (``Selector.of_workload``). Its pods name
their owner ``v1``/``ReplicationController``; Kubernetes' e2e Service jig makes its backends this way.
"""

from __future__ import annotations

from .replicaset import ReplicaSetController


class ReplicationControllerManager(ReplicaSetController):
    name = "replication-controller"
    kind = "ReplicationController"
    api_version = "v1"
