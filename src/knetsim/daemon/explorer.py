"""The connectivity explorer, served live by ``knetsim up`` at ``/explorer/``, behind the cluster's token.

kubectl sends the token as ``Authorization: Bearer``; a browser cannot, so the first visit
carries it once as ``/explorer/?token=...`` (the URL ``knetsim up`` prints): the handler
checks it, answers with an HttpOnly, SameSite=Strict cookie scoped to ``/explorer/``, and
redirects to the bare URL, so the token leaves the address bar. Later requests authenticate
with that cookie. Nothing outside ``/explorer/`` accepts the cookie.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from aiohttp import web

PREFIX = "/explorer"
COOKIE = "knetsim-explorer"


def handles(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def authorized(request: web.Request, token: str | None) -> bool:
    """May this explorer request pass without a bearer header (the cookie, or the one-time query token)?"""
    if token is None or not handles(request.path):
        return False
    offered = request.cookies.get(COOKIE) or request.query.get("token") or ""
    return secrets.compare_digest(offered.encode("utf-8", "surrogateescape"), token.encode())


async def handle(request: web.Request, state: Any, token: str | None) -> web.StreamResponse:
    # Imported on the first visit: the matrix (numpy) would otherwise cost every server ~15 MB.
    from ..explorer.data import explorer_data
    from ..explorer.page import shell
    from ..policy.matrix import matrix

    path = request.path
    if "token" in request.query:
        # Returned, not raised: the server's middleware turns raised HTTP errors into Status bodies.
        response = web.Response(status=303, headers={"Location": PREFIX + "/", "Cache-Control": "no-store"})
        if token is not None:
            response.set_cookie(COOKIE, token, path=PREFIX + "/", secure=True, httponly=True, samesite="Strict")
        return response
    if path in (PREFIX, PREFIX + "/"):
        return web.Response(text=shell("knetsim connectivity explorer (live)", None), content_type="text/html",
                            headers={"Cache-Control": "no-store"})
    if path == PREFIX + "/data.json":
        if state is None:
            raise web.HTTPServiceUnavailable(text="the controllers have not built the cluster yet")
        data = explorer_data(state, matrix(state))
        return web.Response(body=json.dumps(data, separators=(",", ":")).encode(), content_type="application/json",
                            headers={"Cache-Control": "no-store"})
    raise web.HTTPNotFound(text=f"{path}: the explorer serves {PREFIX}/ and {PREFIX}/data.json")


__all__ = ["COOKIE", "PREFIX", "authorized", "handle", "handles"]
