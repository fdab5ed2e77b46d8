"""knetsim: Kubernetes service networking, simulated (v1.35 semantics)."""

from __future__ import annotations

__version__ = "0.1.0"

from .api import Cluster, InputError

__all__ = ["Cluster", "InputError", "__version__"]
