"""Ingress routing: which controller claims an Ingress, and which backend serves a request.

See README.md in this directory and docs/ingress.md.
"""

from __future__ import annotations

from .controllers import (
    ClassResolution,
    ControllerPod,
    IngressController,
    default_classes,
    resolve_class,
    running_controllers,
)
from .findings import IngressFinding, ingress_findings
from .matching import host_matches, normalize_host, normalize_request_path, path_matches
from .router import (
    BACKEND_MISSING,
    NO_CONTROLLER,
    NOT_FOUND,
    PASSED_THROUGH,
    ROUTED,
    UNSUPPORTED_BACKEND,
    BackendTarget,
    Candidate,
    ControllerRef,
    Match,
    Request,
    RouteError,
    RouteResult,
    TLSInfo,
    nginx_order,
    resolve_backend,
    route,
    route_request,
    tls_connection,
)

__all__ = [
    "BACKEND_MISSING",
    "NOT_FOUND",
    "NO_CONTROLLER",
    "PASSED_THROUGH",
    "ROUTED",
    "UNSUPPORTED_BACKEND",
    "BackendTarget",
    "Candidate",
    "ClassResolution",
    "ControllerPod",
    "ControllerRef",
    "IngressController",
    "IngressFinding",
    "Match",
    "Request",
    "RouteError",
    "RouteResult",
    "TLSInfo",
    "default_classes",
    "host_matches",
    "ingress_findings",
    "nginx_order",
    "normalize_host",
    "normalize_request_path",
    "path_matches",
    "resolve_backend",
    "resolve_class",
    "route",
    "route_request",
    "running_controllers",
    "tls_connection",
]
