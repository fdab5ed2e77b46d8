"""One of the simulated kubelet's background loops: an image pull's retries, a pod waiting for its
ConfigMaps, a container's probes. Each is a task on the server's event loop (it only ever sleeps
between steps), ended by ``cancel()`` when its pod goes or what it waited for is resolved."""

from __future__ import annotations

import asyncio
import contextlib


class Worker:
    task: asyncio.Task[None] | None = None
    # Checked after each wait: a cancel() that comes as the wait ends can be swallowed by
    # asyncio.wait_for (python/cpython#86296), and the loop must not take one more step.
    cancelled = False

    def begin(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._guarded())

    def cancel(self) -> None:
        self.cancelled = True
        if self.task is not None:
            self.task.cancel()

    async def _guarded(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await self._run()

    async def _run(self) -> None:
        raise NotImplementedError
