"""Graded labs: Services and Ingress, NetworkPolicy from default deny, and more.

Labs are data (``catalog/*.yaml``); the grader speaks only the Kubernetes API (through
``knetsim.sources``, the official client), so a lab runs against ``knetsim up`` or any real
cluster (kind, minikube, a cloud cluster). See README.md and docs/labs.md.
"""

from .criteria import CHECKS
from .grader import check, grade, reset, start, tasks_text
from .model import Check, CriterionResult, Lab, LabError, LabResult, Task, TaskResult, all_labs, lab_names, load_lab
from .progress import ProgressStore
from .snapshot import Snapshot, fetch, from_objects

__all__ = [
    "CHECKS",
    "Check",
    "CriterionResult",
    "Lab",
    "LabError",
    "LabResult",
    "ProgressStore",
    "Snapshot",
    "Task",
    "TaskResult",
    "all_labs",
    "check",
    "fetch",
    "from_objects",
    "grade",
    "lab_names",
    "load_lab",
    "reset",
    "start",
    "tasks_text",
]
