"""``GET /knetsim/flows``: the node's flow record, behind the cluster's bearer token (``knetsim observe`` reads it).

The body is ``{"kind": "FlowList", "lost": N, "items": [...]}``: each item what ``hubble observe -o json``
prints for a flow (a ``GetFlowsResponse``), oldest first (``?last=N`` keeps the N newest); ``lost`` how
many older flows the full ring dropped, as Hubble reports lost events.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ..kubelet.flows import FlowRecorder

PATH = "/knetsim/flows"


def handles(path: str) -> bool:
    return path == PATH


def bearer_only(request: web.Request, token: str | None) -> bool:
    """No other way in than the cluster's bearer token (a flow record names every pod and address)."""
    return False


def handler(recorder: FlowRecorder) -> Callable[[web.Request, Any, str | None], Awaitable[web.StreamResponse]]:
    async def handle(request: web.Request, state: Any, token: str | None) -> web.StreamResponse:
        text = request.query.get("last", "")
        if text and not text.isdigit():
            raise web.HTTPBadRequest(text=f'last: invalid value "{text}": a number of flows')
        body = {"kind": "FlowList", "lost": recorder.log.lost, "items": recorder.to_lines(int(text) if text else None)}
        return web.Response(text=json.dumps(body, separators=(",", ":")), content_type="application/json",
                            headers={"Cache-Control": "no-store"})

    return handle


__all__ = ["PATH", "bearer_only", "handler", "handles"]
