"""Gateway API routing: the built-in Gateway controller (Envoy Gateway's semantics) and its status.

A sibling of ``knetsim.ingress``: both answer "which backend serves this HTTP request", and both
take a ``model.http.HTTPRequest`` and reduce their result to a ``model.http.RouteAnswer``.
See README.md in this directory and docs/gateway.md.
"""

from __future__ import annotations

from .grants import ReferenceFrom, ReferenceTo, reference_permitted
from .router import (
    INVALID_BACKEND,
    NO_CONTROLLER,
    NO_ENDPOINTS,
    NO_LISTENER,
    NOT_FOUND,
    NOT_PROGRAMMED,
    PROXIED,
    REDIRECT,
    BackendChoice,
    Candidate,
    GatewayRouteError,
    GatewayRouteResult,
    MatchRef,
    Redirect,
    UpstreamRequest,
    request_from,
    route,
)
from .status import status_of, with_status
from .translate import Translation, translate

__all__ = [
    "INVALID_BACKEND",
    "NOT_FOUND",
    "NOT_PROGRAMMED",
    "NO_CONTROLLER",
    "NO_ENDPOINTS",
    "NO_LISTENER",
    "PROXIED",
    "REDIRECT",
    "BackendChoice",
    "Candidate",
    "GatewayRouteError",
    "GatewayRouteResult",
    "MatchRef",
    "Redirect",
    "ReferenceFrom",
    "ReferenceTo",
    "Translation",
    "UpstreamRequest",
    "reference_permitted",
    "request_from",
    "route",
    "status_of",
    "translate",
    "with_status",
]
