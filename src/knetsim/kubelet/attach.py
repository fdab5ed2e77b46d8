"""``kubectl attach``: a client's streams joined to a container's run (its output, its stdin), as the kubelet's
attach does. The streams come from ``wsexec.py``; the container is the kubelet's."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .kubelet import Kubelet


async def attach(kubelet: Kubelet, channels: Any, namespace: str, pod: str, container: str, want_stdin: bool) -> None:
    """``kubectl attach`` (and ``run -i``): the client's channels receive the container's output for the rest of
    its run, and feed its stdin when it has one; the exit is reported when the run ends or the client leaves."""
    c = kubelet.containers.get((namespace, pod), {}).get(container)
    if c is None or c.argv is None:
        # Not run here (a server): its output is not simulated; stay attached until the client leaves.
        await channels.read(lambda _b: None, lambda: None)
        return
    if c.final or (c.run_done.is_set() and not c.attached.is_set()):
        await channels.finish(0, c.argv)
        return
    use_stdin = want_stdin and c.stdin
    c.sinks.append(channels)
    c.attached.set()
    done = c.run_done
    reader = asyncio.ensure_future(channels.read(c.feed if use_stdin else (lambda _b: None),
                                                 c.close_stdin if use_stdin else (lambda: None)))
    waiter = asyncio.ensure_future(done.wait())
    try:
        await asyncio.wait([reader, waiter], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (reader, waiter):
            t.cancel()
            with contextlib.suppress(BaseException):
                await t
        with contextlib.suppress(ValueError):
            c.sinks.remove(channels)
        if use_stdin and c.stdin_once and not done.is_set():
            c.close_stdin()  # stdinOnce: the first client's detach closes stdin for this run
    # The kubelet's attach reports Success whatever the exit code; `kubectl run -i` reads it
    # from the pod status.
    await channels.finish(0, c.argv)
