"""The kubelet's image manager for images that cannot be pulled: the events, the states, the backoff.

The registry model (``knetsim.cluster.images``) says which images cannot be had. For such a
container the kubelet (``pkg/kubelet/images/image_manager.go``) loops, and so does this:

1. ``Normal Pulling  Pulling image "X"``; the pull takes ``PULL_TIME``;
2. ``Warning Failed  Failed to pull image "X": <the runtime's error>`` and
   ``Warning Failed  Error: ErrImagePull``; the container waits in ``ErrImagePull`` with the
   runtime's error as its message;
3. at the next pod sync (``SYNC_DELAY`` later) the pull is in backoff:
   ``Normal BackOff  Back-off pulling image "X"``, ``Warning Failed  Error: ImagePullBackOff``,
   and the container waits in ``ImagePullBackOff``, message
   ``Back-off pulling image "X": ErrImagePull: <the runtime's error>``;
4. the next pull starts 10 s after the failure, then 20 s, 40 s ... at most 300 s
   (``flowcontrol.NewBackOff(10s, 300s)``).

An ``InvalidImageName`` is never pulled: ``Warning InspectFailed`` and ``Error: InvalidImageName``
at each sync. ``ErrImageNeverPull`` likewise. Repeated events aggregate (``x3 over 40s``).

When the pod's image is changed to one that can be pulled (``kubectl set image pod/...``), the
loop ends: the image is there (``Pulled ... already present on machine``, as every pullable
image is in knetsim), the container is created and started, and the pod runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..apiserver.events import Recorder, involved
from ..cluster.images import PullError
from .worker import Worker

PULL_TIME = 1.0  # a registry that answers "not found" takes about a second (resolve, auth, manifest)
SYNC_DELAY = 1.0  # the pod worker syncs again right after a failed start
BACKOFF_BASE, BACKOFF_MAX = 10.0, 300.0
NEVER_PULLED_RESYNC = 10.0  # the kubelet's resync of a pod whose container cannot start at all


class ImagePuller(Worker):
    """One container's failing pulls, until the task is cancelled (pod gone or image fixed)."""

    def __init__(self, recorder: Recorder, pod: dict[str, Any], container: str, image: str, error: PullError,
                 report: Callable[[dict[str, Any]], None]) -> None:
        self.recorder, self.pod, self.container, self.image, self.error = recorder, pod, container, image, error
        self.report = report  # sets the container's state in the pod status

    def _event(self, reason: str, message: str, type_: str = "Normal") -> None:
        ref = involved(self.pod, f"spec.containers{{{self.container}}}")
        node = (self.pod.get("spec") or {}).get("nodeName", "")
        self.recorder.record(ref, reason, message, host=node, type_=type_)

    async def _run(self) -> None:
        if self.error.reason != "ErrImagePull":
            await self._never_pulled()
        else:
            await self._pull_loop()

    async def _never_pulled(self) -> None:
        event = "InspectFailed" if self.error.reason == "InvalidImageName" else self.error.reason
        while True:
            self._event(event, self.error.message, "Warning")
            self._event("Failed", f"Error: {self.error.reason}", "Warning")
            self.report({"waiting": {"reason": self.error.reason, "message": self.error.message}})
            await asyncio.sleep(NEVER_PULLED_RESYNC)

    async def _pull_loop(self) -> None:
        failures = 0
        while True:
            self._event("Pulling", f'Pulling image "{self.image}"')
            await asyncio.sleep(PULL_TIME)
            self._event("Failed", f'Failed to pull image "{self.image}": {self.error.message}', "Warning")
            self._event("Failed", "Error: ErrImagePull", "Warning")
            self.report({"waiting": {"reason": "ErrImagePull", "message": self.error.message}})
            delay = min(BACKOFF_BASE * 2 ** failures, BACKOFF_MAX)
            failures += 1
            await asyncio.sleep(SYNC_DELAY)
            self._event("BackOff", f'Back-off pulling image "{self.image}"')
            self._event("Failed", "Error: ImagePullBackOff", "Warning")
            self.report({"waiting": {"reason": "ImagePullBackOff", "message": (
                f'Back-off pulling image "{self.image}": ErrImagePull: {self.error.message}')}})
            await asyncio.sleep(max(0.0, delay - SYNC_DELAY))


def started(recorder: Recorder, pod: dict[str, Any], container: str, image: str) -> None:
    """The events of a container that starts once its image is there."""
    ref = involved(pod, f"spec.containers{{{container}}}")
    node = (pod.get("spec") or {}).get("nodeName", "")
    recorder.record(ref, "Pulled", f'Container image "{image}" already present on machine', host=node)
    recorder.record(ref, "Created", f"Created container: {container}", host=node)
    recorder.record(ref, "Started", f"Started container {container}", host=node)
