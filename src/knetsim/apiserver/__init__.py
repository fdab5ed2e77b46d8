"""A Kubernetes-compatible API server over the simulated cluster (``knetsim up``)."""

from .daemon import Running, start
from .server import ApiError, ApiServer

__all__ = ["ApiError", "ApiServer", "Running", "start"]
