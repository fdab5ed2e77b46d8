"""An exec's first frame waits until the client can take it.

client-go's WebSocket executor reads frames before it has registered its streams and drops a frame for a
stream it does not have yet (kubectl: ``Unknown stream id 1, discarding message``): a command that answers at
once lost its whole output, with exit 0, whenever kubectl was slow to start its goroutines (a busy machine).
The server now holds the first frame until the client has spoken (stdin data, the close of stdin) or, for a
client that sends nothing, a short grace after the upgrade. Driven here over a raw v5 WebSocket, so that the
order of the frames is seen, not kubectl's reading of them.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time

import aiohttp
from tests.live import Live, wait_for

from knetsim.kubelet.wsexec import CLOSE, ERROR, STDIN, STDOUT, STREAMS_GRACE

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "echoer", "namespace": "default"},
       "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}


def _running(live: Live) -> None:
    live.kubectl("apply", "-f", "-", input=json.dumps(POD))
    assert wait_for(lambda: live.kubectl("get", "pod", "echoer", "-o", "jsonpath={.status.phase}").stdout
                    == "Running", 20)


async def _exec(live: Live, stdin: bool, speak_after: float | None) -> tuple[float, list[tuple[int, bytes]]]:
    """The seconds from the upgrade to the first frame, and every frame, for ``echo hi``."""
    try:
        return await _frames(live, stdin, speak_after)
    finally:
        await asyncio.sleep(0.25)  # aiohttp's advice: let the TLS transport finish closing before the loop ends


async def _frames(live: Live, stdin: bool, speak_after: float | None) -> tuple[float, list[tuple[int, bytes]]]:
    query = "command=echo&command=hi&stdout=true&stderr=true" + ("&stdin=true" if stdin else "")
    ctx = ssl.create_default_context(cafile=str(live.state / "serving.crt"))
    async with aiohttp.ClientSession() as session, session.ws_connect(
            f"{live.url}/api/v1/namespaces/default/pods/echoer/exec?{query}", protocols=("v5.channel.k8s.io",),
            headers={"Authorization": f"Bearer {live.token}"}, ssl=ctx) as ws:
        opened = time.monotonic()
        if speak_after is not None:
            # Nothing may arrive while the client is still silent.
            try:
                early = await ws.receive(timeout=speak_after)
            except TimeoutError:
                early = None
            assert early is None, early
            await ws.send_bytes(bytes([CLOSE, STDIN]))
        frames: list[tuple[int, bytes]] = []
        first = 0.0
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.BINARY:
                break
            if not frames:
                first = time.monotonic() - opened
            frames.append((msg.data[0], msg.data[1:]))
        return first, frames


def test_with_stdin_the_output_waits_for_the_clients_first_frame(live: Live) -> None:
    _running(live)
    _, frames = asyncio.run(_exec(live, stdin=True, speak_after=0.3))
    assert frames[0] == (STDOUT, b"hi\n")
    assert frames[-1][0] == ERROR and json.loads(frames[-1][1])["status"] == "Success"


def test_without_stdin_the_output_waits_a_grace_after_the_upgrade(live: Live) -> None:
    _running(live)
    first, frames = asyncio.run(_exec(live, stdin=False, speak_after=None))
    assert first >= STREAMS_GRACE * 0.9, first
    assert frames[0] == (STDOUT, b"hi\n")
