"""A Kubernetes-compatible API server over the simulated cluster (``knetsim up``).

Names are imported on first use: ``knetsim down`` and ``status`` only need ``statedir`` and
should not pay for aiohttp.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ApiError", "ApiServer", "Running", "start"]


def __getattr__(name: str) -> Any:
    if name in ("Running", "start"):
        from . import daemon

        return getattr(daemon, name)
    if name in ("ApiError", "ApiServer"):
        from . import server

        return getattr(server, name)
    raise AttributeError(name)
