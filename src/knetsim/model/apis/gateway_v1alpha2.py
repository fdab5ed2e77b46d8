"""gateway.networking.k8s.io/v1alpha2: the first TLSRoute, TCPRoute and UDPRoute, kept in the CRDs, not served.

They differ from v1 in their limits: up to 16 rules (v1 has exactly one), and a TLSRoute's hostnames
optional and unchecked by rules.
"""

from __future__ import annotations

from . import gateway_v1 as v1
from .markers import Field, ListOf
from .meta import Object


class TLSRouteSpec(v1.CommonRouteSpec):
    """The SNI names a TLSRoute serves and its rules."""

    hostnames = Field(ListOf(v1.Hostname, max_items=1024, list_type="atomic"),
                      "The server names (TLS SNI) this route takes, intersected with the listener's hostname.")
    rules = Field(ListOf(v1.TLSRouteRule, min_items=1, max_items=16, list_type="atomic"), "The rules.",
                  required=True)


class TLSRoute(Object):
    """TLS routing by server name (v1alpha2, no longer served)."""

    spec = Field(TLSRouteSpec, "What the route does.", required=True)
    status = Field(v1.TLSRouteStatus, "What each parent made of the route.")


class TCPRouteSpec(v1.CommonRouteSpec):
    """A TCPRoute's rules."""

    rules = Field(ListOf(v1.TCPRouteRule, min_items=1, max_items=16, list_type="atomic"), "The rules.",
                  required=True)


class TCPRoute(Object):
    """TCP forwarding (v1alpha2, no longer served)."""

    spec = Field(TCPRouteSpec, "What the route does.", required=True)
    status = Field(v1.TCPRouteStatus, "What each parent made of the route.")


class UDPRouteSpec(v1.CommonRouteSpec):
    """A UDPRoute's rules."""

    rules = Field(ListOf(v1.UDPRouteRule, min_items=1, max_items=16, list_type="atomic"), "The rules.",
                  required=True)


class UDPRoute(Object):
    """UDP forwarding (v1alpha2, no longer served)."""

    spec = Field(UDPRouteSpec, "What the route does.", required=True)
    status = Field(v1.UDPRouteStatus, "What each parent made of the route.")


__all__ = ["TCPRoute", "TLSRoute", "UDPRoute"]
