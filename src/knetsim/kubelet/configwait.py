"""Containers that wait for a ConfigMap or Secret: the kubelet's retries, its events, the recovery.

While a ConfigMap/Secret volume of the pod cannot be set up (``podconfig.mount_error``), the
volume manager retries with its exponential backoff (``nestedpendingoperations``: 500 ms doubling
to 2m2s) and records ``Warning FailedMount  MountVolume.SetUp failed for volume "x" : ...`` on the
pod at each failure; every container waits in ``ContainerCreating``. Once the volumes are there,
each container's environment is resolved when it is created: one that refers to what is missing
records ``Normal Pulled  Container image "X" already present on machine`` and ``Warning Failed
Error: <why>`` and waits in ``CreateContainerConfigError``; the pod worker syncs it again after
its backoff (``SYNC_RETRY``). Repeated events aggregate (``x3 over 20s``).

Until its volumes are set up the pod has no sandbox, so no address (``controllers/podstart.py``
gives it one once they can be). A write to a ConfigMap or Secret of the pod's namespace wakes the
loop at once, so the container
starts as soon as what it needs exists (a real kubelet notices at its next retry, up to
``SYNC_RETRY`` or the mount backoff later).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from ..apiserver.events import Recorder, involved
from .podconfig import Lookup, config_error, mount_error, mount_message
from .worker import Worker

MOUNT_BASE, MOUNT_MAX = 0.5, 122.0
SYNC_RETRY = 10.0  # the pod worker's backOffPeriod after a failed sync


class ConfigWait(Worker):
    """The containers of one pod that have not started for want of a ConfigMap or Secret."""

    def __init__(self, recorder: Recorder, lookup: Lookup, pod: Callable[[], Mapping[str, Any] | None],
                 pending: list[str], report: Callable[[str, dict[str, Any]], None],
                 pull_fails: Callable[[Mapping[str, Any], Mapping[str, Any]], bool],
                 start: Callable[[Mapping[str, Any], Mapping[str, Any]], None]) -> None:
        self.recorder, self.lookup, self.pod = recorder, lookup, pod
        self.pending = list(pending)  # container names, in spec order
        self.report = report  # (container, state) into the pod status
        # (pod, container spec): the image manager's turn (True: it cannot be pulled, the puller has it),
        # then the runtime's once the environment resolves.
        self.pull_fails, self.start = pull_fails, start
        self.wake = asyncio.Event()

    @property
    def namespace(self) -> str:
        pod = self.pod() or {}
        return str((pod.get("metadata") or {}).get("namespace") or "")

    async def _run(self) -> None:
        mount_failures = 0
        while self.pending and not self.cancelled:
            pod = self.pod()
            if pod is None:
                return
            node = str((pod.get("spec") or {}).get("nodeName") or "")
            failed = mount_error(pod, self.lookup)
            if failed is not None:
                self.recorder.record(involved(pod), "FailedMount", mount_message(*failed), host=node,
                                     type_="Warning")
                for name in self.pending:
                    self.report(name, {"waiting": {"reason": "ContainerCreating"}})
                delay = min(MOUNT_BASE * 2 ** mount_failures, MOUNT_MAX)
                mount_failures += 1
            elif not (pod.get("status") or {}).get("podIP"):
                return  # volumes ready: the sandbox (the pod-start controller) comes next, then the containers
            else:
                self._create(pod, node)
                delay = SYNC_RETRY
            if not self.pending:
                return
            self.wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), delay)

    def _create(self, pod: Mapping[str, Any], node: str) -> None:
        specs = {str(c.get("name")): c for c in (pod.get("spec") or {}).get("containers") or []}
        for name in list(self.pending):
            spec_c = specs.get(name)
            if spec_c is None or self.pull_fails(pod, spec_c):
                self.pending.remove(name)
                continue
            error = config_error(pod, spec_c, self.lookup)
            if error is None:
                self.pending.remove(name)
                self.start(pod, spec_c)
                continue
            ref = involved(pod, f"spec.containers{{{name}}}")
            self.recorder.record(ref, "Pulled", f'Container image "{spec_c.get("image")}" already present on machine',
                                 host=node)
            self.recorder.record(ref, "Failed", f"Error: {error}", host=node, type_="Warning")
            self.report(name, {"waiting": {"reason": "CreateContainerConfigError", "message": error}})
