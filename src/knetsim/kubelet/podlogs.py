"""The node's answer to ``kubectl logs``: the API server passes the request on (``streams.py``) and this
reads the container's log files (``containerlog.py``), following them with ``-f`` until the container's
run ends, the pod goes or the client leaves."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime

from aiohttp import web

from ..apiserver.errors import ApiError
from .containerlog import FOLLOW_BACKLOG, LogStore, Renderer
from .node import NodeView


async def handle(server: NodeView, logs: LogStore, request: web.Request, namespace: str,
                 name: str) -> web.StreamResponse:
    """``GET /api/v1/namespaces/NS/pods/NAME/log``: the container's log as kubectl asks for it
    (``-c``, ``--previous``, ``-f``, ``--tail``, ``--timestamps``, ``--limit-bytes``, ``--since``)."""
    stored = server.store.get(("Pod", namespace, name))
    if stored is None:
        raise ApiError(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"})
    body = stored.body
    q = request.query
    names = [str(c.get("name")) for c in (body.get("spec") or {}).get("containers") or []]
    container = q.get("container", "")
    if not container:
        if len(names) != 1:
            raise ApiError(400, "BadRequest", f"a container name must be specified for pod {name}, choose one "
                                              f"of: [{' '.join(names)}]")
        container = names[0]
    elif container not in names + [str(c.get("name")) for f in ("initContainers", "ephemeralContainers")
                                   for c in (body.get("spec") or {}).get(f) or []]:
        raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {name}")
    status = body.get("status") or {}
    statuses = {cs.get("name"): cs for f in ("containerStatuses", "initContainerStatuses",
                                             "ephemeralContainerStatuses") for cs in status.get(f) or []}
    cs = statuses.get(container)
    waiting = ((cs or {}).get("state") or {}).get("waiting") if cs else {"reason": "ContainerCreating"}
    if waiting is not None and not (cs or {}).get("lastState"):
        reason = waiting.get("reason") or "ContainerCreating"
        raise ApiError(400, "BadRequest", f'container "{container}" in pod "{name}" is waiting to start: '
                                          f"{_waiting_text(reason)}")
    for _ in range(3):
        await asyncio.sleep(0)  # let a command that just started print what it prints at once
    uid = str(body["metadata"].get("uid", ""))
    restarts = int((cs or {}).get("restartCount") or 0)
    previous = q.get("previous") in ("true", "1")
    if previous:
        source = logs.find(namespace, name, uid, container, restarts - 1) if restarts else None
        if source is None:
            raise ApiError(400, "BadRequest", f'previous terminated container "{container}" in pod "{name}" '
                                              "not found")
    else:
        source = logs.get(namespace, name, uid, container, restarts)
    render = Renderer(q)
    head = render.backlog(source.lines())
    follow = q.get("follow") in ("true", "1") and not previous
    if not follow:
        return web.Response(text=head, content_type="text/plain")
    resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    queue: asyncio.Queue[tuple[datetime, str] | None] = asyncio.Queue(FOLLOW_BACKLOG)
    if not source.closed:
        source.followers.append(queue)
    try:
        with contextlib.suppress(ConnectionResetError):
            if head:
                await resp.write(head.encode())
            if source.closed:
                return resp
            while not server.closing:
                try:
                    item = await asyncio.wait_for(queue.get(), 1.0)
                except TimeoutError:
                    if request.transport is None or request.transport.is_closing():
                        break
                    stored_now = server.store.get(("Pod", namespace, name))
                    if stored_now is None or stored_now.body["metadata"].get("uid") != uid:
                        break
                    continue
                if item is None:
                    break
                text = render.chunk(*item)
                if text:
                    await resp.write(text.encode())
                if render.exhausted:
                    break
    finally:
        if queue in source.followers:
            source.followers.remove(queue)
    return resp


def _waiting_text(reason: str) -> str:
    # The kubelet's validateContainerLogStatus: the common pull failures have their own words.
    return {"ErrImagePull": "image can't be pulled",
            "ImagePullBackOff": "trying and failing to pull image"}.get(reason, reason)
