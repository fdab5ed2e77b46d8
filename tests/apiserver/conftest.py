"""Fixtures: a live ``knetsim`` API server in a subprocess, and the real kubectl against it (tests/live.py).

The names stay importable from here (``from .conftest import Live, wait_for``) for the tests that do.

Address plan: DESIGN defaults (nodes 172.18.0.2-4, pods 10.244.0.0/16, services 10.96.0.0/12).
"""

from __future__ import annotations

from tests.live import (
    KUBECTL,
    Live,
    controller_loops,
    live,
    start_server,
    stop_server,
    wait_for,
)

__all__ = ["KUBECTL", "Live", "controller_loops", "live", "start_server", "stop_server",
           "wait_for"]
