"""knetsim: Kubernetes service networking, simulated (v1.35 semantics)."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["Cluster", "InputError", "__version__"]


def __getattr__(name: str) -> Any:
    # Loaded on first use, so `knetsim --help` and commands that never build a cluster skip it.
    if name in ("Cluster", "InputError"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
