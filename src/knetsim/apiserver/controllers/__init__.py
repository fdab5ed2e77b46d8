"""The live cluster's controllers: watchers of the store, each proportional to what changed.

``manager.ControllerManager`` runs them (one work queue keyed by controller and object); each
controller file is one upstream controller. The decisions reuse the offline core where it has
them (``cluster.workloads`` expansion, scheduling feasibility and pod status,
``cluster.endpointslices.reconcile``), and ``rollout`` is the Deployment controller's planner.
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
from .gateway import GatewayController
from .gc import GarbageCollector
from .ingress import IngressStatus
from .job import JobController
from .manager import ControllerManager
from .podstart import PodStart
from .replicaset import ReplicaSetController
from .scheduler import Scheduler
from .statefulset import StatefulSetController

# In the order their work usually flows (a changed key is queued for each in this order).
CONTROLLERS: tuple[Callable[[Context], Controller], ...] = (
    CronJobController, DeploymentController, ReplicaSetController, StatefulSetController, DaemonSetController,
    JobController, Scheduler, PodStart, EndpointSliceController, EndpointsController, IngressStatus, GatewayController,
    GarbageCollector,
)

__all__ = ["CONTROLLERS", "Context", "Controller", "ControllerManager"]
