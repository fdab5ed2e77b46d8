"""The live cluster's controllers: watchers of the store, each proportional to what changed.

``manager.ControllerManager`` runs them (one work queue keyed by controller and object); each
controller file is one upstream controller. The decisions reuse the offline core where it has
them (``cluster.workloads`` expansion, scheduling feasibility and pod status,
``cluster.endpointslices.reconcile``), and ``cluster.rollout`` is the Deployment controller's planner.
The server imports none of this: ``daemon.wire`` connects them to it.
"""

from __future__ import annotations

from collections.abc import Callable

from .base import Context, Controller
from .cronjob import CronJobController
from .daemonset import DaemonSetController
from .deployment import DeploymentController
from .endpoints import EndpointsController
from .endpointslice import EndpointSliceController
from .endpointslicemirroring import EndpointSliceMirroringController
from .gateway import GatewayController
from .gc import GarbageCollector
from .ingress import IngressStatus
from .job import JobController
from .manager import ControllerManager
from .namespace import NamespaceController
from .replicaset import ReplicaSetController
from .replicationcontroller import ReplicationControllerManager
from .rootcacert import RootCACertPublisher
from .scheduler import Scheduler
from .serviceaccount import ServiceAccountsController
from .servicecidrs import ServiceCIDRController
from .statefulset import StatefulSetController
from .storage import PersistentVolumeController

# In the order their work usually flows (a changed key is queued for each in this order): workloads
# make pods and the scheduler places them; then the node starts them (the kubelet's PodStart, which
# daemon.wire puts between the two, since the node is not this program); then the pods' addresses
# feed endpoints, routes' status, and the garbage collector and the namespace controller clean up.
UNTIL_SCHEDULED: tuple[Callable[[Context], Controller], ...] = (
    ServiceAccountsController, RootCACertPublisher, CronJobController, DeploymentController, ReplicaSetController,
    ReplicationControllerManager, StatefulSetController, DaemonSetController, JobController, Scheduler,
)
AFTER_POD_START: tuple[Callable[[Context], Controller], ...] = (
    EndpointSliceController, EndpointSliceMirroringController, EndpointsController, IngressStatus,
    GatewayController, ServiceCIDRController, PersistentVolumeController, GarbageCollector, NamespaceController,
)

__all__ = ["AFTER_POD_START", "UNTIL_SCHEDULED", "Context", "Controller", "ControllerManager", "RootCACertPublisher"]
